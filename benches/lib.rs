//! Benchmarks of the harness itself; see `harness.rs`.

pub mod confirm;
pub mod e2e;
pub mod error_rates;
pub mod history;
pub mod trace;
