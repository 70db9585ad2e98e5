//! The narrow kernels: accesses narrower than a cache line (blocks of 1,
//! 2, 4, 8, 16 and 32 B), one instruction of the block's width each,
//! through volatile reads and writes. See the parent module's "Narrow
//! kernels".
//!
//! Its own file because its loops have a different shape from the wide
//! ones: one generic loop over an access unit (`Unit`, `Lanes`) instead of
//! unrolled vector blocks, and its own dispatch on the block's width.

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

    use crate::kernels::narrow::{Lanes, Unit};
    use crate::kernels::{SCALAR, WRITE_BITS};

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
