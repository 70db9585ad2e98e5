//! The `backend` parameter's reach past CUDA: `prepare` for
//! `backend=wgpu` points, handed to the wgpu backend (or skipped, saying
//! how to build it), and the module's host facts (the CUDA devices and the
//! wgpu adapter). Above both backends; the parameters they share are in
//! `params.rs`.

use benchsuite_core::{BenchError, Context, Point};

use crate::cuda;

/// Why `backend=wgpu` cannot run in this build.
#[cfg(not(feature = "wgpu"))]
pub(crate) const NO_WGPU: &str = "built without the `wgpu` cargo feature: reinstall with `cargo install --path cli --features wgpu`";

/// The module's host facts: CUDA devices (or why there are none) and, in a
/// build with the `wgpu` feature, the wgpu adapter.
pub(crate) fn host_facts(ctx: &Context) -> serde_json::Value {
    let virtualized = cuda::device::virtualized(&ctx.host);
    #[cfg(feature = "wgpu")]
    let mut facts = cuda::device::host_facts(virtualized);
    #[cfg(not(feature = "wgpu"))]
    let facts = cuda::device::host_facts(virtualized);
    #[cfg(feature = "wgpu")]
    {
        let adapter = match crate::wgpu_backend::probe(ctx, 0) {
            Ok(a) => serde_json::json!({ "adapter": a }),
            Err(e) => serde_json::json!({ "unavailable": e }),
        };
        facts["wgpu"] = adapter;
    }
    facts
}

/// Which wgpu case to make.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WgpuKind {
    /// `gpu.flops` (f32 only).
    Flops,
    /// `gpu.bandwidth`.
    Bandwidth,
}

/// `prepare` for `backend=wgpu` points: the wgpu backend's case, a skip
/// with its reason when it has no adapter, or a skip saying how to build it.
pub(crate) fn wgpu_case(
    ctx: &Context,
    point: &Point,
    kind: WgpuKind,
) -> Result<Box<dyn benchsuite_core::Case>, BenchError> {
    #[cfg(feature = "wgpu")]
    {
        let device = point.u64("device")? as usize;
        crate::wgpu_backend::probe(ctx, device).map_err(BenchError::Skip)?;
        match kind {
            WgpuKind::Flops => crate::wgpu_backend::flops_case(ctx, point),
            WgpuKind::Bandwidth => crate::wgpu_backend::bandwidth_case(ctx, point),
        }
    }
    #[cfg(not(feature = "wgpu"))]
    {
        let _ = (ctx, point, kind);
        Err(BenchError::Skip(NO_WGPU.into()))
    }
}
