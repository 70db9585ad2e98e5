//! `benchsuite reference`: each selected record measured by us and by its
//! reference tool (fio, iperf3, sockperf, sysbench, likwid-bench, hpcc,
//! `perf bench`), interleaved A B A B for `--rounds N` (default 3), the
//! tool's median and the ratio attached to the record (`reference`).
//!
//! Ours: the one point through the library, one round at a time, pooled
//! as `--rounds` pools. The tool: the command line the benchmark's
//! [`Benchmark::reference`](benchsuite::Benchmark::reference) gives. The
//! runner is the library's (`benchsuite::reference::run`); here are the
//! flags, the progress lines and the summary.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use anyhow::{Result, bail};
use benchsuite::export::Format;
use benchsuite::export::reference::summary_table;
use benchsuite::reference::run::{Stderr, run_references_until};
use benchsuite::{Registry, Report, Status};

use crate::args::ReferenceArgs;
use crate::config;

/// Rounds when `--rounds` is not given.
const DEFAULT_ROUNDS: usize = 3;

/// Runs `benchsuite reference`.
pub fn cmd_reference(all: &ReferenceArgs, registry: &Registry) -> Result<i32> {
    let args = &all.run;
    let until = match &all.until {
        None => None,
        Some(t) => {
            let hw = benchsuite::units::parse_percent(t.trim().trim_start_matches('±'))
                .map_err(|e| anyhow::anyhow!("--until {t}: {e}"))?;
            if !(hw > 0.0 && hw < 1.0) {
                bail!("--until {t}: give a half-width between 0% and 100%, e.g. 3%");
            }
            if all.max_rounds < 3 {
                bail!(
                    "--max-rounds {}: an interval needs at least 3 rounds",
                    all.max_rounds
                );
            }
            Some(benchsuite::reference::run::Until {
                half_width: hw,
                max_rounds: all.max_rounds,
            })
        }
    };
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
    let (cfg, output, flags) = config::run_config(args, registry, stdout_tty)?;
    let rounds = args.rounds.unwrap_or(DEFAULT_ROUNDS).max(1);
    // The rounds are this command's, each a run of one round.
    let cfg = cfg
        .to_builder()
        .rounds(1)
        .build()
        .map_err(|e| flags.explain(e))?;
    let plan = benchsuite::runner::plan(registry, &cfg).map_err(|e| flags.explain(e))?;
    if plan.host().build.is_debug() {
        eprintln!(
            "warning: this is a DEBUG build of benchsuite; its numbers are not comparable with the tools'. \
             Install a release build: cargo install --path cli"
        );
    }
    if let Some(file) = &output.file {
        // Fail before measuring, not after, if the output cannot be
        // written (creating nothing: a failed run leaves no file).
        crate::output::check_writable("-o", file)?;
    }
    // A signal (Ctrl-C, SIGTERM, SIGHUP) stops the tool in flight and
    // ends the round (the tool's scratch files are removed after it), then
    // writes what is done and exits 128 + the signal.
    crate::interrupt::install(cfg.cancel_flag());
    let Some(report) = run_references_until(&plan, &cfg, rounds, until, &mut Stderr) else {
        if cfg.is_cancelled() {
            eprintln!(
                "interrupted: {} came before the first record; nothing written",
                crate::interrupt::name()
            );
            return Ok(crate::interrupt::exit_code());
        }
        bail!("nothing selected");
    };

    let failed = report
        .records
        .iter()
        .filter(|r| r.status == Status::Failed)
        .count();
    let interrupted = cfg.is_cancelled();
    // Decided before writing: a closed stdout keeps a --strict failure.
    let code = if interrupted {
        crate::interrupt::exit_code()
    } else if args.strict && failed > 0 {
        1
    } else {
        0
    };
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
    let written = match crate::output::keep_verdict(code, written)? {
        crate::output::Output::Written(w) => w,
        crate::output::Output::StdoutClosed(code) => return Ok(code),
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
    if interrupted {
        eprintln!(
            "interrupted: the report holds the records finished before {}",
            crate::interrupt::name()
        );
    }
    Ok(code)
}

/// Writes the report to `file` (atomically) or stdout; returns what the
/// closing line adds.
fn write(report: &Report, format: Format, file: Option<&Path>) -> Result<String> {
    let Some(file) = file else {
        let mut out = io::stdout().lock();
        crate::output::for_people(format, &mut out, |w| {
            benchsuite::export::write_report(format, report, w)
        })?;
        out.flush()?;
        return Ok(String::new());
    };
    crate::output::replace_file(file, |w| {
        crate::output::for_people(format, w, |w| {
            benchsuite::export::write_report(format, report, w)
        })
    })?;
    Ok(format!("; written to {}", file.display()))
}
