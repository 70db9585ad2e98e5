//! Conformance: every `cpu` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner; bad input refused
//! before anything runs.

use std::ops::Range;

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::testing::{Capability, Conformance, skip};
use benchsuite_core::{Record, RunConfig, Status};
use benchsuite_cpu::{DESCRIPTION, MODULE, benchmarks};

fn cpus() -> f64 {
    benchsuite_core::team::allowed_cpus().len() as f64
}

/// A generous physical bound for a median: no x86 core does more than 256
/// operations per cycle in its vector units (two 512-bit VNNI dot products
/// of 128 ops), nor runs above 6 GHz. Rates are positive; a residual can be
/// exactly zero for a tiny system.
fn bound(id: &str, metric: &str) -> Range<f64> {
    let (lo, per_cpu) = match (id, metric) {
        ("cpu.flops", "flops") | ("cpu.iops", "iops") => (1e6, 6e9 * 256.0),
        ("cpu.linpack", "flops") => (1e3, 6e9 * 64.0),
        // HPL's threshold; the case fails above it.
        ("cpu.linpack", "residual") => return 0.0..16.0,
        // An event of max_prime >= 2000 is thousands of divisions.
        ("cpu.prime", "events") => (1.0, 1e7),
        // The histogram records at least 1 ns per event.
        ("cpu.prime", "latency") => return 1e-9..1.0,
        _ => panic!("no physical bound for {id} {metric}: add one to this test"),
    };
    lo..per_cpu * cpus()
}

/// Only a flops/iops point can skip (a precision or ISA this CPU has no
/// kernel for: the reason says which), and a LINPACK point that asks for
/// the system's LAPACK where none is installed.
fn may_skip(r: &Record) -> bool {
    matches!(r.id.as_str(), "cpu.flops" | "cpu.iops")
        || (r.id == "cpu.linpack"
            && r.params.get("solver").and_then(|v| v.as_str()) == Some("lapack"))
}

/// What one operation counts is a fact for reading the number (a note), not
/// a caveat: caveats stay for what makes it mean less. Peak inputs name a
/// known source.
fn check_each(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    let counting = ["kernel: ", "one operation = ", "one event = "];
    assert!(
        r.notes
            .iter()
            .any(|n| counting.iter().any(|c| n.starts_with(c))),
        "{what}: no note says what one operation is: {:?}",
        r.notes
    );
    assert!(
        !r.warnings
            .iter()
            .any(|w| counting.iter().any(|c| w.to_string().starts_with(c))),
        "{what}: {:?}",
        r.warnings
    );
    if let Some(p) = &r.peak {
        assert!(!p.inputs.is_empty(), "{what}: a peak without inputs");
        for (name, i) in &p.inputs {
            assert!(
                ["sysfs", "table", "measured", "user", "isa", "cpuid"].contains(&i.source.as_str()),
                "{what}: input {name} has source {}",
                i.source
            );
        }
    }
}

fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(bound)
        .may_skip(may_skip)
        .check_each(check_each)
}

/// The error of a plan that must be refused.
fn plan_error(cfg: &RunConfig) -> String {
    runner::run(&harness().registry(), cfg, &mut Silent)
        .expect_err("the plan must be refused")
        .to_string()
}

fn has_caveat(r: &Record, text: &str) -> bool {
    r.warnings.iter().any(|w| w.to_string().contains(text))
}

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let report = harness().check_smoke();
    for r in &report.records {
        assert_eq!(r.status, Status::Ok, "{} at its smoke point", r.id);
    }
}

#[test]
fn every_choice_runs() {
    harness().check_choices();
}

#[test]
fn f64_at_auto_isa_carries_a_peak_where_the_cpu_is_known() {
    let h = harness();
    let report = h.run("cpu.flops", &[("precision", "f64")]);
    let r = &report.records[0];
    h.check_record(r);
    let known = benchsuite_cpu::peak::cpuid()
        .as_ref()
        .and_then(benchsuite_cpu::peak::uarch)
        .is_some();
    if known {
        let p = r.peak.as_ref().expect("a peak on a CPU in the table");
        assert_eq!(p.inputs["GHz"].source, "measured");
        assert!(p.inputs.contains_key("cores"));
    } else {
        assert!(has_caveat(r, "no theoretical peak"), "{:?}", r.warnings);
    }
    assert!(
        r.notes.iter().any(|n| n.contains("2 flops per lane")),
        "the counting rule is stated: {:?}",
        r.notes
    );
}

#[test]
fn f16_without_a_native_path_is_skipped_with_the_reason() {
    let report = harness().run("cpu.flops", &[("precision", "f16"), ("isa", "avx2")]);
    let r = &report.records[0];
    assert_eq!(r.status, Status::Skipped);
    assert!(
        r.reason
            .as_deref()
            .unwrap_or_default()
            .contains("AVX512-FP16"),
        "{:?}",
        r.reason
    );
}

#[test]
fn bad_thread_counts_are_usage_errors_naming_the_parameter() {
    for bad in ["0", "1025", "two"] {
        let e = plan_error(&RunConfig::smoke_test("cpu.flops", &[("threads", bad)]));
        assert!(e.contains("`threads`") && e.contains(bad), "{e}");
    }
}

#[test]
fn oversubscription_runs_and_says_so() {
    let h = harness();
    let n = (cpus() as usize * 8).clamp(8, 64).to_string();
    let report = h.run("cpu.flops", &[("threads", &n), ("pin", "on,off")]);
    assert_eq!(report.records.len(), 2);
    for r in &report.records {
        h.check_record(r);
        assert!(has_caveat(r, "oversubscribed"), "{:?}", r.warnings);
    }
    // A thousand threads: runs (or is refused clearly), never hangs.
    let report = h.run("cpu.prime", &[("threads", "1000"), ("max_prime", "100")]);
    h.check_record(&report.records[0]);
}

#[test]
fn linpack_refuses_a_matrix_that_cannot_fit_before_allocating() {
    let Some(mem) = benchsuite_core::Host::detect().memory_bytes else {
        skip(
            Capability::Linux,
            "the host's memory size is unknown (no MemTotal in /proc/meminfo)",
        );
        return;
    };
    // 16·N² bytes > 4 × total memory.
    let n = ((mem as f64 * 4.0 / 16.0).sqrt() as u64).min(200_000);
    if 16 * n * n <= mem {
        skip(
            Capability::MemUnder640g,
            &format!("{mem} bytes of memory: even n={n} fits"),
        );
        return;
    }
    let e = plan_error(&RunConfig::smoke_test(
        "cpu.linpack",
        &[("n", &n.to_string())],
    ));
    assert!(e.contains("`n`") && e.contains("GiB"), "{e}");
}

#[test]
fn a_malformed_clock_override_is_refused_before_running_naming_it() {
    let cfg = RunConfig::smoke_test("cpu.flops", &[])
        .to_builder()
        .option("cpu-ghz", "fast")
        .build()
        .unwrap();
    let e = plan_error(&cfg);
    assert!(
        e.contains("`fast` for option `cpu-ghz`") && e.contains("a clock in GHz such as 3.1"),
        "{e}"
    );
    // A good override is used, with source "user".
    let report = harness()
        .option("cpu-ghz", "2.5")
        .option("fma-ports", "2")
        .run("cpu.flops", &[]);
    let p = report.records[0]
        .peak
        .as_ref()
        .expect("a peak from the overrides");
    assert_eq!(p.inputs["GHz"].source, "user");
    assert_eq!(p.inputs["GHz"].value, 2.5);
}
