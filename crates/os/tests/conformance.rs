//! Conformance: every `os` benchmark, at every smoke point and every value of
//! its choice parameters, through the real runner.

use std::ops::Range;

use benchsuite_core::testing::Conformance;
use benchsuite_core::{MetricSource, Record};
use benchsuite_os::{DESCRIPTION, MODULE, benchmarks};

/// Physical bounds of a median (seconds), the upper ones valid for a debug
/// build on a busy two-CPU virtual machine: anything outside is a bug, not a
/// slow box. The lower ones are far below any real cost (a tenth of a cycle
/// at 10 GHz for the cheapest operations).
fn bound(id: &str, metric: &str) -> Range<f64> {
    match (id, metric) {
        // Even a trapped, emulated clocksource read costs a few µs.
        ("os.timer", "time_per_op") => 1e-11..10e-6,
        // At least one tick of the finest clock (1 ns, or a TSC tick).
        ("os.timer", "resolution") => 1e-11..1e-3,
        ("os.call", _) => 1e-11..1e-6,
        ("os.syscall", _) => 1e-9..1e-3,
        ("os.thread_create", _) => 1e-7..100e-3,
        ("os.process_create", _) => 1e-6..1.0,
        ("os.context_switch", _) => 1e-8..10e-3,
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

fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(bound)
        .may_skip(unsupported_here)
}

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
    // Every os benchmark's headline is the time of one operation.
    for b in benchmarks() {
        let m = b.meta();
        assert_eq!(m.module(), MODULE);
        let head = m.metrics.first().expect("a headline metric");
        assert_eq!(head.name, "time_per_op", "{}", m.id);
        assert_eq!(head.source, MetricSource::TimePerOp, "{}", m.id);
    }
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    harness().check_smoke();
}

#[test]
fn every_choice_runs() {
    let cpus_before = std::thread::available_parallelism().map(|n| n.get()).ok();
    harness().check_choices();
    // os.context_switch pins this thread while it runs; finish must have
    // given back every CPU it had.
    assert_eq!(
        std::thread::available_parallelism().map(|n| n.get()).ok(),
        cpus_before,
        "CPU affinity was not restored"
    );
}

#[test]
fn call_sweeps_all_arities() {
    let h = harness();
    let report = h.run("os.call", &[("args", "0..7")]);
    assert_eq!(report.records.len(), 8);
    for (i, r) in report.records.iter().enumerate() {
        assert_eq!(
            r.params.get("args").and_then(|v| v.as_u64()),
            Some(i as u64)
        );
        h.check_record(r);
    }
}
