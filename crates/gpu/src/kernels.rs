//! The CUDA C kernels, compiled at run time by NVRTC for the device's own
//! architecture (see `cuda::nvrtc`). They include no headers: packed
//! half/bfloat16 and integer dot products are written as inline PTX, so only
//! `libnvrtc` itself is needed, not the toolkit's include directory.
//!
//! The arithmetic kernels run [`CHAINS`] independent dependency chains per
//! thread (enough to cover the FMA latency with a few warps per scheduler),
//! [`UNROLL`] steps per loop trip (so loop overhead is ~1% of the issue
//! slots), `n` trips chosen at run time, and store one value per thread so
//! nothing can be eliminated. Their results are checked against a host
//! emulation of the same arithmetic (see [`emulate`]).

use crate::peak::Arith;

/// Independent FMA chains per thread.
pub(crate) const CHAINS: u64 = 8;
/// FMA steps per chain per loop trip.
pub(crate) const UNROLL: u64 = 32;

/// The kernel name for `a`.
pub(crate) fn arith_kernel_name(a: Arith) -> &'static str {
    match a {
        Arith::F64 => "fma_f64",
        Arith::F32 => "fma_f32",
        Arith::F16 => "fma_f16x2",
        Arith::Bf16 => "fma_bf16x2",
        Arith::I32 => "imad_i32",
        Arith::I8 => "dp4a_i8",
    }
}

const PRELUDE: &str = r#"
typedef unsigned int u32;
typedef unsigned long long u64;
#define CHAINS 8
#define UNROLL 32
"#;

/// `pack` and `fma2` for half2: two f16 lanes in a `u32`.
const F16X2_OPS: &str = r#"
__device__ __forceinline__ u32 pack(float lo, float hi) {
    unsigned short l, h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(l) : "f"(lo));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(hi));
    return (u32)l | ((u32)h << 16);
}
__device__ __forceinline__ u32 fma2(u32 a, u32 b, u32 c) {
    u32 d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
"#;

/// `pack` and `fma2` for bfloat162: two bf16 lanes in a `u32`.
const BF16X2_OPS: &str = r#"
__device__ __forceinline__ u32 pack(float lo, float hi) {
    /* exact: both values have at most 8 significant bits */
    return (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);
}
__device__ __forceinline__ u32 fma2(u32 a, u32 b, u32 c) {
    u32 d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
"#;

/// The packed (half2 / bfloat162) FMA kernel; `KERNEL_NAME` is replaced by
/// its name and `pack`/`fma2` come from [`F16X2_OPS`] or [`BF16X2_OPS`].
const PACKED_KERNEL: &str = r#"
extern "C" __global__ void __launch_bounds__(1024) KERNEL_NAME(u32 *__restrict__ out, u32 b, u32 c, int n) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    u32 a[CHAINS];
    #pragma unroll
    for (int j = 0; j < CHAINS; j++) {
        const float x = 1.0f + (float)(tid & 15) * 0.0078125f + (float)j * 0.125f;
        a[j] = pack(x, 2.0f - x);
    }
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            #pragma unroll
            for (int j = 0; j < CHAINS; j++) a[j] = fma2(a[j], b, c);
        }
    }
    u32 s = a[0];
    #pragma unroll
    for (int j = 1; j < CHAINS; j++) s ^= a[j];
    out[tid] = s;
}
"#;

/// The source of the arithmetic kernel for `a`. Every kernel has the
/// signature `(T *out, T b, T c, int n)` with `T` = `double`, `float` or
/// `u32` (packed pairs and integers).
pub(crate) fn arith_source(a: Arith) -> String {
    // Chain j of thread t starts at x = 1 + (t & 15)/128 + j/8 (exact in
    // every format used); packed kernels put x in the low half, 2 - x in
    // the high half.
    let body = match a {
        Arith::F64 => {
            r#"
extern "C" __global__ void __launch_bounds__(1024) fma_f64(double *__restrict__ out, double b, double c, int n) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    double a[CHAINS];
    #pragma unroll
    for (int j = 0; j < CHAINS; j++) a[j] = 1.0 + (double)(tid & 15) * 0.0078125 + (double)j * 0.125;
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            #pragma unroll
            for (int j = 0; j < CHAINS; j++) a[j] = fma(a[j], b, c);
        }
    }
    double s = a[0];
    #pragma unroll
    for (int j = 1; j < CHAINS; j++) s += a[j];
    out[tid] = s;
}
"#
        }
        Arith::F32 => {
            r#"
extern "C" __global__ void __launch_bounds__(1024) fma_f32(float *__restrict__ out, float b, float c, int n) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a[CHAINS];
    #pragma unroll
    for (int j = 0; j < CHAINS; j++) a[j] = 1.0f + (float)(tid & 15) * 0.0078125f + (float)j * 0.125f;
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            #pragma unroll
            for (int j = 0; j < CHAINS; j++) a[j] = fmaf(a[j], b, c);
        }
    }
    float s = a[0];
    #pragma unroll
    for (int j = 1; j < CHAINS; j++) s += a[j];
    out[tid] = s;
}
"#
        }
        Arith::F16 => {
            return format!(
                "{PRELUDE}{}{}",
                F16X2_OPS,
                PACKED_KERNEL.replace("KERNEL_NAME", arith_kernel_name(a))
            );
        }
        Arith::Bf16 => {
            return format!(
                "{PRELUDE}{}{}",
                BF16X2_OPS,
                PACKED_KERNEL.replace("KERNEL_NAME", arith_kernel_name(a))
            );
        }
        Arith::I32 => {
            r#"
__device__ __forceinline__ u32 mad(u32 a, u32 b, u32 c) {
    u32 d;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
extern "C" __global__ void __launch_bounds__(1024) imad_i32(u32 *__restrict__ out, u32 b, u32 c, int n) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    u32 a[CHAINS];
    #pragma unroll
    for (int j = 0; j < CHAINS; j++) a[j] = tid * 2654435761u + (u32)j;
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            #pragma unroll
            for (int j = 0; j < CHAINS; j++) a[j] = mad(a[j], b, c);
        }
    }
    u32 s = a[0];
    #pragma unroll
    for (int j = 1; j < CHAINS; j++) s ^= a[j];
    out[tid] = s;
}
"#
        }
        Arith::I8 => {
            r#"
__device__ __forceinline__ u32 dp4a(u32 a, u32 b, u32 c) {
    u32 d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
extern "C" __global__ void __launch_bounds__(1024) dp4a_i8(u32 *__restrict__ out, u32 b, u32 c, int n) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    u32 a[CHAINS];
    #pragma unroll
    for (int j = 0; j < CHAINS; j++) a[j] = (tid * 2654435761u + (u32)j) ^ c;
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            #pragma unroll
            for (int j = 0; j < CHAINS; j++) a[j] = dp4a(a[j], b, a[j]);
        }
    }
    u32 s = a[0];
    #pragma unroll
    for (int j = 1; j < CHAINS; j++) s ^= a[j];
    out[tid] = s;
}
"#
        }
    };
    format!("{PRELUDE}{body}")
}

/// The operands `(b, c)` each kernel gets, as the bits of its `T`: the
/// float chains converge towards 1 (`a·(1 - 2^-8) + 2^-8`) and never leave
/// [2^-7, 2], so no denormal, infinity or NaN can occur.
pub(crate) fn arith_operands(a: Arith) -> (u64, u64) {
    let b: f64 = 1.0 - 1.0 / 256.0;
    let c: f64 = 1.0 / 256.0;
    match a {
        Arith::F64 => (b.to_bits(), c.to_bits()),
        Arith::F32 => ((b as f32).to_bits() as u64, (c as f32).to_bits() as u64),
        Arith::F16 => {
            let h = |x| emulate::f16_bits(x) as u64;
            (h(b) | (h(b) << 16), h(c) | (h(c) << 16))
        }
        Arith::Bf16 => {
            let h = |x| emulate::bf16_bits(x) as u64;
            (h(b) | (h(b) << 16), h(c) | (h(c) << 16))
        }
        // An LCG multiplier and increment; and for dp4a signed bytes
        // (3, -5, 7, -2) and a seed.
        Arith::I32 => (1_664_525, 1_013_904_223),
        Arith::I8 => (u32::from_le_bytes([3, 251, 7, 254]) as u64, 0x9e37_79b9),
    }
}

/// The empty kernel (launch latency) and the device-to-device copy kernel.
pub(crate) const MEMORY_SOURCE: &str = r#"
typedef unsigned long long u64;
extern "C" __global__ void empty() {}

/* Copies nbytes from src to dst, one 16-byte vector (uint4) per thread and
   no loop: thread t of a launch copies vector first + t, so a copy of n16
   vectors is n16 / blockDim.x blocks in total (on an H200, 4.16 TB/s at
   256 MiB like cuMemcpyDtoD, where grid-stride loops over 2-32 resident
   blocks per SM reached 3.0-4.0). The
   host splits a large copy into launches of at most COPY_MAX_GRID blocks
   (bandwidth.rs, copy_launches), each passing its first vector. The launch
   with first == 0 also copies the tail under 16 bytes with its threads
   0..15, so every launch plan has such a launch, of at least 16 threads.
   src and dst must be 16-byte aligned (uint4 loads and stores): whole
   cuMemAlloc allocations, which are 256-byte aligned, never offsets into
   them. Indices are 64-bit: any size. */
extern "C" __global__ void __launch_bounds__(1024) copy(const unsigned char *__restrict__ src, unsigned char *__restrict__ dst, u64 first, u64 nbytes) {
    const u64 n16 = nbytes >> 4;
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 i = first + t;
    if (i < n16) ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
    if (first == 0 && t < 16) {
        const u64 b = (n16 << 4) + t;
        if (b < nbytes) dst[b] = src[b];
    }
}
"#;

/// Host emulation of the arithmetic kernels, bit for bit, to check what the
/// GPU computed (thread `tid` after `n` loop trips).
pub(crate) mod emulate {
    use crate::kernels::{CHAINS, UNROLL};
    use crate::peak::Arith;

    /// Rounds `x` (positive, normal) to `bits` significant bits, to nearest
    /// with ties to even: one rounding of the exact value, as `fma.rn` does.
    pub(crate) fn round_sig(x: f64, bits: i32) -> f64 {
        if x == 0.0 || !x.is_finite() {
            return x;
        }
        let e = ((x.abs().to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let ulp = 2f64.powi(e - (bits - 1));
        (x / ulp).round_ties_even() * ulp
    }

    /// IEEE half bits of `x`, which must be exactly representable and
    /// normal (or zero).
    pub(crate) fn f16_bits(x: f64) -> u16 {
        if x == 0.0 {
            return 0;
        }
        let sign = if x < 0.0 { 0x8000 } else { 0 };
        let a = x.abs();
        let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        debug_assert!((-14..=15).contains(&e), "{x} is not a normal half");
        let m = (a / 2f64.powi(e) - 1.0) * 1024.0;
        debug_assert_eq!(m, m.round(), "{x} is not exact in half precision");
        sign | (((e + 15) as u16) << 10) | m as u16
    }

    /// The value of IEEE half bits (normal or zero).
    pub(crate) fn f16_value(h: u16) -> f64 {
        let e = ((h >> 10) & 0x1f) as i32;
        let m = (h & 0x3ff) as f64;
        let v = if e == 0 {
            m * 2f64.powi(-24)
        } else {
            (1.0 + m / 1024.0) * 2f64.powi(e - 15)
        };
        if h & 0x8000 != 0 { -v } else { v }
    }

    /// bfloat16 bits of `x`, which must be exactly representable.
    pub(crate) fn bf16_bits(x: f64) -> u16 {
        let b = (x as f32).to_bits();
        debug_assert_eq!(b & 0xffff, 0, "{x} is not exact in bfloat16");
        (b >> 16) as u16
    }

    /// The value of bfloat16 bits.
    pub(crate) fn bf16_value(h: u16) -> f64 {
        f32::from_bits((h as u32) << 16) as f64
    }

    fn start(tid: u32, j: u64) -> f64 {
        1.0 + (tid & 15) as f64 * 0.0078125 + j as f64 * 0.125
    }

    /// The value thread `tid` stores after `n` trips with operands (b, c)
    /// as passed to the kernel (bits of its `T`), as the low 64 bits.
    pub(crate) fn thread_result(a: Arith, tid: u32, n: u64, b: u64, c: u64) -> u64 {
        let steps = n * UNROLL;
        match a {
            Arith::F64 => {
                let (b, c) = (f64::from_bits(b), f64::from_bits(c));
                let mut s = 0.0f64;
                for j in 0..CHAINS {
                    let mut x = start(tid, j);
                    for _ in 0..steps {
                        x = x.mul_add(b, c);
                    }
                    s = if j == 0 { x } else { s + x };
                }
                s.to_bits()
            }
            Arith::F32 => {
                let (b, c) = (f32::from_bits(b as u32), f32::from_bits(c as u32));
                let mut s = 0.0f32;
                for j in 0..CHAINS {
                    let mut x = start(tid, j) as f32;
                    for _ in 0..steps {
                        x = x.mul_add(b, c);
                    }
                    s = if j == 0 { x } else { s + x };
                }
                s.to_bits() as u64
            }
            Arith::F16 | Arith::Bf16 => {
                let half = a == Arith::F16;
                let bits = if half { 11 } else { 8 };
                let dec = |h: u16| if half { f16_value(h) } else { bf16_value(h) };
                let enc = |x: f64| if half { f16_bits(x) } else { bf16_bits(x) };
                let lane = |v: u64, k: u32| dec((v >> (16 * k)) as u16);
                let mut s = 0u32;
                for j in 0..CHAINS {
                    let x0 = start(tid, j);
                    let mut lanes = [x0, 2.0 - x0];
                    for (k, x) in lanes.iter_mut().enumerate() {
                        let (bk, ck) = (lane(b, k as u32), lane(c, k as u32));
                        for _ in 0..steps {
                            // Exact in f64 (11-bit significands), then one
                            // rounding, like fma.rn.
                            *x = round_sig(*x * bk + ck, bits);
                        }
                    }
                    s ^= enc(lanes[0]) as u32 | ((enc(lanes[1]) as u32) << 16);
                }
                s as u64
            }
            Arith::I32 => {
                let (b, c) = (b as u32, c as u32);
                let mut s = 0u32;
                for j in 0..CHAINS {
                    let mut x = tid.wrapping_mul(2_654_435_761).wrapping_add(j as u32);
                    for _ in 0..steps {
                        x = x.wrapping_mul(b).wrapping_add(c);
                    }
                    s ^= x;
                }
                s as u64
            }
            Arith::I8 => {
                let (b, c) = (b as u32, c as u32);
                let bb = b.to_le_bytes();
                let mut s = 0u32;
                for j in 0..CHAINS {
                    let mut x = tid.wrapping_mul(2_654_435_761).wrapping_add(j as u32) ^ c;
                    for _ in 0..steps {
                        let xb = x.to_le_bytes();
                        let dot: i32 = (0..4)
                            .map(|k| xb[k] as i8 as i32 * bb[k] as i8 as i32)
                            .sum();
                        x = (x as i32).wrapping_add(dot) as u32;
                    }
                    s ^= x;
                }
                s as u64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::emulate::*;
    use super::*;

    #[test]
    fn half_and_bfloat_bits_round_trip() {
        for x in [1.0, 0.99609375, 1.0 / 256.0, 1.9921875, 2.0, 0.0078125, 0.5] {
            assert_eq!(f16_value(f16_bits(x)), x, "{x}");
            assert_eq!(bf16_value(bf16_bits(x)), x, "{x}");
        }
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(0.99609375), 0x3bf8);
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(0.99609375), 0x3f7f);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // 1 + 2^-11 lies halfway between two halves: ties to even (1.0).
        assert_eq!(round_sig(1.0 + 2f64.powi(-11), 11), 1.0);
        // 1 + 3·2^-11 lies halfway up from an odd mantissa: rounds up.
        assert_eq!(
            round_sig(1.0 + 3.0 * 2f64.powi(-11), 11),
            1.0 + 2.0 * 2f64.powi(-10)
        );
        assert_eq!(round_sig(1.5, 8), 1.5);
        assert_eq!(round_sig(3.0 * 2f64.powi(-9) + 1.0, 8), 1.0 + 2f64.powi(-7));
    }

    #[test]
    fn emulated_chains_stay_finite_and_normal() {
        for a in [Arith::F64, Arith::F32, Arith::F16, Arith::Bf16] {
            let (b, c) = arith_operands(a);
            let r = emulate::thread_result(a, 7, 4, b, c);
            match a {
                Arith::F64 => assert!(f64::from_bits(r).is_normal()),
                Arith::F32 => assert!(f32::from_bits(r as u32).is_normal()),
                _ => assert_ne!(r, 0),
            }
        }
        // f32 and f64 chains converge to 1: 8 chains sum to about 8.
        let (b, c) = arith_operands(Arith::F64);
        let s = f64::from_bits(emulate::thread_result(Arith::F64, 3, 200, b, c));
        assert!((s - 8.0).abs() < 0.01, "{s}");
    }

    #[test]
    fn emulation_depends_on_every_input() {
        for a in [Arith::F32, Arith::I32, Arith::I8, Arith::F16] {
            let (b, c) = arith_operands(a);
            let base = emulate::thread_result(a, 1, 2, b, c);
            assert_ne!(base, emulate::thread_result(a, 2, 2, b, c), "{a:?} tid");
            assert_ne!(base, emulate::thread_result(a, 1, 1, b, c), "{a:?} n");
        }
    }

    /// Compiles every kernel with the NVRTC found on this machine (skips,
    /// saying why, when there is none: CI without a CUDA toolkit). Set
    /// LD_LIBRARY_PATH or CUDA_HOME to pip's nvidia/cuda_nvrtc to run it.
    #[test]
    fn every_kernel_compiles_under_nvrtc_for_current_architectures() {
        use crate::cuda::nvrtc::{compile_for, supported_archs};
        use benchsuite_core::error_chain;
        if let Err(e) = crate::cuda::libs::nvrtc() {
            benchsuite_core::testing::skip(benchsuite_core::testing::Capability::Nvrtc, &e);
            return;
        }
        let archs = supported_archs().unwrap();
        eprintln!(
            "NVRTC {:?} supports {archs:?}",
            crate::cuda::nvrtc::version()
        );
        let mut wanted = vec![70, 75, 80, 86, 89, 90];
        wanted.extend(archs.last().copied());
        let all = [
            Arith::F64,
            Arith::F32,
            Arith::F16,
            Arith::Bf16,
            Arith::I32,
            Arith::I8,
        ];
        let mut compiled = 0;
        for arch in wanted.into_iter().filter(|a| archs.contains(a)) {
            let sm = format!("sm_{arch}");
            for a in all {
                let (maj, min) = a.min_cc();
                if arch < maj * 10 + min {
                    continue;
                }
                let img = compile_for(arith_kernel_name(a), &arith_source(a), &sm)
                    .unwrap_or_else(|e| panic!("{a:?} for {sm}: {}", error_chain(&e)));
                assert!(
                    img.is_cubin() && img.bytes.starts_with(b"\x7fELF"),
                    "{a:?} {sm}"
                );
                compiled += 1;
            }
            let img = compile_for("memory", MEMORY_SOURCE, &sm)
                .unwrap_or_else(|e| panic!("{sm}: {}", error_chain(&e)));
            assert!(img.bytes.starts_with(b"\x7fELF"));
            compiled += 1;
        }
        assert!(compiled >= 7 * 3, "only {compiled} compiled");
        // The PTX path (a GPU newer than NVRTC): text with the entry points.
        let ptx = compile_for("fma_bf16x2", &arith_source(Arith::Bf16), "compute_80").unwrap();
        assert!(!ptx.is_cubin());
        let text = String::from_utf8_lossy(&ptx.bytes);
        assert!(
            text.contains(".entry fma_bf16x2") && text.contains("fma.rn.bf16x2"),
            "{text}"
        );
        assert_eq!(
            ptx.bytes.last(),
            Some(&0),
            "PTX must be NUL-terminated for cuModuleLoadData"
        );
        // The arithmetic survives compilation: the unrolled chains are there.
        let ptx = compile_for("fma_f32", &arith_source(Arith::F32), "compute_90").unwrap();
        let text = String::from_utf8_lossy(&ptx.bytes);
        let fmas = text.matches("fma.rn.f32").count() as u64;
        assert!(fmas >= CHAINS * UNROLL, "{fmas} fma.rn.f32 in the PTX");
    }

    #[test]
    fn sources_declare_the_kernels_they_are_named_for() {
        for a in [
            Arith::F64,
            Arith::F32,
            Arith::F16,
            Arith::Bf16,
            Arith::I32,
            Arith::I8,
        ] {
            let s = arith_source(a);
            assert!(s.contains(&format!(
                "void __launch_bounds__(1024) {}(",
                arith_kernel_name(a)
            )));
            assert!(s.contains(&format!("#define CHAINS {CHAINS}")));
            assert!(s.contains(&format!("#define UNROLL {UNROLL}")));
        }
        assert!(MEMORY_SOURCE.contains("void empty()"));
    }
}
