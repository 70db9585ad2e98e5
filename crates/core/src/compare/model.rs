//! What `compare` returns: the verdicts, problems and options, as data
//! (serialised by `compare --format json`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bench::Direction;
use crate::param::Point;

use super::judge::is_worse;
use super::rules::{ThresholdRule, Tolerance};
use crate::report::Status;

/// What the gate tolerates in the new report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allow {
    /// Records or metrics of the baseline absent from the new report
    /// (`--allow-missing`: the plan was narrowed on purpose).
    pub missing: bool,
    /// Records skipped in the new report (`--allow-skipped`: a runner
    /// without a GPU or without privileges).
    pub skipped: bool,
    /// Metrics that could not be judged (`--allow-unjudged`: too few
    /// samples).
    pub unjudged: bool,
}

/// Settings of [`compare`](super::compare). The CLI maps `--threshold`, `--alpha` and the
/// `--allow-*` flags onto it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Default threshold as a fraction of the base median (`0.05`: 5%):
    /// a change must lie beyond it, whole interval included, to count.
    /// Metrics in `%` default to [`super::rules::PERCENT_METRIC_DEFAULT`]
    /// percentage points instead.
    pub threshold: f64,
    /// Per-record and per-metric thresholds; the last matching one wins.
    #[serde(default)]
    pub rules: Vec<ThresholdRule>,
    /// One-sided error level: the interval is the two-sided `1 − 2·alpha`
    /// one (90% for the default 0.05), so a change exactly at the threshold
    /// is called regressed at most `alpha` of the time.
    pub alpha: f64,
    /// What the gate tolerates.
    #[serde(default)]
    pub allow: Allow,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold: 0.05,
            rules: Vec::new(),
            alpha: 0.05,
            allow: Allow::default(),
        }
    }
}

/// Why two reports cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// Different major schema versions.
    #[error(
        "cannot compare schema version {base} with {new}: the major versions differ; re-run the baseline with this benchsuite version"
    )]
    SchemaMismatch {
        /// Schema version of the baseline.
        base: String,
        /// Schema version of the new report.
        new: String,
    },
    /// No record of the new report pairs with one of the baseline.
    #[error(
        "the two reports have no record in common (base: {base}; new: {new}): were they made with the same plan?"
    )]
    NothingInCommon {
        /// The baseline's benchmark ids.
        base: String,
        /// The new report's benchmark ids.
        new: String,
    },
    /// A threshold rule that covers nothing in either report.
    #[error("--threshold {rule}: {why}")]
    RuleMatchesNothing {
        /// The rule as written.
        rule: String,
        /// What is there instead.
        why: String,
    },
    /// An absolute threshold in a unit the metric is not measured in.
    #[error(
        "--threshold {rule}: {metric} is measured in {unit}, so an absolute threshold in {given} does not apply; use a relative one (`5%`)"
    )]
    RuleUnit {
        /// The rule as written.
        rule: String,
        /// Record key and metric.
        metric: String,
        /// The metric's unit.
        unit: String,
        /// The threshold's unit.
        given: String,
    },
    /// `alpha` outside (0, 0.5).
    #[error("alpha must be between 0 and 0.5, got {0}")]
    Alpha(f64),
    /// A threshold that is negative or not a number.
    #[error("a threshold must be a finite number, 0 or more")]
    Threshold,
    /// Two fleet reports without a host in common.
    #[error(
        "the two fleets have no host in common (base: {base}; new: {new}): compare fleets of the same hosts"
    )]
    NoHostInCommon {
        /// The baseline's host labels.
        base: String,
        /// The new fleet's host labels.
        new: String,
    },
    /// A fleet report without hosts: nothing to gate against, or nothing
    /// measured.
    #[error(
        "the {side} fleet report has no hosts: merge the hosts' reports first (`benchsuite merge DIR/*.json -o fleet.json`)"
    )]
    EmptyFleet {
        /// `base` or `new`.
        side: &'static str,
    },
    /// One host of two fleets could not be compared.
    #[error("host {host}: {why}")]
    Host {
        /// The host's label in the baseline.
        host: String,
        /// Why (printed as part of this message, not as a cause).
        why: Box<CompareError>,
    },
}

/// The verdict on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse, with the whole interval beyond the threshold.
    Regressed,
    /// Better, with the whole interval beyond the threshold.
    Improved,
    /// The change is within the threshold.
    Unchanged,
    /// The change is beyond the threshold but its interval reaches inside
    /// it: re-run with more `--runs` or `--rounds` to tell.
    Noisy,
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
            Verdict::Noisy => "noisy",
            Verdict::NotJudged => "not judged",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric (or latency tail) present in both reports, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Benchmark id and requested parameters ([`crate::Record::requested_key`]).
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// The requested parameters the pair matched on.
    pub params: Point,
    /// Metric name; a latency tail is `NAME.p99` or `NAME.p99_9`.
    pub metric: String,
    /// Base unit of the medians (`s`, `B/s`, `%`).
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// Median of the baseline.
    pub base_median: f64,
    /// Median of the new report.
    pub new_median: f64,
    /// Samples in the baseline.
    pub base_n: usize,
    /// Samples in the new report.
    pub new_n: usize,
    /// Rounds in the baseline (1 without `--rounds`).
    pub base_rounds: usize,
    /// Rounds in the new report.
    pub new_rounds: usize,
    /// The threshold applied.
    pub tolerance: Tolerance,
    /// The change, `new − base`: relative to the base median (`0.072` for
    /// +7.2%) under a relative threshold, in the metric's unit under an
    /// absolute one. Positive means the value grew, whatever the direction.
    /// `None` when not judged.
    pub change: Option<f64>,
    /// The `1 − 2·alpha` confidence interval of `change`.
    pub interval: Option<[f64; 2]>,
    /// The noise seen: the interval's half-width (same scale as `change`);
    /// a real change smaller than this cannot be confirmed.
    pub noise: Option<f64>,
    /// The smallest threshold (same scale as `change`) at which this pair
    /// raises no alarm (neither regressed nor improved): the interval's
    /// bound nearest zero, or 0 when the interval holds zero. From an A/A
    /// pair, a `--threshold` below it would have cried wolf.
    pub quiet_threshold: Option<f64>,
    /// Degrees of freedom of the interval; `None` without spread.
    pub df: Option<f64>,
    /// Whether either side drifted between rounds (the round was the unit
    /// of evidence).
    pub drift: bool,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it was not judged, or what differs between the two records
    /// (parameters that resolved differently).
    pub note: Option<String>,
}

impl MetricComparison {
    /// True when the new median is worse than the base (in the metric's
    /// direction), however small the difference.
    pub fn is_worse(&self) -> bool {
        is_worse(self.direction, self.new_median - self.base_median)
    }

    /// The change with its interval, as printed: `+7.2% [+5.1%, +9.4%]`,
    /// or in the metric's unit under an absolute threshold.
    pub fn change_text(&self) -> String {
        let Some(c) = self.change else {
            return "-".into();
        };
        let f = |v: f64| match self.tolerance {
            Tolerance::Relative(_) => format!("{:+.1}%", v * 100.0),
            Tolerance::Absolute { .. } if self.unit == "%" => format!("{v:+.2}pp"),
            Tolerance::Absolute { .. } => {
                let s = crate::units::format_value(v.abs(), &self.unit);
                format!("{}{s}", if v < 0.0 { "-" } else { "+" })
            }
        };
        match self.interval {
            Some([lo, hi]) => format!("{} [{}, {}]", f(c), f(lo), f(hi)),
            None => f(c),
        }
    }
}

/// A record (or one metric of a record) found on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    /// Benchmark id and requested parameters.
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// Requested parameters.
    pub params: Point,
    /// The metric, when the record matched but this metric did not; `None`
    /// when the whole record is on one side only.
    pub metric: Option<String>,
}

/// A matched record (or metric) that is not compared and is not the new
/// report's fault: it did not run in the baseline, or its unit changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotComparable {
    /// Benchmark id and requested parameters.
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// Requested parameters.
    pub params: Point,
    /// The metric, when the records ran but this metric differs in unit or
    /// direction; `None` when a record did not run.
    pub metric: Option<String>,
    /// Status of the baseline record.
    pub base_status: Status,
    /// Status of the new record.
    pub new_status: Status,
    /// Why, for humans (`skipped in base: no GPU`).
    pub reason: String,
}

/// What went wrong in the new report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The record ran in the baseline and failed in the new report.
    Failed,
    /// The record ran in the baseline and was skipped in the new report.
    Skipped,
    /// The record ran in the baseline and is absent from the new report.
    Missing,
    /// The record ran in both but the new one lacks this metric.
    MissingMetric,
    /// The metric could not be judged.
    NotJudged,
    /// The new report has no record that ran.
    NoResults,
}

impl ProblemKind {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Failed => "failed",
            ProblemKind::Skipped => "skipped",
            ProblemKind::Missing => "missing",
            ProblemKind::MissingMetric => "missing metric",
            ProblemKind::NotJudged => "not judged",
            ProblemKind::NoResults => "no results",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something broken in the new report: a gate failure unless `allowed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Benchmark id and requested parameters (empty for `no_results`).
    pub key: String,
    /// Benchmark id (empty for `no_results`).
    pub id: String,
    /// Requested parameters.
    pub params: Point,
    /// What went wrong.
    pub kind: ProblemKind,
    /// The metric, for `missing_metric` and `not_judged`.
    pub metric: Option<String>,
    /// Why, for humans: the error, the skip reason.
    pub reason: String,
    /// Whether an `--allow-*` option lets it pass.
    pub allowed: bool,
}

/// The result of [`compare`](super::compare): plain data, serialised as JSON by
/// `benchsuite compare --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Schema version of the baseline.
    pub base_schema_version: String,
    /// Schema version of the new report.
    pub new_schema_version: String,
    /// Default relative threshold used (fraction).
    pub threshold: f64,
    /// The per-record and per-metric thresholds, as given.
    #[serde(default)]
    pub rules: Vec<String>,
    /// One-sided error level; the intervals are `1 − 2·alpha` ones.
    pub alpha: f64,
    /// What the gate tolerated.
    #[serde(default)]
    pub allow: Allow,
    /// Whether the new report passes the gate (see [`Comparison::passed`]).
    pub passed: bool,
    /// What is broken in the new report, in baseline order.
    #[serde(default)]
    pub problems: Vec<Problem>,
    /// Every metric present in both reports, in baseline order.
    pub metrics: Vec<MetricComparison>,
    /// Records or metrics of the new report absent from the baseline.
    pub added: Vec<Unmatched>,
    /// Matched records or metrics that were not compared and are not the
    /// new report's fault (they did not run in the baseline either, or the
    /// metric's unit changed).
    pub not_comparable: Vec<NotComparable>,
    /// What differs between the two runs' machines, builds or settings and
    /// can move the numbers by itself (`cpu.model: A → B`, a debug build,
    /// `--quick` on one side). Informational; it never changes a verdict.
    #[serde(default)]
    pub context_differences: Vec<String>,
}

impl Comparison {
    /// True when any metric [regressed](Verdict::Regressed).
    pub fn has_regression(&self) -> bool {
        self.metrics.iter().any(|m| m.verdict == Verdict::Regressed)
    }

    /// The problems that fail the gate (not allowed by an option).
    pub fn gate_failures(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| !p.allowed)
    }

    /// The gate: no regression and no problem that is not allowed. The
    /// CLI exits 1 when false.
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// The metrics with this verdict.
    pub fn with_verdict(&self, verdict: Verdict) -> impl Iterator<Item = &MetricComparison> {
        self.metrics.iter().filter(move |m| m.verdict == verdict)
    }

    /// How many metrics have this verdict.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.with_verdict(verdict).count()
    }

    /// The noise floor of this pair: the largest relative
    /// [`quiet_threshold`](MetricComparison::quiet_threshold) and the
    /// metric that set it. On an A/A pair (two runs of the same build), a
    /// `--threshold` below it would have raised a false alarm.
    pub fn noise_floor(&self) -> Option<(f64, &MetricComparison)> {
        self.largest(|m| m.quiet_threshold)
    }

    /// The widest relative interval of this pair (its half-width) and the
    /// metric that has it: real changes smaller than this cannot be
    /// confirmed with these `--runs` and `--rounds`.
    pub fn widest_noise(&self) -> Option<(f64, &MetricComparison)> {
        self.largest(|m| m.noise)
    }

    fn largest(
        &self,
        f: impl Fn(&MetricComparison) -> Option<f64>,
    ) -> Option<(f64, &MetricComparison)> {
        self.metrics
            .iter()
            .filter(|m| matches!(m.tolerance, Tolerance::Relative(_)))
            .filter_map(|m| f(m).map(|q| (q, m)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// A one-line summary: `gate passed: 12 unchanged, 1 improved` or
    /// `gate FAILED: 1 regressed, 2 failed in new`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for v in [
            Verdict::Regressed,
            Verdict::NotJudged,
            Verdict::Noisy,
            Verdict::Improved,
            Verdict::Unchanged,
        ] {
            let n = self.count(v);
            let worse = self.with_verdict(v).filter(|m| m.is_worse()).count();
            match (n, v) {
                (0, _) => {}
                (n, Verdict::Noisy) if worse > 0 => {
                    parts.push(format!("{n} noisy ({worse} of them worse)"))
                }
                (n, v) => parts.push(format!("{n} {v}")),
            }
        }
        for kind in [
            ProblemKind::Failed,
            ProblemKind::Skipped,
            ProblemKind::Missing,
            ProblemKind::MissingMetric,
        ] {
            let n = self.problems.iter().filter(|p| p.kind == kind).count();
            if n > 0 {
                parts.push(format!("{n} {kind} in new"));
            }
        }
        if self
            .problems
            .iter()
            .any(|p| p.kind == ProblemKind::NoResults)
        {
            parts.push("no record ran in new".into());
        }
        if !self.added.is_empty() {
            parts.push(format!("{} added", self.added.len()));
        }
        let verdict = if self.passed {
            "gate passed"
        } else {
            "gate FAILED"
        };
        if parts.is_empty() {
            verdict.to_string()
        } else {
            format!("{verdict}: {}", parts.join(", "))
        }
    }
}
