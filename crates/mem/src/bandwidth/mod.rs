//! `mem.bandwidth`: STREAM-style kernels over per-thread working sets.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use benchsuite_core::team::{Placement, Team, allowed_cpus};
use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Host, Meta, MetricSpec,
    ParamSpec, Point, Value, Work,
};

use crate::buf::{HUGE_PAGE, Pages};
use crate::kernels::{self, Isa, IsaChoice, Op};
use crate::peak;
use crate::sys;

mod case;
mod params;

use case::{BandwidthCase, MODE_PAGES, MODE_RUN, MODE_VERIFY, Shape, Worker};
use params::{Layout, MAX_SIZE, Nt, Params, Pattern};

/// Working-set bandwidth; see the crate docs.
#[derive(Debug, Default)]
pub struct Bandwidth;

impl Benchmark for Bandwidth {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        vec![benchsuite_core::OptionSpec::with_check(
            crate::peak::OPTION,
            "the DRAM peak for efficiency, e.g. 68.3GB/s, when SMBIOS cannot tell (--peak-mem-bw)",
            |v| crate::peak::parse_rate(v).map(|_| ()),
        )]
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "mem.bandwidth".into(),
            description: "STREAM-style read/write/copy/scale/add/triad over a per-thread working set, sequential or random blocks; bytes counted as STREAM counts them".into(),
            params: vec![
                ParamSpec::choice_of(
                    "op",
                    "read: sum a; write: a = const; copy: a = b; scale: a = 3b; add: a = b + c; triad: a = b + 3c (STREAM counts 8 B per array per element: 8, 8, 16, 16, 24, 24 B)",
                    Op::Triad,
                ),
                ParamSpec::choice_of(
                    "pattern",
                    "seq: blocks front to back; random: blocks at random block-aligned offsets (precomputed, untimed order)",
                    Pattern::Seq,
                ),
                ParamSpec::size(
                    "block",
                    "bytes per access: 1, 2, 4, 8, 16, 32 (one load/store of that width) or a multiple of 64 (a run of 64 B vectors); the default, 64, is one cache line",
                    1,
                    1 << 30,
                    64,
                ),
                ParamSpec::size(
                    "size",
                    "working set per thread, all arrays together; 0 (default) = auto: 4x the last-level cache (2x, at most 1GiB, with --quick), DRAM-bound",
                    0,
                    MAX_SIZE,
                    0,
                )
                .with_smoke(Value::Int(256 << 10)),
                ParamSpec::count("threads", "worker threads, each pinned to its own CPU with its own working set (first-touched by that thread)", 1, 1024, 1),
                ParamSpec::choice_of(
                    "nt",
                    "non-temporal stores (no write-allocate): on, off, or auto = on when the working set is DRAM-bound (larger than the caches the host reports) and the block is 64 B or more",
                    Nt::Auto,
                ),
                ParamSpec::choice_of(
                    "isa",
                    "kernel instruction set: auto = the one that streams fastest here: avx512, except on AMD Zen 4 (512-bit ops on 256-bit data paths, where avx2's stores stream faster), then avx2 with FMA, then scalar = portable code the compiler vectorises for the baseline target",
                    IsaChoice::Auto,
                ),
                ParamSpec::flag(
                    "hugepages",
                    "back the arrays with transparent huge pages (MADV_HUGEPAGE), so TLB misses do not limit streaming; off asks for 4 KiB pages (MADV_NOHUGEPAGE)",
                    true,
                ),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::time_per_op("time_per_access").derived(),
            ],
        }
    }

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        if let Some(text) = ctx.options.get(crate::peak::OPTION) {
            crate::peak::parse_rate(text).map_err(|e| {
                ConfigError::Invalid(format!("invalid value `{text}` for --peak-mem-bw: {e}"))
            })?;
        }
        let bad = |param: &str, reason: String| ConfigError::InvalidValue {
            param: param.into(),
            value: point
                .get(param)
                .map(|v| match (param, v) {
                    ("size" | "block", Value::Int(b)) => format_size(*b),
                    (_, v) => v.to_string(),
                })
                .unwrap_or_default(),
            reason,
        };
        let p = Params::parse(point).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        kernels::block_ok(p.op, p.block).map_err(|e| bad("block", e.0))?;
        if p.nt == Some(true) {
            if p.block < 64 {
                return Err(bad(
                    "nt",
                    format!(
                        "non-temporal stores need blocks of 64 B or more, and block is {}",
                        format_size(p.block)
                    ),
                ));
            }
            if p.isa == Some(Isa::Scalar) {
                return Err(bad(
                    "nt",
                    "isa=scalar has no non-temporal stores; use isa=auto, avx2 or avx512".into(),
                ));
            }
        }
        if p.size != 0 {
            if p.block > p.size {
                return Err(bad(
                    "block",
                    format!(
                        "block {} is larger than size {} (the working set per thread): use a block <= size",
                        format_size(p.block),
                        format_size(p.size)
                    ),
                ));
            }
            let layout = Layout::new(&p, p.size).map_err(|e| bad("size", e))?;
            let total = layout.footprint(&p).saturating_mul(p.threads as u64);
            sys::check_fits_in_memory(
                total,
                &format!("size {} × {} threads", format_size(p.size), p.threads),
                "use a smaller size or fewer threads",
            )
            .map_err(|e| bad("size", e.0))?;
        }
        Ok(())
    }

    /// `likwid-bench` with the same kernel kind, instruction set, store
    /// kind, working set and threads, resolved as `prepare` resolves them.
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        let p = Params::parse(point).ok()?;
        let isa = p.isa.unwrap_or_else(|| Isa::auto(&ctx.host));
        let size = match p.size {
            0 => auto_size(&ctx.host, ctx.quick, p.threads).0,
            s => s,
        };
        let nt = p.nt.unwrap_or_else(|| {
            p.op.stores()
                && p.block >= 64
                && isa.has_nt()
                && sys::cache_fit(&ctx.host, size, p.threads).is_dram()
        });
        crate::likwid::command(&crate::likwid::Streams {
            op: p.op,
            random: p.random,
            block: p.block,
            size,
            threads: p.threads,
            isa,
            nt,
            huge: p.huge,
        })
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let p = Params::parse(point)?;
        // Facts that help read the number are notes; what makes it mean
        // less than it seems is a caveat.
        let mut about = About::default();
        let (dram_peak, peak_note) =
            peak::dram_peak(ctx.options.get(peak::OPTION).map(String::as_str))?;

        // validate() already checked this; a program that calls prepare
        // directly gets the same refusal rather than a kernel that skips work.
        kernels::block_ok(p.op, p.block).map_err(|e| BenchError::Failed(e.0))?;
        let isa = match p.isa {
            None => {
                let isa = Isa::auto(&ctx.host);
                if isa != Isa::best() {
                    about.note(format!(
                        "isa=auto: {} here, not {}: 512-bit stores run on 256-bit data paths on this CPU and stream slower than 32 B ones",
                        isa.name(),
                        Isa::best().name()
                    ));
                }
                isa
            }
            Some(i) if i.available() => i,
            Some(i) => {
                return Err(BenchError::Skip(format!(
                    "isa={}: this CPU lacks it",
                    i.name()
                )));
            }
        };
        if p.nt == Some(true) && !isa.has_nt() {
            return Err(BenchError::Skip(format!(
                "nt=on: the {} kernels have no non-temporal stores",
                isa.name()
            )));
        }

        let size = if p.size == 0 {
            let (s, note) = auto_size(&ctx.host, ctx.quick, p.threads);
            // --quick's smaller working set is a caveat; the full default is
            // just a fact.
            if ctx.quick {
                about.caveat(note)
            } else {
                about.note(note)
            }
            s
        } else {
            p.size
        };
        if p.block > size {
            return Err(BenchError::Failed(format!(
                "block {} is larger than the automatic size {}",
                format_size(p.block),
                format_size(size)
            )));
        }
        let layout = Layout::new(&p, size).map_err(BenchError::Failed)?;
        let total = layout.footprint(&p).saturating_mul(p.threads as u64);
        sys::check_fits_in_memory(
            total,
            &format!(
                "the working set ({} × {} threads)",
                format_size(size),
                p.threads
            ),
            "use a smaller size or fewer threads",
        )
        .map_err(|e| BenchError::Failed(e.0))?;

        let ws = layout.array * p.op.arrays() as u64;
        if ws * 100 < size * 99 {
            about.note(format!(
                "working set rounded down to {} per thread ({} arrays of {}, whole blocks)",
                format_size(ws),
                p.op.arrays(),
                format_size(layout.array)
            ));
        }
        let fit = sys::cache_fit(&ctx.host, ws, p.threads);
        let nt = match p.nt {
            Some(v) => v,
            None => p.op.stores() && p.block >= 64 && isa.has_nt() && fit.is_dram(),
        };
        about.note(fit.note.clone());
        about.note(store_note(&p, nt, isa));
        if p.random && p.block < 64 {
            about.caveat(format!(
                "random {}-byte accesses: each one moves a whole 64 B cache line (or more, with the adjacent-line prefetcher), so the memory system carries at least {}x the counted bytes; this point is bound by access latency and parallelism, not bandwidth — read time_per_access",
                p.block,
                64 / p.block
            ));
        }
        if p.random && layout.blocks > layout.random_len {
            about.note(format!(
                "pattern=random: {} of the {} blocks per array are visited per pass (uniform draws, precomputed)",
                layout.random_len, layout.blocks
            ));
        }
        let cpus = allowed_cpus();
        if p.threads > cpus.len() {
            about.caveat(format!(
                "{} threads on {} CPUs: threads share CPUs, so this is not a per-core bandwidth",
                p.threads,
                cpus.len()
            ));
        }

        let pages = if p.huge && layout.footprint(&p) >= HUGE_PAGE as u64 {
            Pages::Huge
        } else {
            Pages::Small
        };
        let mode = Arc::new(AtomicU8::new(MODE_RUN));
        let shape = Shape {
            p,
            layout,
            isa,
            nt,
            pages,
        };
        let team = {
            let mode = mode.clone();
            Team::new(
                p.threads,
                Placement::Pinned,
                move |i| Worker::new(shape, i),
                move |w: &mut Worker, iters| match mode.load(Ordering::Relaxed) {
                    MODE_VERIFY => w.verify().map(|()| Work::default()),
                    MODE_PAGES => Ok(w.pages()),
                    _ => Ok(w.run(iters)),
                },
            )?
        };
        if p.huge && pages == Pages::Small {
            about.note("hugepages=on, but each thread's arrays are smaller than one 2 MiB huge page: 4 KiB pages");
        } else if p.huge {
            mode.store(MODE_PAGES, Ordering::Relaxed);
            let each = team.run_each(0);
            mode.store(MODE_RUN, Ordering::Relaxed);
            let (note, caveat) = huge_note(&each?);
            if caveat {
                about.caveat(note)
            } else {
                about.note(note)
            }
        }

        let peak = match (&dram_peak, fit.is_dram()) {
            (Some(pk), true) => Some(pk.to_peak("bandwidth")),
            (None, true) => {
                about.note(peak_note.clone());
                None
            }
            (Some(_), false) => {
                about.note("the DRAM peak does not apply to a working set that fits in a cache: no efficiency");
                None
            }
            (None, false) => None,
        };
        if peak.is_some() {
            about.note(format!(
                "{peak_note}; efficiency = STREAM-counted bandwidth / that peak"
            ));
        }
        about.peak = peak;
        about.resolved = vec![
            ("size".into(), Value::Int(size)),
            ("nt".into(), Value::Str(Nt::of(nt).name().into())),
            ("isa".into(), Value::Str(isa.name().into())),
        ];
        Ok(Box::new(BandwidthCase { team, mode, about }))
    }
}

/// The default working set per thread: 4× the last-level cache (2× and at
/// most 1 GiB with `--quick`), at least 64 MiB, and at most what memory
/// allows; with a note saying how it was chosen.
fn auto_size(host: &Host, quick: bool, threads: usize) -> (u64, String) {
    const MIB: u64 = 1 << 20;
    let llc = host.last_level_cache();
    let (mut size, mut why) = match (llc, quick) {
        (Some(l), false) => (
            (4 * l).max(64 * MIB),
            format!(
                "4x the last-level cache ({}) the host reports",
                format_size(l)
            ),
        ),
        (Some(l), true) => (
            (2 * l).clamp(64 * MIB, 1 << 30),
            format!(
                "--quick: 2x the last-level cache ({}) the host reports, at most 1GiB; the full default is 4x, which leaves less cache reuse",
                format_size(l)
            ),
        ),
        (None, false) => (
            1 << 30,
            "the host reports no cache sizes, so 1GiB".to_string(),
        ),
        (None, true) => (
            256 * MIB,
            "--quick, and the host reports no cache sizes: 256MiB".to_string(),
        ),
    };
    if let Some(avail) = sys::mem_available() {
        let cap = (avail as f64 * sys::MEM_SHARE / 2.0 / threads.max(1) as f64) as u64 / MIB * MIB;
        if size > cap && cap >= 16 * MIB {
            size = cap;
            why.push_str(&format!(
                ", capped at {} by available memory",
                format_size(cap)
            ));
        }
    }
    (
        size,
        format!("size=auto: {} per thread ({why})", format_size(size)),
    )
}

/// What the stores do, and how STREAM's byte count relates to real traffic.
fn store_note(p: &Params, nt: bool, isa: Isa) -> String {
    let kernels = match isa {
        Isa::Avx512 => "AVX-512 (64 B vectors)",
        Isa::Avx2 => "AVX2+FMA (32 B vectors)",
        Isa::Scalar => "portable (compiler-vectorised)",
    };
    let width = if p.block < 64 {
        format!("{}-byte scalar/vector accesses", p.block)
    } else {
        format!("{kernels} kernels")
    };
    if !p.op.stores() {
        return format!("{width}; read only: counted bytes = bytes loaded");
    }
    if nt {
        return format!(
            "{width} with non-temporal stores (+ sfence per batch): no write-allocate, so STREAM-counted bytes are the real traffic{}",
            if p.nt.is_none() {
                " (nt=auto: the working set is DRAM-bound)"
            } else {
                ""
            }
        );
    }
    let factor = match p.op {
        Op::Write => "2x",
        Op::Copy | Op::Scale => "1.5x",
        _ => "1.33x",
    };
    format!(
        "{width} with regular stores: each stored line is first read (write-allocate), which STREAM does not count, so real traffic is {factor} the counted bytes{}",
        if p.nt.is_none() && p.block >= 64 && isa.has_nt() {
            " (nt=auto: the working set fits in a cache)"
        } else {
            ""
        }
    )
}

/// What backs the arrays after first touch, from each worker's
/// `/proc/self/smaps` figures.
fn huge_note(each: &[Work]) -> (String, bool) {
    let sum = |k: &str| each.iter().filter_map(|w| w.values.get(k)).sum::<f64>();
    let (huge, rss) = (sum("huge"), sum("rss"));
    match sys::thp_mode().as_deref() {
        Some("never") => (
            "hugepages=on, but transparent huge pages are disabled (THP `never`): 4 KiB pages"
                .into(),
            true,
        ),
        None => (
            "hugepages=on: this kernel exposes no transparent-huge-page setting; page size unknown"
                .into(),
            true,
        ),
        Some(mode) if rss > 0.0 => {
            let short = huge < rss * 0.9;
            let why = if short {
                " (the kernel could not find enough free 2 MiB pages; expect more TLB misses)"
            } else {
                ""
            };
            (
                format!(
                    "hugepages=on (MADV_HUGEPAGE, THP `{mode}`): {:.0}% of the arrays' resident memory is in 2 MiB pages{why}",
                    100.0 * huge / rss
                ),
                short,
            )
        }
        Some(mode) => (
            format!("hugepages=on (MADV_HUGEPAGE, THP `{mode}`): backing not readable"),
            true,
        ),
    }
}
