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
    let mut rounds = Interleaver::new(b.base, b.new, b.run_args)?;
    let mut say = |line: String| eprintln!("{line}");
    for _ in 0..b.rounds {
        if !rounds.pair(b.rounds, cancel, &mut say)? {
            return Ok(None);
        }
    }
    rounds.pooled().map(Some)
}

/// Two builds' rounds, one A B pair at a time, each build's rounds kept
/// to be pooled ([`Interleaver::pooled`]) whenever a judgement is wanted:
/// how `--interleave` runs a fixed number and a confirmation adds pairs
/// until it can decide. The rounds' reports live in a private directory,
/// removed when this is dropped.
#[derive(Debug)]
pub struct Interleaver<'a> {
    base: &'a Path,
    new: &'a Path,
    run_args: Vec<String>,
    scratch: Scratch,
    sides: [Vec<Report>; 2],
}

impl<'a> Interleaver<'a> {
    /// Two builds and the arguments of each `run` (not `-o`, `--format` or
    /// `--rounds`, which each round sets).
    pub fn new(
        base: &'a Path,
        new: &'a Path,
        run_args: &[String],
    ) -> Result<Interleaver<'a>, InterleaveError> {
        let tmp = std::env::temp_dir();
        let scratch = Scratch(
            benchsuite_core::atomic::private_dir(&tmp, "benchsuite-interleave").map_err(|e| {
                InterleaveError(format!(
                    "cannot create a directory in {}: {e}",
                    tmp.display()
                ))
            })?,
        );
        Ok(Interleaver {
            base,
            new,
            run_args: run_args.to_vec(),
            scratch,
            sides: [Vec::new(), Vec::new()],
        })
    }

    /// Pairs run so far.
    pub fn pairs(&self) -> usize {
        self.sides[1].len()
    }

    /// Runs one more pair (base, then new), telling `say` of each round
    /// (`of`: the most pairs planned, for the message). `Ok(false)` when
    /// `cancel` was set during a round (that build was let finish and its
    /// round is dropped).
    pub fn pair(
        &mut self,
        of: usize,
        cancel: &AtomicBool,
        say: &mut dyn FnMut(String),
    ) -> Result<bool, InterleaveError> {
        let round = self.pairs() + 1;
        for (i, (name, bin)) in [("base", self.base), ("new", self.new)]
            .into_iter()
            .enumerate()
        {
            say(format!("round {round}/{of}: {name} ({})", bin.display()));
            let out = self.scratch.0.join(format!("{name}-{round}.json"));
            let report = run_once(bin, &self.run_args, &out);
            if cancel.load(Ordering::SeqCst) {
                self.sides[0].truncate(round - 1);
                return Ok(false);
            }
            self.sides[i].push(report?);
        }
        Ok(true)
    }

    /// Each build's rounds so far pooled into one report (base, new).
    pub fn pooled(&self) -> Result<(Report, Report), InterleaveError> {
        let pool = |runs: &[Report], bin: &Path| {
            benchsuite_core::runner::pool_reports(runs.to_vec())
                .map_err(|e| InterleaveError(format!("--interleave {}: {e}", bin.display())))
        };
        Ok((
            pool(&self.sides[0], self.base)?,
            pool(&self.sides[1], self.new)?,
        ))
    }
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
#[derive(Debug)]
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
