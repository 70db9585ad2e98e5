//! What a metric is, apart from its numbers: its [`Direction`] (is more
//! better?), its [`MetricRole`] (what `compare`'s gate does with it) and
//! the theoretical [`Peak`] it is measured against. Plain data below both
//! the plugin contract ([`crate::bench`]) and the result model
//! ([`crate::results`]), which re-export them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a larger value of a metric is better (throughput) or worse
/// (latency, time per operation). `compare` uses it to tell a regression from
/// an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Throughput-like: higher is better.
    Higher,
    /// Latency-like: lower is better.
    Lower,
}

/// What a metric is to a reader and to `compare`'s gate, declared by the
/// benchmark ([`crate::bench::MetricSpec::role`]).
///
/// By default the gate judges headline and secondary metrics (and their
/// latency tails); derived and spread metrics are compared and shown but
/// never fail it, unless a `--threshold` rule names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricRole {
    /// The number the benchmark exists for (its first metric): a rate or a
    /// time per operation.
    Headline,
    /// Another measurement of the same run that can regress on its own
    /// (a mean latency beside a bandwidth, UDP loss, a timer's resolution).
    Secondary,
    /// A function of other numbers of the record rather than a measurement
    /// of its own (`throughput_bits` from `throughput`, `iops` from a
    /// bandwidth and a block size, an LU residual): judging it again would
    /// count one change twice.
    Derived,
    /// A statistic of the spread of the samples (`trial_stddev`, `jitter`):
    /// it says how steady a run was, not how fast.
    Spread,
}

impl MetricRole {
    /// The name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricRole::Headline => "headline",
            MetricRole::Secondary => "secondary",
            MetricRole::Derived => "derived",
            MetricRole::Spread => "spread",
        }
    }

    /// Whether `compare` gates it by default.
    pub fn gated_by_default(self) -> bool {
        matches!(self, MetricRole::Headline | MetricRole::Secondary)
    }
}

impl std::fmt::Display for MetricRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One input of a peak formula.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeakInput {
    /// Value.
    pub value: f64,
    /// Unit (`GHz`, `lanes`).
    pub unit: String,
    /// Where it came from: `cpuid`, `sysfs`, `table`, `measured`, `user`.
    pub source: String,
}

/// A theoretical peak for a metric and how it was derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Peak {
    /// Metric it applies to.
    pub metric: String,
    /// The peak, in the metric's unit.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Human-readable formula (`cores × GHz × lanes × FMA ports × 2`).
    pub formula: String,
    /// The formula's inputs.
    pub inputs: BTreeMap<String, PeakInput>,
    /// `measured median / value`, filled by the runner.
    pub efficiency: Option<f64>,
}
