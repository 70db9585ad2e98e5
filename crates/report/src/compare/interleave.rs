//! Two builds measured alternately on one machine (`compare
//! --interleave`): round 1 of BASE, round 1 of NEW, round 2 of BASE ...,
//! each round one `BIN run ... --rounds 1`, each build's rounds pooled into
//! one report with its round structure ([`benchsuite_core::runner::pool_reports`]),
//! so `compare` can judge the paired differences of adjacent rounds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use benchsuite_core::Report;

/// The two builds and how to run them.
#[derive(Debug, Clone, Copy)]
pub struct Builds<'a> {
    /// The baseline binary.
    pub base: &'a Path,
    /// The new binary.
    pub new: &'a Path,
    /// Rounds of each (3 or more).
    pub rounds: usize,
    /// `run`'s arguments for both (selectors, parameters); not `-o`,
    /// `--format` or `--rounds`, which each round sets.
    pub run_args: &'a [String],
}

/// Why the builds could not be measured; the message names the binary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InterleaveError(pub String);

macro_rules! fail {
    ($($t:tt)*) => { return Err(InterleaveError(format!($($t)*))) };
}

/// Runs the rounds, saying each on stderr, and returns the two pooled
/// reports (base, new); `Ok(None)` when `cancel` was set during a round
/// (that round's build was let finish; nothing is judged). The rounds'
/// own reports live in a private directory removed at the end.
pub fn run(
    b: &Builds<'_>,
    cancel: &AtomicBool,
) -> Result<Option<(Report, Report)>, InterleaveError> {
    if b.rounds < 3 {
        fail!(
            "--rounds {}: --interleave needs at least 3 rounds to judge paired differences",
            b.rounds
        );
    }
    let tmp = std::env::temp_dir();
    let scratch = Scratch(
        benchsuite_core::atomic::private_dir(&tmp, "benchsuite-interleave").map_err(|e| {
            InterleaveError(format!(
                "cannot create a directory in {}: {e}",
                tmp.display()
            ))
        })?,
    );
    let mut sides: [Vec<Report>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=b.rounds {
        for (i, (name, bin)) in [("base", b.base), ("new", b.new)].iter().enumerate() {
            eprintln!("round {round}/{}: {name} ({})", b.rounds, bin.display());
            let out = scratch.0.join(format!("{name}-{round}.json"));
            let report = run_once(bin, b.run_args, &out);
            if cancel.load(Ordering::SeqCst) {
                return Ok(None);
            }
            sides[i].push(report?);
        }
    }
    let [base, new] = sides;
    let pool = |runs, bin: &Path| {
        benchsuite_core::runner::pool_reports(runs)
            .map_err(|e| InterleaveError(format!("--interleave {}: {e}", bin.display())))
    };
    Ok(Some((pool(base, b.base)?, pool(new, b.new)?)))
}

/// One round of one build: `BIN run ARGS --rounds 1 -o OUT`.
fn run_once(bin: &Path, run_args: &[String], out: &Path) -> Result<Report, InterleaveError> {
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
        .map_err(|e| {
            InterleaveError(format!(
                "--interleave {}: cannot run it: {e}",
                bin.display()
            ))
        })?;
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
        fail!(
            "--interleave {}: `run` exited with {}: {last}",
            bin.display(),
            o.status
        );
    }
    Report::read(out).map_err(|e| {
        InterleaveError(format!(
            "--interleave {}: printed no report ({e}): {last}",
            bin.display()
        ))
    })
}

/// A private directory for the rounds' reports, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
