//! The one place that lists which resource crates exist.

use benchsuite_core::Registry;

/// Every module this build knows, in the order `benchsuite run` runs them.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(
        benchsuite_os::MODULE,
        benchsuite_os::DESCRIPTION,
        benchsuite_os::benchmarks(),
    );
    r.add_module(
        benchsuite_cpu::MODULE,
        benchsuite_cpu::DESCRIPTION,
        benchsuite_cpu::benchmarks(),
    );
    r.add_module(
        benchsuite_mem::MODULE,
        benchsuite_mem::DESCRIPTION,
        benchsuite_mem::benchmarks(),
    );
    r.add_module(
        benchsuite_disk::MODULE,
        benchsuite_disk::DESCRIPTION,
        benchsuite_disk::benchmarks(),
    );
    r.add_module(
        benchsuite_net::MODULE,
        benchsuite_net::DESCRIPTION,
        benchsuite_net::benchmarks(),
    );
    r.add_module(
        benchsuite_gpu::MODULE,
        benchsuite_gpu::DESCRIPTION,
        benchsuite_gpu::benchmarks(),
    );
    r
}
