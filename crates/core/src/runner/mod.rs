//! The runner: runs a plan (see [`plan`]): for each point prepares a case, sizes
//! its batches, warms it up, takes samples, and always tears it down.
//!
//! Timing model: a *sample* is one call to [`Case::run`](crate::Case::run) with a batch of
//! `iters` iterations, timed with [`Instant`] around the call (or with the
//! device time the case reports). Batches are sized during warm-up so a
//! sample lasts at least `min_sample_time` (default 10 ms), which keeps the
//! ~20-50 ns cost of reading the clock below 0.001% of a sample.

//!
//! Files: `point.rs` runs one point (prepare, measure, finish, its
//! record), `measure.rs` sizes batches and turns samples into metrics,
//! `rounds.rs` pools the rounds of `--rounds`, `steal.rs` reads the
//! hypervisor's steal time, `observer.rs` is what the runner tells as it
//! goes; this file runs the plan.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::bench::{Benchmark, Context, Meta, Probe};
use crate::caveat::Caveat;
use crate::error::ConfigError;
use crate::registry::Registry;
use crate::results::{Record, Report, RunConfigRecord, RunProgress, SCHEMA_VERSION, Status};
use crate::stats::latency_histogram;

pub use crate::config::{RunConfig, RunConfigBuilder};
pub use crate::plan::{Plan, PlannedBench, plan, plan_on};
pub use measure::NOISY_CV;
pub use rounds::{pool_reports, pool_rounds};
pub use steal::STEAL_WARN;

mod measure;
mod observer;
mod point;
mod rounds;
mod steal;

pub use observer::{Observer, Silent};
pub use point::OPEN_LOOP_SAMPLE;
pub(crate) use point::run_point;

use measure::Hists;
use point::panic_message;
use rounds::merge_round;

/// Measures the cost of one `Instant::now()` call, in seconds (median of 11
/// batches of 10 000 reads).
pub fn timer_overhead() -> f64 {
    let mut v: Vec<f64> = (0..11)
        .map(|_| {
            let n = 10_000;
            let t0 = Instant::now();
            for _ in 0..n {
                std::hint::black_box(Instant::now());
            }
            t0.elapsed().as_secs_f64() / n as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Probes each benchmark (a panicking probe is a skip) and collects the
/// module facts for `host.extra`: per module, those of the first benchmark
/// that is ready and has some.
fn probe_all<'b>(
    benches: impl Iterator<Item = &'b dyn Benchmark>,
    ctx: &Context,
) -> (Vec<(Meta, Probe)>, BTreeMap<String, serde_json::Value>) {
    let mut facts = BTreeMap::new();
    let mut probes = Vec::new();
    for bench in benches {
        let meta = bench.meta();
        let probe = catch_unwind(AssertUnwindSafe(|| bench.probe(ctx)))
            .unwrap_or_else(|p| Probe::Skip(format!("probe panicked: {}", panic_message(&p))));
        if probe == Probe::Ready
            && !facts.contains_key(meta.module())
            && let Ok(Some(v)) = catch_unwind(AssertUnwindSafe(|| bench.host_facts(ctx)))
        {
            facts.insert(meta.module().to_string(), v);
        }
        probes.push((meta, probe));
    }
    (probes, facts)
}

/// What every module of `registry` that can run here reports about its
/// hardware (GPU, NIC, the disk under `ctx.scratch_dir`), keyed by module:
/// the `host.extra` a run of everything would record. `benchsuite info`
/// shows it; nothing is measured.
pub fn module_facts(registry: &Registry, ctx: &Context) -> BTreeMap<String, serde_json::Value> {
    probe_all(registry.benchmarks(), ctx).1
}

/// Runs a plan and returns the report. Never fails once planned: a
/// benchmark that cannot run or fails becomes a record with that status.
pub fn run_plan(plan: &Plan<'_>, config: &RunConfig, observer: &mut dyn Observer) -> Report {
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let ctx = &plan.ctx;
    let host = &ctx.host;
    let overhead = timer_overhead();
    config.debug_assert_valid();
    let rounds = config.rounds();
    let planned = plan.len() * rounds;
    observer.start(planned);
    let (probes, facts) = probe_all(plan.benches.iter().map(|pb| pb.bench), ctx);
    let assembler = Assembler {
        started_at,
        host: {
            let mut h = (**host).clone();
            h.extra.extend(facts);
            h
        },
        cluster: config.cluster().cloned(),
        config: RunConfigRecord {
            selectors: config.selectors().to_vec(),
            params: config.sweep().clone(),
            runs: config.runs(),
            rounds,
            min_sample_time_s: config.min_sample_time().as_secs_f64(),
            warmup_time_s: config.warmup().as_secs_f64(),
            duration_s: config.duration().map(|d| d.as_secs_f64()),
            interval_s: config.duration().map(|_| config.interval().as_secs_f64()),
            quick: config.is_quick(),
            timer_overhead_s: overhead,
            options: redacted_options(plan, config),
            slo: config.slo().map(ToString::to_string),
        },
        planned,
    };
    let mut slots: Vec<(Record, Hists)> = Vec::new();
    // The slot each point's record of round 1 took, for the next rounds to
    // merge into (a search takes one slot per step and its summary last).
    let mut slot_of: Vec<usize> = Vec::new();
    let mut done = 0;
    'outer: for round in 1..=rounds {
        let mut k = 0;
        for (pb, (meta, probe)) in plan.benches.iter().zip(&probes) {
            for point in &pb.points {
                if ctx.cancelled() {
                    break 'outer;
                }
                observer.record_start(&meta.id, point);
                if *probe == Probe::Ready && crate::capacity::is_search(point, config) {
                    // A capacity search: one record per step, then its
                    // summary (a time series is refused at plan time;
                    // each round searches again).
                    let records =
                        crate::capacity::search(pb.bench, meta, point, ctx, config, observer);
                    if round > 1 {
                        // Another search of the same point: its answer
                        // joins the first search's summary.
                        if let Some(last) = records.last() {
                            let slot = &mut slots[slot_of[k]].0;
                            crate::capacity::merge_search(slot, last, round);
                            observer.record_done(slot);
                        }
                    } else {
                        let n = records.len();
                        for (i, mut record) in records.into_iter().enumerate() {
                            if host.build.is_debug() && record.status == Status::Ok {
                                record.warnings.push(Caveat::DebugBuild);
                            }
                            if i + 1 == n {
                                observer.record_done(&record);
                            }
                            slots.push((record, Vec::new()));
                        }
                        slot_of.push(slots.len() - 1);
                    }
                    k += 1;
                    done += 1;
                    if done < planned && observer.wants_checkpoints() {
                        observer.checkpoint(&assembler.report(&slots, done));
                    }
                    continue;
                }
                let (mut record, hists) = match probe {
                    Probe::Skip(reason) => (
                        Record::skipped(&meta.id, point.clone(), reason.clone()),
                        Vec::new(),
                    ),
                    Probe::Ready => {
                        run_point(pb.bench, &meta.metrics, &meta.id, point, ctx, config)
                    }
                };
                if host.build.is_debug() && record.status == Status::Ok {
                    record.warnings.push(Caveat::DebugBuild);
                }
                if round == 1 {
                    observer.record_done(&record);
                    slots.push((record, hists));
                    slot_of.push(slots.len() - 1);
                } else {
                    merge_round(&mut slots[slot_of[k]], record, hists, round);
                    observer.record_done(&slots[slot_of[k]].0);
                }
                k += 1;
                done += 1;
                if done < planned && observer.wants_checkpoints() {
                    observer.checkpoint(&assembler.report(&slots, done));
                }
            }
        }
    }
    assembler.report(&slots, done)
}

/// Builds the report from the records so far: the final one, or a
/// checkpoint while the run goes on.
struct Assembler {
    started_at: String,
    host: crate::host::Host,
    cluster: Option<crate::cluster::Cluster>,
    config: RunConfigRecord,
    planned: usize,
}

impl Assembler {
    /// The report after `done` of the planned record steps.
    fn report(&self, slots: &[(Record, Hists)], done: usize) -> Report {
        let rounds = self.config.rounds;
        let complete = done >= self.planned;
        let mut records: Vec<Record> = slots
            .iter()
            .map(|(r, _)| {
                let mut r = r.clone();
                // A search's steps ran in its first round only (the next
                // rounds' answers join its summary): nothing pooled there.
                let step = r.load.as_ref().is_some_and(|l| l.step.is_some());
                if rounds > 1 && r.status == Status::Ok && !step {
                    let n = r.metrics.first().and_then(|m| m.rounds.as_ref()).map_or(1, Vec::len);
                    r.notes.push(if complete {
                        format!(
                            "samples pooled from {n} rounds (the whole plan run {n} times, one point after the other), so their spread includes the machine's drift between rounds"
                        )
                    } else {
                        format!("samples pooled from the {n} of {rounds} rounds that had finished when this report was written")
                    });
                }
                r
            })
            .collect();
        flag_same_params(&mut records);
        Report {
            schema_version: SCHEMA_VERSION.to_string(),
            tool_version: self.host.build.version.clone(),
            started_at: self.started_at.clone(),
            host: self.host.clone(),
            cluster: self.cluster.clone(),
            config: self.config.clone(),
            progress: (!complete).then_some(RunProgress {
                done,
                planned: self.planned,
            }),
            records,
        }
    }
}

/// Two sweep points can run the same thing once `auto` values are resolved
/// (`block=0,4K` on a random op: auto is 4K). Their records then have the
/// same id and parameters once resolved (`compare` still tells them apart by
/// the requested values), so say so
/// on each repeat.
fn flag_same_params(records: &mut [Record]) {
    for i in 1..records.len() {
        let (before, rest) = records.split_at_mut(i);
        let r = &mut rest[0];
        if let Some(j) = before
            .iter()
            .position(|b| b.id == r.id && b.params == r.params)
        {
            r.warnings.push(Caveat::SameParams { record: j + 1 });
        }
    }
}

/// Plans and runs in one call: the library's main entry point.
pub fn run(
    registry: &Registry,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<Report, ConfigError> {
    let plan = plan(registry, config)?;
    Ok(run_plan(&plan, config, observer))
}

/// The run's options as a report may show them: the value of every option
/// a selected benchmark declares secret (and of `token`, whatever declares
/// it) replaced by [`crate::bench::REDACTED`].
fn redacted_options(plan: &Plan<'_>, config: &RunConfig) -> BTreeMap<String, String> {
    let secret: Vec<Cow<'static, str>> = plan
        .benches
        .iter()
        .flat_map(|b| b.bench.options())
        .filter(|o| o.secret)
        .map(|o| o.name)
        .collect();
    config
        .options()
        .iter()
        .map(|(k, v)| {
            let hide = crate::bench::is_secret_key(k) || secret.iter().any(|s| s == k);
            (
                k.clone(),
                if hide {
                    crate::bench::REDACTED.to_string()
                } else {
                    v.clone()
                },
            )
        })
        .collect()
}

/// A fresh latency histogram (nanoseconds), for cases that record latencies.
pub fn new_latency_histogram() -> Histogram<u64> {
    latency_histogram()
}

/// Marks the run as cancelled (what the CLI's Ctrl-C handler does).
pub fn cancel(flag: &AtomicBool) {
    flag.store(true, Ordering::SeqCst);
}
