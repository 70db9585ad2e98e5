//! Thresholds a machine can judge at, fitted from **A/A jobs**: interleaved
//! runs of two copies of one build (`compare --interleave A A`), whose
//! paired rounds show how far adjacent rounds of one build differ on this
//! machine — the noise the confirmation ([`super::confirm`]) must see
//! through.
//!
//! A metric whose adjacent rounds differ by 18% (a 2-vCPU guest's `os.call`
//! as its host core changes state) cannot be called unchanged within 5%
//! by 15 pairs: job after job it ends undecided, and a CI job that is
//! undecided every time teaches its readers to ignore it. Its threshold
//! has to be one this machine can decide, chosen before the job is seen,
//! from data the job does not contain. [`calibrate`] computes, per
//! benchmark and metric, the smallest threshold at which a confirmation
//! with the given budget calls an unchanged build `unchanged` in all but
//! `undecided / K` of A/A jobs (K gated metrics share the job's
//! `undecided` rate), never below the default threshold:
//!
//! - each calibration job gives each gated metric the standard error of
//!   its paired estimate (the 10% trimmed mean of the round differences,
//!   Yuen's variance, as the paired rule computes it), scaled to the
//!   budget's pair count;
//! - a job ends the metric undecided when the change's worse-side bound
//!   at the last look, `d + t·SE`, exceeds the threshold `τ`; with `d`
//!   normal around zero that happens with probability `P(Z > τ/SE − t)`;
//! - `τ` is the smallest value at which that probability, averaged over
//!   the calibration jobs (so a job with noisier pairs weighs as it
//!   happened), is at most `undecided / K`.
//!
//! The false-alarm side is untouched: a threshold only decides what size
//! of change matters; `alpha` still bounds the chance of calling an
//! unchanged build regressed. What a raised threshold costs is stated in
//! the file it is written to: a change smaller than it is called
//! unchanged.

use benchsuite_core::bench::Direction;
use benchsuite_core::results::Report;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::confirm::looks;
use super::rules::{PERCENT_METRIC_DEFAULT, ThresholdRule, Tolerance};
use super::{CompareError, CompareOptions, GateRule, Verdict, compare};

/// One A/A job: the two pooled reports of `compare --interleave A A`
/// (`interleave-base.json`, `interleave-new.json`).
#[derive(Debug, Clone, Copy)]
pub struct AaJob<'a> {
    /// How messages name it (its directory).
    pub name: &'a str,
    /// The first copy's pooled rounds.
    pub base: &'a Report,
    /// The second copy's pooled rounds.
    pub new: &'a Report,
}

/// The default share of A/A jobs a calibration lets end undecided: 3%,
/// below the 5% a CI job can live with, because the noise drifts between
/// the calibration and the jobs it gates (fitted at 5% on one 2-vCPU
/// guest's 40 A/A jobs, 4 of 76 later jobs, 5.3%, ended undecided).
pub const DEFAULT_UNDECIDED: f64 = 0.03;

/// What [`calibrate`] aims at.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateOptions {
    /// The confirmation's budget the thresholds are for (`--budget`).
    pub budget: usize,
    /// The share of A/A jobs allowed to end undecided (0.03: 3%), spread
    /// evenly over the gated metrics ([`DEFAULT_UNDECIDED`]).
    pub undecided: f64,
    /// The least relative threshold written (the default threshold).
    pub floor: f64,
    /// The least threshold of a latency tail.
    pub tail_floor: f64,
    /// The job's false-alarm level and the per-metric miss level the
    /// confirmation will judge at.
    pub alpha: f64,
    /// See [`CompareOptions::beta`].
    pub beta: f64,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        let o = CompareOptions::default();
        CalibrateOptions {
            budget: super::confirm::DEFAULT_BUDGET,
            undecided: DEFAULT_UNDECIDED,
            floor: o.threshold,
            tail_floor: o.tail_threshold,
            alpha: o.alpha,
            beta: o.beta,
        }
    }
}

/// One benchmark metric's fitted threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedThreshold {
    /// The benchmark id (the rule's selector).
    pub id: String,
    /// The metric (or tail, `rtt.p99`).
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// The threshold the noise needs: relative (`0.24`) or, for a metric
    /// in %, in percentage points.
    pub fitted: Tolerance,
    /// The least threshold (the default one, or the tails' default).
    pub floor: Tolerance,
    /// What is written: the fitted one, or the floor where that is larger.
    pub threshold: Tolerance,
    /// The typical (median over the jobs) standard deviation of one pair's
    /// difference: relative (on a log scale) or in the unit.
    pub pair_sd: f64,
    /// The largest of the jobs' pair standard deviations.
    pub pair_sd_max: f64,
    /// How many job-records it rests on.
    pub samples: usize,
}

impl FittedThreshold {
    /// Whether the noise lifts it above the floor.
    pub fn raised(&self) -> bool {
        self.threshold != self.floor
    }

    /// The rule `--threshold ID:METRIC=VALUE` it stands for.
    pub fn rule(&self) -> ThresholdRule {
        ThresholdRule {
            selector: self.id.clone(),
            metric: Some(self.metric.clone()),
            tolerance: self.threshold.clone(),
        }
    }
}

/// The thresholds fitted from a set of A/A jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// How many A/A jobs.
    pub jobs: usize,
    /// The testbed they ran on (CPU model and count), as `compare` names
    /// one.
    pub testbed: String,
    /// The fewest and most pairs a job had.
    pub pairs: (usize, usize),
    /// What was aimed at.
    pub options: CalibrateOptions,
    /// How many gated metrics share the undecided rate.
    pub metrics_sharing: usize,
    /// Per benchmark id and metric, in the jobs' order.
    pub thresholds: Vec<FittedThreshold>,
}

impl Calibration {
    /// The rules the thresholds above the floor stand for (what `compare
    /// --thresholds FILE` applies).
    pub fn rules(&self) -> Vec<ThresholdRule> {
        self.thresholds
            .iter()
            .filter(|t| t.raised())
            .map(FittedThreshold::rule)
            .collect()
    }

    /// The thresholds file: TOML a person can read and edit; each raised
    /// threshold under `[thresholds]` as `"ID:METRIC" = "VALUE"` with the
    /// noise it came from, the others as comments.
    pub fn to_toml(&self, tool_version: &str) -> String {
        let o = &self.options;
        let mut s = format!(
            "# Per-metric thresholds for `benchsuite compare --thresholds FILE`, fitted by\n\
             # `benchsuite calibrate` (benchsuite {tool_version}) from {jobs} A/A jobs (two copies of one\n\
             # build interleaved, {lo}-{hi} pairs each) on this testbed. Each is the smallest change a\n\
             # confirmation with --budget {budget} can tell from no change: at it, an unchanged build\n\
             # ends undecided in at most {per:.2}% of jobs per metric ({und:.1}% of jobs over {k}\n\
             # gated metrics), never below {floor} ({tail} for tails). A change smaller than a\n\
             # threshold here is called unchanged: that is what this machine's noise allows.\n\
             # Refit when the machine type, the benchmarks or the budget change; edit freely.\n\n",
            jobs = self.jobs,
            lo = self.pairs.0,
            hi = self.pairs.1,
            budget = o.budget,
            per = 100.0 * o.undecided / self.metrics_sharing.max(1) as f64,
            und = 100.0 * o.undecided,
            k = self.metrics_sharing,
            floor = Tolerance::Relative(o.floor),
            tail = Tolerance::Relative(o.tail_floor),
        );
        s.push_str(&format!("testbed = {}\n", toml_string(&self.testbed)));
        s.push_str(&format!("budget = {}\n", o.budget));
        s.push_str(&format!(
            "undecided = \"{}\"\n",
            Tolerance::Relative(o.undecided)
        ));
        s.push_str(&format!("jobs = {}\n\n[thresholds]\n", self.jobs));
        for t in &self.thresholds {
            let noise = match t.fitted {
                Tolerance::Relative(_) => format!(
                    "one pair's difference: sd {:.1}%, {:.1}% in the noisiest job",
                    100.0 * t.pair_sd.exp_m1(),
                    100.0 * t.pair_sd_max.exp_m1()
                ),
                Tolerance::Absolute { .. } => format!(
                    "one pair's difference: sd {:.2}pp, {:.2}pp in the noisiest job",
                    t.pair_sd, t.pair_sd_max
                ),
            };
            let key = toml_string(&format!("{}:{}", t.id, t.metric));
            if t.raised() {
                s.push_str(&format!(
                    "{key} = {}  # {noise}\n",
                    toml_string(&t.threshold.to_string())
                ));
            } else {
                s.push_str(&format!(
                    "# {key}: needs {} ({noise}): the floor {} holds\n",
                    t.fitted, t.threshold
                ));
            }
        }
        s
    }
}

/// The testbed a report ran on, as a thresholds file names it: CPU
/// model, microarchitecture and count.
pub fn testbed(report: &Report) -> String {
    super::testbed_name(report)
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Why a calibration cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    /// No jobs, or none with a gated metric judged on paired rounds.
    #[error(
        "no A/A job has a gated metric judged on paired rounds (each job needs its two builds' interleaved reports, 3 or more rounds each)"
    )]
    Nothing,
    /// A job's reports could not be compared.
    #[error("{job}: {source}")]
    Compare {
        /// The job.
        job: String,
        /// Why.
        source: CompareError,
    },
    /// The jobs ran on different testbeds.
    #[error(
        "{job} ran on another testbed than {first} ({why}): calibrate one machine type at a time"
    )]
    Testbeds {
        /// The first job.
        first: String,
        /// The job that differs.
        job: String,
        /// How.
        why: String,
    },
    /// The options are out of range.
    #[error("{0}")]
    Options(String),
}

/// The paired evidence of one metric of one record in one job.
struct Evidence {
    id: String,
    metric: String,
    unit: String,
    direction: Direction,
    relative: bool,
    tail: bool,
    /// The standard error of one pair's difference (working scale), i.e.
    /// the estimate's standard error times √pairs.
    pair_sd: f64,
}

/// Fits the thresholds (see the [module documentation](self)).
pub fn calibrate(
    jobs: &[AaJob<'_>],
    options: &CalibrateOptions,
) -> Result<Calibration, CalibrateError> {
    if options.budget < super::interval::MIN_SAMPLES {
        return Err(CalibrateError::Options(format!(
            "a budget of {} pairs: at least {} are needed",
            options.budget,
            super::interval::MIN_SAMPLES
        )));
    }
    if !(options.undecided > 0.0 && options.undecided < 1.0) {
        return Err(CalibrateError::Options(format!(
            "an undecided share of {}: give one between 0 and 100%",
            options.undecided
        )));
    }
    let first = jobs.first().ok_or(CalibrateError::Nothing)?;
    for j in &jobs[1..] {
        if let Some(why) = super::testbed_difference(first.base, j.base) {
            return Err(CalibrateError::Testbeds {
                first: first.name.to_string(),
                job: j.name.to_string(),
                why,
            });
        }
    }
    let compare_options = CompareOptions {
        paired: true,
        rule: Some(GateRule::Paired),
        alpha: options.alpha,
        beta: options.beta,
        ..CompareOptions::default()
    };
    let mut evidence: Vec<Evidence> = Vec::new();
    let (mut lo, mut hi) = (usize::MAX, 0);
    let mut sharing = 0;
    for j in jobs {
        let c =
            compare(j.base, j.new, &compare_options).map_err(|source| CalibrateError::Compare {
                job: j.name.to_string(),
                source,
            })?;
        let mut gated = 0;
        for m in c.metrics.iter().filter(|m| m.gated) {
            gated += 1;
            if m.verdict == Verdict::NotJudged {
                continue;
            }
            let (Some([a, b]), Some(level)) = (m.interval, m.level) else {
                continue;
            };
            let pairs = m.new_rounds.min(m.base_rounds);
            if pairs < super::interval::MIN_SAMPLES {
                continue;
            }
            let relative = matches!(m.tolerance, Tolerance::Relative(_));
            let width = if relative {
                (b.ln_1p() - a.ln_1p()).abs()
            } else {
                (b - a).abs()
            };
            let t = match m.df {
                Some(df) => StudentsT::new(0.0, 1.0, df.min(1e6))
                    .map(|d| d.inverse_cdf(1.0 - level))
                    .unwrap_or(f64::NAN),
                None => 1.0,
            };
            let se = if width == 0.0 { 0.0 } else { width / (2.0 * t) };
            if !se.is_finite() {
                continue;
            }
            lo = lo.min(pairs);
            hi = hi.max(pairs);
            evidence.push(Evidence {
                id: m.id.clone(),
                metric: m.metric.clone(),
                unit: m.unit.clone(),
                direction: m.direction,
                relative,
                tail: m.metric.contains(".p99"),
                pair_sd: se * (pairs as f64).sqrt(),
            });
        }
        sharing = usize::max(sharing, gated);
    }
    if evidence.is_empty() {
        return Err(CalibrateError::Nothing);
    }
    // The confirmation's last look at the budget: its t quantile (Yuen's
    // degrees of freedom at 10% trimming) at its share of beta.
    let b = options.budget;
    let df =
        (b - 2 * ((super::judge::TRIM * b as f64).floor() as usize).min((b - 2) / 2)) as f64 - 1.0;
    let t_last = StudentsT::new(0.0, 1.0, df)
        .map(|d| d.inverse_cdf(1.0 - options.beta / looks(b).len() as f64))
        .unwrap_or(f64::INFINITY);
    let per_metric = options.undecided / sharing.max(1) as f64;
    let normal = Normal::new(0.0, 1.0).expect("a standard normal");
    let mut thresholds: Vec<FittedThreshold> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for e in &evidence {
        if seen.iter().any(|(i, m)| *i == e.id && *m == e.metric) {
            continue;
        }
        seen.push((e.id.clone(), e.metric.clone()));
        let mine: Vec<&Evidence> = evidence
            .iter()
            .filter(|x| x.id == e.id && x.metric == e.metric && x.relative == e.relative)
            .collect();
        let ses: Vec<f64> = mine.iter().map(|x| x.pair_sd / (b as f64).sqrt()).collect();
        // The chance that an A/A job ends this metric undecided at `tau`,
        // averaged over the jobs.
        let undecided_at = |tau: f64| {
            ses.iter()
                .map(|&se| {
                    if se == 0.0 {
                        0.0
                    } else {
                        normal.sf(tau / se - t_last)
                    }
                })
                .sum::<f64>()
                / ses.len() as f64
        };
        let mut top = ses.iter().copied().fold(0.0, f64::max) * (t_last + 10.0) + 1e-12;
        while undecided_at(top) > per_metric {
            top *= 2.0;
        }
        let (mut a, mut z) = (0.0, top);
        for _ in 0..100 {
            let mid = 0.5 * (a + z);
            if undecided_at(mid) > per_metric {
                a = mid;
            } else {
                z = mid;
            }
        }
        let tau = z;
        let (fitted, floor) = if e.relative {
            // The working scale is logarithmic: the threshold on the worse
            // side is `tau` away.
            let t = match e.direction {
                Direction::Lower => tau.exp_m1(),
                Direction::Higher => -(-tau).exp_m1(),
            };
            let floor = if e.tail {
                options.tail_floor
            } else {
                options.floor
            };
            (t, floor)
        } else {
            (tau, PERCENT_METRIC_DEFAULT)
        };
        // Whole tenths of a percent (or hundredths of a pp) upward: a
        // threshold people read, never below what the noise needs.
        let up = |v: f64, step: f64| ((v / step - 1e-9).ceil() * step).max(0.0);
        let (fitted, threshold, floor) = if e.relative {
            let f = up(fitted, 0.001);
            (
                Tolerance::Relative(f),
                Tolerance::Relative(f.max(floor)),
                Tolerance::Relative(floor),
            )
        } else {
            let f = up(fitted, 0.01);
            let abs = |v| Tolerance::Absolute {
                value: v,
                unit: e.unit.clone(),
            };
            (abs(f), abs(f.max(floor)), abs(floor))
        };
        let mut sds: Vec<f64> = mine.iter().map(|x| x.pair_sd).collect();
        sds.sort_by(f64::total_cmp);
        thresholds.push(FittedThreshold {
            id: e.id.clone(),
            metric: e.metric.clone(),
            unit: e.unit.clone(),
            direction: e.direction,
            fitted,
            floor,
            threshold,
            pair_sd: benchsuite_core::stats::median(&sds),
            pair_sd_max: *sds.last().expect("evidence"),
            samples: sds.len(),
        });
    }
    Ok(Calibration {
        jobs: jobs.len(),
        testbed: testbed(first.base),
        pairs: (lo, hi),
        options: options.clone(),
        metrics_sharing: sharing,
        thresholds,
    })
}

#[cfg(test)]
mod tests;
