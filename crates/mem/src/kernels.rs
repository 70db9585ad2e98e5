//! The bandwidth kernels: one pass of `read`, `write`, `copy`, `scale`,
//! `add` or `triad` over a thread's arrays, sequentially or at random
//! block-aligned offsets, with runtime ISA dispatch.
//!
//! # Wide kernels (blocks of 64 B and more)
//!
//! Loops of aligned vector loads and stores: AVX-512 (`zmm`, 64 B: one
//! cache line per instruction), AVX2 + FMA (`ymm`, 32 B), or portable Rust
//! that the compiler vectorises for the baseline target (SSE2 on x86_64).
//! Loops are unrolled four vectors deep (eight accumulators for `read`) so
//! enough loads are in flight to cover L1 latency. With `nt` the stores are
//! non-temporal (`vmovntpd`: written to memory without reading the line
//! first), followed by one `sfence` per pass so the stores are globally
//! visible before the pass is over, as STREAM builds with streaming stores
//! do.
//!
//! # Narrow kernels (blocks below 64 B)
//!
//! One access is one load or store instruction of exactly the block's width
//! (1, 2, 4, 8 B scalars, 16 B SSE2, 32 B AVX), issued through volatile
//! pointer operations so the compiler can neither merge accesses into wider
//! ones nor drop them. This is what a program touching memory in units of
//! that size does, and shows why 1 B accesses are slow.
//!
//! # Values and verification
//!
//! `b[i] = i + 1`, `c[i] = i/2 + 2`, the scalar is 3, and the destination
//! starts at zero (`read` reads an array filled like `b`): every result
//! (`b`, `3b`, `b + c`, `b + 3c`) is a multiple of 1/2 far below 2^52,
//! exact in `f64` with or without a fused multiply-add, so [`verify`] can
//! compare bit for bit. No two pages hold the same bytes and none is all
//! zeros, so neither a hypervisor's page merging nor any zero-line shortcut
//! can serve the data from somewhere cheaper. `write` stores the byte 0x5A.

use crate::sys::Rng;

/// STREAM's scalar `q` (STREAM uses 3.0 too).
pub const SCALAR: f64 = 3.0;
/// The byte every `write` stores (as 0x5A5A5A5A5A5A5A5A in 8-byte units).
pub const WRITE_BYTE: u8 = 0x5A;
const WRITE_BITS: u64 = 0x5A5A_5A5A_5A5A_5A5A;

/// Which instruction set the wide kernels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F: 64 B vectors.
    Avx512,
    /// AVX2 and FMA: 32 B vectors.
    Avx2,
    /// Portable Rust, vectorised by the compiler for the baseline target.
    Scalar,
}

impl Isa {
    /// The widest set this CPU supports.
    pub fn best() -> Isa {
        [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .find(|i| i.available())
            .unwrap_or(Isa::Scalar)
    }

    /// True when the CPU (and this build's target) supports it.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512 | Isa::Avx2 => false,
            Isa::Scalar => true,
        }
    }

    /// Name as in the `isa` parameter.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Scalar => "scalar",
        }
    }

    /// Whether the wide kernels of this set can issue non-temporal stores.
    pub fn has_nt(self) -> bool {
        self != Isa::Scalar
    }
}

/// One bandwidth kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `sum += a[i]`.
    Read,
    /// `a[i] = const`.
    Write,
    /// `a[i] = b[i]` (STREAM Copy).
    Copy,
    /// `a[i] = q·b[i]` (STREAM Scale).
    Scale,
    /// `a[i] = b[i] + c[i]` (STREAM Add).
    Add,
    /// `a[i] = b[i] + q·c[i]` (STREAM Triad).
    Triad,
}

/// Values of the `op` parameter, in [`Op`] order.
pub const OPS: &[&str] = &["read", "write", "copy", "scale", "add", "triad"];

impl Op {
    /// Parses an `op` value.
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "read" => Op::Read,
            "write" => Op::Write,
            "copy" => Op::Copy,
            "scale" => Op::Scale,
            "add" => Op::Add,
            "triad" => Op::Triad,
            _ => return None,
        })
    }

    /// The kernel whose discriminant is `v` (`Triad` for anything above).
    pub const fn from_u8(v: u8) -> Op {
        match v {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Copy,
            3 => Op::Scale,
            4 => Op::Add,
            _ => Op::Triad,
        }
    }

    /// Arrays the kernel touches; STREAM counts each once per element, so
    /// bytes per pass = arrays × array length.
    pub fn arrays(self) -> usize {
        match self {
            Op::Read | Op::Write => 1,
            Op::Copy | Op::Scale => 2,
            Op::Add | Op::Triad => 3,
        }
    }

    /// Whether the kernel stores.
    pub fn stores(self) -> bool {
        self != Op::Read
    }

    /// Whether the kernel does `f64` arithmetic (so a block must hold whole
    /// doubles).
    pub fn arithmetic(self) -> bool {
        matches!(self, Op::Scale | Op::Add | Op::Triad)
    }
}

/// A thread's arrays: `a` is the destination (or the only array), `b` and
/// `c` the sources. Each holds the same number of bytes, starts 64-B
/// aligned, and unused ones are null.
#[derive(Debug, Clone, Copy)]
pub struct Arrays {
    /// Destination, or the array `read`/`write` use.
    pub a: *mut u8,
    /// First source.
    pub b: *mut u8,
    /// Second source.
    pub c: *mut u8,
    /// Bytes in each array (a multiple of 64 and of the block).
    pub len: usize,
}

// SAFETY: Arrays is a set of pointers into buffers owned by the worker that
// uses them; it is moved to that worker once and only used there.
unsafe impl Send for Arrays {}

/// Initial value of `b[i]` (and of the array `read` reads).
pub fn b_value(i: usize) -> f64 {
    i as f64 + 1.0
}

/// Initial value of `c[i]`.
pub fn c_value(i: usize) -> f64 {
    i as f64 * 0.5 + 2.0
}

/// Fills the arrays with their initial values. Called on the worker thread
/// that will use them, so their pages are first touched (and placed) there.
///
/// # Safety
/// Every non-null pointer in `arr` must be valid for writes of `arr.len`
/// bytes, 8-byte aligned, and not aliased elsewhere.
pub unsafe fn fill(op: Op, arr: &Arrays) {
    let n = arr.len / 8;
    let init = |p: *mut u8, f: &dyn Fn(usize) -> f64| {
        if p.is_null() {
            return;
        }
        // SAFETY: the caller guarantees p is valid, aligned and unaliased for
        // arr.len bytes = n doubles.
        let s = unsafe { std::slice::from_raw_parts_mut(p.cast::<f64>(), n) };
        for (i, x) in s.iter_mut().enumerate() {
            *x = f(i);
        }
    };
    if op == Op::Read {
        init(arr.a, &b_value);
    } else {
        init(arr.a, &|_| 0.0);
    }
    if op.arrays() >= 2 {
        init(arr.b, &b_value);
    }
    if op.arrays() >= 3 {
        init(arr.c, &c_value);
    }
}

/// How one pass visits the blocks.
#[derive(Debug, Clone, Copy)]
pub enum Order<'a> {
    /// Block 0, 1, 2, ...: the whole array front to back.
    Seq,
    /// The blocks listed, in this order (indices, not byte offsets).
    Random(&'a [u32]),
}

/// `reps` passes of `op` over `arr` in units of `block` bytes. Returns a
/// value that depends on every load of `read` (pass it to `black_box`).
/// The loop over passes is inside the kernel, so a batch of tiny (L1)
/// passes pays no per-pass dispatch; between passes the destination
/// pointer goes through `black_box`, so the compiler must redo every pass.
///
/// # Safety
/// `arr` must describe valid, 64-B aligned, unaliased arrays of `arr.len`
/// bytes for every array `op` uses; `block` must be valid for `op` (see
/// [`block_ok`]) and divide `arr.len`; random indices must be below
/// `arr.len / block`; `isa` must be available; `nt` only with a wide block
/// and an `isa` that [`Isa::has_nt`].
pub unsafe fn pass(
    isa: Isa,
    op: Op,
    nt: bool,
    arr: &Arrays,
    block: usize,
    order: Order<'_>,
    reps: u64,
) -> f64 {
    if block < 64 {
        let mut sum = 0.0;
        for _ in 0..reps {
            std::hint::black_box(arr.a);
            // SAFETY: forwarded from the caller.
            sum += unsafe { narrow::pass(op, arr, block, order) };
        }
        return sum;
    }
    let idx = match order {
        Order::Seq => None,
        Order::Random(idx) => Some(idx),
    };
    // Monomorphise on the kernel and the store kind, so each pass is one
    // straight loop with no per-block dispatch.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_macros))]
    macro_rules! each_op {
        ($m:ident, $nt:literal) => {
            match op {
                Op::Read => $m::pass::<$nt, { Op::Read as u8 }>(arr, block, idx, reps),
                Op::Write => $m::pass::<$nt, { Op::Write as u8 }>(arr, block, idx, reps),
                Op::Copy => $m::pass::<$nt, { Op::Copy as u8 }>(arr, block, idx, reps),
                Op::Scale => $m::pass::<$nt, { Op::Scale as u8 }>(arr, block, idx, reps),
                Op::Add => $m::pass::<$nt, { Op::Add as u8 }>(arr, block, idx, reps),
                Op::Triad => $m::pass::<$nt, { Op::Triad as u8 }>(arr, block, idx, reps),
            }
        };
    }
    // SAFETY: forwarded from the caller; the ISA is available.
    unsafe {
        match (isa, nt) {
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, false) => each_op!(avx512, false),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, true) => each_op!(avx512, true),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, false) => each_op!(avx2, false),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2, true) => each_op!(avx2, true),
            _ => portable::pass(op, arr, block, idx, reps),
        }
    }
}

/// Why `block` cannot be used with `op`, if it cannot: below 64 B a block
/// is one instruction's width (1, 2, 4, 8, 16 or 32 B; at least 8 for the
/// arithmetic kernels, which work on doubles), from 64 B on a whole number
/// of cache lines.
pub fn block_ok(op: Op, block: u64) -> Result<(), String> {
    if block >= 64 {
        if !block.is_multiple_of(64) {
            return Err(
                "blocks of 64 B or more must be whole cache lines (a multiple of 64 B)".into(),
            );
        }
        return Ok(());
    }
    if !block.is_power_of_two() {
        return Err(
            "blocks below 64 B must be 1, 2, 4, 8, 16 or 32 B (one load or store of that width)"
                .into(),
        );
    }
    if op.arithmetic() && block < 8 {
        return Err(format!(
            "op={} works on 8-byte doubles: use a block of at least 8 B",
            OPS[op as usize]
        ));
    }
    if block == 16 && !cfg!(target_arch = "x86_64") {
        return Err("16 B single accesses are implemented with SSE2, on x86_64 only".into());
    }
    if block == 32 && !narrow::has_32() {
        return Err("32 B single accesses need AVX (x86_64), which this CPU lacks".into());
    }
    Ok(())
}

/// Random block indices for one thread: a Fisher–Yates permutation of all
/// `blocks` when there are at most `cap`, otherwise `cap` uniform draws
/// (a pass then touches a random sample of the working set).
pub fn random_order(blocks: u64, cap: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    if blocks as usize <= cap {
        let mut v: Vec<u32> = (0..blocks as u32).collect();
        for i in (1..v.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    } else {
        (0..cap).map(|_| rng.below(blocks) as u32).collect()
    }
}

/// Checks the destination after the timed passes: every byte the kernel
/// wrote holds what it must (`write`: 0x5A; `copy`: `b`; `scale`: `3b`;
/// `add`: `b + c`; `triad`: `b + 3c`). `read` has nothing to check.
///
/// # Safety
/// As for [`pass`]: the arrays are valid for reads of `arr.len` bytes.
pub unsafe fn verify(op: Op, arr: &Arrays, block: usize, order: Order<'_>) -> Result<(), String> {
    if op == Op::Read {
        return Ok(());
    }
    let check = |off: usize, len: usize| -> Result<(), String> {
        // SAFETY: off + len <= arr.len (whole blocks inside the arrays), and
        // the arrays are valid for reads (caller).
        let (a, b, c) = unsafe {
            let s =
                |p: *mut u8| (!p.is_null()).then(|| std::slice::from_raw_parts(p.add(off), len));
            (s(arr.a).unwrap_or(&[]), s(arr.b), s(arr.c))
        };
        match (op, b, c) {
            (Op::Write, _, _) => match a.iter().position(|&x| x != WRITE_BYTE) {
                Some(p) => Err(format!(
                    "write: byte {} is {:#x}, not {WRITE_BYTE:#x}",
                    off + p,
                    a[p]
                )),
                None => Ok(()),
            },
            (Op::Copy, Some(b), _) => match a.iter().zip(b).position(|(x, y)| x != y) {
                Some(p) => Err(format!(
                    "copy: byte {} of the destination differs from the source",
                    off + p
                )),
                None => Ok(()),
            },
            (_, Some(b), c) => {
                let first = off / 8;
                for k in 0..len / 8 {
                    let i = first + k;
                    let got =
                        f64::from_le_bytes(a[k * 8..k * 8 + 8].try_into().unwrap_or_default());
                    let bi = f64::from_le_bytes(b[k * 8..k * 8 + 8].try_into().unwrap_or_default());
                    let want = match (op, c) {
                        (Op::Scale, _) => SCALAR * bi,
                        (Op::Add, Some(c)) => {
                            bi + f64::from_le_bytes(
                                c[k * 8..k * 8 + 8].try_into().unwrap_or_default(),
                            )
                        }
                        (Op::Triad, Some(c)) => {
                            bi + SCALAR
                                * f64::from_le_bytes(
                                    c[k * 8..k * 8 + 8].try_into().unwrap_or_default(),
                                )
                        }
                        _ => return Err(format!("{op:?}: missing source array")),
                    };
                    if got != want || bi != b_value(i) {
                        return Err(format!(
                            "{}: element {i} is {got}, expected {want}",
                            OPS[op as usize]
                        ));
                    }
                }
                Ok(())
            }
            _ => Err(format!("{op:?}: missing source array")),
        }
    };
    match order {
        Order::Seq => check(0, arr.len),
        Order::Random(idx) => idx
            .iter()
            .try_for_each(|&j| check(j as usize * block, block)),
    }
}

/// AVX-512 and AVX2 kernels share one body, written once as a macro over
/// the vector type and its intrinsics.
#[cfg(target_arch = "x86_64")]
macro_rules! wide_kernels {
    ($name:ident, $feat:literal, $V:ty, $lanes:expr, $load:ident, $store:ident,
     $stream:ident, $set1:ident, $zero:ident, $add:ident, $mul:ident, $fma:ident) => {
        pub(crate) mod $name {
            use std::arch::x86_64::*;

            use super::{Arrays, Op, SCALAR, WRITE_BITS};

            /// Doubles per vector.
            const L: usize = $lanes;

            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn st<const NT: bool>(p: *mut f64, v: $V) {
                if NT {
                    // SAFETY: the caller passes a vector-aligned pointer
                    // into its destination array.
                    unsafe { $stream(p, v) }
                } else {
                    // SAFETY: as above.
                    unsafe { $store(p, v) }
                }
            }

            /// Sum of `n` doubles from `p` (`n` a multiple of `L`).
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn read(p: *const f64, n: usize) -> $V {
                let mut acc = [$zero(); 8];
                let mut i = 0;
                while i + 8 * L <= n {
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: i + 8L <= n, so i + kL + L <= n: inside
                        // the array; p is vector-aligned and i a multiple
                        // of L.
                        *a = $add(*a, unsafe { $load(p.add(i + k * L)) });
                    }
                    i += 8 * L;
                }
                while i < n {
                    // SAFETY: i < n and n is a multiple of L.
                    acc[0] = $add(acc[0], unsafe { $load(p.add(i)) });
                    i += L;
                }
                let s01 = $add($add(acc[0], acc[1]), $add(acc[2], acc[3]));
                let s23 = $add($add(acc[4], acc[5]), $add(acc[6], acc[7]));
                $add(s01, s23)
            }

            /// Four vectors at a time, then one at a time; `body(i)`
            /// handles the vector at element `i`.
            macro_rules! each_vector {
                                                        ($n:expr, |$i:ident| $body:block) => {{
                                                            let n = $n;
                                                            let mut j = 0;
                                                            while j + 4 * L <= n {
                                                                let $i = j;
                                                                $body
                                                                let $i = j + L;
                                                                $body
                                                                let $i = j + 2 * L;
                                                                $body
                                                                let $i = j + 3 * L;
                                                                $body
                                                                j += 4 * L;
                                                            }
                                                            while j < n {
                                                                let $i = j;
                                                                $body
                                                                j += L;
                                                            }
                                                        }};
                                                    }

            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn block<const NT: bool, const OP: u8>(
                a: *mut f64,
                b: *const f64,
                c: *const f64,
                n: usize,
                acc: &mut $V,
            ) {
                let q = $set1(SCALAR);
                // black_box: with a value the compiler knows to be one
                // repeated byte, `write` would become a memset call, whose
                // store policy (non-temporal above some size) is not the one
                // asked for.
                let v = $set1(f64::from_bits(std::hint::black_box(WRITE_BITS)));
                // SAFETY: every vector the loops visit starts at element i
                // with i + L <= n; the arrays `op` uses hold n doubles from
                // these vector-aligned pointers (caller), so every load and
                // store is in bounds and aligned.
                unsafe {
                    match Op::from_u8(OP) {
                        Op::Read => *acc = $add(*acc, read(a, n)),
                        Op::Write => each_vector!(n, |i| { st::<NT>(a.add(i), v) }),
                        Op::Copy => each_vector!(n, |i| { st::<NT>(a.add(i), $load(b.add(i))) }),
                        Op::Scale => {
                            each_vector!(n, |i| { st::<NT>(a.add(i), $mul(q, $load(b.add(i)))) })
                        }
                        Op::Add => each_vector!(n, |i| {
                            st::<NT>(a.add(i), $add($load(b.add(i)), $load(c.add(i))))
                        }),
                        Op::Triad => each_vector!(n, |i| {
                            st::<NT>(a.add(i), $fma(q, $load(c.add(i)), $load(b.add(i))))
                        }),
                    }
                }
            }

            /// One pass; see [`super::pass`].
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn pass<const NT: bool, const OP: u8>(
                arr: &Arrays,
                block_bytes: usize,
                idx: Option<&[u32]>,
                reps: u64,
            ) -> f64 {
                let (b, c) = (
                    arr.b.cast::<f64>().cast_const(),
                    arr.c.cast::<f64>().cast_const(),
                );
                let mut acc = $zero();
                for _ in 0..reps {
                    let a = std::hint::black_box(arr.a).cast::<f64>();
                    match idx {
                        // SAFETY: the whole arrays, as the caller guarantees.
                        None => unsafe { block::<NT, OP>(a, b, c, arr.len / 8, &mut acc) },
                        Some(idx) => {
                            let n = block_bytes / 8;
                            for &j in idx {
                                let o = j as usize * n;
                                // SAFETY: j < blocks, so [o, o + n) is inside
                                // every array; o is a multiple of n, itself a
                                // multiple of 8 doubles (64 B), so aligned.
                                // Unused source pointers are never dereferenced
                                // (wrapping_add keeps null arithmetic defined).
                                unsafe {
                                    block::<NT, OP>(
                                        a.wrapping_add(o),
                                        b.wrapping_add(o),
                                        c.wrapping_add(o),
                                        n,
                                        &mut acc,
                                    )
                                }
                            }
                        }
                    }
                }
                if NT {
                    _mm_sfence();
                }
                let mut lanes = [0.0f64; L];
                // SAFETY: `lanes` holds exactly one vector of doubles.
                unsafe { store_lanes(lanes.as_mut_ptr(), acc) };
                lanes.iter().sum()
            }

            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn store_lanes(p: *mut f64, v: $V) {
                // SAFETY: p points to L writable doubles (caller); the
                // unaligned store has no alignment requirement.
                unsafe { std::ptr::write_unaligned(p.cast::<$V>(), v) }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
wide_kernels!(
    avx512,
    "avx512f",
    __m512d,
    8,
    _mm512_load_pd,
    _mm512_store_pd,
    _mm512_stream_pd,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_add_pd,
    _mm512_mul_pd,
    _mm512_fmadd_pd
);

#[cfg(target_arch = "x86_64")]
wide_kernels!(
    avx2,
    "avx2,fma",
    __m256d,
    4,
    _mm256_load_pd,
    _mm256_store_pd,
    _mm256_stream_pd,
    _mm256_set1_pd,
    _mm256_setzero_pd,
    _mm256_add_pd,
    _mm256_mul_pd,
    _mm256_fmadd_pd
);

/// Plain Rust, vectorised by the compiler for the build's baseline target
/// (SSE2 on x86_64, NEON on aarch64). No non-temporal stores.
mod portable {
    use super::{Arrays, Op, SCALAR, WRITE_BITS};

    /// One block of `n` doubles. The `write` value goes through `black_box`
    /// and `copy` adds `0.0`, so the compiler cannot turn either loop into a
    /// `memset`/`memcpy` call whose store policy (non-temporal above some
    /// size) would differ from the other kernels'.
    ///
    /// # Safety
    /// The arrays `op` uses hold `n` valid, unaliased doubles from these
    /// pointers.
    #[inline]
    unsafe fn block(op: Op, a: *mut f64, b: *const f64, c: *const f64, n: usize) -> f64 {
        // SAFETY: the caller guarantees n valid doubles behind every pointer
        // `op` uses, and `a` is not aliased by `b` or `c`.
        unsafe {
            match op {
                Op::Read => {
                    let s = std::slice::from_raw_parts(a, n);
                    let mut acc = [0.0f64; 8];
                    let mut chunks = s.chunks_exact(8);
                    for ch in &mut chunks {
                        for k in 0..8 {
                            acc[k] += ch[k];
                        }
                    }
                    acc.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
                }
                Op::Write => {
                    let s = std::slice::from_raw_parts_mut(a, n);
                    let v = f64::from_bits(std::hint::black_box(WRITE_BITS));
                    for x in s {
                        *x = v;
                    }
                    0.0
                }
                Op::Copy => {
                    let (d, s) = (
                        std::slice::from_raw_parts_mut(a, n),
                        std::slice::from_raw_parts(b, n),
                    );
                    for (x, y) in d.iter_mut().zip(s) {
                        // `+ 0.0` is not an identity for -0.0, so the
                        // compiler keeps the loop instead of calling memcpy;
                        // the values here are positive, so it copies exactly.
                        *x = *y + 0.0;
                    }
                    0.0
                }
                Op::Scale => {
                    let (d, s) = (
                        std::slice::from_raw_parts_mut(a, n),
                        std::slice::from_raw_parts(b, n),
                    );
                    for (x, y) in d.iter_mut().zip(s) {
                        *x = SCALAR * *y;
                    }
                    0.0
                }
                Op::Add => {
                    let d = std::slice::from_raw_parts_mut(a, n);
                    let (s1, s2) = (
                        std::slice::from_raw_parts(b, n),
                        std::slice::from_raw_parts(c, n),
                    );
                    for ((x, y), z) in d.iter_mut().zip(s1).zip(s2) {
                        *x = *y + *z;
                    }
                    0.0
                }
                Op::Triad => {
                    let d = std::slice::from_raw_parts_mut(a, n);
                    let (s1, s2) = (
                        std::slice::from_raw_parts(b, n),
                        std::slice::from_raw_parts(c, n),
                    );
                    for ((x, y), z) in d.iter_mut().zip(s1).zip(s2) {
                        *x = *y + SCALAR * *z;
                    }
                    0.0
                }
            }
        }
    }

    /// One pass; see [`super::pass`].
    ///
    /// # Safety
    /// As for [`super::pass`].
    pub(crate) unsafe fn pass(
        op: Op,
        arr: &Arrays,
        block_bytes: usize,
        idx: Option<&[u32]>,
        reps: u64,
    ) -> f64 {
        let (b, c) = (
            arr.b.cast::<f64>().cast_const(),
            arr.c.cast::<f64>().cast_const(),
        );
        let mut sum = 0.0;
        for _ in 0..reps {
            let a = std::hint::black_box(arr.a).cast::<f64>();
            match idx {
                // SAFETY: the whole arrays, valid per the caller.
                None => sum += unsafe { block(op, a, b, c, arr.len / 8) },
                Some(idx) => {
                    let n = block_bytes / 8;
                    for &j in idx {
                        let o = j as usize * n;
                        // SAFETY: j < blocks, so [o, o + n) is inside each array.
                        sum += unsafe {
                            block(
                                op,
                                a.wrapping_add(o),
                                b.wrapping_add(o),
                                c.wrapping_add(o),
                                n,
                            )
                        };
                    }
                }
            }
        }
        sum
    }
}

/// Accesses narrower than a cache line: one instruction of the block's
/// width each, through volatile reads and writes.
mod narrow {
    use std::ptr::{read_volatile, write_volatile};

    use super::{Arrays, Op, Order, SCALAR, WRITE_BITS};

    /// Whether 32 B accesses (AVX) are possible here.
    pub(super) fn has_32() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// A unit of access: a plain value of the block's width.
    trait Unit: Copy {
        /// The value `write` stores.
        fn pattern() -> Self;
        /// Folds a loaded value into a checksum, cheaply.
        fn fold(acc: u64, v: Self) -> u64;
    }

    macro_rules! int_unit {
        ($($t:ty),*) => {$(
            impl Unit for $t {
                #[inline(always)]
                fn pattern() -> Self {
                    WRITE_BITS as $t
                }
                #[inline(always)]
                fn fold(acc: u64, v: Self) -> u64 {
                    acc ^ v as u64
                }
            }
        )*};
    }
    int_unit!(u8, u16, u32, u64);

    /// Doubles of one access, for the arithmetic kernels.
    trait Lanes: Copy {
        /// `q·x`.
        ///
        /// # Safety
        /// Only call from code compiled with the instruction set `Self`
        /// needs, on a CPU that has it.
        unsafe fn scale(x: Self) -> Self;
        /// `x + y`.
        ///
        /// # Safety
        /// As for `scale`.
        unsafe fn add(x: Self, y: Self) -> Self;
        /// `x + q·y`.
        ///
        /// # Safety
        /// As for `scale`.
        unsafe fn triad(x: Self, y: Self) -> Self;
    }

    impl Lanes for f64 {
        #[inline(always)]
        unsafe fn scale(x: f64) -> f64 {
            SCALAR * x
        }
        #[inline(always)]
        unsafe fn add(x: f64, y: f64) -> f64 {
            x + y
        }
        #[inline(always)]
        unsafe fn triad(x: f64, y: f64) -> f64 {
            x + SCALAR * y
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::*;

        use super::super::{SCALAR, WRITE_BITS};
        use super::{Lanes, Unit};

        impl Unit for __m128i {
            #[inline(always)]
            fn pattern() -> Self {
                // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64
                // CPU has it.
                unsafe { _mm_set1_epi64x(WRITE_BITS as i64) }
            }
            #[inline(always)]
            fn fold(acc: u64, v: Self) -> u64 {
                // SAFETY: SSE2 is part of the x86_64 baseline.
                acc ^ unsafe { _mm_cvtsi128_si64(v) } as u64
            }
        }

        impl Unit for __m256i {
            #[inline(always)]
            fn pattern() -> Self {
                // SAFETY: only instantiated inside `#[target_feature(enable =
                // "avx")]` functions, called after AVX was detected.
                unsafe { _mm256_set1_epi64x(WRITE_BITS as i64) }
            }
            #[inline(always)]
            fn fold(acc: u64, v: Self) -> u64 {
                // SAFETY: as above.
                acc ^ unsafe { _mm256_extract_epi64::<0>(v) } as u64
            }
        }

        impl Lanes for __m128d {
            #[inline(always)]
            unsafe fn scale(x: Self) -> Self {
                // SAFETY: SSE2 is part of the x86_64 baseline.
                unsafe { _mm_mul_pd(_mm_set1_pd(SCALAR), x) }
            }
            #[inline(always)]
            unsafe fn add(x: Self, y: Self) -> Self {
                // SAFETY: SSE2 is part of the x86_64 baseline.
                unsafe { _mm_add_pd(x, y) }
            }
            #[inline(always)]
            unsafe fn triad(x: Self, y: Self) -> Self {
                // SAFETY: SSE2 is part of the x86_64 baseline.
                unsafe { _mm_add_pd(x, _mm_mul_pd(_mm_set1_pd(SCALAR), y)) }
            }
        }

        impl Lanes for __m256d {
            #[inline(always)]
            unsafe fn scale(x: Self) -> Self {
                // SAFETY: the caller runs with AVX enabled (trait contract).
                unsafe { _mm256_mul_pd(_mm256_set1_pd(SCALAR), x) }
            }
            #[inline(always)]
            unsafe fn add(x: Self, y: Self) -> Self {
                // SAFETY: as above.
                unsafe { _mm256_add_pd(x, y) }
            }
            #[inline(always)]
            unsafe fn triad(x: Self, y: Self) -> Self {
                // SAFETY: as above.
                unsafe { _mm256_add_pd(x, _mm256_mul_pd(_mm256_set1_pd(SCALAR), y)) }
            }
        }
    }

    /// Visits block indices in order: all of them, or the random list.
    #[inline(always)]
    fn each(order: Order<'_>, blocks: usize, mut f: impl FnMut(usize)) {
        match order {
            Order::Seq => (0..blocks).for_each(f),
            Order::Random(idx) => idx.iter().for_each(|&j| f(j as usize)),
        }
    }

    /// Read, write or copy in units of `T`.
    ///
    /// # Safety
    /// As for [`super::pass`], with `size_of::<T>()` the block.
    #[inline(always)]
    unsafe fn move_units<T: Unit>(op: Op, arr: &Arrays, order: Order<'_>) -> u64 {
        let (a, b) = (arr.a.cast::<T>(), arr.b.cast::<T>());
        let blocks = arr.len / size_of::<T>();
        let mut acc = 0u64;
        match op {
            Op::Read => each(order, blocks, |i| {
                // SAFETY: i < blocks, so the unit is inside the array; the
                // array is 64-B aligned, so the unit is naturally aligned.
                let v = unsafe { read_volatile(a.add(i)) };
                acc = T::fold(acc, v);
            }),
            Op::Write => {
                let v = T::pattern();
                each(order, blocks, |i| {
                    // SAFETY: as for Read.
                    unsafe { write_volatile(a.add(i), v) }
                })
            }
            _ => each(order, blocks, |i| {
                // SAFETY: as for Read, in both arrays.
                unsafe { write_volatile(a.add(i), read_volatile(b.add(i))) }
            }),
        }
        acc
    }

    /// Scale, add or triad in units of `T` (whole doubles).
    ///
    /// # Safety
    /// As for [`super::pass`]; `T`'s instruction set is enabled here.
    #[inline(always)]
    unsafe fn arith_units<T: Lanes>(op: Op, arr: &Arrays, order: Order<'_>) {
        let (a, b, c) = (arr.a.cast::<T>(), arr.b.cast::<T>(), arr.c.cast::<T>());
        let blocks = arr.len / size_of::<T>();
        match op {
            Op::Scale => each(order, blocks, |i| {
                // SAFETY: i < blocks, so each unit is inside its (64-B
                // aligned) array; T's instructions are enabled (caller).
                unsafe { write_volatile(a.add(i), T::scale(read_volatile(b.add(i)))) }
            }),
            Op::Add => each(order, blocks, |i| {
                // SAFETY: as for Scale.
                unsafe {
                    let (x, y) = (read_volatile(b.add(i)), read_volatile(c.add(i)));
                    write_volatile(a.add(i), T::add(x, y))
                }
            }),
            _ => each(order, blocks, |i| {
                // SAFETY: as for Scale.
                unsafe {
                    let (x, y) = (read_volatile(b.add(i)), read_volatile(c.add(i)));
                    write_volatile(a.add(i), T::triad(x, y))
                }
            }),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    unsafe fn pass32(op: Op, arr: &Arrays, order: Order<'_>) -> u64 {
        use std::arch::x86_64::{__m256d, __m256i};
        // SAFETY: forwarded from `pass`; AVX is enabled in this function.
        unsafe {
            if op.arithmetic() {
                arith_units::<__m256d>(op, arr, order);
                0
            } else {
                move_units::<__m256i>(op, arr, order)
            }
        }
    }

    /// One pass with blocks of `block` (< 64) bytes.
    ///
    /// # Safety
    /// As for [`super::pass`].
    pub(super) unsafe fn pass(op: Op, arr: &Arrays, block: usize, order: Order<'_>) -> f64 {
        // SAFETY: forwarded from the caller, who checked the block with
        // `block_ok` (so 32 B only with AVX, arithmetic only from 8 B).
        let r = unsafe {
            match (block, op.arithmetic()) {
                (1, false) => move_units::<u8>(op, arr, order),
                (2, false) => move_units::<u16>(op, arr, order),
                (4, false) => move_units::<u32>(op, arr, order),
                (8, false) => move_units::<u64>(op, arr, order),
                (8, true) => {
                    arith_units::<f64>(op, arr, order);
                    0
                }
                #[cfg(target_arch = "x86_64")]
                (16, false) => move_units::<std::arch::x86_64::__m128i>(op, arr, order),
                #[cfg(target_arch = "x86_64")]
                (16, true) => {
                    arith_units::<std::arch::x86_64::__m128d>(op, arr, order);
                    0
                }
                #[cfg(target_arch = "x86_64")]
                (32, _) => pass32(op, arr, order),
                // block_ok admits no other width (16 and 32 B only on
                // x86_64); treat anything else as unreachable-by-contract.
                _ => 0,
            }
        };
        r as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::{Buf, Pages};

    struct Set {
        _bufs: Vec<Buf>,
        arr: Arrays,
    }

    fn arrays(op: Op, len: usize) -> Set {
        let bufs: Vec<Buf> = (0..3)
            .map(|_| Buf::new(len, Pages::Small).unwrap())
            .collect();
        let p = |k: usize| {
            if k < op.arrays() {
                bufs[k].as_ptr()
            } else {
                std::ptr::null_mut()
            }
        };
        let arr = Arrays {
            a: p(0),
            b: p(1),
            c: p(2),
            len,
        };
        // SAFETY: each buffer holds `len` bytes, page-aligned.
        unsafe { fill(op, &arr) };
        Set { arr, _bufs: bufs }
    }

    fn isas() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Scalar]
            .into_iter()
            .filter(|i| i.available())
            .collect()
    }

    #[test]
    fn every_kernel_computes_what_stream_defines() {
        let len = 64 * 1024 + 4096;
        for isa in isas() {
            for &name in OPS {
                let op = Op::parse(name).unwrap();
                for nt in [false, true] {
                    if nt && !isa.has_nt() {
                        continue;
                    }
                    for block in [1usize, 2, 4, 8, 16, 32, 64, 256, 4096] {
                        if block_ok(op, block as u64).is_err() || (nt && block < 64) {
                            continue;
                        }
                        let what = format!("{isa:?} {name} nt={nt} block={block}");
                        let s = arrays(op, len);
                        let order_v = random_order((len / block) as u64, 1 << 20, 1);
                        for order in [Order::Seq, Order::Random(&order_v)] {
                            // SAFETY: arrays of `len` bytes, block divides len,
                            // indices below len / block.
                            let sum = unsafe { pass(isa, op, nt, &s.arr, block, order, 2) };
                            // SAFETY: as above.
                            unsafe { verify(op, &s.arr, block, order) }
                                .unwrap_or_else(|e| panic!("{what}: {e}"));
                            if op == Op::Read && block >= 64 {
                                let n = block / 8;
                                let per_pass: f64 = match order {
                                    Order::Seq => (0..len / 8).map(b_value).sum(),
                                    Order::Random(idx) => idx
                                        .iter()
                                        .flat_map(|&j| {
                                            (j as usize * n..(j as usize + 1) * n).map(b_value)
                                        })
                                        .sum(),
                                };
                                assert_eq!(
                                    sum,
                                    2.0 * per_pass,
                                    "{what}: read must load every element"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn read_sums_every_element() {
        let len = 8192;
        let s = arrays(Op::Copy, len);
        let n = len / 8;
        // Read the `b` array through `a`'s slot.
        let arr = Arrays {
            a: s.arr.b,
            b: std::ptr::null_mut(),
            c: std::ptr::null_mut(),
            len,
        };
        let want: f64 = (0..n).map(b_value).sum();
        for isa in isas() {
            // SAFETY: a valid array of len bytes.
            let got = unsafe { pass(isa, Op::Read, false, &arr, 64, Order::Seq, 1) };
            assert_eq!(got, want, "{isa:?}");
        }
    }

    #[test]
    fn verification_catches_a_wrong_destination() {
        let len = 4096;
        for (op, block) in [(Op::Copy, 64usize), (Op::Triad, 64), (Op::Write, 1)] {
            let s = arrays(op, len);
            // SAFETY: valid arrays; nothing ran, so `a` is still zero.
            let e = unsafe { verify(op, &s.arr, block, Order::Seq) }.unwrap_err();
            assert!(e.contains(OPS[op as usize]), "{e}");
        }
    }

    #[test]
    fn blocks_are_checked_per_kernel() {
        assert!(block_ok(Op::Read, 1).is_ok());
        assert!(block_ok(Op::Copy, 2).is_ok());
        assert!(block_ok(Op::Triad, 4).unwrap_err().contains("at least 8"));
        assert!(block_ok(Op::Read, 3).unwrap_err().contains("1, 2, 4"));
        assert!(
            block_ok(Op::Read, 100)
                .unwrap_err()
                .contains("multiple of 64")
        );
        assert!(block_ok(Op::Triad, 10 << 20).is_ok());
    }

    #[test]
    fn random_orders_are_permutations_or_samples() {
        let mut p = random_order(1000, 4096, 3);
        assert_ne!(p[..10], (0..10).collect::<Vec<u32>>()[..], "shuffled");
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<u32>>());
        let s = random_order(1 << 30, 1000, 3);
        assert_eq!(s.len(), 1000);
        assert!(s.iter().all(|&x| x < 1 << 30));
    }
}
