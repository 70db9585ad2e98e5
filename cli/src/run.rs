//! `benchsuite run`: the command line's phases (or a plan file's), the
//! launcher's placement and pairing, checkpoints of `-o` and the output.
//! Planning, running and merging phases are the library's
//! (`benchsuite::phase`); the pairing is `benchsuite_fleet`'s.

use std::path::PathBuf;

use anyhow::Result;
use benchsuite::export::{self, Format};
use benchsuite::phase::{Phase, merge_phase, run_phase};
use benchsuite::results::RunProgress;
use benchsuite::runner::{Observer as _, Plan};
use benchsuite::{Registry, Report, RunConfig, Status};
use benchsuite_fleet::pairing::NetPart;
use benchsuite_fleet::{Pairing, Placement};

use crate::config::{self, FlagNames, RunSettings};
use crate::output::{Output, keep_verdict, output_files, replace_file, write_report};
use crate::progress::Progress;

/// One phase: a plan file's (named) or the command line's.
type Phases = Vec<(Option<Phase>, RunConfig)>;

/// Runs `benchsuite run`. `pairing` outlives an error (rank 0's meeting
/// point stays until the other ranks learnt of it).
pub fn cmd_run(
    mut s: RunSettings,
    registry: &Registry,
    pairing: &mut Option<Pairing>,
) -> Result<i32> {
    // The launcher's task (into the report), and --output-dir checked.
    let placement = Placement::new(&s.placement, &mut s.cfg)?;
    // Rank 0 of --rendezvous: before it serves the meeting point. Other
    // ranks check after they joined, so that their failure marker tells
    // the others at once. (`idle()` says so on stderr: asked once.)
    let mut idle = None;
    if s.rendezvous && placement.cluster().is_some_and(|c| c.rank == 0) {
        let i = placement.idle();
        idle = Some(i);
        if !i {
            check_output(&s.output)?;
        }
    }
    // A plan file's phases (`-f`), read before the pairing, which needs
    // to know whether they run net benchmarks; its error comes after.
    let planned = s
        .plan
        .as_ref()
        .map(|(f, given)| crate::planfile::phases(f, given, &s.cfg));
    *pairing = start_pairing(&s.pairing, &placement, &s.cfg, registry, planned.as_ref())?;
    let phases = phases(&s.cfg, &s.flags, registry, planned)?;
    let mut plans = phases
        .iter()
        .map(|(phase, c)| {
            benchsuite::runner::plan(registry, c).map_err(|e| match phase {
                Some(p) => p.explain(e).into(),
                None => s.flags.explain(e),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !s.only.is_empty() {
        keep_only(&mut plans, &s.only)?;
    }
    // What the report says was run, with a plan file: its phases as
    // planned, before the pairing splits them.
    let phase_configs: Vec<RunConfig> = phases.iter().map(|(_, c)| c.clone()).collect();
    let split = match &*pairing {
        Some(p) => p.split(registry, &phases, plans[0].host())?,
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
    if idle.unwrap_or_else(|| placement.idle()) {
        if let Some(p) = &pairing {
            p.announce_idle()?;
        }
        return Ok(0);
    }
    check_output(&s.output)?;
    crate::interrupt::install(s.cfg.cancel_flag());
    let host = plans
        .first()
        .or(net.first().map(|n| &n.plan))
        .expect("a phase");
    if host.host().build.is_debug() {
        eprintln!(
            "warning: this is a DEBUG build of benchsuite; its numbers are not representative. \
             Install a release build: cargo install --path cli"
        );
    }
    let mut report = run_all(&s, &phases, &plans, &net, pairing.as_ref());
    if let Some(p) = &pairing {
        let plan = s.plan.is_some().then_some(&phase_configs[..]);
        p.finish(&mut report, &s.cfg, plan);
    }
    finish(&s, &placement, &report, s.cfg.is_cancelled())
}

/// Keeps the planned points whose record key (`ID PARAM=VALUE ...`, as
/// [`benchsuite::Record::requested_key`] names the record) is one of
/// `keys` (`--only`); each key must name a planned point.
fn keep_only(plans: &mut [Plan<'_>], keys: &[String]) -> Result<()> {
    let mut found = vec![false; keys.len()];
    for plan in plans.iter_mut() {
        for b in &mut plan.benches {
            let id = b.bench.meta().id;
            b.points.retain(|p| {
                let label = p.label();
                let key = if label.is_empty() {
                    id.to_string()
                } else {
                    format!("{id} {label}")
                };
                let hit = keys.iter().position(|k| *k == key);
                if let Some(i) = hit {
                    found[i] = true;
                }
                hit.is_some()
            });
        }
        plan.benches.retain(|b| !b.points.is_empty());
    }
    if let Some(i) = found.iter().position(|f| !f) {
        anyhow::bail!(
            "--only {}: no record of this run has that key (a key is the benchmark id and its parameters, `os.call args=0`, as `compare` prints them)",
            keys[i]
        );
    }
    Ok(())
}

/// Under a launcher, net.* run last, between ranks: from here on this rank
/// beats, and an error leaves its failure marker. `planned`: a plan file's
/// phases (none when it could not be read: its error comes later, after
/// the marker can tell the other ranks).
fn start_pairing(
    config: &benchsuite_fleet::PairingConfig,
    placement: &Placement,
    cfg: &RunConfig,
    registry: &Registry,
    planned: Option<&Result<Vec<Phase>>>,
) -> Result<Option<Pairing>> {
    let plan_configs: Option<Vec<RunConfig>> = planned.map(|r| {
        r.as_ref()
            .map(|v| v.iter().map(|p| p.config.clone()).collect())
            .unwrap_or_default()
    });
    Ok(Pairing::new(
        config,
        placement,
        cfg,
        registry,
        plan_configs.as_deref(),
    )?)
}

/// Fails before measuring, not after, if `-o` cannot be written. Creates
/// and truncates nothing: a reader (node_exporter's textfile collector)
/// keeps seeing the previous file until the new one replaces it, and a run
/// that fails before its first checkpoint leaves no empty file.
fn check_output(output: &config::Output) -> Result<()> {
    if let Some(file) = &output.file {
        for (path, _) in output_files(output.format, file) {
            crate::output::check_writable("-o", &path)?;
        }
    }
    Ok(())
}

/// One phase, or those of a plan file (`-f`). With a plan file, a
/// command-line parameter applies to the phases whose benchmarks take it,
/// and must be taken by one of them.
fn phases(
    cfg: &RunConfig,
    flags: &FlagNames,
    registry: &Registry,
    planned: Option<Result<Vec<Phase>>>,
) -> Result<Phases> {
    let Some(planned) = planned else {
        return Ok(vec![(None, cfg.clone())]);
    };
    let mut phases: Phases = planned?
        .into_iter()
        .map(|p| {
            let c = p.config.clone();
            (Some(p), c)
        })
        .collect();
    for key in cfg.sweep().keys() {
        let mut taken = false;
        for (phase, c) in &mut phases {
            let takes = registry
                .select(c.selectors())
                .map_err(|e| {
                    phase
                        .as_ref()
                        .map_or(anyhow::anyhow!("{e}"), |p| p.explain(e).into())
                })?
                .iter()
                .any(|b| benchsuite::sweep::key_applies(key, &b.meta()));
            if takes {
                taken = true;
            } else {
                // None of the phase's benchmarks takes it: it does not
                // apply there.
                *c = c
                    .to_builder()
                    .sweep(c.sweep().iter().filter(|(k, _)| *k != key))
                    .build()?;
            }
        }
        if !taken {
            anyhow::bail!(
                "{}: no phase of the plan runs a benchmark that takes `{key}`",
                flags.flag(key)
            );
        }
    }
    Ok(phases)
}

/// Runs each phase, then the pairing's net parts in one go (their records
/// are named after their phases), into one report; between phases the
/// report so far is checkpointed, so a crash in the next phase loses
/// nothing of this one. The report's `progress` says how far it got.
fn run_all(
    s: &RunSettings,
    phases: &Phases,
    plans: &[Plan<'_>],
    net: &[NetPart<'_>],
    pairing: Option<&Pairing>,
) -> Report {
    let (output, cfg) = (&s.output, &s.cfg);
    let mut observer = Checkpoints {
        progress: Progress::new(s.progress),
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
    let steps = |p: &Plan<'_>, c: &RunConfig| p.len() * c.rounds();
    let net_steps: usize = net.iter().map(|n| steps(&n.plan, &n.cfg)).sum();
    let planned: usize = plans
        .iter()
        .zip(phases)
        .map(|(p, (_, c))| steps(p, c))
        .sum::<usize>()
        + net_steps;
    observer.planned_total = planned;
    let mut report: Option<Report> = None;
    let mut done = 0;
    let units = phases
        .iter()
        .zip(plans)
        .map(Ok)
        .chain(pairing.filter(|_| !net.is_empty()).map(Err));
    for unit in units {
        observer.steps_before = done;
        observer.before = report.clone();
        let (r, all) = match unit {
            Ok(((Some(phase), c), plan)) => (run_phase(plan, phase, &mut observer), steps(plan, c)),
            Ok(((None, c), plan)) => (
                benchsuite::runner::run_plan(plan, c, &mut observer),
                steps(plan, c),
            ),
            Err(p) => (p.run(net, &mut observer), net_steps),
        };
        done += r.progress.map_or(all, |p| p.done);
        report = Some(merge_phase(report, r));
        if cfg.is_cancelled() {
            break;
        }
        if done < planned
            && observer.wants_checkpoints()
            && let Some(r) = &report
        {
            let mut so_far = r.clone();
            so_far.progress = Some(RunProgress { done, planned });
            observer.before = None;
            observer.checkpoint(&so_far);
        }
    }
    let mut report = report.expect("at least one phase");
    report.progress = (done < planned).then_some(RunProgress { done, planned });
    report
}

/// Writes the report where it goes and says what was run; the exit code
/// is decided first (128 + the signal that interrupted it, 1 a failure
/// under `--strict`), so a
/// closed stdout cannot change it.
fn finish(
    s: &RunSettings,
    placement: &Placement,
    report: &Report,
    interrupted: bool,
) -> Result<i32> {
    let (output, stdout_tty) = (&s.output, s.stdout_tty);
    let count = |s: Status| report.records.iter().filter(|r| r.status == s).count();
    let (ok, skipped, failed) = (
        count(Status::Ok),
        count(Status::Skipped),
        count(Status::Failed),
    );
    let code = if interrupted {
        crate::interrupt::exit_code()
    } else if s.strict && failed > 0 {
        1
    } else {
        0
    };
    let table = export::TableOptions { verbose: s.verbose };
    let written = (|| -> Result<String> {
        let mut written = String::new();
        if placement.to_stdout(output.file.is_some(), s.format_given, stdout_tty) {
            written = write_report(report, output.format, output.file.as_deref(), &table)?;
        }
        written += &placement.write(report)?;
        if output.file.is_some() && stdout_tty && output.format != Format::Table {
            write_report(report, Format::Table, None, &table)?;
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
        eprintln!(
            "interrupted: the report holds the records finished before {}",
            crate::interrupt::name()
        );
    }
    Ok(code)
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

    fn step_done(&mut self, record: &benchsuite::Record) {
        self.progress.step_done(record);
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
                r.progress = report.progress.map(|p| benchsuite::results::RunProgress {
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
            eprintln!(
                "warning: {}; no more checkpoints of -o during this run",
                benchsuite_core::text::printable(&format!("{e:#}"))
            );
            self.failed = true;
        }
    }
}
