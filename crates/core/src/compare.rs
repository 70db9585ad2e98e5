//! Comparison of two reports: a pure function from `(base, new, options)` to a
//! [`Comparison`], which says per metric whether the new run *regressed*,
//! *improved*, stayed *unchanged* or was too *noisy* to tell.
//!
//! # Method
//!
//! Records are matched by benchmark id and parameter values; metrics within a
//! record by name. For each matched metric:
//!
//! 1. **Change** — the relative change of the medians,
//!    `(new.median − base.median) / |base.median|`. The metric's
//!    [`Direction`] says whether that change is worse or better.
//! 2. **Significance** — a Welch t-test on the *medians*. Each side's
//!    standard error is the asymptotic standard error of the median,
//!    `se = √(π/2) · σ̂ / √n` (exact for normal samples), where `σ̂` is the
//!    robust scale `1.4826 · MAD` of the samples when there are at least
//!    five (so one stray sample — an interrupt, a neighbour's burst — does
//!    not hide a real shift), and the summary's `stddev` otherwise. The
//!    statistic `t = (new.median − base.median) / √(se_base² + se_new²)` is
//!    referred to Student's t with Welch–Satterthwaite degrees of freedom,
//!    `df = (se_b² + se_n²)² / (se_b⁴/(n_b − 1) + se_n⁴/(n_n − 1))`, and the
//!    p-value is two-sided.
//!
//!    Why the median and not the mean: benchmark samples have a long right
//!    tail (interrupts, page faults, a neighbour's burst), the median is the
//!    headline number every exporter prints, and the verdict must be about
//!    the number the user sees. The *noise* estimate, on the other hand,
//!    comes from the spread of the samples.
//!    Using only the summary also means a baseline can be edited or
//!    synthesised by hand and still compared.
//! 3. **Verdict** — a change counts only when it is both *large* (beyond the
//!    noise threshold, [`CompareOptions::threshold`], default 5%) and
//!    *significant* (p below [`CompareOptions::alpha`], default 0.05):
//!    - [`Verdict::Regressed`]: worse by more than the threshold, p < alpha;
//!    - [`Verdict::Improved`]: better by more than the threshold, p < alpha;
//!    - [`Verdict::Noisy`]: beyond the threshold but not significant, or no
//!      test was possible (fewer than two samples on a side);
//!    - [`Verdict::Unchanged`]: within the threshold.
//!
//! Edge cases: with `n < 2` on either side there is no test (`p_value` is
//! `None`); when both standard errors are zero the p-value is 0 if the medians
//! differ and 1 if they are equal; when the base median is 0 the relative
//! change is undefined (`change` is `None`) and any difference counts as
//! beyond the threshold.
//!
//! Records that exist on only one side are listed in [`Comparison::missing`]
//! and [`Comparison::added`]; records that did not run (`skipped`/`failed`) on
//! either side, or whose metric changed unit or direction, are listed in
//! [`Comparison::not_comparable`]. None of these is a regression.
//!
//! [`Comparison::context_differences`] lists what differs between the two
//! runs' machines, builds and settings (CPU model, logical CPUs, memory,
//! kernel, governor, virtualization, debug vs release, `--quick`,
//! `--min-sample-time`, `--rounds`): a verdict is only as meaningful as the
//! two runs are alike. It is printed with the verdicts and changes none.
//!
//! ```
//! use benchsuite_core::compare::{compare, CompareOptions};
//! # use benchsuite_core::{Report, host::Host, report::RunConfigRecord};
//! # let report = Report { schema_version: "1.0".into(), tool_version: "0.1.0".into(),
//! #     started_at: String::new(), host: Host::default(),
//! #     config: RunConfigRecord::default(), records: vec![] };
//! let comparison = compare(&report, &report, &CompareOptions::default()).unwrap();
//! assert!(!comparison.has_regression());
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::bench::Direction;
use crate::error::ReportError;
use crate::param::Point;
use crate::report::{Metric, Record, Report, Status, schema_major};

/// Settings of [`compare`]. The CLI maps `--threshold` and `--alpha` onto it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Noise threshold as a fraction of the base median: a relative change
    /// whose magnitude is at most this is `unchanged`, however significant.
    /// The default is `0.05` (5%); the matching flag is `--threshold 5%`.
    pub threshold: f64,
    /// Significance level of the two-sided test: a change beyond the
    /// threshold is `regressed`/`improved` only when its p-value is below
    /// this, and `noisy` otherwise. The default is `0.05`; the matching flag
    /// is `--alpha 0.05`.
    pub alpha: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold: 0.05,
            alpha: 0.05,
        }
    }
}

/// The verdict on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Worse by more than the threshold, and statistically significant.
    Regressed,
    /// Better by more than the threshold, and statistically significant.
    Improved,
    /// Within the noise threshold.
    Unchanged,
    /// Beyond the threshold but not significant (or no test was possible):
    /// re-run with more samples (`--runs`) to tell.
    Noisy,
}

impl Verdict {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Noisy => "noisy",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric present in both reports, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Human-readable key of the record, `id` then `name=value` pairs
    /// (see [`Record::key`]).
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// Parameter values of the sweep point.
    pub params: Point,
    /// Metric name.
    pub metric: String,
    /// Base unit of the medians (`s`, `B/s`).
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// Median of the baseline.
    pub base_median: f64,
    /// Median of the new report.
    pub new_median: f64,
    /// Number of samples in the baseline.
    pub base_n: usize,
    /// Number of samples in the new report.
    pub new_n: usize,
    /// Relative change of the medians, `(new − base) / |base|`; positive
    /// means the value grew, whatever the direction. `None` when the base
    /// median is 0 and the new one is not.
    pub change: Option<f64>,
    /// Two-sided p-value of the Welch t-test on the medians; `None` when a
    /// side has fewer than two samples.
    pub p_value: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom; `None` when no t-test was made
    /// (too few samples, or both sides without spread).
    pub df: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

impl MetricComparison {
    /// True when the new value is worse than the base (in the metric's
    /// direction), however small or insignificant the difference.
    pub fn is_worse(&self) -> bool {
        is_worse(self.direction, self.new_median - self.base_median)
    }
}

/// A record (or one metric of a record) found on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    /// Human-readable key of the record.
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// Parameter values of the sweep point.
    pub params: Point,
    /// The metric, when the record matched but this metric did not; `None`
    /// when the whole record is on one side only.
    pub metric: Option<String>,
}

/// A matched record (or metric) that cannot be compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotComparable {
    /// Human-readable key of the record.
    pub key: String,
    /// Benchmark id.
    pub id: String,
    /// Parameter values of the sweep point.
    pub params: Point,
    /// The metric, when the records ran but this metric differs in unit or
    /// direction; `None` when a record did not run.
    pub metric: Option<String>,
    /// Status of the baseline record.
    pub base_status: Status,
    /// Status of the new record.
    pub new_status: Status,
    /// Why, for humans (`skipped in new: no GPU`).
    pub reason: String,
}

/// The result of [`compare`]: plain data, serialised as JSON by
/// `benchsuite compare --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Schema version of the baseline.
    pub base_schema_version: String,
    /// Schema version of the new report.
    pub new_schema_version: String,
    /// Noise threshold used (fraction).
    pub threshold: f64,
    /// Significance level used.
    pub alpha: f64,
    /// Every metric present in both reports, in baseline order.
    pub metrics: Vec<MetricComparison>,
    /// Records or metrics of the baseline absent from the new report.
    pub missing: Vec<Unmatched>,
    /// Records or metrics of the new report absent from the baseline.
    pub added: Vec<Unmatched>,
    /// Matched records or metrics that could not be compared.
    pub not_comparable: Vec<NotComparable>,
    /// What differs between the two runs' machines, builds or settings and
    /// can move the numbers by itself (`cpu.model: A → B`, a debug build,
    /// `--quick` on one side): a change in a metric may come from these, not
    /// from the code. Informational; it never changes a verdict.
    #[serde(default)]
    pub context_differences: Vec<String>,
}

impl Comparison {
    /// True when any metric [regressed](Verdict::Regressed): the CLI exits
    /// with status 1.
    pub fn has_regression(&self) -> bool {
        self.metrics.iter().any(|m| m.verdict == Verdict::Regressed)
    }

    /// The metrics with this verdict.
    pub fn with_verdict(&self, verdict: Verdict) -> impl Iterator<Item = &MetricComparison> {
        self.metrics.iter().filter(move |m| m.verdict == verdict)
    }

    /// How many metrics have this verdict.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.with_verdict(verdict).count()
    }
}

/// Compares `new` against the baseline `base`. Pure: no I/O, no clock.
///
/// Fails only when the schema major versions differ (or one is not a
/// `MAJOR.MINOR` version), since the records would not mean the same thing.
/// See the [module documentation](self) for the method.
pub fn compare(
    base: &Report,
    new: &Report,
    options: &CompareOptions,
) -> Result<Comparison, ReportError> {
    let (bm, nm) = (
        schema_major(&base.schema_version),
        schema_major(&new.schema_version),
    );
    if bm.is_none() || bm != nm {
        return Err(ReportError::SchemaMismatch {
            base: base.schema_version.clone(),
            new: new.schema_version.clone(),
        });
    }

    let mut out = Comparison {
        base_schema_version: base.schema_version.clone(),
        new_schema_version: new.schema_version.clone(),
        threshold: options.threshold,
        alpha: options.alpha,
        metrics: Vec::new(),
        missing: Vec::new(),
        added: Vec::new(),
        not_comparable: Vec::new(),
        context_differences: context_differences(base, new),
    };

    // Point holds floats, so it is not Ord/Hash: match by equality. Reports
    // hold at most a few thousand records; each new record is used once, so
    // duplicates pair up in order.
    let mut used = vec![false; new.records.len()];
    for b in &base.records {
        let found = new
            .records
            .iter()
            .enumerate()
            .find(|(i, n)| !used[*i] && n.id == b.id && n.params == b.params);
        match found {
            Some((i, n)) => {
                used[i] = true;
                compare_records(b, n, options, &mut out);
            }
            None => out.missing.push(unmatched(b, None)),
        }
    }
    for (n, _) in new.records.iter().zip(&used).filter(|(_, u)| !**u) {
        out.added.push(unmatched(n, None));
    }
    Ok(out)
}

/// The facts of the two reports' hosts, builds and run settings that can
/// move a number on their own, where they differ. Unknown (null) on either
/// side is not a difference; memory sizes within 2% are the same machine
/// (firmware and kernel reserve slightly different amounts).
fn context_differences(base: &Report, new: &Report) -> Vec<String> {
    fn text<T: fmt::Display>(v: &Option<T>) -> Option<String> {
        v.as_ref().map(|v| v.to_string())
    }
    let (b, n) = (&base.host, &new.host);
    let mut out = Vec::new();
    let mut diff = |what: &str, x: Option<String>, y: Option<String>, why: &str| {
        if let (Some(x), Some(y)) = (x, y)
            && x != y
        {
            out.push(format!("{what}: {x} → {y}{why}"));
        }
    };
    diff("cpu.model", text(&b.cpu.model), text(&n.cpu.model), "");
    diff(
        "cpu.microarchitecture",
        text(&b.cpu.microarchitecture),
        text(&n.cpu.microarchitecture),
        "",
    );
    diff(
        "cpu.logical_cpus",
        text(&b.cpu.logical_cpus),
        text(&n.cpu.logical_cpus),
        "",
    );
    diff(
        "cpu.sockets",
        text(&b.cpu.sockets),
        text(&n.cpu.sockets),
        "",
    );
    diff(
        "cpu.governor",
        text(&b.cpu.governor),
        text(&n.cpu.governor),
        "",
    );
    diff(
        "virtualization",
        text(&b.virtualization),
        text(&n.virtualization),
        "",
    );
    diff("kernel", text(&b.kernel), text(&n.kernel), "");
    if let (Some(x), Some(y)) = (b.memory_bytes, n.memory_bytes)
        && (x as f64 - y as f64).abs() > 0.02 * x.max(y) as f64
    {
        diff(
            "memory",
            Some(crate::units::format_size(x)),
            Some(crate::units::format_size(y)),
            "",
        );
    }
    let debug = if b.build.is_debug() || n.build.is_debug() {
        " (a debug build's numbers are not representative)"
    } else {
        ""
    };
    diff(
        "build.profile",
        Some(b.build.profile.clone()),
        Some(n.build.profile.clone()),
        debug,
    );
    diff(
        "benchsuite version",
        Some(base.tool_version.clone()),
        Some(new.tool_version.clone()),
        "",
    );
    let (bc, nc) = (&base.config, &new.config);
    diff(
        "--quick",
        Some(bc.quick.to_string()),
        Some(nc.quick.to_string()),
        " (--quick shrinks working sets and samples)",
    );
    diff(
        "--min-sample-time",
        Some(crate::units::format_seconds(bc.min_sample_time_s)),
        Some(crate::units::format_seconds(nc.min_sample_time_s)),
        "",
    );
    diff(
        "--rounds",
        Some(bc.rounds.to_string()),
        Some(nc.rounds.to_string()),
        "",
    );
    out
}

fn unmatched(r: &Record, metric: Option<&str>) -> Unmatched {
    Unmatched {
        key: r.key(),
        id: r.id.clone(),
        params: r.params.clone(),
        metric: metric.map(str::to_string),
    }
}

fn compare_records(b: &Record, n: &Record, options: &CompareOptions, out: &mut Comparison) {
    let not_comparable = |metric: Option<&str>, reason: String| NotComparable {
        key: b.key(),
        id: b.id.clone(),
        params: b.params.clone(),
        metric: metric.map(str::to_string),
        base_status: b.status,
        new_status: n.status,
        reason,
    };
    if b.status != Status::Ok || n.status != Status::Ok {
        let side = |name: &str, r: &Record| match (r.status, &r.reason) {
            (Status::Ok, _) => None,
            (s, Some(why)) => Some(format!("{} in {name}: {why}", status_name(s))),
            (s, None) => Some(format!("{} in {name}", status_name(s))),
        };
        let reason = [side("base", b), side("new", n)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        out.not_comparable.push(not_comparable(None, reason));
        return;
    }
    for bm in &b.metrics {
        let Some(nm) = n.metric(&bm.name) else {
            out.missing.push(unmatched(b, Some(&bm.name)));
            continue;
        };
        if bm.unit != nm.unit || bm.direction != nm.direction {
            let reason = format!(
                "metric changed from {} ({} is better) to {} ({} is better)",
                bm.unit,
                direction_name(bm.direction),
                nm.unit,
                direction_name(nm.direction)
            );
            out.not_comparable
                .push(not_comparable(Some(&bm.name), reason));
            continue;
        }
        out.metrics.push(compare_metric(b, bm, nm, options));
    }
    for nm in n.metrics.iter().filter(|m| b.metric(&m.name).is_none()) {
        out.added.push(unmatched(n, Some(&nm.name)));
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    }
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

fn compare_metric(
    record: &Record,
    base: &Metric,
    new: &Metric,
    options: &CompareOptions,
) -> MetricComparison {
    let (b, n) = (&base.summary, &new.summary);
    let diff = n.median - b.median;
    let change = if b.median != 0.0 {
        Some(diff / b.median.abs())
    } else if diff == 0.0 {
        Some(0.0)
    } else {
        None
    };
    let test = welch_median_test(b.median, spread(base), b.n, n.median, spread(new), n.n);
    let beyond = match change {
        Some(c) => c.abs() > options.threshold,
        None => true,
    };
    let verdict = match test.p_value {
        _ if !beyond => Verdict::Unchanged,
        Some(p) if p < options.alpha => {
            if is_worse(base.direction, diff) {
                Verdict::Regressed
            } else {
                Verdict::Improved
            }
        }
        _ => Verdict::Noisy,
    };
    MetricComparison {
        key: record.key(),
        id: record.id.clone(),
        params: record.params.clone(),
        metric: base.name.clone(),
        unit: base.unit.clone(),
        direction: base.direction,
        base_median: b.median,
        new_median: n.median,
        base_n: b.n,
        new_n: n.n,
        change,
        p_value: test.p_value,
        df: test.df,
        verdict,
    }
}

/// The noise estimate of a metric: the robust scale `1.4826 · MAD` of its
/// samples (consistent with the standard deviation for normal data, but
/// not inflated by one outlier) when there are at least five samples and
/// their MAD is not zero; the summary's standard deviation otherwise.
fn spread(m: &Metric) -> f64 {
    let s = &m.samples;
    if s.len() >= 5 && s.len() == m.summary.n && s.iter().all(|v| v.is_finite()) {
        let mut v = s.clone();
        v.sort_by(f64::total_cmp);
        let med = crate::stats::percentile_sorted(&v, 0.5);
        let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = crate::stats::percentile_sorted(&dev, 0.5);
        if mad > 0.0 {
            return 1.4826 * mad;
        }
    }
    m.summary.stddev
}

/// The outcome of [`welch_median_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct TestResult {
    p_value: Option<f64>,
    df: Option<f64>,
}

/// Welch's t-test on two medians, each with the asymptotic standard error
/// `√(π/2) · stddev / √n`.
fn welch_median_test(
    base_median: f64,
    base_stddev: f64,
    base_n: usize,
    new_median: f64,
    new_stddev: f64,
    new_n: usize,
) -> TestResult {
    if base_n < 2 || new_n < 2 {
        return TestResult {
            p_value: None,
            df: None,
        };
    }
    let se2 = |sd: f64, n: usize| std::f64::consts::FRAC_PI_2 * sd * sd / n as f64;
    let (vb, vn) = (se2(base_stddev, base_n), se2(new_stddev, new_n));
    let diff = new_median - base_median;
    let var = vb + vn;
    if var <= 0.0 {
        // No spread on either side: any difference is certain.
        return TestResult {
            p_value: Some(if diff == 0.0 { 1.0 } else { 0.0 }),
            df: None,
        };
    }
    let df = var * var / (vb * vb / (base_n - 1) as f64 + vn * vn / (new_n - 1) as f64);
    let t = diff / var.sqrt();
    let p = StudentsT::new(0.0, 1.0, df)
        .ok()
        // Survival function rather than 1 − cdf: keeps tiny p-values exact.
        .map(|dist| (2.0 * dist.sf(t.abs())).min(1.0));
    TestResult {
        p_value: p,
        df: Some(df),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;
    use crate::param::Value;
    use crate::report::RunConfigRecord;
    use crate::stats::Summary;

    /// Ten samples around `center` with a ±1% spread (CV ≈ 0.6%).
    fn steady(center: f64) -> Vec<f64> {
        (0..10)
            .map(|i| center * (1.0 + (i as f64 - 4.5) * 0.002))
            .collect()
    }

    fn metric(name: &str, unit: &str, direction: Direction, samples: &[f64]) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            direction,
            samples: samples.to_vec(),
            timestamps: None,
            rounds: None,
            tails: None,
            summary: Summary::new(samples).unwrap(),
            latency: None,
        }
    }

    fn record(id: &str, threads: u64, metrics: Vec<Metric>) -> Record {
        let mut params = Point::default();
        params.set("threads", Value::Int(threads));
        Record {
            id: id.into(),
            params,
            requested: None,
            status: Status::Ok,
            reason: None,
            iters_per_sample: Some(1000),
            metrics,
            peak: None,
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn report(records: Vec<Record>) -> Report {
        Report {
            schema_version: "1.0".into(),
            tool_version: "0.1.0".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            host: Host::default(),
            config: RunConfigRecord::default(),
            records,
        }
    }

    #[test]
    fn context_differences_name_what_can_move_the_numbers() {
        let mut base = report(Vec::new());
        base.host.cpu.model = Some("Xeon 8480".into());
        base.host.memory_bytes = Some(64 << 30);
        base.host.build.profile = "release".into();
        let same = run(&base, &base.clone());
        assert!(
            same.context_differences.is_empty(),
            "{:?}",
            same.context_differences
        );

        let mut new = base.clone();
        new.host.cpu.model = Some("EPYC 9654".into());
        // 1% less memory is the same machine; unknown is not a difference.
        new.host.memory_bytes = Some((64u64 << 30) / 100 * 99);
        new.host.kernel = Some("6.1.0".into());
        new.host.build.profile = "debug".into();
        new.config.quick = true;
        let c = run(&base, &new);
        let d = c.context_differences.join("\n");
        assert!(d.contains("cpu.model: Xeon 8480 → EPYC 9654"), "{d}");
        assert!(
            d.contains("build.profile: release → debug (a debug build"),
            "{d}"
        );
        assert!(d.contains("--quick: false → true"), "{d}");
        assert!(!d.contains("memory") && !d.contains("kernel"), "{d}");
        assert_eq!(c.context_differences.len(), 3, "{d}");
        // Informational only: no verdict, no regression from it.
        assert!(!c.has_regression());
        new.host.memory_bytes = Some(32 << 30);
        let d = run(&base, &new).context_differences.join("\n");
        assert!(d.contains("memory: 64GiB → 32GiB"), "{d}");
    }

    /// A throughput record and a latency record, with the throughput scaled
    /// by `bw` and the latency by `lat`.
    fn pair(bw: f64, lat: f64) -> Report {
        let scale = |v: Vec<f64>, k: f64| v.into_iter().map(|x| x * k).collect::<Vec<_>>();
        report(vec![
            record(
                "mem.bandwidth",
                1,
                vec![metric(
                    "bandwidth",
                    "B/s",
                    Direction::Higher,
                    &scale(steady(10e9), bw),
                )],
            ),
            record(
                "os.syscall",
                1,
                vec![metric(
                    "time_per_op",
                    "s",
                    Direction::Lower,
                    &scale(steady(50e-9), lat),
                )],
            ),
        ])
    }

    fn verdicts(c: &Comparison) -> Vec<(&str, Verdict)> {
        c.metrics
            .iter()
            .map(|m| (m.metric.as_str(), m.verdict))
            .collect()
    }

    fn run(base: &Report, new: &Report) -> Comparison {
        compare(base, new, &CompareOptions::default()).unwrap()
    }

    #[test]
    fn identical_reports_are_unchanged() {
        let r = pair(1.0, 1.0);
        let c = run(&r, &r);
        assert!(!c.has_regression());
        assert_eq!(
            verdicts(&c),
            [
                ("bandwidth", Verdict::Unchanged),
                ("time_per_op", Verdict::Unchanged)
            ]
        );
        assert_eq!(c.metrics[0].change, Some(0.0));
        assert_eq!(c.metrics[0].p_value, Some(1.0));
        assert_eq!(c.metrics[0].key, "mem.bandwidth threads=1");
        assert!(c.missing.is_empty() && c.added.is_empty() && c.not_comparable.is_empty());
    }

    #[test]
    fn thirty_percent_worse_regresses_in_both_directions() {
        let c = run(&pair(1.0, 1.0), &pair(0.7, 1.3));
        assert!(c.has_regression());
        assert_eq!(
            verdicts(&c),
            [
                ("bandwidth", Verdict::Regressed),
                ("time_per_op", Verdict::Regressed)
            ]
        );
        let bw = &c.metrics[0];
        assert!((bw.change.unwrap() + 0.3).abs() < 1e-9, "{:?}", bw.change);
        assert!(bw.p_value.unwrap() < 1e-6);
        assert!(bw.is_worse());
        assert!((c.metrics[1].change.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(c.count(Verdict::Regressed), 2);
    }

    #[test]
    fn only_the_median_worse_still_regresses() {
        let base = pair(1.0, 1.0);
        let mut new = base.clone();
        new.records[0].metrics[0].summary.median *= 0.7;
        new.records[1].metrics[0].summary.median *= 1.3;
        let c = run(&base, &new);
        assert_eq!(
            verdicts(&c),
            [
                ("bandwidth", Verdict::Regressed),
                ("time_per_op", Verdict::Regressed)
            ]
        );
    }

    #[test]
    fn improvement_is_not_a_regression() {
        let c = run(&pair(1.0, 1.0), &pair(1.3, 0.7));
        assert!(!c.has_regression());
        assert_eq!(
            verdicts(&c),
            [
                ("bandwidth", Verdict::Improved),
                ("time_per_op", Verdict::Improved)
            ]
        );
    }

    #[test]
    fn a_small_significant_change_is_unchanged() {
        // 2% is far outside the 0.6% noise (p tiny) but inside the threshold.
        let c = run(&pair(1.0, 1.0), &pair(0.98, 1.02));
        assert!(c.metrics.iter().all(|m| m.p_value.unwrap() < 0.001));
        assert_eq!(
            verdicts(&c),
            [
                ("bandwidth", Verdict::Unchanged),
                ("time_per_op", Verdict::Unchanged)
            ]
        );
        // The same change counts once the threshold is below it.
        let strict = CompareOptions {
            threshold: 0.01,
            ..CompareOptions::default()
        };
        let c = compare(&pair(1.0, 1.0), &pair(0.98, 1.02), &strict).unwrap();
        assert_eq!(c.count(Verdict::Regressed), 2);
    }

    #[test]
    fn a_big_change_under_huge_noise_is_noisy() {
        // CV 50%, n = 3, median 40% worse.
        let base = report(vec![record(
            "disk.read",
            1,
            vec![metric("bw", "B/s", Direction::Higher, &[0.5, 1.0, 1.5])],
        )]);
        let new = report(vec![record(
            "disk.read",
            1,
            vec![metric("bw", "B/s", Direction::Higher, &[0.3, 0.6, 0.9])],
        )]);
        assert!((base.records[0].metrics[0].summary.cv - 0.5).abs() < 1e-12);
        let c = run(&base, &new);
        assert_eq!(verdicts(&c), [("bw", Verdict::Noisy)]);
        assert!(c.metrics[0].p_value.unwrap() > 0.05);
        assert!(!c.has_regression());
    }

    #[test]
    fn one_stray_sample_does_not_hide_a_real_shift() {
        // Seven tight samples, one of them a 3x outlier (an interrupt): the
        // standard deviation is inflated, the MAD is not, and a 30% worse
        // median is still a regression.
        let base_s = [100.0, 101.0, 99.0, 100.5, 99.5, 300.0, 100.2];
        let new_s: Vec<f64> = base_s.iter().map(|v| v * 1.3).collect();
        let base = report(vec![record(
            "os.syscall",
            1,
            vec![metric("t", "s", Direction::Lower, &base_s)],
        )]);
        let new = report(vec![record(
            "os.syscall",
            1,
            vec![metric("t", "s", Direction::Lower, &new_s)],
        )]);
        assert!(base.records[0].metrics[0].summary.cv > 0.5);
        let c = run(&base, &new);
        assert_eq!(verdicts(&c), [("t", Verdict::Regressed)]);
    }

    #[test]
    fn a_single_sample_cannot_be_tested() {
        let mk = |v: f64| {
            report(vec![record(
                "cpu.flops",
                1,
                vec![metric("flops", "flop/s", Direction::Higher, &[v])],
            )])
        };
        let c = run(&mk(1.0), &mk(0.5));
        let m = &c.metrics[0];
        assert_eq!((m.p_value, m.df, m.verdict), (None, None, Verdict::Noisy));
        // Within the threshold it is still unchanged.
        assert_eq!(
            run(&mk(1.0), &mk(0.99)).metrics[0].verdict,
            Verdict::Unchanged
        );
    }

    #[test]
    fn no_spread_on_either_side() {
        let mk = |v: f64| {
            report(vec![record(
                "cpu.flops",
                1,
                vec![metric("flops", "flop/s", Direction::Higher, &[v, v, v])],
            )])
        };
        let c = run(&mk(1.0), &mk(0.5));
        assert_eq!(c.metrics[0].p_value, Some(0.0));
        assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
        assert_eq!(run(&mk(1.0), &mk(1.0)).metrics[0].p_value, Some(1.0));
    }

    #[test]
    fn zero_base_median_has_no_relative_change() {
        let mk = |v: f64| {
            report(vec![record(
                "net.udp",
                1,
                vec![metric("loss", "%", Direction::Lower, &[v, v, v])],
            )])
        };
        let c = run(&mk(0.0), &mk(5.0));
        assert_eq!(c.metrics[0].change, None);
        assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
        assert_eq!(run(&mk(0.0), &mk(0.0)).metrics[0].change, Some(0.0));
    }

    #[test]
    fn p_value_matches_student_t_tables() {
        // Equal n = 10 and stddev: df = 18 exactly. Place the difference at
        // t = 2.100922 (t₀.₉₇₅ with 18 df from tables): two-sided p = 0.05.
        let se = (std::f64::consts::FRAC_PI_2).sqrt() * 2.0 / 10f64.sqrt();
        let diff = 2.100_922 * (2.0 * se * se).sqrt();
        let r = welch_median_test(100.0, 2.0, 10, 100.0 + diff, 2.0, 10);
        assert!((r.df.unwrap() - 18.0).abs() < 1e-9, "{:?}", r.df);
        assert!((r.p_value.unwrap() - 0.05).abs() < 1e-5, "{:?}", r.p_value);
        // One side without spread: df = n − 1 of the other (t₀.₉₇₅,₉ = 2.262157).
        let se = (std::f64::consts::FRAC_PI_2).sqrt() * 3.0 / 10f64.sqrt();
        let r = welch_median_test(50.0, 0.0, 5, 50.0 - 2.262_157 * se, 3.0, 10);
        assert!((r.df.unwrap() - 9.0).abs() < 1e-9, "{:?}", r.df);
        assert!((r.p_value.unwrap() - 0.05).abs() < 1e-5, "{:?}", r.p_value);
    }

    #[test]
    fn missing_and_added_records_and_metrics_are_listed() {
        let base = pair(1.0, 1.0);
        let mut new = pair(1.0, 1.0);
        new.records.remove(1); // os.syscall missing
        new.records.push(record(
            "mem.bandwidth",
            2,
            vec![metric("bandwidth", "B/s", Direction::Higher, &steady(1.0))],
        ));
        new.records[0]
            .metrics
            .push(metric("iops", "op/s", Direction::Higher, &steady(1.0)));
        let c = run(&base, &new);
        let keys = |v: &[Unmatched]| {
            v.iter()
                .map(|u| (u.key.clone(), u.metric.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&c.missing), [("os.syscall threads=1".into(), None)]);
        assert_eq!(
            keys(&c.added),
            [
                ("mem.bandwidth threads=1".into(), Some("iops".into())),
                ("mem.bandwidth threads=2".into(), None)
            ]
        );
        assert_eq!(verdicts(&c), [("bandwidth", Verdict::Unchanged)]);
    }

    #[test]
    fn records_that_did_not_run_are_not_comparable() {
        let base = pair(1.0, 1.0);
        let mut new = pair(1.0, 1.0);
        let p = new.records[1].params.clone();
        new.records[1] = Record::skipped("os.syscall", p, "no permission");
        let c = run(&base, &new);
        assert_eq!(c.metrics.len(), 1);
        let nc = &c.not_comparable[0];
        assert_eq!(
            (nc.base_status, nc.new_status, nc.reason.as_str()),
            (Status::Ok, Status::Skipped, "skipped in new: no permission")
        );
        assert!(!c.has_regression());
    }

    #[test]
    fn a_changed_unit_is_not_comparable() {
        let base = pair(1.0, 1.0);
        let mut new = pair(0.5, 1.0);
        new.records[0].metrics[0].unit = "op/s".into();
        let c = run(&base, &new);
        assert_eq!(c.not_comparable.len(), 1);
        assert_eq!(c.not_comparable[0].metric.as_deref(), Some("bandwidth"));
        assert!(!c.has_regression());
    }

    #[test]
    fn schema_major_mismatch_is_an_error() {
        let base = pair(1.0, 1.0);
        let mut new = base.clone();
        new.schema_version = "2.0".into();
        assert!(matches!(
            compare(&base, &new, &CompareOptions::default()),
            Err(ReportError::SchemaMismatch { .. })
        ));
        // A minor difference is fine.
        new.schema_version = "1.3".into();
        assert!(compare(&base, &new, &CompareOptions::default()).is_ok());
    }

    #[test]
    fn comparison_round_trips_through_json() {
        let c = run(&pair(1.0, 1.0), &pair(0.7, 1.3));
        let j = serde_json::to_string(&c).unwrap();
        assert!(j.contains(r#""verdict":"regressed""#), "{j}");
        let back: Comparison = serde_json::from_str(&j).unwrap();
        assert_eq!(verdicts(&back), verdicts(&c));
        assert_eq!(back.metrics[1].params, c.metrics[1].params);
        assert!((back.metrics[1].change.unwrap() - 0.3).abs() < 1e-9);
    }
}
