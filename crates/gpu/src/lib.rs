//! # benchsuite-gpu
//!
//! NVIDIA GPUs through CUDA, in the tradition of nvbandwidth (copies),
//! mixbench / gpu-burn (FMA throughput) and cuBLAS GEMM runs, each number
//! next to a peak derived from what the driver reports.
//!
//! | id | one operation | headline metric | compare with |
//! |----|---------------|-----------------|--------------|
//! | `gpu.flops` | one floating-point operation (FMA = 2) | `flops` FLOP/s | mixbench, the datasheet |
//! | `gpu.iops` | one integer multiply or add (IMAD = 2, dp4a = 8) | `iops` op/s | mixbench |
//! | `gpu.matmul` | one GEMM flop (2·N³ per GEMM) | `flops` FLOP/s | `torch.matmul` |
//! | `gpu.bandwidth` | one copy of `block` bytes | `bandwidth` B/s, `time_per_op` | nvbandwidth, a CuPy/PyTorch copy |
//! | `gpu.latency` | one launch or copy round trip | `latency` s (HDR), `time_per_op` | — |
//!
//! ## Builds and runs anywhere
//!
//! The driver (`libcuda`), NVRTC and cuBLAS are loaded at run time (the
//! driver through cudarc's `dynamic-loading`, NVRTC and cuBLAS by this
//! crate, `cuda/libs.rs`), so the crate compiles without a CUDA toolkit and
//! its tests pass without a GPU. Each entry point first checks that the
//! library it needs loads; otherwise the record is *skipped* with the
//! reason: `no CUDA driver: ...`, `no CUDA device: ...`, `the CUDA driver
//! cannot start: ...` (with the usual fix: a stopped NVSwitch fabric
//! manager, a driver upgraded without a reboot, no `nvidia-uvm`), `NVRTC not found:
//! ... set LD_LIBRARY_PATH to ...`, `cuBLAS not found: ...`. NVRTC and
//! cuBLAS of CUDA 13 or 12 (`libnvrtc.so.13`/`.12`, `libcublas.so.13`/`.12`;
//! the newest major version the driver can run) are looked for on the
//! loader's path, then where the CUDA toolkit and pip's `nvidia-*` wheels
//! (which PyTorch installs) put them, and loaded from there. The driver
//! must support CUDA 12.0 or newer (NVIDIA driver 525+); an older one makes
//! every CUDA record a skip saying so.
//!
//! Kernels are CUDA C (`kernels.rs`) compiled at run time by NVRTC to
//! machine code (CUBIN) for the device's own `sm_XY`, so a driver older
//! than NVRTC of the same CUDA major version is fine. Timing uses CUDA
//! events around a batch of back-to-back operations on a non-blocking
//! stream (one per device, which the cases share in turn; the runner's
//! `Work::elapsed`), except pageable host copies (host clock, see below).
//! The runner's warm-up and batch sizing apply as everywhere.
//!
//! ## `gpu.flops` — `precision=f64|f32|f16|bf16`, `blocks`, `threads_per_block`, `device`, `backend`
//!
//! A register-only kernel: every thread runs 8 independent chains of
//! `a = a·b + c` (`fma.rn.f64`, `fma.rn.f32`, packed `fma.rn.f16x2` /
//! `fma.rn.bf16x2`, which do two FMAs per lane), unrolled 32 deep, for a
//! number of loop trips calibrated in `prepare` so one launch takes ~2 ms;
//! each thread stores its result, and the first and last thread's stored
//! values are checked bit for bit against a host emulation of the same
//! arithmetic. An FMA counts 2 FLOPs, a packed FMA 4.
//!
//! `blocks` (default 0 = auto: SMs × the blocks one SM holds at once) sets
//! the grid; a block runs on one SM, so sweeping `blocks=1..SMs` is the
//! classic "GPU cores used" experiment and the peak scales with
//! `min(blocks, SMs)`. `sm` in a `blocks` value is the SM count of CUDA
//! device 0 (`blocks=1..sm:x2,sm,2sm` puts the knee in the sweep: 132 on
//! an H100/H200, where powers of two jump from 128 to 256). `threads_per_block` (default 256) sets the block.
//! f64 runs on every GPU and reports what it gets: consumer GPUs run FP64
//! at 1/64 of FP32, and the record says so.
//!
//! `backend=wgpu` runs the portable f32 kernel of the `wgpu` cargo feature
//! (Vulkan/Metal/DX12); in a build without it such points are skipped with
//! the command that builds it.
//!
//! ## `gpu.iops` — `precision=i32|i8`
//!
//! The same shape with `mad.lo.u32` (IMAD: a multiply and an add, 2 ops)
//! or `dp4a.s32.s32` (four 8-bit products added to a 32-bit accumulator, 8
//! ops). NVIDIA publishes no per-SM dp4a rate, so i8 records carry no peak.
//!
//! ## `gpu.matmul` — `precision=f16|bf16|tf32|f64|int8|fp8`, `n`
//!
//! `C = A·B` with N×N column-major matrices through cuBLAS: `cublasGemmEx`
//! with 16-bit inputs and outputs and `CUBLAS_COMPUTE_32F` (what
//! `torch.matmul` does for half and bfloat16), `CUBLAS_COMPUTE_32F_FAST_TF32`
//! on f32 data for tf32, `cublasDgemm` for f64; a 32 MiB workspace. int8
//! is `cublasGemmEx` with int8 A and B, int32 C and `CUBLAS_COMPUTE_32I`
//! in the "TN" layout (A transposed, B not), cuBLAS's IMMA tensor-core
//! path: on an H200 at N = 8192, 1453 TOP/s TN against 127.5 NN; it counts
//! 2·N³ integer operations, checked exactly on 16 entries, against the
//! 1979 TOP/s dense INT8 datasheet rate (H100/H200 SXM, at 1830 MHz), and
//! is skipped below compute capability 7.5. fp8 is cuBLASLt's
//! `cublasLtMatmul` with e4m3 A and B, bf16 C and D, f32 compute and
//! unit scales, A transposed and B not (the layout FP8 GEMMs require),
//! default accumulation (fast accumulation off), the algorithm ranked
//! first by `cublasLtMatmulAlgoGetHeuristic`; inputs k/8 (exact in e4m3),
//! 16 entries checked against the host, against the 1979 TFLOP/s FP8
//! dense datasheet rate (H100/H200 SXM at 1830 MHz); skipped below
//! compute capability 8.9 or without `libcublasLt`. The record names the
//! call, layout and accumulation mode of every precision. A GEMM
//! counts 2·N³ FLOPs. Inputs are exact in the type and spread over
//! [-1, 1) (full bit activity: power, and hence clocks, match random data);
//! 16 entries of C are checked against the host. Default N = 8192; sweep
//! `n=1024..16384:x2` for the size curve.
//!
//! ## `gpu.bandwidth` — `op=d2d_kernel|d2d_memcpy|h2d|d2h`, `block`, `memory=pinned|pageable`
//!
//! One operation is one copy of `block` bytes (default 256 MiB; 1 B to
//! GiBs: small blocks show the per-copy launch or DMA set-up cost, large
//! ones the bandwidth). `d2d_kernel` is a copy kernel (one 16-byte vector
//! per thread over the whole buffer, `block`/4096 blocks of 256 threads,
//! in launches of at most 2^20 blocks = 4 GiB; on an H200 this shape copies
//! at `cuMemcpyDtoD`'s 4.16-4.26 TB/s, where grid-stride loops over 2-32
//! resident blocks per SM reached 3.0-4.0); `d2d_memcpy` is `cuMemcpyDtoDAsync`; `h2d`/`d2h` are
//! `cuMemcpy{HtoD,DtoH}Async` from pinned (`cuMemHostAlloc`) or pageable
//! host memory. **Bytes are counted once per direction**: a device copy of
//! N bytes counts 2N (N read + N written, as STREAM's copy and the memory
//! peak count), a host copy N. Pageable copies are timed by the host clock
//! (the driver stages them through the CPU); the others by CUDA events.
//! The source holds a position-dependent pattern and the destination is
//! checked byte for byte after one untimed copy in `prepare`. A `block`
//! whose buffers do not fit the device (or the host) is a usage error
//! before anything is allocated.
//!
//! ## `gpu.latency` — `op=launch|launch_queue|h2d|d2h|d2d`, `block`
//!
//! Each operation timed by the host clock into an HDR histogram: `launch`
//! is an empty one-thread kernel then `cuStreamSynchronize` (launch to
//! completion), `launch_queue` the `cuLaunchKernel` call alone (back to
//! back), the copies a `block`-byte copy (default 4 B) then a synchronise.
//!
//! ## Clocks, power and temperature under load
//!
//! From the end of each record's setup to its teardown a thread reads
//! NVML (`libnvidia-ml.so.1`) every 100 ms (at most 1,024 samples: a longer
//! record keeps every other one and reads half as often), asleep between,
//! outside the timed calls: SM and
//! memory clock, board power, temperature and the clock-event ("throttle")
//! reasons. The record's notes give the min/median/max of each and the
//! peak at the median clock under load beside the peak at maximum clock
//! (an H200 under a bf16 GEMM ran at 1395 MHz of its 1980, at 689 W of a
//! 700 W limit); a software or hardware power cap, power brake or thermal
//! slowdown seen in any sample is a caveat. Without NVML the record says so.
//!
//! ## Peaks
//!
//! Derived from the driver's attributes and the per-architecture table in
//! `peak.rs` (sources cited there: the CUDA C++ Programming Guide's
//! throughput table and the V100/A100/H100/GA102/AD102 whitepapers):
//!
//! - CUDA cores: `min(blocks, SMs) × results per clock per SM × 2 × max SM
//!   clock` (H100 SXM f32: 132 × 128 × 2 × 1.98 GHz = 66.9 TFLOP/s; A100
//!   f64: 108 × 32 × 2 × 1.41 GHz = 9.7 TFLOP/s).
//! - Tensor cores: `SMs × dense FLOPs per clock per SM × max SM clock`.
//! - Device memory: `memory clock × bus width × 2 / 8` (H100 SXM: 2619 MHz ×
//!   5120 bit → 3.35 TB/s; H200: 6144 bit at about 3.2 GHz → about 4.9
//!   TB/s, a little above the datasheet's 4.8); no peak for blocks under
//!   2 × L2, which the L2 cache serves at least in part.
//! - Host link: `PCIe GT/s × encoding × lanes / 8` per direction, from
//!   sysfs (the slower of the GPU's and its upstream port's maximum; in a
//!   virtual machine, whose ports are emulated, the GPU's own). None where
//!   the host link is a cache-coherent NVLink (Grace Hopper's NVLink-C2C:
//!   the driver reports that the GPU uses the host's page tables).
//!
//! Where a rate is unknown (dp4a, a GeForce tensor rate, an export
//! variant such as H20) the record says so instead of guessing. Every
//! record carries the formula, its inputs and the efficiency; the host
//! section (`host.extra.gpu`) lists every device with its clocks, memory,
//! bus width, PCIe link, NVLink links (through NVML) and peaks.

mod backend;
mod bandwidth;
mod cuda;
mod flops;
mod kernels;
mod latency;
mod matmul;
mod params;
mod peak;
mod reference;

#[cfg(feature = "wgpu")]
mod wgpu_backend;

pub use bandwidth::Bandwidth;
pub use flops::{Flops, Iops};
pub use latency::Latency;
pub use matmul::Matmul;

use benchsuite_core::Benchmark;

/// Module name: benchmark ids start with `gpu.`.
pub const MODULE: &str = "gpu";

/// One-line description of the module.
pub const DESCRIPTION: &str = "NVIDIA GPUs via CUDA: FMA throughput per precision, cuBLAS GEMM, device/host copy bandwidth, launch latency";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(Flops),
        Box::new(Iops),
        Box::new(Matmul),
        Box::new(Bandwidth),
        Box::new(Latency),
    ]
}

/// Whether CUDA can run here: the devices it sees (`0 = NVIDIA H100 ...`),
/// or why not (`no CUDA driver: ...`). Loads the driver library once, never
/// panics.
pub fn cuda_status() -> Result<Vec<String>, benchsuite_core::ValueError> {
    cuda_status_text().map_err(Into::into)
}

fn cuda_status_text() -> Result<Vec<String>, String> {
    cuda::driver().map(|d| {
        d.devices
            .iter()
            .map(|i| format!("{} = {}", i.index, i.name))
            .collect()
    })
}

/// Whether NVRTC (needed by every benchmark except `gpu.matmul`) loads,
/// or why not.
pub fn nvrtc_status() -> Result<(), benchsuite_core::ValueError> {
    nvrtc_status_text().map_err(Into::into)
}

fn nvrtc_status_text() -> Result<(), String> {
    cuda::libs::nvrtc()
}
