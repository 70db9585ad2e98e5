//! Benchmarks of the harness itself; see `harness.rs`.

pub mod error_rates;
pub mod trace;
