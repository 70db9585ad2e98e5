//! A comparison's answers as plain data: the verdict on each metric, the
//! job's three-way outcome, which stage decided, and what a confirmation
//! ran (serialised in every output format).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The verdict on one metric: regressed or improved, unchanged, or
/// undecided (the evidence cannot tell a change beyond the threshold from
/// none at the job's error levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse beyond the threshold, as the [rule](super::GateRule) confirms.
    Regressed,
    /// Better beyond the threshold, as the rule confirms.
    Improved,
    /// The change's worse-side bound (at [`CompareOptions::beta`](super::CompareOptions::beta)) lies
    /// within the threshold.
    Unchanged,
    /// Neither confirmed nor ruled out: more rounds (interleaved with the
    /// base build) would tell. The job's outcome is
    /// [`Outcome::Undecided`] unless something failed.
    #[serde(alias = "noisy")]
    Undecided,
    /// Too few samples on a side (or a zero baseline under a relative
    /// threshold): no judgement; a gate failure unless allowed.
    NotJudged,
}

impl Verdict {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Undecided => "undecided",
            Verdict::NotJudged => "not judged",
        }
    }
}

/// The gate's answer for a whole job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every gated metric unchanged or improved, nothing broken (exit 0).
    #[default]
    Passed,
    /// A gated metric regressed, or a problem that is not allowed (exit 1).
    Failed,
    /// Nothing failed, but some gated metric is undecided (the CLI exits
    /// 3; the CI recipe decides what that means).
    Undecided,
}

impl Outcome {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Undecided => "undecided",
        }
    }

    /// The CLI's exit code: 0 passed, 1 failed, 3 undecided.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Passed => 0,
            Outcome::Failed => 1,
            Outcome::Undecided => 3,
        }
    }
}

/// Which stage of the gate decided a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The new run against the baselines (the screen).
    Screen,
    /// The two builds' rounds interleaved after the screen left the
    /// metric undecided (the confirmation).
    Confirm,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a confirmation did: the open metrics' records measured again,
/// the two builds interleaved, until each was decided or the budget spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The records measured (their keys).
    pub records: Vec<String>,
    /// Gated metrics the screen left undecided.
    pub open: usize,
    /// Of those, decided by the pairs.
    pub decided: usize,
    /// A B pairs run.
    pub pairs: usize,
    /// The most pairs allowed (the budget).
    pub budget: usize,
    /// The pair counts at which the metrics were judged; the job's
    /// levels are split evenly over them.
    pub looks: Vec<usize>,
    /// Wall time of the interleaved rounds, seconds.
    pub wall_s: f64,
    /// Why the confirmation stopped early or could not decide (a testbed
    /// difference, an interruption); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
