//! The plain types of node acceptance, below the baseline and the check:
//! how bad a broken rule is ([`Severity`]), a verdict ([`Grade`]), why
//! judging failed ([`AcceptanceError`]), and the baseline file's format.

use serde::{Deserialize, Serialize};

/// The baseline file format this build reads and writes.
pub const BASELINE_FORMAT: u32 = 1;

/// How bad a broken rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The node is told about it, and keeps taking work.
    Warn,
    /// The node should not take work (the default).
    Fail,
}

impl Severity {
    /// `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// The verdict of a rule, and of a node (its worst rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Grade {
    /// Within its band, or the rule holds.
    Pass,
    /// A `warn` rule broken, or a value whose interval crosses a bound
    /// (borderline: measure again to decide).
    Warn,
    /// A `fail` rule clearly broken, or a measurement missing.
    Fail,
}

impl Grade {
    /// `PASS`, `WARN` or `FAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "PASS",
            Grade::Warn => "WARN",
            Grade::Fail => "FAIL",
        }
    }

    /// The exit code of `benchsuite check`, as Slurm prologs and Node
    /// Problem Detector's custom plugins read it: 0 pass (also warn: a
    /// warning must not drain a node), 1 fail. (2, a problem with the
    /// input, is the command's.)
    pub fn exit_code(self) -> i32 {
        match self {
            Grade::Pass | Grade::Warn => 0,
            Grade::Fail => 1,
        }
    }
}

impl std::fmt::Display for Grade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a baseline cannot be built or a report cannot be judged by it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AcceptanceError {
    /// No reports to build from.
    #[error("no reports to build a baseline from")]
    Empty,
    /// A baseline of a format this build does not read.
    #[error(
        "baseline format {found}: this benchsuite reads format {BASELINE_FORMAT}; rebuild it with `benchsuite baseline`"
    )]
    Format {
        /// The file's `format`.
        found: u32,
    },
    /// A report of another schema major than the baseline's runs.
    #[error(
        "the report has schema {report}, the baseline was built from schema {baseline} runs: rebuild the baseline from runs of this benchsuite"
    )]
    Schema {
        /// The report's schema version.
        report: String,
        /// The baseline's.
        baseline: String,
    },
    /// The node's machine type is not in the baseline.
    #[error("{0}")]
    Machine(String),
    /// A rule or band that cannot be read (a bad `require`, a value
    /// without its unit) or names nothing this build knows.
    #[error("{0}")]
    Invalid(String),
}
