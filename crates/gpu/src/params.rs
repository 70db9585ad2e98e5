//! Parameters shared by the gpu benchmarks and their checks.

use benchsuite_core::{BenchError, ConfigError, Context, CountUnit, ParamSpec, Point, Probe};

use crate::cuda;

benchsuite_core::choice_enum! {
    /// The `backend` parameter of `gpu.flops` and `gpu.bandwidth`.
    pub(crate) enum Backend {
        /// CUDA C kernels compiled at run time by NVRTC.
        Cuda = "cuda",
        /// Portable compute shaders (feature `wgpu`).
        Wgpu = "wgpu",
    }
}

benchsuite_core::choice_enum! {
    /// The `memory` parameter of `gpu.bandwidth` and `gpu.latency`: the host
    /// side of host<->device copies.
    pub(crate) enum Memory {
        /// Page-locked, `cuMemHostAlloc`.
        Pinned = "pinned",
        /// Ordinary memory the driver stages.
        Pageable = "pageable",
    }
}

/// Why `backend=wgpu` cannot run in this build.
#[cfg(not(feature = "wgpu"))]
pub(crate) const NO_WGPU: &str = "built without the `wgpu` cargo feature: reinstall with `cargo install --path cli --features wgpu`";

/// The most devices an index may name (far above any machine).
const MAX_DEVICE: u64 = 1023;

/// `device`: which GPU; `wgpu` says whether the benchmark has a wgpu
/// backend whose adapters it may also index.
pub(crate) fn device(wgpu: bool) -> ParamSpec {
    ParamSpec::count(
        "device",
        if wgpu {
            "GPU index: a CUDA ordinal (CUDA orders fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID makes it match nvidia-smi; CUDA_VISIBLE_DEVICES applies), or a wgpu adapter index with backend=wgpu"
        } else {
            "CUDA device ordinal (CUDA orders fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID makes it match nvidia-smi; CUDA_VISIBLE_DEVICES applies)"
        },
        0,
        MAX_DEVICE,
        0,
    )
}

/// `sm` in a `blocks` value: the SM count of CUDA device 0, so a sweep
/// `1..sm:x2,sm,2sm` has its knee (132 on an H100/H200) on any GPU.
pub(crate) const SM_UNIT: CountUnit = CountUnit {
    suffix: "sm",
    meaning: "the SM count of CUDA device 0",
    resolve: sm_count,
};

/// The SM count of CUDA device 0. Without a CUDA driver or device, `sm`
/// stands for 1: every CUDA record then skips saying why (no driver, no
/// device), as the same plan does on any machine without a GPU, instead of
/// the whole plan stopping at a parameter it cannot resolve. No record is
/// measured with the stand-in.
fn sm_count() -> Result<u64, String> {
    let Ok(drv) = cuda::driver() else {
        return Ok(1);
    };
    Ok(drv.devices.first().map_or(1, |d| u64::from(d.sms)))
}

/// `backend`: CUDA or the portable wgpu backend.
pub(crate) fn backend() -> ParamSpec {
    ParamSpec::choice_of(
        "backend",
        "cuda: CUDA C kernels compiled at run time by NVRTC (NVIDIA GPUs); wgpu: portable compute shaders (Vulkan/Metal/DX12), needs a build with the `wgpu` cargo feature",
        Backend::Cuda,
    )
}

/// Whether the point runs on CUDA (no `backend` parameter means CUDA).
pub(crate) fn is_cuda(point: &Point) -> bool {
    point.get("backend").is_none()
        || matches!(point.choice::<Backend>("backend"), Ok(Backend::Cuda))
}

/// The probe of a CUDA-only benchmark: ready when the driver sees a device.
pub(crate) fn cuda_probe() -> Probe {
    match cuda::driver() {
        Ok(_) => Probe::Ready,
        Err(reason) => Probe::Skip(reason),
    }
}

/// The device a CUDA point names, when the driver is there. `Ok(None)`
/// when CUDA is not usable here (the record is skipped later, with the
/// reason), an error listing the devices when the index is past them.
pub(crate) fn cuda_device(point: &Point) -> Result<Option<&'static cuda::DeviceInfo>, ConfigError> {
    if !is_cuda(point) {
        return Ok(None);
    }
    let Ok(drv) = cuda::driver() else {
        return Ok(None);
    };
    let index = point.get("device").and_then(|v| v.as_u64()).unwrap_or(0);
    drv.device(index as usize)
        .map(Some)
        .map_err(|reason| ConfigError::InvalidValue {
            param: "device".into(),
            value: index.to_string(),
            reason,
        })
}

/// A usage error on `param`.
pub(crate) fn invalid(param: &str, point: &Point, reason: String) -> ConfigError {
    ConfigError::InvalidValue {
        param: param.into(),
        value: point.get(param).map(|v| v.to_string()).unwrap_or_default(),
        reason,
    }
}

/// `1.5 GiB` for messages.
pub(crate) fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

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
