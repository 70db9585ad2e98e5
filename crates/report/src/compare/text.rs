//! How a compared metric reads: its change with its interval, its worst
//! case, percentages that are never capped.

use benchsuite_core::bench::Direction;

use super::model::MetricComparison;
use super::rules::Tolerance;

impl MetricComparison {
    /// The change with its interval, as printed: `+7.2% [+5.1%, +9.4%]`,
    /// or in the metric's unit under an absolute threshold.
    pub fn change_text(&self) -> String {
        let Some(c) = self.change else {
            return "-".into();
        };
        match self.interval {
            // Whole percent (or pp) where the interval is ±10 or wider: a
            // tenth tells nothing there.
            Some([lo, hi]) if self.coarse((hi - lo) / 2.0) => format!(
                "{} [{}, {}]",
                self.bound_text(c),
                self.bound_text(lo),
                self.bound_text(hi)
            ),
            Some([lo, hi]) => format!(
                "{} [{}, {}]",
                self.value_text(c),
                self.value_text(lo),
                self.value_text(hi)
            ),
            None => self.value_text(c),
        }
    }

    /// Whether `v` (on this metric's scale) is ±10% (or 10pp) or more.
    fn coarse(&self, v: f64) -> bool {
        match self.tolerance {
            Tolerance::Relative(_) => v.abs() >= 0.1,
            Tolerance::Absolute { .. } => self.unit == "%" && v.abs() >= 10.0,
        }
    }

    /// A value as [`value_text`](Self::value_text), in whole percent (or
    /// pp) from ±10 on.
    fn bound_text(&self, v: f64) -> String {
        match self.tolerance {
            Tolerance::Relative(_) if self.coarse(v) && (v * 100.0).abs() < 1e4 => {
                format!("{:+.0}%", v * 100.0)
            }
            Tolerance::Absolute { .. } if self.coarse(v) => format!("{v:+.0}pp"),
            _ => self.value_text(v),
        }
    }

    /// The worst change this evidence leaves open, signed (`+42.7%` for a
    /// time, `-25.1%` for a bandwidth): [`unchanged_above`] on the worse
    /// side; empty when not judged.
    ///
    /// [`unchanged_above`]: Self::unchanged_above
    pub fn worst_text(&self) -> String {
        let Some(a) = self.unchanged_above else {
            return String::new();
        };
        self.bound_text(match self.direction {
            Direction::Lower => a,
            Direction::Higher => -a,
        })
    }

    /// A change (or a bound of one) on this metric's scale: `+7.2%`,
    /// `+0.40pp`, `+1.2 µs`.
    fn value_text(&self, v: f64) -> String {
        match self.tolerance {
            Tolerance::Relative(_) => percent_text(v),
            Tolerance::Absolute { .. } if self.unit == "%" => format!("{v:+.2}pp"),
            Tolerance::Absolute { .. } => {
                let s = benchsuite_core::units::format_value(v.abs(), &self.unit);
                format!("{}{s}", if v < 0.0 { "-" } else { "+" })
            }
        }
    }
}

/// A relative change (`0.072`) as a signed percentage, `+7.2%`; past
/// ±10,000% in scientific notation (`+2.8e13%`), never capped.
pub fn percent_text(v: f64) -> String {
    let p = v * 100.0;
    if p.abs() < 1e4 || !p.is_finite() {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.1e}%")
    }
}
