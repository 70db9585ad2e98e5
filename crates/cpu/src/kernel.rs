//! Kernel selection: which instruction runs for a precision at an ISA, how
//! its operations are counted, and the runtime dispatch (`isa=auto` picks
//! the widest ISA the CPU has: AVX-512 → AVX2+FMA → SSE2 → scalar).
//!
//! Why this file is long (~660 lines before its tests): it is two tables,
//! one row per (precision, ISA) kernel with its counting rule and required
//! CPU features, and the dispatch over them; split, a row's features and
//! its counting would live apart from the kernel they describe.

use std::fmt;

use benchsuite_core::{BenchError, Choice, choice_enum};

choice_enum! {
    /// Values of the `isa` parameter: an [`Isa`], or `auto`.
    pub enum IsaChoice {
        /// The widest ISA this CPU has a kernel for.
        Auto = "auto",
        /// [`Isa::Avx512`].
        Avx512 = "avx512",
        /// [`Isa::Avx2`].
        Avx2 = "avx2",
        /// [`Isa::Sse2`].
        Sse2 = "sse2",
        /// [`Isa::Scalar`].
        Scalar = "scalar",
    }
}

impl IsaChoice {
    /// The ISA it names; `auto` is `None`.
    pub fn isa(self) -> Option<Isa> {
        match self {
            IsaChoice::Auto => None,
            IsaChoice::Avx512 => Some(Isa::Avx512),
            IsaChoice::Avx2 => Some(Isa::Avx2),
            IsaChoice::Sse2 => Some(Isa::Sse2),
            IsaChoice::Scalar => Some(Isa::Scalar),
        }
    }
}

choice_enum! {
    /// Values of `cpu.flops`'s `precision` parameter.
    pub enum FloatPrecision {
        /// Double precision.
        F64 = "f64",
        /// Single precision.
        F32 = "f32",
        /// Half precision (native AVX512-FP16 only).
        F16 = "f16",
        /// bfloat16 (AVX512-BF16 dot products only).
        Bf16 = "bf16",
    }
}

choice_enum! {
    /// Values of `cpu.flops`'s `mix` parameter: which instructions the
    /// kernel issues, so which limit of the core it meets.
    pub enum FlopsMix {
        /// Fused multiply-adds only: the FMA units' peak (the vendor's
        /// figure).
        Fma = "fma",
        /// FMAs and FP adds 1:1: where a core has FP adders beside its FMA
        /// units (AMD Zen 2 to 5), more flops per cycle than FMAs alone.
        FmaAdd = "fma_add",
    }
}

/// What a `cpu.flops` kernel is asked for: a precision and a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlopsWant {
    pub precision: FloatPrecision,
    pub mix: FlopsMix,
}

impl fmt::Display for FlopsWant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mix {
            FlopsMix::Fma => write!(f, "{}", self.precision),
            FlopsMix::FmaAdd => write!(f, "{} FMA+ADD", self.precision),
        }
    }
}

choice_enum! {
    /// Values of `cpu.iops`'s `precision` parameter.
    pub enum IntPrecision {
        /// 8-bit dot products.
        I8 = "i8",
        /// 16-bit dot products.
        I16 = "i16",
        /// 32-bit multiplies.
        I32 = "i32",
        /// 64-bit multiplies.
        I64 = "i64",
    }
}

choice_enum! {
    /// An instruction-set level a kernel is written for. [`Choice::ALL`]
    /// lists them widest first: the order `isa=auto` tries.
    pub enum Isa {
        /// 512-bit AVX-512 (zmm registers, EVEX encoding).
        Avx512 = "avx512",
        /// 256-bit AVX2, with FMA3 for floating point.
        Avx2 = "avx2",
        /// 128-bit SSE2 (no FMA: separate multiply and add).
        Sse2 = "sse2",
        /// One element per instruction.
        Scalar = "scalar",
    }
}

/// How a kernel's throughput bound is derived (see [`crate::peak`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeakModel {
    /// FMA-class instruction (FMA, bf16 dot product) on the FMA units:
    /// per cycle = ops per instruction × FMA units of this width.
    Fma,
    /// Separate multiply and add (SSE2, scalar): each FP pipe does one
    /// multiply *or* one add per cycle, 1 flop per lane: per cycle = lanes ×
    /// FP pipes of this width.
    MulAdd {
        /// Elements per register.
        lanes: u32,
    },
    /// An integer instruction whose throughput per cycle the
    /// microarchitecture table lists under this key.
    Table(&'static str),
    /// FMAs and FP adds together, `fma` and `add` of them in each body:
    /// per cycle = the body's flops over its cycles, the larger of FMAs ÷
    /// FMA units and instructions ÷ the FP pipes a multiply/add mix uses.
    FmaAdd {
        /// FMA instructions per body.
        fma: u32,
        /// Add instructions per body.
        add: u32,
    },
}

/// A kernel ready to run: the instruction, how it is counted, and the code.
#[derive(Clone, Copy)]
pub struct Kernel {
    /// ISA level it was selected at.
    pub isa: Isa,
    /// The instruction and register width (`vfmadd231pd zmm`).
    pub instruction: &'static str,
    /// Register width in bits (64 for scalar).
    pub width_bits: u32,
    /// Operations one instruction does, as counted (flops or integer ops).
    pub ops_per_instr: u64,
    /// Instructions per iteration (all chains, four unrolled bodies).
    pub instrs_per_iter: u64,
    /// Independent dependency chains.
    pub chains: u32,
    /// How the operations are counted, for the record.
    pub counting: &'static str,
    /// How the peak is derived.
    pub peak_model: PeakModel,
    #[cfg(target_arch = "x86_64")]
    raw: crate::x86::RawKernel,
    #[cfg(target_arch = "x86_64")]
    consts: &'static Consts,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("isa", &self.isa)
            .field("instruction", &self.instruction)
            .field("ops_per_iter", &self.ops_per_iter())
            .finish()
    }
}

impl Kernel {
    /// Operations one iteration of [`Kernel::run`] does.
    pub fn ops_per_iter(&self) -> u64 {
        self.ops_per_instr * self.instrs_per_iter
    }

    /// Runs `iters` iterations on the calling thread and returns the
    /// operations done (`iters × ops_per_iter`). The result is kept alive
    /// with `black_box`, so nothing can be elided.
    pub fn run(&self, iters: u64) -> u64 {
        if iters == 0 {
            return 0;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let mut out = Out([0; 64]);
            // SAFETY: a `Kernel` is only built by `select_*` after checking
            // that the CPU has every feature `raw` is compiled for; iters > 0
            // (checked above); `consts` is 128 readable bytes and `out` 64
            // writable bytes, as the kernel ABI requires.
            unsafe { (self.raw)(iters, self.consts.0.as_ptr(), out.0.as_mut_ptr()) };
            std::hint::black_box(&out);
        }
        iters * self.ops_per_iter()
    }
}

/// Constant operands: bytes 0..64 and 64..128 are two vectors, every lane
/// holding the same value.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
pub(crate) struct Consts(pub(crate) [u8; 128]);

/// Where a kernel stores its accumulators, so they are not elided.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Out([u8; 64]);

/// Builds constants from two lane patterns repeated across 64 bytes.
#[cfg(target_arch = "x86_64")]
const fn consts(a: &[u8], b: &[u8]) -> Consts {
    let mut c = [0u8; 128];
    let mut i = 0;
    while i < 64 {
        c[i] = a[i % a.len()];
        c[64 + i] = b[i % b.len()];
        i += 1;
    }
    Consts(c)
}

// acc += a·b with a·b small and normal: accumulators grow slowly, never
// overflow and never go subnormal (subnormals would slow the FP units).
#[cfg(target_arch = "x86_64")]
static C_F64: Consts = consts(&1e-3f64.to_le_bytes(), &0.999f64.to_le_bytes());
#[cfg(target_arch = "x86_64")]
static C_F32: Consts = consts(&1e-3f32.to_le_bytes(), &0.999f32.to_le_bytes());
// f16: a = 2^-10, b = 0.99951 (0x3BFF).
#[cfg(target_arch = "x86_64")]
static C_F16: Consts = consts(&[0x00, 0x14], &[0xFF, 0x3B]);
// bf16 pairs: a ≈ 0.001 (0x3A83), b ≈ 0.996 (0x3F7F).
#[cfg(target_arch = "x86_64")]
static C_BF16: Consts = consts(&[0x83, 0x3A], &[0x7F, 0x3F]);
// SSE2 / scalar: acc ← acc·m + c with m = 0.999, c = 0.001: converges to 1.
#[cfg(target_arch = "x86_64")]
static C_MULADD_F64: Consts = consts(&0.999f64.to_le_bytes(), &1e-3f64.to_le_bytes());
#[cfg(target_arch = "x86_64")]
static C_MULADD_F32: Consts = consts(&0.999f32.to_le_bytes(), &1e-3f32.to_le_bytes());
// Integers: small bytes for the dot products; an odd multiplier (in every
// 16/32/64-bit lane) for the multiply chains, so they never collapse to 0.
#[cfg(target_arch = "x86_64")]
static C_INT: Consts = consts(&[3, 1, 2, 5], &0x9E37_79B9_7F4A_7C15u64.to_le_bytes());

/// Whether the CPU has every listed feature (x86_64 names).
#[cfg(target_arch = "x86_64")]
fn has(features: &[&str]) -> bool {
    features.iter().all(|f| match *f {
        "sse2" => std::arch::is_x86_feature_detected!("sse2"),
        "avx2" => std::arch::is_x86_feature_detected!("avx2"),
        "fma" => std::arch::is_x86_feature_detected!("fma"),
        "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
        "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
        "avx512dq" => std::arch::is_x86_feature_detected!("avx512dq"),
        "avx512vnni" => std::arch::is_x86_feature_detected!("avx512vnni"),
        "avx512bf16" => std::arch::is_x86_feature_detected!("avx512bf16"),
        "avx512fp16" => std::arch::is_x86_feature_detected!("avx512fp16"),
        "avxvnni" => std::arch::is_x86_feature_detected!("avxvnni"),
        _ => false,
    })
}

/// Why no kernel can run for a precision at an ISA on this CPU: the reason
/// of a skipped record (see [`BenchError::Skip`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoKernel(pub String);

impl fmt::Display for NoKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoKernel {}

impl From<NoKernel> for BenchError {
    fn from(e: NoKernel) -> Self {
        BenchError::Skip(e.0)
    }
}

fn no_kernel(reason: impl Into<String>) -> NoKernel {
    NoKernel(reason.into())
}

/// Picks the kernel for `precision` at `isa` (`None` = auto: the widest ISA
/// that has a kernel for it). `Err` is the reason it cannot run here, for a
/// skipped record.
pub fn flops_kernel(precision: FloatPrecision, isa: Option<Isa>) -> Result<Kernel, NoKernel> {
    flops_mix_kernel(precision, FlopsMix::Fma, isa)
}

/// [`flops_kernel`] issuing `mix`.
pub fn flops_mix_kernel(
    precision: FloatPrecision,
    mix: FlopsMix,
    isa: Option<Isa>,
) -> Result<Kernel, NoKernel> {
    select(FlopsWant { precision, mix }, isa, pick_flops)
}

/// Integer counterpart of [`flops_kernel`].
pub fn iops_kernel(precision: IntPrecision, isa: Option<Isa>) -> Result<Kernel, NoKernel> {
    select(precision, isa, pick_iops)
}

/// [`flops_kernel`] for a precision given by its parameter value (`f64`).
pub fn select_flops(precision: &str, isa: Option<Isa>) -> Result<Kernel, NoKernel> {
    let p = FloatPrecision::from_name(precision)
        .ok_or_else(|| no_kernel(format!("unknown precision `{precision}`")))?;
    flops_kernel(p, isa)
}

/// [`iops_kernel`] for a precision given by its parameter value (`i32`).
pub fn select_iops(precision: &str, isa: Option<Isa>) -> Result<Kernel, NoKernel> {
    let p = IntPrecision::from_name(precision)
        .ok_or_else(|| no_kernel(format!("unknown precision `{precision}`")))?;
    iops_kernel(p, isa)
}

fn select<P: Copy + fmt::Display>(
    precision: P,
    isa: Option<Isa>,
    pick: fn(P, Isa) -> Result<Kernel, NoKernel>,
) -> Result<Kernel, NoKernel> {
    match isa {
        Some(i) => pick(precision, i),
        None => {
            // ISAs refused for one reason are named together, the reason
            // once ("avx2, sse2, scalar: no native f16 arithmetic ...").
            let mut why: Vec<(Vec<String>, String)> = Vec::new();
            for &i in Isa::ALL {
                match pick(precision, i) {
                    Ok(k) => return Ok(k),
                    Err(e) => {
                        let e = e.to_string();
                        match why.iter_mut().find(|(_, r)| *r == e) {
                            Some((isas, _)) => isas.push(i.to_string()),
                            None => why.push((vec![i.to_string()], e)),
                        }
                    }
                }
            }
            let why: Vec<String> = why
                .iter()
                .map(|(isas, e)| format!("{}: {e}", isas.join(", ")))
                .collect();
            Err(no_kernel(format!(
                "no {precision} kernel can run on this CPU ({})",
                why.join("; ")
            )))
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn pick_flops(_want: FlopsWant, _isa: Isa) -> Result<Kernel, NoKernel> {
    Err(no_kernel(
        "the cpu.flops kernels are written in x86_64 assembly; this CPU is not x86_64",
    ))
}

#[cfg(not(target_arch = "x86_64"))]
fn pick_iops(_precision: IntPrecision, _isa: Isa) -> Result<Kernel, NoKernel> {
    Err(no_kernel(
        "the cpu.iops kernels are written in x86_64 assembly; this CPU is not x86_64",
    ))
}

/// The counting rule of FMA kernels.
pub const FMA_COUNTING: &str = "one fused multiply-add = 2 flops per lane";

#[cfg(target_arch = "x86_64")]
fn pick_flops(want: FlopsWant, isa: Isa) -> Result<Kernel, NoKernel> {
    let precision = want.precision;
    use crate::x86;
    // (instruction, width, ops/instr, instrs/iter, chains, counting, model, raw, consts, features)
    let k = |instruction,
             width_bits,
             ops_per_instr,
             chains: u32,
             counting,
             peak_model,
             raw,
             consts,
             features: &[&str]| {
        if !has(features) {
            return Err(no_kernel(format!(
                "{instruction} needs CPU feature(s) {} which this CPU lacks",
                features.join("+")
            )));
        }
        let per_body = if matches!(peak_model, PeakModel::MulAdd { .. }) {
            2 * chains as u64
        } else {
            chains as u64
        };
        Ok(Kernel {
            isa,
            instruction,
            width_bits,
            ops_per_instr,
            instrs_per_iter: 4 * per_body,
            chains,
            counting,
            peak_model,
            raw,
            consts,
        })
    };
    const MULADD: &str =
        "separate multiply and add (no FMA at this ISA): 1 flop per lane per instruction";
    const F16_NONE: &str = "no native f16 arithmetic at this ISA (F16C only converts); f16 flops need AVX512-FP16 (isa=avx512): benchsuite does not report f32 arithmetic as f16";
    const BF16_NONE: &str = "no bf16 arithmetic at this ISA; bf16 needs AVX512-BF16 (isa=avx512)";
    const MIX: &str = "12 FMAs (2 flops per lane) and 12 adds (1 flop per lane) per body, on 24 independent accumulators: 1.5 flops per lane per instruction";
    if want.mix == FlopsMix::FmaAdd {
        let model = PeakModel::FmaAdd { fma: 12, add: 12 };
        return match (isa, precision) {
            (Isa::Avx512, FloatPrecision::F64) => k(
                "vfmadd231pd zmm + vaddpd zmm",
                512,
                12,
                24,
                MIX,
                model,
                x86::fma_add_pd_zmm,
                &C_F64,
                &["avx512f"],
            ),
            (Isa::Avx512, FloatPrecision::F32) => k(
                "vfmadd231ps zmm + vaddps zmm",
                512,
                24,
                24,
                MIX,
                model,
                x86::fma_add_ps_zmm,
                &C_F32,
                &["avx512f"],
            ),
            (Isa::Avx512, _) => Err(no_kernel("mix=fma_add is f64 or f32 (the adders' formats)")),
            _ => Err(no_kernel(
                "mix=fma_add needs AVX-512's 32 registers (24 independent accumulators keep both the FMA units and the adders busy)",
            )),
        };
    }
    match (isa, precision) {
        (Isa::Avx512, FloatPrecision::F64) => k(
            "vfmadd231pd zmm",
            512,
            16,
            24,
            FMA_COUNTING,
            PeakModel::Fma,
            x86::fma_pd_zmm as x86::RawKernel,
            &C_F64,
            &["avx512f"],
        ),
        (Isa::Avx512, FloatPrecision::F32) => k(
            "vfmadd231ps zmm",
            512,
            32,
            24,
            FMA_COUNTING,
            PeakModel::Fma,
            x86::fma_ps_zmm,
            &C_F32,
            &["avx512f"],
        ),
        (Isa::Avx512, FloatPrecision::F16) => k(
            "vfmadd231ph zmm",
            512,
            64,
            24,
            "native AVX512-FP16 FMA on 32 f16 lanes; one fused multiply-add = 2 flops per lane",
            PeakModel::Fma,
            x86::fma_ph_zmm,
            &C_F16,
            &["avx512f", "avx512bw", "avx512fp16"],
        ),
        (Isa::Avx512, FloatPrecision::Bf16) => k(
            "vdpbf16ps zmm",
            512,
            64,
            24,
            "vdpbf16ps: per f32 lane, acc += a0*b0 + a1*b1 over bf16 pairs = 2 multiply-adds = 4 flops; 16 lanes = 64 flops per instruction",
            PeakModel::Table("vdpbf16ps zmm"),
            x86::dp_bf16_zmm,
            &C_BF16,
            &["avx512f", "avx512bf16"],
        ),
        (Isa::Avx2, FloatPrecision::F64) => k(
            "vfmadd231pd ymm",
            256,
            8,
            14,
            FMA_COUNTING,
            PeakModel::Fma,
            x86::fma_pd_ymm,
            &C_F64,
            &["avx2", "fma"],
        ),
        (Isa::Avx2, FloatPrecision::F32) => k(
            "vfmadd231ps ymm",
            256,
            16,
            14,
            FMA_COUNTING,
            PeakModel::Fma,
            x86::fma_ps_ymm,
            &C_F32,
            &["avx2", "fma"],
        ),
        (Isa::Sse2, FloatPrecision::F64) => k(
            "mulpd+addpd xmm",
            128,
            2,
            14,
            MULADD,
            PeakModel::MulAdd { lanes: 2 },
            x86::muladd_pd_xmm,
            &C_MULADD_F64,
            &["sse2"],
        ),
        (Isa::Sse2, FloatPrecision::F32) => k(
            "mulps+addps xmm",
            128,
            4,
            14,
            MULADD,
            PeakModel::MulAdd { lanes: 4 },
            x86::muladd_ps_xmm,
            &C_MULADD_F32,
            &["sse2"],
        ),
        (Isa::Scalar, FloatPrecision::F64) => k(
            "mulsd+addsd",
            64,
            1,
            14,
            MULADD,
            PeakModel::MulAdd { lanes: 1 },
            x86::muladd_sd,
            &C_MULADD_F64,
            &["sse2"],
        ),
        (Isa::Scalar, FloatPrecision::F32) => k(
            "mulss+addss",
            64,
            1,
            14,
            MULADD,
            PeakModel::MulAdd { lanes: 1 },
            x86::muladd_ss,
            &C_MULADD_F32,
            &["sse2"],
        ),
        (_, FloatPrecision::F16) => Err(no_kernel(F16_NONE)),
        (_, FloatPrecision::Bf16) => Err(no_kernel(BF16_NONE)),
    }
}

#[cfg(target_arch = "x86_64")]
fn pick_iops(precision: IntPrecision, isa: Isa) -> Result<Kernel, NoKernel> {
    use crate::x86;
    let k = |instruction,
             width_bits,
             ops_per_instr,
             chains: u32,
             counting,
             key,
             raw,
             features: &[&str]| {
        if !has(features) {
            return Err(no_kernel(format!(
                "{instruction} needs CPU feature(s) {} which this CPU lacks",
                features.join("+")
            )));
        }
        Ok(Kernel {
            isa,
            instruction,
            width_bits,
            ops_per_instr,
            instrs_per_iter: 4 * chains as u64,
            chains,
            counting,
            peak_model: PeakModel::Table(key),
            raw,
            consts: &C_INT,
        })
    };
    const DPBUSD: &str = "VNNI dot product: per i32 lane, 4 u8*i8 multiplies + 4 adds (3 to sum, 1 to accumulate) = 8 ops; counted 2 ops per multiply-accumulate";
    const DPWSSD: &str = "VNNI dot product: per i32 lane, 2 i16*i16 multiplies + 2 adds = 4 ops; counted 2 ops per multiply-accumulate";
    const MADDUBS: &str = "no VNNI: widening multiply-add (pmaddubsw): per i16 lane, 2 u8*i8 multiplies + 1 add = 3 ops";
    const MADDWD: &str = "no VNNI: widening multiply-add (pmaddwd): per i32 lane, 2 i16*i16 multiplies + 1 add = 3 ops";
    const MULL: &str = "multiply (low half kept): 1 op per lane";
    let vnni_zmm = has(&["avx512f", "avx512vnni"]);
    let vnni_ymm = has(&["avx2", "avxvnni"]);
    match (isa, precision) {
        (Isa::Avx512, IntPrecision::I8) if vnni_zmm => k(
            "vpdpbusd zmm",
            512,
            128,
            24,
            DPBUSD,
            "vpdpbusd zmm",
            x86::vnni_i8_zmm as x86::RawKernel,
            &["avx512f", "avx512vnni"],
        ),
        (Isa::Avx512, IntPrecision::I8) => k(
            "vpmaddubsw zmm",
            512,
            96,
            24,
            MADDUBS,
            "vpmaddubsw zmm",
            x86::maddubs_zmm,
            &["avx512f", "avx512bw"],
        ),
        (Isa::Avx512, IntPrecision::I16) if vnni_zmm => k(
            "vpdpwssd zmm",
            512,
            64,
            24,
            DPWSSD,
            "vpdpwssd zmm",
            x86::vnni_i16_zmm,
            &["avx512f", "avx512vnni"],
        ),
        (Isa::Avx512, IntPrecision::I16) => k(
            "vpmaddwd zmm",
            512,
            48,
            24,
            MADDWD,
            "vpmaddwd zmm",
            x86::maddwd_zmm,
            &["avx512f", "avx512bw"],
        ),
        (Isa::Avx512, IntPrecision::I32) => k(
            "vpmulld zmm",
            512,
            16,
            24,
            MULL,
            "vpmulld zmm",
            x86::mulld_zmm,
            &["avx512f"],
        ),
        (Isa::Avx512, IntPrecision::I64) => k(
            "vpmullq zmm",
            512,
            8,
            24,
            MULL,
            "vpmullq zmm",
            x86::mullq_zmm,
            &["avx512f", "avx512dq"],
        ),
        (Isa::Avx2, IntPrecision::I8) if vnni_ymm => k(
            "vpdpbusd ymm (AVX-VNNI)",
            256,
            64,
            14,
            DPBUSD,
            "vpdpbusd ymm",
            x86::vnni_i8_ymm,
            &["avx2", "avxvnni"],
        ),
        (Isa::Avx2, IntPrecision::I8) => k(
            "vpmaddubsw ymm",
            256,
            48,
            14,
            MADDUBS,
            "vpmaddubsw ymm",
            x86::maddubs_ymm,
            &["avx2"],
        ),
        (Isa::Avx2, IntPrecision::I16) if vnni_ymm => k(
            "vpdpwssd ymm (AVX-VNNI)",
            256,
            32,
            14,
            DPWSSD,
            "vpdpwssd ymm",
            x86::vnni_i16_ymm,
            &["avx2", "avxvnni"],
        ),
        (Isa::Avx2, IntPrecision::I16) => k(
            "vpmaddwd ymm",
            256,
            24,
            14,
            MADDWD,
            "vpmaddwd ymm",
            x86::maddwd_ymm,
            &["avx2"],
        ),
        (Isa::Avx2, IntPrecision::I32) => k(
            "vpmulld ymm",
            256,
            8,
            14,
            MULL,
            "vpmulld ymm",
            x86::mulld_ymm,
            &["avx2"],
        ),
        (Isa::Avx2, IntPrecision::I64) => Err(no_kernel(
            "AVX2 has no packed 64-bit multiply (vpmullq needs AVX512DQ: isa=avx512)",
        )),
        (Isa::Sse2, IntPrecision::I16) => k(
            "pmaddwd xmm",
            128,
            12,
            14,
            MADDWD,
            "pmaddwd xmm",
            x86::maddwd_xmm,
            &["sse2"],
        ),
        (Isa::Sse2, IntPrecision::I8) => Err(no_kernel(
            "SSE2 has no 8-bit multiply (pmaddubsw is SSSE3): use isa=avx2 or avx512",
        )),
        (Isa::Sse2, IntPrecision::I32) => Err(no_kernel(
            "SSE2 has no packed 32-bit multiply (pmulld is SSE4.1): use isa=avx2 or avx512",
        )),
        (Isa::Sse2, IntPrecision::I64) => Err(no_kernel(
            "SSE2 has no packed 64-bit multiply: use isa=avx512",
        )),
        (Isa::Scalar, IntPrecision::I32) => k(
            "imul r32",
            64,
            1,
            10,
            MULL,
            "imul r32",
            x86::imul32,
            &["sse2"],
        ),
        (Isa::Scalar, IntPrecision::I64) => k(
            "imul r64",
            64,
            1,
            10,
            MULL,
            "imul r64",
            x86::imul64,
            &["sse2"],
        ),
        (Isa::Scalar, IntPrecision::I8 | IntPrecision::I16) => Err(no_kernel(
            "no scalar 8/16-bit multiply-accumulate kernel: use a SIMD isa",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_a_kernel_for_f64_and_i32() {
        #[cfg(target_arch = "x86_64")]
        {
            let k = flops_kernel(FloatPrecision::F64, None).unwrap();
            assert!(k.ops_per_iter() > 0);
            let ops = k.run(3);
            assert_eq!(ops, 3 * k.ops_per_iter());
            assert_eq!(k.run(0), 0);
            let k = iops_kernel(IntPrecision::I32, None).unwrap();
            assert_eq!(k.run(2), 2 * k.ops_per_iter());
        }
    }

    #[test]
    fn every_available_kernel_runs_and_counts() {
        for &isa in Isa::ALL {
            for &p in FloatPrecision::ALL {
                match flops_kernel(p, Some(isa)) {
                    Ok(k) => {
                        assert_eq!(k.isa, isa);
                        assert_eq!(k.run(5), 5 * k.ops_per_iter(), "{p} {isa}");
                    }
                    Err(reason) => assert!(!reason.0.is_empty()),
                }
            }
            for &p in IntPrecision::ALL {
                match iops_kernel(p, Some(isa)) {
                    Ok(k) => assert_eq!(k.run(5), 5 * k.ops_per_iter(), "{p} {isa}"),
                    Err(reason) => assert!(!reason.0.is_empty()),
                }
            }
        }
    }

    #[test]
    fn fp16_without_avx512_is_refused_with_a_reason() {
        let e = flops_kernel(FloatPrecision::F16, Some(Isa::Avx2)).unwrap_err();
        assert!(e.0.contains("AVX512-FP16"), "{e}");
        let e = flops_kernel(FloatPrecision::Bf16, Some(Isa::Scalar)).unwrap_err();
        assert!(e.0.contains("AVX512-BF16"), "{e}");
        assert!(matches!(BenchError::from(e), BenchError::Skip(_)));
    }

    #[test]
    fn selection_by_name_matches_the_typed_selection() {
        let by_name = select_flops("f64", None).map(|k| k.instruction);
        let typed = flops_kernel(FloatPrecision::F64, None).map(|k| k.instruction);
        assert_eq!(by_name, typed);
        let by_name = select_iops("i8", None).map(|k| k.instruction);
        let typed = iops_kernel(IntPrecision::I8, None).map(|k| k.instruction);
        assert_eq!(by_name, typed);
        let e = select_flops("f128", None).unwrap_err();
        assert!(e.0.contains("unknown precision `f128`"), "{e}");
    }

    #[test]
    fn isa_choice_names_its_isa() {
        assert_eq!(IsaChoice::Auto.isa(), None);
        // Every ISA level is a choice of the same name.
        for &c in &IsaChoice::ALL[1..] {
            assert_eq!(c.isa().map(Isa::name), Some(c.name()));
        }
        assert_eq!(&IsaChoice::NAMES[1..], Isa::NAMES);
    }

    #[test]
    fn counting_of_fma_kernels() {
        #[cfg(target_arch = "x86_64")]
        if let Ok(k) = flops_kernel(FloatPrecision::F64, Some(Isa::Avx512)) {
            // 8 lanes × 2 flops, 24 chains × 4 bodies.
            assert_eq!(k.ops_per_iter(), 16 * 96);
        }
    }

    #[test]
    fn the_fma_add_mix_is_avx512_f64_or_f32_only() {
        let e = flops_mix_kernel(FloatPrecision::F64, FlopsMix::FmaAdd, Some(Isa::Avx2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("AVX-512"), "{e}");
        let e = flops_mix_kernel(FloatPrecision::F16, FlopsMix::FmaAdd, Some(Isa::Avx512))
            .unwrap_err()
            .to_string();
        assert!(e.contains("f64 or f32") || e.contains("lacks"), "{e}");
        match flops_mix_kernel(FloatPrecision::F64, FlopsMix::FmaAdd, None) {
            Err(e) => eprintln!("skipped: the FMA+ADD kernel's run on this CPU: {e}"),
            Ok(k) => {
                assert_eq!(k.isa, Isa::Avx512);
                assert_eq!((k.ops_per_instr, k.instrs_per_iter, k.chains), (12, 96, 24));
                assert_eq!(k.peak_model, PeakModel::FmaAdd { fma: 12, add: 12 });
                // The kernel runs and leaves finite sums.
                assert!(k.run(1000) > 0);
            }
        }
    }
}
