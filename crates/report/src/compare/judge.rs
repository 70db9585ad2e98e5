//! Judging one metric: its quantities (the samples and each latency
//! tail) in the baselines and in the new report, as a prediction of one
//! new run from the baselines ([`estimate`]), then a verdict at the level
//! the family of judged metrics leaves it ([`verdict`]).

use statrs::distribution::{ContinuousCDF, StudentsT};

use benchsuite_core::bench::Direction;
use benchsuite_core::results::{Metric, MetricRole, Record, SampleTails};
use benchsuite_core::stats::median;

use super::interval;
use super::model::{BetweenRun, BetweenSource, CompareOptions, GateRule, MetricComparison};
use super::outcome::Verdict;
use super::rules::{self, Tolerance};

/// The judged quantities of a metric: its name, then its tails.
pub(super) fn metric_names(m: &Metric) -> Vec<String> {
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
    /// under a relative threshold where every value is positive); with
    /// paired rounds, the trimmed mean of their differences.
    d: f64,
    /// The variance of `d` predicted for one new run (paired: of the
    /// trimmed mean).
    var: f64,
    /// Its degrees of freedom.
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
    /// The rule this quantity is judged by: the comparison's, except that
    /// a quantity with one judgeable run in a history is judged as
    /// against one baseline.
    rule: GateRule,
    /// The new run's rounds.
    rounds: usize,
    /// Band rule: the new run's rounds beyond the threshold on the worse
    /// side (from the history's centre) and at no level the history has
    /// been seen at more than once.
    worse_rounds: usize,
    /// The same on the better side.
    better_rounds: usize,
    /// Band rule: the rounds beyond the threshold (either side) that sit
    /// at a recurring level of the history.
    explained_rounds: usize,
}

impl Estimate {
    /// Whether every number a verdict is drawn from is finite (the
    /// degrees of freedom may be infinite: a known variance; so may the
    /// threshold on the better side of a log scale: 100% down is −∞), and
    /// so is a relative change on a linear scale.
    fn is_finite(&self) -> bool {
        let relative = !self.log && self.relative;
        self.d.is_finite()
            && self.var.is_finite()
            && !self.df.is_nan()
            && self.centre.is_finite()
            && self.tol.is_finite()
            && (!relative || (self.d / self.centre.abs()).is_finite())
    }

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

    /// The threshold on the better side, in the working scale.
    fn better_tol(&self, direction: Direction) -> f64 {
        self.side_tol(direction != Direction::Lower)
    }

    /// The threshold in the working scale on the side where the value
    /// grows (`up`) or shrinks, as a positive distance.
    fn side_tol(&self, up: bool) -> f64 {
        side_tol(self.log, self.relative, self.tol, self.centre, up)
    }

    /// Under the band rule: whether most of the new run's rounds show the
    /// change on this side, none of those at a recurring level of the
    /// history. Always true under the other rules.
    fn most_rounds(&self, worse: bool) -> bool {
        if self.rule != GateRule::Band {
            return true;
        }
        let k = if worse {
            self.worse_rounds
        } else {
            self.better_rounds
        };
        2 * k > self.rounds
    }

    /// The one-sided quantile of the change's distribution at `p`, times
    /// its standard deviation (0 without spread).
    fn reach(&self, p: f64) -> f64 {
        if self.var <= 0.0 {
            return 0.0;
        }
        if !(p > 0.0 && p < 1.0) {
            // statrs' inverse CDF asserts its argument is a probability.
            return f64::INFINITY;
        }
        StudentsT::new(0.0, 1.0, self.df.min(1e6))
            .map(|d| d.inverse_cdf(1.0 - p))
            .unwrap_or(f64::INFINITY)
            * self.var.sqrt()
    }
}

/// The threshold `tol` in the working scale on the side where the value
/// grows (`up`) or shrinks, as a positive distance.
fn side_tol(log: bool, relative: bool, tol: f64, centre: f64, up: bool) -> f64 {
    match (log, up) {
        (true, true) => tol.ln_1p(),
        (true, false) => -(-tol).ln_1p(),
        (false, _) if relative => tol * centre.abs(),
        (false, _) => tol,
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
        unchanged_above: None,
        history: Vec::new(),
        df: None,
        drift: false,
        verdict: Verdict::NotJudged,
        stage: None,
        pairs: None,
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
            "{side} has {k} sample(s) or round(s); at least {} are needed to judge (`RunConfig::runs`)",
            interval::MIN_SAMPLES
        )
    };
    let unjudged = |side: &str, why: interval::Unjudged| match why {
        interval::Unjudged::NotFinite => "a sample is not a finite number".to_string(),
        interval::Unjudged::Overflow => format!("{side}: {OVERFLOW}"),
        interval::Unjudged::TooFewSamples(k) => too_few(side, k),
    };
    let new_side = match interval::side(&scale(q.new.samples), q.new.rounds) {
        Ok(s) => s,
        Err(why) => return not_judged(mc, unjudged("new", why)),
    };
    // The newest baseline must be judgeable; an older one that is not
    // (a run with fewer samples) is left out of this quantity.
    let mut base_sides = Vec::with_capacity(q.base.len());
    for (i, s) in q.base.iter().enumerate() {
        match interval::side(&scale(s.samples), s.rounds) {
            Ok(side) => base_sides.push((side, s)),
            Err(_) if i > 0 => {}
            Err(why) => return not_judged(mc, unjudged("base", why)),
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
                "the base median is 0, so a relative change is undefined; give {} an absolute threshold (`CompareOptions::threshold` '{}:{}=...')",
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
    let rule = match (options.rule, &paired) {
        (Some(r), _) => r,
        (None, Some(_)) => GateRule::Paired,
        (None, None) if h >= 2 => GateRule::Band,
        (None, None) => GateRule::Interval,
    };
    // A history rule needs a history: a quantity with one judgeable run
    // is judged as against one baseline.
    let rule = match rule {
        GateRule::Band if h < 2 => GateRule::Interval,
        GateRule::Paired if paired.is_none() => GateRule::Interval,
        r => r,
    };
    let (d, var, df, between, source) = if let Some(d) = &paired {
        // Interleaved rounds: the 10% trimmed mean of the paired
        // differences with Yuen's variance (a round that one side spent
        // in another state moves it little; at 10 pairs one is cut from
        // each end, where 20% would cost four of nine degrees of freedom).
        let (mean, var, df) = trimmed_mean(d, TRIM);
        (mean, var, df, 0.0, BetweenSource::Paired)
    } else if h >= 2 {
        // A history: one more run of the same design is one more draw of
        // the run medians, whose spread the history shows (the noise inside
        // a run and between runs together): the classic prediction interval
        // of one new observation, `s²·(1 + 1/h)` with h − 1 degrees of
        // freedom. The typical run's own noise is a floor under `s²` (a
        // history whose few runs happen to agree), and so is a
        // --between-run-cv; either way the spread is known from h runs,
        // so h − 1 degrees of freedom (a known floor: infinite).
        let s2 = variance(&xs);
        // The typical run's own noise: the median over the runs, so one
        // run with a glitched round (its rounds then the unit, its
        // variance huge) does not stand for all of them.
        let within = median(&base_sides.iter().map(|(s, _)| s.var).collect::<Vec<_>>());
        let floor = match options.between_run {
            BetweenRun::Cv(cv) => to_working(cv).powi(2),
            BetweenRun::Prior => 0.0,
        };
        let (spread, df, source) = if floor > s2.max(within) {
            (floor, f64::INFINITY, BetweenSource::Floor)
        } else {
            (s2.max(within), (h - 1) as f64, BetweenSource::History)
        };
        (
            x_new - centre_w,
            spread * (1.0 + 1.0 / h as f64),
            df,
            s2.sqrt(),
            source,
        )
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
        (x_new - centre_w, var, df, p.sqrt(), source)
    };
    // A quantised metric (a timer's resolution, the same value in every
    // run) has no spread to judge a step by: half its smallest step is the
    // least standard deviation it is judged with, so that one tick is not
    // a certain change.
    let mut all: Vec<f64> = q.base.iter().flat_map(|s| scale(s.samples)).collect();
    all.extend(scale(q.new.samples));
    let var = var.max((quantum(&mut all) / 2.0).powi(2));
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
    // What the history has seen as a machine state: a baseline run's
    // median or round level that recurs in another baseline run (within
    // reach of its median or of one of its rounds). A state that recurs
    // (LINPACK at 60 or 80 GFLOP/s, a round at a time) makes a new run at
    // that level undecided, not a regression; a lone odd run or a lone
    // glitched round (a round of `cpu.flops` at half speed once) is no
    // state. How far a level reaches: three standard deviations of a
    // round's median on the typical run.
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
        .zip(&xs)
        .map(|((_, s), x)| {
            let mut v: Vec<f64> = round_medians(s)
                .into_iter()
                .map(|m| scale(&[m])[0])
                .collect();
            v.push(*x);
            v
        })
        .collect();
    let mut seen = Vec::new();
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
    // The new run's rounds: a regression moves most of them; a state
    // switch inside the run leaves some where the history was.
    let new_rounds: Vec<f64> = round_medians(&q.new)
        .into_iter()
        .map(|m| scale(&[m])[0])
        .collect();
    let up = side_tol(log, relative, tol, centre, true);
    let down = side_tol(log, relative, tol, centre, false);
    let (mut grew, mut shrank, mut explained) = (0, 0, 0);
    for r in &new_rounds {
        let at_state = seen.iter().any(|x| (r - x).abs() <= reach);
        let step = r - centre_w;
        let beyond = step > up || -step > down;
        if beyond && at_state {
            explained += 1;
        } else if step > up {
            grew += 1;
        } else if -step > down {
            shrank += 1;
        }
    }
    let (worse_rounds, better_rounds) = match q.direction {
        Direction::Lower => (grew, shrank),
        Direction::Higher => (shrank, grew),
    };
    let est = Estimate {
        d,
        var,
        df,
        log,
        centre,
        tol,
        relative,
        rule,
        rounds: new_rounds.len(),
        worse_rounds,
        better_rounds,
        explained_rounds: explained,
    };
    if !est.is_finite() {
        return not_judged(mc, OVERFLOW.to_string());
    }
    mc.df = (var > 0.0 && df.is_finite()).then_some(df);
    (mc, Some(est))
}

/// Why a quantity whose samples are finite cannot be judged: a statistic
/// of them (a sum, a spread, a difference, a ratio) is not a finite
/// number.
pub(super) const OVERFLOW: &str = "its statistics overflow (values near the ends of f64, ±1.8e308, or a ratio of a subnormal): it cannot be judged";

/// The one-sided p-value for the family's step-down
/// ([`super::holm_levels`]): under the interval rule, of "the change is
/// within the threshold"; under the band and paired rules, of "no
/// change", and 1 where the change (or, band, most of the new run's
/// rounds) does not reach the threshold (no alarm is possible).
pub(super) fn p_worse(e: &Estimate, direction: Direction) -> f64 {
    let (w, tau) = (e.worse(direction), e.worse_tol(direction));
    let stat = match e.rule {
        GateRule::Interval => w - tau,
        GateRule::Band | GateRule::Paired if w > tau && e.most_rounds(true) => w,
        GateRule::Band | GateRule::Paired => return 1.0,
    };
    if e.var <= 0.0 {
        return if stat > 0.0 { 0.0 } else { 1.0 };
    }
    let z = stat / e.var.sqrt();
    if z.is_nan() {
        // Never reached from an estimate that is finite; statrs' CDF
        // panics on NaN.
        return 1.0;
    }
    match StudentsT::new(0.0, 1.0, e.df.min(1e6)) {
        Ok(t) => 1.0 - t.cdf(z),
        Err(_) => 1.0,
    }
}

/// Sets the change, its interval at the one-sided `level`, and the
/// verdict: regressed or improved as the rule confirms at `level`,
/// unchanged where the worse-side bound at `beta` lies within the
/// threshold, undecided otherwise.
pub(super) fn verdict(mc: &mut MetricComparison, e: &Estimate, level: f64, beta: f64) {
    let h = e.reach(level);
    let (change, lo, hi) = if e.log {
        (e.d.exp_m1(), (e.d - h).exp_m1(), (e.d + h).exp_m1())
    } else if e.relative {
        let b = e.centre.abs();
        (e.d / b, (e.d - h) / b, (e.d + h) / b)
    } else {
        (e.d, e.d - h, e.d + h)
    };
    // Everything in the working scale, turned so that positive is worse.
    let w = e.worse(mc.direction);
    let (wt, bt) = (e.worse_tol(mc.direction), e.better_tol(mc.direction));
    // What this evidence could have shown unchanged: its worse-side bound,
    // as a threshold (a metric whose noise keeps it above the threshold in
    // every job wants a threshold of its own).
    let b = w + e.reach(beta);
    let above = if e.log {
        if mc.direction == Direction::Lower {
            b.exp_m1()
        } else {
            -(-b).exp_m1()
        }
    } else if e.relative {
        b / e.centre.abs()
    } else {
        b
    };
    if ![change, lo, hi, above].iter().all(|x| x.is_finite()) {
        // A change or a bound too large for f64 (a ratio of e^709 and
        // more): no number to show or to gate on.
        mc.verdict = Verdict::NotJudged;
        mc.note = Some(match mc.note.take() {
            Some(n) => format!("{OVERFLOW}; {n}"),
            None => OVERFLOW.to_string(),
        });
        return;
    }
    let (worse, better) = match e.rule {
        // The whole interval beyond the threshold.
        GateRule::Interval => (w - h > wt, -w - h > bt),
        // No change ruled out at `level`, the change beyond the
        // threshold, and (band) most rounds beyond it at no recurring
        // level of the history.
        GateRule::Band | GateRule::Paired => (
            w - h > 0.0 && w > wt && e.most_rounds(true),
            -w - h > 0.0 && -w > bt && e.most_rounds(false),
        ),
    };
    // A change as large as the threshold would have shown a larger one
    // than this at least 1 − beta of the time.
    let unchanged = b <= wt;
    mc.verdict = if worse {
        Verdict::Regressed
    } else if better {
        Verdict::Improved
    } else if unchanged {
        Verdict::Unchanged
    } else {
        Verdict::Undecided
    };
    mc.unchanged_above = Some(above.max(0.0));
    if mc.verdict == Verdict::Undecided && e.rule == GateRule::Band && e.explained_rounds > 0 {
        let why = format!(
            "{} of new's {} rounds sit at a level the baselines were seen at more than once (a machine state): undecided until the two builds are measured side by side",
            e.explained_rounds, e.rounds
        );
        mc.note = Some(match mc.note.take() {
            Some(n) => format!("{why}; {n}"),
            None => why,
        });
    }
    mc.change = Some(change);
    mc.interval = Some([lo, hi]);
    mc.level = Some(level);
    // Halved first: `hi − lo` may overflow where each bound does not.
    mc.noise = Some(hi / 2.0 - lo / 2.0);
    // The smallest threshold at which this pair raises no alarm: under
    // the interval rule, the interval's bound nearest zero (0 when it
    // holds zero); under the others, the change itself where no change
    // is ruled out, else 0.
    let excludes_zero = lo > 0.0 || hi < 0.0;
    mc.quiet_threshold = Some(match (e.rule, excludes_zero) {
        (_, false) => 0.0,
        (GateRule::Interval, true) => lo.abs().min(hi.abs()),
        (GateRule::Band | GateRule::Paired, true) => change.abs(),
    });
}

/// How much of each end of the paired differences the paired rule cuts.
pub(super) const TRIM: f64 = 0.1;

/// The `trim` trimmed mean of `v`, the variance of that mean (Yuen's:
/// from the winsorised variance) and its degrees of freedom (`n − 2g − 1`,
/// `g = ⌊trim·n⌋` values cut from each end).
pub(super) fn trimmed_mean(v: &[f64], trim: f64) -> (f64, f64, f64) {
    let mut x = v.to_vec();
    x.sort_by(f64::total_cmp);
    let n = x.len();
    let g = ((trim * n as f64).floor() as usize).min((n.saturating_sub(2)) / 2);
    let kept = &x[g..n - g];
    let h = kept.len() as f64;
    let mean = kept.iter().sum::<f64>() / h;
    let (lo, hi) = (x[g], x[n - g - 1]);
    let w: Vec<f64> = x.iter().map(|v| v.clamp(lo, hi)).collect();
    let var = variance(&w) * (n as f64 - 1.0) / (h * (h - 1.0));
    (mean, var, h - 1.0)
}

/// The smallest gap between two different values of `v` (sorted in
/// place), 0 when all are equal.
fn quantum(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let q = v
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > 0.0)
        .fold(f64::INFINITY, f64::min);
    if q.is_finite() { q } else { 0.0 }
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
