//! The kernels' types: the instruction set ([`Isa`], the `isa`
//! parameter [`IsaChoice`]), the operation ([`Op`]), a thread's arrays
//! ([`Arrays`]) and the order of a pass ([`Order`]). Plain data below the
//! dispatch in `mod.rs` and the kernel families it dispatches to, which
//! all read them.

use benchsuite_core::Choice;

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
    /// What `isa=auto` runs on `host`: the family that streams fastest
    /// there. That is the widest set the CPU has, except where its 512-bit
    /// operations run on 256-bit data paths (AMD Zen 4): there the AVX-512
    /// kernels' stores stream slower than the same code with 32 B vectors
    /// (measured on an EPYC Zen 4 guest, 1 GiB, regular stores, 3 rounds:
    /// copy 19.6–20.8 vs 27.2–28.8 GB/s, scale 20 vs 28–29, triad 24–29 vs
    /// 31–33; non-temporal triad 32–36 vs 37–40; reads alike), so AVX2 runs.
    /// Zen 5 is left at AVX-512: its server parts have 512-bit paths and
    /// its 256-bit parts were not measured.
    pub fn auto(host: &benchsuite_core::Host) -> Isa {
        let best = Isa::best();
        if best == Isa::Avx512 && Isa::Avx2.available() && Isa::double_pumped(host) {
            Isa::Avx2
        } else {
            best
        }
    }

    /// Whether `host`'s 512-bit operations run on 256-bit data paths.
    pub fn double_pumped(host: &benchsuite_core::Host) -> bool {
        host.cpu.microarchitecture.as_deref() == Some("Zen 4")
    }

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
        IsaChoice::from(self).name()
    }

    /// Whether the wide kernels of this set can issue non-temporal stores.
    pub fn has_nt(self) -> bool {
        self != Isa::Scalar
    }
}

benchsuite_core::choice_enum! {
    /// The `isa` parameter: an instruction set, or the widest available.
    pub enum IsaChoice {
        /// The widest set this CPU supports ([`Isa::best`]).
        Auto = "auto",
        /// [`Isa::Avx512`].
        Avx512 = "avx512",
        /// [`Isa::Avx2`].
        Avx2 = "avx2",
        /// [`Isa::Scalar`].
        Scalar = "scalar",
    }
}

impl IsaChoice {
    /// The set asked for; `None` for `auto`.
    pub fn isa(self) -> Option<Isa> {
        match self {
            IsaChoice::Auto => None,
            IsaChoice::Avx512 => Some(Isa::Avx512),
            IsaChoice::Avx2 => Some(Isa::Avx2),
            IsaChoice::Scalar => Some(Isa::Scalar),
        }
    }
}

impl From<Isa> for IsaChoice {
    fn from(isa: Isa) -> Self {
        match isa {
            Isa::Avx512 => IsaChoice::Avx512,
            Isa::Avx2 => IsaChoice::Avx2,
            Isa::Scalar => IsaChoice::Scalar,
        }
    }
}

benchsuite_core::choice_enum! {
    /// One bandwidth kernel: the `op` parameter. The discriminants (in
    /// this order, from 0) select the monomorphised wide kernel.
    pub enum Op {
        /// `sum += a[i]`.
        Read = "read",
        /// `a[i] = const`.
        Write = "write",
        /// `a[i] = b[i]` (STREAM Copy).
        Copy = "copy",
        /// `a[i] = q·b[i]` (STREAM Scale).
        Scale = "scale",
        /// `a[i] = b[i] + c[i]` (STREAM Add).
        Add = "add",
        /// `a[i] = b[i] + q·c[i]` (STREAM Triad).
        Triad = "triad",
    }
}

impl Op {
    /// The kernel whose discriminant is `v` (`Triad` for anything above):
    /// the x86 kernels take the operation as a const generic `u8`.
    #[cfg(target_arch = "x86_64")]
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

/// How one pass visits the blocks.
#[derive(Debug, Clone, Copy)]
pub enum Order<'a> {
    /// Block 0, 1, 2, ...: the whole array front to back.
    Seq,
    /// The blocks listed, in this order (indices, not byte offsets).
    Random(&'a [u32]),
}
