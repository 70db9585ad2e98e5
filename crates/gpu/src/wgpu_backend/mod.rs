//! The portable backend: wgpu compute shaders (Vulkan, Metal, DX12) for
//! `gpu.flops` (f32 only) and `gpu.bandwidth`, selected with `backend=wgpu`.
//!
//! Why it exists: the CUDA backend covers NVIDIA GPUs only; wgpu reaches AMD,
//! Intel and Apple GPUs through their native APIs, and Mesa's software Vulkan
//! driver (llvmpipe/lavapipe, Debian `mesa-vulkan-drivers`) lets CI run the
//! whole GPU code path — adapter, shaders, copies, timestamps, verification —
//! on a machine without a GPU. A record from a CPU (software) adapter carries
//! a warning that it is a correctness check, never a GPU measurement.
//!
//! No theoretical peak is derived: wgpu exposes neither the number of
//! compute units nor the clock or memory bus of an adapter, so every record
//! says so in a note rather than guessing.
//!
//! Adapters are numbered in the order wgpu enumerates them (the `device`
//! parameter); `WGPU_BACKEND=vulkan|metal|dx12` restricts which APIs are
//! searched. On a Linux machine without a desktop session, Mesa's
//! device-select Vulkan layer prints `error: XDG_RUNTIME_DIR is invalid or
//! not set` to stderr while adapters are enumerated; it is harmless, and
//! `NODEVICE_SELECT=1` silences it.
//!
//! This file holds the entry points the rest of the crate calls
//! ([`probe`], [`flops_case`], [`bandwidth_case`]); what both cases stand
//! on (the adapters, the opened device, its timestamps) is in `gpu.rs`.

mod bandwidth;
mod flops;
mod gpu;
#[cfg(test)]
mod tests;

use benchsuite_core::{BenchError, Case, Context, Point};

use gpu::{describe, select_adapter};

/// The adapter that would be used, described in one line, or why none can.
pub(crate) fn probe(ctx: &Context, device: usize) -> Result<String, String> {
    let _ = ctx;
    select_adapter(device).map(|a| describe(&a.get_info()))
}

/// `gpu.flops` with `backend=wgpu` (f32 only).
pub(crate) fn flops_case(ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
    flops::prepare(ctx, point)
}

/// `gpu.bandwidth` with `backend=wgpu`.
pub(crate) fn bandwidth_case(ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
    bandwidth::prepare(ctx, point)
}
