//! Judging one metric: its quantities (the samples and each latency
//! tail) in the baselines and in the new report, as a prediction of one
//! new run from the baselines ([`estimate`]), then a verdict at the level
//! the family of judged metrics leaves it ([`verdict`]).

use statrs::distribution::{ContinuousCDF, StudentsT};

use benchsuite_core::bench::Direction;
use benchsuite_core::report::{Metric, MetricRole, Record};
use benchsuite_core::stats::median;

use super::*;

/// One run's samples of a quantity, with their rounds.
#[derive(Clone, Copy)]
pub(super) struct Series<'a> {
    samples: &'a [f64],
    rounds: Option<&'a [usize]>,
}

/// One judged quantity: a metric's samples or one of its tails, in every
/// baseline that has it (the newest first) and in the new report.
pub(super) struct Quantity<'a> {
    pub(super) name: String,
    unit: &'a str,
    direction: Direction,
    pub(super) role: MetricRole,
    tail: bool,
    base: Vec<Series<'a>>,
    new: Series<'a>,
}

/// The tails the base judged that the new report no longer has.
pub(super) fn lost_tails(b: &Metric, n: &Metric) -> Vec<String> {
    let names = metric_names(n);
    metric_names(b)
        .into_iter()
        .skip(1)
        .filter(|t| !names.contains(t))
        .collect()
}

/// The quantities of metric `b` of the newest baseline, `older` (the same
/// metric in older baselines, newest first) and `n` of the new report.
pub(super) fn quantities<'a>(
    b: &'a Metric,
    older: &[&'a Metric],
    n: &'a Metric,
    role: MetricRole,
) -> Vec<Quantity<'a>> {
    let series = |m: &'a Metric, samples: &'a [f64]| Series {
        samples,
        rounds: m.rounds.as_deref(),
    };
    let q = |name: String, tail: bool, base: Vec<Series<'a>>, new: Series<'a>| Quantity {
        name,
        unit: &b.unit,
        direction: b.direction,
        role,
        tail,
        base,
        new,
    };
    let mut base = vec![series(b, &b.samples)];
    base.extend(older.iter().map(|m| series(m, &m.samples)));
    let mut v = vec![q(b.name.clone(), false, base, series(n, &n.samples))];
    type Pick = fn(&SampleTails) -> Option<&Vec<f64>>;
    let tails: [(&str, Pick); 2] = [("p99", |t| t.p99.as_ref()), ("p99_9", |t| t.p99_9.as_ref())];
    for (suffix, pick) in tails {
        let of = |m: &'a Metric| m.tails.as_ref().and_then(pick).map(|x| series(m, x));
        if let (Some(x), Some(y)) = (of(b), of(n)) {
            // A tail is judged where both sides recorded it for every
            // sample (each sample held enough operations for it); older
            // baselines without it add nothing to it.
            let mut base = vec![x];
            base.extend(older.iter().filter_map(|m| of(m)));
            v.push(q(format!("{}.{suffix}", b.name), true, base, y));
        }
    }
    v
}

/// What one quantity's judgement needs once the family's levels are
/// known: the change in the working scale and its predictive variance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Estimate {
    /// `new − centre of the baselines` in the working scale (logarithms
    /// under a relative threshold where every value is positive).
    d: f64,
    /// The variance of `d` predicted for one new run.
    var: f64,
    /// Its degrees of freedom (Welch–Satterthwaite).
    df: f64,
    /// Whether the working scale is logarithmic.
    log: bool,
    /// The baselines' centre in the metric's unit (for a relative change
    /// on a linear scale).
    centre: f64,
    /// The threshold, in the change's scale (a fraction under a relative
    /// threshold, the metric's unit under an absolute one).
    tol: f64,
    /// Whether the threshold is relative.
    relative: bool,
    /// How far the new run's nearest round lies beyond the reach of
    /// everything the history has seen (each baseline run's median and
    /// each round level seen in two baseline runs, each reaching three
    /// standard deviations of a round's median), in the working scale;
    /// `None` with one baseline. The band rule calls a change only where
    /// it is positive: no round of the new run is explained by a level the
    /// history was seen at.
    unexplained: Option<f64>,
}

impl Estimate {
    /// `d` turned so that positive is worse.
    fn worse(&self, direction: Direction) -> f64 {
        match direction {
            Direction::Lower => self.d,
            Direction::Higher => -self.d,
        }
    }

    /// The threshold on the worse side, in the working scale.
    fn worse_tol(&self, direction: Direction) -> f64 {
        self.side_tol(direction == Direction::Lower)
    }

    /// The threshold in the working scale on the side where the value
    /// grows (`up`) or shrinks, as a positive distance.
    fn side_tol(&self, up: bool) -> f64 {
        match (self.log, up) {
            (true, true) => self.tol.ln_1p(),
            (true, false) => -(-self.tol).ln_1p(),
            (false, _) if self.relative => self.tol * self.centre.abs(),
            (false, _) => self.tol,
        }
    }

    /// Under the band rule: whether no round of the new run is explained
    /// by a level the history was seen at; true with one baseline.
    fn past_history(&self) -> bool {
        self.unexplained.is_none_or(|g| g > 0.0)
    }
}

/// Builds the comparison of one quantity and, when it can be judged, its
/// estimate (the verdict waits for the family's levels: [`verdict`]).
pub(super) fn estimate(
    record: &Record,
    q: &Quantity<'_>,
    options: &CompareOptions,
    context: Option<String>,
) -> (MetricComparison, Option<Estimate>) {
    let (tolerance, rule) = rules::tolerance_for(
        options.threshold,
        &options.rules,
        &record.id,
        &q.name,
        q.unit,
    );
    let tolerance = match (rule, q.tail) {
        (None, true) => Tolerance::Relative(options.tail_threshold),
        _ => tolerance,
    };
    // A rule naming the metric gates it whatever its role.
    let named = rule.is_some_and(|r| r.metric.is_some());
    let rounds_of = |s: &Series<'_>| s.rounds.map_or(1, |r| r.len().max(1));
    let newest = &q.base[0];
    let mut mc = MetricComparison {
        key: record.requested_key(),
        id: record.id.clone(),
        params: record.requested_params().clone(),
        metric: q.name.clone(),
        unit: q.unit.to_string(),
        direction: q.direction,
        role: Some(q.role),
        gated: q.role.gated_by_default() || named,
        base_median: median(newest.samples),
        new_median: median(q.new.samples),
        base_n: newest.samples.len(),
        new_n: q.new.samples.len(),
        base_rounds: rounds_of(newest),
        new_rounds: rounds_of(&q.new),
        history_runs: 1,
        between_cv: None,
        between_source: None,
        tolerance: tolerance.clone(),
        change: None,
        interval: None,
        level: None,
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
        (mc, None)
    };
    let relative = matches!(tolerance, Tolerance::Relative(_));
    let positive = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    let log = relative && positive(q.new.samples) && q.base.iter().all(|s| positive(s.samples));
    let scale = |v: &[f64]| -> Vec<f64> {
        if log {
            v.iter().map(|x| x.ln()).collect()
        } else {
            v.to_vec()
        }
    };
    let too_few = |side: &str, k: usize| {
        format!(
            "{side} has {k} sample(s) or round(s); at least {} are needed to judge (--runs)",
            interval::MIN_SAMPLES
        )
    };
    let new_side = match interval::side(&scale(q.new.samples), q.new.rounds) {
        Ok(s) => s,
        Err(interval::Unjudged::NotFinite) => {
            return not_judged(mc, "a sample is not a finite number".into());
        }
        Err(interval::Unjudged::TooFewSamples(k)) => return not_judged(mc, too_few("new", k)),
    };
    // The newest baseline must be judgeable; an older one that is not
    // (a run with fewer samples) is left out of this quantity.
    let mut base_sides = Vec::with_capacity(q.base.len());
    for (i, s) in q.base.iter().enumerate() {
        match interval::side(&scale(s.samples), s.rounds) {
            Ok(side) => base_sides.push((side, s)),
            Err(_) if i > 0 => {}
            Err(interval::Unjudged::NotFinite) => {
                return not_judged(mc, "a sample is not a finite number".into());
            }
            Err(interval::Unjudged::TooFewSamples(k)) => {
                return not_judged(mc, too_few("base", k));
            }
        }
    }
    let h = base_sides.len();
    // Each run's value is its median, in the working scale.
    let xs: Vec<f64> = base_sides
        .iter()
        .map(|(_, s)| scale(&[median(s.samples)])[0])
        .collect();
    let centre_w = xs.iter().sum::<f64>() / h as f64;
    let centre = if log { centre_w.exp() } else { centre_w };
    if h > 1 {
        mc.base_median = centre;
    }
    let x_new = scale(&[mc.new_median])[0];
    if relative && !log && centre == 0.0 {
        return not_judged(
            mc,
            format!(
                "the base median is 0, so a relative change is undefined; give {} an absolute threshold (--threshold '{}:{}=...')",
                q.name, record.id, q.name
            ),
        );
    }
    // The variance of `new − centre` predicted for one new run.
    let to_working = |cv: f64| {
        if log { cv.ln_1p() } else { cv * centre.abs() }
    };
    let prior_cv = options.between_run.prior_cv(&record.id, q.tail);
    let paired = (options.paired && h == 1)
        .then(|| {
            let (b, n) = (round_medians(newest), round_medians(&q.new));
            (b.len() == n.len() && b.len() >= interval::MIN_SAMPLES && newest.rounds.is_some())
                .then(|| {
                    b.iter()
                        .zip(&n)
                        .map(|(x, y)| scale(&[*y])[0] - scale(&[*x])[0])
                        .collect::<Vec<f64>>()
                })
        })
        .flatten();
    let (var, df, between, source) = if let Some(d) = &paired {
        // Interleaved rounds: the mean of the paired differences, with
        // their own spread (R − 1 degrees of freedom).
        let r = d.len() as f64;
        (variance(d) / r, r - 1.0, 0.0, BetweenSource::Paired)
    } else if h >= 2 {
        // A history: one more run of the same design is one more draw of
        // the run medians, whose spread the history shows (the noise inside
        // a run and between runs together): the classic prediction interval
        // of one new observation, `s²·(1 + 1/h)` with h − 1 degrees of
        // freedom. The runs' own noise is a floor under `s²` (a history
        // whose few runs happen to agree, or a metric that stood still in
        // every run), and so is a --between-run-cv.
        let s2 = variance(&xs);
        // The typical run's own noise: the median over the runs, so one
        // run with a glitched round (its rounds then the unit, its
        // variance huge) does not stand for all of them.
        let within = median(&base_sides.iter().map(|(s, _)| s.var).collect::<Vec<_>>());
        let df_within: f64 = base_sides.iter().map(|(s, _)| s.df).sum();
        let floor = match options.between_run {
            BetweenRun::Cv(cv) => to_working(cv).powi(2),
            BetweenRun::Prior => 0.0,
        };
        let (spread, df, source) = if floor > s2.max(within) {
            (floor, f64::INFINITY, BetweenSource::Floor)
        } else if within > s2 {
            (within, df_within, BetweenSource::History)
        } else {
            (s2, (h - 1) as f64, BetweenSource::History)
        };
        (spread * (1.0 + 1.0 / h as f64), df, s2.sqrt(), source)
    } else {
        // One baseline: the two runs' own noise, plus twice the prior
        // between-run variance (each run has its own state), taken as
        // known.
        let base = base_sides[0].0;
        let p = prior_cv.map_or(0.0, |cv| to_working(cv).powi(2));
        let (var, df) = satterthwaite(&[
            (2.0 * p, f64::INFINITY),
            (base.var, base.df),
            (new_side.var, new_side.df),
        ]);
        let source = if p > 0.0 {
            BetweenSource::Prior
        } else {
            BetweenSource::None
        };
        (var, df, p.sqrt(), source)
    };
    mc.history_runs = h;
    mc.between_source = Some(source);
    mc.between_cv = (!matches!(source, BetweenSource::None | BetweenSource::Paired))
        .then(|| {
            if log {
                between.exp_m1()
            } else {
                between / centre.abs()
            }
        })
        .filter(|cv| cv.is_finite());
    mc.drift = new_side.drift || base_sides.iter().any(|(s, _)| s.drift);
    let tol = match &tolerance {
        Tolerance::Relative(t) => *t,
        Tolerance::Absolute { value, .. } => *value,
    };
    // What the history has seen, which the band rule does not call a
    // regression: every baseline run's median, and every round level seen
    // in two baseline runs (within reach of each other): a
    // machine state that recurs (LINPACK at 60 or 80 GFLOP/s, a round at a
    // time) rather than a lone glitch (a round of `cpu.flops` at half
    // speed once), which moves no run's median and recurs nowhere.
    // How far a level explains a round: three standard deviations of a
    // round's median on the typical run (the median over the runs of the
    // variance of a run's median, times its rounds).
    let reach = {
        let typical = median(
            &base_sides
                .iter()
                .map(|(side, series)| side.var * round_medians(series).len() as f64)
                .collect::<Vec<_>>(),
        );
        3.0 * typical.sqrt()
    };
    let per_run: Vec<Vec<f64>> = base_sides
        .iter()
        .map(|(_, s)| {
            round_medians(s)
                .into_iter()
                .map(|m| scale(&[m])[0])
                .collect()
        })
        .collect();
    let mut seen = xs.clone();
    for (i, run) in per_run.iter().enumerate() {
        for &r in run {
            let recurs = per_run
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && other.iter().any(|o| (o - r).abs() <= reach));
            if recurs {
                seen.push(r);
            }
        }
    }
    // The new run's rounds: a regression moves each of them, a state
    // switch inside the run leaves one where the history was.
    let new_rounds: Vec<f64> = round_medians(&q.new)
        .into_iter()
        .map(|m| scale(&[m])[0])
        .collect();
    let unexplained = (h >= 2).then(|| {
        new_rounds
            .iter()
            .flat_map(|r| seen.iter().map(move |x| (r - x).abs()))
            .fold(f64::INFINITY, f64::min)
            - reach
    });
    let d = match &paired {
        Some(d) => d.iter().sum::<f64>() / d.len() as f64,
        None => x_new - centre_w,
    };
    let est = Estimate {
        unexplained,
        d,
        var,
        df,
        log,
        centre,
        tol,
        relative,
    };
    mc.df = (var > 0.0 && df.is_finite()).then_some(df);
    (mc, Some(est))
}

/// The one-sided p-value of "no worse than" for the family's step-down
/// ([`super::holm_levels`]): under the interval rule, of "the change is
/// within the threshold"; under the band rule, of "no change", and 1 where
/// the change does not reach the threshold (no alarm is possible).
pub(super) fn p_worse(e: &Estimate, direction: Direction, rule: GateRule) -> f64 {
    let (w, tau) = (e.worse(direction), e.worse_tol(direction));
    let stat = match rule {
        GateRule::Interval => w - tau,
        GateRule::Band if w > tau && e.past_history() => w,
        GateRule::Band => return 1.0,
    };
    if e.var <= 0.0 {
        return if stat > 0.0 { 0.0 } else { 1.0 };
    }
    let z = stat / e.var.sqrt();
    match StudentsT::new(0.0, 1.0, e.df.min(1e6)) {
        Ok(t) => 1.0 - t.cdf(z),
        Err(_) => 1.0,
    }
}

/// Sets the change, its interval at the one-sided `level` and the verdict.
pub(super) fn verdict(mc: &mut MetricComparison, e: &Estimate, level: f64, rule: GateRule) {
    let h = if e.var > 0.0 {
        StudentsT::new(0.0, 1.0, e.df.min(1e6))
            .map(|d| d.inverse_cdf(1.0 - level))
            .unwrap_or(f64::INFINITY)
            * e.var.sqrt()
    } else {
        0.0
    };
    let (change, lo, hi) = if e.log {
        (e.d.exp_m1(), (e.d - h).exp_m1(), (e.d + h).exp_m1())
    } else if e.relative {
        let b = e.centre.abs();
        (e.d / b, (e.d - h) / b, (e.d + h) / b)
    } else {
        (e.d, e.d - h, e.d + h)
    };
    let tol = e.tol;
    let (worse_beyond, better_beyond) = match rule {
        // The whole interval beyond the threshold.
        GateRule::Interval => match mc.direction {
            Direction::Lower => (lo > tol, hi < -tol),
            Direction::Higher => (hi < -tol, lo > tol),
        },
        // Outside the band of no change, and the change itself beyond the
        // threshold.
        // And no round of the new run within the threshold of a level the
        // history was seen at (a state the history holds is no
        // regression).
        GateRule::Band => {
            let (worse, better) = (e.past_history(), e.past_history());
            match mc.direction {
                Direction::Lower => (
                    lo > 0.0 && change > tol && worse,
                    hi < 0.0 && change < -tol && better,
                ),
                Direction::Higher => (
                    hi < 0.0 && change < -tol && worse,
                    lo > 0.0 && change > tol && better,
                ),
            }
        }
    };
    mc.verdict = if worse_beyond {
        Verdict::Regressed
    } else if better_beyond {
        Verdict::Improved
    } else if change.abs() <= tol {
        Verdict::Unchanged
    } else {
        Verdict::Noisy
    };
    // Outside the band and beyond the threshold, held back only by the
    // history check: say why it is not a regression.
    let significant = (lo > 0.0 && change > tol) || (hi < 0.0 && change < -tol);
    if rule == GateRule::Band && mc.verdict == Verdict::Noisy && significant && !e.past_history() {
        let why = "a round of new sits at a level the baselines were seen at (a machine state), so it is not called".to_string();
        mc.note = Some(match mc.note.take() {
            Some(n) => format!("{why}; {n}"),
            None => why,
        });
    }
    mc.change = Some(change);
    mc.interval = Some([lo, hi]);
    mc.level = Some(level);
    mc.noise = Some((hi - lo) / 2.0);
    mc.quiet_threshold = Some(if lo > 0.0 || hi < 0.0 {
        lo.abs().min(hi.abs())
    } else {
        0.0
    });
}

/// The median of each round of a series (one for a series without rounds).
fn round_medians(s: &Series<'_>) -> Vec<f64> {
    match s.rounds {
        Some(r) if r.iter().sum::<usize>() == s.samples.len() && r.iter().all(|&k| k > 0) => {
            let mut at = 0;
            r.iter()
                .map(|&k| {
                    at += k;
                    median(&s.samples[at - k..at])
                })
                .collect()
        }
        _ => vec![median(s.samples)],
    }
}

/// The sum of independent variance estimates, each with its degrees of
/// freedom (infinite: known), and the Welch–Satterthwaite degrees of
/// freedom of the sum (infinite when every part is known or zero).
fn satterthwaite(parts: &[(f64, f64)]) -> (f64, f64) {
    let var: f64 = parts.iter().map(|(v, _)| v).sum();
    let den: f64 = parts
        .iter()
        .filter(|(v, df)| *v > 0.0 && df.is_finite())
        .map(|(v, df)| v * v / df)
        .sum();
    let df = if var > 0.0 && den > 0.0 {
        var * var / den
    } else {
        f64::INFINITY
    };
    (var, df)
}

/// Sample variance (n − 1).
fn variance(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)
}

pub(super) fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Higher => "higher",
        Direction::Lower => "lower",
    }
}

pub(super) fn is_worse(direction: Direction, diff: f64) -> bool {
    match direction {
        Direction::Higher => diff < 0.0,
        Direction::Lower => diff > 0.0,
    }
}
