//! Benchmarks of the harness itself; see `harness.rs`.
