//! Summary statistics of a metric's samples, and latency percentiles from an
//! HDR histogram.
//!
//! Definitions (all documented in the JSON wire format):
//! - `stddev` is the sample standard deviation (n − 1 denominator);
//! - `cv` = stddev / mean;
//! - percentiles interpolate linearly between order statistics (R type 7,
//!   numpy's default), so `p5`/`p95` are exact for the samples given;
//! - `trimmed_mean` drops ⌊n/10⌋ samples from each end (best and worst 10%);
//! - `ci95` is the 95% confidence interval of the mean from Student's t with
//!   n − 1 degrees of freedom (absent when n < 2).

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Summary of a set of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (p50, interpolated).
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for a single sample.
    pub stddev: f64,
    /// Coefficient of variation, stddev / mean (0 when the mean is 0).
    pub cv: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Mean after dropping ⌊n/10⌋ samples at each end.
    pub trimmed_mean: f64,
    /// 95% confidence interval of the mean (Student t), `[low, high]`;
    /// `null` with fewer than two samples.
    pub ci95: Option<[f64; 2]>,
}

/// Errors building a [`Summary`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// No samples.
    #[error("no samples")]
    Empty,
    /// A NaN or infinite sample.
    #[error("non-finite sample {0}")]
    NonFinite(f64),
}

/// Percentile `q` in `[0, 1]` of already sorted data, linear interpolation
/// between closest ranks (R type 7).
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    if sorted.len() == 1 {
        return sorted[0];
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let (a, b, f) = (sorted[lo], sorted[hi], h - lo as f64);
    if (a < 0.0) == (b < 0.0) {
        a + f * (b - a)
    } else {
        // Of opposite signs `b − a` may overflow (±1e308); the weighted
        // sum cannot.
        a * (1.0 - f) + b * f
    }
}

/// The median of `values` (NaN when empty): the one median of the
/// project's statistics.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    percentile_sorted(&s, 0.5)
}

/// Two machine states in positive `values` (a VM's loopback at 1.7 or at
/// 2.9 GB/s for minutes at a time), as the medians of the lower and the
/// upper group; `None` when the values form one group.
///
/// The values (on a log scale, so a state is a ratio) are split at their
/// widest gap. They are two states when each side holds at least two
/// values and a fifth of them, the two medians are at least
/// [`STATE_RATIO`] apart, and the gap is at least [`STATE_GAP_SDS`] times
/// the pooled standard deviation inside the two sides: the gap is then
/// far wider than the spread within either state, which one stray value
/// or a normal spread of 9..30 values does not give.
pub fn two_states(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 4 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let mut logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let n = logs.len();
    let least = 2.max(n.div_ceil(5));
    let (at, gap) = (least..=n - least)
        .map(|k| (k, logs[k] - logs[k - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lo, hi) = logs.split_at(at);
    let ss = |g: &[f64]| {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        g.iter().map(|x| (x - m) * (x - m)).sum::<f64>()
    };
    let sd = ((ss(lo) + ss(hi)) / (n - 2) as f64).sqrt();
    let (ml, mh) = (
        percentile_sorted(lo, 0.5).exp(),
        percentile_sorted(hi, 0.5).exp(),
    );
    (mh / ml >= STATE_RATIO && gap >= STATE_GAP_SDS * sd).then_some((ml, mh))
}

/// The smallest ratio between two states' medians that [`two_states`]
/// reports: smaller steps are noise to a reader.
pub const STATE_RATIO: f64 = 1.15;

/// How many pooled standard deviations the gap between two states must
/// span (see [`two_states`]).
pub const STATE_GAP_SDS: f64 = 4.0;

/// The two-sided Student-t quantile for a `level` confidence interval
/// (e.g. 0.95) with `df` degrees of freedom.
pub fn t_quantile(level: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.5 + level / 2.0),
        Err(_) => f64::NAN,
    }
}

impl Summary {
    /// Summarises `samples` (any order). Rejects an empty set and
    /// non-finite values rather than producing a silent wrong number.
    pub fn new(samples: &[f64]) -> Result<Summary, StatsError> {
        if samples.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(&bad) = samples.iter().find(|v| !v.is_finite()) {
            return Err(StatsError::NonFinite(bad));
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let nf = n as f64;
        // Mean of sorted values: summing in sorted order makes the result
        // independent of the input order (permutation invariant bit-for-bit).
        let mean = s.iter().sum::<f64>() / nf;
        let var = if n > 1 {
            s.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (nf - 1.0)
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let cut = n / 10;
        let kept = &s[cut..n - cut];
        let trimmed_mean = kept.iter().sum::<f64>() / kept.len() as f64;
        let ci95 = if n > 1 {
            let half = t_quantile(0.95, nf - 1.0) * stddev / nf.sqrt();
            Some([mean - half, mean + half])
        } else {
            None
        };
        Ok(Summary {
            n,
            mean,
            median: percentile_sorted(&s, 0.5),
            stddev,
            cv: if mean != 0.0 {
                stddev / mean.abs()
            } else {
                0.0
            },
            min: s[0],
            max: s[n - 1],
            p5: percentile_sorted(&s, 0.05),
            p95: percentile_sorted(&s, 0.95),
            trimmed_mean,
            ci95,
        })
    }
}

/// Latency percentiles of a merged HDR histogram, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Number of recorded operations.
    pub count: u64,
    /// Mean latency.
    pub mean: f64,
    /// Smallest latency.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// 99.99th percentile.
    pub p99_99: f64,
    /// Largest latency.
    pub max: f64,
}

impl LatencySummary {
    /// Summarises a histogram recorded in nanoseconds. `None` when empty.
    pub fn from_histogram_ns(h: &Histogram<u64>) -> Option<LatencySummary> {
        if h.is_empty() {
            return None;
        }
        let s = |ns: u64| ns as f64 * 1e-9;
        Some(LatencySummary {
            count: h.len(),
            mean: h.mean() * 1e-9,
            min: s(h.min()),
            p50: s(h.value_at_quantile(0.5)),
            p90: s(h.value_at_quantile(0.9)),
            p99: s(h.value_at_quantile(0.99)),
            p99_9: s(h.value_at_quantile(0.999)),
            p99_99: s(h.value_at_quantile(0.9999)),
            max: s(h.max()),
        })
    }
}

/// A histogram for nanosecond latencies: 1 ns .. 1 hour, 3 significant
/// digits (0.1% resolution), auto-resizing.
pub fn latency_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("static histogram bounds are valid");
    h.auto(true);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_median_between_the_ends_of_f64_does_not_overflow() {
        // Interpolating `a + f·(b − a)` gave +inf here (b − a overflows).
        assert_eq!(median(&[-1e308, 1e308]), 0.0);
        assert_eq!(median(&[f64::MIN, f64::MAX]), 0.0);
        assert_eq!(median(&[f64::MAX, f64::MAX]), f64::MAX);
        assert_eq!(median(&[-f64::MAX, -f64::MAX, 1.0, 1.0]), -f64::MAX / 2.0);
        assert_eq!(median(&[5e-324, 1e-323]), 5e-324);
        // Ordinary values keep their exact interpolation.
        assert_eq!(median(&[1.0, 2.0]), 1.5);
        assert_eq!(percentile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75);
    }

    #[test]
    fn two_states_are_found_only_where_the_gap_dwarfs_the_spread() {
        // Rounds of loopback TCP in two states (the VM).
        let two = [
            1.45e9, 1.7e9, 1.8e9, 1.6e9, 2.8e9, 2.9e9, 3.1e9, 2.7e9, 3.3e9,
        ];
        let (lo, hi) = two_states(&two).unwrap();
        assert!((1.6e9..=1.7e9).contains(&lo) && (2.8e9..=3.1e9).contains(&hi));
        // One stray value is not a state; nor is a steady spread.
        let stray = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 1.6];
        assert_eq!(two_states(&stray), None);
        let spread: Vec<f64> = (0..30).map(|i| 1.0 + 0.01 * i as f64).collect();
        assert_eq!(two_states(&spread), None);
        // Close states are not named.
        let close = [1.0, 1.001, 0.999, 1.1, 1.101, 1.099];
        assert_eq!(two_states(&close), None);
        assert_eq!(two_states(&[1.0, 2.0, 3.0]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(median(&[]).is_nan());
    }
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn known_data_set() {
        // Hand-computed: data 2,4,4,4,5,5,7,9 — mean 5, sample variance 32/7.
        let d = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::new(&d).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        assert!(close(s.cv, (32.0f64 / 7.0).sqrt() / 5.0));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // p5: h = 7 * 0.05 = 0.35 → 2 + 0.35 * (4 - 2) = 2.7
        assert!(close(s.p5, 2.7));
        // p95: h = 6.65 → 7 + 0.65 * 2 = 8.3
        assert!(close(s.p95, 8.3));
        // n/10 = 0 samples dropped at n = 8.
        assert!(close(s.trimmed_mean, 5.0));
        // t(0.975, 7) = 2.364624; half-width = 2.364624 * 2.138090 / sqrt(8)
        let [lo, hi] = s.ci95.unwrap();
        let half = 2.364_624_251_6 * (32.0f64 / 7.0).sqrt() / 8f64.sqrt();
        assert!((lo - (5.0 - half)).abs() < 1e-6, "{lo}");
        assert!((hi - (5.0 + half)).abs() < 1e-6, "{hi}");
    }

    #[test]
    fn trimmed_mean_drops_ten_percent_each_side() {
        let mut d: Vec<f64> = (1..=10).map(f64::from).collect();
        d[9] = 1000.0; // one wild outlier
        let s = Summary::new(&d).unwrap();
        // drops 1 and 1000 → mean of 2..=9 = 5.5
        assert!(close(s.trimmed_mean, 5.5));
    }

    #[test]
    fn single_sample_and_bad_input() {
        let s = Summary::new(&[3.0]).unwrap();
        assert_eq!((s.median, s.stddev, s.ci95), (3.0, 0.0, None));
        assert_eq!(Summary::new(&[]), Err(StatsError::Empty));
        assert!(matches!(
            Summary::new(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite(_))
        ));
    }

    #[test]
    fn latency_percentiles() {
        let mut h = latency_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap(); // 1 µs .. 1 ms
        }
        let l = LatencySummary::from_histogram_ns(&h).unwrap();
        assert_eq!(l.count, 1000);
        assert!((l.p50 - 500e-6).abs() / 500e-6 < 0.002, "{}", l.p50);
        assert!((l.p99 - 990e-6).abs() / 990e-6 < 0.002, "{}", l.p99);
        assert!(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max);
        assert!(LatencySummary::from_histogram_ns(&latency_histogram()).is_none());
    }

    proptest! {
        #[test]
        fn median_within_min_max(v in prop::collection::vec(-1e9f64..1e9, 1..200)) {
            let s = Summary::new(&v).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.p5 && s.p5 <= s.median && s.median <= s.p95 && s.p95 <= s.max);
            prop_assert!(s.min <= s.trimmed_mean && s.trimmed_mean <= s.max);
            prop_assert!(s.stddev >= 0.0);
            if let Some([lo, hi]) = s.ci95 {
                prop_assert!(lo <= s.mean && s.mean <= hi);
            }
        }

        #[test]
        fn permutation_invariant(v in prop::collection::vec(-1e6f64..1e6, 1..100), seed in any::<u64>()) {
            let mut w = v.clone();
            // Fisher–Yates with a small LCG so the shuffle is reproducible.
            let mut x = seed;
            for i in (1..w.len()).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let j = (x >> 33) as usize % (i + 1);
                w.swap(i, j);
            }
            prop_assert_eq!(Summary::new(&v).unwrap(), Summary::new(&w).unwrap());
        }
    }
}
