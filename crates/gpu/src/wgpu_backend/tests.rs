//! The backend's entry points, driven directly with hand-built points on
//! whatever adapter exists (lavapipe on CI). Every test that needs an
//! adapter skips saying why when there is none (capability `vulkan`).

use std::sync::Arc;
use std::time::Instant;

use benchsuite_core::testing::{Capability, skip};
use benchsuite_core::{About, BenchError, Case, Context, Finished, Host, Point, Value};

use super::{bandwidth_case, flops_case, probe};

/// A context on this host, if wgpu finds adapter 0; else says why with
/// [`skip`] (the caller returns).
pub(super) fn ctx_with_adapter() -> Option<Context> {
    let ctx = Context::new(Arc::new(Host::detect()));
    match probe(&ctx, 0) {
        Ok(_) => Some(ctx),
        Err(reason) => {
            skip(Capability::Vulkan, &reason);
            None
        }
    }
}

fn point(pairs: &[(&str, Value)]) -> Point {
    let mut p = Point::default();
    p.set("backend", Value::Str("wgpu".into()));
    p.set("device", Value::Int(0));
    for (k, v) in pairs {
        p.set(k, v.clone());
    }
    p
}

fn flops_point(precision: &str, blocks: u64, threads: u64) -> Point {
    point(&[
        ("precision", Value::Str(precision.into())),
        ("blocks", Value::Int(blocks)),
        ("threads_per_block", Value::Int(threads)),
    ])
}

pub(super) fn bandwidth_point(op: &str, block: u64) -> Point {
    point(&[
        ("op", Value::Str(op.into())),
        ("block", Value::Int(block)),
        ("memory", Value::Str("pinned".into())),
    ])
}

fn software(about: &About) -> bool {
    about
        .notes
        .iter()
        .any(|n| n.starts_with("adapter:") && n.contains("CPU (software)"))
}

/// Finishes a case, which must succeed (verification included), and
/// returns what its record carries.
fn finish_ok(case: Box<dyn Case>, what: &str) -> About {
    let Finished { about, error } = case.finish();
    if let Some(e) = error {
        panic!("{what}: {}", benchsuite_core::error_chain(&e));
    }
    about
}

/// Runs a batch and returns (work, seconds): device time when reported,
/// else the wall clock around the call, as the runner does.
fn timed(case: &mut dyn Case, iters: u64) -> (benchsuite_core::Work, f64) {
    let t0 = Instant::now();
    let w = case.run(iters).expect("run");
    let wall = t0.elapsed();
    let secs = w.elapsed.unwrap_or(wall).as_secs_f64();
    (w, secs)
}

#[test]
fn probe_names_the_adapter_or_explains() {
    let ctx = Context::new(Arc::new(Host::detect()));
    match probe(&ctx, 0) {
        Ok(desc) => {
            assert!(desc.contains('(') && desc.contains("driver"), "{desc}");
            let e = probe(&ctx, 999).unwrap_err();
            assert!(
                e.contains("device=999") && e.contains("0: "),
                "the error lists the adapters: {e}"
            );
        }
        Err(reason) => assert!(reason.contains("mesa-vulkan-drivers"), "{reason}"),
    }
}

#[test]
fn flops_runs_verifies_and_labels_the_adapter() {
    let Some(ctx) = ctx_with_adapter() else {
        return;
    };
    let mut case = flops_case(&ctx, &flops_point("f32", 2, 64)).unwrap();
    let (w, secs) = timed(case.as_mut(), 2);
    assert_eq!(
        w.ops,
        2 * 2 * 64 * super::flops::FLOP_PER_INVOCATION_FOR_TESTS
    );
    let rate = w.ops as f64 / secs;
    assert!(rate.is_finite() && rate > 0.0, "{rate}");
    let about = finish_ok(case, "flops");
    let notes = &about.notes;
    assert!(
        notes.iter().any(|n| n.starts_with("adapter: ")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.starts_with("time: ")), "{notes:?}");
    if software(&about) {
        assert!(
            about.caveats.iter().any(|w| {
                let w = w.to_string();
                w.contains("software renderer") && w.contains("NOT a GPU measurement")
            }),
            "{:?}",
            about.caveats
        );
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let bound = cpus * 5e9 * 64.0;
        assert!(
            rate < bound,
            "{rate:e} FLOP/s from a CPU adapter is above {bound:e}"
        );
    }
    assert!(about.peak.is_none());
}

#[test]
fn flops_auto_blocks_resolve() {
    let Some(ctx) = ctx_with_adapter() else {
        return;
    };
    let case = flops_case(&ctx, &flops_point("f32", 0, 32)).unwrap();
    let resolved = finish_ok(case, "flops blocks=0").resolved;
    let blocks = resolved
        .iter()
        .find(|(k, _)| *k == "blocks")
        .and_then(|(_, v)| v.as_u64())
        .unwrap();
    assert!(blocks >= 1, "{resolved:?}");
}

#[test]
fn flops_other_precisions_are_skipped() {
    let ctx = Context::new(Arc::new(Host::detect()));
    for p in ["f64", "f16", "bf16"] {
        match flops_case(&ctx, &flops_point(p, 1, 64)) {
            Err(BenchError::Skip(r)) => assert!(r.contains("f32 only"), "{r}"),
            Err(e) => panic!("{p}: expected a skip, got {e}"),
            Ok(_) => panic!("{p}: expected a skip"),
        }
    }
}

#[test]
fn flops_rejects_what_the_adapter_cannot_do() {
    let Some(ctx) = ctx_with_adapter() else {
        return;
    };
    let e = flops_case(&ctx, &flops_point("f32", 1, 1 << 20))
        .err()
        .expect("a workgroup of 2^20 invocations is beyond every adapter");
    assert!(e.to_string().contains("threads_per_block=1048576"), "{e}");
    let mut p = flops_point("f32", 1, 64);
    p.set("device", Value::Int(999));
    let e = flops_case(&ctx, &p).err().expect("no adapter 999");
    assert!(e.to_string().contains("device=999"), "{e}");
}

#[test]
fn bandwidth_every_op_copies_and_verifies() {
    let Some(ctx) = ctx_with_adapter() else {
        return;
    };
    let block = 256 * 1024;
    for op in ["d2d_kernel", "d2d_memcpy", "h2d", "d2h"] {
        let mut case = bandwidth_case(&ctx, &bandwidth_point(op, block)).unwrap();
        let (w, secs) = timed(case.as_mut(), 3);
        assert_eq!(w.ops, 3, "{op}");
        let per_copy = if op.starts_with("d2d") {
            2 * block
        } else {
            block
        };
        assert_eq!(w.bytes, 3 * per_copy, "{op}");
        let bw = w.bytes as f64 / secs;
        assert!(bw.is_finite() && bw > 0.0, "{op}: {bw}");
        let about = finish_ok(case, op);
        if software(&about) {
            assert!(bw < 1e12, "{op}: {bw:e} B/s from a CPU adapter");
            assert!(
                about
                    .caveats
                    .iter()
                    .any(|w| w.to_string().contains("NOT a GPU measurement")),
                "{op}"
            );
        }
        let notes = about.notes.join("\n");
        assert!(
            notes.contains("adapter: ") && notes.contains("bytes: "),
            "{op}: {notes}"
        );
        if !op.starts_with("d2d") {
            assert!(
                notes.contains("memory=pinned: wgpu has no pinned"),
                "{op}: {notes}"
            );
        }
    }
}

#[test]
fn bandwidth_odd_blocks_and_chunked_bindings() {
    let Some(ctx) = ctx_with_adapter() else {
        return;
    };
    match bandwidth_case(&ctx, &bandwidth_point("d2d_kernel", 1022)) {
        Err(BenchError::Skip(r)) => assert!(r.contains("block=1022"), "{r}"),
        Err(e) => panic!("1022 bytes is not whole words: expected a skip, got {e}"),
        Ok(_) => panic!("1022 bytes is not whole words: expected a skip"),
    }
    // A block that is words but not 16-byte vectors takes the u32 shader.
    let mut case = bandwidth_case(&ctx, &bandwidth_point("d2d_kernel", 4100)).unwrap();
    case.run(2).unwrap();
    let about = finish_ok(case, "d2d_kernel block=4100");
    assert!(about.notes.iter().any(|n| n.contains("4-byte loads")));
}

#[test]
fn an_unusable_timestamp_pair_reruns_the_batch_once() {
    use std::time::Duration;
    let mut calls = 0;
    let w = super::gpu::timed_batch(|| {
        calls += 1;
        let stamps = if calls == 1 {
            Err("wrapped".to_string())
        } else {
            Ok(Duration::from_millis(3))
        };
        Ok((benchsuite_core::Work::ops(7), Some(stamps)))
    })
    .unwrap();
    assert_eq!(
        (calls, w.ops, w.elapsed),
        (2, 7, Some(Duration::from_millis(3)))
    );
    let e =
        super::gpu::timed_batch(|| Ok((benchsuite_core::Work::ops(1), Some(Err("bad".into())))))
            .unwrap_err();
    assert!(e.to_string().contains("bad, twice in a row"), "{e}");
    let w = super::gpu::timed_batch(|| Ok((benchsuite_core::Work::ops(1), None))).unwrap();
    assert_eq!(
        w.elapsed, None,
        "without a timer the runner's clock is used"
    );
}
