//! The runner: runs a plan (see [`plan`]): for each point prepares a case, sizes
//! its batches, warms it up, takes samples, and always tears it down.
//!
//! Timing model: a *sample* is one call to [`Case::run`](crate::Case::run) with a batch of
//! `iters` iterations, timed with [`Instant`] around the call (or with the
//! device time the case reports). Batches are sized during warm-up so a
//! sample lasts at least `min_sample_time` (default 10 ms), which keeps the
//! ~20-50 ns cost of reading the clock below 0.001% of a sample.

//!
//! Files: `measure.rs` sizes batches and turns samples into metrics,
//! `rounds.rs` pools the rounds of `--rounds`, `steal.rs` reads the
//! hypervisor's steal time; this file runs the plan and each point.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::bench::{About, Benchmark, Context, Finished, Meta, MetricSpec, Probe};
use crate::caveat::Caveat;
use crate::error::{BenchError, ConfigError, error_chain};
use crate::openloop::{OpenLoad, Rate};
use crate::param::{Point, Value};
use crate::registry::Registry;
use crate::report::{Record, Report, RunConfigRecord, RunProgress, SCHEMA_VERSION, Status};
use crate::stats::latency_histogram;

pub use crate::config::RunConfig;
pub use crate::plan::{Plan, PlannedBench, plan, plan_on};
pub use measure::NOISY_CV;
pub use rounds::{pool_reports, pool_rounds};
pub use steal::STEAL_WARN;

mod measure;
mod rounds;
mod steal;

use measure::{Hists, Measured, measure, over_peak_warning};
use rounds::merge_round;
use steal::CpuTimes;

/// The shortest sample of an open-loop point (`rate=N`): 100 ms.
pub const OPEN_LOOP_SAMPLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Receives progress events; the CLI draws a progress bar from them.
pub trait Observer {
    /// The run is about to start `total` records.
    fn start(&mut self, total: usize) {
        let _ = total;
    }
    /// A record is starting.
    fn record_start(&mut self, id: &str, point: &Point) {
        let _ = (id, point);
    }
    /// A record is done.
    fn record_done(&mut self, record: &Record) {
        let _ = record;
    }
    /// One step of a capacity search is done (`rate=auto`, `--slo`; see
    /// [`crate::capacity`]): a record of its own, within the one planned
    /// record of the search, whose summary then comes to
    /// [`Observer::record_done`]. Its last note says what the step found.
    fn step_done(&mut self, record: &Record) {
        let _ = record;
    }
    /// Whether [`Observer::checkpoint`] should be called (building the
    /// report costs a copy of every record so far). Default: no.
    fn wants_checkpoints(&self) -> bool {
        false
    }
    /// The report so far, after each record but the last (its
    /// [`Report::progress`] says how far the run got): write it somewhere
    /// safe, so a crash or `kill -9` loses only the record in flight.
    fn checkpoint(&mut self, report: &Report) {
        let _ = report;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;
impl Observer for Silent {}

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
    let rounds = config.rounds.max(1);
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
        cluster: config.cluster.clone(),
        config: RunConfigRecord {
            selectors: config.selectors.clone(),
            params: config.sweep.clone(),
            runs: config.runs,
            rounds,
            min_sample_time_s: config.min_sample_time.as_secs_f64(),
            warmup_time_s: config.warmup.as_secs_f64(),
            duration_s: config.duration.map(|d| d.as_secs_f64()),
            interval_s: config.duration.map(|_| config.interval().as_secs_f64()),
            quick: config.quick,
            timer_overhead_s: overhead,
            options: redacted_options(plan, config),
            slo: config.slo.as_ref().map(ToString::to_string),
        },
        planned,
    };
    let mut slots: Vec<(Record, Hists)> = Vec::new();
    let mut done = 0;
    'outer: for round in 1..=rounds {
        let mut k = 0;
        for (pb, (meta, probe)) in plan.benches.iter().zip(&probes) {
            for point in &pb.points {
                if ctx.cancelled() {
                    break 'outer;
                }
                observer.record_start(meta.id, point);
                if *probe == Probe::Ready && crate::capacity::is_search(point, config) {
                    // A capacity search: one record per step, then its
                    // summary (rounds and time series are refused at plan
                    // time).
                    let records =
                        crate::capacity::search(pb.bench, meta, point, ctx, config, observer);
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
                    k += 1;
                    done += 1;
                    if done < planned && observer.wants_checkpoints() {
                        observer.checkpoint(&assembler.report(&slots, done));
                    }
                    continue;
                }
                let (mut record, hists) = match probe {
                    Probe::Skip(reason) => (
                        Record::skipped(meta.id, point.clone(), reason.clone()),
                        Vec::new(),
                    ),
                    Probe::Ready => run_point(pb.bench, &meta.metrics, meta.id, point, ctx, config),
                };
                if host.build.is_debug() && record.status == Status::Ok {
                    record.warnings.push(Caveat::DebugBuild);
                }
                if round == 1 {
                    observer.record_done(&record);
                    slots.push((record, hists));
                } else {
                    merge_round(&mut slots[k], record, hists, round);
                    observer.record_done(&slots[k].0);
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
                if rounds > 1 && r.status == Status::Ok {
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

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The run's options as a report may show them: the value of every option
/// a selected benchmark declares secret (and of `token`, whatever declares
/// it) replaced by [`crate::bench::REDACTED`].
fn redacted_options(plan: &Plan<'_>, config: &RunConfig) -> BTreeMap<String, String> {
    let secret: Vec<&'static str> = plan
        .benches
        .iter()
        .flat_map(|b| b.bench.options())
        .filter(|o| o.secret)
        .map(|o| o.name)
        .collect();
    config
        .options
        .iter()
        .map(|(k, v)| {
            let hide = crate::bench::is_secret_key(k) || secret.contains(&k.as_str());
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

/// `point` with the values the case resolved in `prepare`.
fn resolved_point(point: &Point, resolved: &[(&'static str, Value)]) -> Point {
    let mut p = point.clone();
    for (name, value) in resolved {
        if p.get(name).is_some() {
            p.set(name, value.clone());
        }
    }
    p
}

pub(crate) fn run_point(
    bench: &dyn Benchmark,
    specs: &[MetricSpec],
    id: &str,
    point: &Point,
    ctx: &Context,
    config: &RunConfig,
) -> (Record, Hists) {
    let mut case = match catch_unwind(AssertUnwindSafe(|| bench.prepare(ctx, point))) {
        Ok(Ok(c)) => c,
        Ok(Err(BenchError::Skip(reason))) => {
            return (Record::skipped(id, point.clone(), reason), Vec::new());
        }
        Ok(Err(e)) => {
            return (
                Record::failed(id, point.clone(), format!("prepare: {}", error_chain(&e))),
                Vec::new(),
            );
        }
        Err(p) => {
            let why = format!("prepare panicked: {}", panic_message(&p));
            return (Record::failed(id, point.clone(), why), Vec::new());
        }
    };
    let cpu_before = CpuTimes::read();
    // An open-loop point: samples of at least OPEN_LOOP_SAMPLE, so the
    // drain at the end of each (its last operations' latency) is a small
    // part of it; batches grow from two operations, since one takes a
    // latency whatever the rate (growing from it overshoots at low rates:
    // 1 then 10 at rate=1 is a 9 s batch), and two take one period. Not
    // from the rate's full sample size: a system that does not keep up
    // would take that many operations at its own, lower speed.
    let open_config;
    let (config, first) = match Rate::of(point).fixed() {
        Some(_) => {
            open_config = RunConfig {
                min_sample_time: config.min_sample_time.max(OPEN_LOOP_SAMPLE),
                ..config.clone()
            };
            (&open_config, 2)
        }
        None => (config, 1),
    };
    let measured = catch_unwind(AssertUnwindSafe(|| {
        measure(case.as_mut(), specs, ctx, config, first)
    }))
    .unwrap_or_else(|p| {
        Err(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        )))
    });
    let finished = catch_unwind(AssertUnwindSafe(|| case.finish())).unwrap_or_else(|p| Finished {
        error: Some(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        ))),
        ..Finished::default()
    });
    let steal = CpuTimes::read()
        .zip(cpu_before)
        .and_then(|(after, before)| after.steal_fraction_since(&before));
    let About {
        peak,
        caveats,
        notes,
        resolved,
    } = finished.about;
    let params = resolved_point(point, &resolved);
    let requested = (params != *point).then(|| point.clone());
    let mut hists = Vec::new();
    let mut record = match measured {
        Ok(Measured {
            iters,
            metrics,
            mut warnings,
            hists: h,
            ops,
            secs,
        }) => {
            hists = h;
            let load = Rate::of(point)
                .fixed()
                .map(|offered| OpenLoad::new(offered, ops, secs));
            if let Some(l) = load.filter(|l| l.saturated) {
                warnings.push(Caveat::Saturated {
                    offered: l.offered,
                    achieved: l.achieved,
                });
            }
            warnings.extend(caveats);
            if let Some(st) = steal.filter(|s| *s > STEAL_WARN) {
                warnings.push(Caveat::Steal { fraction: st });
            }
            let peak = peak.map(|mut pk| {
                if let Some(m) = metrics.iter().find(|m| m.name == pk.metric) {
                    let eff = m.summary.median / pk.value;
                    if eff.is_finite() {
                        pk.efficiency = Some(eff);
                        if eff > 1.0 {
                            warnings.push(over_peak_warning(&pk.metric, eff));
                        }
                    }
                }
                pk
            });
            Record {
                requested,
                iters_per_sample: Some(iters),
                peak,
                warnings,
                notes,
                load,
                ..Record::ok(id, params, metrics)
            }
        }
        Err(e) => {
            let mut r = Record::failed(id, params, error_chain(&e));
            r.requested = requested;
            r.warnings.extend(caveats);
            r.notes.extend(notes);
            r
        }
    };
    if let Some(e) = finished.error {
        record.status = Status::Failed;
        let msg = format!("teardown: {}", error_chain(&e));
        record.reason = Some(match record.reason.take() {
            Some(r) => format!("{r}; {msg}"),
            None => msg,
        });
    }
    (record, hists)
}

/// A fresh latency histogram (nanoseconds), for cases that record latencies.
pub fn new_latency_histogram() -> Histogram<u64> {
    latency_histogram()
}

/// Marks the run as cancelled (what the CLI's Ctrl-C handler does).
pub fn cancel(flag: &AtomicBool) {
    flag.store(true, Ordering::SeqCst);
}
