//! Two builds measured alternately on one machine (`compare
//! --interleave`): round 1 of BASE, round 1 of NEW, round 2 of BASE ...,
//! each round one `BIN run ... --rounds 1`, each build's rounds pooled into
//! one report with its round structure ([`benchsuite_core::runner::pool_reports`]),
//! so `compare` can judge the paired differences of adjacent rounds.
//!
//! Each round runs in a process group of its own
//! ([`benchsuite_core::reference::ToolProcess`]) with a time limit (the
//! round timeout); a round stopped, by its limit or by `cancel`, is asked
//! first (SIGTERM, which a benchsuite build answers by cleaning up), then
//! killed with everything it started. Only the last [`STDERR_KEPT`] bytes
//! of a round's stderr are kept, for the error message.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use benchsuite_core::Report;
use benchsuite_core::reference::{PipeTail, Stopped, ToolProcess};
use benchsuite_core::scratch::ScratchDir;

/// The round timeout when none is given: this many times the first
/// round's wall time ...
pub const ROUND_TIMEOUT_FACTOR: u32 = 10;

/// ... but never less than this.
pub const ROUND_TIMEOUT_FLOOR: Duration = Duration::from_secs(600);

/// How long a stopped round gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How much of a round's stderr is kept (its end).
pub const STDERR_KEPT: usize = 16 * 1024;

/// How long a round's stderr may stay open after it exited (a process it
/// started outside its group may hold it).
const STDERR_GRACE: Duration = Duration::from_secs(5);

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
    /// The longest a round may take; `None`: [`Interleaver`]'s default.
    pub round_timeout: Option<Duration>,
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
            "`Builds::rounds` {}: interleaved builds need at least 3 rounds to judge paired differences",
            b.rounds
        );
    }
    let mut rounds = Interleaver::new(b.base, b.new, b.run_args)?;
    rounds.set_round_timeout(b.round_timeout);
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
///
/// A round that runs past its timeout is stopped with what it started and
/// fails the whole (an [`InterleaveError`] naming the build). Unless
/// [`Interleaver::set_round_timeout`] sets one, the first round has none
/// and every later one max([`ROUND_TIMEOUT_FACTOR`] × the first round's
/// wall time, [`ROUND_TIMEOUT_FLOOR`]).
#[derive(Debug)]
pub struct Interleaver<'a> {
    base: &'a Path,
    new: &'a Path,
    run_args: Vec<String>,
    scratch: ScratchDir,
    sides: [Vec<Report>; 2],
    round_timeout: Option<Duration>,
    first_round: Option<Duration>,
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
        let scratch = ScratchDir::new(&tmp, "benchsuite-interleave").map_err(|e| {
            InterleaveError(format!(
                "cannot create a directory in {}: {e}",
                tmp.display()
            ))
        })?;
        Ok(Interleaver {
            base,
            new,
            run_args: run_args.to_vec(),
            scratch,
            sides: [Vec::new(), Vec::new()],
            round_timeout: None,
            first_round: None,
        })
    }

    /// The longest each round may take (`--round-timeout`); `None`: the
    /// default derived from the first round.
    pub fn set_round_timeout(&mut self, timeout: Option<Duration>) {
        self.round_timeout = timeout;
    }

    /// The limit of the next round, and whether it was given (else derived).
    fn limit(&self) -> Option<(Duration, bool)> {
        match (self.round_timeout, self.first_round) {
            (Some(t), _) => Some((t, true)),
            (None, Some(first)) => Some((
                (first * ROUND_TIMEOUT_FACTOR).max(ROUND_TIMEOUT_FLOOR),
                false,
            )),
            (None, None) => None,
        }
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
            let out = self.scratch.path().join(format!("{name}-{round}.json"));
            let started = Instant::now();
            let limit = self.limit();
            let report = run_once(bin, &self.run_args, &out, limit.map(|l| l.0), cancel).map_err(
                |e| match (e, limit) {
                    (RoundError::TimedOut(tail), Some(limit)) => {
                        timed_out(bin, name, round, limit, tail)
                    }
                    // No limit: a deadline a century away.
                    (RoundError::TimedOut(_), None) => InterleaveError(format!(
                        "{}: the {name} build's round {round} was stopped",
                        bin.display()
                    )),
                    (RoundError::Failed(e), _) => e,
                },
            );
            self.first_round.get_or_insert(started.elapsed());
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
                .map_err(|e| InterleaveError(format!("{}: {e}", bin.display())))
        };
        Ok((
            pool(&self.sides[0], self.base)?,
            pool(&self.sides[1], self.new)?,
        ))
    }
}

/// The error of `name`'s (`bin`'s) round `round` stopped at `limit` (and
/// whether the limit was given), with the last line of its stderr.
fn timed_out(
    bin: &Path,
    name: &str,
    round: usize,
    (limit, given): (Duration, bool),
    tail: Option<String>,
) -> InterleaveError {
    let why = if given {
        "`Builds::round_timeout`".to_string()
    } else {
        format!(
            "the default: {ROUND_TIMEOUT_FACTOR} × the first round, at least {} min; set `Builds::round_timeout` (seconds)",
            ROUND_TIMEOUT_FLOOR.as_secs() / 60
        )
    };
    InterleaveError(format!(
        "{}: the {name} build's round {round} did not finish in {} s; stopped with the processes it started ({why}){}",
        bin.display(),
        limit.as_secs_f64(),
        tail.map(|t| format!(": {t}")).unwrap_or_default()
    ))
}

/// Why a round gave no report.
enum RoundError {
    /// It failed (the message names the binary).
    Failed(InterleaveError),
    /// It ran past its limit and was stopped; the last line of its stderr.
    TimedOut(Option<String>),
}

/// One round of one build: `BIN run ARGS --rounds 1 -o OUT`, in a process
/// group of its own, stopped past `limit` or when `cancel` is set.
fn run_once(
    bin: &Path,
    run_args: &[String],
    out: &Path,
    limit: Option<Duration>,
    cancel: &AtomicBool,
) -> Result<Report, RoundError> {
    let failed = |m: String| RoundError::Failed(InterleaveError(m));
    let quiet = (!run_args.iter().any(|a| a == "--no-progress")).then_some("--no-progress");
    let mut c = Command::new(bin);
    c.arg("run")
        .args(run_args)
        .args(quiet)
        .args(["--rounds", "1", "--format", "json", "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = ToolProcess::spawn(c)
        .map_err(|e| failed(format!("{}: cannot run it: {e}", bin.display())))?;
    let stderr = child
        .child_mut()
        .stderr
        .take()
        .map(|p| PipeTail::read(p, STDERR_KEPT));
    let now = Instant::now();
    // No limit: a deadline no round reaches.
    let deadline = limit
        .and_then(|l| now.checked_add(l))
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
    let waited = child.wait_or_stop(deadline, &|| cancel.load(Ordering::SeqCst), STOP_GRACE);
    let stderr = stderr.and_then(|t| t.get(STDERR_GRACE)).unwrap_or_default();
    // Its last error line (clap ends a usage error with a hint), else its
    // last line.
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error"))
        .or(lines.last())
        .copied();
    let status = match waited {
        Ok(s) => s,
        Err(Stopped::TimedOut) => return Err(RoundError::TimedOut(last.map(str::to_string))),
        Err(Stopped::Cancelled) => {
            return Err(failed(format!("{}: stopped: interrupted", bin.display())));
        }
        Err(Stopped::Wait(e)) => {
            return Err(failed(format!("{}: waiting for it: {e}", bin.display())));
        }
    };
    let last = last.unwrap_or("(nothing on stderr)");
    // `run` exits 1 only for a failure under --strict: the report is
    // still written, and a failed record fails the gate.
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(failed(format!(
            "{}: `run` exited with {status}: {last}",
            bin.display(),
        )));
    }
    Report::read(out).map_err(|e| {
        failed(format!(
            "{}: printed no report ({e}): {last}",
            bin.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_limit_is_the_flag_else_derived_from_the_first_round() {
        let mut i = Interleaver::new(Path::new("a"), Path::new("b"), &[]).unwrap();
        assert_eq!(i.limit(), None, "the first round has no default limit");
        i.first_round = Some(Duration::from_secs(3));
        assert_eq!(i.limit(), Some((ROUND_TIMEOUT_FLOOR, false)));
        i.first_round = Some(Duration::from_secs(120));
        assert_eq!(i.limit(), Some((Duration::from_secs(1200), false)));
        i.set_round_timeout(Some(Duration::from_secs(2)));
        assert_eq!(i.limit(), Some((Duration::from_secs(2), true)));
        let dir = i.scratch.path().to_path_buf();
        assert!(dir.is_dir());
        drop(i);
        assert!(!dir.exists());
    }
}
