//! The cost of the cpu module's runtime kernel dispatch: choosing a kernel
//! (CPU feature detection + table lookup, done once per sweep point in
//! `prepare`) and calling the chosen kernel through its function pointer
//! (done once per batch and thread in `Case::run`). Both must be negligible
//! next to a 10 ms sample: a call of one iteration is compared with the
//! per-iteration cost of a long call.
//!
//! Run with `cargo bench -p benchsuite-benches --bench cpu_dispatch`.

use std::hint::black_box;

use benchsuite_cpu::kernel::{select_flops, select_iops};
use criterion::{Criterion, criterion_group, criterion_main};

fn dispatch(c: &mut Criterion) {
    c.bench_function("select_flops_f64_auto", |b| {
        b.iter(|| select_flops(black_box("f64"), None))
    });
    c.bench_function("select_iops_i8_auto", |b| {
        b.iter(|| select_iops(black_box("i8"), None))
    });
    let Ok(k) = select_flops("f64", None) else {
        return;
    };
    // One iteration = 96 FMA instructions (or the ISA's equivalent) plus the
    // call through the pointer, register setup and the final reduction.
    c.bench_function("flops_f64_run_1_iteration", |b| {
        b.iter(|| k.run(black_box(1)))
    });
    // The same work per iteration with the call cost spread over 1000.
    let mut g = c.benchmark_group("flops_f64_run_1000_iterations");
    g.throughput(criterion::Throughput::Elements(1000));
    g.bench_function("per_call", |b| b.iter(|| k.run(black_box(1000))));
    g.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
