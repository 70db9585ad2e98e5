//! `mem.bandwidth`'s parameters: the `pattern` and `nt` choices, one
//! point's parameters parsed ([`Params`]) and how its working set is laid
//! out ([`Layout`]), with the sizes they are bounded by. Plain data below
//! the benchmark (`mod.rs`) and its case (`case.rs`), which both read it.

use benchsuite_core::units::format_size;
use benchsuite_core::{BenchError, Point};

use crate::kernels::{Isa, IsaChoice, Op};

benchsuite_core::choice_enum! {
    /// The `pattern` parameter.
    pub(super) enum Pattern {
        /// Blocks front to back.
        Seq = "seq",
        /// Blocks at random block-aligned offsets.
        Random = "random",
    }
}

benchsuite_core::choice_enum! {
    /// The `nt` parameter: non-temporal stores.
    pub(super) enum Nt {
        /// On where the working set is DRAM-bound (see [`Nt::forced`]).
        Auto = "auto",
        /// Always.
        On = "on",
        /// Never.
        Off = "off",
    }
}

impl Nt {
    /// The store policy asked for; `None` for `auto`.
    pub(super) fn forced(self) -> Option<bool> {
        match self {
            Nt::Auto => None,
            Nt::On => Some(true),
            Nt::Off => Some(false),
        }
    }

    /// The value a record shows for the policy that ran.
    pub(super) fn of(nt: bool) -> Nt {
        if nt { Nt::On } else { Nt::Off }
    }
}

/// Most random block indices precomputed per thread (16 MiB of `u32`).
/// Working sets with more blocks are sampled: a pass visits this many
/// uniformly drawn blocks.
pub const RANDOM_TABLE_CAP: usize = 1 << 22;

/// Largest `size` accepted (per thread).
pub(super) const MAX_SIZE: u64 = 1 << 40;

/// Distance between a thread's arrays beyond a whole number of pages, so
/// `a[i]`, `b[i]` and `c[i]` never share their low 12 address bits (which
/// would make loads wait on unrelated stores: 4K aliasing).
pub(super) const SKEW: usize = 5 * 64;

/// The parameters of one point, parsed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Params {
    pub(super) op: Op,
    pub(super) random: bool,
    pub(super) block: u64,
    /// Per thread; 0 = auto.
    pub(super) size: u64,
    pub(super) threads: usize,
    pub(super) nt: Option<bool>,
    pub(super) isa: Option<Isa>,
    pub(super) huge: bool,
}

impl Params {
    pub(super) fn parse(point: &Point) -> Result<Params, BenchError> {
        Ok(Params {
            op: point.choice("op")?,
            random: point.choice::<Pattern>("pattern")? == Pattern::Random,
            block: point.u64("block")?,
            size: point.u64("size")?,
            threads: point.u64("threads")? as usize,
            nt: point.choice::<Nt>("nt")?.forced(),
            isa: point.choice::<IsaChoice>("isa")?.isa(),
            huge: point.bool("hugepages")?,
        })
    }
}

/// How a working set of `size` bytes is laid out for a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    /// Bytes in each array: whole blocks and whole cache lines.
    pub(super) array: u64,
    /// Blocks per array.
    pub(super) blocks: u64,
    /// Blocks one random pass visits (all of them, or the table cap).
    pub(super) random_len: u64,
}

impl Layout {
    pub(super) fn new(p: &Params, size: u64) -> Result<Layout, String> {
        let unit = p.block.max(64);
        let arrays = p.op.arrays() as u64;
        let array = size / arrays / unit * unit;
        if array == 0 {
            return Err(format!(
                "size {} cannot hold one block of {} in each of the {arrays} arrays op={} uses (arrays are whole blocks of at least 64 B): use size >= {}",
                format_size(size),
                format_size(p.block),
                p.op,
                format_size(unit * arrays)
            ));
        }
        let blocks = array / p.block;
        if p.random && blocks > u32::MAX as u64 + 1 {
            return Err(format!(
                "pattern=random indexes at most 2^32 blocks per array, and size {} / block {} makes {blocks}: use a larger block",
                format_size(size),
                format_size(p.block)
            ));
        }
        Ok(Layout {
            array,
            blocks,
            random_len: blocks.min(RANDOM_TABLE_CAP as u64),
        })
    }

    /// Bytes one thread maps: arrays (page-rounded and skewed) and the
    /// random table.
    pub(super) fn footprint(&self, p: &Params) -> u64 {
        let stride = self.array.next_multiple_of(4096) + SKEW as u64;
        let table = if p.random { self.random_len * 4 } else { 0 };
        stride * p.op.arrays() as u64 + table
    }

    /// Accesses and STREAM-counted bytes of one pass.
    pub(super) fn per_pass(&self, p: &Params) -> (u64, u64) {
        let accesses = if p.random {
            self.random_len
        } else {
            self.blocks
        };
        (accesses, accesses * p.block * p.op.arrays() as u64)
    }
}
