//! The runner: plans the sweep, then for each point prepares a case, sizes
//! its batches, warms it up, takes samples, and always tears it down.
//!
//! Timing model: a *sample* is one call to [`Case::run`] with a batch of
//! `iters` iterations, timed with [`Instant`] around the call (or with the
//! device time the case reports). Batches are sized during warm-up so a
//! sample lasts at least `min_sample_time` (default 10 ms), which keeps the
//! ~20-50 ns cost of reading the clock below 0.001% of a sample.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::bench::{Benchmark, Case, Context, Meta, MetricSource, MetricSpec, Probe, Work};
use crate::error::{BenchError, ConfigError};
use crate::host::Host;
use crate::param::Point;
use crate::registry::Registry;
use crate::report::{Metric, Record, Report, RunConfigRecord, SCHEMA_VERSION, SampleTails, Status};
use crate::stats::{LatencySummary, Summary, latency_histogram};
use crate::sweep::{Defaults, expand};

/// Coefficient of variation above which a record gets a "noisy" warning.
pub const NOISY_CV: f64 = 0.10;

/// A validated run configuration. Build it with [`RunConfig::default`] and
/// set fields; [`RunConfig::validate`] is called by [`run`].
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Which benchmarks (`all`, `os`, `os.syscall`, `mem.*`). Empty = all.
    pub selectors: Vec<String>,
    /// Parameter sweeps as typed (`threads` → `1,2,4`, `block` → `4K..1M:x2`).
    pub sweep: BTreeMap<String, String>,
    /// Samples per record (`--runs`). Default 5.
    pub runs: usize,
    /// Rounds (`--rounds`): the whole plan is run this many times, one
    /// benchmark point after the other in each round, and each record pools
    /// the samples of every round. Default 1.
    pub rounds: usize,
    /// Minimum duration of one sample (`--min-sample-time`). Default 10 ms.
    pub min_sample_time: Duration,
    /// Warm-up before the first sample (`--warmup`). Default 100 ms.
    pub warmup: Duration,
    /// Time-series mode (`--duration`): sample for this long.
    pub duration: Option<Duration>,
    /// Time-series interval (`--interval`). Default 1 s with `--duration`.
    pub interval: Option<Duration>,
    /// `--quick`: fewer runs, shorter samples and warm-up, and benchmarks
    /// may shrink their defaults.
    pub quick: bool,
    /// Use each parameter's smoke value instead of its default (tests).
    pub smoke: bool,
    /// Where benchmarks may create files. Default: the system temp dir.
    pub scratch_dir: Option<PathBuf>,
    /// Module options (`peer`, `token`, `peak-mem-bw`).
    pub options: BTreeMap<String, String>,
    /// Set to stop after the current record (Ctrl-C).
    pub cancel: Arc<AtomicBool>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            selectors: Vec::new(),
            sweep: BTreeMap::new(),
            runs: 5,
            rounds: 1,
            min_sample_time: Duration::from_millis(10),
            warmup: Duration::from_millis(100),
            duration: None,
            interval: None,
            quick: false,
            smoke: false,
            scratch_dir: None,
            options: BTreeMap::new(),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl RunConfig {
    /// The configuration `--quick` gives: 3 runs, 5 ms samples, 20 ms warm-up.
    pub fn quick() -> Self {
        RunConfig {
            quick: true,
            runs: 3,
            min_sample_time: Duration::from_millis(5),
            warmup: Duration::from_millis(20),
            ..RunConfig::default()
        }
    }

    /// The configuration module conformance tests use: `selector` at the
    /// smoke point of every parameter not in `sweep`, 3 runs of ≥ 1 ms
    /// after a 1 ms warm-up.
    pub fn smoke_test(selector: &str, sweep: &[(&str, &str)]) -> Self {
        RunConfig {
            selectors: vec![selector.to_string()],
            sweep: sweep
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            smoke: true,
            runs: 3,
            min_sample_time: Duration::from_millis(1),
            warmup: Duration::from_millis(1),
            ..RunConfig::quick()
        }
    }

    /// Checks values that do not depend on a benchmark.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.runs == 0 {
            return Err(ConfigError::Invalid("--runs must be at least 1".into()));
        }
        if self.runs > 100_000 {
            return Err(ConfigError::Invalid("--runs must be at most 100000".into()));
        }
        if self.rounds == 0 || self.rounds > 1000 {
            return Err(ConfigError::Invalid(
                "--rounds must be between 1 and 1000".into(),
            ));
        }
        if self.rounds > 1 && self.duration.is_some() {
            return Err(ConfigError::Invalid(
                "--rounds cannot be combined with --duration (a time series is one continuous run)"
                    .into(),
            ));
        }
        if self.min_sample_time.is_zero() {
            return Err(ConfigError::Invalid(
                "--min-sample-time must be positive".into(),
            ));
        }
        if self.interval.is_some() && self.duration.is_none() {
            return Err(ConfigError::Invalid("--interval needs --duration".into()));
        }
        if let Some(d) = self.duration {
            let i = self.interval();
            if d.is_zero() || i.is_zero() {
                return Err(ConfigError::Invalid(
                    "--duration and --interval must be positive".into(),
                ));
            }
            if i > d {
                return Err(ConfigError::Invalid(format!(
                    "--interval ({i:?}) is longer than --duration ({d:?})"
                )));
            }
        }
        Ok(())
    }

    fn interval(&self) -> Duration {
        self.interval.unwrap_or(Duration::from_secs(1))
    }

    /// The context benchmarks see under this configuration on `host`.
    pub fn context(&self, host: Arc<Host>) -> Context {
        Context {
            host,
            scratch_dir: self.scratch_dir.clone().unwrap_or_else(std::env::temp_dir),
            quick: self.quick,
            options: self.options.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

/// One benchmark with the points it will run.
#[derive(Debug)]
pub struct PlannedBench<'r> {
    /// The benchmark.
    pub bench: &'r dyn Benchmark,
    /// Its sweep points, in order.
    pub points: Vec<Point>,
}

/// Everything that will run, fully validated.
#[derive(Debug)]
pub struct Plan<'r> {
    /// Benchmarks and their points.
    pub benches: Vec<PlannedBench<'r>>,
    /// The context every benchmark was validated against and will run in.
    pub ctx: Context,
}

impl Plan<'_> {
    /// The machine the plan was made for.
    pub fn host(&self) -> &Host {
        &self.ctx.host
    }

    /// Total number of records the run will produce.
    pub fn len(&self) -> usize {
        self.benches.iter().map(|b| b.points.len()).sum()
    }

    /// True if nothing will run.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Selects benchmarks and expands and validates every sweep point, before
/// anything runs. A parameter no selected benchmark accepts is an error
/// listing the valid ones.
pub fn plan<'r>(registry: &'r Registry, config: &RunConfig) -> Result<Plan<'r>, ConfigError> {
    plan_on(registry, config, Host::detect())
}

/// [`plan`] for a given host (an embedding program that knows better, or a
/// test that fakes one): benchmarks validate their points against it, and
/// [`run_plan`] records it.
pub fn plan_on<'r>(
    registry: &'r Registry,
    config: &RunConfig,
    host: Host,
) -> Result<Plan<'r>, ConfigError> {
    config.validate()?;
    let ctx = config.context(Arc::new(host));
    let selected = registry.select(&config.selectors)?;
    let metas: Vec<_> = selected.iter().map(|b| b.meta()).collect();
    for name in config.sweep.keys() {
        if !metas.iter().any(|m| m.param(name).is_some()) {
            let mut valid: Vec<&str> = metas
                .iter()
                .flat_map(|m| m.params.iter().map(|p| p.name))
                .collect();
            valid.sort_unstable();
            valid.dedup();
            return Err(ConfigError::UnknownParam {
                param: name.clone(),
                valid: if valid.is_empty() {
                    "(none)".into()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    let defaults = if config.smoke {
        Defaults::Smoke
    } else {
        Defaults::Default
    };
    let mut benches = Vec::new();
    for (bench, meta) in selected.into_iter().zip(&metas) {
        let points = expand(meta, &config.sweep, defaults)?;
        for p in &points {
            bench.validate(&ctx, p)?;
        }
        benches.push(PlannedBench { bench, points });
    }
    Ok(Plan { benches, ctx })
}

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
    observer.start(plan.len() * rounds);
    let (probes, facts) = probe_all(plan.benches.iter().map(|pb| pb.bench), ctx);
    let mut slots: Vec<(Record, Hists)> = Vec::new();
    'outer: for round in 1..=rounds {
        let mut k = 0;
        for (pb, (meta, probe)) in plan.benches.iter().zip(&probes) {
            for point in &pb.points {
                if ctx.cancelled() {
                    break 'outer;
                }
                observer.record_start(meta.id, point);
                let (mut record, hists) = match probe {
                    Probe::Skip(reason) => (
                        Record::skipped(meta.id, point.clone(), reason.clone()),
                        Vec::new(),
                    ),
                    Probe::Ready => run_point(pb.bench, &meta.metrics, meta.id, point, ctx, config),
                };
                if host.build.is_debug() && record.status == Status::Ok {
                    record
                        .warnings
                        .push("debug build: numbers are not representative; install with `cargo install --path cli`".into());
                }
                if round == 1 {
                    observer.record_done(&record);
                    slots.push((record, hists));
                } else {
                    merge_round(&mut slots[k], record, hists, round);
                    observer.record_done(&slots[k].0);
                }
                k += 1;
            }
        }
    }
    let done_rounds = if ctx.cancelled() { None } else { Some(rounds) };
    let mut records: Vec<Record> = slots
        .into_iter()
        .map(|(mut r, _)| {
            if rounds > 1 && r.status == Status::Ok {
                r.notes.push(match done_rounds {
                    Some(n) => format!(
                        "samples pooled from {n} rounds (the whole plan run {n} times, one point after the other), so their spread includes the machine's drift between rounds"
                    ),
                    None => "samples pooled from the rounds finished before the interrupt".into(),
                });
            }
            r
        })
        .collect();
    flag_same_params(&mut records);
    Report {
        schema_version: SCHEMA_VERSION.to_string(),
        tool_version: host.build.version.clone(),
        started_at,
        host: {
            let mut h = (**host).clone();
            h.extra.extend(facts);
            h
        },
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
            options: config.options.clone(),
        },
        records,
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
            r.warnings.push(format!(
                "same parameters as record {} of this report once `auto` values were resolved: both measured the same thing",
                j + 1
            ));
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

/// Share of CPU time stolen by the hypervisor above which a record gets a
/// warning.
pub const STEAL_WARN: f64 = 0.02;

/// Aggregate CPU time counters from `/proc/stat` (Linux), in ticks.
#[derive(Debug, Clone, Copy)]
struct CpuTimes {
    total: u64,
    steal: u64,
}

impl CpuTimes {
    fn read() -> Option<CpuTimes> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal [guest guest_nice]:
        // guest time is already counted in user/nice, so sum the first eight.
        (v.len() >= 8).then(|| CpuTimes {
            total: v[..8].iter().sum(),
            steal: v[7],
        })
    }

    fn steal_fraction_since(&self, before: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(before.total)?;
        let steal = self.steal.checked_sub(before.steal)?;
        (total > 0).then(|| steal as f64 / total as f64)
    }
}

/// `point` with the values the case resolved in `prepare`.
fn resolved_point(point: &Point, case: &dyn Case) -> Point {
    let mut p = point.clone();
    for (name, value) in case.resolved() {
        if p.get(name).is_some() {
            p.set(name, value);
        }
    }
    p
}

/// One timed batch: the work and the time it took.
struct Batch {
    work: Work,
    secs: f64,
}

fn timed(case: &mut dyn Case, iters: u64) -> Result<Batch, BenchError> {
    let t0 = Instant::now();
    let work = case.run(iters)?;
    let wall = t0.elapsed();
    let secs = work.elapsed.unwrap_or(wall).as_secs_f64();
    Ok(Batch { work, secs })
}

fn run_point(
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
                Record::failed(id, point.clone(), format!("prepare: {e}")),
                Vec::new(),
            );
        }
        Err(p) => {
            let why = format!("prepare panicked: {}", panic_message(&p));
            return (Record::failed(id, point.clone(), why), Vec::new());
        }
    };
    let cpu_before = CpuTimes::read();
    let measured = catch_unwind(AssertUnwindSafe(|| {
        measure(case.as_mut(), specs, ctx, config)
    }))
    .unwrap_or_else(|p| {
        Err(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        )))
    });
    let teardown = catch_unwind(AssertUnwindSafe(|| case.teardown())).unwrap_or_else(|p| {
        Err(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        )))
    });
    let steal = CpuTimes::read()
        .zip(cpu_before)
        .and_then(|(after, before)| after.steal_fraction_since(&before));
    let mut hists = Vec::new();
    let mut record = match measured {
        Ok((iters, metrics, mut warnings, h)) => {
            hists = h;
            warnings.extend(case.warnings());
            if let Some(st) = steal.filter(|s| *s > STEAL_WARN) {
                warnings.push(format!(
                    "the hypervisor stole {:.1}% of CPU time while this record ran: other guests were competing for the host, expect run-to-run variation",
                    st * 100.0
                ));
            }
            let peak = case.peak().map(|mut pk| {
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
            let params = resolved_point(point, case.as_ref());
            Record {
                id: id.to_string(),
                requested: (params != *point).then(|| point.clone()),
                params,
                status: Status::Ok,
                reason: None,
                iters_per_sample: Some(iters),
                metrics,
                peak,
                warnings,
                notes: case.notes(),
            }
        }
        Err(e) => {
            let params = resolved_point(point, case.as_ref());
            let mut r = Record::failed(id, params.clone(), e.to_string());
            r.requested = (params != *point).then(|| point.clone());
            r.warnings.extend(case.warnings());
            r.notes.extend(case.notes());
            r
        }
    };
    if let Err(e) = teardown {
        record.status = Status::Failed;
        let msg = format!("teardown: {e}");
        record.reason = Some(match record.reason.take() {
            Some(r) => format!("{r}; {msg}"),
            None => msg,
        });
    }
    (record, hists)
}

/// Each metric's latency histogram (merged over the samples), if it has one.
type Hists = Vec<Option<Histogram<u64>>>;

/// The warning for a metric whose samples spread too much.
fn noisy_warning(metric: &str, summary: &Summary, n: usize) -> Option<String> {
    (summary.cv > NOISY_CV && n > 2).then(|| {
        format!(
            "{metric} is noisy: CV {:.1}% over {n} samples; consider more --runs or a quieter machine",
            summary.cv * 100.0
        )
    })
}

/// Adds one more round of a record to what the earlier rounds gave: samples
/// pooled and summarised again, latency histograms added, warnings and notes
/// merged. A round that did not run fails the record, naming the round.
fn merge_round(slot: &mut (Record, Hists), new: Record, new_hists: Hists, round: usize) {
    let (rec, hists) = slot;
    if rec.status != Status::Ok {
        return;
    }
    if new.status != Status::Ok {
        rec.status = Status::Failed;
        rec.reason = Some(format!(
            "round {round}: {}",
            new.reason.as_deref().unwrap_or("did not run")
        ));
        return;
    }
    for (i, m) in rec.metrics.iter_mut().enumerate() {
        let Some(j) = new.metrics.iter().position(|x| x.name == m.name) else {
            continue;
        };
        let before = m.samples.len();
        let nm = &new.metrics[j];
        m.samples.extend_from_slice(&nm.samples);
        let sizes = m.rounds.get_or_insert_with(|| vec![before]);
        sizes.push(nm.samples.len());
        m.tails = match (m.tails.take(), &nm.tails) {
            (Some(a), Some(b)) => {
                let join = |x: Option<Vec<f64>>, y: &Option<Vec<f64>>| match (x, y) {
                    (Some(mut x), Some(y)) => {
                        x.extend_from_slice(y);
                        Some(x)
                    }
                    _ => None,
                };
                let t = SampleTails {
                    p99: join(a.p99, &b.p99),
                    p99_9: join(a.p99_9, &b.p99_9),
                };
                (t.p99.is_some() || t.p99_9.is_some()).then_some(t)
            }
            _ => None,
        };
        if let Ok(sum) = Summary::new(&m.samples) {
            m.summary = sum;
        }
        if let (Some(Some(h)), Some(Some(nh))) = (hists.get_mut(i), new_hists.get(j)) {
            // Both histograms auto-resize, so adding cannot fail on range.
            let _ = h.add(nh);
            m.latency = LatencySummary::from_histogram_ns(h);
        }
    }
    // Noise and efficiency warnings are about the pooled samples now.
    let stale = |w: &String| {
        rec.metrics.iter().any(|m| {
            w.starts_with(&format!("{} is noisy:", m.name))
                || w.starts_with(&format!("measured {} is ", m.name))
        })
    };
    rec.warnings.retain(|w| !stale(w));
    for w in new.warnings {
        if !stale(&w) && !rec.warnings.contains(&w) {
            rec.warnings.push(w);
        }
    }
    for n in new.notes {
        if !rec.notes.contains(&n) {
            rec.notes.push(n);
        }
    }
    for m in &rec.metrics {
        rec.warnings
            .extend(noisy_warning(&m.name, &m.summary, m.samples.len()));
    }
    if let Some(pk) = &mut rec.peak
        && let Some(m) = rec.metrics.iter().find(|m| m.name == pk.metric)
    {
        let eff = m.summary.median / pk.value;
        if eff.is_finite() {
            pk.efficiency = Some(eff);
            if eff > 1.0 {
                rec.warnings.push(over_peak_warning(&pk.metric, eff));
            }
        }
    }
}

/// The warning for a result above its theoretical peak.
fn over_peak_warning(metric: &str, eff: f64) -> String {
    format!(
        "measured {metric} is {:.1}% of the theoretical peak: above 100% means a bug or a cache effect, not a faster machine",
        eff * 100.0
    )
}

/// Calibrates the batch size during warm-up, then samples.
fn measure(
    case: &mut dyn Case,
    specs: &[MetricSpec],
    ctx: &Context,
    config: &RunConfig,
) -> Result<(u64, Vec<Metric>, Vec<String>, Hists), BenchError> {
    let target = config.min_sample_time.as_secs_f64();
    let mut warnings = Vec::new();
    // Warm-up and batch sizing: grow the batch until one lasts `target`,
    // then keep running full batches until the warm-up time has passed.
    let warm_start = Instant::now();
    let mut iters: u64 = 1;
    loop {
        let mut b = timed(case, iters)?;
        if b.secs >= target {
            // Confirm before fixing the batch size: a one-off stall (a
            // preemption, a thread wake-up, a cold first call) must not leave
            // every sample a single slow iteration that measures the stall.
            b = timed(case, iters)?;
            if b.secs >= target / 2.0 {
                break;
            }
        }
        let grow = if b.secs <= 0.0 {
            10.0
        } else {
            (target / b.secs * 1.2).clamp(1.5, 10.0)
        };
        let next = (iters as f64 * grow).ceil() as u64;
        if next >= 1 << 40 {
            return Err(BenchError::Other(format!(
                "a batch of {iters} iterations took only {:.0} ns; the case does no measurable work",
                b.secs * 1e9
            )));
        }
        iters = next;
    }
    while warm_start.elapsed() < config.warmup && !ctx.cancelled() {
        timed(case, iters)?;
    }

    let mut batches: Vec<Batch> = Vec::new();
    let mut stamps: Option<Vec<f64>> = None;
    if let Some(duration) = config.duration {
        // Time series: each sample aggregates the batches of one interval.
        let interval = config.interval().as_secs_f64();
        let t0 = Instant::now();
        let mut ts = Vec::new();
        while t0.elapsed() < duration {
            let start = Instant::now();
            let mut agg = Batch {
                work: Work::default(),
                secs: 0.0,
            };
            while start.elapsed().as_secs_f64() < interval {
                let b = timed(case, iters)?;
                merge(&mut agg, b);
                if ctx.cancelled() {
                    break;
                }
            }
            ts.push(t0.elapsed().as_secs_f64());
            batches.push(agg);
            if ctx.cancelled() {
                warnings.push(format!(
                    "interrupted: time series cut short after {:.1} s",
                    t0.elapsed().as_secs_f64()
                ));
                break;
            }
        }
        stamps = Some(ts);
    } else {
        for _ in 0..config.runs {
            batches.push(timed(case, iters)?);
        }
    }

    let mut metrics = Vec::new();
    let mut hists = Vec::new();
    for spec in specs {
        let mut samples = Vec::with_capacity(batches.len());
        let mut merged: Option<Histogram<u64>> = None;
        let mut tails = TailsBuilder::default();
        for b in &batches {
            samples.push(sample_value(spec, b)?);
            if let (MetricSource::Latency, Some(h)) = (&spec.source, &b.work.latency) {
                tails.add(h);
                match &mut merged {
                    Some(m) => m
                        .add(h)
                        .map_err(|e| BenchError::Other(format!("histogram merge: {e}")))?,
                    None => merged = Some(h.clone()),
                }
            }
        }
        let summary = Summary::new(&samples)
            .map_err(|e| BenchError::Other(format!("metric {}: {e}", spec.name)))?;
        warnings.extend(noisy_warning(spec.name, &summary, samples.len()));
        let tails = tails.finish(samples.len());
        metrics.push(Metric {
            name: spec.name.to_string(),
            unit: spec.unit.to_string(),
            direction: spec.direction,
            samples,
            timestamps: stamps.clone(),
            rounds: None,
            tails,
            summary,
            latency: merged.as_ref().and_then(LatencySummary::from_histogram_ns),
        });
        hists.push(merged);
    }
    Ok((iters, metrics, warnings, hists))
}

/// Collects each sample's own p99 and p99.9 from its histogram. A
/// percentile is kept only when every sample had enough operations for it
/// to be more than that sample's maximum (100 for p99, 1000 for p99.9).
#[derive(Default)]
struct TailsBuilder {
    p99: Vec<f64>,
    p99_9: Vec<f64>,
    min_count: Option<u64>,
}

impl TailsBuilder {
    fn add(&mut self, h: &Histogram<u64>) {
        self.p99.push(h.value_at_quantile(0.99) as f64 * 1e-9);
        self.p99_9.push(h.value_at_quantile(0.999) as f64 * 1e-9);
        self.min_count = Some(self.min_count.map_or(h.len(), |c| c.min(h.len())));
    }

    fn finish(self, samples: usize) -> Option<SampleTails> {
        let count = self.min_count?;
        if self.p99.len() != samples {
            return None;
        }
        let t = SampleTails {
            p99: (count >= 100).then_some(self.p99),
            p99_9: (count >= 1000).then_some(self.p99_9),
        };
        (t.p99.is_some() || t.p99_9.is_some()).then_some(t)
    }
}

fn merge(agg: &mut Batch, b: Batch) {
    agg.secs += b.secs;
    agg.work.ops += b.work.ops;
    agg.work.bytes += b.work.bytes;
    if let Some(h) = b.work.latency {
        match &mut agg.work.latency {
            Some(m) => {
                // Both histograms auto-resize, so adding cannot fail on range.
                let _ = m.add(&h);
            }
            None => agg.work.latency = Some(h),
        }
    }
    // Reported values: keep the latest interval's value.
    agg.work.values.extend(b.work.values);
}

fn sample_value(spec: &MetricSpec, b: &Batch) -> Result<f64, BenchError> {
    let w = &b.work;
    let need_ops = || {
        if w.ops == 0 {
            Err(BenchError::Other(format!(
                "metric {}: the batch reported 0 operations",
                spec.name
            )))
        } else {
            Ok(w.ops as f64)
        }
    };
    let need_time = || {
        if b.secs > 0.0 {
            Ok(b.secs)
        } else {
            Err(BenchError::Other(format!(
                "metric {}: zero elapsed time",
                spec.name
            )))
        }
    };
    match &spec.source {
        MetricSource::TimePerOp => Ok(need_time()? / need_ops()?),
        MetricSource::OpsPerSec => Ok(need_ops()? / need_time()?),
        MetricSource::BytesPerSec => Ok(w.bytes as f64 / need_time()?),
        MetricSource::Latency => match &w.latency {
            Some(h) if !h.is_empty() => Ok(h.mean() * 1e-9),
            _ => Err(BenchError::Other(format!(
                "metric {}: the case recorded no latencies",
                spec.name
            ))),
        },
        MetricSource::Reported(key) => w.values.get(key).copied().ok_or_else(|| {
            BenchError::Other(format!(
                "metric {}: the case did not report `{key}`",
                spec.name
            ))
        }),
    }
}

/// A fresh latency histogram (nanoseconds), for cases that record latencies.
pub fn new_latency_histogram() -> Histogram<u64> {
    latency_histogram()
}

/// Marks the run as cancelled (what the CLI's Ctrl-C handler does).
pub fn cancel(flag: &AtomicBool) {
    flag.store(true, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn hist(values_ns: &[u64]) -> Histogram<u64> {
        let mut h = latency_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn a_round_pools_samples_histograms_and_efficiency() {
        // mem.bandwidth: bandwidth 2.4/2.5/2.6 GB/s against a 5 GB/s peak,
        // and a latency metric.
        let first = fixtures::report().records[1].clone();
        let mut second = first.clone();
        second.metrics[0].samples = vec![5.4e9, 5.5e9, 5.6e9];
        second.warnings = vec!["a caveat of round 2".into()];
        let mut slot = (first, vec![None, Some(hist(&[1000, 1000]))]);
        merge_round(&mut slot, second, vec![None, Some(hist(&[3000]))], 2);
        let (r, _) = &slot;
        assert_eq!(r.status, Status::Ok);
        let bw = &r.metrics[0];
        assert_eq!(bw.samples.len(), 6);
        assert_eq!(bw.summary.median, (2.6e9 + 5.4e9) / 2.0);
        // The spread between rounds is noise now, and said so.
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("bandwidth is noisy:")),
            "{:?}",
            r.warnings
        );
        assert!(r.warnings.contains(&"a caveat of round 2".to_string()));
        let eff = r.peak.as_ref().unwrap().efficiency.unwrap();
        assert!((eff - 0.8).abs() < 1e-12, "{eff}");
        let lat = r.metrics[1].latency.as_ref().unwrap();
        assert_eq!(lat.count, 3);
        assert!(lat.max >= 2.9e-6, "{lat:?}");
    }

    #[test]
    fn a_failed_round_fails_the_record_naming_the_round() {
        let first = fixtures::report().records[0].clone();
        let failed = Record::failed("os.syscall", first.params.clone(), "boom");
        let mut slot = (first, Vec::new());
        merge_round(&mut slot, failed, Vec::new(), 3);
        assert_eq!(slot.0.status, Status::Failed);
        assert_eq!(slot.0.reason.as_deref(), Some("round 3: boom"));
    }
}
