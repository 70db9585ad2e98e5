//! Benchmarks OF the harness itself: how much the statistics, the sweep
//! expansion and the runner's per-batch bookkeeping cost. A benchmark
//! harness must be cheap relative to what it measures.
//!
//! Run with `cargo bench -p benchsuite-benches`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use benchsuite_core::runner::{Silent, run};
use benchsuite_core::stats::{Summary, latency_histogram};
use benchsuite_core::sweep::{Defaults, expand};
use benchsuite_core::{
    BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point, Registry,
    RunConfig, Work,
};
use criterion::{Criterion, criterion_group, criterion_main};

/// A case that does nothing: the runner's overhead per sample.
struct Null;
impl Case for Null {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        Ok(Work::ops(black_box(iters)))
    }
    fn finish(self: Box<Self>) -> Finished {
        Finished::default()
    }
}
impl Benchmark for Null {
    fn meta(&self) -> Meta {
        Meta {
            id: "harness.null".into(),
            description: "does nothing".into(),
            params: vec![],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }
    fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
        Ok(Box::new(Null))
    }
}

fn stats(c: &mut Criterion) {
    let samples: Vec<f64> = (0..1000)
        .map(|i| ((i * 7919) % 1000) as f64 * 1e-6)
        .collect();
    c.bench_function("summary_1000_samples", |b| {
        b.iter(|| Summary::new(black_box(&samples)))
    });
    let mut h = latency_histogram();
    for i in 0..100_000u64 {
        h.record(1000 + (i * 7919) % 100_000).unwrap();
    }
    c.bench_function("latency_summary_100k", |b| {
        b.iter(|| benchsuite_core::LatencySummary::from_histogram_ns(black_box(&h)))
    });
    c.bench_function("histogram_record", |b| {
        let mut h = latency_histogram();
        let mut v = 1u64;
        b.iter(|| {
            v = v.wrapping_mul(6364136223846793005).wrapping_add(1) % 1_000_000 + 1;
            h.record(black_box(v)).unwrap();
        })
    });
}

fn sweep(c: &mut Criterion) {
    let meta = Meta {
        id: "x.y".into(),
        description: "".into(),
        params: vec![
            ParamSpec::count("threads", "", 1, 128, 1),
            ParamSpec::size("block", "", 1, 1 << 30, 4096),
        ],
        metrics: vec![MetricSpec::time_per_op("t")],
    };
    let given: BTreeMap<String, String> = [
        ("threads".to_string(), "1..64".to_string()),
        ("block".to_string(), "512..1G:x2".to_string()),
    ]
    .into();
    c.bench_function("expand_64x22_points", |b| {
        b.iter(|| expand(&meta, black_box(&given), Defaults::Default))
    });
}

fn runner(c: &mut Criterion) {
    let mut registry = Registry::new();
    registry.register(Box::new(Null)).unwrap();
    let config = RunConfig::default()
        .to_builder()
        .runs(3)
        .min_sample_time(Duration::from_micros(100))
        .warmup(Duration::ZERO)
        .build()
        .unwrap();
    let mut g = c.benchmark_group("runner");
    g.sample_size(20);
    g.bench_function("null_record_3x100us", |b| {
        b.iter(|| run(&registry, &config, &mut Silent).unwrap())
    });
    g.finish();
}

criterion_group!(benches, stats, sweep, runner);
criterion_main!(benches);
