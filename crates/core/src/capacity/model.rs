//! The data of a capacity search: the target ([`Slo`], parsed from
//! `--slo`) and the answer ([`Capacity`], on the search's summary record)
//! with its [`Step`]s. Plain data that the configuration and the result
//! model import; the search itself is in [`crate::capacity`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::parse_duration;

/// A latency target: a percentile of a latency metric and its bound
/// (`p99<=1ms`, `rtt.p99.9<=250us`).
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The latency metric it judges (`latency`, `rtt`); `None`: the
    /// benchmark's first latency metric.
    pub metric: Option<String>,
    /// The percentile's label as written (`p99`, `p99.9`).
    pub percentile: String,
    /// The percentile as a fraction (0.99).
    pub quantile: f64,
    /// The bound, in seconds.
    pub bound_s: f64,
    /// The bound as written (`1ms`).
    pub bound_text: String,
}

impl Slo {
    /// Parses `[METRIC.]pNN[.N]<=DURATION` (`<` is read as `<=`).
    pub fn parse(text: &str) -> Result<Slo, crate::error::ValueError> {
        Self::parse_text(text).map_err(Into::into)
    }

    fn parse_text(text: &str) -> Result<Slo, String> {
        let t = text.trim();
        let (lhs, rhs) = t
            .split_once("<=")
            .or_else(|| t.split_once('<'))
            .ok_or_else(|| {
                format!("`{t}` is not a latency target: write PERCENTILE<=TIME, e.g. p99<=1ms")
            })?;
        let lhs = lhs.trim();
        // The percentile is the last `p…` part: `rtt.p99.9` → (rtt, p99.9).
        let (metric, pct) = match lhs.find(".p").or_else(|| lhs.find("_p")) {
            Some(i) => (Some(lhs[..i].to_string()), &lhs[i + 1..]),
            None => (None, lhs),
        };
        let digits = pct.strip_prefix('p').ok_or_else(|| {
            format!(
                "`{lhs}` names no percentile: the target is a latency percentile such as p50, p99 or p99.9"
            )
        })?;
        let q: f64 = digits.replace('_', ".").parse().map_err(|_| {
            format!("`{pct}` is not a percentile: write p50, p90, p99, p99.9 or p99.99")
        })?;
        if !(q > 0.0 && q < 100.0) {
            return Err(format!(
                "`{pct}` is not a percentile between p0 and p100 (exclusive)"
            ));
        }
        let bound =
            parse_duration(rhs.trim()).map_err(|e| format!("the bound `{}`: {e}", rhs.trim()))?;
        if bound.is_zero() {
            return Err("the bound must be more than 0".into());
        }
        Ok(Slo {
            metric,
            percentile: format!("p{digits}"),
            quantile: q / 100.0,
            bound_s: bound.as_secs_f64(),
            bound_text: rhs.trim().to_string(),
        })
    }

    /// How many operations a step needs so that at least 100 lie above the
    /// percentile (10 000 for p99), and never fewer than 2 000.
    pub fn samples_needed(&self) -> u64 {
        ((100.0 / (1.0 - self.quantile) - 1e-6).ceil() as u64).max(2000)
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.metric {
            write!(f, "{m}.")?;
        }
        write!(f, "{}<={}", self.percentile, self.bound_text)
    }
}

/// How a capacity search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchOutcome {
    /// The target held up to [`Capacity::rate`] and broke above it.
    Met,
    /// Even the lightest load tried broke the target.
    NeverMet,
    /// The target held at every rate the system carried: it saturated (or
    /// the ladder reached its top) before the percentile crossed the
    /// bound. The capacity is its throughput, not its latency.
    NeverBroken,
    /// No target (`rate=auto` alone): a ladder up to saturation.
    Ladder,
}

/// One step of a search: one open-loop record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Operations per second offered.
    pub offered: f64,
    /// Operations per second carried.
    pub achieved: f64,
    /// Achieved fell short of offered by more than the tolerance.
    pub saturated: bool,
    /// Latency percentiles of the step, in seconds (from the intended
    /// start of each operation).
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Operations the step's samples hold.
    pub count: u64,
    /// The target's percentile at this step and its 95% interval
    /// (distribution-free, from the order statistics), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_value: Option<[f64; 3]>,
    /// Whether the step met the target: the interval's upper end under
    /// the bound and not saturated. `None` without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met: Option<bool>,
    /// The step failed (its record says why); it counts as not met.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// The answer of a capacity search, on its summary record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    /// The target (`p99<=1ms`), absent for a plain ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// The latency metric judged.
    pub metric: String,
    /// How it ended.
    pub verdict: SearchOutcome,
    /// The answer, operations per second: the highest offered rate that
    /// met the target (with [`SearchOutcome::NeverBroken`], the highest carried
    /// without saturation). Absent when never met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Where the answer lies: `[highest rate that met, lowest that did
    /// not]`; the upper end is absent when nothing broke it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[Option<f64>; 2]>,
    /// The knee of the curve: the highest rate carried without saturation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<f64>,
    /// Confidence of each step's judgement (0.95).
    pub confidence: f64,
    /// The steps, in the order they ran (of the first search with
    /// `rounds`).
    pub steps: Vec<Step>,
    /// With `rounds` > 1: each search's answer in the order they ran
    /// (`None`: never met); [`Capacity::rate`] is then their median, and
    /// `verdict`, `interval`, `knee` and `steps` are the first search's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<Option<f64>>,
}

// ---------------------------------------------------------------------
// Planning and the search.

impl Capacity {
    /// The answer in one sentence, as the table and the notes give it;
    /// with several searches, their spread after it.
    pub fn sentence(&self) -> String {
        let one = self.first_sentence();
        if self.searches.len() < 2 {
            return one;
        }
        let rate = |r: f64| crate::units::format_value(r, "/s");
        let found: Vec<f64> = self.searches.iter().flatten().copied().collect();
        let all: Vec<String> = self
            .searches
            .iter()
            .map(|a| a.map_or_else(|| "never met".into(), rate))
            .collect();
        let median = self.rate.map_or_else(|| "never met".to_string(), rate);
        let spread = match found.len() {
            0 => String::new(),
            1 => format!("; median {median}"),
            _ if self.rate.is_none() => format!("; median {median}"),
            _ => {
                let (lo, hi) = found
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                        (a.min(v), b.max(v))
                    });
                let m = self.rate.unwrap_or(f64::NAN);
                format!(
                    "; median {}, range {} … {} ({:+.0}% … {:+.0}% of the median)",
                    rate(m),
                    rate(lo),
                    rate(hi),
                    (lo / m - 1.0) * 100.0,
                    (hi / m - 1.0) * 100.0
                )
            }
        };
        format!(
            "{} searches: {}{spread}. The first: {one}",
            self.searches.len(),
            all.join(", ")
        )
    }

    /// The first (or only) search's answer in one sentence.
    fn first_sentence(&self) -> String {
        let rate = |r: f64| crate::units::format_value(r, "/s");
        let knee = self
            .knee
            .map(|k| format!("; the highest rate carried without saturation: {}", rate(k)))
            .unwrap_or_default();
        let n = self.steps.len();
        // With several searches `rate` is their median; this sentence is
        // the first search's own answer.
        let first = match self.searches.first() {
            Some(a) => *a,
            None => self.rate,
        };
        match (self.verdict, &self.slo, first) {
            (SearchOutcome::Ladder, _, _) => match self.knee {
                Some(k) => format!(
                    "ladder of {n} rates up to saturation: {} carried without saturation at most",
                    rate(k)
                ),
                None => format!("ladder of {n} rates: every one saturated or failed"),
            },
            (SearchOutcome::NeverMet, Some(slo), _) => format!(
                "capacity for {slo}: never met; even the lightest load tried ({}) broke it ({n} steps){knee}",
                self.interval
                    .and_then(|[_, hi]| hi)
                    .map(rate)
                    .unwrap_or_else(|| "none".into())
            ),
            (SearchOutcome::NeverBroken, Some(slo), Some(r)) => format!(
                "capacity for {slo}: {} — the target was never broken: the system saturated{} before {} crossed the bound, so its throughput is the limit ({n} steps){knee}",
                rate(r),
                self.interval
                    .and_then(|[_, hi]| hi)
                    .map(|h| format!(" at {}", rate(h)))
                    .unwrap_or_else(|| " (or the ladder reached its top)".into()),
                self.metric
            ),
            (SearchOutcome::Met, Some(slo), Some(r)) => format!(
                "capacity for {slo}: {} (met at {}, broken at {}; each step judged at {:.0}% confidence; {n} steps){knee}",
                rate(r),
                rate(r),
                self.interval
                    .and_then(|[_, hi]| hi)
                    .map(rate)
                    .unwrap_or_else(|| "none".into()),
                self.confidence * 100.0
            ),
            _ => format!("capacity search of {n} steps"),
        }
    }
}
