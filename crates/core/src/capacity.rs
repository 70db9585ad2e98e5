//! Capacity under a latency target: the highest open-loop rate whose
//! latency percentile stays under a bound (`--slo 'p99<=1ms'`), and the
//! latency–throughput curve it walked to find it (`rate=auto`).
//!
//! [`Slo`] is the target, parsed from the command line; [`Capacity`] the
//! answer, stored on the search's summary record. The runner runs a
//! search for every point [`is_search`] says is one: a ladder of
//! open-loop rates from [`START_RATE`] (×[`LADDER_FACTOR`] up to
//! saturation without a target, ×[`SEARCH_FACTOR`] while a target is met),
//! then, with a target, bisection to [`RESOLUTION`]; each step is its own
//! record. See `docs/capacity.md`.

mod model;

pub use model::{Capacity, SearchOutcome, Slo, Step};

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::bench::{Benchmark, Context, Meta, MetricRole, MetricSource};
use crate::caveat::Caveat;
use crate::config::RunConfig;
use crate::error::ConfigError;
use crate::openloop::{RATE, Rate};
use crate::param::{ParamKind, Point, RATE_AUTO, RATE_OFF, Value};
use crate::results::{Metric, Record, Status};
use crate::runner::Observer;
use crate::stats::Summary;
use crate::units::format_seconds;

/// The first rate of a ladder, operations per second.
pub const START_RATE: f64 = 1000.0;
/// The lowest rate a search steps down to when even its first rate breaks
/// the target or saturates.
pub const FLOOR_RATE: f64 = 10.0;
/// The highest rate a ladder climbs to.
pub const TOP_RATE: f64 = 1e9;
/// Each rung of a plain ladder (`rate=auto`) is this much above the last.
pub const LADDER_FACTOR: f64 = 1.5;
/// A target search climbs by this factor, then bisects.
pub const SEARCH_FACTOR: f64 = 2.0;
/// The search stops refining once the rate that broke the target is within
/// this factor of the one that met it (5%).
pub const RESOLUTION: f64 = 1.05;
/// A step that carried less than this fraction short of its offered rate
/// (2%) was overloaded: its queue grew throughout. The steps of a search
/// sample for a second or more, so the drain at the end of each sample
/// costs well under this; a plain record's saturation mark allows more
/// ([`crate::openloop::SATURATION_TOLERANCE`]) because its samples may be
/// short.
pub const OVERLOAD: f64 = 0.02;
/// Most steps of one search, all phases together.
pub const MAX_STEPS: usize = 30;
/// Confidence of each step's judgement.
pub const CONFIDENCE: f64 = 0.95;
const Z: f64 = 1.959_963_984_540_054;

/// Is this benchmark's point a capacity search: `rate=auto`, or a
/// target given with `--slo`?
pub fn is_search(point: &Point, config: &RunConfig) -> bool {
    point.get(RATE).is_some() && (config.slo().is_some() || Rate::of(point) == Rate::Auto)
}

/// Checks a benchmark's points against `--slo` and the search's limits
/// before anything runs; with `--slo`, a point's `rate=off` becomes `auto`
/// (the search chooses the rates).
pub fn plan_points(
    meta: &Meta,
    points: &mut [Point],
    config: &RunConfig,
) -> Result<(), ConfigError> {
    let rate_param = meta
        .param(RATE)
        .filter(|p| matches!(p.kind, ParamKind::Rate { .. }));
    if let Some(slo) = config.slo() {
        if rate_param.is_none() {
            return Err(ConfigError::Invalid(format!(
                "`RunConfig::slo`: {} has no open-loop mode (no `rate` parameter), so it has no capacity to search; select one that has (disk.io, net.latency)",
                meta.id
            )));
        }
        latency_metric(meta, slo.metric.as_deref()).map_err(ConfigError::Invalid)?;
        for p in points.iter_mut() {
            match p.get(RATE) {
                Some(Value::Int(n)) => {
                    return Err(ConfigError::Invalid(format!(
                        "`RunConfig::slo` searches for the rate itself: drop rate={n} (or give rate=auto)"
                    )));
                }
                Some(Value::Str(s)) if s == RATE_OFF => p.set(RATE, Value::Str(RATE_AUTO.into())),
                _ => {}
            }
        }
    }
    if config.duration().is_some() && points.iter().any(|p| is_search(p, config)) {
        return Err(ConfigError::Invalid(
            "`RunConfig::duration` cannot be combined with a capacity search (rate=auto or `RunConfig::slo`): the search sets each step's length from the rate and the percentile".into(),
        ));
    }
    Ok(())
}

/// The index of the latency metric a target judges: `name`, else the
/// benchmark's first latency metric.
fn latency_metric(meta: &Meta, name: Option<&str>) -> Result<usize, String> {
    let latency: Vec<(usize, &str)> = meta
        .metrics
        .iter()
        .enumerate()
        .filter(|(_, m)| m.source == MetricSource::Latency)
        .map(|(i, m)| (i, m.name.as_ref()))
        .collect();
    match (name, latency.first()) {
        (_, None) => Err(format!(
            "`RunConfig::slo`: {} has no latency metric to judge",
            meta.id
        )),
        (None, Some((i, _))) => Ok(*i),
        (Some(n), _) => latency
            .iter()
            .find(|(_, m)| *m == n)
            .map(|(i, _)| *i)
            .ok_or_else(|| {
                format!(
                    "`RunConfig::slo`: {} has no latency metric `{n}`; its latency metrics: {}",
                    meta.id,
                    latency
                        .iter()
                        .map(|(_, m)| *m)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }),
    }
}

/// A percentile of a histogram (nanoseconds) with its distribution-free
/// interval at [`CONFIDENCE`], in seconds: `[low, value, high]`. The
/// interval comes from the order statistics: the ranks `n q ± z √(n q (1 -
/// q))` (the normal approximation of the binomial).
pub fn percentile_interval(h: &Histogram<u64>, q: f64) -> Option<[f64; 3]> {
    let n = h.len();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let sd = (nf * q * (1.0 - q)).sqrt();
    let lo_rank = (nf * q - Z * sd).floor().max(1.0);
    let hi_rank = (nf * q + Z * sd).ceil().min(nf);
    let at = |rank: f64| h.value_at_quantile((rank / nf).clamp(0.0, 1.0)) as f64 * 1e-9;
    Some([
        at(lo_rank),
        h.value_at_quantile(q) as f64 * 1e-9,
        at(hi_rank),
    ])
}

/// How long a step at `rate` should sample to hold `need` operations,
/// within the search's limits (longer with `--quick` off).
fn step_seconds(rate: f64, need: u64, quick: bool) -> f64 {
    let (lo, hi) = if quick { (0.3, 1.0) } else { (1.0, 5.0) };
    (need as f64 / rate).clamp(lo, hi)
}

/// The configuration of one step: five samples that together last
/// [`step_seconds`], no extra warm-up (sizing the batches already runs the
/// schedule for about two sample lengths).
fn step_config(config: &RunConfig, rate: f64, need: u64) -> RunConfig {
    let secs = step_seconds(rate, need, config.is_quick());
    let runs = 5;
    config
        .to_builder()
        .runs(runs)
        .min_sample_time(Duration::from_secs_f64(secs / runs as f64))
        .warmup(Duration::ZERO)
        .duration(None)
        .interval(None)
        .build()
        .expect("a step's settings hold: 5 runs of samples of at least 60 ms, no time series")
}

/// One step: its record and what it says.
struct Ran {
    record: Record,
    step: Step,
}

/// The state of one search.
struct Searcher<'a> {
    bench: &'a dyn Benchmark,
    meta: &'a Meta,
    point: &'a Point,
    ctx: &'a Context,
    config: &'a RunConfig,
    slo: Option<&'a Slo>,
    metric_index: usize,
    need: u64,
    ran: Vec<Ran>,
}

impl Searcher<'_> {
    /// Runs one step at `rate`; returns whether it was good (met the
    /// target, or without one carried its load) and whether the search
    /// must stop (the benchmark skipped: nothing more will run).
    fn step(&mut self, rate: f64, observer: &mut dyn Observer) -> (bool, bool) {
        let rate = rate.round().max(1.0);
        let mut p = self.point.clone();
        p.set(RATE, Value::Int(rate as u64));
        observer.record_start(&self.meta.id, &p);
        let cfg = step_config(self.config, rate, self.need);
        let (mut record, hists) = crate::runner::run_point(
            self.bench,
            &self.meta.metrics,
            &self.meta.id,
            &p,
            self.ctx,
            &cfg,
        );
        let step = judge(
            &record,
            hists.get(self.metric_index).and_then(Option::as_ref),
            rate,
            self.slo,
        );
        if let Some(l) = &mut record.load {
            l.step = Some(self.ran.len() + 1);
        }
        record
            .notes
            .push(step_note(self.ran.len() + 1, self.slo, &step));
        observer.step_done(&record);
        let good = step.met.unwrap_or(!step.saturated && !step.failed);
        let stop = record.status == Status::Skipped;
        self.ran.push(Ran { record, step });
        (good, stop)
    }
}

/// The note on each step's record.
fn step_note(n: usize, slo: Option<&Slo>, step: &Step) -> String {
    let judged = match (slo, step.slo_value, step.met) {
        (Some(s), Some([lo, v, hi]), Some(met)) => format!(
            "; {} {} (95% interval {} .. {}): {}",
            s.percentile,
            format_seconds(v),
            format_seconds(lo),
            format_seconds(hi),
            if met {
                "met"
            } else if step.saturated {
                "not met (saturated)"
            } else if lo <= s.bound_s {
                "not met at 95% confidence"
            } else {
                "not met"
            }
        ),
        (Some(_), _, _) => ": not met (no latencies)".into(),
        _ => String::new(),
    };
    format!(
        "step {n} of a capacity search{}: {} offered, {} carried{judged}",
        slo.map(|s| format!(" for {s}")).unwrap_or_default(),
        crate::units::format_value(step.offered, "/s"),
        crate::units::format_value(step.achieved, "/s"),
    )
}

/// Runs a capacity search on one point: a ladder of open-loop rates (up
/// to saturation, or with a target until it breaks), then, with a target,
/// bisection between the highest rate that met it and the lowest that did
/// not, to [`RESOLUTION`]. Returns each step's record in the order they
/// ran, then the summary record that carries the [`Capacity`].
pub(crate) fn search(
    bench: &dyn Benchmark,
    meta: &Meta,
    point: &Point,
    ctx: &Context,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Vec<Record> {
    let slo = config.slo();
    let metric_index = match latency_metric(meta, slo.and_then(|s| s.metric.as_deref())) {
        Ok(i) => i,
        Err(e) => return vec![Record::failed(&meta.id, point.clone(), e)],
    };
    let mut s = Searcher {
        bench,
        meta,
        point,
        ctx,
        config,
        slo,
        metric_index,
        need: slo.map_or(2000, Slo::samples_needed),
        ran: Vec::new(),
    };
    // Climb from START_RATE by the factor while steps are good; when the
    // first is not, step down until one is.
    let factor = if slo.is_some() {
        SEARCH_FACTOR
    } else {
        LADDER_FACTOR
    };
    let mut good: Option<f64> = None;
    let mut bad: Option<f64> = None;
    let mut rate = START_RATE;
    while !ctx.cancelled() && s.ran.len() < MAX_STEPS {
        let (ok, stop) = s.step(rate, observer);
        if stop {
            break;
        }
        if ok {
            good = Some(rate);
            if bad.is_some() {
                break;
            }
            rate *= factor;
            if rate > TOP_RATE {
                break;
            }
        } else {
            bad = Some(rate);
            if good.is_some() {
                break;
            }
            rate /= 4.0;
            if rate < FLOOR_RATE {
                break;
            }
        }
    }
    // Refine: bisect (geometrically) between the best good and the worst
    // bad rate.
    if slo.is_some() {
        while let (Some(lo), Some(hi)) = (good, bad) {
            if hi / lo <= RESOLUTION || ctx.cancelled() || s.ran.len() >= MAX_STEPS {
                break;
            }
            let mid = (lo * hi).sqrt();
            let (ok, stop) = s.step(mid, observer);
            if stop {
                break;
            }
            if ok {
                good = Some(mid);
            } else {
                bad = Some(mid);
            }
        }
    }
    let metric = meta.metrics[metric_index].name.to_string();
    summarise(meta, point, slo, metric, s.ran, ctx.cancelled())
}

/// What one step says: its rates, its percentiles and, with a target,
/// whether it met it.
fn judge(record: &Record, hist: Option<&Histogram<u64>>, rate: f64, slo: Option<&Slo>) -> Step {
    let failed = record.status != Status::Ok;
    let load = record.load;
    let saturated = load.is_some_and(|l| l.saturated);
    let q = |x: f64| hist.map_or(f64::NAN, |h| h.value_at_quantile(x) as f64 * 1e-9);
    let slo_value = slo.and_then(|s| hist.and_then(|h| percentile_interval(h, s.quantile)));
    let met =
        slo.map(|s| !failed && !saturated && slo_value.is_some_and(|[_, _, hi]| hi <= s.bound_s));
    Step {
        offered: rate,
        achieved: load.map_or(0.0, |l| l.achieved),
        saturated,
        p50: q(0.5),
        p99: q(0.99),
        p99_9: q(0.999),
        count: hist.map_or(0, Histogram::len),
        slo_value,
        met,
        failed,
    }
}

/// The summary record after the steps: the [`Capacity`], and the answer
/// as a (derived, ungated) metric.
fn summarise(
    meta: &Meta,
    point: &Point,
    slo: Option<&Slo>,
    metric: String,
    ran: Vec<Ran>,
    cancelled: bool,
) -> Vec<Record> {
    let steps: Vec<Step> = ran.iter().map(|r| r.step.clone()).collect();
    let mut records: Vec<Record> = ran.into_iter().map(|r| r.record).collect();
    let carried = steps.iter().filter(|s| !s.failed && !s.saturated);
    let knee = carried
        .map(|s| s.achieved)
        .fold(None, |m: Option<f64>, a| Some(m.map_or(a, |m| m.max(a))));
    let (verdict, rate, interval) = match slo {
        None => (SearchOutcome::Ladder, knee, None),
        Some(s) => {
            let best = steps
                .iter()
                .filter(|x| x.met == Some(true))
                .map(|x| x.offered)
                .fold(None, |m: Option<f64>, a| Some(m.map_or(a, |m| m.max(a))));
            match best {
                None => {
                    let lowest = steps
                        .iter()
                        .map(|x| x.offered)
                        .fold(None, |m: Option<f64>, a| Some(m.map_or(a, |m| m.min(a))));
                    (SearchOutcome::NeverMet, None, Some([None, lowest]))
                }
                Some(best) => {
                    let above = steps
                        .iter()
                        .filter(|x| x.offered > best && x.met == Some(false))
                        .min_by(|a, b| a.offered.total_cmp(&b.offered));
                    match above {
                        None => (
                            SearchOutcome::NeverBroken,
                            Some(best),
                            Some([Some(best), None]),
                        ),
                        Some(b) => {
                            // The first rate above the answer was more
                            // than the system carried (overloaded: it
                            // carried less than OVERLOAD short of the
                            // offer): the target held at every rate the
                            // system carried, so throughput, not latency,
                            // is the limit (an overloaded open loop's
                            // latency grows with the run's length, so its
                            // percentile says nothing about the target).
                            let by_saturation =
                                b.saturated || b.achieved < b.offered * (1.0 - OVERLOAD);
                            let _ = s;
                            (
                                if by_saturation {
                                    SearchOutcome::NeverBroken
                                } else {
                                    SearchOutcome::Met
                                },
                                Some(best),
                                Some([Some(best), Some(b.offered)]),
                            )
                        }
                    }
                }
            }
        }
    };
    let capacity = Capacity {
        slo: slo.map(ToString::to_string),
        metric,
        verdict,
        rate,
        interval,
        knee,
        confidence: CONFIDENCE,
        steps,
        searches: Vec::new(),
    };
    let mut summary = Record::skipped(&meta.id, point.clone(), "");
    summary.reason = None;
    summary.status = if capacity.steps.iter().any(|s| !s.failed) {
        Status::Ok
    } else {
        Status::Failed
    };
    if summary.status == Status::Failed {
        // A benchmark that cannot run here skips its first step: the search
        // is skipped, for that reason, not failed.
        let skipped = records
            .iter()
            .find(|r| r.status == Status::Skipped)
            .and_then(|r| r.reason.clone());
        match skipped {
            Some(why) if records.iter().all(|r| r.status != Status::Failed) => {
                summary.status = Status::Skipped;
                summary.reason = Some(why);
            }
            _ => {
                summary.reason = Some(if capacity.steps.is_empty() {
                    "the capacity search ran no step".into()
                } else {
                    "every step of the capacity search failed (see the step records)".into()
                });
            }
        }
    }
    if cancelled {
        summary.warnings.push(Caveat::text(
            "interrupted: the capacity search stopped early; its answer covers the steps that ran",
        ));
    }
    if let Some(r) = rate
        && let Ok(summary_stats) = Summary::new(&[r])
    {
        {
            summary.metrics.push(Metric {
                name: "capacity".into(),
                unit: "op/s".into(),
                direction: crate::bench::Direction::Higher,
                samples: vec![r],
                timestamps: None,
                rounds: None,
                tails: None,
                // One search is one sample: nothing to judge a change by
                // (a round of more searches makes it the headline).
                role: Some(MetricRole::Derived),
                summary: summary_stats,
                latency: None,
            });
        }
    }
    summary.notes.push(capacity.sentence());
    summary.capacity = Some(capacity);
    records.push(summary);
    records
}

/// The median of the searches' answers, a search that never met the
/// target counting as below every answer: `None` when most never met.
pub(crate) fn median_answer(searches: &[Option<f64>]) -> Option<f64> {
    let mut v: Vec<f64> = searches
        .iter()
        .map(|a| a.unwrap_or(f64::NEG_INFINITY))
        .collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return None;
    }
    let m = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    m.is_finite().then_some(m)
}

/// Round `round` of a search (`rounds` > 1): its answer joins the first
/// search's summary record `summary`, whose `capacity` metric then holds
/// one sample per search (one per round, so `compare` judges the answer's
/// spread between searches, as it judges rounds) and becomes the record's
/// headline; the step records of later searches are not kept. A failed
/// search fails the record, as a failed round does.
pub(crate) fn merge_search(summary: &mut Record, next: &Record, round: usize) {
    let (Some(cap), Some(other)) = (summary.capacity.as_mut(), next.capacity.as_ref()) else {
        if summary.status == Status::Ok && next.status != Status::Ok {
            summary.status = Status::Failed;
            summary.reason = Some(format!(
                "round {round}: {}",
                next.reason.as_deref().unwrap_or("the search did not run")
            ));
        }
        return;
    };
    let before = cap.sentence();
    if cap.searches.is_empty() {
        cap.searches.push(cap.rate);
    }
    cap.searches.push(other.rate);
    let found: Vec<f64> = cap.searches.iter().flatten().copied().collect();
    cap.rate = median_answer(&cap.searches);
    let after = cap.sentence();
    for n in &mut summary.notes {
        if *n == before {
            *n = after.clone();
        }
    }
    summary.metrics.retain(|m| m.name != "capacity");
    if let Ok(stats) = Summary::new(&found) {
        summary.metrics.insert(
            0,
            Metric {
                name: "capacity".into(),
                unit: "op/s".into(),
                direction: crate::bench::Direction::Higher,
                rounds: Some(vec![1; found.len()]),
                samples: found,
                timestamps: None,
                tails: None,
                role: Some(MetricRole::Headline),
                summary: stats,
                latency: None,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_interval_brackets_the_percentile_by_its_order_statistics() {
        // 10 000 latencies of 1..=10 000 µs: p99 is 9 900 µs, and its 95%
        // interval the ranks 9 900 ± 1.96 √(10 000 × 0.99 × 0.01) = ±19.5.
        let mut h = crate::runner::new_latency_histogram();
        for us in 1..=10_000u64 {
            h.record(us * 1000).unwrap();
        }
        let [lo, v, hi] = percentile_interval(&h, 0.99).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() / b < 0.002;
        assert!(close(v, 9.900e-3), "{v}");
        assert!(close(lo, 9.880e-3) && close(hi, 9.920e-3), "{lo} {hi}");
        // Fewer samples, a wider interval.
        let mut small = crate::runner::new_latency_histogram();
        for us in (1..=10_000u64).step_by(100) {
            small.record(us * 1000).unwrap();
        }
        let [slo, _, shi] = percentile_interval(&small, 0.99).unwrap();
        assert!(shi - slo > hi - lo);
        assert_eq!(
            percentile_interval(&crate::runner::new_latency_histogram(), 0.99),
            None
        );
    }

    #[test]
    fn the_median_answer_counts_a_search_that_never_met_as_lowest() {
        assert_eq!(median_answer(&[Some(3.0), None, Some(5.0)]), Some(3.0));
        assert_eq!(median_answer(&[None, None, Some(5.0)]), None);
        assert_eq!(median_answer(&[Some(2.0), Some(4.0)]), Some(3.0));
        assert_eq!(median_answer(&[None, Some(4.0)]), None);
        assert_eq!(median_answer(&[]), None);
    }
}
