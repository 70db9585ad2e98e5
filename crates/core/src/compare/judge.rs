//! Judging one metric: its quantities (the samples and each latency
//! tail) on both sides, through the interval rule of [`super::interval`].

use crate::bench::Direction;
use crate::report::{Metric, Record};

use super::*;

/// One judged quantity: a metric's samples or one of its tails, on both
/// sides.
pub(super) struct Quantity<'a> {
    name: String,
    unit: &'a str,
    direction: Direction,
    base: &'a [f64],
    new: &'a [f64],
    base_rounds: Option<&'a [usize]>,
    new_rounds: Option<&'a [usize]>,
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

pub(super) fn quantities<'a>(b: &'a Metric, n: &'a Metric) -> Vec<Quantity<'a>> {
    let q = |name: String, base: &'a [f64], new: &'a [f64]| Quantity {
        name,
        unit: &b.unit,
        direction: b.direction,
        base,
        new,
        base_rounds: b.rounds.as_deref(),
        new_rounds: n.rounds.as_deref(),
    };
    let mut v = vec![q(b.name.clone(), &b.samples, &n.samples)];
    if let (Some(bt), Some(nt)) = (&b.tails, &n.tails) {
        if let (Some(x), Some(y)) = (&bt.p99, &nt.p99) {
            v.push(q(format!("{}.p99", b.name), x, y));
        }
        if let (Some(x), Some(y)) = (&bt.p99_9, &nt.p99_9) {
            v.push(q(format!("{}.p99_9", b.name), x, y));
        }
    }
    v
}

pub(super) fn judge(
    record: &Record,
    q: &Quantity<'_>,
    options: &CompareOptions,
    context: Option<String>,
) -> MetricComparison {
    let (tolerance, _) = rules::tolerance_for(
        options.threshold,
        &options.rules,
        &record.id,
        &q.name,
        q.unit,
    );
    let rounds_of = |r: Option<&[usize]>| r.map_or(1, |r| r.len().max(1));
    let mut mc = MetricComparison {
        key: record.requested_key(),
        id: record.id.clone(),
        params: record.requested_params().clone(),
        metric: q.name.clone(),
        unit: q.unit.to_string(),
        direction: q.direction,
        base_median: median(q.base),
        new_median: median(q.new),
        base_n: q.base.len(),
        new_n: q.new.len(),
        base_rounds: rounds_of(q.base_rounds),
        new_rounds: rounds_of(q.new_rounds),
        tolerance: tolerance.clone(),
        change: None,
        interval: None,
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
        mc
    };
    let relative = matches!(tolerance, Tolerance::Relative(_));
    let positive = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    let log = relative && positive(q.base) && positive(q.new);
    let scale = |v: &[f64]| -> Vec<f64> {
        if log {
            v.iter().map(|x| x.ln()).collect()
        } else {
            v.to_vec()
        }
    };
    let sides = (
        interval::side(&scale(q.base), q.base_rounds),
        interval::side(&scale(q.new), q.new_rounds),
    );
    let (bs, ns) = match sides {
        (Ok(b), Ok(n)) => (b, n),
        (Err(interval::Unjudged::NotFinite), _) | (_, Err(interval::Unjudged::NotFinite)) => {
            return not_judged(mc, "a sample is not a finite number".into());
        }
        (Err(interval::Unjudged::TooFewSamples(k)), _) => {
            return not_judged(
                mc,
                format!(
                    "base has {k} sample(s) or round(s); at least {} are needed to judge (--runs)",
                    interval::MIN_SAMPLES
                ),
            );
        }
        (_, Err(interval::Unjudged::TooFewSamples(k))) => {
            return not_judged(
                mc,
                format!(
                    "new has {k} sample(s) or round(s); at least {} are needed to judge (--runs)",
                    interval::MIN_SAMPLES
                ),
            );
        }
    };
    let iv = interval::difference(&bs, &ns, options.alpha);
    let h = iv.half_width;
    let (change, lo, hi, tol) = match &tolerance {
        Tolerance::Relative(t) if log => {
            let c = mc.new_median / mc.base_median - 1.0;
            let r = 1.0 + c;
            (c, r * (-h).exp() - 1.0, r * h.exp() - 1.0, *t)
        }
        Tolerance::Relative(t) => {
            if mc.base_median == 0.0 {
                return not_judged(
                    mc,
                    format!(
                        "the base median is 0, so a relative change is undefined; give {} an absolute threshold (--threshold '{}:{}=...')",
                        q.name, record.id, q.name
                    ),
                );
            }
            let b = mc.base_median.abs();
            let c = (mc.new_median - mc.base_median) / b;
            (c, c - h / b, c + h / b, *t)
        }
        Tolerance::Absolute { value, .. } => {
            let c = mc.new_median - mc.base_median;
            (c, c - h, c + h, *value)
        }
    };
    let worse_bound_beyond = match q.direction {
        Direction::Lower => lo > tol,
        Direction::Higher => hi < -tol,
    };
    let better_bound_beyond = match q.direction {
        Direction::Lower => hi < -tol,
        Direction::Higher => lo > tol,
    };
    mc.verdict = if worse_bound_beyond {
        Verdict::Regressed
    } else if better_bound_beyond {
        Verdict::Improved
    } else if change.abs() <= tol {
        Verdict::Unchanged
    } else {
        Verdict::Noisy
    };
    mc.change = Some(change);
    mc.interval = Some([lo, hi]);
    mc.noise = Some((hi - lo) / 2.0);
    mc.quiet_threshold = Some(if lo > 0.0 || hi < 0.0 {
        lo.abs().min(hi.abs())
    } else {
        0.0
    });
    mc.df = iv.df;
    mc.drift = bs.drift || ns.drift;
    mc
}

pub(super) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&s, 0.5)
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
