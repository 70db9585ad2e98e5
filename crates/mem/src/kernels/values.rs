//! What the kernels compute and how a pass is checked: STREAM's scalar,
//! the `write` pattern, the arrays' initial values, [`fill`] and
//! [`verify`]. See the parent module's "Values and verification".
//!
//! Its own file because it is the contract every kernel family meets and
//! the only code here that is not timed: the kernels read these constants,
//! and nothing in this file runs inside a pass.

use benchsuite_core::BenchError;

use super::{Arrays, Op, Order};

/// STREAM's scalar `q` (STREAM uses 3.0 too).
pub const SCALAR: f64 = 3.0;
/// The byte every `write` stores (as 0x5A5A5A5A5A5A5A5A in 8-byte units).
pub const WRITE_BYTE: u8 = 0x5A;
pub(super) const WRITE_BITS: u64 = 0x5A5A_5A5A_5A5A_5A5A;

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

/// Checks the destination after the timed passes: every byte the kernel
/// wrote holds what it must (`write`: 0x5A; `copy`: `b`; `scale`: `3b`;
/// `add`: `b + c`; `triad`: `b + 3c`). `read` has nothing to check.
/// A mismatch is a [`BenchError::Verify`] naming the first wrong element.
///
/// # Safety
/// As for [`pass`](super::pass): the arrays are valid for reads of `arr.len` bytes.
pub unsafe fn verify(
    op: Op,
    arr: &Arrays,
    block: usize,
    order: Order<'_>,
) -> Result<(), BenchError> {
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
                        return Err(format!("{op}: element {i} is {got}, expected {want}"));
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
    .map_err(BenchError::Verify)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::arrays;
    use benchsuite_core::Choice;

    #[test]
    fn verification_catches_a_wrong_destination() {
        let len = 4096;
        for (op, block) in [(Op::Copy, 64usize), (Op::Triad, 64), (Op::Write, 1)] {
            let s = arrays(op, len);
            // SAFETY: valid arrays; nothing ran, so `a` is still zero.
            let e = unsafe { verify(op, &s.arr, block, Order::Seq) }.unwrap_err();
            assert!(matches!(e, BenchError::Verify(_)), "{e:?}");
            assert!(e.to_string().contains(op.name()), "{e}");
        }
    }
}
