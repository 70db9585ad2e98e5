//! `mem.latency`: dependent loads through a pointer chain.

use std::sync::{Arc, OnceLock};

use benchsuite_core::team::{Placement, Team};
use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Host, Meta, MetricSpec, ParamSpec,
    Point, TeamCase, Value, Work,
};

use crate::buf::{Buf, HUGE_PAGE, Pages};
use crate::sys::{self, Rng};

/// The page the `pages` pattern visits one slot of at a time (4 KiB, the
/// base page of x86_64 and of lmbench's `getpagesize()` there).
const PAGE: u64 = 4096;

benchsuite_core::choice_enum! {
    /// How the chain is linked: the `pattern` parameter.
    enum Pattern {
        /// One uniformly random cycle through every node (Sattolo).
        Random = "random",
        /// lmbench `lat_mem_rd -t`: a random page order, walked once per lap,
        /// one slot of each page per lap (slots in a random order).
        Pages = "pages",
        /// Node `i` to node `i + 1`.
        Stride = "stride",
    }
}

/// Largest `size` accepted.
const MAX_SIZE: u64 = 1 << 40;

/// Load-to-load latency; see the crate docs.
#[derive(Debug, Default)]
pub struct Latency;

#[derive(Debug, Clone, Copy)]
struct Params {
    /// 0 = auto.
    size: u64,
    pattern: Pattern,
    stride: u64,
    huge: bool,
}

impl Params {
    fn parse(point: &Point) -> Result<Params, BenchError> {
        Ok(Params {
            size: point.u64("size")?,
            pattern: point.choice("pattern")?,
            stride: point.u64("stride")?,
            huge: point.bool("hugepages")?,
        })
    }

    /// Nodes in the chain for a working set of `size` bytes (whole pages
    /// for `pages`).
    fn nodes(&self, size: u64) -> Result<u64, String> {
        let n = if self.pattern == Pattern::Pages {
            size / PAGE * (PAGE / self.stride)
        } else {
            size / self.stride
        };
        if n < 2 {
            return Err(format!(
                "size {} holds fewer than two nodes {} apart: use size >= 2 x stride",
                format_size(size),
                format_size(self.stride)
            ));
        }
        if n > u32::MAX as u64 {
            return Err(format!(
                "size {} / stride {} makes {n} nodes, more than 2^32: use a larger stride",
                format_size(size),
                format_size(self.stride)
            ));
        }
        Ok(n)
    }

    /// Bytes mapped while preparing: the chain and the temporary
    /// permutation (4 B per node for `random`, 8 B per page for `pages`).
    fn footprint(&self, size: u64, nodes: u64) -> u64 {
        size + match self.pattern {
            Pattern::Random => nodes * 4,
            Pattern::Pages => size / PAGE * 8,
            Pattern::Stride => 0,
        }
    }
}

impl Benchmark for Latency {
    fn meta(&self) -> Meta {
        Meta {
            id: "mem.latency".into(),
            description: "load-to-load latency: a chain of dependent loads through a random cyclic permutation (or a fixed stride) over the working set".into(),
            params: vec![
                ParamSpec::size(
                    "size",
                    "working set: the chain spans this many bytes; 0 (default) = auto: 4x the last-level cache (2x, at most 1GiB, with --quick)",
                    0,
                    MAX_SIZE,
                    0,
                )
                .with_smoke(Value::Int(256 << 10)),
                ParamSpec::choice_of(
                    "pattern",
                    "random: one uniformly random cycle through every node (Sattolo), which prefetchers cannot follow; pages: lmbench lat_mem_rd -t's order (a random page order walked once per lap, one random slot of each 4 KiB page per lap; every load a new page); stride: node i points to node i+1 (lmbench lat_mem_rd's default, prefetch-friendly)",
                    Pattern::Random,
                ),
                ParamSpec::size(
                    "stride",
                    "distance between nodes, a multiple of 8 B; 64 (default) puts one node in every cache line",
                    8,
                    1 << 30,
                    64,
                ),
                ParamSpec::flag(
                    "hugepages",
                    "on: 2 MiB transparent huge pages (MADV_HUGEPAGE), so few loads miss the TLB and the figure is closer to DRAM latency alone; off (default): 4 KiB pages (MADV_NOHUGEPAGE), like a plain malloc, TLB misses included",
                    false,
                ),
            ],
            metrics: vec![MetricSpec::time_per_op("latency")],
        }
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let p = Params::parse(point).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let bad = |param: &str, value: u64, reason: String| ConfigError::InvalidValue {
            param: param.into(),
            value: format_size(value),
            reason,
        };
        if !p.stride.is_multiple_of(8) {
            return Err(bad(
                "stride",
                p.stride,
                "must be a multiple of 8 B (a node holds one pointer)".into(),
            ));
        }
        if p.pattern == Pattern::Pages && !PAGE.is_multiple_of(p.stride) {
            return Err(bad(
                "stride",
                p.stride,
                "pattern=pages divides each 4 KiB page into slots: use a stride that divides 4096 (8, 16, ..., 4K)".into(),
            ));
        }
        if p.size != 0 {
            if p.stride > p.size {
                return Err(bad(
                    "stride",
                    p.stride,
                    format!(
                        "stride {} is larger than size {}",
                        format_size(p.stride),
                        format_size(p.size)
                    ),
                ));
            }
            let nodes = p.nodes(p.size).map_err(|e| bad("size", p.size, e))?;
            sys::check_fits_in_memory(
                p.footprint(p.size, nodes),
                &format!("size {}", format_size(p.size)),
                "use a smaller size",
            )
            .map_err(|e| bad("size", p.size, e.0))?;
        }
        Ok(())
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let p = Params::parse(point)?;
        // Facts are notes; what makes the number mean less is a caveat.
        let mut about = About::default();
        let size = if p.size == 0 {
            let (s, note) = auto_size(&ctx.host, ctx.quick);
            if ctx.quick {
                about.caveat(note)
            } else {
                about.note(note)
            }
            s
        } else {
            p.size
        };
        let nodes = p.nodes(size).map_err(BenchError::Failed)?;
        sys::check_fits_in_memory(
            p.footprint(size, nodes),
            &format!("the chain ({})", format_size(size)),
            "use a smaller size",
        )
        .map_err(|e| BenchError::Failed(e.0))?;
        let span = nodes * p.stride;
        about.note(sys::cache_fit(&ctx.host, span, 1).note);
        about.note(match p.pattern {
            Pattern::Random => format!(
                "one uniformly random cycle (Sattolo) through {nodes} nodes {} apart: every load depends on the previous one and goes to an unpredictable line, so prefetchers cannot help (pattern=pages is lmbench `lat_mem_rd -t`'s order)",
                format_size(p.stride)
            ),
            Pattern::Pages => format!(
                "lmbench `lat_mem_rd -t` order through {nodes} nodes {} apart: a random order of the {} pages, walked {} times, one random slot of each page per walk; every load depends on the previous one and touches a new page, and a page is revisited only after all the others. lmbench prints the minimum of its 11 repetitions (each at least one lap, about 1 s at 512MiB), not their median: to compare, run --runs 11 --min-sample-time 1s and set its figure against this record's min (its median against this median)",
                format_size(p.stride),
                span / PAGE,
                PAGE / p.stride
            ),
            Pattern::Stride => format!(
                "sequential chase through {nodes} nodes {} apart: hardware prefetchers predict it, so this is latency as a streaming program sees it, not a DRAM round trip; compare with lmbench `lat_mem_rd` (default pattern)",
                format_size(p.stride)
            ),
        });
        let pages = if p.huge && span >= HUGE_PAGE as u64 {
            Pages::Huge
        } else {
            Pages::Small
        };
        // The worker that builds the chain reports what backs it here.
        let backing = Arc::new(OnceLock::new());
        let team = {
            let backing = backing.clone();
            Team::new(
                1,
                Placement::Pinned,
                move |_| {
                    let chain = Chain::new(p, span as usize, nodes as usize, pages)?;
                    let _ = backing.set(chain.backing);
                    Ok(chain)
                },
                |c: &mut Chain, iters| Ok(c.run(iters)),
            )?
        };
        if p.huge && pages == Pages::Small {
            about.note(
                "hugepages=on, but the chain is smaller than one 2 MiB huge page: 4 KiB pages",
            );
        } else {
            let (note, caveat) = page_note(p.huge, backing.get().copied().flatten());
            if caveat {
                about.caveat(note)
            } else {
                about.note(note)
            }
        }
        // The working set, after `size=0` (auto) was resolved.
        about.resolved = vec![("size".into(), Value::Int(size))];
        Ok(TeamCase::boxed(team, about))
    }
}

/// Default working set: as `mem.bandwidth`'s (4× the LLC; 2×, at most
/// 1 GiB, with `--quick`), for the same reason: beyond every cache.
fn auto_size(host: &Host, quick: bool) -> (u64, String) {
    const MIB: u64 = 1 << 20;
    let (mut size, mut why) = match (host.last_level_cache(), quick) {
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
                "--quick: 2x the last-level cache ({}) the host reports, at most 1GiB",
                format_size(l)
            ),
        ),
        (None, false) => (1 << 30, "the host reports no cache sizes, so 1GiB".into()),
        (None, true) => (
            256 * MIB,
            "--quick, and the host reports no cache sizes: 256MiB".into(),
        ),
    };
    if let Some(avail) = sys::mem_available() {
        let cap = (avail as f64 * sys::MEM_SHARE / 2.0) as u64 / MIB * MIB;
        if size > cap && cap >= 16 * MIB {
            size = cap;
            why.push_str(&format!(
                ", capped at {} by available memory",
                format_size(cap)
            ));
        }
    }
    (size, format!("size=auto: {} ({why})", format_size(size)))
}

/// What backs the chain (`(AnonHugePages, Rss)` bytes, when readable), and
/// whether that is a caveat (huge pages asked for but mostly not given).
fn page_note(huge: bool, backing: Option<(u64, u64)>) -> (String, bool) {
    let fraction = backing
        .filter(|&(_, rss)| rss > 0)
        .map(|(huge, rss)| huge as f64 / rss as f64);
    let share = fraction.map_or_else(
        || "an unknown share".into(),
        |f| format!("{:.0}%", 100.0 * f),
    );
    let thp = sys::thp_mode().unwrap_or_else(|| "unknown".into());
    if huge {
        let short = fraction.is_none_or(|f| f < 0.9);
        (
            format!(
                "hugepages=on (MADV_HUGEPAGE, THP `{thp}`): {share} of the chain is in 2 MiB pages{}",
                if short {
                    "; the rest are 4 KiB pages, whose TLB misses are included"
                } else {
                    "; TLB misses mostly removed"
                }
            ),
            short,
        )
    } else {
        (
            format!(
                "hugepages=off (MADV_NOHUGEPAGE): 4 KiB pages ({share} huge), so loads over a large working set also miss the TLB and pay a page walk"
            ),
            false,
        )
    }
}

/// The chain, owned by the worker thread that built it.
struct Chain {
    _buf: Buf,
    /// Where the next batch continues.
    cur: *const usize,
    /// Huge-page backing once built, `(AnonHugePages, Rss)` in bytes.
    backing: Option<(u64, u64)>,
}

impl Chain {
    /// Builds the chain on the (pinned) worker: node `i` at byte `i ×
    /// stride` holds the address of its successor.
    fn new(p: Params, span: usize, nodes: usize, pages: Pages) -> Result<Chain, BenchError> {
        let buf = Buf::new(span, pages)?;
        let base = buf.as_ptr();
        let stride = p.stride as usize;
        let node = |i: usize| -> *mut usize {
            // SAFETY: i < nodes and nodes × stride = span = the buffer's
            // length, so the node (8 bytes, stride >= 8) is inside it;
            // stride is a multiple of 8, so it is aligned for usize.
            unsafe { base.add(i * stride).cast::<usize>() }
        };
        let mut rng = Rng::new(0x006c_6174_656e_6379);
        let mut shuffled = |n: usize| -> Vec<u32> {
            let mut v: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                v.swap(i, j);
            }
            v
        };
        // `order(k)` is the node visited k-th; node order(k) points to
        // order(k + 1), and the last to the first.
        let start = match p.pattern {
            Pattern::Random => {
                // Sattolo's algorithm: a uniformly random permutation with
                // a single cycle, so the chase visits every node once per
                // lap. next[i] is node i's successor.
                let mut next: Vec<u32> = (0..nodes as u32).collect();
                for i in (1..nodes).rev() {
                    let j = rng.below(i as u64) as usize;
                    next.swap(i, j);
                }
                for (i, &n) in next.iter().enumerate() {
                    // SAFETY: both nodes are inside the buffer (see `node`),
                    // which this worker owns exclusively.
                    unsafe { node(i).write(node(n as usize) as usize) };
                }
                node(0)
            }
            Pattern::Pages => {
                // lib_mem.c thrash_initialize: in lap j, the i-th page of a
                // random page order is entered at slot words[(i + j) mod
                // slots]; after the last page of a lap comes the first.
                let slots = PAGE as usize / stride;
                let npages = nodes / slots;
                let pages = shuffled(npages);
                let words = shuffled(slots);
                let order = |k: usize| {
                    let (j, i) = (k / npages, k % npages);
                    pages[i] as usize * slots + words[(i + j) % slots] as usize
                };
                for k in 0..nodes {
                    // SAFETY: order() yields node indices below nodes.
                    unsafe { node(order(k)).write(node(order((k + 1) % nodes)) as usize) };
                }
                node(order(0))
            }
            Pattern::Stride => {
                for i in 0..nodes {
                    // SAFETY: as above.
                    unsafe { node(i).write(node((i + 1) % nodes) as usize) };
                }
                node(0)
            }
        };
        let backing = sys::huge_backing(base as usize);
        Ok(Chain {
            cur: start,
            _buf: buf,
            backing,
        })
    }

    /// `iters` dependent loads, continuing where the last batch stopped.
    fn run(&mut self, iters: u64) -> Work {
        let mut p = self.cur;
        macro_rules! hop {
            () => {
                // SAFETY: p always points at a node of this chain (it
                // starts at node 0 and each node holds a node's address),
                // inside the buffer this Chain owns.
                p = unsafe { *p } as *const usize;
            };
        }
        // 100 loads per loop trip, as lmbench's HUNDRED: each load
        // instruction then sees addresses 100 nodes apart. With fewer (16
        // was measured), a `stride` chase gives each instruction a short
        // per-instruction stride that the L1 IP-stride prefetcher acts on,
        // which changed the stride pattern's result by up to 25% here.
        macro_rules! ten {
            () => {
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
                hop!();
            };
        }
        for _ in 0..iters / 100 {
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
            ten!();
        }
        for _ in 0..iters % 100 {
            hop!();
        }
        self.cur = std::hint::black_box(p);
        Work::ops(iters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Follows the chain from its start and checks it is one cycle through
    /// every node, with consecutive nodes where the pattern puts them.
    fn walk(pattern: Pattern, size: u64, stride: u64) {
        let p = Params {
            size,
            pattern,
            stride,
            huge: false,
        };
        let nodes = p.nodes(size).unwrap() as usize;
        let span = nodes * stride as usize;
        let chain = Chain::new(p, span, nodes, Pages::Small).unwrap();
        let base = chain._buf.as_ptr() as usize;
        let mut seen = vec![false; nodes];
        let mut cur = chain.cur;
        let mut pages_in_a_row = 0;
        // pattern=pages: the step at which each page was last entered.
        let npages = span / 4096;
        let mut last_visit: Vec<Option<usize>> = vec![None; npages];
        for step in 0..2 * nodes {
            if step == nodes {
                assert_eq!(
                    cur, chain.cur,
                    "{pattern:?}: the chain must close after every node"
                );
                if pattern != Pattern::Pages {
                    break;
                }
            }
            let off = cur as usize - base;
            assert_eq!(off % stride as usize, 0, "{pattern:?}: node off its slot");
            let i = off / stride as usize;
            if step < nodes {
                assert!(
                    !seen[i],
                    "{pattern:?}: node {i} visited twice before step {nodes}"
                );
                seen[i] = true;
            }
            if pattern == Pattern::Pages {
                // lmbench's thrash order: a lap enters every page once, in
                // the same page order every lap, so between two visits to a
                // page every other page (and its TLB entry) is touched.
                let page = off / 4096;
                if let Some(prev) = last_visit[page] {
                    assert_eq!(step - prev, npages, "page {page} revisited early");
                }
                last_visit[page] = Some(step);
            }
            // SAFETY: cur points at a node of the chain inside its buffer.
            let next = unsafe { *cur } as *const usize;
            if step < nodes
                && pattern == Pattern::Pages
                && (next as usize - base) / 4096 != off / 4096
            {
                pages_in_a_row += 1;
            }
            if pattern == Pattern::Stride {
                assert_eq!(
                    next as usize - base,
                    (i + 1) % nodes * stride as usize,
                    "step {step}"
                );
            }
            cur = next;
        }
        assert!(
            seen.iter().all(|&v| v),
            "{pattern:?}: a node is never visited"
        );
        if pattern == Pattern::Pages {
            assert_eq!(
                pages_in_a_row, nodes,
                "every load of pattern=pages goes to another page"
            );
        }
    }

    #[test]
    fn every_pattern_is_one_cycle_through_every_node() {
        for (pattern, size, stride) in [
            (Pattern::Random, 64 << 10, 64),
            (Pattern::Random, 8 << 10, 8),
            (Pattern::Pages, 64 << 10, 128),
            (Pattern::Pages, 16 << 10, 4096),
            (Pattern::Stride, 64 << 10, 64),
        ] {
            walk(pattern, size, stride);
        }
    }
}
