//! The reference runner: each planned record measured by benchsuite and by
//! its reference tool, interleaved A B A B for a number of rounds, the
//! tool's median and the ratio attached to the record (`reference`).
//!
//! Ours: the one point through the runner, one round at a time, pooled as
//! `--rounds` pools. The tool: the command line the benchmark's
//! [`Benchmark::reference`](crate::Benchmark::reference) gives, its server
//! (if any) started first and killed after, its scratch files removed.
//! The tool and its server each run in a process group of their own
//! ([`ToolProcess`]): a timeout, a cancel (Ctrl-C) or the end of the round
//! stops everything they forked.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::tool::{PIPE_GRACE, Scratch, find_program, probe_version, tool_command};
use super::{PipeTail, Reference, ReferenceResult, Stopped, ToolProcess};
use crate::config::RunConfig;
use crate::metric::Direction;
use crate::plan::{Plan, PlannedBench};
use crate::results::{Record, Report, Status};
use crate::runner::Silent;
use crate::units::format_value;

/// A record's value of a reference's metric: the metric's median, or for
/// `NAME.pNN` (`latency.p99`, `rtt.p99_9`, `latency.p50`) that latency
/// percentile of metric `NAME`, in seconds. Also the unit and direction.
pub fn metric_value(record: &Record, name: &str) -> Option<(f64, String, Direction)> {
    match name.split_once('.') {
        Some((base, pct)) => {
            let m = record.metric(base)?;
            let l = m.latency.as_ref()?;
            let v = match pct {
                "p50" => l.p50,
                "p90" => l.p90,
                "p99" => l.p99,
                "p99_9" | "p99.9" => l.p99_9,
                "p99_99" | "p99.99" => l.p99_99,
                "max" => l.max,
                _ => return None,
            };
            Some((v, m.unit.clone(), m.direction))
        }
        None => {
            let m = record.metric(name)?;
            Some((m.summary.median, m.unit.clone(), m.direction))
        }
    }
}

/// What the reference runner tells as it goes (the CLI prints it).
pub trait ReferenceObserver {
    /// Point `done` of `total` starts.
    fn point(&mut self, done: usize, total: usize, id: &str, label: &str) {
        let _ = (done, total, id, label);
    }
    /// Our round `round` of `rounds` gave `record`; `metric` is the one the
    /// tool measures (if any).
    fn our_round(&mut self, round: usize, rounds: usize, record: &Record, metric: Option<&str>) {
        let _ = (round, rounds, record, metric);
    }
    /// The tool's round gave a value in `unit`, or failed saying why.
    fn tool_round(
        &mut self,
        round: usize,
        rounds: usize,
        reference: &Reference,
        unit: &str,
        outcome: Result<f64, &str>,
    ) {
        let _ = (round, rounds, reference, unit, outcome);
    }
}

/// Tells nothing.
impl ReferenceObserver for Silent {}

/// Prints the runner's progress on stderr, one line per point and
/// round, as `benchsuite reference` shows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl ReferenceObserver for Stderr {
    fn point(&mut self, done: usize, total: usize, id: &str, label: &str) {
        eprintln!("[{done}/{total}] {id} {label}");
    }
    fn our_round(&mut self, round: usize, rounds: usize, record: &Record, metric: Option<&str>) {
        let shown = headline(record, metric);
        eprintln!("    round {round}/{rounds}: benchsuite {shown}");
    }
    fn tool_round(
        &mut self,
        round: usize,
        rounds: usize,
        r: &Reference,
        unit: &str,
        outcome: Result<f64, &str>,
    ) {
        match outcome {
            Ok(v) => eprintln!(
                "    round {round}/{rounds}: {} {} {}",
                r.tool,
                r.metric,
                format_value(v, unit)
            ),
            Err(e) => eprintln!(
                "    round {round}/{rounds}: {} failed: {}",
                r.tool,
                crate::text::printable_line(e)
            ),
        }
    }
}

/// A record's value of `metric` (its headline without one), for progress;
/// a reason (which may quote a peer or a tool) made printable on one line.
pub fn headline(r: &Record, metric: Option<&str>) -> String {
    if r.status != Status::Ok {
        let reason = r.reason.as_deref().unwrap_or("");
        return format!("{:?}: {}", r.status, crate::text::printable_line(reason));
    }
    if let Some((name, (v, unit, _))) = metric.and_then(|m| metric_value(r, m).map(|v| (m, v))) {
        return format!("{name} {}", format_value(v, &unit));
    }
    r.metrics.first().map_or_else(String::new, |m| {
        format!("{} {}", m.name, format_value(m.summary.median, &m.unit))
    })
}

/// Runs every point of `plan` against its reference tool, `rounds` rounds
/// each (ours, then the tool's, in turn), with `cfg` (its `rounds` should be
/// 1: the rounds are these). `None` when nothing ran (nothing planned, or
/// cancelled before the first point). The report's records are the pooled
/// rounds, each with its `reference` section; its configuration says
/// `rounds`.
pub fn run_references(
    plan: &Plan<'_>,
    cfg: &RunConfig,
    rounds: usize,
    observer: &mut dyn ReferenceObserver,
) -> Option<Report> {
    run_references_until(plan, cfg, rounds, None, observer)
}

/// Rounds past the first `rounds` until the ratio is known well enough.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Until {
    /// The relative half-width of the 95% interval of the round ratios'
    /// (geometric) mean to reach, e.g. 0.03 for ±3%.
    pub half_width: f64,
    /// The most rounds a point runs.
    pub max_rounds: usize,
}

/// The relative half-width of the 95% interval of the geometric mean of
/// `ratios` (Student's t on their logarithms); `None` under 3 ratios.
pub fn ratio_half_width(ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    let n = logs.len();
    if n < 3 {
        return None;
    }
    let m = logs.iter().sum::<f64>() / n as f64;
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let hw = crate::stats::t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
    Some(hw.exp_m1())
}

/// [`run_references`], each point run past `rounds` rounds, up to
/// `until.max_rounds`, until its round ratios' interval is as narrow as
/// `until.half_width` (the record's note says how narrow it got).
pub fn run_references_until(
    plan: &Plan<'_>,
    cfg: &RunConfig,
    rounds: usize,
    until: Option<Until>,
    observer: &mut dyn ReferenceObserver,
) -> Option<Report> {
    let rounds = rounds.max(1);
    let most = until.map_or(rounds, |u| u.max_rounds.max(rounds));
    let total = plan.len();
    let mut done = 0;
    let mut first: Option<Report> = None;
    let mut records = Vec::new();
    'points: for pb in &plan.benches {
        for point in &pb.points {
            if plan.ctx.cancelled() {
                break 'points;
            }
            done += 1;
            let id = pb.bench.meta().id;
            let label = point.label();
            observer.point(done, total, &id, &label);
            let reference = pb.bench.reference(&plan.ctx, point);
            // The unit of the metric the tool measures, from the declaration.
            let unit = reference.as_ref().map_or(String::new(), |r| {
                let meta = pb.bench.meta();
                meta.metrics
                    .iter()
                    .find(|m| m.name == super::base_metric(r.metric))
                    .map_or(String::new(), |m| m.unit.to_string())
            });
            let mut tool = reference
                .as_ref()
                .map(|r| ToolRun::new(r, &|| plan.ctx.cancelled()));
            // One file both sides read: laid out once, before the first
            // round, and kept (with its private directory) until the last.
            let mut our_point = point.clone();
            let mut our_ctx = plan.ctx.clone();
            let mut reference = reference;
            let _shared = match (&mut reference, &mut tool) {
                (Some(r), Some(t)) if t.note.is_none() && r.shared_file.is_some() => {
                    match share_file(r, &mut our_point, &mut our_ctx, &|| plan.ctx.cancelled()) {
                        Ok(scratch) => Some(scratch),
                        Err(e) => {
                            t.note = Some(format!("not run: {e}"));
                            None
                        }
                    }
                }
                _ => None,
            };
            let mut ours = Vec::new();
            let mut narrowed: Option<(usize, f64)> = None;
            for round in 1..=most {
                let single = Plan {
                    benches: vec![PlannedBench {
                        bench: pb.bench,
                        points: vec![our_point.clone()],
                    }],
                    ctx: our_ctx.clone(),
                };
                let long;
                let cfg = match reference.as_ref().and_then(|r| r.sample_time) {
                    Some(t) if t > cfg.min_sample_time() => {
                        long = cfg.with_min_sample_time_at_least(t);
                        &long
                    }
                    _ => cfg,
                };
                let mut report = match reference.as_ref().and_then(|r| r.same_cpu) {
                    Some(cpu) => on_cpu(cpu, || crate::runner::run_plan(&single, cfg, &mut Silent)),
                    None => crate::runner::run_plan(&single, cfg, &mut Silent),
                };
                if let Some(r) = report.records.pop() {
                    observer.our_round(round, most, &r, reference.as_ref().map(|x| x.metric));
                    ours.push(r);
                }
                match &mut first {
                    None => first = Some(report),
                    Some(f) => f.host.extra.append(&mut report.host.extra),
                }
                if let (Some(t), Some(r)) = (tool.as_mut(), reference.as_ref()) {
                    t.round(r, &unit, round, most, &|| plan.ctx.cancelled(), observer);
                }
                if plan.ctx.cancelled() {
                    break;
                }
                if round < rounds {
                    continue;
                }
                // Past the rounds asked for: on while the ratio is not yet
                // known to `until` (and the tool still runs).
                let (Some(u), Some(t), Some(r)) = (until, tool.as_ref(), reference.as_ref()) else {
                    break;
                };
                if t.values.is_empty() {
                    break;
                }
                let dir = pb
                    .bench
                    .meta()
                    .metrics
                    .iter()
                    .find(|m| m.name == super::base_metric(r.metric))
                    .map(|m| m.direction);
                let ratios: Vec<f64> = ours
                    .iter()
                    .zip(&t.by_round)
                    .filter_map(|(o, tv)| {
                        let ov = (o.status == Status::Ok)
                            .then(|| metric_value(o, r.metric).map(|v| v.0))
                            .flatten()?;
                        super::ratio(ov, (*tv)?, dir?)
                    })
                    .collect();
                if let Some(hw) = ratio_half_width(&ratios) {
                    narrowed = Some((round, hw));
                    if hw <= u.half_width {
                        break;
                    }
                }
            }
            // Each of our rounds' value of the tool's metric (`None` for a
            // round that failed): a percentile is taken per round (pooled
            // records keep only the first round's percentiles) and its
            // median compared; each round pairs with the tool's round.
            let our_by_round: Vec<Option<f64>> = reference.as_ref().map_or(Vec::new(), |r| {
                ours.iter()
                    .map(|x| {
                        (x.status == Status::Ok)
                            .then(|| metric_value(x, r.metric).map(|v| v.0))
                            .flatten()
                    })
                    .collect()
            });
            let Some(mut record) = crate::runner::pool_rounds(ours) else {
                continue;
            };
            // The point as planned (ours ran with the shared file's path).
            record.params = point.clone();
            if let (Some(t), Some(r)) = (tool, reference.as_ref()) {
                let mut result = t.result(r, &record, &unit, &our_by_round);
                if let (Some(u), Some((n, hw))) = (until, narrowed) {
                    let said = if hw <= u.half_width {
                        format!(
                            "{n} rounds, until the round ratios' 95% interval was within ±{:.1}% (±{:.1}%)",
                            u.half_width * 100.0,
                            hw * 100.0
                        )
                    } else {
                        format!(
                            "the round ratios' 95% interval was still ±{:.1}% after {n} rounds (the most; ±{:.1}% asked): the machine moves more than that between rounds",
                            hw * 100.0,
                            u.half_width * 100.0
                        )
                    };
                    result.note = Some(match result.note.take() {
                        Some(n) => format!("{said}; {n}"),
                        None => said,
                    });
                }
                record.reference = Some(result);
            }
            records.push(record);
        }
    }
    let mut report = first?;
    report.records = records;
    report.config.rounds = rounds;
    report.config.selectors = cfg.selectors().to_vec();
    report.progress = None;
    Some(report)
}

/// Lays out `r`'s shared file ([`Reference::shared_file`]) in a fresh
/// private directory in its `scratch_in`, points `ours` at it and puts its
/// path in the tool's command line and note. The directory goes when the
/// returned [`Scratch`] drops (or on a second signal, with the others).
fn share_file(
    r: &mut Reference,
    ours: &mut crate::Point,
    ctx: &mut crate::Context,
    cancelled: &dyn Fn() -> bool,
) -> Result<Scratch, String> {
    let Some(shared) = r.shared_file.clone() else {
        return Err("no shared file".into());
    };
    let scratch = Scratch::new(r)?;
    // Absolute: the tool runs in a directory of its own, where a relative
    // `--scratch-dir` would name another file.
    let path = std::path::absolute(scratch.path().join("benchsuite-reference-shared"))
        .map_err(|e| format!("cannot resolve {}: {e}", scratch.path().display()))?;
    // Both sides get the path as text: one that is not UTF-8 would reach
    // them as another name.
    let dir = || {
        format!(
            "{}={:?}",
            shared.param,
            r.scratch_in.as_deref().unwrap_or(scratch.path())
        )
    };
    let shown = path
        .to_str()
        .ok_or_else(|| format!("{}: the path is not UTF-8", dir()))?
        .to_string();
    // As the tool's command line takes a path (fio's `:` escaped), or
    // refused naming the parameter before anything runs.
    let arg = (r.file_arg)(&shown).map_err(|e| format!("{}: {e}", dir()))?;
    lay_out(&path, shared.len, cancelled).map_err(|e| {
        format!(
            "cannot lay out the {} file both sides read at {}: {e}",
            crate::units::format_size(shared.len),
            path.display()
        )
    })?;
    ours.set(shared.param, crate::Value::Str(shown.clone()));
    for (k, v) in &shared.grants {
        ctx.options
            .insert(k.to_string(), v.replace(super::FILE_PLACEHOLDER, &shown));
    }
    for a in &mut r.argv {
        *a = a.replace(super::FILE_PLACEHOLDER, &arg);
    }
    let said = format!(
        "both sides use one file of {}, laid out with pseudo-random data (written, synced, dropped from the page cache) before the first round in a private directory of {}, removed after the last: benchsuite as {}=FILE, the tool by its path",
        crate::units::format_size(shared.len),
        r.scratch_in.as_deref().map_or_else(
            || "the temporary directory".into(),
            |d| d.display().to_string()
        ),
        shared.param
    );
    r.note = Some(match r.note.take() {
        Some(n) => format!("{said}; {n}"),
        None => said,
    });
    Ok(scratch)
}

/// Writes `len` bytes of pseudo-random data (not zeros, which a virtual
/// disk or a file system may store as holes) to a new file, syncs it and
/// drops its pages from the page cache, so that neither side's first
/// buffered read finds them there. Stops early (an error) when cancelled.
fn lay_out(path: &Path, len: u64, cancelled: &dyn Fn() -> bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ len;
    let mut left = len;
    while left > 0 {
        for w in buf.chunks_exact_mut(8) {
            // xorshift64: different bytes in every block of the file.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
        let n = left.min(CHUNK as u64) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
        if cancelled() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "cancelled",
            ));
        }
    }
    f.sync_all()?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor is open; offset 0, length 0 = the whole file.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

/// How long a tool's server gets to start listening.
const SERVER_START: Duration = Duration::from_millis(500);

/// The most of a tool's standard output (and of its output file) read:
/// a round whose tool writes more fails, saying so. The tools' outputs
/// are a few KiB (fio's JSON with its percentiles, iperf3's with an
/// interval a second: tens).
const STDOUT_KEPT: usize = 4 << 20;

/// The last bytes of a tool's standard error kept (a failed round shows
/// its first lines; hpcc's parser reads OpenBLAS's `Core:` line there).
const STDERR_KEPT: usize = 64 << 10;

/// How long a tool's version probe (`fio --version`) may take before it
/// is killed, with what it started, and the version recorded as unknown.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// Prefixes of a job launcher's environment variables (Slurm, PMI/PMIx,
/// Open MPI, MPICH/Hydra, Intel MPI), removed from a tool's environment.
const LAUNCHER_ENV: [&str; 7] = [
    "SLURM_", "PMI_", "PMIX_", "OMPI_", "MPICH_", "HYDRA_", "I_MPI_",
];

/// Runs `f` with the calling thread pinned to `cpu` (where the tool runs
/// too: [`Reference::same_cpu`]), then restores the thread's CPUs. If the
/// pin fails, `f` runs where it would have, and the ratio says so no
/// better than before.
pub fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> T) -> T {
    let before = crate::team::allowed_cpus();
    let pinned = crate::team::pin_current_thread(cpu).is_ok();
    let out = f();
    if pinned && !before.is_empty() {
        let _ = crate::team::set_current_thread_cpus(&before);
    }
    out
}

/// The tool's side of one record: its version, its value per round, and
/// why it did not run (not installed, a failed round).
struct ToolRun {
    version: Option<String>,
    /// Why `version` is `None` though the tool is there (its probe
    /// failed, hung or printed nothing).
    version_note: Option<String>,
    values: Vec<f64>,
    /// Each round's value, `None` where the round did not run or failed.
    by_round: Vec<Option<f64>>,
    note: Option<String>,
}

impl ToolRun {
    fn new(r: &Reference, cancelled: &dyn Fn() -> bool) -> ToolRun {
        let missing = [r.tool, r.argv[0].as_str()]
            .into_iter()
            .chain(r.server_argv.iter().map(|s| s[0].as_str()))
            .find(|p| find_program(p).is_none());
        if let Some(p) = missing {
            let package = if p == r.tool { r.package } else { "util-linux" };
            return ToolRun {
                version: None,
                version_note: None,
                values: Vec::new(),
                by_round: Vec::new(),
                note: Some(format!(
                    "not installed: apt install {package} ({p} is not on PATH)"
                )),
            };
        }
        if let Some(why) = &r.unusable {
            return ToolRun {
                version: None,
                version_note: None,
                values: Vec::new(),
                by_round: Vec::new(),
                note: Some(format!("not run: {why}")),
            };
        }
        // A signal stops a hung probe at once, not after its timeout.
        let (version, version_note) =
            match probe_version(&r.version_argv, VERSION_TIMEOUT, cancelled) {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(format!("version unknown: {e}"))),
            };
        ToolRun {
            version,
            version_note,
            values: Vec::new(),
            by_round: Vec::new(),
            note: None,
        }
    }

    /// Runs the tool once, unless it is missing or an earlier round failed.
    fn round(
        &mut self,
        r: &Reference,
        unit: &str,
        round: usize,
        rounds: usize,
        cancelled: &dyn Fn() -> bool,
        observer: &mut dyn ReferenceObserver,
    ) {
        if self.note.is_some() && self.values.is_empty() {
            self.by_round.push(None);
            return;
        }
        let outcome = run_tool(r, cancelled).and_then(|out| (r.parse)(&out).map_err(String::from));
        observer.tool_round(
            round,
            rounds,
            r,
            unit,
            outcome.as_ref().map(|v| *v).map_err(String::as_str),
        );
        self.by_round.push(outcome.as_ref().ok().copied());
        match outcome {
            Ok(v) => {
                self.values.push(v);
            }
            Err(e) => {
                let e = if r.tool == "perf" {
                    format!("perf bench unavailable: {e}")
                } else {
                    e
                };
                self.note.get_or_insert(format!("round {round}: {e}"));
            }
        }
    }

    /// The record's `reference` section.
    fn result(
        self,
        r: &Reference,
        record: &Record,
        unit: &str,
        our_by_round: &[Option<f64>],
    ) -> ReferenceResult {
        let our_values: Vec<f64> = our_by_round.iter().flatten().copied().collect();
        let metric = metric_value(record, r.metric);
        let median = super::median(&self.values);
        // A percentile: the median of our rounds' own percentiles.
        let ours = if r.metric.contains('.') {
            super::median(&our_values)
        } else {
            metric.as_ref().map(|m| m.0)
        };
        let of_medians = match (&metric, ours, median) {
            (Some(m), Some(o), Some(t)) if record.status == Status::Ok => super::ratio(o, t, m.2),
            _ => None,
        };
        // Each round paired with the tool's round beside it: the ratio is
        // the median of those (the interleaved A B A B design), which a
        // state of the machine that lasts one round moves less than the
        // ratio of the two sides' medians; with fewer than two pairs, the
        // ratio of the medians.
        let round_ratios: Vec<f64> = match &metric {
            Some(m) if of_medians.is_some() => our_by_round
                .iter()
                .zip(&self.by_round)
                .filter_map(|(o, t)| super::ratio((*o)?, (*t)?, m.2))
                .collect(),
            _ => Vec::new(),
        };
        let ratio = if round_ratios.len() >= 2 {
            super::median(&round_ratios)
        } else {
            of_medians
        };
        let note = [self.note, r.note.clone(), self.version_note]
            .into_iter()
            .flatten()
            .reduce(|a, b| format!("{a}; {b}"));
        ReferenceResult {
            tool: r.tool.to_string(),
            version: self.version,
            command: r.command(),
            metric: r.metric.to_string(),
            median,
            unit: metric.map_or_else(|| unit.to_string(), |m| m.1),
            ratio,
            rounds: self.values,
            note,
            our_rounds: r.metric.contains('.').then_some(our_values),
            round_ratios,
        }
    }
}

/// Runs a reference once and returns its standard output. The tool (and
/// its server) is stopped with everything it forked when it runs past its
/// time, when `cancelled()` turns true (Ctrl-C), and, for the server, when
/// the round ends.
fn run_tool(r: &Reference, cancelled: &dyn Fn() -> bool) -> Result<String, String> {
    // Inputs and the tool's files go to a fresh private directory the tool
    // (and its server) runs in, removed after the run (dropped after the
    // tool and its server are stopped). Never benchsuite's working
    // directory: what a tool loads from where it runs (python3 imports
    // from there first) could be anyone's.
    let scratch = Scratch::new(r)?;
    let _server = match &r.server_argv {
        Some(s) => {
            let mut c = tool_command(s, scratch.path())?;
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let server =
                ToolProcess::spawn(c).map_err(|e| format!("cannot start {}: {e}", s[0]))?;
            std::thread::sleep(SERVER_START);
            Some(server)
        }
        None => None,
    };
    let mut c = tool_command(&r.argv, scratch.path())?;
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A tool started under a launcher must not join its job (hpcc calls
    // MPI_Init, which reads these): it runs alone, as it would by hand.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if LAUNCHER_ENV.iter().any(|p| k.starts_with(p)) {
            c.env_remove(k.as_ref());
        }
    }
    for (k, v) in &r.env {
        c.env(k, v);
    }
    let mut child =
        ToolProcess::spawn(c).map_err(|e| format!("cannot start {}: {e}", r.argv[0]))?;
    // Read both pipes on threads so a chatty tool never blocks, keeping
    // their last bytes; a process that left the tool's group (a daemon)
    // may keep a pipe open after the tool is gone, so the reads are
    // awaited for a bounded time, and then stopped.
    let out_t = child
        .child_mut()
        .stdout
        .take()
        .map(|p| PipeTail::read(p, STDOUT_KEPT));
    let err_t = child
        .child_mut()
        .stderr
        .take()
        .map(|p| PipeTail::read(p, STDERR_KEPT));
    let deadline = Instant::now() + r.timeout;
    let status = match child.wait(deadline, cancelled) {
        Ok(s) => s,
        Err(Stopped::TimedOut) => {
            return Err(format!(
                "{} did not finish in time; killed with the processes it started",
                r.tool
            ));
        }
        Err(Stopped::Cancelled) => return Err(format!("{} stopped: interrupted", r.tool)),
        Err(Stopped::Wait(e)) => return Err(format!("waiting for {}: {e}", r.tool)),
    };
    // Both pipes share the one grace.
    let grace_ends = Instant::now() + PIPE_GRACE;
    let drained = |t: Option<PipeTail>| {
        match t {
        None => Ok(super::Tail {
            text: String::new(),
            cut: 0,
        }),
        Some(t) => t
            .tail(grace_ends.saturating_duration_since(Instant::now()))
            .ok_or_else(|| {
                format!(
                    "{} exited, but a process it started outside its process group keeps its output open",
                    r.tool
                )
            }),
    }
    };
    let out = drained(out_t)?;
    let err = drained(err_t)?.shown();
    if !status.success() {
        let tail: String = err
            .lines()
            .chain(out.text.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(2)
            .collect::<Vec<_>>()
            .join(" / ");
        return Err(format!("{} exited with {status}: {tail}", r.tool));
    }
    // A number parsed from the end of an output cut short could be any
    // line's: the round fails instead.
    if out.cut > 0 {
        return Err(format!(
            "{} wrote {} bytes to its standard output, more than the {} read; not parsed",
            r.tool,
            out.cut + out.text.len() as u64,
            STDOUT_KEPT
        ));
    }
    let out = out.text;
    match r.output_file {
        Some(name) => read_bounded(&scratch.path().join(name), STDOUT_KEPT)
            .map(|file| format!("{file}\n{out}\n{err}"))
            .map_err(|e| format!("{} wrote no {name}: {e}", r.tool)),
        None => Ok(out),
    }
}

/// The text of the file at `path`, refused when it is longer than
/// `limit` bytes (a tool's output file).
fn read_bounded(path: &Path, limit: usize) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = Vec::new();
    std::fs::File::open(path)?
        .take(limit as u64 + 1)
        .read_to_end(&mut text)?;
    if text.len() > limit {
        return Err(std::io::Error::other(format!(
            "it is longer than the {limit} bytes read"
        )));
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::super::tool::probe_version;
    use super::*;

    #[test]
    fn the_half_width_of_round_ratios_narrows_with_agreement_and_rounds() {
        assert_eq!(ratio_half_width(&[1.0, 1.1]), None);
        assert_eq!(ratio_half_width(&[1.0, 1.0, 1.0]), Some(0.0));
        let wide = ratio_half_width(&[0.9, 1.1, 1.0]).unwrap();
        let more = ratio_half_width(&[0.9, 1.1, 1.0, 0.9, 1.1, 1.0, 0.9, 1.1, 1.0]).unwrap();
        assert!(wide > 0.2 && more < wide / 2.0, "{wide} {more}");
    }
    use std::path::PathBuf;

    /// A tool and its version probe run in a private directory of their
    /// own (in the temporary directory, removed after), never where
    /// benchsuite runs: python3 imports from its working directory first.
    #[test]
    fn a_tool_and_its_version_probe_never_run_in_the_working_directory() {
        let here = std::env::current_dir().unwrap();
        let argv = crate::reference::argv(["sh", "-c", "pwd"]);
        let mut r = Reference::new("sh", "dash", argv.clone(), "x", |_| Ok(1.0));
        r.version_argv = argv;
        let ran_in = PathBuf::from(run_tool(&r, &|| false).unwrap().trim());
        let probed_in = PathBuf::from(ToolRun::new(&r, &|| false).version.unwrap());
        for dir in [ran_in, probed_in] {
            assert_ne!(dir, here);
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("benchsuite-ref-"), "{}", dir.display());
            assert!(!dir.exists(), "{} is left", dir.display());
        }
    }

    /// A version probe that hangs is killed after its timeout (with what
    /// it started) and one that fails records no version: a Python
    /// traceback is not a version. Either says why in the note.
    #[test]
    fn a_hung_or_failed_version_probe_records_no_version_and_says_why() {
        let start = Instant::now();
        let hung = probe_version(
            &crate::reference::argv(["sh", "-c", "sleep 300 & sleep 300"]),
            Duration::from_millis(300),
            &|| false,
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        let e = hung.unwrap_err();
        assert!(e.contains("gave no answer in 0.3 s; killed"), "{e}");

        let script = "T=Trace; echo \"${T}back (most recent call last):\" >&2; \
                      printf 'ModuleNotFoundError: \\033]0;X\\007 torch\\n' >&2; exit 1";
        let mut r = Reference::new("sh", "dash", crate::reference::argv(["true"]), "x", |_| {
            Ok(1.0)
        });
        r.version_argv = crate::reference::argv(["sh", "-c", script]);
        let run = ToolRun::new(&r, &|| false);
        assert_eq!(run.version, None);
        let note = run.version_note.clone().unwrap();
        assert!(note.starts_with("version unknown: `sh -c "), "{note}");
        assert!(
            note.ends_with(
                "exited with exit status: 1: ModuleNotFoundError: \\u{1b}]0;X\\u{7} torch"
            ),
            "{note}"
        );
        assert!(!note.contains("Traceback"), "{note}");
        // The note reaches the record; the tool still runs (no `note`).
        assert!(run.note.is_none());
        let record = Record::failed("x", crate::Point::default(), "not run");
        let result = run.result(&r, &record, "B/s", &[]);
        assert_eq!(result.version, None);
        assert!(result.note.unwrap().contains("version unknown"));

        r.version_argv = crate::reference::argv(["sh", "-c", "echo; echo '  tool 1.2 '"]);
        assert_eq!(
            ToolRun::new(&r, &|| false).version.as_deref(),
            Some("tool 1.2")
        );
    }

    /// The network token never reaches a reference tool, its server or its
    /// version probe: each is made by `tool_command`, which removes it.
    #[test]
    fn no_reference_tool_gets_the_token_in_its_environment() {
        let c = tool_command(&crate::reference::argv(["sh", "-c", "env"]), Path::new("/")).unwrap();
        let removed: Vec<_> = c
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        assert!(
            removed.contains(&std::ffi::OsStr::new("BENCHSUITE_TOKEN")),
            "{removed:?}"
        );
        // And through a run: a tool that prints its environment.
        let r = Reference::new(
            "sh",
            "dash",
            crate::reference::argv(["sh", "-c", "env"]),
            "x",
            |_| Ok(1.0),
        );
        let out = run_tool(&r, &|| false).unwrap();
        assert!(out.contains("PATH="), "{out}");
        assert!(!out.contains("BENCHSUITE_TOKEN"), "{out}");
    }

    /// A tool that writes without end: the round fails saying so once the
    /// tool is done, having kept only the last bytes.
    #[test]
    fn a_tool_output_past_the_bound_fails_the_round_without_being_kept() {
        let r = Reference::new(
            "sh",
            "dash",
            crate::reference::argv(["sh", "-c", "head -c 6000000 /dev/zero | tr '\\0' x"]),
            "x",
            |_| Ok(1.0),
        );
        let e = run_tool(&r, &|| false).unwrap_err();
        assert!(
            e.contains("wrote 6000000 bytes to its standard output, more than the 4194304 read"),
            "{e}"
        );
    }

    /// The shared file's path reaches the tool's argv as its `file_arg`
    /// writes it (ours gets the path itself); a path it refuses stops the
    /// reference before anything is laid out, naming the parameter.
    #[test]
    fn the_shared_file_reaches_the_tool_as_its_file_arg_writes_it() {
        fn escaped(p: &str) -> Result<String, String> {
            if p.contains('\n') {
                return Err("no newline".into());
            }
            Ok(p.replace(':', "\\:"))
        }
        let parent = std::env::temp_dir().join(format!(
            "benchsuite-share-{}",
            crate::atomic::random_hex().unwrap()
        ));
        let dir = parent.join("2025-01-01T10:00");
        std::fs::create_dir_all(&dir).unwrap();
        let argv = crate::reference::argv(["tool", "--filename={file}"]);
        let mut r = Reference::new("tool", "tool", argv, "x", |_| Ok(1.0));
        r.scratch_in = Some(dir.clone());
        r.file_arg = |p| escaped(p).map_err(Into::into);
        r.shared_file = Some(super::super::SharedFile {
            param: "dir",
            len: 4096,
            grants: Vec::new(),
        });
        let mut point = crate::Point::default();
        let mut ctx = crate::Context::new(std::sync::Arc::new(crate::Host::default()));
        let scratch = share_file(&mut r, &mut point, &mut ctx, &|| false).unwrap();
        let file = scratch.path().join("benchsuite-reference-shared");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 4096);
        let file = file.to_str().unwrap();
        assert_eq!(
            r.argv[1],
            format!("--filename={}", file.replace(':', "\\:"))
        );
        assert!(r.argv[1].contains("2025-01-01T10\\:00/benchsuite-ref-"));
        assert_eq!(point.get("dir"), Some(&crate::Value::Str(file.into())));
        drop(scratch);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

        let bad = parent.join("a\nb");
        std::fs::create_dir(&bad).unwrap();
        let argv = crate::reference::argv(["tool", "--filename={file}"]);
        let mut r2 = Reference::new("tool", "tool", argv, "x", |_| Ok(1.0));
        r2.scratch_in = Some(bad.clone());
        r2.file_arg = |p| escaped(p).map_err(Into::into);
        r2.shared_file = r.shared_file.clone();
        let err = share_file(&mut r2, &mut point, &mut ctx, &|| false)
            .map(|_| ())
            .unwrap_err();
        assert!(
            err.starts_with("dir=") && err.contains("no newline"),
            "{err}"
        );
        assert!(!err.contains('\n'), "a raw newline in {err:?}");
        assert_eq!(std::fs::read_dir(&bad).unwrap().count(), 0);
        std::fs::remove_dir_all(&parent).unwrap();
    }

    /// A tool that writes its scratch file (as fio does) into a shared
    /// directory where another user planted links at every name it used
    /// to open there: it writes inside a private directory of its own, the
    /// victims are untouched, and only what this process made is removed
    /// (the planted links stay).
    #[test]
    fn a_planted_link_in_the_scratch_directory_is_never_followed_or_removed() {
        let shared = std::env::temp_dir().join(format!(
            "benchsuite-shared-{}",
            crate::atomic::random_hex().unwrap()
        ));
        std::fs::create_dir(&shared).unwrap();
        let victim = shared.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let pid = std::process::id();
        let planted: Vec<PathBuf> = [
            "benchsuite-reference-fio.0".to_string(),
            format!("benchsuite-reference-fio-{pid}.0"),
            format!("benchsuite-reference-fio-{pid}.1"),
        ]
        .iter()
        .map(|n| shared.join(n))
        .collect();
        for p in &planted {
            std::os::unix::fs::symlink(&victim, p).unwrap();
        }
        let argv = vec![
            "sh".to_string(),
            "-c".into(),
            "echo overwritten > benchsuite-reference-fio.0 && pwd".into(),
        ];
        let mut r = Reference::new("sh", "dash", argv, "x", |_| Ok(1.0));
        r.scratch_in = Some(shared.clone());
        let out = run_tool(&r, &|| false).unwrap();
        let ran_in = PathBuf::from(out.trim());
        assert_ne!(ran_in, shared, "the tool ran in the shared directory");
        assert!(ran_in.starts_with(&shared), "{}", ran_in.display());
        assert!(!ran_in.exists(), "its private directory is removed");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        for p in &planted {
            assert!(p.symlink_metadata().is_ok(), "{} was removed", p.display());
        }
        let mut left: Vec<String> = std::fs::read_dir(&shared)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), planted.len() + 1, "{left:?}");
        std::fs::remove_dir_all(&shared).unwrap();
    }
}
