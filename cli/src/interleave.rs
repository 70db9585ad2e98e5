//! `compare --interleave BASE_BIN NEW_BIN -- RUN_ARGS`: two builds run
//! alternately on this machine, one round each (A B A B ...), each
//! build's rounds pooled into one report with its round structure, so
//! `compare` can judge the paired differences of adjacent rounds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, Result, bail};
use benchsuite::Report;

use crate::args::CompareArgs;

/// Runs the two builds' rounds and returns their pooled reports (written
/// to `--interleave-dir` too).
pub fn run(bins: &[PathBuf], args: &CompareArgs) -> Result<(Report, Report)> {
    let [base_bin, new_bin] = bins else {
        bail!("--interleave takes two binaries: BASE_BIN NEW_BIN");
    };
    if args.rounds < 3 {
        bail!(
            "--rounds {}: --interleave needs at least 3 rounds to judge paired differences",
            args.rounds
        );
    }
    for a in &args.run_args {
        let flag = a.split('=').next().unwrap_or(a);
        if ["-o", "--output", "--format", "--rounds", "--duration"].contains(&flag) {
            bail!(
                "{a} after `--`: --interleave sets each run's -o, --format and --rounds itself (and a --duration time series has no rounds to pair)"
            );
        }
    }
    if !args.interleave_dir.is_dir() {
        bail!(
            "--interleave-dir {}: not a directory",
            args.interleave_dir.display()
        );
    }
    let scratch = Scratch::new()?;
    // Ctrl-C reaches the running build too (one process group): it ends
    // its round, and then this one removes the rounds' reports and exits
    // 130 without judging half a comparison.
    let cancel = Arc::new(AtomicBool::new(false));
    crate::output::install_ctrlc(&cancel);
    let mut sides: [Vec<Report>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=args.rounds {
        for (i, (name, bin)) in [("base", base_bin), ("new", new_bin)].iter().enumerate() {
            eprintln!("round {round}/{}: {name} ({})", args.rounds, bin.display());
            let out = scratch.0.join(format!("{name}-{round}.json"));
            let report = run_once(bin, &args.run_args, &out);
            if cancel.load(Ordering::SeqCst) {
                drop(scratch);
                eprintln!("interrupted: nothing compared");
                std::process::exit(130);
            }
            sides[i].push(report?);
        }
    }
    let [base, new] = sides;
    let pool = |runs, bin: &Path| {
        benchsuite::runner::pool_reports(runs)
            .map_err(|e| anyhow::anyhow!("--interleave {}: {e}", bin.display()))
    };
    let base = pool(base, base_bin)?;
    let new = pool(new, new_bin)?;
    for (name, r) in [("base", &base), ("new", &new)] {
        let path = args.interleave_dir.join(format!("interleave-{name}.json"));
        crate::output::replace_file_as("--interleave-dir", &path, |w| {
            serde_json::to_writer_pretty(&mut *w, r)?;
            writeln!(w)
        })?;
        eprintln!("{name} report: {}", path.display());
    }
    Ok((base, new))
}

/// One round of one build: `BIN run ARGS --rounds 1 -o OUT`.
fn run_once(bin: &Path, run_args: &[String], out: &Path) -> Result<Report> {
    let quiet = (!run_args.iter().any(|a| a == "--no-progress")).then_some("--no-progress");
    let o = Command::new(bin)
        .arg("run")
        .args(run_args)
        .args(quiet)
        .args(["--rounds", "1", "--format", "json", "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("--interleave {}: cannot run it", bin.display()))?;
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Its last error line (clap ends a usage error with a hint), else its
    // last line.
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error"))
        .or(lines.last())
        .copied()
        .unwrap_or("(nothing on stderr)");
    // `run` exits 1 only for a failure under --strict: the report is
    // still written, and a failed record fails the gate.
    if !matches!(o.status.code(), Some(0 | 1)) {
        bail!(
            "--interleave {}: `run` exited with {}: {last}",
            bin.display(),
            o.status
        );
    }
    Report::read(out).map_err(|e| {
        anyhow::anyhow!(
            "--interleave {}: printed no report ({e}): {last}",
            bin.display()
        )
    })
}

/// A private directory for the rounds' reports, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let tmp = std::env::temp_dir();
        let dir = benchsuite::atomic::private_dir(&tmp, "benchsuite-interleave")
            .with_context(|| format!("cannot create a directory in {}", tmp.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
