//! The wgpu backend end to end through the real runner and the registered
//! `gpu.flops` / `gpu.bandwidth` descriptors, on whatever adapter exists
//! (Mesa's lavapipe on CI). Without any adapter (no Vulkan loader or
//! driver) every test skips saying why (capability `vulkan`, which CI
//! requires): that machine cannot run the path.
#![cfg(feature = "wgpu")]

use benchsuite_core::testing::{Capability, Conformance, skip};
use benchsuite_core::{Record, Status};
use benchsuite_gpu::{DESCRIPTION, MODULE, benchmarks};

/// Runs `selector` at its smoke point with `sweep` through the runner
/// (the conformance harness's; this file checks the records itself).
fn run(selector: &str, sweep: &[(&str, &str)]) -> Vec<Record> {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .run(selector, sweep)
        .records
}

/// True when the record was skipped because the machine has no wgpu
/// adapter at all; says so with [`skip`] (the caller returns).
fn no_adapter(r: &Record) -> bool {
    let reason = r.reason.as_deref().unwrap_or_default();
    let none = r.status == Status::Skipped && reason.contains("no wgpu adapter");
    if none {
        skip(Capability::Vulkan, reason);
    }
    none
}

/// A CPU (software) adapter, as the record's adapter note names it.
fn software(r: &Record) -> bool {
    r.notes
        .iter()
        .any(|n| n.starts_with("adapter: ") && n.contains("CPU (software)"))
}

fn logical_cpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// Asserts what every ok wgpu record carries: the adapter named in a note,
/// no claimed peak, the software warning on a CPU adapter.
fn check_common(r: &Record) {
    assert_eq!(
        r.status,
        Status::Ok,
        "{}: {}",
        r.key(),
        r.reason.as_deref().unwrap_or("(no reason)")
    );
    assert!(
        r.notes.iter().any(|n| n.starts_with("adapter: ")),
        "{}: the adapter is named in a note: {:?}",
        r.key(),
        r.notes
    );
    assert!(r.peak.is_none(), "{}: no peak is claimed for wgpu", r.key());
    if software(r) {
        assert!(
            r.warnings.iter().any(|w| {
                let w = w.to_string();
                w.contains("software renderer") && w.contains("NOT a GPU measurement")
            }),
            "{}: {:?}",
            r.key(),
            r.warnings
        );
    }
}

#[test]
fn flops_f32_runs_on_the_adapter() {
    let records = run(
        "gpu.flops",
        &[("backend", "wgpu"), ("precision", "f32"), ("blocks", "0")],
    );
    assert_eq!(records.len(), 1);
    let r = &records[0];
    if no_adapter(r) {
        return;
    }
    check_common(r);
    let m = r.metric("flops").expect("a flops metric");
    assert_eq!(m.unit, "FLOP/s");
    let med = m.summary.median;
    assert!(med.is_finite() && med > 0.0, "{med}");
    // A CPU adapter cannot beat every logical CPU retiring 64 FLOP (two
    // 512-bit FMAs) per cycle at 5 GHz; no GPU does 10^15 f32 FLOP/s
    // without tensor cores.
    let bound = if software(r) {
        logical_cpus() * 5e9 * 64.0
    } else {
        1e15
    };
    assert!(med < bound, "{med:e} FLOP/s is above {bound:e}");
    assert!(
        r.params.get("blocks").and_then(|v| v.as_u64()).unwrap_or(0) > 0,
        "blocks=0 resolves to the chosen count: {:?}",
        r.params
    );
}

#[test]
fn flops_other_precisions_are_skipped_with_the_reason() {
    for r in run(
        "gpu.flops",
        &[("backend", "wgpu"), ("precision", "f64,f16,bf16")],
    ) {
        if no_adapter(&r) {
            return;
        }
        assert_eq!(r.status, Status::Skipped, "{}", r.key());
        let reason = r.reason.as_deref().unwrap_or_default();
        assert!(reason.contains("f32 only"), "{}: {reason}", r.key());
    }
}

#[test]
fn bandwidth_every_op_copies_and_verifies() {
    let records = run(
        "gpu.bandwidth",
        &[
            ("backend", "wgpu"),
            ("op", "d2d_kernel,d2d_memcpy,h2d,d2h"),
            ("block", "256K"),
            ("memory", "pinned,pageable"),
        ],
    );
    assert_eq!(records.len(), 8);
    for r in &records {
        if no_adapter(r) {
            return;
        }
        check_common(r);
        let bw = r.metric("bandwidth").expect("a bandwidth metric");
        assert_eq!(bw.unit, "B/s");
        let med = bw.summary.median;
        assert!(med.is_finite() && med > 0.0, "{}: {med}", r.key());
        // 1 TB/s is beyond any CPU's memory; 20 TB/s beyond any GPU's HBM.
        let bound = if software(r) { 1e12 } else { 20e12 };
        assert!(med < bound, "{}: {med:e} B/s is above {bound:e}", r.key());
        assert!(
            r.notes.iter().any(|n| n.starts_with("verified: ")),
            "{}: {:?}",
            r.key(),
            r.notes
        );
        let op = r
            .params
            .get("op")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        if op == "h2d" || op == "d2h" {
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.contains("wgpu has no pinned/pageable")),
                "{}: {:?}",
                r.key(),
                r.notes
            );
        }
    }
}
