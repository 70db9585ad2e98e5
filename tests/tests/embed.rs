//! The embedding story: a program outside the workspace defines its own
//! benchmark, adds it to benchsuite's registry, runs it through the
//! library, and gets the same report, exports and comparison.

use benchsuite::export::{Format, write_report};
use benchsuite::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point,
    Status, Work,
};

/// Sums a vector of `len` u64 values: a custom benchmark with one parameter.
struct VecSum;

struct VecSumCase {
    data: Vec<u64>,
}

impl Case for VecSumCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut total = 0u64;
        for _ in 0..iters {
            let d = std::hint::black_box(&self.data);
            total = total.wrapping_add(d.iter().sum::<u64>());
        }
        std::hint::black_box(total);
        let bytes = iters * (self.data.len() * 8) as u64;
        Ok(Work::ops_bytes(iters, bytes))
    }

    /// Nothing to release but the vector (dropped with `self`); the record
    /// gets a note saying what one operation is.
    fn finish(self: Box<Self>) -> Finished {
        let mut about = About::default();
        about.note(format!("one op = one sum of {} u64", self.data.len()));
        about.into()
    }
}

impl Benchmark for VecSum {
    fn meta(&self) -> Meta {
        Meta {
            id: "myapp.vecsum".into(),
            description: "sum a vector of u64".into(),
            params: vec![ParamSpec::size("len", "elements", 1, 1 << 24, 1024)],
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::time_per_op("time_per_op").secondary(),
            ],
        }
    }

    fn prepare(&self, _: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let len = point.u64("len")? as usize;
        Ok(Box::new(VecSumCase {
            data: (0..len as u64).collect(),
        }))
    }
}

#[test]
fn a_custom_benchmark_runs_like_a_builtin_one() {
    let mut registry = benchsuite::registry();
    registry.register(Box::new(VecSum)).unwrap();
    let config = benchsuite_tests::fast_config()
        .to_builder()
        .selectors(["myapp"])
        .sweep([("len", "1K,4K")])
        .build()
        .unwrap();
    let report = benchsuite::run(&registry, &config).expect("valid configuration");
    benchsuite_tests::assert_valid(&report);
    assert_eq!(report.records.len(), 2);
    for r in &report.records {
        assert_eq!(r.status, Status::Ok);
        assert!(
            r.notes[0].starts_with("one op = one sum of "),
            "{:?}",
            r.notes
        );
        let bw = r.metric("bandwidth").unwrap().summary.median;
        // Positive, and below 10 TB/s, far above any DRAM or cache.
        assert!(bw > 0.0 && bw < 1e13, "{bw}");
    }
    let mut csv = Vec::new();
    write_report(Format::Csv, &report, &mut csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    let headers = reader.headers().unwrap().clone();
    assert!(headers.iter().any(|h| h == "len"));
    assert_eq!(reader.records().count(), 4, "2 records × 2 metrics");
}

/// An embedder's test over its own benchmarks: the harness the built-in
/// modules run, reached through the facade (feature `testing`).
#[test]
fn a_custom_benchmark_passes_the_conformance_harness_from_the_facade() {
    use benchsuite::testing::Conformance;
    let harness = Conformance::new("myapp", "my application's kernels", || {
        vec![Box::new(VecSum)]
    })
    .bounds(|id, metric| match (id, metric) {
        ("myapp.vecsum", "bandwidth") => 1.0..1e13,
        ("myapp.vecsum", "time_per_op") => 0.0..1.0,
        _ => panic!("no physical bound for {id} {metric}"),
    });
    harness.check_meta();
    let report = harness.check_smoke();
    assert_eq!(report.records[0].status, Status::Ok);
}

/// `VecSum` under an id made at run time (one benchmark per thing the
/// embedder discovers).
struct Named(String);

impl Benchmark for Named {
    fn meta(&self) -> Meta {
        Meta {
            id: self.0.clone().into(),
            ..VecSum.meta()
        }
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        VecSum.prepare(ctx, point)
    }
}

/// The harness takes names built at run time and a closure that captures
/// what it needs.
#[test]
fn the_conformance_harness_takes_benchmarks_built_at_run_time() {
    use benchsuite::testing::Conformance;
    let module = format!("dev{}", 7);
    let ids: Vec<String> = (0..2).map(|i| format!("{module}.sum{i}")).collect();
    let made = ids.clone();
    let harness = Conformance::new(module.clone(), format!("devices of {module}"), move || {
        made.iter()
            .map(|id| Box::new(Named(id.clone())) as Box<dyn Benchmark>)
            .collect()
    })
    .bounds(|_, metric| match metric {
        "bandwidth" => 1.0..1e13,
        "time_per_op" => 0.0..1.0,
        _ => panic!("no physical bound for {metric}"),
    });
    harness.check_meta();
    let report = harness.check_smoke();
    let got: Vec<&str> = report.records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, ids);
    assert!(report.records.iter().all(|r| r.status == Status::Ok));
}

/// `VecSum` as a first draft might declare it: both metrics headlines.
struct TwoHeadlines;

impl Benchmark for TwoHeadlines {
    fn meta(&self) -> Meta {
        Meta {
            id: "myapp.twoheads".into(),
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::time_per_op("time_per_op"),
            ],
            ..VecSum.meta()
        }
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        VecSum.prepare(ctx, point)
    }
}

/// Registration refuses what the harness refuses, with the benchmark and
/// the rule; the registry is left as it was, so nothing of it runs.
#[test]
fn a_declaration_that_breaks_the_contract_is_refused_at_registration() {
    let mut registry = benchsuite::registry();
    let before = registry.benchmarks().count();
    let e = registry.register(Box::new(TwoHeadlines)).unwrap_err();
    assert_eq!(e.benchmark, "myapp.twoheads");
    assert_eq!(
        e.rule,
        benchsuite::ContractRule::ManyHeadlines {
            names: vec!["bandwidth".into(), "time_per_op".into()]
        }
    );
    let text = e.to_string();
    assert!(
        text.contains("`myapp.twoheads`") && text.contains("exactly one, listed first"),
        "{text}"
    );
    assert_eq!(registry.benchmarks().count(), before);
    let config = benchsuite_tests::fast_config()
        .to_builder()
        .selectors(["myapp"])
        .build()
        .unwrap();
    assert!(benchsuite::run(&registry, &config).is_err());
}

/// The harness says the same thing, in a test that checks declarations.
#[test]
#[should_panic(expected = "benchmark `myapp.twoheads` is refused: it declares 2 headline metrics")]
fn the_harness_refuses_what_registration_refuses() {
    benchsuite::testing::Conformance::new("myapp", "", || vec![Box::new(TwoHeadlines)])
        .check_meta();
}
