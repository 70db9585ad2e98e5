//! `gpu.matmul`: square GEMM throughput through cuBLAS (tensor cores where
//! the GPU has them for the type), the ceiling next to `gpu.flops`'s
//! CUDA-core one.

use std::ffi::c_void;

use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Finished, Meta, MetricSpec,
    ParamSpec, Point, Probe, Value, Work,
};

use crate::backend;
use crate::cuda::blas::{self, Blas};
use crate::cuda::blaslt::Fp8Gemm;
use crate::cuda::{self, DeviceBuffer, Gpu, Timer};
use crate::kernels::emulate::{bf16_bits, bf16_value, f16_bits, f16_value};
use crate::params;
use crate::peak::{self, Gemm};

/// cuBLAS GEMM throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct Matmul;

/// cuBLAS workspace: NVIDIA recommends 32 MiB on Hopper (PyTorch uses the
/// same there); more than enough elsewhere.
const WORKSPACE: usize = 32 << 20;

/// Host chunk used to generate and upload the matrices.
const CHUNK_ELEMS: usize = 8 << 20;

impl Benchmark for Matmul {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.matmul".into(),
            description: "GPU GEMM throughput via cuBLAS (f16/bf16/tf32 tensor cores, f64), C = A·B with N×N matrices".into(),
            params: vec![
                ParamSpec::choice_of(
                    "precision",
                    "f16 | bf16 (16-bit in and out, f32 accumulation, as torch.matmul) | tf32 (f32 data, TF32 tensor-core math) | f64 (DGEMM) | int8 (int8 in, int32 accumulation and out, A transposed: the IMMA tensor path, op/s) | fp8 (e4m3 in, bf16 out, f32 accumulation, A transposed, through cuBLASLt)",
                    Gemm::Bf16,
                ),
                ParamSpec::count(
                    "n",
                    "matrix size N (A, B and C are N×N): 1024..16384 spans launch-bound to compute-bound",
                    16,
                    65536,
                    8192,
                )
                .with_smoke(Value::Int(256)),
                params::device(false),
            ],
            metrics: vec![MetricSpec::ops_per_sec("flops", "FLOP/s")],
        }
    }

    fn probe(&self, _ctx: &Context) -> Probe {
        params::cuda_probe()
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let g = point.choice("precision").unwrap_or(Gemm::Bf16);
        let n = point.get("n").and_then(|v| v.as_u64()).unwrap_or(0);
        check_aligned(g, n).map_err(|r| params::invalid("n", point, r))?;
        let Some(info) = params::cuda_device(point)? else {
            return Ok(());
        };
        check_fits(g, n, info).map_err(|r| params::invalid("n", point, r))
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(backend::host_facts(ctx))
    }

    /// `torch.matmul` (`_int_mm`, `_scaled_mm` for int8/fp8) by python3.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::matmul(point)
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        prepare(point)
    }
}

/// Device bytes of the three matrices and the workspace.
pub(crate) fn device_bytes(g: Gemm, n: u64) -> u64 {
    n * n * (2 * g.elem_bytes() + g.out_bytes()) + WORKSPACE as u64
}

/// Whether A is stored transposed (`transa = CUBLAS_OP_T`, the "TN"
/// layout): int8 GEMMs take cuBLAS's IMMA tensor-core path only so (on an
/// H200, 1453 TOP/s TN against 127.5 NN at N = 8192).
pub(crate) fn a_transposed(g: Gemm) -> bool {
    matches!(g, Gemm::Int8 | Gemm::Fp8)
}

/// Where A(i, k) of an N×N column-major A is stored: at i + k·N, or at
/// k + i·N when A is stored transposed.
pub(crate) fn a_index(g: Gemm, n: u64, i: u64, k: u64) -> u64 {
    if a_transposed(g) {
        k + i * n
    } else {
        i + k * n
    }
}

/// What the record says ran: the cuBLAS call, types, compute mode, layout.
pub(crate) fn call_note(g: Gemm) -> &'static str {
    match g {
        Gemm::F16 => "cublasGemmEx: CUDA_R_16F in and out, CUBLAS_COMPUTE_32F, NN (no transposes)",
        Gemm::Bf16 => {
            "cublasGemmEx: CUDA_R_16BF in and out, CUBLAS_COMPUTE_32F, NN (no transposes)"
        }
        Gemm::Tf32 => {
            "cublasGemmEx: CUDA_R_32F in and out, CUBLAS_COMPUTE_32F_FAST_TF32, NN (no transposes)"
        }
        Gemm::F64 => "cublasDgemm, NN (no transposes)",
        Gemm::Fp8 => {
            "cublasLtMatmul: CUDA_R_8F_E4M3 A and B, CUDA_R_16BF C and D, CUBLAS_COMPUTE_32F with f32 scale type, unit scales (no scale pointers), default accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM off), TN: A transposed (CUBLASLT_MATMUL_DESC_TRANSA = CUBLAS_OP_T), B not, as FP8 GEMMs require; the algorithm cublasLtMatmulAlgoGetHeuristic ranks first"
        }
        Gemm::Int8 => {
            "cublasGemmEx: CUDA_R_8I in, CUDA_R_32I out, CUBLAS_COMPUTE_32I (exact int32 accumulation), TN: A transposed (transa = CUBLAS_OP_T), B not, the layout of cuBLAS's IMMA tensor-core path (NN runs about 11× slower)"
        }
    }
}

/// The 8-bit GEMMs' size rules, with leading dimension n: cuBLASLt's FP8
/// matmul wants every matrix's leading dimension a multiple of 16 bytes
/// (16 e4m3 values), cuBLAS's int8 IMMA path m, k and the leading
/// dimensions multiples of 4 (cuBLAS docs, cublasGemmEx and cublasLtMatmul
/// requirements); other sizes fail at the call.
fn check_aligned(g: Gemm, n: u64) -> Result<(), String> {
    let (multiple, why) = match g {
        Gemm::Fp8 => (
            16,
            "cuBLASLt's FP8 matmul needs leading dimensions of a multiple of 16 bytes",
        ),
        Gemm::Int8 => (
            4,
            "cuBLAS's int8 tensor-core GEMM needs m, k and leading dimensions that are multiples of 4",
        ),
        _ => return Ok(()),
    };
    if n.is_multiple_of(multiple) {
        return Ok(());
    }
    Err(format!(
        "precision={} needs n a multiple of {multiple} ({why}): try {} or {}",
        g.name(),
        n / multiple * multiple,
        (n / multiple + 1) * multiple
    ))
}

fn check_fits(g: Gemm, n: u64, info: &cuda::DeviceInfo) -> Result<(), String> {
    let need = device_bytes(g, n);
    if need > info.memory_bytes {
        return Err(format!(
            "three {n}×{n} {} matrices need {}, more than the {} of device {} ({})",
            g.name(),
            params::gib(need),
            params::gib(info.memory_bytes),
            info.index,
            info.name
        ));
    }
    Ok(())
}

/// The warning for a tf32 GEMM when `NVIDIA_TF32_OVERRIDE` (`value`) is
/// `0`: the libraries then never use TF32 tensor cores, whatever the
/// program asks for, and the GEMM runs as plain FP32.
pub(crate) fn tf32_override(g: Gemm, value: Option<&str>) -> Option<String> {
    (g == Gemm::Tf32 && value.is_some_and(|v| v.trim() == "0")).then(|| {
        "NVIDIA_TF32_OVERRIDE=0 is set: cuBLAS does not use TF32 tensor cores even for CUBLAS_COMPUTE_32F_FAST_TF32, so this runs as an FP32 GEMM far below the TF32 peak; unset it to measure TF32".into()
    })
}

/// FLOPs of one N×N×N GEMM: N³ multiply-adds, 2 operations each.
pub(crate) fn gemm_flops(n: u64) -> u64 {
    2 * n * n * n
}

/// Element `idx` of matrix `seed`, exactly representable in the type: an
/// integer of the type's significand width scaled into [-1, 1), so the
/// host can recompute any product exactly; every representable value of
/// that grid is equally likely (full bit activity, like random data).
pub(crate) fn element(g: Gemm, seed: u64, idx: u64) -> f64 {
    let h = splitmix(idx ^ (seed << 48));
    match g {
        Gemm::F16 | Gemm::Tf32 => ((h >> 53) as i64 - 1024) as f64 / 1024.0,
        Gemm::Bf16 => ((h >> 56) as i64 - 128) as f64 / 128.0,
        Gemm::F64 => ((h >> 11) as i64 - (1 << 52)) as f64 / (1u64 << 52) as f64,
        // The whole int8 range, unscaled: products and int32 sums are exact.
        Gemm::Int8 => ((h >> 56) as i64 - 128) as f64,
        // k/8 for k in -8..8: exact in e4m3 (3 significant bits at most).
        Gemm::Fp8 => ((h >> 60) as i64 - 8) as f64 / 8.0,
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Stores `v` as the type's bytes (little endian).
fn encode(g: Gemm, v: f64, out: &mut Vec<u8>) {
    match g {
        Gemm::F16 => out.extend_from_slice(&f16_bits(v).to_le_bytes()),
        Gemm::Bf16 => out.extend_from_slice(&bf16_bits(v).to_le_bytes()),
        Gemm::Tf32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        Gemm::F64 => out.extend_from_slice(&v.to_le_bytes()),
        Gemm::Int8 => out.push(v as i8 as u8),
        Gemm::Fp8 => out.push(e4m3_bits(v)),
    }
}

fn decode(g: Gemm, b: &[u8]) -> f64 {
    match g {
        Gemm::F16 => f16_value(u16::from_le_bytes([b[0], b[1]])),
        Gemm::Bf16 => bf16_value(u16::from_le_bytes([b[0], b[1]])),
        Gemm::Tf32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        Gemm::F64 => f64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
        Gemm::Int8 => b[0] as i8 as f64,
        Gemm::Fp8 => e4m3_value(b[0]),
    }
}

/// FP8 e4m3 bits of `x`, which must be zero or a normal e4m3 value exactly.
fn e4m3_bits(x: f64) -> u8 {
    if x == 0.0 {
        return 0;
    }
    let sign = if x < 0.0 { 0x80 } else { 0 };
    let a = x.abs();
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    debug_assert!((-6..=8).contains(&e), "{x} is not a normal e4m3");
    let m = (a / 2f64.powi(e) - 1.0) * 8.0;
    debug_assert_eq!(m, m.round(), "{x} is not exact in e4m3");
    sign | (((e + 7) as u8) << 3) | m as u8
}

/// The value of FP8 e4m3 bits (no infinities; 0x7f/0xff are NaN).
fn e4m3_value(b: u8) -> f64 {
    let e = ((b >> 3) & 0xf) as i32;
    let m = (b & 7) as f64;
    let v = if e == 0 {
        m * 2f64.powi(-9)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    };
    if b & 0x80 != 0 { -v } else { v }
}

/// An element of C as stored ([`Gemm::out_bytes`] bytes).
fn decode_out(g: Gemm, b: &[u8]) -> f64 {
    match g {
        Gemm::Int8 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        Gemm::Fp8 => bf16_value(u16::from_le_bytes([b[0], b[1]])),
        g => decode(g, b),
    }
}

/// Allowed |C - reference| as a fraction of Σ|a·b| over the dot product:
/// the output rounding (f16 2^-11, bf16 2^-8 relative) plus f32
/// accumulation and split-K partial sums, with margin. A transposed or
/// misplaced matrix is off by the order of the sum itself.
fn tolerance(g: Gemm) -> f64 {
    match g {
        Gemm::F16 | Gemm::Tf32 => 4e-3,
        // fp8 products of k/8 values are exact in f32; the bf16 output
        // rounding is the error.
        Gemm::Bf16 | Gemm::Fp8 => 1.6e-2,
        Gemm::F64 => 1e-9,
        // int32 accumulation of int8 products is exact.
        Gemm::Int8 => 0.0,
    }
}

/// Fields drop in declaration order: the cuBLAS handle, then the buffers
/// (the workspace after the handle that uses it), then `gpu`.
struct GemmCase {
    /// fp8: the cuBLASLt plan (it uses the workspace, so drops before it).
    lt: Option<Fp8Gemm>,
    blas: Blas,
    g: Gemm,
    n: u64,
    a: DeviceBuffer,
    b: DeviceBuffer,
    c: DeviceBuffer,
    workspace: DeviceBuffer,
    timer: Timer,
    about: About,
    gpu: Gpu,
}

fn prepare(point: &Point) -> Result<Box<dyn Case>, BenchError> {
    let g: Gemm = point.choice("precision")?;
    let n = point.u64("n")?;
    let libs: &[fn() -> Result<(), String>] = if g == Gemm::Fp8 {
        &[cuda::libs::cublas, cuda::blaslt::present]
    } else {
        &[cuda::libs::cublas]
    };
    let gpu = Gpu::open(point.u64("device")? as usize, libs)?;
    let info = gpu.info.clone();
    if info.cc < g.min_cc() {
        return Err(BenchError::Skip(format!(
            "{} GEMM needs compute capability {}.{} or newer (tensor cores for the type); device {} ({}) is {}",
            g.name(),
            g.min_cc().0,
            g.min_cc().1,
            info.index,
            info.name,
            info.cc_string()
        )));
    }
    check_fits(g, n, &info).map_err(BenchError::Failed)?;
    let free = gpu.free_memory()?;
    if device_bytes(g, n) > free {
        return Err(BenchError::Failed(format!(
            "n={n} needs {} of device memory but only {} is free",
            params::gib(device_bytes(g, n)),
            params::gib(free)
        )));
    }
    let bytes = (n * n * g.elem_bytes()) as usize;
    let out_bytes = (n * n * g.out_bytes()) as usize;
    let workspace = DeviceBuffer::new(&gpu, WORKSPACE)?;
    // The handle uses the workspace until it is dropped: the case drops the
    // handle first (field order), and on an error below `blas`, declared
    // after `workspace`, is dropped before it.
    let blas = Blas::new(&gpu, &workspace)?;
    let lt = if g == Gemm::Fp8 {
        Some(Fp8Gemm::new(&gpu, n, &workspace, false)?)
    } else {
        None
    };
    let mut case = GemmCase {
        a: DeviceBuffer::new(&gpu, bytes)?,
        b: DeviceBuffer::new(&gpu, bytes)?,
        c: DeviceBuffer::new(&gpu, out_bytes)?,
        workspace,
        blas,
        lt,
        timer: Timer::new(&gpu)?,
        gpu,
        g,
        n,
        about: About::default(),
    };
    case.upload(0)?;
    case.upload(1)?;
    case.gemm()?;
    case.gpu.sync()?;
    case.verify()?;

    let flops_per = gemm_flops(n);
    match peak::gemm_rate(info.cc, g, info.fp32_to_fp64) {
        Some(_) if info.clock_khz == 0 => case
            .about
            .caveat("no theoretical peak: the driver reports no SM clock"),
        Some(_) if info.restricted(g.name()) => case.about.caveat(format!(
            "no theoretical peak: {} is an export variant whose tensor rate differs from its compute capability's",
            info.name
        )),
        Some(r) => case.about.peak = Some(peak::gemm_peak(g, &r, info.sms, info.clock_khz)),
        None => case.about.caveat(format!(
            "no theoretical peak: the {} tensor rate of compute capability {} depends on the board (GeForce and professional cards differ) and is not in the table",
            g.name(),
            info.cc_string()
        )),
    }
    if let Some(w) = tf32_override(g, std::env::var("NVIDIA_TF32_OVERRIDE").ok().as_deref()) {
        case.about.caveat(w);
    }
    if n < 2048 {
        case.about.note(format!(
            "n={n} is small: a GEMM of {} is too short to fill the GPU, launch and tail effects dominate",
            format_size(flops_per)
        ));
    }
    case.about.note(info.describe());
    case.about.note(format!(
        "one op = one {}: a GEMM of N={n} counts 2·N³ = {flops_per} (N³ multiply-adds){}; C = {}·B, column-major, alpha = 1, beta = 0",
        if g == Gemm::Int8 {
            "integer multiply or add"
        } else {
            "floating-point operation"
        },
        if g == Gemm::Int8 {
            ", reported as the flops metric in op/s"
        } else {
            ""
        },
        if a_transposed(g) { "Aᵀ" } else { "A" }
    ));
    case.about.note(format!(
        "cuBLAS ({}) {}; {} workspace; time by CUDA events around back-to-back GEMMs",
        if g == Gemm::Fp8 {
            cuda::blaslt::api().map(|a| a.file()).unwrap_or("?")
        } else {
            blas::api().map(|a| a.file()).unwrap_or("?")
        },
        call_note(g),
        format_size(WORKSPACE as u64)
    ));
    case.about.note(if g == Gemm::Int8 {
        "inputs are uniformly spread over the whole int8 range; 16 entries of C were checked exactly against a host computation"
    } else {
        "inputs are exact in the type and uniformly spread over [-1, 1); 16 entries of C were checked against a host computation"
    });
    case.gpu.start_sampling();
    Ok(Box::new(case))
}

impl GemmCase {
    /// Generates matrix `which` (0 = A, 1 = B) on the host and uploads it.
    fn upload(&self, which: u64) -> Result<(), BenchError> {
        let buf = if which == 0 { &self.a } else { &self.b };
        let total = self.n * self.n;
        let eb = self.g.elem_bytes() as usize;
        let mut bytes = Vec::with_capacity(CHUNK_ELEMS * eb);
        let mut start = 0u64;
        while start < total {
            let end = (start + CHUNK_ELEMS as u64).min(total);
            bytes.clear();
            for idx in start..end {
                encode(self.g, element(self.g, which, idx), &mut bytes);
            }
            buf.upload(start as usize * eb, &bytes)?;
            start = end;
        }
        Ok(())
    }

    /// Queues one GEMM on the case's stream.
    fn gemm(&self) -> Result<(), BenchError> {
        let h = &self.blas;
        let n = self.n as i32;
        let (a, b, c) = (
            self.a.ptr() as *const c_void,
            self.b.ptr() as *const c_void,
            self.c.ptr() as *mut c_void,
        );
        let (ty, compute) = match self.g {
            Gemm::F64 => {
                // SAFETY: A, B, C are device buffers of N×N f64 (ld = N),
                // alive until finish synchronises.
                return unsafe { h.dgemm(n, a as *const f64, b as *const f64, c as *mut f64) };
            }
            Gemm::F16 => (blas::R_16F, blas::COMPUTE_32F),
            Gemm::Bf16 => (blas::R_16BF, blas::COMPUTE_32F),
            Gemm::Tf32 => (blas::R_32F, blas::COMPUTE_32F_FAST_TF32),
            Gemm::Int8 => (blas::R_8I, blas::COMPUTE_32I),
            Gemm::Fp8 => {
                let lt = self.lt.as_ref().ok_or_else(|| {
                    BenchError::Other("fp8 GEMM without its cuBLASLt plan".into())
                })?;
                // SAFETY: A and B are device buffers of N×N e4m3 bytes, C
                // of N×N bf16, alive until finish synchronises.
                return unsafe { lt.run(a, b, c) };
            }
        };
        let (out, transa) = match self.g {
            Gemm::Int8 => (blas::R_32I, blas::OP_T),
            _ => (ty, blas::OP_N),
        };
        // SAFETY: A and B are device buffers of N×N elements of `ty`, C of
        // N×N elements of `out` (ld = N), alive until finish synchronises.
        unsafe { h.gemm_ex(n, transa, a, b, c, ty, out, compute) }
    }

    /// Compares 16 entries of C with a host computation from the same
    /// generated inputs.
    fn verify(&self) -> Result<(), BenchError> {
        let c = &self.c;
        let n = self.n;
        let eb = self.g.out_bytes() as usize;
        let picks = (0..16u64).map(|k| match k {
            0 => (0, 0),
            1 => (n - 1, n - 1),
            2 => (n - 1, 0),
            3 => (0, n - 1),
            _ => {
                let h = splitmix(k);
                (h % n, (h >> 32) % n)
            }
        });
        for (i, j) in picks {
            let mut got = vec![0u8; eb];
            c.download(((i + j * n) as usize) * eb, &mut got)?;
            let got = decode_out(self.g, &got);
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for k in 0..n {
                // Column-major: A(i,k) at i + k·N (k + i·N when stored
                // transposed), B(k,j) at k + j·N.
                let p =
                    element(self.g, 0, a_index(self.g, n, i, k)) * element(self.g, 1, k + j * n);
                sum += p;
                mag += p.abs();
            }
            let err = (got - sum).abs();
            if !got.is_finite() || err > tolerance(self.g) * mag + 1e-30 {
                return Err(BenchError::Verify(format!(
                    "{} GEMM, N={n}: C[{i},{j}] = {got}, the host computes {sum} (error {err:.3e}, allowed {:.3e})",
                    self.g.name(),
                    tolerance(self.g) * mag
                )));
            }
        }
        Ok(())
    }
}

impl Case for GemmCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.gpu.bind()?;
        self.timer.start(&self.gpu)?;
        for _ in 0..iters {
            self.gemm()?;
        }
        let elapsed = self.timer.stop(&self.gpu)?;
        Ok(Work {
            ops: iters * gemm_flops(self.n),
            elapsed: Some(elapsed),
            ..Work::default()
        })
    }

    /// Frees everything through [`Gpu::finish`](crate::cuda::rt::Gpu::finish):
    /// the cuBLAS handle before the workspace it uses.
    fn finish(self: Box<Self>) -> Finished {
        let GemmCase {
            lt,
            blas,
            a,
            b,
            c,
            workspace,
            timer,
            mut about,
            mut gpu,
            ..
        } = *self;
        gpu.under_load(&mut about);
        let released = gpu.finish(|| drop((lt, blas, a, b, c, workspace, timer)));
        Finished::with(about, released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::device::tests::h100;

    #[test]
    fn eight_bit_gemms_refuse_sizes_cublas_cannot_run() {
        assert_eq!(check_aligned(Gemm::Fp8, 8192), Ok(()));
        let e = check_aligned(Gemm::Fp8, 1000).unwrap_err();
        assert!(
            e.contains("multiple of 16") && e.contains("try 992 or 1008"),
            "{e}"
        );
        assert_eq!(check_aligned(Gemm::Int8, 1004), Ok(()));
        assert!(
            check_aligned(Gemm::Int8, 1001)
                .unwrap_err()
                .contains("multiple of 4")
        );
        // The other precisions take any n.
        assert_eq!(check_aligned(Gemm::Bf16, 1001), Ok(()));
        assert_eq!(check_aligned(Gemm::F64, 17), Ok(()));
    }

    #[test]
    fn elements_are_exact_in_their_type_and_cover_minus_one_to_one() {
        for g in [Gemm::F16, Gemm::Bf16, Gemm::Tf32, Gemm::F64] {
            let mut lo: f64 = 0.0;
            let mut hi: f64 = 0.0;
            let mut bytes = Vec::new();
            for idx in 0..4096 {
                let v = element(g, 1, idx);
                assert!((-1.0..1.0).contains(&v), "{g:?} {v}");
                lo = lo.min(v);
                hi = hi.max(v);
                bytes.clear();
                encode(g, v, &mut bytes);
                assert_eq!(decode(g, &bytes), v, "{g:?} {v} round trip");
            }
            assert!(lo < -0.9 && hi > 0.9, "{g:?} spans [-1, 1): {lo} {hi}");
        }
        // A and B differ.
        assert_ne!(element(Gemm::F64, 0, 5), element(Gemm::F64, 1, 5));
        // int8: the whole range, each value an exact byte.
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for idx in 0..4096 {
            let v = element(Gemm::Int8, 0, idx);
            let mut b = Vec::new();
            encode(Gemm::Int8, v, &mut b);
            assert_eq!((b.len(), decode(Gemm::Int8, &b)), (1, v));
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        assert!(lo <= -120.0 && hi >= 120.0, "{lo} {hi}");
        assert_eq!(decode_out(Gemm::Int8, &(-5i32).to_le_bytes()), -5.0);
        // fp8 e4m3: k/8 for k in -8..8, each an exact byte.
        let mut seen = std::collections::BTreeSet::new();
        for idx in 0..4096 {
            let v = element(Gemm::Fp8, 1, idx);
            let mut b = Vec::new();
            encode(Gemm::Fp8, v, &mut b);
            assert_eq!((b.len(), decode(Gemm::Fp8, &b)), (1, v), "{v}");
            seen.insert(b[0]);
        }
        assert_eq!(seen.len(), 16);
        // e4m3 bit patterns: 1.0 = 0x38, -0.375 = 0xac (-1.5 × 2^-2), 448 = 0x7e.
        assert_eq!(e4m3_bits(1.0), 0x38);
        assert_eq!(e4m3_bits(-0.375), 0xac);
        assert_eq!(e4m3_value(0x7e), 448.0);
        assert_eq!(e4m3_value(0x01), 2f64.powi(-9));
    }

    #[test]
    fn int8_runs_tn_with_int32_accumulation_and_says_so() {
        // A is read transposed: A(i, k) at k + i·N, the others as stored.
        assert!(a_transposed(Gemm::Int8) && a_transposed(Gemm::Fp8));
        let f = call_note(Gemm::Fp8);
        assert!(
            f.contains("cublasLtMatmul")
                && f.contains("TN")
                && f.contains("CUDA_R_8F_E4M3")
                && f.contains("FAST_ACCUM off")
                && f.contains("unit scales"),
            "{f}"
        );
        assert_eq!(device_bytes(Gemm::Fp8, 1024), (4 << 20) + WORKSPACE as u64);
        assert_eq!(a_index(Gemm::Int8, 8, 1, 2), 2 + 8);
        assert_eq!(a_index(Gemm::Bf16, 8, 1, 2), 1 + 2 * 8);
        let n = call_note(Gemm::Int8);
        assert!(
            n.contains("CUBLAS_COMPUTE_32I")
                && n.contains("TN")
                && n.contains("CUBLAS_OP_T")
                && n.contains("CUDA_R_32I out"),
            "{n}"
        );
        for g in [Gemm::F16, Gemm::Bf16, Gemm::Tf32, Gemm::F64] {
            assert!(call_note(g).contains("NN") && !a_transposed(g), "{g:?}");
        }
        // int8 in (1 B) twice, int32 out (4 B): 6 bytes per entry.
        assert_eq!(device_bytes(Gemm::Int8, 1024), (6 << 20) + WORKSPACE as u64);
        assert_eq!(tolerance(Gemm::Int8), 0.0);
        // The largest sum stays within int32: N·128² at the largest N.
        assert!(65536u64 * 128 * 128 < i32::MAX as u64);
        // The constants are cuBLAS's.
        assert_eq!(
            (blas::OP_T, blas::R_8I, blas::R_32I, blas::COMPUTE_32I),
            (1, 3, 10, 72)
        );
    }

    #[test]
    fn a_tf32_override_is_flagged_for_tf32_only() {
        let w = tf32_override(Gemm::Tf32, Some("0")).unwrap();
        assert!(w.contains("NVIDIA_TF32_OVERRIDE=0"), "{w}");
        assert!(tf32_override(Gemm::Tf32, Some("1")).is_none());
        assert!(tf32_override(Gemm::Tf32, None).is_none());
        assert!(tf32_override(Gemm::Bf16, Some("0")).is_none());
    }

    #[test]
    fn flops_are_two_n_cubed() {
        assert_eq!(gemm_flops(8192), 2 * 8192u64.pow(3));
    }

    #[test]
    fn an_oversized_matrix_is_a_usage_error_naming_the_memory() {
        let d = h100();
        assert!(check_fits(Gemm::F64, 16384, &d).is_ok());
        let e = check_fits(Gemm::F64, 65536, &d).unwrap_err();
        assert!(e.contains("96.0 GiB") && e.contains("NVIDIA H100"), "{e}");
    }
}
