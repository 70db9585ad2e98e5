//! # benchsuite-cpu
//!
//! Arithmetic throughput at every precision, near the machine's peak, with a
//! LINPACK-style solve and sysbench's prime test for comparison.
//!
//! | id | one operation | headline metric | compare with |
//! |----|---------------|-----------------|--------------|
//! | `cpu.flops` | one floating-point operation (an FMA is 2) | `flops` (flop/s) + peak, efficiency | `likwid-bench -t peakflops_avx512_fma` (`_sp_` for f32, `_avx_fma` for AVX2) |
//! | `cpu.iops` | one integer multiply or add done by the instruction | `iops` (op/s) + peak, efficiency | — |
//! | `cpu.linpack` | one flop of HPL's 2/3·N³ + 2·N² | `flops` (flop/s), `residual` + peak, efficiency | HPL (`hpcc`) at the same N |
//! | `cpu.prime` | one sysbench event | `events` (event/s), `latency` percentiles | `sysbench cpu --cpu-max-prime=N` |
//!
//! ## `cpu.flops` — `precision=f64|f32|f16|bf16`, `mix=fma|fma_add`, `isa=auto|avx512|avx2|sse2|scalar`, `threads`, `pin`
//!
//! Each thread runs a kernel written in inline assembly: independent
//! accumulator chains kept in registers (24 zmm at AVX-512, 14 ymm/xmm
//! otherwise), four unrolled bodies per loop iteration, no loads or stores in
//! the loop, the sum stored once at the end and kept alive with `black_box`.
//! Enough chains cover FMA latency × FMA ports (4 cycles × 2 ports = 8 in
//! flight on current Intel server cores). Operations are counted as
//! **one FMA = 2 flops per lane**:
//!
//! | precision | avx512 | avx2 | sse2 | scalar |
//! |---|---|---|---|---|
//! | f64 | `vfmadd231pd zmm` (16 flops) | `vfmadd231pd ymm` (8) | `mulpd`+`addpd` (2 each) | `mulsd`+`addsd` (1 each) |
//! | f32 | `vfmadd231ps zmm` (32) | `vfmadd231ps ymm` (16) | `mulps`+`addps` (4 each) | `mulss`+`addss` (1 each) |
//! | f16 | `vfmadd231ph zmm` (64), AVX512-FP16 | skipped | skipped | skipped |
//! | bf16 | `vdpbf16ps zmm` (64), AVX512-BF16 | skipped | skipped | skipped |
//!
//! `vdpbf16ps` computes, for each of 16 f32 lanes, `acc += a₀·b₀ + a₁·b₁`
//! over a pair of bf16 values: 2 multiply-adds = 4 flops per lane, 64 per
//! instruction. f16 runs only as native AVX512-FP16 arithmetic; without it
//! the point is *skipped* with the reason — f32 arithmetic on converted
//! values is never reported as f16 flops. SSE2 has no FMA, so its kernel is
//! a multiply then an add per chain (`acc = acc·0.999 + 0.001`, which
//! converges and never goes subnormal). `isa=auto` (default) picks the
//! widest ISA the CPU has (AVX-512 → AVX2+FMA → SSE2 → scalar); naming an
//! ISA the CPU lacks gives a skipped record.
//!
//! **Two peaks.** The FMA-only kernels (`mix=fma`, default) meet the FMA
//! units' peak, the vendor's figure. AMD Zen 2–5 also have two FP add
//! pipes beside the two FMA pipes, so FMAs and adds issued together exceed
//! it: `mix=fma_add` (AVX-512, f64/f32) runs 12 `vfmadd231pd zmm` and 12
//! `vaddpd zmm` per body on 24 accumulators (1.5 flops per lane per
//! instruction on average), against the bound of the FMA units and the FP
//! pipes a multiply/add mix uses (the table's `muladd_per_cycle`): a
//! body's flops over max(FMAs ÷ FMA units, instructions ÷ pipes), 48 f64
//! flop/cycle on Zen 5 (2 × 512-bit FMA + 2 × 512-bit add), 24 on Zen 4
//! (its 512-bit operations take two passes). Measured on a Zen 5 guest
//! (release build, 1 thread, three runs): 195.6–198.6 f64 GFLOP/s, 1.49–1.50×
//! `mix=fma`'s 131.6–132.3, 96.8–98.3% of the mix's bound. Where adds share
//! the FMA ports (Intel before Golden Cove at 512 bits), the mix is slower
//! than FMAs alone and no second peak is claimed. An FMA record says both
//! peaks where the core has them. likwid-bench has no FMA+ADD kernel in its
//! Debian build, so `mix=fma_add` has no reference.
//!
//! ## `cpu.iops` — `precision=i8|i16|i32|i64`, `isa`, `threads`, `pin`
//!
//! Same kernel shape, integer instructions, counted as the operations the
//! instruction really does (a multiply-accumulate is 2 ops):
//!
//! | precision | avx512 | avx2 | sse2 | scalar |
//! |---|---|---|---|---|
//! | i8 | `vpdpbusd zmm` (VNNI: 64 u8·i8 MACs = 128 ops); without VNNI `vpmaddubsw zmm` (64 mul + 32 add = 96) | `vpdpbusd ymm` (AVX-VNNI, 64); else `vpmaddubsw ymm` (48) | skipped (no 8-bit multiply in SSE2) | skipped |
//! | i16 | `vpdpwssd zmm` (32 MACs = 64 ops); else `vpmaddwd zmm` (32 mul + 16 add = 48) | `vpdpwssd ymm` (32); else `vpmaddwd ymm` (24) | `pmaddwd xmm` (12) | skipped |
//! | i32 | `vpmulld zmm` chains (16 multiplies) | `vpmulld ymm` (8) | skipped (`pmulld` is SSE4.1) | `imul r32` (1) |
//! | i64 | `vpmullq zmm` chains (AVX512DQ, 8) | skipped (no packed 64-bit multiply) | skipped | `imul r64` (1) |
//!
//! The record's notes name the instruction used and the counting rule.
//!
//! ## Threads
//!
//! `threads` (default: every CPU this process may use; 1 to 1024) workers
//! of a [`benchsuite_core::team::Team`], created in `prepare`. `pin=on`
//! (default) pins worker *i* to the *i*-th allowed CPU with
//! `sched_setaffinity`, wrapping around when there are more threads than
//! CPUs: threads above the CPU count are allowed and show oversubscription
//! (the total stays at what the CPUs can do; a caveat says so). `pin=off`
//! leaves placement to the scheduler. Sweep with `--threads 1,2,4,8`.
//!
//! ## Theoretical peak and efficiency
//!
//! Every `cpu.flops` / `cpu.iops` / `cpu.linpack` record carries
//! `peak = cores × GHz × operations per cycle per core` with each input and
//! its source, and the runner adds `efficiency = median / peak`:
//!
//! - *cores*: distinct physical cores under the threads (sysfs topology).
//! - *GHz*: a VM usually hides the clock, so it is **measured**: the same
//!   number of pinned threads each run a chain of dependent `add reg, reg`
//!   (1 cycle each) for ~20 ms, best of five, once per process. Override with
//!   `--opt cpu-ghz=3.1` (source `user`).
//! - *per cycle*: FMA instructions per cycle at the kernel's width from a
//!   table keyed by CPUID family/model (Sapphire/Emerald/Granite Rapids and
//!   Ice Lake Xeon: two 512-bit FMA units; Haswell..Comet Lake, Zen 3: two
//!   256-bit; Zen 4: one 512-bit FMA per cycle), source `table`; override
//!   with `--opt fma-ports=N`. FMA kernels: flops per instruction × FMA
//!   units. SSE2/scalar (separate multiply and add): lanes × multiply/add
//!   instructions per cycle, which is 3 on Golden Cove-class cores (two FMA
//!   units plus the fast adders on ports 1 and 5; measured ≈2.7–2.9 per
//!   cycle), 2 on older Intel cores, 4 on Zen 3/4. Integer kernels use the
//!   instruction's published throughput for the table's cores. An unknown
//!   CPU, or an instruction the table does not list (`vdpbf16ps`: bf16
//!   records carry no peak but on Zen 5, where it was measured at the f32
//!   FMA's 2 per cycle; it issued ≈0.46 per cycle on Emerald Rapids, a
//!   quarter of the f16 FMA rate), gets no peak and a caveat saying why —
//!   never a guess. Where the published sources disagree (Zen 5's
//!   `vpmulld`, 512-bit VNNI), the table cites a measurement against an
//!   instruction whose rate is sourced.
//!
//! The measured clock is that of scalar code. On Sapphire/Emerald Rapids
//! heavy 512-bit FMA code runs at a lower clock than that (about 10% lower
//! on the development VM), so `cpu.flops` at `isa=avx512` reports ~88–92%
//! efficiency while AVX2 reaches ~95–99%: the lower clock is real, not a
//! kernel shortfall (likwid-bench's `peakflops_avx512_fma` gets the same
//! flop/s).
//!
//! ## `cpu.linpack` — `n` (default 2000), `threads`, `pin`, `solver`
//!
//! A random N×N system (entries uniform in [−0.5, 0.5), fixed seed) solved
//! by LU with partial pivoting and two triangular solves: `solver=lapack`
//! calls `dgetrf`/`dgetrs` of the system's optimised LAPACK (OpenBLAS or
//! MKL, loaded at run time, on the library's own `threads` threads; as HPL
//! runs on the vendor BLAS), `solver=faer` faer's recursive LU
//! (`faer::linalg::lu::partial_pivoting`) on a rayon pool of `threads`
//! threads, and `auto` (the default) the first where one loads, else the
//! second; the record's notes say which ran and why (see `linpack.rs`).
//! One iteration restores the matrix from a
//! pristine copy (O(N²), **not timed**: the case reports the solve's own
//! time through `Work::elapsed`), factors and solves (timed), then checks
//! HPL's scaled residual `‖Ax−b‖∞ / (ε·(‖A‖∞‖x‖∞ + ‖b‖∞)·N) < 16` (not
//! timed); a failed check is a failed record. Rate = (2/3·N³ + 2·N²) / time.
//! `validate` refuses an N whose two matrices (16·N² bytes) do not fit in
//! the available memory, before anything is allocated. Built only with the
//! default-on cargo feature `linpack`.
//!
//! ## `cpu.prime` — `max_prime` (default 20000), `threads` (default 1), `pin` (default off)
//!
//! One event is sysbench's `cpu_execute_event`: trial division of every
//! `c` in `3..max_prime` by `2..=sqrt(c)` with 64-bit unsigned division,
//! counting primes. Each event is timed into an HDR histogram, so the record
//! has events/s and per-event latency percentiles, directly comparable with
//! `sysbench cpu --cpu-max-prime=20000 --threads=N run`.

#[cfg(feature = "linpack")]
mod hpcc;
#[cfg(feature = "linpack")]
mod lapack;
mod likwid;
#[cfg(feature = "linpack")]
mod linpack;
mod prime;
mod throughput;
#[cfg(target_arch = "x86_64")]
mod x86;

pub mod kernel;
pub mod peak;

use benchsuite_core::Benchmark;

#[cfg(feature = "linpack")]
pub use linpack::{Linpack, RESIDUAL_THRESHOLD, hpl_flops};
pub use prime::{Prime, sysbench_event};
pub use throughput::{Flops, Iops, MAX_THREADS};

/// Module name: benchmark ids start with `cpu.`.
pub const MODULE: &str = "cpu";

/// One-line description of the module.
pub const DESCRIPTION: &str = "CPU arithmetic: flops and integer ops per precision against the derived peak, LINPACK-style LU solve, sysbench prime";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    let mut v: Vec<Box<dyn Benchmark>> = vec![Box::new(Flops), Box::new(Iops)];
    #[cfg(feature = "linpack")]
    v.push(Box::new(Linpack));
    v.push(Box::new(Prime));
    v
}
