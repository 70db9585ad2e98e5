//! `benchsuite reference`: each selected record measured by us and by its
//! reference tool (fio, iperf3, sockperf, sysbench, likwid-bench, hpcc,
//! `perf bench`), interleaved A B A B for `--rounds N` (default 3), the
//! tool's median and the ratio attached to the record (`reference`).
//!
//! Ours: the one point through the library, one round at a time, pooled
//! as `--rounds` pools. The tool: the command line the benchmark's
//! [`Benchmark::reference`](benchsuite::Benchmark::reference) gives, its
//! server (if any) started first and killed after, its scratch files
//! removed. The tool and its server each run in a process group of their
//! own ([`ToolProcess`]): a timeout, Ctrl-C or the end of the round stops
//! everything they forked.

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use benchsuite::export::Format;
use benchsuite::reference::{self as refs, Reference, ReferenceResult, Stopped, ToolProcess};
use benchsuite::runner::{Plan, PlannedBench, Silent};
use benchsuite::units::format_value;
use benchsuite::{Record, Report, Status};

use crate::args::RunArgs;
use crate::config;

/// Rounds when `--rounds` is not given.
const DEFAULT_ROUNDS: usize = 3;

/// How long a tool's server gets to start listening.
const SERVER_START: Duration = Duration::from_millis(500);

/// How long a tool's output may stay open after the tool exited.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// Prefixes of a job launcher's environment variables (Slurm, PMI/PMIx,
/// Open MPI, MPICH/Hydra, Intel MPI), removed from a tool's environment.
const LAUNCHER_ENV: [&str; 7] = [
    "SLURM_", "PMI_", "PMIX_", "OMPI_", "MPICH_", "HYDRA_", "I_MPI_",
];

/// Runs `benchsuite reference`.
pub fn cmd_reference(args: &RunArgs) -> Result<i32> {
    if args.format.as_deref() == Some("gha") {
        bail!("--format gha: benchsuite reference writes one report; use json, csv, md or table");
    }
    if args.duration.is_some() {
        bail!("--duration: benchsuite reference compares medians of rounds, not time series");
    }
    if let Some(f) = &args.plan {
        bail!(
            "-f {}: benchsuite reference takes selectors and parameters, not a plan file",
            f.display()
        );
    }
    let stdout_tty = io::stdout().is_terminal();
    let (mut cfg, output, flags) = config::run_config(args, stdout_tty)?;
    let rounds = args.rounds.unwrap_or(DEFAULT_ROUNDS).max(1);
    cfg.rounds = 1;
    let registry = benchsuite::registry();
    let plan = benchsuite::runner::plan(&registry, &cfg).map_err(|e| flags.explain(e))?;
    if plan.host().build.is_debug() {
        eprintln!(
            "warning: this is a DEBUG build of benchsuite; its numbers are not comparable with the tools'. \
             Install a release build: cargo install --path cli"
        );
    }
    if let Some(file) = &output.file {
        // Fail before measuring, not after, if the output cannot be written.
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .map_err(|e| anyhow::anyhow!("-o {}: cannot create the file: {e}", file.display()))?;
    }
    // Ctrl-C finishes the round in flight (the tool's scratch files are
    // removed after it), then writes what is done.
    crate::app::install_ctrlc(&cfg.cancel);
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
            eprintln!("[{done}/{total}] {id} {label}");
            let reference = pb.bench.reference(&plan.ctx, point);
            // The unit of the metric the tool measures, from the declaration.
            let unit = reference.as_ref().map_or(String::new(), |r| {
                let meta = pb.bench.meta();
                meta.metrics
                    .iter()
                    .find(|m| m.name == r.metric)
                    .map_or(String::new(), |m| m.unit.to_string())
            });
            let mut tool = reference.as_ref().map(ToolRun::new);
            let mut ours = Vec::new();
            for round in 1..=rounds {
                let single = Plan {
                    benches: vec![PlannedBench {
                        bench: pb.bench,
                        points: vec![point.clone()],
                    }],
                    ctx: plan.ctx.clone(),
                };
                let mut report = match reference.as_ref().and_then(|r| r.same_cpu) {
                    Some(cpu) => on_cpu(cpu, || {
                        benchsuite::runner::run_plan(&single, &cfg, &mut Silent)
                    }),
                    None => benchsuite::runner::run_plan(&single, &cfg, &mut Silent),
                };
                if let Some(r) = report.records.pop() {
                    let shown = headline(&r, reference.as_ref().map(|x| x.metric));
                    eprintln!("    round {round}/{rounds}: benchsuite {shown}");
                    ours.push(r);
                }
                match &mut first {
                    None => first = Some(report),
                    Some(f) => f.host.extra.append(&mut report.host.extra),
                }
                if let (Some(t), Some(r)) = (tool.as_mut(), reference.as_ref()) {
                    t.round(r, &unit, round, rounds, &|| plan.ctx.cancelled());
                }
                if plan.ctx.cancelled() {
                    break;
                }
            }
            let Some(mut record) = benchsuite::runner::pool_rounds(ours) else {
                continue;
            };
            if let (Some(t), Some(r)) = (tool, reference.as_ref()) {
                record.reference = Some(t.result(r, &record, &unit));
            }
            records.push(record);
        }
    }
    let Some(mut report) = first else {
        bail!("nothing selected");
    };
    report.records = records;
    report.config.rounds = rounds;
    report.config.selectors = cfg.selectors.clone();
    report.progress = None;

    let failed = report
        .records
        .iter()
        .filter(|r| r.status == Status::Failed)
        .count();
    // Decided before writing: a closed stdout keeps a --strict failure.
    let code = if args.strict && failed > 0 { 1 } else { 0 };
    let written = (|| -> Result<String> {
        let written = write(&report, output.format, output.file.as_deref())?;
        // The summary goes where it does not break a machine-readable stdout.
        let summary = summary_table(&report);
        if output.file.is_some() || output.format == Format::Table {
            let mut out = io::stdout().lock();
            out.write_all(summary.as_bytes())?;
            out.flush()?;
        } else {
            eprint!("{summary}");
        }
        Ok(written)
    })();
    let written = match crate::app::keep_verdict(code, written)? {
        crate::app::Output::Written(w) => w,
        crate::app::Output::StdoutClosed(code) => return Ok(code),
    };
    eprintln!(
        "{} records, {} with a reference ratio, {failed} failed{written}",
        report.records.len(),
        report
            .records
            .iter()
            .filter(|r| r.reference.as_ref().is_some_and(|x| x.ratio.is_some()))
            .count(),
    );
    Ok(code)
}

/// Writes the report to `file` (atomically: a temporary file renamed over
/// it) or stdout; returns what the closing line adds.
fn write(report: &Report, format: Format, file: Option<&Path>) -> Result<String> {
    let mut buf = Vec::new();
    benchsuite::export::write_report(format, report, &mut buf)?;
    let Some(file) = file else {
        let mut out = io::stdout().lock();
        out.write_all(&buf)?;
        out.flush()?;
        return Ok(String::new());
    };
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let tmp = file.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &buf)
        .and_then(|_| std::fs::rename(&tmp, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("-o {}: {e}", file.display())
        })?;
    Ok(format!("; written to {}", file.display()))
}

/// A record's value of `metric` (its headline without one), for progress.
fn headline(r: &Record, metric: Option<&str>) -> String {
    if r.status != Status::Ok {
        return format!("{:?}: {}", r.status, r.reason.as_deref().unwrap_or(""));
    }
    let m = metric
        .and_then(|m| r.metric(m))
        .or_else(|| r.metrics.first());
    m.map_or_else(String::new, |m| {
        format!("{} {}", m.name, format_value(m.summary.median, &m.unit))
    })
}

/// Runs `f` with the calling thread pinned to `cpu` (where the tool runs
/// too: [`Reference::same_cpu`]), then restores the thread's CPUs. If the
/// pin fails, `f` runs where it would have, and the ratio says so no
/// better than before.
fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> T) -> T {
    let before = benchsuite::team::allowed_cpus();
    let pinned = benchsuite::team::pin_current_thread(cpu).is_ok();
    let out = f();
    if pinned && !before.is_empty() {
        let _ = benchsuite::team::set_current_thread_cpus(&before);
    }
    out
}

/// The tool's side of one record: its version, its value per round, and
/// why it did not run (not installed, a failed round).
struct ToolRun {
    version: Option<String>,
    values: Vec<f64>,
    note: Option<String>,
}

impl ToolRun {
    fn new(r: &Reference) -> ToolRun {
        let missing = [r.tool, r.argv[0].as_str()]
            .into_iter()
            .chain(r.server_argv.iter().map(|s| s[0].as_str()))
            .find(|p| find_program(p).is_none());
        if let Some(p) = missing {
            let package = if p == r.tool { r.package } else { "util-linux" };
            return ToolRun {
                version: None,
                values: Vec::new(),
                note: Some(format!(
                    "not installed: apt install {package} ({p} is not on PATH)"
                )),
            };
        }
        if let Some(why) = &r.unusable {
            return ToolRun {
                version: None,
                values: Vec::new(),
                note: Some(format!("not run: {why}")),
            };
        }
        let version = Command::new(&r.version_argv[0])
            .args(&r.version_argv[1..])
            .stdin(Stdio::null())
            .output()
            .ok()
            .and_then(|o| {
                let text = String::from_utf8_lossy(&o.stdout).to_string()
                    + &String::from_utf8_lossy(&o.stderr);
                text.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(str::to_string)
            });
        ToolRun {
            version,
            values: Vec::new(),
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
    ) {
        if self.note.is_some() && self.values.is_empty() {
            return;
        }
        let outcome = run_tool(r, cancelled).and_then(|out| (r.parse)(&out));
        match outcome {
            Ok(v) => {
                eprintln!(
                    "    round {round}/{rounds}: {} {} {}",
                    r.tool,
                    r.metric,
                    format_value(v, unit)
                );
                self.values.push(v);
            }
            Err(e) => {
                eprintln!("    round {round}/{rounds}: {} failed: {e}", r.tool);
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
    fn result(self, r: &Reference, record: &Record, unit: &str) -> ReferenceResult {
        let metric = record.metric(r.metric);
        let median = refs::median(&self.values);
        let ratio = match (metric, median) {
            (Some(m), Some(t)) if record.status == Status::Ok => {
                refs::ratio(m.summary.median, t, m.direction)
            }
            _ => None,
        };
        let note = match (self.note, &r.note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or_else(|| b.clone()),
        };
        ReferenceResult {
            tool: r.tool.to_string(),
            version: self.version,
            command: r.command(),
            metric: r.metric.to_string(),
            median,
            unit: metric.map_or_else(|| unit.to_string(), |m| m.unit.clone()),
            ratio,
            rounds: self.values,
            note,
        }
    }
}

/// The path of `program` on `PATH`, if it is there.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// Removes the tool's scratch files when dropped.
struct Cleanup<'a>(&'a [PathBuf]);

impl<'a> Cleanup<'a> {
    fn new(files: &'a [PathBuf]) -> Cleanup<'a> {
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(files.iter().cloned());
        Cleanup(files)
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for f in self.0 {
            let _ = std::fs::remove_file(f);
        }
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| !self.0.contains(d));
    }
}

/// Runs a reference once and returns its standard output. The tool (and
/// its server) is stopped with everything it forked when it runs past its
/// time, when `cancelled()` turns true (Ctrl-C), and, for the server, when
/// the round ends.
fn run_tool(r: &Reference, cancelled: &dyn Fn() -> bool) -> Result<String, String> {
    // Dropped in reverse order: the server is stopped, then the files go.
    let _cleanup = Cleanup::new(&r.cleanup);
    let _server = match &r.server_argv {
        Some(s) => {
            let mut c = Command::new(&s[0]);
            c.args(&s[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let server =
                ToolProcess::spawn(c).map_err(|e| format!("cannot start {}: {e}", s[0]))?;
            std::thread::sleep(SERVER_START);
            Some(server)
        }
        None => None,
    };
    let mut c = Command::new(&r.argv[0]);
    c.args(&r.argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Inputs go to a fresh scratch directory the tool runs in, removed
    // after the run (dropped after the tool is stopped).
    let scratch = match r.inputs.is_empty() && r.output_file.is_none() {
        true => None,
        false => Some(Scratch::new(r)?),
    };
    if let Some(dir) = &scratch {
        c.current_dir(&dir.0);
    }
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
    // Read both pipes on threads so a chatty tool never blocks; a process
    // that left the tool's group (a daemon) may keep a pipe open after the
    // tool is gone, so the reads are awaited for a bounded time.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            let _ = tx.send(s);
        });
        rx
    };
    let out_t = reader(
        child
            .child_mut()
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err_t = reader(
        child
            .child_mut()
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
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
    let drained = |rx: std::sync::mpsc::Receiver<String>| {
        rx.recv_timeout(PIPE_GRACE).map_err(|_| {
            format!(
                "{} exited, but a process it started outside its process group keeps its output open",
                r.tool
            )
        })
    };
    let out = drained(out_t)?;
    let err = drained(err_t)?;
    if !status.success() {
        let tail: String = err
            .lines()
            .chain(out.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(2)
            .collect::<Vec<_>>()
            .join(" / ");
        return Err(format!("{} exited with {status}: {tail}", r.tool));
    }
    match (r.output_file, &scratch) {
        (Some(name), Some(dir)) => std::fs::read_to_string(dir.0.join(name))
            .map(|file| format!("{file}\n{out}\n{err}"))
            .map_err(|e| format!("{} wrote no {name}: {e}", r.tool)),
        _ => Ok(out),
    }
}

/// A scratch directory for a tool's input and output files, removed with
/// everything in it when dropped.
struct Scratch(PathBuf);

/// The reference tools' scratch directories and files that exist now:
/// removed by [`remove_scratch`] when the process exits without unwinding
/// (a second Ctrl-C).
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every reference scratch directory and file that still exists.
pub fn remove_scratch() {
    let paths = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    for p in paths.iter() {
        if std::fs::remove_file(p).is_err() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

impl Scratch {
    /// Creates `benchsuite-ref-PID-N-NONCE` in the temporary directory
    /// (the nonce so that a directory left by a killed run with the same
    /// PID is never in the way) and writes the reference's input files
    /// into it.
    fn new(r: &Reference) -> Result<Scratch, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "benchsuite-ref-{}-{}-{nonce:x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create the scratch directory {}: {e}", dir.display()))?;
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.clone());
        let scratch = Scratch(dir);
        for (name, text) in &r.inputs {
            let path = scratch.0.join(name);
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| *d != self.0);
    }
}

/// The summary: one line per record, ours against the tool.
fn summary_table(report: &Report) -> String {
    let mut rows = vec![[
        "record".to_string(),
        "metric".into(),
        "benchsuite".into(),
        "ref".into(),
        "ratio".into(),
        "tool command / note".into(),
    ]];
    for r in &report.records {
        let Some(x) = &r.reference else {
            // The value in its column; a skip's or failure's reason with the
            // notes, so that it does not widen the value column.
            let (metric, value, note) = match (r.status, r.metrics.first()) {
                (Status::Ok, Some(m)) => (
                    m.name.clone(),
                    format_value(m.summary.median, &m.unit),
                    "(no reference for this point)".to_string(),
                ),
                _ => (String::new(), "-".into(), headline(r, None)),
            };
            rows.push([r.key(), metric, value, "-".into(), "-".into(), note]);
            continue;
        };
        let ours = r
            .metric(&x.metric)
            .filter(|_| r.status == Status::Ok)
            .map_or("-".to_string(), |m| format_value(m.summary.median, &m.unit));
        let tool = x
            .median
            .map_or("-".to_string(), |v| format_value(v, &x.unit));
        let ratio = x.ratio.map_or("-".to_string(), |v| format!("{v:.2}"));
        let mut what = x.command.clone();
        if let Some(n) = &x.note {
            what = format!("{what}  [{n}]");
        }
        rows.push([r.key(), x.metric.clone(), ours, tool, ratio, what]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::from(
        "\nbenchsuite vs reference tools (ratio > 1: benchsuite better; median of interleaved rounds)\n",
    );
    for row in &rows {
        for (i, w) in widths.iter().enumerate() {
            let cell = &row[i];
            let pad = w - cell.chars().count();
            if (2..5).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            }
            s.push_str("  ");
        }
        s.push_str(&row[5]);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skipped record's reason goes with the notes: it must not widen
    /// the value column of every row.
    #[test]
    fn a_skip_reason_does_not_widen_the_value_column() {
        let text = include_str!("../../crates/report/src/export/testdata/quick-pass.json");
        let mut report = Report::from_json(text, "quick-pass.json").unwrap();
        let long = "no CUDA driver: ".to_string() + &"x".repeat(200);
        report.records[0].status = Status::Skipped;
        report.records[0].reason = Some(long.clone());
        report.records[0].metrics.clear();
        let table = summary_table(&report);
        let header = table.lines().nth(2).unwrap();
        let before_notes = header.find("tool command / note").unwrap();
        let key_width = report
            .records
            .iter()
            .map(|r| r.key().chars().count())
            .max()
            .unwrap();
        assert!(
            before_notes < key_width + 60,
            "the value columns are {} wide:\n{table}",
            before_notes - key_width
        );
        let skipped = table.lines().find(|l| l.contains(&long)).unwrap();
        assert!(skipped.trim_end().ends_with(&long), "{skipped}");
        assert!(table.contains("(no reference for this point)"));
    }
}
