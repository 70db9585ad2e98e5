//! Conformance: every `gpu` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner. Each record is ok or
//! skipped with a reason (a machine without a GPU skips everything, never
//! panics); an ok record has finite, positive rates below the derived peak
//! × 1.05. Bad input is refused before anything runs.

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::testing::{Capability, Conformance, skip};
use benchsuite_core::{Record, Registry, RunConfig, Status};
use benchsuite_gpu::{DESCRIPTION, MODULE, benchmarks, cuda_status, nvrtc_status};

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

/// Generous physical bounds: no GPU does 10 PFLOP/s on CUDA cores (or
/// 10^16 op/s of anything) or 100 TB/s of copies, and every device does
/// more than 1000 of either per second; no round trip is under 1 ns or
/// over 10 s. Every skip gives one of [`REASONS`].
fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(|id, metric| match (id, metric) {
            ("gpu.flops" | "gpu.matmul", "flops") | ("gpu.iops", "iops") => 1e3..1e16,
            ("gpu.bandwidth", "bandwidth") => 1e3..1e14,
            ("gpu.bandwidth", "time_per_op") | ("gpu.latency", "latency" | "time_per_op") => {
                1e-9..10.0
            }
            _ => panic!("no physical bound for {id} {metric}"),
        })
        .may_skip(|r| {
            let reason = r.reason.as_deref().unwrap_or_default();
            REASONS.iter().any(|p| reason.contains(p))
        })
        .check_each(check)
}

/// What every ok record must show beyond the harness's checks: a peak
/// whose inputs name their source and which the median stays below (5%
/// margin), and notes saying what was measured.
fn check(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    if let Some(p) = &r.peak {
        assert!(!p.inputs.is_empty(), "{what}: a peak without inputs");
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
    }
    assert!(
        !r.notes.is_empty(),
        "{what}: an ok record says what it measured"
    );
}

/// The module's benchmarks in a registry, for plans that must fail.
fn registry() -> Registry {
    harness().registry()
}

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
}

#[test]
fn every_benchmark_runs_at_its_smoke_point_or_says_why_not() {
    let report = harness().check_smoke();
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
        Err(reason) => assert_eq!(facts["reason"].as_str(), Some(&*reason)),
    }
}

#[test]
fn every_choice_runs() {
    harness().check_choices();
}

#[test]
fn without_cuda_every_cuda_record_is_skipped_with_the_driver_s_reason() {
    let reason = match cuda_status() {
        Ok(devices) => {
            skip(
                Capability::NoCuda,
                &format!("CUDA runs here ({})", devices.join(", ")),
            );
            return;
        }
        Err(reason) => reason,
    };
    assert!(
        reason.starts_with("no CUDA driver")
            || reason.starts_with("no CUDA device")
            || reason.contains("CUDA driver"),
        "{reason}"
    );
    let report = harness().run(MODULE, &[]);
    for r in &report.records {
        assert_eq!(r.status, Status::Skipped, "{}", r.id);
        assert_eq!(r.reason.as_deref(), Some(&*reason), "{}", r.id);
    }
}

#[test]
fn backend_wgpu_is_a_per_point_decision() {
    let h = harness();
    let report = h.run("gpu.flops", &[("backend", "wgpu"), ("precision", "f64")]);
    let r = &report.records[0];
    assert_eq!(r.status, Status::Skipped);
    assert!(
        r.reason.as_deref().unwrap_or_default().contains("f32 only"),
        "{:?}",
        r.reason
    );
    #[cfg(not(feature = "wgpu"))]
    for id in ["gpu.flops", "gpu.bandwidth"] {
        let report = h.run(id, &[("backend", "wgpu")]);
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
        let e = runner::run(
            &registry(),
            &RunConfig::smoke_test(id, &[(param, bad)]),
            &mut Silent,
        )
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
        &RunConfig::smoke_test("gpu.flops", &[("device", "999")]),
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
    if let Err(why) = cuda_status() {
        skip(Capability::Cuda, &why);
        return;
    }
    let e = runner::run(
        &registry(),
        &RunConfig::smoke_test("gpu.bandwidth", &[("block", "1T")]),
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
