//! The wide kernels for x86_64: AVX-512 (`avx512`) and AVX2 + FMA
//! (`avx2`), one body written once as the `wide_kernels!` macro over the
//! vector type and its intrinsics, for blocks of 64 B and more. See the
//! parent module's "Wide kernels".
//!
//! Its own file because it is the one family built from intrinsics under
//! `#[target_feature]`: everything in it is x86_64 only and reached only
//! through the dispatch in [`super::pass`] after the ISA was detected.

// The generated modules import these through `super::`.
use super::{Arrays, Op, SCALAR, WRITE_BITS};

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

            /// One pass; see [`super::super::pass`].
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
