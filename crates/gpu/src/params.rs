//! Parameters shared by the gpu benchmarks and their checks.

use benchsuite_core::{ConfigError, CountUnit, ParamSpec, Point, Probe};

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

benchsuite_core::choice_enum! {
    /// One copy direction: the `op` parameter (both backends).
    pub(crate) enum CopyOp {
        /// Device to device by the copy kernel.
        D2dKernel = "d2d_kernel",
        /// Device to device by `cuMemcpyDtoDAsync` (the copy engine or the
        /// driver's own kernel, its choice).
        D2dMemcpy = "d2d_memcpy",
        /// Host to device, `cuMemcpyHtoDAsync`.
        H2d = "h2d",
        /// Device to host, `cuMemcpyDtoHAsync`.
        D2h = "d2h",
    }
}

impl CopyOp {
    /// Whether both ends are device memory.
    pub(crate) fn is_d2d(self) -> bool {
        matches!(self, CopyOp::D2dKernel | CopyOp::D2dMemcpy)
    }

    /// Bytes one copy of `block` bytes counts: 2N for device-to-device (N
    /// read and N written, as STREAM copy and the memory peak count), N
    /// across the host link (one direction).
    pub(crate) fn counted_bytes(self, block: u64) -> u64 {
        if self.is_d2d() { 2 * block } else { block }
    }

    /// Device bytes a point allocates.
    pub(crate) fn device_bytes(self, block: u64) -> u64 {
        if self.is_d2d() { 2 * block } else { block }
    }
}

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
fn sm_count() -> Result<u64, benchsuite_core::ValueError> {
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
