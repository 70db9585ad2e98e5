//! Conformance: every `gpu` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner. Each record is ok or
//! skipped with a reason (a machine without a GPU skips everything, never
//! panics); an ok record has finite, positive rates below the derived peak
//! × 1.05. Bad input is refused before anything runs.

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{ParamKind, Record, Registry, Report, RunConfig, Status};
use benchsuite_gpu::{DESCRIPTION, MODULE, benchmarks, cuda_status, nvrtc_status};

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

/// Skip reasons this module gives, each saying what is missing and what
/// to do.
const REASONS: &[&str] = &[
    "no CUDA driver",
    "no CUDA device",
    "the CUDA driver",
    "NVRTC not found",
    "NVRTC found",
    "cuBLAS not found",
    "cuBLAS found",
    "built without the `wgpu` cargo feature",
    "backend=wgpu measures f32 only",
    "needs compute capability",
    // The wgpu backend's own reasons (no adapter, ...), when built with it.
    "wgpu",
    "adapter",
];

/// Generous physical bounds for a record without a peak: no GPU does 10
/// PFLOP/s on CUDA cores or 100 TB/s of copies; no round trip is under
/// 100 ns or over 10 s.
fn bound(metric: &str) -> (f64, f64) {
    match metric {
        "flops" | "iops" => (0.0, 1e16),
        "bandwidth" => (0.0, 1e14),
        "latency" | "time_per_op" => (1e-9, 10.0),
        m => panic!("no bound for metric {m}: add one to this test"),
    }
}

fn check(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    match r.status {
        Status::Ok => {}
        Status::Skipped => {
            let reason = r.reason.as_deref().unwrap_or_default();
            assert!(
                REASONS.iter().any(|p| reason.contains(p)),
                "{what}: skipped with an unexpected reason: {reason}"
            );
            return;
        }
        Status::Failed => panic!("{what}: failed: {:?}", r.reason),
    }
    assert!(!r.metrics.is_empty(), "{what}: no metrics");
    for m in &r.metrics {
        let med = m.summary.median;
        let (lo, hi) = bound(&m.name);
        assert!(
            med.is_finite() && med > lo && med < hi,
            "{what} {}: median {med:e}",
            m.name
        );
        assert_eq!(m.samples.len(), 3, "{what}");
    }
    if let Some(p) = &r.peak {
        assert!(p.value.is_finite() && p.value > 0.0, "{what}: peak {p:?}");
        assert!(!p.formula.is_empty() && !p.inputs.is_empty(), "{what}");
        for (name, i) in &p.inputs {
            assert!(
                ["driver", "table", "table+driver", "sysfs"].contains(&i.source.as_str()),
                "{what}: input {name} has source {}",
                i.source
            );
        }
        let m = r
            .metrics
            .iter()
            .find(|m| m.name == p.metric)
            .expect("the peak's metric");
        assert!(
            m.summary.median < p.value * 1.05,
            "{what}: {} {:e} above the derived peak {:e}",
            p.metric,
            m.summary.median,
            p.value
        );
        assert!(
            p.efficiency.is_some(),
            "{what}: the runner fills the efficiency"
        );
    }
    assert!(
        !r.notes.is_empty(),
        "{what}: an ok record says what it measured"
    );
}

#[test]
fn every_benchmark_runs_at_its_smoke_point_or_says_why_not() {
    let report = run(MODULE, &[]);
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        check(r);
    }
    // The host section says what CUDA sees, or why it sees nothing.
    let facts = &report.host.extra["gpu"];
    match cuda_status() {
        Ok(devices) => {
            assert_eq!(
                facts["devices"].as_array().map(|d| d.len()),
                Some(devices.len())
            );
            assert!(
                facts["devices"][0]["sms"].as_u64().unwrap_or(0) > 0,
                "{facts}"
            );
        }
        Err(reason) => assert_eq!(facts["reason"].as_str(), Some(reason.as_str())),
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
fn without_cuda_every_cuda_record_is_skipped_with_the_driver_s_reason() {
    let Err(reason) = cuda_status() else {
        return;
    };
    assert!(
        reason.starts_with("no CUDA driver")
            || reason.starts_with("no CUDA device")
            || reason.contains("CUDA driver"),
        "{reason}"
    );
    let report = run(MODULE, &[]);
    for r in &report.records {
        assert_eq!(r.status, Status::Skipped, "{}", r.id);
        assert_eq!(r.reason.as_deref(), Some(reason.as_str()), "{}", r.id);
    }
}

#[test]
fn backend_wgpu_is_a_per_point_decision() {
    let report = run("gpu.flops", &[("backend", "wgpu"), ("precision", "f64")]);
    let r = &report.records[0];
    assert_eq!(r.status, Status::Skipped);
    assert!(
        r.reason.as_deref().unwrap_or_default().contains("f32 only"),
        "{:?}",
        r.reason
    );
    #[cfg(not(feature = "wgpu"))]
    for id in ["gpu.flops", "gpu.bandwidth"] {
        let report = run(id, &[("backend", "wgpu")]);
        let r = &report.records[0];
        assert_eq!(r.status, Status::Skipped, "{id}");
        let reason = r.reason.as_deref().unwrap_or_default();
        assert!(reason.contains("--features wgpu"), "{id}: {reason}");
    }
}

#[test]
fn bad_values_are_usage_errors_naming_the_parameter() {
    for (id, param, bad) in [
        ("gpu.flops", "threads_per_block", "0"),
        ("gpu.flops", "threads_per_block", "2048"),
        ("gpu.flops", "precision", "f8"),
        ("gpu.iops", "precision", "i4"),
        ("gpu.matmul", "n", "8"),
        ("gpu.bandwidth", "block", "0"),
        ("gpu.bandwidth", "op", "p2p"),
        ("gpu.latency", "block", "1G"),
    ] {
        let e = runner::run(&registry(), &config(id, &[(param, bad)]), &mut Silent)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("`{param}`")) && e.contains(bad),
            "{id} {param}={bad}: {e}"
        );
    }
}

#[test]
fn an_unknown_device_is_an_error_listing_the_devices() {
    let result = runner::run(
        &registry(),
        &config("gpu.flops", &[("device", "999")]),
        &mut Silent,
    );
    match cuda_status() {
        Ok(devices) => {
            let e = result.unwrap_err().to_string();
            assert!(e.contains("`device`") && e.contains("999"), "{e}");
            assert!(
                e.contains(&devices[0]),
                "the message lists the devices: {e}"
            );
        }
        // Without CUDA the index cannot be checked: the record is skipped.
        Err(_) => assert_eq!(result.unwrap().records[0].status, Status::Skipped),
    }
}

#[test]
fn a_block_larger_than_the_device_is_refused_before_allocating() {
    let Ok(_) = cuda_status() else {
        return;
    };
    let e = runner::run(
        &registry(),
        &config("gpu.bandwidth", &[("block", "1T")]),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`block`") && e.contains("device memory"), "{e}");
}

#[test]
fn nvrtc_status_names_the_fix_when_missing() {
    if let Err(e) = nvrtc_status() {
        assert!(
            e.contains("LD_LIBRARY_PATH") && e.contains("libnvrtc"),
            "{e}"
        );
    }
}
