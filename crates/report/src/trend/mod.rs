//! After the merge: change points over a history of reports.
//!
//! A pre-merge gate cannot see a regression *into* a state the machine
//! already visits, nor a drift of steps that each pass. [`trend`] orders the
//! reports of one testbed by `started_at`, takes each gated metric's series
//! of run medians and finds its change points ([`detect`]: binary
//! segmentation, a rank statistic, a deterministic permutation test at
//! `alpha` per segment). Each change point carries the run and commit where
//! the new level starts, the step (Hodges–Lehmann, relative, or in
//! percentage points for metrics in %) with its 95% interval, and whether
//! it is a regression: worse, and at least the threshold. A regression in
//! the last [`TrendOptions::since`] runs that no acknowledgement
//! ([`Ack`], `perf-acks.toml`) names is an alarm.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use benchsuite_core::bench::Direction;
use benchsuite_core::param::Point;
use benchsuite_core::results::{Metric, MetricRole, Report, Status};

use crate::compare::rules::tolerance_for;
use crate::compare::{ThresholdRule, Tolerance};

pub mod detect;

/// How [`trend`] judges a history.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendOptions {
    /// The level of each segment's test (default 1%): under no change a
    /// series is split at most about this often.
    pub alpha: f64,
    /// A worse step at least this large (relative, default 5%) is a
    /// regression; metrics in % use [`PERCENT_THRESHOLD_PP`] instead.
    pub threshold: f64,
    /// A regression that starts in the last `since` runs alarms.
    pub since: usize,
    /// Expected changes.
    pub acks: Vec<Ack>,
    /// Per-metric thresholds (a thresholds file of `benchsuite
    /// calibrate`, the gate's own): where one matches a metric, its step
    /// must reach that threshold instead of `threshold` to be a regression.
    pub rules: Vec<ThresholdRule>,
}

/// The threshold of metrics in % (UDP loss), in percentage points.
pub const PERCENT_THRESHOLD_PP: f64 = 0.5;

impl Default for TrendOptions {
    fn default() -> Self {
        TrendOptions {
            alpha: 0.01,
            threshold: 0.05,
            since: 5,
            acks: Vec::new(),
            rules: Vec::new(),
        }
    }
}

/// The fewest runs a history needs: two segments of
/// [`detect::MIN_SEGMENT`].
pub const MIN_RUNS: usize = 2 * detect::MIN_SEGMENT;

/// An expected change: a metric (a record's id or full key, and optionally
/// the metric name) whose change point starts at a commit. The CLI reads
/// them from a TOML file of `[[ack]]` tables (`perf-acks.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// A benchmark id (`cpu.linpack`) or a record's full key.
    pub record: String,
    /// The metric; any metric of the record when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// The commit (or a prefix of at least 7 characters) of the first run
    /// at the new level.
    pub commit: String,
    /// Why the change is expected.
    pub reason: String,
}

/// One report of the history, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The file (or label) it came from.
    pub name: String,
    pub started_at: String,
    /// The build's commit (`host.build.commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A change point of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index (in [`Trend::runs`]) of the first run at the new level.
    pub at: usize,
    /// That run's name and commit.
    pub run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Median of the run medians before (back to the previous change point)
    /// and after (to the next one).
    pub before: f64,
    pub after: f64,
    /// The step, `after` vs `before`: relative (`-0.25`), or in percentage
    /// points for a metric in %.
    pub step: f64,
    /// Its 95% interval.
    pub interval: [f64; 2],
    /// The permutation p-value of the split.
    pub p: f64,
    /// Worse, by at least the threshold.
    pub regression: bool,
    /// The acknowledgement's reason, when one names this change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<String>,
    /// A regression in the last `since` runs, not acknowledged.
    pub alarm: bool,
}

/// The median of each round of a metric's samples; empty for one round
/// (or rounds that do not add up to the samples).
fn round_medians(m: &Metric) -> Vec<f64> {
    match &m.rounds {
        Some(r)
            if r.len() > 1
                && r.iter().sum::<usize>() == m.samples.len()
                && r.iter().all(|&k| k > 0) =>
        {
            let mut at = 0;
            r.iter()
                .map(|&k| {
                    at += k;
                    benchsuite_core::stats::median(&m.samples[at - k..at])
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// One gated metric's series of run medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Benchmark id and requested parameters.
    pub key: String,
    pub id: String,
    pub params: Point,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The run median of each run of [`Trend::runs`]; `None` where the
    /// record did not run or lacks the metric.
    pub medians: Vec<Option<f64>>,
    /// The median of each round of each run (`--rounds`), parallel to
    /// `medians`; empty for a run of one round or without the metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Vec<f64>>,
    pub change_points: Vec<ChangePoint>,
}

impl Series {
    /// Whether steps are in percentage points (a metric in %).
    pub fn absolute(&self) -> bool {
        self.unit == "%"
    }

    /// A step as text: `-25.0%` or `+1.20pp`.
    pub fn step_text(&self, v: f64) -> String {
        if self.absolute() {
            format!("{v:+.2}pp")
        } else {
            crate::compare::percent_text(v)
        }
    }
}

/// Change points over a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub runs: Vec<Run>,
    /// Reports left out, each with why (another testbed).
    pub excluded: Vec<String>,
    /// What the reader should know (ties in `started_at`).
    pub notes: Vec<String>,
    pub alpha: f64,
    pub threshold: f64,
    /// The per-metric thresholds that replaced `threshold` where they
    /// matched (`SELECTOR:METRIC=VALUE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    pub since: usize,
    pub series: Vec<Series>,
    /// Acknowledgements that name no change point.
    pub stale: Vec<Ack>,
}

impl Trend {
    /// The alarms: unacknowledged regressions in the last `since` runs.
    pub fn alarms(&self) -> impl Iterator<Item = (&Series, &ChangePoint)> {
        self.series
            .iter()
            .flat_map(|s| s.change_points.iter().map(move |c| (s, c)))
            .filter(|(_, c)| c.alarm)
    }

    /// Exit status for a scheduled job: 1 with an alarm, else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.alarms().next().is_some())
    }
}

/// What makes a history unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrendError {
    #[error("history needs at least {need} runs of one testbed to find a change point, got {got}")]
    TooFewRuns { need: usize, got: usize },
    #[error("alpha must be between 0 and 0.5, got {0}")]
    Alpha(String),
    #[error("a threshold must be a finite number, 0 or more")]
    Threshold,
}

/// Finds the change points of every gated metric of `reports` (each with
/// the name it is shown under): see the [module documentation](self).
/// Pure and deterministic.
pub fn trend(reports: &[(String, Report)], options: &TrendOptions) -> Result<Trend, TrendError> {
    if !(options.alpha > 0.0 && options.alpha < 0.5) {
        return Err(TrendError::Alpha(options.alpha.to_string()));
    }
    if !(options.threshold.is_finite() && options.threshold >= 0.0) {
        return Err(TrendError::Threshold);
    }
    // Oldest first; equal start times by name.
    let mut order: Vec<&(String, Report)> = reports.iter().collect();
    order.sort_by(|a, b| {
        a.1.started_at
            .cmp(&b.1.started_at)
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut notes = Vec::new();
    for w in order.windows(2) {
        if w[0].1.started_at == w[1].1.started_at {
            notes.push(format!(
                "{} and {} started at the same time ({}): ordered by file name",
                w[0].0, w[1].0, w[0].1.started_at
            ));
        }
    }
    // One testbed: the newest report's.
    let mut excluded = Vec::new();
    let kept: Vec<&(String, Report)> = match order.last() {
        None => Vec::new(),
        Some(newest) => order
            .iter()
            .copied()
            .filter(
                |(name, r)| match crate::compare::testbed_difference(r, &newest.1) {
                    Some(why) => {
                        excluded.push(format!("{name}: {why}"));
                        false
                    }
                    None => true,
                },
            )
            .collect(),
    };
    if kept.len() < MIN_RUNS {
        return Err(TrendError::TooFewRuns {
            need: MIN_RUNS,
            got: kept.len(),
        });
    }
    let runs: Vec<Run> = kept
        .iter()
        .map(|(name, r)| Run {
            name: name.clone(),
            started_at: r.started_at.clone(),
            commit: r.host.build.commit.clone(),
        })
        .collect();
    // Each gated metric's medians, in the order first seen.
    let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut series: Vec<Series> = Vec::new();
    for (i, (_, r)) in kept.iter().enumerate() {
        for rec in r.records.iter().filter(|x| x.status == Status::Ok) {
            for (k, m) in rec.metrics.iter().enumerate() {
                let role = m.role.unwrap_or(if k == 0 {
                    MetricRole::Headline
                } else {
                    MetricRole::Secondary
                });
                // The run median, from the samples (as `compare` takes it).
                let median = if m.samples.is_empty() {
                    m.summary.median
                } else {
                    benchsuite_core::stats::median(&m.samples)
                };
                // A metric whose samples are an earlier one's of the record
                // (`stream_min` of one stream is `throughput`) repeats it.
                let twin = rec.metrics[..k].iter().any(|x| {
                    x.unit == m.unit
                        && !m.samples.is_empty()
                        && x.samples.len() == m.samples.len()
                        && x.samples
                            .iter()
                            .zip(&m.samples)
                            .all(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()))
                });
                if !role.gated_by_default() || !median.is_finite() || twin {
                    continue;
                }
                let key = rec.requested_key();
                let at = *index
                    .entry((key.clone(), m.name.clone()))
                    .or_insert_with(|| {
                        series.push(Series {
                            key,
                            id: rec.id.clone(),
                            params: rec.requested_params().clone(),
                            metric: m.name.clone(),
                            unit: m.unit.clone(),
                            direction: m.direction,
                            medians: vec![None; kept.len()],
                            rounds: vec![Vec::new(); kept.len()],
                            change_points: Vec::new(),
                        });
                        series.len() - 1
                    });
                let s = &mut series[at];
                if s.unit == m.unit && s.direction == m.direction {
                    s.medians[i] = Some(median);
                    s.rounds[i] = round_medians(m);
                }
            }
        }
    }
    let n = runs.len();
    let mut used = vec![false; options.acks.len()];
    for s in &mut series {
        let present: Vec<(usize, f64)> = s
            .medians
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        let absolute = s.absolute();
        // Relative steps on the log scale (a metric > 0), pp otherwise.
        let log = !absolute && present.iter().all(|(_, v)| *v > 0.0);
        let x: Vec<f64> = present
            .iter()
            .map(|(_, v)| if log { v.ln() } else { *v })
            .collect();
        let splits = detect::change_points(&x, options.alpha);
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(splits.iter().map(|c| c.at))
            .chain(std::iter::once(x.len()))
            .collect();
        for (j, split) in splits.iter().enumerate() {
            let (before, after) = (&x[bounds[j]..split.at], &x[split.at..bounds[j + 2]]);
            let (d, [lo, hi]) = detect::shift(before, after);
            let to_step = |v: f64| {
                if log {
                    v.exp_m1()
                } else if absolute {
                    v
                } else {
                    let base = benchsuite_core::stats::median(before);
                    if base == 0.0 {
                        f64::NAN
                    } else {
                        v / base.abs()
                    }
                }
            };
            let undo = |v: f64| if log { v.exp() } else { v };
            let step = to_step(d);
            let worse = match s.direction {
                Direction::Higher => step < 0.0,
                Direction::Lower => step > 0.0,
            };
            let level = undo(benchsuite_core::stats::median(before)).abs();
            let large =
                match tolerance_for(options.threshold, &options.rules, &s.id, &s.metric, &s.unit) {
                    (_, None) if absolute => step.abs() >= PERCENT_THRESHOLD_PP,
                    (_, None) => step.abs() >= options.threshold,
                    // A rule's relative threshold of a metric in % (its step
                    // in pp) is relative to the level before.
                    (Tolerance::Relative(r), Some(_)) if absolute => step.abs() >= r * level,
                    (Tolerance::Relative(r), Some(_)) => step.abs() >= r,
                    (Tolerance::Absolute { value, .. }, Some(_)) if absolute => step.abs() >= value,
                    (Tolerance::Absolute { value, .. }, Some(_)) => step.abs() * level >= value,
                };
            let regression = worse && large;
            let at = present[split.at].0;
            let commit = runs[at].commit.clone();
            let ack = options.acks.iter().enumerate().find(|(_, a)| {
                (a.record == s.id || a.record == s.key)
                    && a.metric.as_ref().is_none_or(|m| *m == s.metric)
                    && commit
                        .as_deref()
                        .is_some_and(|c| c.starts_with(a.commit.trim()))
            });
            if let Some((k, _)) = ack {
                used[k] = true;
            }
            let acknowledged = ack.map(|(_, a)| a.reason.clone());
            s.change_points.push(ChangePoint {
                at,
                run: runs[at].name.clone(),
                commit,
                before: undo(benchsuite_core::stats::median(before)),
                after: undo(benchsuite_core::stats::median(after)),
                step,
                interval: [to_step(lo), to_step(hi)],
                p: split.p,
                regression,
                alarm: regression && acknowledged.is_none() && at + options.since >= n,
                acknowledged,
            });
        }
    }
    let stale = options
        .acks
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| a.clone())
        .collect();
    Ok(Trend {
        runs,
        excluded,
        notes,
        alpha: options.alpha,
        threshold: options.threshold,
        rules: options.rules.iter().map(ToString::to_string).collect(),
        since: options.since,
        series,
        stale,
    })
}

#[cfg(test)]
mod tests;
