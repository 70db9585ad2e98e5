//! Conformance: every `cpu` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner; bad input refused
//! before anything runs.

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{ParamKind, Record, Registry, Report, RunConfig, Status};
use benchsuite_cpu::{DESCRIPTION, MODULE, benchmarks};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks());
    r
}

fn config(selector: &str, sweep: &[(&str, &str)]) -> RunConfig {
    RunConfig::smoke_test(selector, sweep)
}

fn run(selector: &str, sweep: &[(&str, &str)]) -> Report {
    runner::run(&registry(), &config(selector, sweep), &mut Silent).expect("the plan is valid")
}

fn cpus() -> f64 {
    benchsuite_core::team::allowed_cpus().len() as f64
}

/// A generous physical bound for a median: no x86 core does more than 256
/// operations per cycle in its vector units (two 512-bit VNNI dot products
/// of 128 ops), nor runs above 6 GHz.
fn bound(id: &str, metric: &str) -> f64 {
    let per_cpu = match (id, metric) {
        ("cpu.flops", "flops") | ("cpu.iops", "iops") => 6e9 * 256.0,
        ("cpu.linpack", "flops") => 6e9 * 64.0,
        // HPL's threshold; the case fails above it.
        ("cpu.linpack", "residual") => return 16.0,
        // An event of max_prime >= 2000 is thousands of divisions.
        ("cpu.prime", "events") => 1e7,
        ("cpu.prime", "latency") => return 1.0,
        _ => panic!("no physical bound for {id} {metric}: add one to this test"),
    };
    per_cpu * cpus()
}

/// Checks one record: ok, or skipped with a reason; metrics finite,
/// positive and under their bound; peak and efficiency sane when present.
fn check(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    match r.status {
        Status::Ok => {}
        Status::Skipped => {
            let reason = r.reason.as_deref().unwrap_or_default();
            assert!(reason.len() > 10, "{what}: skipped without a reason");
            return;
        }
        Status::Failed => panic!("{what}: failed: {:?}", r.reason),
    }
    assert!(!r.metrics.is_empty(), "{what}: no metrics");
    // What one operation counts is a fact for reading the number (a note),
    // not a caveat: warnings stay for what makes it mean less.
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
            .any(|w| counting.iter().any(|c| w.starts_with(c))),
        "{what}: {:?}",
        r.warnings
    );
    for m in &r.metrics {
        let med = m.summary.median;
        assert!(med.is_finite(), "{what} {}: median {med}", m.name);
        // A residual can be exactly zero for a tiny system; rates cannot.
        if m.name != "residual" {
            assert!(med > 0.0, "{what} {}: median {med}", m.name);
        }
        let b = bound(&r.id, &m.name);
        assert!(med < b, "{what} {}: median {med:e} above {b:e}", m.name);
        assert_eq!(m.samples.len(), 3, "{what}");
    }
    if let Some(p) = &r.peak {
        assert!(p.value.is_finite() && p.value > 0.0, "{what}: peak {p:?}");
        assert!(!p.formula.is_empty() && !p.inputs.is_empty(), "{what}");
        for (name, i) in &p.inputs {
            assert!(
                ["sysfs", "table", "measured", "user", "isa", "cpuid"].contains(&i.source.as_str()),
                "{what}: input {name} has source {}",
                i.source
            );
        }
        let eff = p.efficiency.expect("the runner fills the efficiency");
        // Tests run in parallel on a shared machine: efficiency may be low,
        // but far above 100% would be a counting bug.
        assert!(eff > 0.0 && eff < 1.5, "{what}: efficiency {eff}");
    }
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let report = run(MODULE, &[]);
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        check(r);
        assert_eq!(r.status, Status::Ok, "{} at its smoke point", r.id);
    }
}

#[test]
fn every_choice_of_every_benchmark_runs_or_says_why_not() {
    for b in benchmarks() {
        let meta = b.meta();
        let choices: Vec<(&str, String)> = meta
            .params
            .iter()
            .filter_map(|p| match p.kind {
                ParamKind::Choice(names) => Some((p.name, names.join(","))),
                _ => None,
            })
            .collect();
        if choices.is_empty() {
            continue;
        }
        let sweep: Vec<(&str, &str)> = choices.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let report = run(meta.id, &sweep);
        let expected: usize = choices.iter().map(|(_, v)| v.split(',').count()).product();
        assert_eq!(report.records.len(), expected, "{}", meta.id);
        for r in &report.records {
            check(r);
        }
    }
}

#[test]
fn f64_at_auto_isa_carries_a_peak_where_the_cpu_is_known() {
    let report = run("cpu.flops", &[("precision", "f64")]);
    let r = &report.records[0];
    check(r);
    let known = benchsuite_cpu::peak::cpuid()
        .as_ref()
        .and_then(benchsuite_cpu::peak::uarch)
        .is_some();
    if known {
        let p = r.peak.as_ref().expect("a peak on a CPU in the table");
        assert_eq!(p.inputs["GHz"].source, "measured");
        assert!(p.inputs.contains_key("cores"));
    } else {
        assert!(
            r.warnings.iter().any(|w| w.contains("no theoretical peak")),
            "{:?}",
            r.warnings
        );
    }
    assert!(
        r.notes.iter().any(|n| n.contains("2 flops per lane")),
        "the counting rule is stated: {:?}",
        r.notes
    );
}

#[test]
fn f16_without_a_native_path_is_skipped_with_the_reason() {
    let report = run("cpu.flops", &[("precision", "f16"), ("isa", "avx2")]);
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
        let e = runner::run(
            &registry(),
            &config("cpu.flops", &[("threads", bad)]),
            &mut Silent,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`threads`") && e.contains(bad), "{e}");
    }
}

#[test]
fn oversubscription_runs_and_says_so() {
    let n = (cpus() as usize * 8).clamp(8, 64).to_string();
    let report = run("cpu.flops", &[("threads", &n), ("pin", "on,off")]);
    assert_eq!(report.records.len(), 2);
    for r in &report.records {
        check(r);
        assert!(
            r.warnings.iter().any(|w| w.contains("oversubscribed")),
            "{:?}",
            r.warnings
        );
    }
    // A thousand threads: runs (or is refused clearly), never hangs.
    let report = run("cpu.prime", &[("threads", "1000"), ("max_prime", "100")]);
    check(&report.records[0]);
}

#[test]
fn linpack_refuses_a_matrix_that_cannot_fit_before_allocating() {
    let Some(mem) = benchsuite_core::Host::detect().memory_bytes else {
        return;
    };
    // 16·N² bytes > 4 × total memory.
    let n = ((mem as f64 * 4.0 / 16.0).sqrt() as u64).min(200_000);
    if 16 * n * n <= mem {
        return;
    }
    let e = runner::run(
        &registry(),
        &config("cpu.linpack", &[("n", &n.to_string())]),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`n`") && e.contains("GiB"), "{e}");
}

#[test]
fn a_malformed_clock_override_is_refused_before_running_naming_it() {
    let mut cfg = config("cpu.flops", &[]);
    cfg.options.insert("cpu-ghz".into(), "fast".into());
    let e = runner::run(&registry(), &cfg, &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`fast` for option `cpu-ghz`") && e.contains("a clock in GHz such as 3.1"),
        "{e}"
    );
    // A good override is used, with source "user".
    let mut cfg = config("cpu.flops", &[]);
    cfg.options.insert("cpu-ghz".into(), "2.5".into());
    cfg.options.insert("fma-ports".into(), "2".into());
    let report = runner::run(&registry(), &cfg, &mut Silent).unwrap();
    let p = report.records[0]
        .peak
        .as_ref()
        .expect("a peak from the overrides");
    assert_eq!(p.inputs["GHz"].source, "user");
    assert_eq!(p.inputs["GHz"].value, 2.5);
}
