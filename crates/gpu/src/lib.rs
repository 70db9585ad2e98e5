//! benchsuite gpu benchmarks. This module has no benchmarks yet; the
//! registry lists it so `benchsuite list` shows it and selecting it says so.

use benchsuite_core::Benchmark;

/// Module name: benchmark ids start with `gpu.`.
pub const MODULE: &str = "gpu";

/// One-line description of the module.
pub const DESCRIPTION: &str = "gpu benchmarks (not implemented yet)";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    Vec::new()
}
