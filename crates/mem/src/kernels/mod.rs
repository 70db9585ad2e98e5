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
//!
//! # Files
//!
//! This module holds the public API ([`pass`], [`block_ok`],
//! [`random_order`], and the [`Isa`], [`Op`], [`Arrays`] and [`Order`]
//! types, defined in `types`) and the dispatch from a `(isa, op, nt,
//! block)` choice to one kernel. The kernels themselves live one family
//! per file, split where the code already was separate (each family was
//! its own module or macro, sharing nothing but the types and values
//! below them):
//!
//! - `types`: the types above, plain data that every file here reads;
//! - `values`: what the kernels compute — the constants, the initial array
//!   values, [`fill`] and [`verify`];
//! - `wide`: the AVX-512 and AVX2 loops (x86_64 only);
//! - `portable`: the plain-Rust loops for blocks of 64 B and more;
//! - `narrow`: the single-instruction accesses for blocks below 64 B.

mod narrow;
mod portable;
mod types;
mod values;
#[cfg(target_arch = "x86_64")]
mod wide;

use crate::sys::Rng;

pub use types::{Arrays, Isa, IsaChoice, Op, Order};
pub use values::{fill, verify};
// The kernel modules import these two and the types from here (`super::`),
// as they did when all of this was one file.
use values::{SCALAR, WRITE_BITS};
#[cfg(target_arch = "x86_64")]
use wide::{avx2, avx512};

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
pub fn block_ok(op: Op, block: u64) -> Result<(), benchsuite_core::ValueError> {
    block_ok_text(op, block).map_err(Into::into)
}

fn block_ok_text(op: Op, block: u64) -> Result<(), String> {
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
            "op={op} works on 8-byte doubles: use a block of at least 8 B"
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

#[cfg(test)]
mod tests {
    use benchsuite_core::Choice;

    use super::values::b_value;
    use super::*;
    use crate::buf::{Buf, Pages};

    /// A thread's arrays for `op`, filled, with the buffers that hold them
    /// (also used by the tests in `values`).
    pub(super) struct Set {
        _bufs: Vec<Buf>,
        pub(super) arr: Arrays,
    }

    pub(super) fn arrays(op: Op, len: usize) -> Set {
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
            for &op in Op::ALL {
                let name = op.name();
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
