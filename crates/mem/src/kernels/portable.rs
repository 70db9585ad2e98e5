//! The portable wide kernels: plain Rust, vectorised by the compiler for
//! the build's baseline target (SSE2 on x86_64, NEON on aarch64), for
//! blocks of 64 B and more. No non-temporal stores.
//!
//! Its own file because it is the fallback for every target and every CPU
//! (`isa=scalar`, or no AVX): no intrinsics and no `#[target_feature]`,
//! only slices and `black_box`.

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
