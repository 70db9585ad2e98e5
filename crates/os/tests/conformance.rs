//! Conformance: every `os` benchmark, at every smoke point and every value of
//! its choice parameters, through the real runner.

use std::collections::BTreeMap;
use std::time::Duration;

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{MetricSource, ParamKind, Record, Registry, Report, RunConfig, Status};
use benchsuite_os::{DESCRIPTION, MODULE, benchmarks};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks());
    r
}

fn run(selector: &str, sweep: &[(&str, String)]) -> Report {
    let cfg = RunConfig {
        selectors: vec![selector.to_string()],
        sweep: sweep
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
        smoke: true,
        runs: 3,
        min_sample_time: Duration::from_millis(1),
        warmup: Duration::from_millis(1),
        ..RunConfig::quick()
    };
    runner::run(&registry(), &cfg, &mut Silent).expect("the plan is valid")
}

/// A generous upper bound for a median (seconds), valid for a debug build on
/// a busy two-CPU virtual machine. Anything above is a bug, not a slow box.
fn bound(id: &str, metric: &str) -> f64 {
    match (id, metric) {
        // Even a trapped, emulated clocksource read costs a few µs.
        ("os.timer", "time_per_op") => 10e-6,
        ("os.timer", "resolution") => 1e-3,
        ("os.call", _) => 1e-6,
        ("os.syscall", _) => 1e-3,
        ("os.thread_create", _) => 100e-3,
        ("os.process_create", _) => 1.0,
        ("os.context_switch", _) => 10e-3,
        _ => panic!("no physical bound for {id} {metric}: add one to this test"),
    }
}

/// Points that may legitimately not run on this machine: `cpus=different`
/// with a single usable CPU, `clock=tsc` off x86_64.
fn unsupported_here(r: &Record) -> bool {
    let reason = r.reason.as_deref().unwrap_or_default();
    let param = |k: &str| r.params.get(k).and_then(|v| v.as_str());
    let one_cpu = std::thread::available_parallelism().map_or(true, |n| n.get() < 2);
    (param("cpus") == Some("different") && one_cpu && reason.contains("needs two CPUs"))
        || (param("clock") == Some("tsc") && cfg!(not(target_arch = "x86_64")))
}

/// Checks one record: ok (or legitimately unsupported), and every metric's
/// median finite, positive and under its bound.
fn check(r: &Record) {
    if r.status != Status::Ok {
        assert!(
            r.status == Status::Skipped && unsupported_here(r),
            "{} {}: {:?}: {}",
            r.id,
            r.params.label(),
            r.status,
            r.reason.as_deref().unwrap_or("(no reason)")
        );
        return;
    }
    assert!(!r.metrics.is_empty(), "{}: no metrics", r.id);
    for m in &r.metrics {
        let med = m.summary.median;
        let what = format!("{} {} {}", r.id, r.params.label(), m.name);
        assert!(med.is_finite() && med > 0.0, "{what}: median {med}");
        let b = bound(&r.id, &m.name);
        assert!(med < b, "{what}: median {med:e} s is above {b:e} s");
        assert_eq!(m.samples.len(), 3, "{what}");
    }
}

#[test]
fn meta_is_well_formed() {
    let benches = benchmarks();
    assert!(!benches.is_empty());
    let mut ids = Vec::new();
    for b in &benches {
        let m = b.meta();
        assert!(m.id.starts_with("os."), "{}", m.id);
        assert_eq!(m.module(), MODULE);
        assert!(!m.description.is_empty(), "{}", m.id);
        let head = m.metrics.first().expect("a headline metric");
        assert_eq!(head.name, "time_per_op", "{}", m.id);
        assert_eq!(head.source, MetricSource::TimePerOp, "{}", m.id);
        for p in &m.params {
            p.kind
                .check(p.name, &p.default)
                .unwrap_or_else(|e| panic!("{} default: {e}", m.id));
            p.kind
                .check(p.name, p.smoke_value())
                .unwrap_or_else(|e| panic!("{} smoke: {e}", m.id));
            assert!(!p.help.is_empty(), "{} {}", m.id, p.name);
        }
        ids.push(m.id);
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids");
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let report = run(MODULE, &[]);
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        check(r);
    }
}

#[test]
fn every_choice_of_every_benchmark_runs() {
    let cpus_before = std::thread::available_parallelism().map(|n| n.get()).ok();
    for b in benchmarks() {
        let meta = b.meta();
        let sweep: Vec<(&str, String)> = meta
            .params
            .iter()
            .filter_map(|p| match p.kind {
                ParamKind::Choice(names) => Some((p.name, names.join(","))),
                _ => None,
            })
            .collect();
        if sweep.is_empty() {
            continue;
        }
        let expected: usize = meta
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::Choice(names) => names.len(),
                _ => 1,
            })
            .product();
        let report = run(meta.id, &sweep);
        assert_eq!(report.records.len(), expected, "{}", meta.id);
        for r in &report.records {
            check(r);
        }
    }
    // os.context_switch pins this thread while it runs; teardown must
    // have given back every CPU it had.
    assert_eq!(
        std::thread::available_parallelism().map(|n| n.get()).ok(),
        cpus_before,
        "CPU affinity was not restored"
    );
}

#[test]
fn call_sweeps_all_arities() {
    let report = run("os.call", &[("args", "0..7".into())]);
    assert_eq!(report.records.len(), 8);
    for (i, r) in report.records.iter().enumerate() {
        assert_eq!(
            r.params.get("args").and_then(|v| v.as_u64()),
            Some(i as u64)
        );
        check(r);
    }
}
