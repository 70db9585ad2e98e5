//! Thresholds: how large a change must be to count, per metric.
//!
//! A threshold is **relative** (`5%`: of the base median) or **absolute**,
//! in the metric's own unit: `0.5pp` (percentage points, for metrics
//! measured in `%` such as UDP loss) or a time (`20us`, `1ms`, for metrics
//! in seconds). A bare number is an error, since `0.05` could mean 5% or
//! 0.05%.
//!
//! [`CompareOptions::threshold`](super::CompareOptions) is the default;
//! metrics measured in `%` (loss, out-of-order) default to
//! [`PERCENT_METRIC_DEFAULT`] percentage points instead, since a relative
//! change of a value near zero (0% → 0.1% loss) is meaningless.
//! [`ThresholdRule`]s override both for the records and metrics they name;
//! the last matching rule wins. A relative rule that names no metric does
//! not reach metrics in `%` (name the metric to give one a relative
//! threshold).

use std::fmt;

use serde::{Deserialize, Serialize};

use benchsuite_core::units::{parse_duration, parse_percent};

/// The default absolute threshold of metrics measured in `%`, in
/// percentage points.
pub const PERCENT_METRIC_DEFAULT: f64 = 0.5;

/// How large a change must be to count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// A fraction of the base median (`0.05` for 5%).
    Relative(f64),
    /// An amount in the metric's unit.
    Absolute {
        /// The amount.
        value: f64,
        /// The unit it is in (`%` for percentage points, `s`).
        unit: String,
    },
}

impl Tolerance {
    /// Parses `5%`, `0.5pp` or a time (`20us`, `1.5ms`, `2s`).
    pub fn parse(text: &str) -> Result<Tolerance, benchsuite_core::ValueError> {
        Self::parse_text(text).map_err(Into::into)
    }

    fn parse_text(text: &str) -> Result<Tolerance, String> {
        let t = text.trim();
        let how = "write a relative threshold with `%` (`5%`), or an absolute one in the metric's unit: `0.5pp` (percentage points, for metrics in %) or a time (`20us`, for metrics in seconds)";
        let number = |s: &str| -> Result<f64, String> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("`{t}` is not a threshold: {how}"))?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!("`{t}`: a threshold must be 0 or more"));
            }
            Ok(v)
        };
        if t.is_empty() {
            return Err(format!("an empty threshold: {how}"));
        }
        if t.parse::<f64>().is_ok() {
            return Err(format!("`{t}` has no unit: {how}"));
        }
        if t.ends_with('%') {
            if t.starts_with('-') {
                return Err(format!("`{t}`: a threshold must be 0 or more"));
            }
            let v = parse_percent(t).map_err(|e| format!("`{t}`: {e}"))?;
            return Ok(Tolerance::Relative(v));
        }
        if let Some(pp) = t.strip_suffix("pp") {
            return Ok(Tolerance::Absolute {
                value: number(pp)?,
                unit: "%".into(),
            });
        }
        if t.starts_with('-') {
            return Err(format!("`{t}`: a threshold must be 0 or more"));
        }
        match parse_duration(t) {
            Ok(d) => Ok(Tolerance::Absolute {
                value: d.as_secs_f64(),
                unit: "s".into(),
            }),
            Err(_) => Err(format!("`{t}` is not a threshold: {how}")),
        }
    }

    /// Whether the amount is in the metric's unit (always for relative).
    pub fn fits(&self, unit: &str) -> bool {
        match self {
            Tolerance::Relative(_) => true,
            Tolerance::Absolute { unit: u, .. } => u == unit,
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Relative(v) => write!(f, "{}%", trim(v * 100.0)),
            Tolerance::Absolute { value, unit } if unit == "%" => {
                write!(f, "{}pp", trim(*value))
            }
            Tolerance::Absolute { value, unit } => {
                f.write_str(&benchsuite_core::units::format_value(*value, unit))
            }
        }
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A threshold for some records and metrics: `--threshold
/// 'SELECTOR[:METRIC]=VALUE'`. The selector is a module (`net`), a
/// benchmark id (`net.latency`) or a glob (`net.*`); the metric a metric
/// name (`rtt`, which covers its tails `rtt.p99` and `rtt.p99_9` too) or a
/// tail alone (`rtt.p99`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdRule {
    /// Which records: a module, an id or a glob.
    pub selector: String,
    /// Which metric; `None` for all of the records' metrics.
    pub metric: Option<String>,
    /// The threshold.
    pub tolerance: Tolerance,
}

impl ThresholdRule {
    /// Parses `SELECTOR[:METRIC]=VALUE`.
    pub fn parse(text: &str) -> Result<ThresholdRule, benchsuite_core::ValueError> {
        Self::parse_text(text).map_err(Into::into)
    }

    fn parse_text(text: &str) -> Result<ThresholdRule, String> {
        let (target, value) = text.split_once('=').ok_or_else(|| {
            format!("`{text}`: a per-benchmark threshold is SELECTOR[:METRIC]=VALUE, e.g. 'net.*:rtt=10%'")
        })?;
        let (selector, metric) = match target.split_once(':') {
            Some((s, m)) => (s.trim(), Some(m.trim())),
            None => (target.trim(), None),
        };
        if selector.is_empty() || metric.is_some_and(str::is_empty) {
            return Err(format!(
                "`{text}`: name the records (a module, a benchmark id or a glob such as `net.*`) and optionally a metric after `:`"
            ));
        }
        Ok(ThresholdRule {
            selector: selector.to_string(),
            metric: metric.map(str::to_string),
            tolerance: Tolerance::parse(value).map_err(|e| format!("`{text}`: {e}"))?,
        })
    }

    /// Whether the rule covers benchmark `id`.
    pub fn matches_id(&self, id: &str) -> bool {
        let module = id.split('.').next().unwrap_or(id);
        self.selector == "all"
            || self.selector == id
            || self.selector == module
            || benchsuite_core::registry::glob(&self.selector, id)
    }

    /// Whether the rule covers `metric` (a metric name or `name.p99`).
    pub fn matches_metric(&self, metric: &str) -> bool {
        match &self.metric {
            None => true,
            Some(m) => {
                m == metric
                    || metric
                        .strip_prefix(m.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            }
        }
    }
}

impl fmt::Display for ThresholdRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.metric {
            Some(m) => write!(f, "{}:{}={}", self.selector, m, self.tolerance),
            None => write!(f, "{}={}", self.selector, self.tolerance),
        }
    }
}

/// The threshold of one metric: the last matching rule, else the default
/// for its unit.
pub fn tolerance_for<'a>(
    default: f64,
    rules: &'a [ThresholdRule],
    id: &str,
    metric: &str,
    unit: &str,
) -> (Tolerance, Option<&'a ThresholdRule>) {
    // A relative rule for whole records does not reach metrics in %: a
    // relative change of a loss near zero means nothing; name the metric
    // to give one a relative threshold.
    let reaches = |r: &ThresholdRule| {
        r.metric.is_some() || unit != "%" || !matches!(r.tolerance, Tolerance::Relative(_))
    };
    if let Some(rule) = rules
        .iter()
        .rev()
        .find(|r| r.matches_id(id) && r.matches_metric(metric) && reaches(r))
    {
        return (rule.tolerance.clone(), Some(rule));
    }
    let t = if unit == "%" {
        Tolerance::Absolute {
            value: PERCENT_METRIC_DEFAULT,
            unit: "%".into(),
        }
    } else {
        Tolerance::Relative(default)
    };
    (t, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_need_a_unit() {
        assert_eq!(Tolerance::parse("5%"), Ok(Tolerance::Relative(0.05)));
        assert_eq!(Tolerance::parse(" 0.5% "), Ok(Tolerance::Relative(0.005)));
        assert_eq!(
            Tolerance::parse("0.5pp"),
            Ok(Tolerance::Absolute {
                value: 0.5,
                unit: "%".into()
            })
        );
        let us = Tolerance::parse("20us").unwrap();
        assert!(
            matches!(us, Tolerance::Absolute { value, ref unit } if (value - 20e-6).abs() < 1e-15 && unit == "s")
        );
        for bad in ["5", "0.05", "-3%", "-1pp", "five%", "", "3 parsecs"] {
            let e = Tolerance::parse(bad).unwrap_err();
            assert!(e.contains('%') || e.contains("0 or more"), "{bad}: {e}");
        }
        assert!(Tolerance::parse("5").unwrap_err().contains("has no unit"));
        assert_eq!(Tolerance::Relative(0.05).to_string(), "5%");
        assert_eq!(Tolerance::parse("0.5pp").unwrap().to_string(), "0.5pp");
    }

    #[test]
    fn rules_name_records_and_metrics() {
        let r = ThresholdRule::parse("net.*:rtt=10%").unwrap();
        assert_eq!(r.selector, "net.*");
        assert_eq!(r.metric.as_deref(), Some("rtt"));
        assert!(r.matches_id("net.latency") && !r.matches_id("os.syscall"));
        assert!(r.matches_metric("rtt") && r.matches_metric("rtt.p99"));
        assert!(!r.matches_metric("rtt_x") && !r.matches_metric("throughput"));
        let m = ThresholdRule::parse("disk=8%").unwrap();
        assert!(m.matches_id("disk.io") && m.metric.is_none());
        assert_eq!(r.to_string(), "net.*:rtt=10%");
        for bad in ["net.*:rtt", "=5%", "net:=5%", "net=5"] {
            assert!(ThresholdRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_last_matching_rule_wins_and_percent_metrics_are_absolute() {
        let rules = vec![
            ThresholdRule::parse("net=10%").unwrap(),
            ThresholdRule::parse("net.latency:rtt.p99=20%").unwrap(),
        ];
        let t = |id: &str, m: &str, u: &str| tolerance_for(0.05, &rules, id, m, u).0;
        assert_eq!(
            t("os.syscall", "time_per_op", "s"),
            Tolerance::Relative(0.05)
        );
        assert_eq!(t("net.latency", "rtt", "s"), Tolerance::Relative(0.10));
        assert_eq!(t("net.latency", "rtt.p99", "s"), Tolerance::Relative(0.20));
        assert_eq!(
            tolerance_for(0.05, &[], "net.udp_throughput", "loss", "%").0,
            Tolerance::Absolute {
                value: PERCENT_METRIC_DEFAULT,
                unit: "%".into()
            }
        );
    }
}
