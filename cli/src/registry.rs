//! The one place that lists which resource crates exist.

use benchsuite_core::{Benchmark, Registry};

/// A resource crate's module: its name, description and benchmarks.
type Builtin = (&'static str, &'static str, fn() -> Vec<Box<dyn Benchmark>>);

/// Every module this build knows, in the order `benchsuite run` runs them:
/// those of the features `os`, `cpu`, `mem`, `disk`, `net` and `gpu` (all
/// on by default).
///
/// # Panics
///
/// Never for the modules shipped: each keeps the contract the registry
/// checks (`cargo test` registers them all; see [`Registry::add_module`]).
pub fn registry() -> Registry {
    let builtins: &[Builtin] = &[
        #[cfg(feature = "os")]
        (
            benchsuite_os::MODULE,
            benchsuite_os::DESCRIPTION,
            benchsuite_os::benchmarks,
        ),
        #[cfg(feature = "cpu")]
        (
            benchsuite_cpu::MODULE,
            benchsuite_cpu::DESCRIPTION,
            benchsuite_cpu::benchmarks,
        ),
        #[cfg(feature = "mem")]
        (
            benchsuite_mem::MODULE,
            benchsuite_mem::DESCRIPTION,
            benchsuite_mem::benchmarks,
        ),
        #[cfg(feature = "disk")]
        (
            benchsuite_disk::MODULE,
            benchsuite_disk::DESCRIPTION,
            benchsuite_disk::benchmarks,
        ),
        #[cfg(feature = "net")]
        (
            benchsuite_net::MODULE,
            benchsuite_net::DESCRIPTION,
            benchsuite_net::benchmarks,
        ),
        #[cfg(feature = "gpu")]
        (
            benchsuite_gpu::MODULE,
            benchsuite_gpu::DESCRIPTION,
            benchsuite_gpu::benchmarks,
        ),
    ];
    let mut r = Registry::new();
    for &(name, description, benchmarks) in builtins {
        r.add_module(name, description, benchmarks())
            .unwrap_or_else(|e| panic!("built-in module {name}: {e}"));
    }
    r
}
