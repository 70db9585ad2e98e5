//! What `compare` returns: the verdicts, problems and options, as data
//! (serialised by `compare --format json`).

use std::fmt;

use serde::{Deserialize, Serialize};

use benchsuite_core::bench::Direction;
use benchsuite_core::param::Point;
use benchsuite_core::results::MetricRole;

use super::outcome::{Confirmation, Outcome, Stage, Verdict};
use super::prior::prior_between_cv;

use super::rules::{ThresholdRule, Tolerance};
use benchsuite_core::results::Status;

/// The default threshold of latency tails (p99, p99.9) as a fraction:
/// derived from the A/A traces in `benches/data/noise/` (see
/// `docs/compare.md`), where a tail's run-to-run moves dwarf a median's.
pub const TAIL_THRESHOLD: f64 = 0.25;

/// Whether a change of `diff` (new minus base) is for the worse.
pub(super) fn is_worse(direction: Direction, diff: f64) -> bool {
    match direction {
        Direction::Higher => diff < 0.0,
        Direction::Lower => diff > 0.0,
    }
}

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
    /// Baselines of another testbed (CPU model, microarchitecture, CPU
    /// count or sockets differ from the new report's) in a history of
    /// several (`--allow-mixed-hosts`); without it they are left out with
    /// a warning. A single baseline is always compared.
    #[serde(default)]
    pub mixed_hosts: bool,
}

/// How a judged change becomes a regression (`--rule`).
///
/// Every rule ends each gated metric in one of three places: regressed
/// (or improved), **unchanged** (the change's worse-side bound at
/// [`CompareOptions::beta`] lies within the threshold: a change as large as
/// the threshold would rarely have looked this small), or **undecided**
/// (neither: measure more, e.g. by interleaving the two builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateRule {
    /// Regressed when the whole interval of the change lies beyond the
    /// threshold (as criterion decides): a real change exactly at the
    /// threshold is called a regression at most the metric's level of
    /// the time. The default against one baseline.
    Interval,
    /// Regressed when the change lies outside the band that the baselines
    /// predict for an unchanged run (at the metric's level), the change
    /// itself is beyond the threshold, and so are most of the new run's
    /// rounds, none of those at a level the history has been seen at
    /// more than once (a recurring machine state: undecided, not
    /// excused). The default against a history of several baselines.
    Band,
    /// Two builds' rounds interleaved (A B A B): regressed when the
    /// paired round differences (a 10% trimmed mean, Yuen's test) differ
    /// from zero at the metric's level and their estimate is beyond the
    /// threshold. The default for interleaved reports.
    Paired,
}

impl GateRule {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            GateRule::Interval => "interval",
            GateRule::Band => "band",
            GateRule::Paired => "paired",
        }
    }
}

/// The noise between runs where the baselines cannot show it
/// (`--between-run-cv`).
///
/// With a history of two or more baselines, the spread of their run
/// medians is the noise one more run has (within and between runs
/// together); with one baseline, the samples of two runs cannot show the
/// noise between them, and a prior stands in for it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BetweenRun {
    /// Against one baseline, a prior between-run CV per module
    /// ([`prior_between_cv`], measured on 2-vCPU KVM guests): conservative
    /// on a quiet machine, about right on a VM. A history needs none.
    #[default]
    Prior,
    /// This between-run CV: against one baseline, the prior of every
    /// metric; in a history, a floor under the spread of its runs (`0`:
    /// against one baseline only the noise inside the two runs counts,
    /// which a machine state lasting longer than a run makes cry wolf).
    Cv(f64),
}

impl BetweenRun {
    /// The prior between-run CV of a metric of benchmark `id` (a latency
    /// tail when `tail`); `None` or 0 for none.
    pub fn prior_cv(self, id: &str, tail: bool) -> Option<f64> {
        match self {
            BetweenRun::Cv(cv) => Some(cv),
            BetweenRun::Prior => Some(prior_between_cv(id, tail)),
        }
    }
}

/// Where a metric's between-run noise came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BetweenSource {
    /// The spread of the history's run medians.
    History,
    /// The history's spread, judged with `--between-run-cv` as the floor
    /// it fell below.
    Floor,
    /// The prior (one baseline).
    Prior,
    /// Interleaved rounds, judged on their paired differences: the noise
    /// between runs cancels.
    Paired,
    /// None: one baseline and a prior of 0; only the noise inside the two
    /// runs counts.
    None,
}

impl BetweenSource {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            BetweenSource::History => "history",
            BetweenSource::Floor => "floor",
            BetweenSource::Prior => "prior",
            BetweenSource::Paired => "paired",
            BetweenSource::None => "none",
        }
    }
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
    /// The job's one-sided error level: the chance that *any* gated
    /// metric of an unchanged run alarms is held at `alpha` by Holm's
    /// step-down over the gated metrics (each metric's interval is a
    /// two-sided `1 − 2·level` one at the level the step-down leaves it;
    /// with one gated metric, `level = alpha`).
    pub alpha: f64,
    /// What the gate tolerates.
    #[serde(default)]
    pub allow: Allow,
    /// Default threshold of latency tails (`NAME.p99`, `NAME.p99_9`) as a
    /// fraction (`--tail-threshold`; default
    /// [`TAIL_THRESHOLD`]): a tail moves far more
    /// between runs than a median.
    #[serde(default = "default_tail_threshold")]
    pub tail_threshold: f64,
    /// The noise between runs (`--between-run-cv`).
    #[serde(default)]
    pub between_run: BetweenRun,
    /// The rule; `None`: [`GateRule::Band`] against several baselines,
    /// [`GateRule::Interval`] against one (`--rule`).
    #[serde(default)]
    pub rule: Option<GateRule>,
    /// The two reports' rounds were run alternately (`compare
    /// --interleave`: base round 1, new round 1, base round 2 ...): each
    /// metric is judged on the differences of its paired rounds, which
    /// cancels drift slower than a round. Needs one baseline and the same
    /// number of rounds (3 or more) on both sides; other metrics are
    /// judged as usual.
    #[serde(default)]
    pub paired: bool,
    /// The chance, per metric, of calling a change exactly at the
    /// threshold `unchanged` (a miss): a metric is unchanged only when the
    /// worse-side bound of its change at this one-sided level lies within
    /// the threshold. Default [`DEFAULT_BETA`].
    #[serde(default = "default_beta")]
    pub beta: f64,
}

/// The default [`CompareOptions::beta`]: 5%.
pub const DEFAULT_BETA: f64 = 0.05;

/// The default [`CompareOptions::alpha`]: 1% for the whole job.
pub const DEFAULT_ALPHA: f64 = 0.01;

fn default_beta() -> f64 {
    DEFAULT_BETA
}

fn default_tail_threshold() -> f64 {
    TAIL_THRESHOLD
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold: 0.05,
            rules: Vec::new(),
            alpha: DEFAULT_ALPHA,
            allow: Allow::default(),
            tail_threshold: TAIL_THRESHOLD,
            between_run: BetweenRun::default(),
            rule: None,
            paired: false,
            beta: DEFAULT_BETA,
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
    #[error("`CompareOptions::threshold` {rule}: {why}")]
    RuleMatchesNothing {
        /// The rule as written.
        rule: String,
        /// What is there instead.
        why: String,
    },
    /// An absolute threshold in a unit the metric is not measured in.
    #[error(
        "`CompareOptions::threshold` {rule}: {metric} is measured in {unit}, so an absolute threshold in {given} does not apply; use a relative one (`5%`)"
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
    /// `beta` outside (0, 0.5).
    #[error("beta must be between 0 and 0.5, got {0}")]
    Beta(f64),
    /// A threshold that is negative or not a number.
    #[error("a threshold must be a finite number, 0 or more")]
    Threshold,
    /// `compare` was given no baseline.
    #[error("no baseline report to compare with")]
    NoBaseline,
    /// Every baseline of a history was of another testbed.
    #[error(
        "none of the {count} baselines ran on the new report's testbed ({why}); set `CompareOptions::allow.mixed_hosts` to compare across machines"
    )]
    NoBaselineOfTestbed {
        /// How many baselines there were.
        count: usize,
        /// The first baseline's difference.
        why: String,
    },
    /// A baseline of a history with another major schema version.
    #[error(
        "{name}: cannot compare schema version {base} with {new}: the major versions differ; re-run the baseline with this benchsuite version"
    )]
    BaselineSchema {
        /// The baseline's name (its file).
        name: String,
        /// Its schema version.
        base: String,
        /// The new report's.
        new: String,
    },
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

/// One metric (or latency tail) present in both reports, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Benchmark id and requested parameters ([`benchsuite_core::Record::requested_key`]).
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
    /// Median of the baseline (NaN, written as JSON `null`, for a side
    /// without samples).
    #[serde(deserialize_with = "nan_if_null")]
    pub base_median: f64,
    /// Median of the new report (NaN, `null` in JSON, without samples).
    #[serde(deserialize_with = "nan_if_null")]
    pub new_median: f64,
    /// Samples in the baseline.
    pub base_n: usize,
    /// Samples in the new report.
    pub new_n: usize,
    /// Rounds in the baseline (1 without `--rounds`).
    pub base_rounds: usize,
    /// Rounds in the new report.
    pub new_rounds: usize,
    /// The metric's role ([`MetricRole`]; a tail has its metric's).
    #[serde(default)]
    pub role: Option<MetricRole>,
    /// Whether its verdict can fail the gate: headline and secondary
    /// metrics and their tails, and any metric a `--threshold` rule names.
    /// Derived and spread metrics are shown but never fail it.
    #[serde(default = "yes")]
    pub gated: bool,
    /// How many baseline runs the prediction used (1 without a history).
    #[serde(default = "one")]
    pub history_runs: usize,
    /// The noise between runs, as a CV (0.03 = 3%): with a history, the
    /// spread of its run medians (what one more run varies by); with one
    /// baseline, the prior (see [`between_source`](Self::between_source)).
    #[serde(default)]
    pub between_cv: Option<f64>,
    /// Where [`between_cv`](Self::between_cv) came from.
    #[serde(default)]
    pub between_source: Option<BetweenSource>,
    /// The threshold applied.
    pub tolerance: Tolerance,
    /// The change, `new − base`: relative to the base median (`0.072` for
    /// +7.2%) under a relative threshold, in the metric's unit under an
    /// absolute one. Positive means the value grew, whatever the direction.
    /// `None` when not judged.
    pub change: Option<f64>,
    /// The `1 − 2·level` confidence interval of `change`.
    pub interval: Option<[f64; 2]>,
    /// The one-sided level of the interval: what Holm's step-down left
    /// this metric of the job's `alpha` (`alpha` itself for a metric that
    /// is not gated).
    #[serde(default)]
    pub level: Option<f64>,
    /// The noise seen: the interval's half-width (same scale as `change`);
    /// a real change smaller than this cannot be confirmed.
    pub noise: Option<f64>,
    /// The smallest threshold (same scale as `change`) at which this pair
    /// raises no alarm (neither regressed nor improved): the interval's
    /// bound nearest zero, or 0 when the interval holds zero. From an A/A
    /// pair, a `--threshold` below it would have cried wolf.
    pub quiet_threshold: Option<f64>,
    /// The smallest threshold (same scale as `change`, on the worse side)
    /// at which this evidence calls the metric unchanged: the worse-side
    /// bound of the change at [`CompareOptions::beta`]. A metric whose
    /// value here stays above the threshold job after job cannot be gated
    /// at that threshold on this machine: give it its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged_above: Option<f64>,
    /// Degrees of freedom of the interval; `None` without spread.
    pub df: Option<f64>,
    /// Whether either side drifted between rounds (the round was the unit
    /// of evidence).
    pub drift: bool,
    /// The baselines' run medians of this metric, oldest first (the
    /// newest baseline last); empty for a latency tail or a comparison
    /// read from an older version. What the pull-request summary draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// The stage whose evidence gave the verdict; `None` in a comparison
    /// of reports alone (the screen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// Interleaved A B pairs behind a confirmation's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
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
    /// The job's one-sided error level, held over the gated metrics.
    pub alpha: f64,
    /// The rule that judged the metrics.
    #[serde(default = "interval_rule")]
    pub rule: GateRule,
    /// How many judged quantities the gate's error level is shared by
    /// (the gated metrics and tails that could be judged).
    #[serde(default)]
    pub family: usize,
    /// The default threshold of latency tails.
    #[serde(default = "default_tail_threshold")]
    pub tail_threshold: f64,
    /// The error level of an `unchanged` verdict
    /// ([`CompareOptions::beta`]): each metric's
    /// [`unchanged_above`](MetricComparison::unchanged_above) is its
    /// worse-side bound at this level.
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// The baselines compared with, oldest first (the newest decides what
    /// is missing or failed; all of them give the noise between runs).
    #[serde(default)]
    pub baselines: Vec<String>,
    /// Baselines left out, each with the reason (another testbed).
    #[serde(default)]
    pub excluded: Vec<String>,
    /// What the gate tolerated.
    #[serde(default)]
    pub allow: Allow,
    /// Whether the new report passes the gate (see [`Comparison::passed`]).
    pub passed: bool,
    /// The gate's three-way answer ([`Comparison::outcome`]).
    #[serde(default)]
    pub outcome: Outcome,
    /// What the confirmation (interleaved rounds after the screen) did;
    /// `None` when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
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

/// A number JSON may hold as `null` (serde_json writes a NaN so): read
/// back as NaN, so that every comparison it wrote reads back.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn yes() -> bool {
    true
}

fn one() -> usize {
    1
}

fn interval_rule() -> GateRule {
    GateRule::Interval
}

impl Comparison {
    /// True when any gated metric [regressed](Verdict::Regressed).
    pub fn has_regression(&self) -> bool {
        self.metrics
            .iter()
            .any(|m| m.gated && m.verdict == Verdict::Regressed)
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

    /// The three-way answer: failed (a regression or a problem), else
    /// undecided (a gated metric undecided), else passed.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The gated metrics left undecided.
    pub fn undecided(&self) -> impl Iterator<Item = &MetricComparison> {
        self.metrics
            .iter()
            .filter(|m| m.gated && m.verdict == Verdict::Undecided)
    }

    /// Sets [`passed`](Self::passed) and [`outcome`](Self::outcome) from
    /// the verdicts and problems.
    pub(crate) fn settle(&mut self) {
        self.passed = !self.has_regression() && self.gate_failures().next().is_none();
        self.outcome = if !self.passed {
            Outcome::Failed
        } else if self.undecided().next().is_some() {
            Outcome::Undecided
        } else {
            Outcome::Passed
        };
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
            Verdict::Undecided,
            Verdict::Improved,
            Verdict::Unchanged,
        ] {
            let n = self.with_verdict(v).filter(|m| m.gated).count();
            let worse = self
                .with_verdict(v)
                .filter(|m| m.gated && m.is_worse())
                .count();
            match (n, v) {
                (0, _) => {}
                (n, Verdict::Undecided) if worse > 0 => {
                    parts.push(format!("{n} undecided ({worse} of them worse)"))
                }
                (n, v) => parts.push(format!("{n} {v}")),
            }
        }
        let ungated = self.metrics.iter().filter(|m| !m.gated).count();
        if ungated > 0 {
            parts.push(format!("{ungated} not gated (derived or spread)"));
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
        let verdict = match self.outcome {
            Outcome::Passed => "gate passed",
            Outcome::Failed => "gate FAILED",
            Outcome::Undecided => "gate UNDECIDED",
        };
        if parts.is_empty() {
            verdict.to_string()
        } else {
            format!("{verdict}: {}", parts.join(", "))
        }
    }
}
