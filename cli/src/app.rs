//! The subcommands.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::{Context as _, Result};
use benchsuite::export::{self, Format, GhaTool};
use benchsuite::runner::Observer as _;
use benchsuite::{Host, Report, Status};

use crate::args::{Cli, Command, CompareArgs, ConvertArgs, InfoArgs, ListArgs, RunArgs, ServeArgs};
use crate::config;
use crate::output::replace_file;
use crate::progress::Progress;

/// The exit status: 0 ok, 1 regression (or a failure under `--strict`),
/// 130 interrupted. Errors (exit 2) are returned as `Err`.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(a) => {
            // Rank 0's meeting point (--rendezvous) outlives the run's error.
            let mut pairing = None;
            let result = cmd_run(&a, &mut pairing);
            benchsuite_fleet::Pairing::end(pairing, result, |e| {
                if crate::is_broken_pipe(&e) {
                    Err(e)
                } else {
                    eprintln!("error: {e:#}");
                    Ok(2)
                }
            })
        }
        Command::Reference(a) => crate::reference::cmd_reference(&a),
        Command::Compare(a) => cmd_compare(&a),
        Command::List(a) => cmd_list(&a),
        Command::Info(a) => cmd_info(&a),
        Command::Serve(a) => cmd_serve(&a),
        Command::Convert(a) => cmd_convert(&a),
        Command::Schema => cmd_schema(),
        Command::Merge(a) => crate::fleet::cmd_merge(&a),
        Command::Breakeven(a) => crate::breakeven::cmd_breakeven(&a),
        Command::Report(a) => crate::report_cmd::cmd_report(&a),
    }
}

fn cmd_run(args: &RunArgs, pairing: &mut Option<benchsuite_fleet::Pairing>) -> Result<i32> {
    let stdout_tty = io::stdout().is_terminal();
    let (mut cfg, output, flags) = config::run_config(args, stdout_tty)?;
    // The launcher's task (into the report), and --output-dir checked.
    let placement = benchsuite_fleet::Placement::new(&config::placement(&args.cluster), &mut cfg)?;
    let registry = benchsuite::registry();
    // Fail before measuring, not after, if the output cannot be written.
    // Not truncated: a reader (node_exporter's textfile collector) keeps
    // seeing the previous file until the new one replaces it.
    let check_output = || -> Result<()> {
        if let Some(file) = &output.file {
            for (path, _) in output_files(output.format, file) {
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)
                    .with_context(|| format!("-o {}: cannot create the file", path.display()))?;
            }
        }
        Ok(())
    };
    // Rank 0 of --rendezvous: before it serves the meeting point. Other
    // ranks check after they joined, so that their failure marker tells
    // the others at once. (`idle()` says so on stderr: asked once.)
    let mut idle = None;
    if args.cluster.rendezvous.is_some() && placement.cluster().is_some_and(|c| c.rank == 0) {
        let i = placement.idle();
        idle = Some(i);
        if !i {
            check_output()?;
        }
    }
    // A plan file's phases (`-f`), read before the pairing, which needs
    // to know whether they run net benchmarks; its error comes after.
    let planned = args
        .plan
        .as_ref()
        .map(|f| crate::planfile::phases(f, args, &cfg));
    let plan_configs: Option<Vec<benchsuite::RunConfig>> = planned.as_ref().map(|r| {
        r.as_ref()
            .map(|v| v.iter().map(|p| p.config.clone()).collect())
            .unwrap_or_default()
    });
    // Under a launcher, net.* run last, between ranks (pairing.rs); from
    // here on this rank beats, and an error leaves its failure marker.
    *pairing = benchsuite_fleet::Pairing::new(
        &config::pairing(&args.cluster),
        &placement,
        &cfg,
        &registry,
        plan_configs.as_deref(),
    )?;
    // One phase, or those of a plan file (`-f`), each planned (and so
    // checked) before anything runs.
    let phases: Vec<(Option<benchsuite::phase::Phase>, benchsuite::RunConfig)> = match planned {
        Some(p) => p?
            .into_iter()
            .map(|p| {
                let c = p.config.clone();
                (Some(p), c)
            })
            .collect(),
        None => vec![(None, cfg.clone())],
    };
    let mut phases = phases;
    if args.plan.is_some() {
        // A command-line parameter applies to the phases whose benchmarks
        // take it, and must be taken by one of them.
        for key in cfg.sweep.keys() {
            let mut taken = false;
            for (phase, c) in &mut phases {
                let takes = registry
                    .select(&c.selectors)
                    .map_err(|e| {
                        phase
                            .as_ref()
                            .map_or(anyhow::anyhow!("{e}"), |p| p.explain(e).into())
                    })?
                    .iter()
                    .any(|b| b.meta().param(key).is_some());
                if takes {
                    taken = true;
                } else {
                    c.sweep.remove(key);
                }
            }
            if !taken {
                anyhow::bail!(
                    "{}: no phase of the plan runs a benchmark that takes `{key}`",
                    flags.flag(key)
                );
            }
        }
    }
    let plans = phases
        .iter()
        .map(|(phase, c)| {
            benchsuite::runner::plan(&registry, c).map_err(|e| match phase {
                Some(p) => p.explain(e).into(),
                None => flags.explain(e),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // What the report says was run, with a plan file: its phases as
    // planned, before the pairing splits them.
    let phase_configs: Vec<benchsuite::RunConfig> = phases.iter().map(|(_, c)| c.clone()).collect();
    let split = match &*pairing {
        Some(p) => p.split(&registry, &phases, plans[0].host())?,
        None => None,
    };
    // The phases run as they are, then (pairing) the net parts of all.
    let ((phases, plans), net) = match split {
        Some(s) => (s.phases, s.net),
        None => {
            *pairing = None; // `auto` on loopback (said why), or no pairing
            ((phases, plans), Vec::new())
        }
    };
    let plan = plans
        .first()
        .or(net.first().map(|n| &n.plan))
        .expect("a phase");
    if idle.unwrap_or_else(|| placement.idle()) {
        if let Some(p) = &pairing {
            p.announce_idle()?;
        }
        return Ok(0);
    }
    check_output()?;

    install_ctrlc(&cfg.cancel);
    if plan.host().build.is_debug() {
        eprintln!(
            "warning: this is a DEBUG build of benchsuite; its numbers are not representative. \
             Install a release build: cargo install --path cli"
        );
    }
    let mut observer = Checkpoints {
        progress: Progress::new(io::stderr().is_terminal() && !args.no_progress),
        // Only JSON carries the `progress` marker that tells a reader the
        // run is unfinished; other formats (a .prom file a collector reads)
        // are replaced once, at the end.
        file: output
            .file
            .clone()
            .filter(|_| output.format == Format::Json),
        format: output.format,
        failed: false,
        before: None,
        steps_before: 0,
        planned_total: 0,
    };
    let steps =
        |p: &benchsuite::runner::Plan<'_>, c: &benchsuite::RunConfig| p.len() * c.rounds.max(1);
    let net_steps: usize = net.iter().map(|n| steps(&n.plan, &n.cfg)).sum();
    let planned: usize = plans
        .iter()
        .zip(&phases)
        .map(|(p, (_, c))| steps(p, c))
        .sum::<usize>()
        + net_steps;
    observer.planned_total = planned;
    let mut report: Option<Report> = None;
    let mut done = 0;
    // Each phase (`Ok`), then the pairing's net parts in one go (`Err`;
    // their records are named after their phases).
    let units = phases
        .iter()
        .zip(&plans)
        .map(Ok)
        .chain(pairing.as_ref().filter(|_| !net.is_empty()).map(Err));
    for unit in units {
        observer.steps_before = done;
        observer.before = report.clone();
        let (r, all) = match unit {
            Ok(((phase, c), plan)) => {
                let mut r = benchsuite::runner::run_plan(plan, c, &mut observer);
                if let Some(p) = phase {
                    for rec in &mut r.records {
                        rec.phase = Some(p.name.clone());
                    }
                }
                (r, steps(plan, c))
            }
            Err(p) => (p.run(&net, &mut observer), net_steps),
        };
        done += r.progress.map_or(all, |p| p.done);
        report = Some(match report {
            None => r,
            Some(mut acc) => {
                for s in &r.config.selectors {
                    if !acc.config.selectors.contains(s) {
                        acc.config.selectors.push(s.clone());
                    }
                }
                acc.records.extend(r.records);
                // Module facts a later phase found (the disk under its
                // files, a NIC) join the host section.
                for (k, v) in r.host.extra {
                    acc.host.extra.entry(k).or_insert(v);
                }
                acc
            }
        });
        if cfg.cancel.load(Ordering::SeqCst) {
            break;
        }
        // The runner checkpoints within a phase; between phases the
        // report so far is written here, so a crash in the next phase
        // loses nothing of this one.
        if done < planned
            && observer.wants_checkpoints()
            && let Some(r) = &report
        {
            let mut so_far = r.clone();
            so_far.progress = Some(benchsuite::report::RunProgress { done, planned });
            observer.before = None;
            observer.checkpoint(&so_far);
        }
    }
    drop(observer);
    let mut report = report.expect("at least one phase");
    if let Some(p) = &pairing {
        p.finish(
            &mut report,
            &cfg,
            args.plan.is_some().then_some(&phase_configs[..]),
        );
    }
    report.progress = (done < planned).then_some(benchsuite::report::RunProgress { done, planned });

    let count = |s: Status| report.records.iter().filter(|r| r.status == s).count();
    let (ok, skipped, failed) = (
        count(Status::Ok),
        count(Status::Skipped),
        count(Status::Failed),
    );
    let interrupted = cfg.cancel.load(Ordering::SeqCst);
    // Decided before anything is written: a closed stdout cannot turn a
    // failure under --strict (or an interruption) into success.
    let code = if interrupted {
        130
    } else if args.strict && failed > 0 {
        1
    } else {
        0
    };
    let table = export::TableOptions {
        verbose: args.verbose,
    };
    let written = (|| -> Result<String> {
        let mut written = String::new();
        if placement.to_stdout(output.file.is_some(), args.format.is_some(), stdout_tty) {
            written = write_report(&report, output.format, output.file.as_deref(), &table)?;
        }
        written += &placement.write(&report)?;
        if output.file.is_some() && stdout_tty && output.format != Format::Table {
            write_report(&report, Format::Table, None, &table)?;
        }
        Ok(written)
    })();
    let written = match keep_verdict(code, written)? {
        Output::Written(w) => w,
        Output::StdoutClosed(code) => return Ok(code),
    };
    eprintln!(
        "{} records: {ok} ok, {skipped} skipped, {failed} failed{written}",
        report.records.len(),
    );
    if interrupted {
        eprintln!("interrupted: the report holds the records finished before Ctrl-C");
    }
    Ok(code)
}

/// What became of a command's output when its exit code was already
/// decided.
pub(crate) enum Output<T> {
    /// Written in full.
    Written(T),
    /// Stdout was closed by its reader (`| head -1`): the output stops,
    /// the exit code stays.
    StdoutClosed(i32),
}

/// A verdict outlives its output. `main` treats a broken pipe as success,
/// which is right for output that carries no verdict (`run | head` read
/// what it wanted); where the exit code *is* the answer (`compare`,
/// `--strict`) a reader that closed stdout early must not turn a failed
/// gate into exit 0. `code` is the exit code decided before writing.
pub(crate) fn keep_verdict<T>(code: i32, written: Result<T>) -> Result<Output<T>> {
    match written {
        Ok(w) => Ok(Output::Written(w)),
        Err(e) if crate::is_broken_pipe(&e) => Ok(Output::StdoutClosed(code)),
        Err(e) => Err(e),
    }
}

/// First Ctrl-C: finish the current record, write what is done, exit 130.
/// Second Ctrl-C: exit 130 at once.
pub(crate) fn install_ctrlc(cancel: &Arc<AtomicBool>) {
    let cancel = cancel.clone();
    let presses = AtomicUsize::new(0);
    // An error here only means a handler exists already (embedding tests).
    let _ = ctrlc::set_handler(move || {
        if presses.fetch_add(1, Ordering::SeqCst) == 0 {
            cancel.store(true, Ordering::SeqCst);
            eprintln!(
                "\ninterrupt: finishing the current record, then writing the report (Ctrl-C again to abort)"
            );
        } else {
            // Reference tools run in process groups of their own.
            benchsuite::reference::kill_running_tools();
            benchsuite::reference::run::remove_scratch();
            std::process::exit(130);
        }
    });
}

/// The progress bar, plus a JSON `-o FILE` rewritten (atomically) after
/// every record, so a crash, the OOM killer or `kill -9` loses only the
/// record in flight; the file says how far the run got (`progress`).
struct Checkpoints {
    progress: Progress,
    file: Option<PathBuf>,
    format: Format,
    failed: bool,
    /// With a plan file: the report of the phases already run, whose
    /// records a checkpoint keeps ahead of the current phase's.
    before: Option<Report>,
    /// Record steps (records × rounds) those phases took.
    steps_before: usize,
    /// Record steps of the whole plan.
    planned_total: usize,
}

impl benchsuite::runner::Observer for Checkpoints {
    fn start(&mut self, total: usize) {
        self.progress.start(total);
    }

    fn record_start(&mut self, id: &str, point: &benchsuite::Point) {
        self.progress.record_start(id, point);
    }

    fn record_done(&mut self, record: &benchsuite::Record) {
        self.progress.record_done(record);
    }

    fn wants_checkpoints(&self) -> bool {
        self.file.is_some() && !self.failed
    }

    fn checkpoint(&mut self, report: &Report) {
        let Some(file) = &self.file else { return };
        let joined;
        let report = match &self.before {
            Some(b) => {
                let mut r = b.clone();
                r.records.extend(report.records.iter().cloned());
                r.progress = report.progress.map(|p| benchsuite::report::RunProgress {
                    done: p.done + self.steps_before,
                    planned: self.planned_total.max(p.planned + self.steps_before),
                });
                joined = r;
                &joined
            }
            None => report,
        };
        if let Err(e) = replace_file(file, |w| export::write_report(self.format, report, w)) {
            // Keep measuring: the final write will try again and report.
            eprintln!("warning: {e:#}; no more checkpoints of -o during this run");
            self.failed = true;
        }
    }
}

/// The files `-o FILE` stands for: FILE itself, or for `gha` one file per
/// github-action-benchmark tool, named from FILE as a prefix.
fn output_files(format: Format, file: &Path) -> Vec<(PathBuf, Option<GhaTool>)> {
    if format.writes_one_stream() {
        vec![(file.to_path_buf(), None)]
    } else {
        GhaTool::BOTH.map(|t| (t.path(file), Some(t))).to_vec()
    }
}

/// Writes the report to `file` (or stdout) and returns what to add to the
/// closing summary line: `; written to FILE`.
fn write_report(
    report: &Report,
    format: Format,
    file: Option<&Path>,
    table: &export::TableOptions,
) -> Result<String> {
    let Some(file) = file else {
        let mut out = io::stdout().lock();
        export::write_report_with(format, report, table, &mut out)?;
        out.flush()?;
        return Ok(String::new());
    };
    let mut written = Vec::new();
    for (path, tool) in output_files(format, file) {
        replace_file(&path, |w| match tool {
            Some(t) => export::write_gha(t, report, w),
            None => export::write_report_with(format, report, table, w),
        })?;
        written.push(match tool {
            Some(t) => {
                let n = t.count(report);
                if n == 0 {
                    eprintln!(
                        "note: {} is empty (no ok metric where {} is better); github-action-benchmark rejects an empty file, so give it only the other one",
                        path.display(),
                        if t == GhaTool::BiggerIsBetter { "higher" } else { "lower" },
                    );
                }
                let entries = if n == 1 { "entry" } else { "entries" };
                format!("{} ({n} {entries}, tool {})", path.display(), t.tool_name())
            }
            None => path.display().to_string(),
        });
    }
    Ok(format!("; written to {}", written.join(" and ")))
}

/// Prints the JSON Schema of the report.
fn cmd_schema() -> Result<i32> {
    // Serialised first, so a closed pipe is a plain io::Error (success).
    let text = serde_json::to_string_pretty(&benchsuite::schema::json_schema())?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(0)
}

fn cmd_compare(args: &CompareArgs) -> Result<i32> {
    let options = config::compare_options(args)?;
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    if !format.writes_comparison() {
        anyhow::bail!(
            "--format {format} is for reports, not comparisons: compare writes table, json, csv or md (use `benchsuite convert NEW.json --format {format}` for a dashboard)"
        );
    }
    // Reports before schema 1.6 carry no metric roles: the benchmarks'
    // declarations give them.
    let registry = benchsuite::registry();
    if let Some(bins) = &args.interleave {
        let (mut base, mut new) = crate::interleave::run(bins, args)?;
        registry.fill_roles(&mut base);
        registry.fill_roles(&mut new);
        let options = benchsuite::compare::CompareOptions {
            paired: true,
            ..options
        };
        let cmp = benchsuite::compare::compare(&base, &new, &options)?;
        return write_comparison(args, format, &cmp);
    }
    if !args.run_args.is_empty() {
        anyhow::bail!(
            "arguments after `--` ({}) are for --interleave's runs",
            args.run_args.join(" ")
        );
    }
    use benchsuite::fleet::{Fleet, ReportFile};
    let (history_paths, new_path) = compare_inputs(args)?;
    let read = |path: &PathBuf| -> Result<ReportFile> {
        let mut file = Fleet::read_file(path)?;
        if let ReportFile::Report(r) = &mut file {
            registry.fill_roles(r);
        }
        Ok(file)
    };
    let mut history = Vec::with_capacity(history_paths.len());
    for p in &history_paths {
        history.push((p.display().to_string(), read(p)?));
    }
    let new = read(&new_path)?;
    let (history, new) = match (history.as_slice(), new) {
        ([(_, ReportFile::Fleet(b))], ReportFile::Fleet(n)) => {
            // Host by host: crates/report/src/compare/fleet.rs.
            if !matches!(format, Format::Table | Format::Json | Format::Markdown) {
                anyhow::bail!(
                    "--format {format}: a fleet comparison is written as table, json or md"
                );
            }
            let cmp = benchsuite::compare::compare_fleets(b, &n, &options)?;
            let code = if cmp.passed() { 0 } else { 1 };
            let mut buf = Vec::new();
            benchsuite::compare::write_fleet_comparison(format, &cmp, &mut buf)?;
            let written = match &args.output {
                Some(path) => std::fs::write(path, &buf)
                    .with_context(|| format!("-o {}: cannot write the file", path.display())),
                None => (|| {
                    let mut out = io::stdout().lock();
                    out.write_all(&buf)?;
                    out.flush()?;
                    Ok(())
                })(),
            };
            keep_verdict(code, written)?;
            return Ok(code);
        }
        (_, ReportFile::Report(n)) => {
            let mut reports = Vec::with_capacity(history.len());
            for (name, f) in history {
                match f {
                    ReportFile::Report(r) => reports.push((name, r)),
                    ReportFile::Fleet(_) => anyhow::bail!(
                        "{name} is a fleet report and {} one host's report: compare two fleets (benchsuite merge), or reports of one host",
                        new_path.display()
                    ),
                }
            }
            (reports, n)
        }
        (_, ReportFile::Fleet(_)) => anyhow::bail!(
            "{} is a fleet report: compare it with one baseline fleet report (a history of fleets is not supported; merge each run's hosts and compare the newest two)",
            new_path.display()
        ),
    };
    let baselines: Vec<benchsuite::compare::Baseline<'_>> = history
        .iter()
        .map(|(name, report)| benchsuite::compare::Baseline { name, report })
        .collect();
    let cmp = benchsuite::compare::compare_history(&baselines, &new, &options)?;
    for e in &cmp.excluded {
        // A baseline's host facts are a foreign report's text.
        let e: String = e
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        eprintln!("warning: left out of the history: {e} (--allow-mixed-hosts keeps it)");
    }
    write_comparison(args, format, &cmp)
}

/// Writes a comparison to `-o` or stdout; the exit code is the gate's,
/// whatever becomes of stdout.
fn write_comparison(
    args: &CompareArgs,
    format: Format,
    cmp: &benchsuite::compare::Comparison,
) -> Result<i32> {
    let code = if cmp.passed() { 0 } else { 1 };
    let written = (|| -> Result<()> {
        match &args.output {
            Some(path) => {
                let f = File::create(path)
                    .with_context(|| format!("-o {}: cannot create the file", path.display()))?;
                let mut w = BufWriter::new(f);
                export::write_comparison(format, cmp, &mut w)?;
                w.flush()?;
            }
            None => {
                let mut out = io::stdout().lock();
                export::write_comparison(format, cmp, &mut out)?;
                out.flush()?;
            }
        }
        Ok(())
    })();
    keep_verdict(code, written)?;
    Ok(code)
}

/// The baselines (positional ones, then `--baseline-dir`'s, each file
/// once) and the new report. A pattern the shell left unexpanded (no file
/// matched) and a directory without reports are errors that say so.
fn compare_inputs(args: &CompareArgs) -> Result<(Vec<PathBuf>, PathBuf)> {
    let (new, positional) = args.reports.split_last().expect("clap requires one report");
    for p in args.reports.iter() {
        let text = p.to_string_lossy();
        if text.contains(['*', '?', '[']) && !p.exists() {
            anyhow::bail!(
                "{text}: no file matches this pattern (an empty history?); record a baseline first with `benchsuite run -o`"
            );
        }
    }
    let same = |a: &PathBuf, b: &PathBuf| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let mut history: Vec<PathBuf> = positional.to_vec();
    if let Some(dir) = &args.baseline_dir {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("--baseline-dir {}: cannot read it", dir.display()))?;
        let mut found = Vec::new();
        for e in entries {
            let path = e
                .with_context(|| format!("--baseline-dir {}: cannot read it", dir.display()))?
                .path();
            if path.extension().is_some_and(|x| x == "json") && path.is_file() {
                found.push(path);
            }
        }
        if found.is_empty() {
            anyhow::bail!(
                "--baseline-dir {}: no baseline report (*.json) in it (an empty history?)",
                dir.display()
            );
        }
        found.sort();
        // The new report, when it is in the directory, is not its own
        // baseline.
        found.retain(|p| !same(p, new));
        history.extend(found);
    }
    let mut unique: Vec<PathBuf> = Vec::with_capacity(history.len());
    for p in history {
        if !unique.iter().any(|q| same(q, &p)) {
            unique.push(p);
        }
    }
    if unique.is_empty() {
        anyhow::bail!(
            "compare needs a baseline and a new report: BASE.json [MORE.json...] NEW.json, or --baseline-dir DIR NEW.json"
        );
    }
    Ok((unique, new.clone()))
}

fn cmd_convert(args: &ConvertArgs) -> Result<i32> {
    let format = config::output_format(
        args.format.as_deref(),
        args.output.as_deref(),
        io::stdout().is_terminal(),
    )?;
    let mut report = Report::read(&args.report)?;
    // A report written before tokens were redacted still holds one.
    if let Some(t) = report.config.options.get_mut("token") {
        *t = benchsuite::bench::REDACTED.to_string();
    }
    let table = export::TableOptions {
        verbose: args.verbose,
    };
    let written = write_report(&report, format, args.output.as_deref(), &table)?;
    if !written.is_empty() {
        eprintln!("{} records{written}", report.records.len());
    }
    Ok(0)
}

fn cmd_list(args: &ListArgs) -> Result<i32> {
    let registry = benchsuite::registry();
    let mut out = io::stdout().lock();
    let wanted: Vec<&str> = registry
        .select(&args.selectors)
        .map(|v| v.iter().map(|b| b.meta().id).collect())
        .or_else(|e| {
            if args.selectors.is_empty() {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })?;
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    if !matches!(format, Format::Table | Format::Json) {
        anyhow::bail!("--format {format}: list writes table or json");
    }
    // What a run would ask each benchmark: can it run here?
    let ctx = args
        .probe
        .then(|| benchsuite::RunConfig::default().context(Arc::new(Host::detect())));
    if format == Format::Json {
        let ids = (!args.selectors.is_empty()).then_some(wanted.as_slice());
        let catalog = benchsuite::catalog::catalog(&registry, ids, ctx.as_ref());
        writeln!(out, "{}", serde_json::to_string_pretty(&catalog)?)?;
        return Ok(0);
    }
    for m in registry.modules() {
        let benches: Vec<_> = m
            .benchmarks
            .iter()
            .filter(|b| wanted.contains(&b.meta().id))
            .collect();
        if benches.is_empty() && !args.selectors.is_empty() {
            continue;
        }
        writeln!(out, "{}  {}", m.name, m.description)?;
        if m.benchmarks.is_empty() {
            writeln!(out, "    (no benchmarks yet)")?;
        }
        for b in benches {
            let meta = b.meta();
            writeln!(out, "  {:<22} {}", meta.id, meta.description)?;
            for p in &meta.params {
                writeln!(
                    out,
                    "      {:<10} {:<28} default {:<10} {}",
                    p.name,
                    p.kind.describe(),
                    p.kind.display(&p.default),
                    p.help
                )?;
            }
            let metrics: Vec<String> = meta
                .metrics
                .iter()
                .map(|m| format!("{} [{}]", m.name, m.unit))
                .collect();
            writeln!(out, "      metrics: {}", metrics.join(", "))?;
            for o in b.options() {
                writeln!(
                    out,
                    "      --opt {:<22} {}",
                    format!("{}=...", o.name),
                    o.help
                )?;
            }
            if let Some(ctx) = &ctx {
                match benchsuite::catalog::describe(b.as_ref(), Some(ctx)).probe {
                    Some(p) if !p.ready => {
                        writeln!(out, "      here: skipped: {}", p.reason.unwrap_or_default())?
                    }
                    _ => writeln!(out, "      here: can run")?,
                }
            }
        }
    }
    Ok(0)
}

fn cmd_info(args: &InfoArgs) -> Result<i32> {
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    let mut host = Host::detect();
    // What the modules report about their hardware (GPU, NIC, the disk
    // under the scratch directory), as a run records it in host.extra.
    let mut cfg = benchsuite::RunConfig::quick();
    if let Some(dir) = &args.scratch_dir {
        if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
            anyhow::bail!("--scratch-dir {}: not a directory", dir.display());
        }
        cfg.scratch_dir = Some(dir.clone());
    }
    let ctx = cfg.context(Arc::new(host.clone()));
    host.extra = benchsuite::runner::module_facts(&benchsuite::registry(), &ctx);
    let mut out = io::stdout().lock();
    if format == Format::Json {
        writeln!(out, "{}", serde_json::to_string_pretty(&host)?)?;
        return Ok(0);
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let num = |v: Option<usize>| v.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
    let c = &host.cpu;
    writeln!(out, "hostname        {}", opt(&host.hostname))?;
    writeln!(out, "os / arch       {} / {}", host.os, host.arch)?;
    writeln!(out, "kernel          {}", opt(&host.kernel))?;
    writeln!(out, "virtualization  {}", opt(&host.virtualization))?;
    writeln!(out, "cpu model       {}", opt(&c.model))?;
    writeln!(out, "cpu vendor      {}", opt(&c.vendor))?;
    if c.family.is_some() {
        let hex = |v: Option<u32>| v.map(|n| format!("{n:#x}")).unwrap_or_else(|| "?".into());
        writeln!(
            out,
            "cpu id          family {}, model {}, stepping {}, microcode {}{}",
            hex(c.family),
            hex(c.model_id),
            c.stepping
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into()),
            opt(&c.microcode),
            c.microarchitecture
                .as_ref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "cpus            {} logical, {} physical cores, {} sockets",
        num(c.logical_cpus),
        num(c.physical_cores),
        num(c.sockets)
    )?;
    let mhz = |v: Option<f64>| {
        v.map(|m| format!("{m:.0} MHz"))
            .unwrap_or_else(|| "unknown".into())
    };
    writeln!(
        out,
        "frequency       base {}, max {}, governor {}",
        mhz(c.base_mhz),
        mhz(c.max_mhz),
        opt(&c.governor)
    )?;
    writeln!(out, "simd            {}", c.simd.join(" "))?;
    for cache in &c.caches {
        writeln!(
            out,
            "cache L{} {:<11} {}{}",
            cache.level,
            cache.kind,
            benchsuite::units::format_size(cache.size_bytes),
            cache
                .shared_by
                .map(|n| format!(" (shared by {n} cpus)"))
                .unwrap_or_default()
        )?;
    }
    let size = |v: Option<u64>| {
        v.map(benchsuite::units::format_size)
            .unwrap_or_else(|| "unknown".into())
    };
    writeln!(
        out,
        "memory          {} ({} available)",
        size(host.memory_bytes),
        size(host.memory_available_bytes)
    )?;
    for (module, facts) in &host.extra {
        writeln!(out, "{module:<15} {facts}")?;
    }
    writeln!(
        out,
        "build           benchsuite {} ({}, {})",
        host.build.version, host.build.profile, host.build.target
    )?;
    let unknown = host.unknown_fields();
    if !unknown.is_empty() {
        writeln!(
            out,
            "unknown         {} (reported as null in JSON, never guessed)",
            unknown.join(", ")
        )?;
    }
    Ok(0)
}

fn cmd_serve(args: &ServeArgs) -> Result<i32> {
    use std::net::{SocketAddr, ToSocketAddrs};
    let bind: SocketAddr = args
        .bind
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "invalid value `{}` for --bind: expected ADDR:PORT, e.g. 127.0.0.1:{} or [::1]:{}",
                args.bind,
                benchsuite_net::DEFAULT_PORT,
                benchsuite_net::DEFAULT_PORT
            )
        })?;
    // --no-auth: nobody needs a token, so nobody may reach it but this
    // machine.
    if args.no_auth && !bind.ip().is_loopback() {
        anyhow::bail!(
            "--no-auth is refused on {bind}: only a loopback address may go without a token \
             (any host that reaches {bind} could use this machine's network); set {} or give --token-file PATH",
            config::TOKEN_ENV
        );
    }
    let token = config::resolve_token(
        args.token.as_ref(),
        args.token_file.as_deref(),
        !args.no_auth,
    )?;
    if args.no_auth && std::env::var_os(config::TOKEN_ENV).is_some() {
        eprintln!(
            "benchsuite serve: note: {} is set but ignored: --no-auth",
            config::TOKEN_ENV
        );
    }
    let source = token.as_ref().map(|(_, s)| *s);
    let mut cfg = benchsuite_net::ServerConfig::new(bind, token.map(|(t, _)| t));
    cfg.log = true;
    cfg.echo_cpu = args.echo_cpu;
    // The configuration's own checks first (a public address without a
    // token, a CPU this process may not use), then the rule of `serve`:
    // a token also on loopback, unless --no-auth.
    cfg.check()?;
    if source.is_none() && !args.no_auth {
        anyhow::bail!(
            "benchsuite serve requires a token, also on {bind}: any user of this machine could use the server otherwise; \
             set {} or give --token-file PATH (clients then use the same token), or pass --no-auth to accept anyone on this machine",
            config::TOKEN_ENV
        );
    }
    let echo_cpu = args.echo_cpu;
    benchsuite_net::serve(cfg, |addr| {
        eprintln!(
            "benchsuite serve: listening on {addr} (TCP; UDP tests on ephemeral ports), protocol version {}, {}{}; Ctrl-C to stop",
            benchsuite_net::PROTOCOL_VERSION,
            match source {
                Some(s) => format!("token required (from {s})"),
                None => "no token (--no-auth: anyone on this machine may use it)".to_string(),
            },
            echo_cpu
                .map(|c| format!(", echo threads pinned to CPU {c}"))
                .unwrap_or_default()
        );
        eprintln!(
            "benchsuite serve: clients run `benchsuite run net --peer {addr}`{}",
            if source.is_some() {
                format!(
                    " with the same token in {} or --token-file",
                    config::TOKEN_ENV
                )
            } else {
                String::new()
            }
        );
    })?;
    eprintln!("benchsuite serve: stopped");
    Ok(0)
}
