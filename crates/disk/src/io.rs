//! `disk.io`: the benchmark descriptor and its prepared case. The untimed
//! set-up that builds the case, step by step, is in `prepare.rs`.

use std::sync::Arc;

use benchsuite_core::team::Team;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Caveat, ConfigError, Context, Finished, Meta, MetricSpec,
    Point, Work,
};

use crate::prepare::prepare;
use crate::settings::{Settings, declare};
use crate::target::{self, Phase, Refusal};
use crate::worker::{FINISH, Shared};

/// `ctx.options` key (`--opt disk.space-check=off`) that skips the free
/// space check, for file systems whose `statvfs` is wrong (some FUSE and
/// network file systems) and for tests that need a real ENOSPC.
pub const SPACE_CHECK_OPTION: &str = "disk.space-check";

/// The caveat every `direct=off` record carries: its I/O went through the
/// page cache. It reads "direct=off: I/O goes through the page cache, so
/// these numbers mix cache hits and deferred writeback with device work;
/// use direct=on to measure the device".
pub fn page_cache_caveat() -> Caveat {
    Caveat::PageCache {
        why: "direct=off".into(),
    }
}

/// Sequential or random reads and writes with a chosen block, queue depth,
/// thread count, engine and cache mode. See the crate docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskIo;

impl Benchmark for DiskIo {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        vec![
            benchsuite_core::OptionSpec::bool(
                SPACE_CHECK_OPTION,
                "off skips the free-space check before files are laid out",
            ),
            benchsuite_core::OptionSpec {
                name: crate::target::ALLOW_OVERWRITE_OPTION,
                help: "PATH[,PATH...]: lets write tests overwrite these existing files or block devices in place (--allow-overwrite=PATH); on authorises a single target",
                check: crate::target::check_allow_overwrite,
                secret: false,
                role: benchsuite_core::OptionRole::Plain,
            },
        ]
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "disk.io",
            description: "file I/O like fio: seq/random read/write, MB/s, IOPS and completion-latency percentiles (O_DIRECT by default)",
            params: declare(),
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::ops_per_sec("iops", "IO/s").derived(),
                MetricSpec::latency("latency").secondary(),
            ],
        }
    }

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let s = Settings::from_point(point)?;
        match target::examine(ctx, &s, Phase::Plan) {
            Err(Refusal::Usage(e)) => Err(e),
            Err(Refusal::Changed(reason)) => Err(ConfigError::InvalidValue {
                param: "dir".into(),
                value: target::path(ctx, &s).display().to_string(),
                reason,
            }),
            // A target that cannot be examined (a --scratch-dir that does
            // not exist) fails its record in `prepare`, as any I/O error.
            Ok(_) | Err(Refusal::Io(_)) => Ok(()),
        }
    }

    /// The mount and block device under the scratch directory (the
    /// default target); each record's notes name its own target's.
    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::device::facts(&ctx.scratch_dir))
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let s = Settings::from_point(point)
            .map_err(|e| BenchError::caused("reading the point's parameters", e))?;
        prepare(ctx, &s)
    }

    /// fio with the same pattern, block, depth, jobs, cache mode and file.
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::fio::reference(ctx, point)
    }
}

/// One prepared point: the threads, parked between batches, and what its
/// record says. Built by [`prepare`].
///
/// It needs no `Drop` of its own: dropping the [`Team`] joins the workers,
/// each worker's ring drains its in-flight I/O as it drops, and the kernel
/// frees the unnamed files as their descriptors close. [`Case::finish`]
/// does the same after draining and verifying, and reports what failed.
pub struct DiskCase {
    team: Team,
    sh: Arc<Shared>,
    threads: u64,
    /// Its resolved parameters are the values that ran, for the record's
    /// parameters; [`Case::finish`] adds what the workers noted.
    about: About,
}

impl DiskCase {
    /// A case over `threads` started workers sharing `sh`.
    pub fn new(team: Team, sh: Arc<Shared>, threads: usize, about: About) -> DiskCase {
        DiskCase {
            team,
            sh,
            threads: threads as u64,
            about,
        }
    }
}

impl Case for DiskCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let iters = iters.min(FINISH - 1);
        let budget = iters.saturating_mul(self.threads).min(i64::MAX as u64) as i64;
        self.sh
            .budget
            .store(budget, std::sync::atomic::Ordering::SeqCst);
        // Open loop: the batch's schedule continues the point's timeline,
        // which pauses while the runner, not the case, has the thread.
        if let Some(open) = &self.sh.open {
            open.start_batch(budget.max(0) as u64);
        }
        let work = self.team.run(iters);
        if let Some(open) = &self.sh.open {
            open.end_batch();
        }
        work
    }

    fn finish(self: Box<Self>) -> Finished {
        let DiskCase {
            team,
            sh,
            mut about,
            ..
        } = *self;
        // Drain in-flight I/O and verify written blocks, then join the
        // workers: dropping each worker closes its unnamed file, which the
        // kernel then frees.
        let r = team.run(FINISH);
        team.shutdown();
        // What the workers noted while setting up (how the ring was set
        // up, whether O_TMPFILE worked) follows what `prepare` noted.
        about.notes.extend(
            sh.notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        let lag = sh.lag.lock().unwrap_or_else(|p| p.into_inner());
        if !lag.is_empty() {
            let us = |q: f64| lag.value_at_quantile(q) as f64 / 1e3;
            about.notes.push(format!(
                "open loop: the I/Os were submitted after their intended start by {:.1} µs at the median, {:.1} µs at p99, {:.1} µs at most (over {} I/Os, warm-up included): the generator's own lateness, which counts in the latency here (a tool that times from submission, as fio does, leaves it out)",
                us(0.5),
                us(0.99),
                lag.max() as f64 / 1e3,
                lag.len()
            ));
        }
        Finished::with(about, r.map(|_| ()))
    }
}
