//! Comparison of two reports: a pure function from `(base, new, options)` to
//! a [`Comparison`] — a verdict per metric and a **gate**: whether the new
//! report may pass a CI check against the baseline.
//!
//! # The gate
//!
//! The new report fails the gate ([`Comparison::passed`] is false; the CLI
//! exits 1) when
//!
//! - any metric [regressed](Verdict::Regressed), or
//! - a record that ran (`ok`) in the baseline **failed**, was **skipped**, is
//!   **missing**, or lacks one of its metrics in the new report, or
//! - a metric could not be judged (too few samples, a zero baseline with a
//!   relative threshold), or
//! - the new report has no record that ran at all (empty or all failed).
//!
//! Each of these is a [`Problem`], listed first with its reason.
//! [`Allow`] relaxes the ones users need to (`--allow-missing`,
//! `--allow-skipped`, `--allow-unjudged`); a failed record and an empty
//! report always fail. Records only in the new report are listed
//! ([`Comparison::added`]), not failures; so are records that did not run in
//! the baseline either ([`Comparison::not_comparable`]).
//!
//! # Pairing
//!
//! Records pair by benchmark id and the parameters **as requested**
//! ([`Record::requested_params`]), so the same plan pairs up on two machines
//! even where `auto` values resolved differently; where the values that ran
//! differ, the pair is still judged and the difference is its `context`.
//! Reports without any pair are an error ([`CompareError::NothingInCommon`])
//! unless the new one ran nothing (then the gate fails).
//!
//! # Verdicts
//!
//! Each metric (and each latency tail, `NAME.p99` and `NAME.p99_9`, where
//! both sides recorded every sample's tail) gets the change of the medians
//! and its confidence interval, computed as described in
//! [`interval`]: per-round medians are the unit of evidence
//! where the machine drifted between rounds. With `alpha` = 0.05 the
//! interval is a 90% one, so each of its bounds is a 95% one-sided bound.
//!
//! - [`Verdict::Regressed`]: the **whole interval** lies beyond the threshold
//!   on the worse side (as criterion decides): a real change exactly at the
//!   threshold is called a regression at most `alpha` of the time;
//! - [`Verdict::Improved`]: the whole interval lies beyond the threshold on
//!   the better side;
//! - [`Verdict::Unchanged`]: the change is within the threshold;
//! - [`Verdict::Noisy`]: the change is beyond the threshold but the interval
//!   reaches back inside it: more samples or rounds would tell;
//! - [`Verdict::NotJudged`]: a side has fewer than three samples, or the
//!   base median is 0 under a relative threshold.
//!
//! Thresholds are relative (`5%`) or absolute in the metric's unit (`0.5pp`
//! for metrics in %, which default to it), per record and metric
//! ([`rules`]). Each metric also reports the noise it saw: the interval's
//! half-width ([`MetricComparison::noise`]: a change smaller than it cannot
//! be confirmed), and [`MetricComparison::quiet_threshold`], the smallest
//! threshold that would have raised no alarm (0 when the interval holds
//! zero). On two runs of the same build (an A/A pair), these are the data
//! to set `--threshold` from.
//!
//! The measured error rates of this rule under named noise models are
//! printed by `cargo run -p benchsuite-benches --example compare_error_rates`
//! (and checked in its test).
//!
//! ```
//! use benchsuite_core::compare::{compare, CompareOptions};
//! # use benchsuite_core::{Report, host::Host, report::RunConfigRecord};
//! # let report = Report { schema_version: "1.2".into(), tool_version: "0.1.0".into(),
//! #     started_at: String::new(), host: Host::default(),
//! #     config: RunConfigRecord::default(), progress: None, records: vec![] };
//! // An empty new report never passes.
//! let comparison = compare(&report, &report, &CompareOptions::default()).unwrap();
//! assert!(!comparison.passed());
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bench::Direction;
use crate::param::Point;
use crate::report::{Metric, Record, Report, Status, schema_major};

mod context;
pub mod interval;
pub mod rules;

pub use rules::{ThresholdRule, Tolerance};

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

/// Settings of [`compare`]. The CLI maps `--threshold`, `--alpha` and the
/// `--allow-*` flags onto it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Default threshold as a fraction of the base median (`0.05`: 5%):
    /// a change must lie beyond it, whole interval included, to count.
    /// Metrics in `%` default to [`rules::PERCENT_METRIC_DEFAULT`]
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
    /// Benchmark id and requested parameters ([`Record::requested_key`]).
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

/// The result of [`compare`]: plain data, serialised as JSON by
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

/// Compares `new` against the baseline `base`. Pure: no I/O, no clock.
///
/// Fails when the schema major versions differ, when a threshold rule
/// covers nothing or has the wrong unit, and when no record pairs up
/// although the new report ran something. See the
/// [module documentation](self) for the method.
pub fn compare(
    base: &Report,
    new: &Report,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let (bm, nm) = (
        schema_major(&base.schema_version),
        schema_major(&new.schema_version),
    );
    if bm.is_none() || bm != nm {
        return Err(CompareError::SchemaMismatch {
            base: base.schema_version.clone(),
            new: new.schema_version.clone(),
        });
    }
    if !(options.alpha > 0.0 && options.alpha < 0.5) {
        return Err(CompareError::Alpha(options.alpha));
    }
    let bad = |v: f64| !v.is_finite() || v < 0.0;
    if bad(options.threshold)
        || options.rules.iter().any(|r| match &r.tolerance {
            Tolerance::Relative(v) | Tolerance::Absolute { value: v, .. } => bad(*v),
        })
    {
        return Err(CompareError::Threshold);
    }
    check_rules(base, new, &options.rules)?;

    let mut out = Comparison {
        base_schema_version: base.schema_version.clone(),
        new_schema_version: new.schema_version.clone(),
        threshold: options.threshold,
        rules: options.rules.iter().map(|r| r.to_string()).collect(),
        alpha: options.alpha,
        allow: options.allow,
        passed: false,
        problems: Vec::new(),
        metrics: Vec::new(),
        added: Vec::new(),
        not_comparable: Vec::new(),
        context_differences: context::context_differences(base, new),
    };

    // Point holds floats, so it is not Ord/Hash: match by equality. Reports
    // hold at most a few thousand records; each new record is used once, so
    // duplicates pair up in order.
    let mut used = vec![false; new.records.len()];
    let mut paired = 0;
    for b in &base.records {
        // On the requested point; failing that, on the point that ran (a
        // baseline older than schema 1.2 has no requested point).
        let found = new
            .records
            .iter()
            .enumerate()
            .find(|(i, n)| {
                !used[*i] && n.id == b.id && n.requested_params() == b.requested_params()
            })
            .or_else(|| {
                new.records
                    .iter()
                    .enumerate()
                    .find(|(i, n)| !used[*i] && n.id == b.id && n.params == b.params)
            });
        match found {
            Some((i, n)) => {
                used[i] = true;
                paired += 1;
                compare_records(b, n, options, &mut out)?;
            }
            None if b.status == Status::Ok => out.problems.push(Problem {
                key: b.requested_key(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::Missing,
                metric: None,
                reason: "ran in base, absent from new".into(),
                allowed: options.allow.missing,
            }),
            None => out.not_comparable.push(NotComparable {
                key: b.requested_key(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                metric: None,
                base_status: b.status,
                new_status: b.status,
                reason: format!(
                    "{} in base and absent from new",
                    status_reason(b.status, b.reason.as_deref())
                ),
            }),
        }
    }
    for (n, _) in new.records.iter().zip(&used).filter(|(_, u)| !**u) {
        out.added.push(unmatched(n, None));
    }
    let ran_in_new = new.records.iter().any(|r| r.status == Status::Ok);
    if !ran_in_new {
        let why = if new.records.is_empty() {
            "the new report has no records".to_string()
        } else {
            format!(
                "none of the new report's {} records ran (all failed or skipped)",
                new.records.len()
            )
        };
        out.problems.insert(
            0,
            Problem {
                key: String::new(),
                id: String::new(),
                params: Point::default(),
                kind: ProblemKind::NoResults,
                metric: None,
                reason: why,
                allowed: false,
            },
        );
    } else if paired == 0 && !base.records.is_empty() {
        let ids = |r: &Report| {
            let mut v: Vec<&str> = r.records.iter().map(|r| r.id.as_str()).collect();
            v.dedup();
            v.join(", ")
        };
        return Err(CompareError::NothingInCommon {
            base: ids(base),
            new: ids(new),
        });
    }
    out.passed = !out.has_regression() && out.gate_failures().next().is_none();
    Ok(out)
}

/// Every rule must cover some metric of a record in either report, and an
/// absolute one must be in the unit of every metric it covers.
fn check_rules(base: &Report, new: &Report, rules: &[ThresholdRule]) -> Result<(), CompareError> {
    for rule in rules {
        let records: Vec<&Record> = base
            .records
            .iter()
            .chain(&new.records)
            .filter(|r| rule.matches_id(&r.id))
            .collect();
        if records.is_empty() {
            let mut ids: Vec<&str> = base
                .records
                .iter()
                .chain(&new.records)
                .map(|r| r.id.as_str())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            return Err(CompareError::RuleMatchesNothing {
                rule: rule.to_string(),
                why: format!(
                    "no record matches `{}` (benchmarks in the reports: {})",
                    rule.selector,
                    ids.join(", ")
                ),
            });
        }
        let mut names: Vec<String> = Vec::new();
        let mut hit = false;
        for r in &records {
            for m in &r.metrics {
                for name in metric_names(m) {
                    if rule.matches_metric(&name) {
                        hit = true;
                        if !rule.tolerance.fits(&m.unit) {
                            let Tolerance::Absolute { unit, .. } = &rule.tolerance else {
                                unreachable!("relative tolerances fit every unit")
                            };
                            return Err(CompareError::RuleUnit {
                                rule: rule.to_string(),
                                metric: format!("{} {name}", r.requested_key()),
                                unit: m.unit.clone(),
                                given: if unit == "%" {
                                    "pp".into()
                                } else {
                                    unit.clone()
                                },
                            });
                        }
                    }
                    names.push(name);
                }
            }
        }
        // Records that did not run have no metrics: only a rule naming a
        // metric needs one to exist.
        if !hit && rule.metric.is_some() {
            names.sort();
            names.dedup();
            return Err(CompareError::RuleMatchesNothing {
                rule: rule.to_string(),
                why: format!(
                    "the records matching `{}` have no metric `{}` (they have: {})",
                    rule.selector,
                    rule.metric.as_deref().unwrap_or_default(),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
            });
        }
    }
    Ok(())
}

/// The judged quantities of a metric: its name, then its tails.
fn metric_names(m: &Metric) -> Vec<String> {
    let mut v = vec![m.name.clone()];
    if let Some(t) = &m.tails {
        if t.p99.is_some() {
            v.push(format!("{}.p99", m.name));
        }
        if t.p99_9.is_some() {
            v.push(format!("{}.p99_9", m.name));
        }
    }
    v
}

fn unmatched(r: &Record, metric: Option<&str>) -> Unmatched {
    Unmatched {
        key: r.requested_key(),
        id: r.id.clone(),
        params: r.requested_params().clone(),
        metric: metric.map(str::to_string),
    }
}

fn status_reason(s: Status, reason: Option<&str>) -> String {
    let name = match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    };
    match reason {
        Some(why) => format!("{name} ({why})"),
        None => name.to_string(),
    }
}

fn compare_records(
    b: &Record,
    n: &Record,
    options: &CompareOptions,
    out: &mut Comparison,
) -> Result<(), CompareError> {
    let key = b.requested_key();
    if b.status != Status::Ok {
        out.not_comparable.push(NotComparable {
            key,
            id: b.id.clone(),
            params: b.requested_params().clone(),
            metric: None,
            base_status: b.status,
            new_status: n.status,
            reason: format!(
                "{} in base; {} in new",
                status_reason(b.status, b.reason.as_deref()),
                status_reason(n.status, n.reason.as_deref())
            ),
        });
        return Ok(());
    }
    if n.status != Status::Ok {
        let (kind, allowed) = match n.status {
            Status::Skipped => (ProblemKind::Skipped, options.allow.skipped),
            _ => (ProblemKind::Failed, false),
        };
        out.problems.push(Problem {
            key,
            id: b.id.clone(),
            params: b.requested_params().clone(),
            kind,
            metric: None,
            reason: n.reason.clone().unwrap_or_else(|| "no reason given".into()),
            allowed,
        });
        return Ok(());
    }
    let context = resolved_difference(b, n);
    for bm in &b.metrics {
        let Some(nm) = n.metric(&bm.name) else {
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                metric: Some(bm.name.clone()),
                reason: format!("metric {} is in base, not in new", bm.name),
                allowed: options.allow.missing,
            });
            continue;
        };
        if bm.unit != nm.unit || bm.direction != nm.direction {
            // The new build measures something else under the old name:
            // the old metric is gone.
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                metric: Some(bm.name.clone()),
                reason: format!(
                    "metric {} changed from {} ({} is better) to {} ({} is better)",
                    bm.name,
                    bm.unit,
                    direction_name(bm.direction),
                    nm.unit,
                    direction_name(nm.direction)
                ),
                allowed: options.allow.missing,
            });
            continue;
        }
        for tail in lost_tails(bm, nm) {
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                reason: format!(
                    "{tail} is in base, not in new (a sample of new recorded too few operations for it)"
                ),
                metric: Some(tail),
                allowed: options.allow.missing,
            });
        }
        for q in quantities(bm, nm) {
            let mc = judge(b, &q, options, context.clone());
            if mc.verdict == Verdict::NotJudged {
                out.problems.push(Problem {
                    key: key.clone(),
                    id: b.id.clone(),
                    params: b.requested_params().clone(),
                    kind: ProblemKind::NotJudged,
                    metric: Some(mc.metric.clone()),
                    reason: mc.note.clone().unwrap_or_default(),
                    allowed: options.allow.unjudged,
                });
            }
            out.metrics.push(mc);
        }
    }
    for nm in n.metrics.iter().filter(|m| b.metric(&m.name).is_none()) {
        out.added.push(unmatched(n, Some(&nm.name)));
    }
    Ok(())
}

/// `size: 32MiB (base) vs 48MiB (new)` for every parameter whose resolved
/// value differs between the paired records.
fn resolved_difference(b: &Record, n: &Record) -> Option<String> {
    let diffs: Vec<String> = b
        .params
        .0
        .iter()
        .filter_map(|(name, bv)| {
            let nv = n.params.get(name)?;
            (bv != nv).then(|| format!("{name} ran as {bv} in base, {nv} in new"))
        })
        .collect();
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

/// One judged quantity: a metric's samples or one of its tails, on both
/// sides.
struct Quantity<'a> {
    name: String,
    unit: &'a str,
    direction: Direction,
    base: &'a [f64],
    new: &'a [f64],
    base_rounds: Option<&'a [usize]>,
    new_rounds: Option<&'a [usize]>,
}

/// The tails the base judged that the new report no longer has.
fn lost_tails(b: &Metric, n: &Metric) -> Vec<String> {
    let names = metric_names(n);
    metric_names(b)
        .into_iter()
        .skip(1)
        .filter(|t| !names.contains(t))
        .collect()
}

fn quantities<'a>(b: &'a Metric, n: &'a Metric) -> Vec<Quantity<'a>> {
    let q = |name: String, base: &'a [f64], new: &'a [f64]| Quantity {
        name,
        unit: &b.unit,
        direction: b.direction,
        base,
        new,
        base_rounds: b.rounds.as_deref(),
        new_rounds: n.rounds.as_deref(),
    };
    let mut v = vec![q(b.name.clone(), &b.samples, &n.samples)];
    if let (Some(bt), Some(nt)) = (&b.tails, &n.tails) {
        if let (Some(x), Some(y)) = (&bt.p99, &nt.p99) {
            v.push(q(format!("{}.p99", b.name), x, y));
        }
        if let (Some(x), Some(y)) = (&bt.p99_9, &nt.p99_9) {
            v.push(q(format!("{}.p99_9", b.name), x, y));
        }
    }
    v
}

fn judge(
    record: &Record,
    q: &Quantity<'_>,
    options: &CompareOptions,
    context: Option<String>,
) -> MetricComparison {
    let (tolerance, _) = rules::tolerance_for(
        options.threshold,
        &options.rules,
        &record.id,
        &q.name,
        q.unit,
    );
    let rounds_of = |r: Option<&[usize]>| r.map_or(1, |r| r.len().max(1));
    let mut mc = MetricComparison {
        key: record.requested_key(),
        id: record.id.clone(),
        params: record.requested_params().clone(),
        metric: q.name.clone(),
        unit: q.unit.to_string(),
        direction: q.direction,
        base_median: median(q.base),
        new_median: median(q.new),
        base_n: q.base.len(),
        new_n: q.new.len(),
        base_rounds: rounds_of(q.base_rounds),
        new_rounds: rounds_of(q.new_rounds),
        tolerance: tolerance.clone(),
        change: None,
        interval: None,
        noise: None,
        quiet_threshold: None,
        df: None,
        drift: false,
        verdict: Verdict::NotJudged,
        note: context,
    };
    let not_judged = |mut mc: MetricComparison, why: String| {
        mc.note = Some(match mc.note.take() {
            Some(c) => format!("{why}; {c}"),
            None => why,
        });
        mc
    };
    let relative = matches!(tolerance, Tolerance::Relative(_));
    let positive = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    let log = relative && positive(q.base) && positive(q.new);
    let scale = |v: &[f64]| -> Vec<f64> {
        if log {
            v.iter().map(|x| x.ln()).collect()
        } else {
            v.to_vec()
        }
    };
    let sides = (
        interval::side(&scale(q.base), q.base_rounds),
        interval::side(&scale(q.new), q.new_rounds),
    );
    let (bs, ns) = match sides {
        (Ok(b), Ok(n)) => (b, n),
        (Err(interval::Unjudged::NotFinite), _) | (_, Err(interval::Unjudged::NotFinite)) => {
            return not_judged(mc, "a sample is not a finite number".into());
        }
        (Err(interval::Unjudged::TooFewSamples(k)), _) => {
            return not_judged(
                mc,
                format!(
                    "base has {k} sample(s) or round(s); at least {} are needed to judge (--runs)",
                    interval::MIN_SAMPLES
                ),
            );
        }
        (_, Err(interval::Unjudged::TooFewSamples(k))) => {
            return not_judged(
                mc,
                format!(
                    "new has {k} sample(s) or round(s); at least {} are needed to judge (--runs)",
                    interval::MIN_SAMPLES
                ),
            );
        }
    };
    let iv = interval::difference(&bs, &ns, options.alpha);
    let h = iv.half_width;
    let (change, lo, hi, tol) = match &tolerance {
        Tolerance::Relative(t) if log => {
            let c = mc.new_median / mc.base_median - 1.0;
            let r = 1.0 + c;
            (c, r * (-h).exp() - 1.0, r * h.exp() - 1.0, *t)
        }
        Tolerance::Relative(t) => {
            if mc.base_median == 0.0 {
                return not_judged(
                    mc,
                    format!(
                        "the base median is 0, so a relative change is undefined; give {} an absolute threshold (--threshold '{}:{}=...')",
                        q.name, record.id, q.name
                    ),
                );
            }
            let b = mc.base_median.abs();
            let c = (mc.new_median - mc.base_median) / b;
            (c, c - h / b, c + h / b, *t)
        }
        Tolerance::Absolute { value, .. } => {
            let c = mc.new_median - mc.base_median;
            (c, c - h, c + h, *value)
        }
    };
    let worse_bound_beyond = match q.direction {
        Direction::Lower => lo > tol,
        Direction::Higher => hi < -tol,
    };
    let better_bound_beyond = match q.direction {
        Direction::Lower => hi < -tol,
        Direction::Higher => lo > tol,
    };
    mc.verdict = if worse_bound_beyond {
        Verdict::Regressed
    } else if better_bound_beyond {
        Verdict::Improved
    } else if change.abs() <= tol {
        Verdict::Unchanged
    } else {
        Verdict::Noisy
    };
    mc.change = Some(change);
    mc.interval = Some([lo, hi]);
    mc.noise = Some((hi - lo) / 2.0);
    mc.quiet_threshold = Some(if lo > 0.0 || hi < 0.0 {
        lo.abs().min(hi.abs())
    } else {
        0.0
    });
    mc.df = iv.df;
    mc.drift = bs.drift || ns.drift;
    mc
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&s, 0.5)
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Higher => "higher",
        Direction::Lower => "lower",
    }
}

fn is_worse(direction: Direction, diff: f64) -> bool {
    match direction {
        Direction::Higher => diff < 0.0,
        Direction::Lower => diff > 0.0,
    }
}

#[cfg(test)]
mod tests;
