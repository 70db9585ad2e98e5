//! `compare --interleave BASE_BIN NEW_BIN -- RUN_ARGS`: the flags; the
//! rounds are `benchsuite::compare::interleave`'s.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use benchsuite::Report;
use benchsuite::compare::interleave::{self, Builds};
use benchsuite::compare::{CompareOptions, Comparison, confirm};

use crate::args::CompareArgs;

/// The arguments after `--` must leave each round's -o, --format and
/// --rounds (and --only) to compare.
pub fn check_run_args(run_args: &[String]) -> Result<()> {
    for a in run_args {
        let flag = a.split('=').next().unwrap_or(a);
        if [
            "-o",
            "--output",
            "--format",
            "--rounds",
            "--duration",
            "--only",
        ]
        .contains(&flag)
        {
            bail!(
                "{a} after `--`: compare sets each run's -o, --format, --rounds and --only itself (and a --duration time series has no rounds to pair)"
            );
        }
    }
    Ok(())
}

/// `compare ... --confirm BASE_BIN [NEW_BIN]`: the screen's undecided
/// metrics measured again, the two builds interleaved, until decided or
/// --budget is spent; rounds said on stderr. A signal (Ctrl-C, SIGTERM,
/// SIGHUP) ends the rounds and the verdicts of the last look stand; the
/// second value says it came, so that the exit code is the signal's, not
/// a verdict a cancelled CI job did not reach.
pub fn confirm(
    bins: &[PathBuf],
    args: &CompareArgs,
    screen: &Comparison,
    new: &Report,
    options: &CompareOptions,
) -> Result<(Comparison, bool)> {
    let this;
    let (base_bin, new_bin) = match bins {
        [b] => {
            this = std::env::current_exe().map_err(|e| {
                anyhow::anyhow!("--confirm: cannot find this benchsuite's path ({e}): give NEW_BIN")
            })?;
            (b, &this)
        }
        [b, n] => (b, n),
        _ => bail!("--confirm takes BASE_BIN and optionally NEW_BIN"),
    };
    let open = confirm::open(screen).len();
    if open == 0 {
        return Ok((screen.clone(), false));
    }
    eprintln!(
        "confirm: {open} metric(s) the screen left undecided or called regressed, in {} record(s); interleaving {} and {} (at most {} pairs)",
        confirm::records(screen).len(),
        base_bin.display(),
        new_bin.display(),
        args.budget
    );
    let cancel = Arc::new(AtomicBool::new(false));
    crate::interrupt::install(&cancel);
    let builds = confirm::ConfirmBuilds {
        base: base_bin,
        new: new_bin,
        run_args: &args.run_args,
        budget: args.budget,
        round_timeout: args.round_timeout,
    };
    let mut say = |line: String| eprintln!("confirm {line}");
    let out = confirm::confirm(screen, new, &builds, options, &cancel, &mut say)
        .map_err(|e| anyhow::anyhow!("--confirm: {e}"))?;
    if let Some(c) = &out.confirmation {
        eprintln!(
            "confirm: {} of {} open metric(s) decided in {} pairs ({:.0} s){}",
            c.decided,
            c.open,
            c.pairs,
            c.wall_s,
            c.note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        );
    }
    let interrupted = cancel.load(std::sync::atomic::Ordering::SeqCst);
    Ok((out, interrupted))
}

/// Runs the two builds' rounds and returns their pooled reports (written
/// to `--interleave-dir` too). A signal (Ctrl-C, SIGTERM, SIGHUP) stops
/// the running build's round (it runs in a process group of its own, asked
/// to stop with SIGTERM first) and exits 128 + the signal without judging
/// half a comparison. A round past `--round-timeout` is an error (exit 2)
/// naming the build.
pub fn run(bins: &[PathBuf], args: &CompareArgs) -> Result<(Report, Report)> {
    let [base_bin, new_bin] = bins else {
        bail!("--interleave takes two binaries: BASE_BIN NEW_BIN");
    };
    check_run_args(&args.run_args)?;
    if !args.interleave_dir.is_dir() {
        bail!(
            "--interleave-dir {}: not a directory",
            args.interleave_dir.display()
        );
    }
    let cancel = Arc::new(AtomicBool::new(false));
    crate::interrupt::install(&cancel);
    let builds = Builds {
        base: base_bin,
        new: new_bin,
        rounds: args.rounds,
        run_args: &args.run_args,
        round_timeout: args.round_timeout,
    };
    // The library names the build's binary; the flag that gave it, here.
    let flagged = |e: interleave::InterleaveError| {
        if e.0.starts_with('`') {
            anyhow::anyhow!("{e}")
        } else {
            anyhow::anyhow!("--interleave {e}")
        }
    };
    let Some((base, new)) = interleave::run(&builds, &cancel).map_err(flagged)? else {
        eprintln!(
            "interrupted ({}): nothing compared",
            crate::interrupt::name()
        );
        std::process::exit(crate::interrupt::exit_code());
    };
    for (name, r) in [("base", &base), ("new", &new)] {
        let path = args.interleave_dir.join(format!("interleave-{name}.json"));
        crate::output::replace_file_as("--interleave-dir", &path, |w| {
            benchsuite_core::text::write_json_pretty(&mut *w, r)?;
            writeln!(w)
        })?;
        eprintln!("{name} report: {}", path.display());
    }
    Ok((base, new))
}
