//! # benchsuite-mem
//!
//! Memory bandwidth and latency, measured the way STREAM, likwid-bench and
//! lmbench measure them, across working-set sizes, block sizes, access
//! patterns and threads.
//!
//! | id | one operation | headline | compare with |
//! |----|---------------|----------|--------------|
//! | `mem.bandwidth` | one pass of a kernel over each thread's arrays | `bandwidth` (B/s, STREAM-counted) | STREAM, `likwid-bench -t {load,copy,triad}_avx512` |
//! | `mem.latency` | one dependent load | `latency` (s per load) | lmbench `lat_mem_rd` (`pattern=pages` = `-t`, `pattern=stride` = default) |
//!
//! ## `mem.bandwidth`
//!
//! Parameters, with defaults: `op = read|write|copy|scale|add|triad`
//! (`triad`), `pattern = seq|random` (`seq`), `block` (64 B), `size`
//! (working set per thread, all arrays together; `0` = auto), `threads`
//! (1), `nt = auto|on|off` (`auto`), `isa = auto|avx512|avx2|scalar`
//! (`auto`), `hugepages` (`on`).
//!
//! **Kernels.** `read`: `sum += a[i]`; `write`: `a[i] = x`; the STREAM four:
//! `copy` `a = b`, `scale` `a = 3b`, `add` `a = b + c`, `triad` `a = b + 3c`,
//! on `f64` arrays. Wide blocks (64 B and more) run AVX-512 loops (64 B
//! aligned loads and stores, four vectors per iteration), or AVX2+FMA, or
//! portable code, chosen at run time (`isa=auto` picks the widest the CPU
//! has). Blocks below 64 B are single loads/stores of exactly that width
//! (1, 2, 4, 8, 16, 32 B), so small accesses cost what they cost.
//!
//! **Bytes are counted as STREAM counts them**: 8 B per array per element —
//! `read`/`write` 8 B, `copy`/`scale` 16 B, `add`/`triad` 24 B per element —
//! so `bandwidth` is directly comparable with STREAM's MB/s. With regular
//! stores the CPU first reads every line it writes (write-allocate), which
//! STREAM does not count: real traffic is 2× the counted bytes for `write`,
//! 1.5× for `copy`/`scale`, 1.33× for `add`/`triad`. Non-temporal stores
//! (`nt=on`: `vmovntpd` + one `sfence` per batch) skip that read, so their
//! counted bytes are the real traffic. `nt=auto` uses them when the working
//! set is DRAM-bound (bigger than every cache the host reports) — what a
//! STREAM build with streaming stores does — and regular stores otherwise,
//! so cache-resident points keep their destination in cache. The record says
//! which was used.
//!
//! **Patterns.** `seq` walks each array front to back. `random` visits
//! blocks at random block-aligned offsets in an order precomputed (untimed)
//! per thread: a Fisher–Yates permutation of all blocks, or, above 4 Mi
//! blocks, 4 Mi uniform draws. The table is read sequentially alongside
//! (4 B per access, not counted). Random 1 B accesses are bound by latency
//! and memory-level parallelism, not bandwidth: each moves a whole 64 B line.
//! `time_per_access` (wall time / accesses of all threads) shows it.
//!
//! **Working set and threads.** `size` is per thread: `threads` workers are
//! pinned to distinct CPUs (wrapping when there are more threads than CPUs)
//! and each maps (`mmap`), first-touches and fills its own arrays on its own
//! CPU, so pages land on its NUMA node. The arrays of a thread are offset
//! from each other by 320 B beyond whole pages to avoid 4K aliasing. `size=0`
//! (auto) is 4× the last-level cache the host reports (at least 64 MiB),
//! so every record is DRAM-bound; with `--quick` it is 2× (at most 1 GiB),
//! which the record notes. Each record names the cache level its working set
//! fits in, from the cache sizes the host reports (a virtual machine may
//! report a cache that does not behave like one: a KVM guest measured here
//! reports a 300 MiB L3, yet working sets of 128 MiB already run at DRAM
//! speed). A sweep `--param size=4K..1G:x2` shows the L1/L2/L3/DRAM
//! plateaus; add `--param nt=off` (or `on`) to keep one store policy
//! across it, since `nt=auto` switches to non-temporal stores where the
//! working set outgrows the reported last-level cache.
//!
//! **One iteration** is one pass over the working set (or over the random
//! table), so the runner batches many passes of a small working set into a
//! sample of at least `--min-sample-time`; the pass loop sits inside the
//! kernel, so tiny passes pay no dispatch.
//!
//! **Verification.** After the timed samples, in `finish`, every thread
//! checks every element its kernel wrote (all of them for `seq`, every
//! visited block for `random`) against the exact expected value (inputs are
//! multiples of 1/2, so `b + 3c` is exact with or without FMA, and no two
//! pages hold the same bytes, so page merging cannot fake a read). A
//! mismatch fails the record; so no kernel can have been optimised away.
//! The check costs one extra read of the working set, outside the timing.
//!
//! **Peak.** On DRAM-bound records the peak is the theoretical DRAM
//! bandwidth: `--peak-mem-bw RATE` when given (`68.3GB/s`, decimal; or
//! `63.6GiB/s`, binary), else SMBIOS type 17 (`/sys/firmware/dmi/tables/DMI`,
//! root only): Σ populated DIMMs × configured MT/s × data width, which is
//! channels × MT/s × 8 B with one DIMM per channel. When neither is known the
//! record says so and carries no efficiency. Records that fit in a cache get
//! no DRAM peak. A malformed `--peak-mem-bw` is a usage error naming the
//! flag, before anything runs. A single thread rarely reaches the DRAM peak: the
//! efficiency of a `threads=1` record is that of one core.
//!
//! **Notes and caveats.** Facts that help read a record — the cache level
//! its working set fits in, the store policy and how STREAM's count relates
//! to real traffic, the page backing, where the peak came from — are record
//! notes. Caveats — `--quick`'s smaller working set, random sub-line
//! accesses being latency-bound, more threads than CPUs, fewer huge pages
//! than asked for — are the record's `warnings`.
//!
//! ## `mem.latency`
//!
//! Parameters, with defaults: `size` (`0` = auto, as above),
//! `pattern = random|pages|stride` (`random`), `stride` (64 B),
//! `hugepages` (`off`).
//!
//! A chain of nodes `stride` bytes apart, each holding the address of the
//! next; the timed loop is `p = *p`, so each load waits for the previous one
//! and `latency` is the load-to-use time. `random` links the nodes in one
//! uniformly random cycle (Sattolo's algorithm), defeating prefetchers;
//! `pages` is lmbench `lat_mem_rd -t`'s order (a random page order walked
//! once per lap, one random slot of each 4 KiB page per lap, so every load
//! lands on another page); `stride` links node `i` to `i + 1` (lmbench
//! `lat_mem_rd`'s default), which prefetchers follow. One iteration is one
//! load; a batch continues where the last stopped. lmbench reports the
//! minimum of 11 repetitions, benchsuite the median of its samples (the
//! minimum is in the record's summary). `hugepages=off` (default) asks for
//! 4 KiB pages, as a plain `malloc` gets, so a large random chain also
//! misses the TLB on most loads; `hugepages=on` maps 2 MiB pages and
//! separates that cost out.
//! `--param size=4K..1G:x2` draws the latency curve. The chain is built
//! (untimed) on the pinned worker thread that chases it.
//!
//! Both benchmarks run their loops on `benchsuite_core::team` workers; the
//! runner times the whole batch, including waking the worker (tens of µs at
//! most, under 1% of a 10 ms sample).
//!
//! ## Platforms
//!
//! Written for Linux on x86_64 (AVX-512/AVX2 kernels, THP, `/proc`); other
//! targets use the portable kernels, the allocator instead of `mmap`, and
//! skip the memory checks they cannot make.

mod bandwidth;
mod buf;
mod kernels;
mod latency;
mod likwid;
mod peak;
mod sys;

use benchsuite_core::Benchmark;

pub use bandwidth::Bandwidth;
pub use latency::Latency;
pub use peak::parse_rate;

/// Module name: benchmark ids start with `mem.`.
pub const MODULE: &str = "mem";

/// One-line description of the module.
pub const DESCRIPTION: &str = "memory: STREAM-style bandwidth over working-set sizes, blocks, patterns and threads; pointer-chase latency";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(Bandwidth), Box::new(Latency)]
}
