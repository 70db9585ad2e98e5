//! Theoretical peaks from device attributes and per-architecture tables.
//!
//! Why this file is long (~640 lines before its tests): most of it is the
//! per-architecture rate tables (one row per compute capability and
//! precision, each with its datasheet source); the arithmetic over them is
//! short and belongs beside them.
//!
//! Everything here is pure arithmetic on numbers the driver reports (SM
//! count, maximum SM clock, memory clock, bus width, PCIe link) and on the
//! per-SM rates below, so it is unit-tested without a GPU.
//!
//! - CUDA-core arithmetic: `SMs used × results per clock per SM × clock × 2`
//!   (an FMA or IMAD result is two operations). For packed half2/bfloat162
//!   the table counts 16-bit results, so one HFMA2 lane is two results.
//! - Tensor cores (cuBLAS GEMM): `SMs × dense FLOPs per clock per SM × clock`.
//! - Device memory: `memory clock × bus width × 2 / 8` (double data rate; the
//!   driver reports the clock such that this matches the datasheets: H100
//!   SXM 2619 MHz × 5120 bit → 3.35 TB/s, A100 40GB 1215 MHz → 1.56 TB/s).
//! - PCIe: `GT/s per lane × encoding efficiency × lanes / 8`, per direction.
//!
//! The clock is `CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, the maximum boost clock;
//! a GPU held back by its power or thermal limit shows as lower efficiency.
//! NVIDIA quotes some tensor-core peaks at a lower clock (H100 SXM: 989
//! TFLOPS bf16 at 1830 MHz), so a derived tensor peak can sit above the
//! datasheet's.

use std::collections::BTreeMap;

use benchsuite_core::{Choice, Peak, PeakInput};

/// The arithmetic of the `gpu.flops` / `gpu.iops` kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Arith {
    /// `fma.rn.f64`.
    F64,
    /// `fma.rn.f32`.
    F32,
    /// `fma.rn.f16x2`: two half FMAs per lane.
    F16,
    /// `fma.rn.bf16x2`: two bfloat16 FMAs per lane.
    Bf16,
    /// 32-bit integer multiply-add (IMAD).
    I32,
    /// `dp4a`: four 8-bit products summed into a 32-bit accumulator.
    I8,
}

benchsuite_core::choice_enum! {
    /// The `precision` parameter of `gpu.flops`.
    pub(crate) enum FloatPrecision {
        /// [`Arith::F64`].
        F64 = "f64",
        /// [`Arith::F32`].
        F32 = "f32",
        /// [`Arith::F16`].
        F16 = "f16",
        /// [`Arith::Bf16`].
        Bf16 = "bf16",
    }
}

benchsuite_core::choice_enum! {
    /// The `precision` parameter of `gpu.iops`.
    pub(crate) enum IntPrecision {
        /// [`Arith::I32`].
        I32 = "i32",
        /// [`Arith::I8`].
        I8 = "i8",
    }
}

impl From<FloatPrecision> for Arith {
    fn from(p: FloatPrecision) -> Arith {
        match p {
            FloatPrecision::F64 => Arith::F64,
            FloatPrecision::F32 => Arith::F32,
            FloatPrecision::F16 => Arith::F16,
            FloatPrecision::Bf16 => Arith::Bf16,
        }
    }
}

impl From<IntPrecision> for Arith {
    fn from(p: IntPrecision) -> Arith {
        match p {
            IntPrecision::I32 => Arith::I32,
            IntPrecision::I8 => Arith::I8,
        }
    }
}

impl Arith {
    /// The `precision` name, from the parameters' tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arith::F64 => FloatPrecision::F64.name(),
            Arith::F32 => FloatPrecision::F32.name(),
            Arith::F16 => FloatPrecision::F16.name(),
            Arith::Bf16 => FloatPrecision::Bf16.name(),
            Arith::I32 => IntPrecision::I32.name(),
            Arith::I8 => IntPrecision::I8.name(),
        }
    }

    /// Operations one lane does in one instruction: an FMA or IMAD is 2
    /// (multiply + add), a packed half2/bfloat162 FMA is two FMAs = 4, a
    /// dp4a is four multiplies and four adds = 8.
    pub(crate) fn ops_per_lane_instruction(self) -> u64 {
        match self {
            Arith::F64 | Arith::F32 | Arith::I32 => 2,
            Arith::F16 | Arith::Bf16 => 4,
            Arith::I8 => 8,
        }
    }

    /// The instruction, for notes.
    pub(crate) fn instruction(self) -> &'static str {
        match self {
            Arith::F64 => "fma.rn.f64 (DFMA)",
            Arith::F32 => "fma.rn.f32 (FFMA)",
            Arith::F16 => "fma.rn.f16x2 (HFMA2, packed half2)",
            Arith::Bf16 => "fma.rn.bf16x2 (HFMA2.BF16, packed bfloat162)",
            Arith::I32 => "mad.lo.u32 (IMAD)",
            Arith::I8 => "dp4a.s32.s32 (IDP4A)",
        }
    }

    /// The lowest compute capability that has the instruction natively.
    pub(crate) fn min_cc(self) -> (u32, u32) {
        match self {
            Arith::F64 | Arith::F32 | Arith::I32 => (5, 0),
            Arith::F16 => (5, 3),
            Arith::I8 => (6, 1),
            Arith::Bf16 => (8, 0),
        }
    }
}

/// CUDA-core arithmetic results per clock per SM (an FMA counts one result;
/// a half2 FMA two). `None`: not native or not published.
#[derive(Debug, Clone, Copy)]
struct Row {
    cc: u32,
    f64: Option<u32>,
    f32: Option<u32>,
    f16: Option<u32>,
    bf16: Option<u32>,
    imad: Option<u32>,
    source: &'static str,
}

/// Sources: "guide" is the CUDA C++ Programming Guide, "Throughput of Native
/// Arithmetic Instructions (operations per clock cycle per multiprocessor)";
/// the whitepapers give the per-SM unit counts and the peak TFLOPS that the
/// same formula reproduces:
/// - V100 (7.0): 64 FP32, 32 FP64, 64 INT32 per SM; FP16 2× FP32.
/// - T4/Turing (7.5): 64 FP32, 2 FP64 per SM; FP16 2× FP32.
/// - A100 (8.0, GA100 whitepaper table 1): 64 FP32, **32 FP64**, 64 INT32
///   per SM; FP16 non-tensor 78 TFLOPS = 256/SM, BF16 non-tensor 39 TFLOPS =
///   128/SM at 1410 MHz × 108 SMs.
/// - GA102 (8.6) and AD102 (8.9) whitepapers: 128 FP32, 2 FP64 per SM; FP16
///   non-tensor at the FP32 rate (RTX 3090 35.6 TFLOPS, RTX 4090 82.6);
///   non-tensor BF16 not published.
/// - H100 (9.0, GH100 whitepaper): 128 FP32, 64 FP64, 64 INT32 per SM; FP16
///   and BF16 non-tensor 2× FP32 (133.8 TFLOPS SXM5).
/// - Blackwell: B200 (10.0) keeps 128 FP32 lanes per SM (its FP64 rate is
///   taken from the driver's FP32:FP64 ratio); GB202 (12.0, RTX Blackwell
///   whitepaper): 128 FP32, 2 FP64, FP16 non-tensor at the FP32 rate.
///
/// 32-bit integer multiply-add: 64 per SM for 7.x to 9.0 (guide); earlier
/// GPUs emulate it with several instructions (no peak).
const FMA_TABLE: &[Row] = &[
    row(
        50,
        Some(4),
        Some(128),
        None,
        None,
        None,
        "CUDA C++ Programming Guide throughput table (Maxwell)",
    ),
    row(
        52,
        Some(4),
        Some(128),
        None,
        None,
        None,
        "CUDA C++ Programming Guide throughput table (Maxwell)",
    ),
    row(
        53,
        Some(4),
        Some(128),
        Some(256),
        None,
        None,
        "CUDA C++ Programming Guide throughput table (Tegra X1)",
    ),
    row(
        60,
        Some(32),
        Some(64),
        Some(128),
        None,
        None,
        "CUDA C++ Programming Guide throughput table; P100 whitepaper",
    ),
    row(
        61,
        Some(4),
        Some(128),
        Some(2),
        None,
        None,
        "CUDA C++ Programming Guide throughput table (Pascal GP10x)",
    ),
    row(
        62,
        Some(4),
        Some(128),
        Some(256),
        None,
        None,
        "CUDA C++ Programming Guide throughput table (Tegra X2)",
    ),
    row(
        70,
        Some(32),
        Some(64),
        Some(128),
        None,
        Some(64),
        "V100 (Volta) whitepaper; CUDA C++ Programming Guide",
    ),
    row(
        75,
        Some(2),
        Some(64),
        Some(128),
        None,
        Some(64),
        "Turing whitepaper; CUDA C++ Programming Guide",
    ),
    row(
        80,
        Some(32),
        Some(64),
        Some(256),
        Some(128),
        Some(64),
        "A100 (GA100) whitepaper table 1; CUDA C++ Programming Guide",
    ),
    row(
        86,
        Some(2),
        Some(128),
        Some(128),
        None,
        Some(64),
        "GA102 (Ampere) whitepaper; CUDA C++ Programming Guide",
    ),
    row(
        89,
        Some(2),
        Some(128),
        Some(128),
        None,
        Some(64),
        "AD102 (Ada) whitepaper; CUDA C++ Programming Guide",
    ),
    row(
        90,
        Some(64),
        Some(128),
        Some(256),
        Some(256),
        Some(64),
        "H100 (GH100) whitepaper; CUDA C++ Programming Guide",
    ),
    row(
        100,
        None,
        Some(128),
        None,
        None,
        None,
        "Blackwell (B200) architecture: 128 FP32 lanes per SM",
    ),
    row(
        120,
        Some(2),
        Some(128),
        Some(128),
        None,
        None,
        "RTX Blackwell (GB202) whitepaper",
    ),
];

#[allow(clippy::too_many_arguments)]
const fn row(
    cc: u32,
    f64: Option<u32>,
    f32: Option<u32>,
    f16: Option<u32>,
    bf16: Option<u32>,
    imad: Option<u32>,
    source: &'static str,
) -> Row {
    Row {
        cc,
        f64,
        f32,
        f16,
        bf16,
        imad,
        source,
    }
}

fn cc_key(cc: (u32, u32)) -> u32 {
    cc.0 * 10 + cc.1
}

/// A per-SM rate and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rate {
    /// Results per clock per SM.
    pub per_sm: f64,
    /// Citation.
    pub source: String,
    /// `table`, or `table+driver` when the driver's FP32:FP64 ratio was used.
    pub kind: &'static str,
}

/// Results per clock per SM for `a` on compute capability `cc`.
/// `fp32_to_fp64` is the driver's `SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO`,
/// used for FP64 where the table has no entry. `None` when unknown
/// (`dp4a` has no published per-SM rate).
pub(crate) fn cuda_core_rate(cc: (u32, u32), a: Arith, fp32_to_fp64: Option<u32>) -> Option<Rate> {
    let row = FMA_TABLE.iter().find(|r| r.cc == cc_key(cc))?;
    let v = match a {
        Arith::F64 => row.f64,
        Arith::F32 => row.f32,
        Arith::F16 => row.f16,
        Arith::Bf16 => row.bf16,
        Arith::I32 => row.imad,
        Arith::I8 => None,
    };
    match (v, a, row.f32, fp32_to_fp64) {
        (Some(v), ..) => Some(Rate {
            per_sm: v as f64,
            source: row.source.to_string(),
            kind: "table",
        }),
        (None, Arith::F64, Some(f32), Some(ratio)) if ratio > 0 => Some(Rate {
            per_sm: f32 as f64 / ratio as f64,
            source: format!(
                "{}; FP64 = FP32 lanes / the driver's FP32:FP64 ratio {ratio}",
                row.source
            ),
            kind: "table+driver",
        }),
        _ => None,
    }
}

/// Dense tensor-core FLOPs per clock per SM for a cuBLAS GEMM.
#[derive(Debug, Clone, Copy)]
struct TensorRow {
    cc: u32,
    f16: Option<u32>,
    bf16: Option<u32>,
    tf32: Option<u32>,
    f64: Option<u32>,
    /// 8-bit integer (IMMA: int8 in, int32 accumulation), dense OPs.
    int8: Option<u32>,
    /// FP8 (e4m3 in, f32 accumulation), dense FLOPs.
    fp8: Option<u32>,
    source: &'static str,
}

/// Whitepaper peaks divided by SMs × clock:
/// - V100: 125 TFLOPS FP16 / (80 SMs × 1530 MHz) = 1024.
/// - A100: 312 TFLOPS FP16/BF16, 156 TF32, 19.5 FP64 / (108 × 1410 MHz) =
///   2048, 1024, 128; INT8 624 TOPS dense / (108 × 1410 MHz) = 4096.
/// - H100: 989.4 TFLOPS FP16/BF16 dense, 494.7 TF32 / (132 × 1830 MHz) =
///   4096, 2048; FP64 tensor 66.9 / (132 × 1980 MHz) = 256; INT8 1979
///   TOPS and FP8 1979 TFLOPS dense (NVIDIA H100 datasheet, SXM; the H200
///   datasheet gives the same 1979 for its 132 SMs) / (132 × 1830 MHz) =
///   8192. A100 has no FP8; Ada (8.9) has, at board-dependent rates.
///
/// Turing, GA10x, Ada and RTX Blackwell are absent on purpose: GeForce
/// boards run FP16 GEMMs with FP32 accumulation at half the rate of the
/// professional boards of the same compute capability, so the capability
/// alone does not give the peak.
const TENSOR_TABLE: &[TensorRow] = &[
    TensorRow {
        cc: 70,
        f16: Some(1024),
        bf16: None,
        tf32: None,
        f64: None,
        int8: None,
        fp8: None,
        source: "V100 whitepaper (125 TFLOPS FP16 at 1530 MHz, 80 SMs)",
    },
    TensorRow {
        cc: 80,
        f16: Some(2048),
        bf16: Some(2048),
        tf32: Some(1024),
        f64: Some(128),
        int8: Some(4096),
        fp8: None,
        source: "A100 whitepaper (312/312/156/19.5 TFLOPS, 624 TOPS INT8 dense, at 1410 MHz, 108 SMs)",
    },
    TensorRow {
        cc: 90,
        f16: Some(4096),
        bf16: Some(4096),
        tf32: Some(2048),
        f64: Some(256),
        int8: Some(8192),
        fp8: Some(8192),
        source: "H100 whitepaper and H100/H200 SXM datasheets (989.4 TFLOPS FP16/BF16, 1979 TFLOPS FP8 and 1979 TOPS INT8 dense at 1830 MHz, FP64 tensor 66.9 at 1980 MHz, 132 SMs)",
    },
];

benchsuite_core::choice_enum! {
    /// Element types of `gpu.matmul`: its `precision` parameter.
    #[derive(Hash)]
    pub(crate) enum Gemm {
        /// f16 in and out, f32 accumulation (what `torch.matmul` does for half).
        F16 = "f16",
        /// bf16 in and out, f32 accumulation.
        Bf16 = "bf16",
        /// f32 storage, TF32 tensor-core math (`CUBLAS_COMPUTE_32F_FAST_TF32`).
        Tf32 = "tf32",
        /// f64 (DGEMM; tensor cores where the GPU has FP64 ones).
        F64 = "f64",
        /// int8 in, int32 accumulation and out (`CUBLAS_COMPUTE_32I`), A
        /// transposed ("TN": the IMMA tensor-core path).
        Int8 = "int8",
        /// FP8 e4m3 in, bf16 out, f32 accumulation, through cuBLASLt
        /// (`cublasLtMatmul`), A transposed ("TN", as FP8 requires).
        Fp8 = "fp8",
    }
}

impl Gemm {
    /// Bytes per stored element of A and B.
    pub(crate) fn elem_bytes(self) -> u64 {
        match self {
            Gemm::Int8 | Gemm::Fp8 => 1,
            Gemm::F16 | Gemm::Bf16 => 2,
            Gemm::Tf32 => 4,
            Gemm::F64 => 8,
        }
    }

    /// Bytes per stored element of C (int8 accumulates into int32).
    pub(crate) fn out_bytes(self) -> u64 {
        match self {
            Gemm::Int8 => 4,
            Gemm::Fp8 => 2,
            g => g.elem_bytes(),
        }
    }

    /// The lowest compute capability cuBLAS runs it on with tensor cores
    /// (f16: 7.0; int8 IMMA: 7.5; bf16 and tf32: 8.0). f64 runs everywhere.
    pub(crate) fn min_cc(self) -> (u32, u32) {
        match self {
            Gemm::F16 => (7, 0),
            Gemm::Int8 => (7, 5),
            Gemm::Fp8 => (8, 9),
            Gemm::Bf16 | Gemm::Tf32 => (8, 0),
            Gemm::F64 => (5, 0),
        }
    }
}

/// FLOPs per clock per SM of a GEMM of type `g` on `cc`: tensor cores when
/// the table has them, else (f64 only) the CUDA-core FP64 FMA rate × 2.
pub(crate) fn gemm_rate(cc: (u32, u32), g: Gemm, fp32_to_fp64: Option<u32>) -> Option<Rate> {
    let tensor = TENSOR_TABLE
        .iter()
        .find(|r| r.cc == cc_key(cc))
        .and_then(|r| {
            let v = match g {
                Gemm::F16 => r.f16,
                Gemm::Bf16 => r.bf16,
                Gemm::Tf32 => r.tf32,
                Gemm::F64 => r.f64,
                Gemm::Int8 => r.int8,
                Gemm::Fp8 => r.fp8,
            }?;
            Some(Rate {
                per_sm: v as f64,
                source: r.source.to_string(),
                kind: "table",
            })
        });
    match (tensor, g) {
        (Some(t), _) => Some(t),
        (None, Gemm::F64) => cuda_core_rate(cc, Arith::F64, fp32_to_fp64).map(|r| Rate {
            per_sm: r.per_sm * 2.0,
            source: format!(
                "no FP64 tensor cores: CUDA-core FP64 FMA rate × 2 ({})",
                r.source
            ),
            kind: r.kind,
        }),
        _ => None,
    }
}

fn input(value: f64, unit: &str, source: &str) -> PeakInput {
    PeakInput {
        value,
        unit: unit.into(),
        source: source.into(),
    }
}

/// Peak of the CUDA-core kernels: `SMs used × rate × 2 × clock`.
/// `sms_used` is `min(blocks, SMs)`: a block runs on one SM.
pub(crate) fn cuda_core_peak(
    metric: &str,
    unit: &str,
    a: Arith,
    rate: &Rate,
    sms_used: u32,
    sms: u32,
    clock_khz: u32,
) -> Peak {
    let ghz = clock_khz as f64 / 1e6;
    let value = sms_used as f64 * rate.per_sm * 2.0 * ghz * 1e9;
    let what = match a {
        Arith::I32 => "IMAD results",
        Arith::F16 | Arith::Bf16 => "16-bit FMA results (2 per packed lane)",
        _ => "FMA results",
    };
    let mut inputs = BTreeMap::new();
    inputs.insert("SMs used".into(), input(sms_used as f64, "SMs", "driver"));
    inputs.insert("SMs".into(), input(sms as f64, "SMs", "driver"));
    inputs.insert(
        format!("{} {what} per clock per SM", a.name()),
        input(rate.per_sm, "results/clock", rate.kind),
    );
    inputs.insert("clock".into(), input(ghz, "GHz", "driver"));
    Peak {
        metric: metric.into(),
        value,
        unit: unit.into(),
        formula: format!(
            "min(blocks, SMs) × {what} per clock per SM × 2 ops per result × max SM clock ({})",
            rate.source
        ),
        inputs,
        efficiency: None,
    }
}

/// Peak of a cuBLAS GEMM: `SMs × FLOPs per clock per SM × clock`.
pub(crate) fn gemm_peak(g: Gemm, rate: &Rate, sms: u32, clock_khz: u32) -> Peak {
    let ghz = clock_khz as f64 / 1e6;
    let mut inputs = BTreeMap::new();
    inputs.insert("SMs".into(), input(sms as f64, "SMs", "driver"));
    inputs.insert(
        format!("{} dense FLOPs per clock per SM", g.name()),
        input(rate.per_sm, "FLOP/clock", rate.kind),
    );
    inputs.insert("clock".into(), input(ghz, "GHz", "driver"));
    Peak {
        metric: "flops".into(),
        value: sms as f64 * rate.per_sm * ghz * 1e9,
        unit: "FLOP/s".into(),
        formula: format!(
            "SMs × dense FLOPs per clock per SM × max SM clock ({})",
            rate.source
        ),
        inputs,
        efficiency: None,
    }
}

/// Device-memory bandwidth in B/s: `clock × bus width × 2 / 8`.
pub(crate) fn memory_bandwidth(mem_clock_khz: u32, bus_width_bits: u32) -> f64 {
    mem_clock_khz as f64 * 1e3 * bus_width_bits as f64 * 2.0 / 8.0
}

/// The device-memory peak as a [`Peak`] for the `bandwidth` metric.
pub(crate) fn memory_peak(mem_clock_khz: u32, bus_width_bits: u32) -> Peak {
    let mut inputs = BTreeMap::new();
    inputs.insert(
        "memory clock".into(),
        input(mem_clock_khz as f64 / 1e3, "MHz", "driver"),
    );
    inputs.insert(
        "bus width".into(),
        input(bus_width_bits as f64, "bit", "driver"),
    );
    Peak {
        metric: "bandwidth".into(),
        value: memory_bandwidth(mem_clock_khz, bus_width_bits),
        unit: "B/s".into(),
        formula: "memory clock × bus width × 2 (double data rate) / 8; a copy of N bytes counts 2N (read + write), as the peak counts both directions of the memory bus".into(),
        inputs,
        efficiency: None,
    }
}

/// A PCIe link's raw data rate per direction in B/s, from its transfer rate
/// (GT/s per lane) and width. Gen1/2 use 8b/10b encoding, Gen3-5
/// 128b/130b; Gen6 (64 GT/s, PAM4 with FLIT mode) is counted at 242/256.
/// Packet headers and flow control cost another ~10-15% in practice.
pub(crate) fn pcie_bandwidth(gts: f64, width: u32) -> Option<f64> {
    let encoding = if gts <= 5.0 {
        8.0 / 10.0
    } else if gts <= 32.0 {
        128.0 / 130.0
    } else if gts <= 64.0 {
        242.0 / 256.0
    } else {
        return None;
    };
    (gts > 0.0 && width > 0).then(|| gts * 1e9 * encoding * width as f64 / 8.0)
}

/// The PCIe generation of a transfer rate (2.5 GT/s → 1, ..., 64 → 6).
pub(crate) fn pcie_gen(gts: f64) -> Option<u32> {
    [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
    ]
    .iter()
    .find(|(r, _)| (gts - r).abs() < 0.01)
    .map(|(_, g)| *g)
}

/// The host link peak as a [`Peak`] for the `bandwidth` metric.
pub(crate) fn pcie_peak(gts: f64, width: u32) -> Option<Peak> {
    let value = pcie_bandwidth(gts, width)?;
    let mut inputs = BTreeMap::new();
    inputs.insert("transfer rate".into(), input(gts, "GT/s", "sysfs"));
    inputs.insert("lanes".into(), input(width as f64, "lanes", "sysfs"));
    Some(Peak {
        metric: "bandwidth".into(),
        value,
        unit: "B/s".into(),
        formula: format!(
            "PCIe Gen{} GT/s per lane × encoding ({}) × lanes / 8, one direction; the GPU's maximum link, bounded by its upstream port's except in a virtual machine (whose ports are emulated)",
            pcie_gen(gts)
                .map(|g| g.to_string())
                .unwrap_or_else(|| "?".into()),
            if gts <= 5.0 {
                "8b/10b"
            } else if gts <= 32.0 {
                "128b/130b"
            } else {
                "242/256 FLIT"
            }
        ),
        inputs,
        efficiency: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() < rel
    }

    #[test]
    fn h100_sxm_cuda_core_peaks_match_the_datasheet() {
        // H100 SXM5: 132 SMs, 1980 MHz. Datasheet: FP32 66.9, FP64 33.5,
        // FP16/BF16 non-tensor 133.8 TFLOPS.
        let cc = (9, 0);
        let p = |a| {
            let r = cuda_core_rate(cc, a, Some(2)).unwrap();
            cuda_core_peak("flops", "FLOP/s", a, &r, 132, 132, 1_980_000).value
        };
        assert!(close(p(Arith::F32), 66.9e12, 0.005), "{}", p(Arith::F32));
        assert!(close(p(Arith::F64), 33.5e12, 0.005), "{}", p(Arith::F64));
        assert!(close(p(Arith::F16), 133.8e12, 0.005));
        assert!(close(p(Arith::Bf16), 133.8e12, 0.005));
        assert_eq!(cuda_core_rate(cc, Arith::F32, None).unwrap().per_sm, 128.0);
        assert_eq!(cuda_core_rate(cc, Arith::F64, None).unwrap().per_sm, 64.0);
    }

    #[test]
    fn a100_has_32_fp64_lanes_not_64() {
        // A100: 108 SMs, 1410 MHz. Whitepaper: FP64 9.7, FP32 19.5, FP16
        // non-tensor 78, BF16 non-tensor 39 TFLOPS.
        let cc = (8, 0);
        let p = |a| {
            let r = cuda_core_rate(cc, a, Some(2)).unwrap();
            cuda_core_peak("flops", "FLOP/s", a, &r, 108, 108, 1_410_000).value
        };
        assert_eq!(cuda_core_rate(cc, Arith::F64, None).unwrap().per_sm, 32.0);
        assert_eq!(cuda_core_rate(cc, Arith::F32, None).unwrap().per_sm, 64.0);
        assert!(close(p(Arith::F64), 9.7e12, 0.01));
        assert!(close(p(Arith::F32), 19.5e12, 0.01));
        assert!(close(p(Arith::F16), 78e12, 0.01));
        assert!(close(p(Arith::Bf16), 39e12, 0.01));
    }

    #[test]
    fn consumer_ampere_and_ada_have_128_fp32_and_2_fp64_lanes() {
        for cc in [(8, 6), (8, 9)] {
            assert_eq!(cuda_core_rate(cc, Arith::F32, None).unwrap().per_sm, 128.0);
            assert_eq!(cuda_core_rate(cc, Arith::F64, None).unwrap().per_sm, 2.0);
            assert!(cuda_core_rate(cc, Arith::Bf16, None).is_none());
        }
        // RTX 4090: 128 SMs at 2520 MHz → 82.6 TFLOPS FP32.
        let r = cuda_core_rate((8, 9), Arith::F32, None).unwrap();
        let p = cuda_core_peak("flops", "FLOP/s", Arith::F32, &r, 128, 128, 2_520_000);
        assert!(close(p.value, 82.6e12, 0.005), "{}", p.value);
    }

    #[test]
    fn unknown_rates_are_none_not_guesses() {
        assert!(cuda_core_rate((9, 0), Arith::I8, Some(2)).is_none());
        assert!(cuda_core_rate((3, 5), Arith::F32, None).is_none());
        assert!(cuda_core_rate((8, 7), Arith::F32, None).is_none());
        // B200: FP64 from the driver's ratio, not from the table.
        assert!(cuda_core_rate((10, 0), Arith::F64, None).is_none());
        let r = cuda_core_rate((10, 0), Arith::F64, Some(2)).unwrap();
        assert_eq!(r.per_sm, 64.0);
        assert_eq!(r.kind, "table+driver");
        // Integer multiply-add is emulated before Volta.
        assert!(cuda_core_rate((6, 1), Arith::I32, None).is_none());
        assert_eq!(
            cuda_core_rate((7, 5), Arith::I32, None).unwrap().per_sm,
            64.0
        );
    }

    #[test]
    fn min_blocks_scale_the_peak() {
        let r = cuda_core_rate((9, 0), Arith::F32, None).unwrap();
        let full = cuda_core_peak("flops", "FLOP/s", Arith::F32, &r, 132, 132, 1_980_000);
        let one = cuda_core_peak("flops", "FLOP/s", Arith::F32, &r, 1, 132, 1_980_000);
        assert!(close(full.value / one.value, 132.0, 1e-12));
        assert_eq!(one.inputs["SMs used"].value, 1.0);
        assert!(one.formula.contains("min(blocks, SMs)"));
    }

    #[test]
    fn tensor_core_peaks_match_the_whitepapers_at_their_clocks() {
        // A100 at 1410 MHz.
        let a = |g| gemm_peak(g, &gemm_rate((8, 0), g, Some(2)).unwrap(), 108, 1_410_000).value;
        assert!(close(a(Gemm::Bf16), 312e12, 0.005));
        assert!(close(a(Gemm::F16), 312e12, 0.005));
        assert!(close(a(Gemm::Tf32), 156e12, 0.005));
        assert!(close(a(Gemm::F64), 19.5e12, 0.005));
        // H100 SXM at the 1830 MHz NVIDIA quotes dense tensor peaks at.
        let h = |g, khz| gemm_peak(g, &gemm_rate((9, 0), g, Some(2)).unwrap(), 132, khz).value;
        assert!(close(h(Gemm::Bf16, 1_830_000), 989.4e12, 0.005));
        assert!(close(h(Gemm::Tf32, 1_830_000), 494.7e12, 0.005));
        assert!(close(h(Gemm::F64, 1_980_000), 66.9e12, 0.005));
        // INT8 dense: 1979 TOPS on H100/H200 SXM, 624 on A100.
        assert!(close(h(Gemm::Int8, 1_830_000), 1979e12, 0.005));
        assert!(close(a(Gemm::Int8), 624e12, 0.005));
        assert!(close(h(Gemm::Fp8, 1_830_000), 1979e12, 0.005));
        assert!(gemm_rate((8, 0), Gemm::Fp8, Some(2)).is_none());
        assert!(gemm_rate((8, 9), Gemm::Fp8, Some(64)).is_none());
        // V100 has no int8 tensor path; GeForce-class rates are not guessed.
        assert!(gemm_rate((7, 0), Gemm::Int8, None).is_none());
        assert!(gemm_rate((8, 9), Gemm::Int8, Some(64)).is_none());
        // V100 at 1530 MHz, 80 SMs.
        let v = gemm_peak(
            Gemm::F16,
            &gemm_rate((7, 0), Gemm::F16, None).unwrap(),
            80,
            1_530_000,
        );
        assert!(close(v.value, 125e12, 0.005));
    }

    #[test]
    fn f64_gemm_without_fp64_tensor_cores_falls_back_to_cuda_cores() {
        let r = gemm_rate((8, 6), Gemm::F64, Some(64)).unwrap();
        assert_eq!(r.per_sm, 4.0);
        assert!(r.source.contains("no FP64 tensor cores"));
        // GeForce-class tensor rates are not guessed.
        assert!(gemm_rate((8, 9), Gemm::Bf16, Some(64)).is_none());
        assert!(gemm_rate((7, 5), Gemm::F16, Some(32)).is_none());
    }

    #[test]
    fn hbm_peaks_match_the_datasheets() {
        // H100 SXM5 HBM3: 2619 MHz × 5120 bit → 3.35 TB/s.
        assert!(close(memory_bandwidth(2_619_000, 5120), 3.352e12, 0.002));
        // A100 40GB HBM2: 1215 MHz × 5120 bit → 1.555 TB/s.
        assert!(close(memory_bandwidth(1_215_000, 5120), 1.555e12, 0.002));
        // RTX 3090 GDDR6X: the driver reports 9751 MHz × 384 bit → 936 GB/s.
        assert!(close(memory_bandwidth(9_751_000, 384), 936e9, 0.002));
        // H100 PCIe HBM2e: 1593 MHz × 5120 bit → 2.04 TB/s (datasheet 2.0).
        assert!(close(memory_bandwidth(1_593_000, 5120), 2.039e12, 0.002));
        // H200 HBM3e, six 1024-bit stacks at the 3201 MHz nvidia-smi
        // reports: 4.92 TB/s, 2.4% above the datasheet's rounded-down 4.8.
        let h200 = memory_bandwidth(3_201_000, 6144);
        assert!(close(h200, 4.917e12, 0.002) && h200 > 4.8e12, "{h200}");
        // RTX 4090 GDDR6X: 10501 MHz × 384 bit → 1.008 TB/s.
        assert!(close(memory_bandwidth(10_501_000, 384), 1.008e12, 0.002));
        let p = memory_peak(2_619_000, 5120);
        assert_eq!(p.metric, "bandwidth");
        assert!(p.formula.contains("2N"));
    }

    #[test]
    fn pcie_peaks_per_generation() {
        // Gen4 x16: 16 GT/s × 128/130 × 16 / 8 = 31.5 GB/s.
        assert!(close(pcie_bandwidth(16.0, 16).unwrap(), 31.51e9, 0.001));
        // Gen5 x16: 63.0 GB/s; Gen3 x16: 15.75; Gen2 x8: 4.0 (8b/10b).
        assert!(close(pcie_bandwidth(32.0, 16).unwrap(), 63.02e9, 0.001));
        assert!(close(pcie_bandwidth(8.0, 16).unwrap(), 15.75e9, 0.001));
        assert!(close(pcie_bandwidth(5.0, 8).unwrap(), 4.0e9, 0.001));
        assert_eq!(pcie_gen(32.0), Some(5));
        assert_eq!(pcie_gen(2.5), Some(1));
        assert!(pcie_bandwidth(0.0, 16).is_none());
        assert!(pcie_bandwidth(128.0, 16).is_none());
        let p = pcie_peak(32.0, 16).unwrap();
        assert!(p.formula.contains("Gen5"), "{}", p.formula);
    }

    #[test]
    fn ops_per_instruction_follow_the_counting_rule() {
        assert_eq!(Arith::F32.ops_per_lane_instruction(), 2);
        assert_eq!(Arith::F16.ops_per_lane_instruction(), 4);
        assert_eq!(Arith::I8.ops_per_lane_instruction(), 8);
        for a in [
            Arith::F64,
            Arith::F32,
            Arith::F16,
            Arith::Bf16,
            Arith::I32,
            Arith::I8,
        ] {
            let p = FloatPrecision::from_name(a.name())
                .map(Arith::from)
                .or_else(|| IntPrecision::from_name(a.name()).map(Arith::from));
            assert_eq!(p, Some(a));
        }
        for g in [Gemm::F16, Gemm::Bf16, Gemm::Tf32, Gemm::F64] {
            assert_eq!(Gemm::from_name(g.name()), Some(g));
        }
    }
}
