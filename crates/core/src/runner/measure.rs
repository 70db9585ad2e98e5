//! Measurement of one prepared case: batch sizing during warm-up, the
//! samples (or a time series), and the metrics built from them.

use std::borrow::Cow;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::bench::{Case, Context, MetricSource, MetricSpec, Work};
use crate::caveat::Caveat;
use crate::config::RunConfig;
use crate::error::BenchError;
use crate::results::{Metric, SampleTails};
use crate::stats::{LatencySummary, Summary};

/// Coefficient of variation above which a record gets a "noisy" warning.
pub const NOISY_CV: f64 = 0.10;

/// One timed batch: the work and the time it took.
#[derive(Default)]
struct Batch {
    work: Work,
    secs: f64,
}

fn timed(case: &mut dyn Case, iters: u64) -> Result<Batch, BenchError> {
    let t0 = Instant::now();
    let work = case.run(iters)?;
    let wall = t0.elapsed();
    let secs = work.elapsed.unwrap_or(wall).as_secs_f64();
    Ok(Batch { work, secs })
}

/// Each metric's latency histogram (merged over the samples), if it has one.
pub(super) type Hists = Vec<Option<Histogram<u64>>>;

/// The caveat for a metric whose samples spread too much.
pub(super) fn noisy_warning(metric: &str, summary: &Summary, n: usize) -> Option<Caveat> {
    (summary.cv > NOISY_CV && n > 2).then(|| Caveat::Noisy {
        metric: metric.to_string(),
        cv: summary.cv,
        n,
    })
}

/// The caveat for a result above its theoretical peak.
pub(super) fn over_peak_warning(metric: &str, efficiency: f64) -> Caveat {
    Caveat::OverPeak {
        metric: metric.to_string(),
        efficiency,
    }
}

/// Calibrates the batch size during warm-up, growing it from `first`
/// iterations, then samples.
pub(super) fn measure(
    case: &mut dyn Case,
    specs: &[MetricSpec],
    ctx: &Context,
    config: &RunConfig,
    first: u64,
) -> Result<Measured, BenchError> {
    let target = config.min_sample_time().as_secs_f64();
    let mut warnings = Vec::new();
    // Warm-up and batch sizing: grow the batch until one lasts `target`,
    // then keep running full batches until the warm-up time has passed.
    //
    // `fastest` is the least time per iteration any batch took. A batch
    // that lasts the target only because a stall (a preemption, another
    // process, a host that took the vCPU) fell into it twice in a row would
    // otherwise fix the batch at a size whose every sample measures stalls
    // (seen on a loaded CI machine: 10 pointer-chase hops per sample, 104 µs
    // per hop). So a batch is kept only when, at the fastest speed seen, it
    // would still last an eighth of the target; a case whose one quick call
    // misled that estimate stops growing once calibration has spent its
    // budget (the warm-up, and at least 20 targets).
    let warm_start = Instant::now();
    let budget = config.warmup().as_secs_f64().max(20.0 * target);
    let mut spent = 0.0;
    let mut fastest = f64::INFINITY;
    let mut iters: u64 = first.max(1);
    loop {
        let mut b = timed(case, iters)?;
        spent += b.secs;
        if b.secs > 0.0 {
            fastest = fastest.min(b.secs / iters as f64);
        }
        if b.secs >= target {
            // Confirm before fixing the batch size: a one-off stall (a
            // preemption, a thread wake-up, a cold first call) must not leave
            // every sample a single slow iteration that measures the stall.
            b = timed(case, iters)?;
            spent += b.secs;
            if b.secs > 0.0 {
                fastest = fastest.min(b.secs / iters as f64);
            }
            let plausible = iters as f64 * fastest >= target / 8.0 || spent >= budget;
            if b.secs >= target / 2.0 && plausible {
                break;
            }
        }
        // Grow towards the target at the fastest speed seen (a stalled
        // batch would otherwise grow by the least step).
        let per_batch = iters as f64 * fastest;
        let grow = if per_batch.is_finite() && per_batch > 0.0 {
            (target / per_batch * 1.2).clamp(1.5, 10.0)
        } else {
            10.0
        };
        let next = (iters as f64 * grow).ceil() as u64;
        if next >= 1 << 40 {
            return Err(BenchError::Other(format!(
                "a batch of {iters} iterations took only {:.0} ns; the case does no measurable work",
                b.secs * 1e9
            )));
        }
        iters = next;
    }
    while warm_start.elapsed() < config.warmup() && !ctx.cancelled() {
        timed(case, iters)?;
    }

    let mut batches: Vec<Batch> = Vec::new();
    let mut stamps: Option<Vec<f64>> = None;
    if let Some(duration) = config.duration() {
        // Time series: each sample aggregates the batches of one interval.
        let interval = config.interval().as_secs_f64();
        let t0 = Instant::now();
        let mut ts = Vec::new();
        while t0.elapsed() < duration {
            let start = Instant::now();
            let mut acc = Interval::default();
            while start.elapsed().as_secs_f64() < interval {
                acc.add(timed(case, iters)?);
                if ctx.cancelled() {
                    break;
                }
            }
            ts.push(t0.elapsed().as_secs_f64());
            batches.push(acc.finish(specs));
            if ctx.cancelled() {
                warnings.push(Caveat::Interrupted {
                    after_s: t0.elapsed().as_secs_f64(),
                });
                break;
            }
        }
        stamps = Some(ts);
    } else {
        for _ in 0..config.runs() {
            batches.push(timed(case, iters)?);
        }
    }

    let mut metrics = Vec::new();
    let mut hists = Vec::new();
    for spec in specs {
        let mut samples = Vec::with_capacity(batches.len());
        let mut merged: Option<Histogram<u64>> = None;
        let mut tails = TailsBuilder::default();
        for b in &batches {
            samples.push(sample_value(spec, b)?);
            if let (MetricSource::Latency, Some(h)) = (&spec.source, &b.work.latency) {
                tails.add(h);
                match &mut merged {
                    Some(m) => m
                        .add(h)
                        .map_err(|e| BenchError::caused("histogram merge", e))?,
                    None => merged = Some(h.clone()),
                }
            }
        }
        let summary = Summary::new(&samples)
            .map_err(|e| BenchError::Other(format!("metric {}: {e}", spec.name)))?;
        warnings.extend(noisy_warning(&spec.name, &summary, samples.len()));
        let tails = tails.finish(samples.len());
        metrics.push(Metric {
            name: spec.name.to_string(),
            unit: spec.unit.to_string(),
            direction: spec.direction,
            samples,
            timestamps: stamps.clone(),
            rounds: None,
            tails,
            role: Some(spec.role),
            summary,
            latency: merged.as_ref().and_then(LatencySummary::from_histogram_ns),
        });
        hists.push(merged);
    }
    Ok(Measured {
        iters,
        metrics,
        warnings,
        hists,
        ops: batches.iter().map(|b| b.work.ops).sum(),
        secs: batches.iter().map(|b| b.secs).sum(),
    })
}

/// What [`measure`] found.
pub(super) struct Measured {
    /// Iterations per batch.
    pub iters: u64,
    /// One per declared metric.
    pub metrics: Vec<Metric>,
    /// Noise warnings.
    pub warnings: Vec<Caveat>,
    /// Each metric's merged latency histogram.
    pub hists: Hists,
    /// Operations over all samples (warm-up excluded).
    pub ops: u64,
    /// Their time, in seconds.
    pub secs: f64,
}

/// Collects each sample's own p99 and p99.9 from its histogram. A
/// percentile is kept only when every sample had enough operations for it
/// to be more than that sample's maximum (100 for p99, 1000 for p99.9).
#[derive(Default)]
struct TailsBuilder {
    p99: Vec<f64>,
    p99_9: Vec<f64>,
    min_count: Option<u64>,
}

impl TailsBuilder {
    fn add(&mut self, h: &Histogram<u64>) {
        self.p99.push(h.value_at_quantile(0.99) as f64 * 1e-9);
        self.p99_9.push(h.value_at_quantile(0.999) as f64 * 1e-9);
        self.min_count = Some(self.min_count.map_or(h.len(), |c| c.min(h.len())));
    }

    fn finish(self, samples: usize) -> Option<SampleTails> {
        let count = self.min_count?;
        if self.p99.len() != samples {
            return None;
        }
        let t = SampleTails {
            p99: (count >= 100).then_some(self.p99),
            p99_9: (count >= 1000).then_some(self.p99_9),
        };
        (t.p99.is_some() || t.p99_9.is_some()).then_some(t)
    }
}

/// The batches of one time-series interval, accumulated as they come (a
/// long interval of short batches holds one histogram, not one per batch):
/// time, operations and bytes summed, histograms added, and each reported
/// value over the whole interval as its metric's source says (see
/// [`MetricSource::Reported`]).
#[derive(Default)]
struct Interval {
    agg: Batch,
    /// Per reported key: (sum of value × time, sum of time, min, max, last).
    values: std::collections::BTreeMap<Cow<'static, str>, (f64, f64, f64, f64, f64)>,
}

impl Interval {
    fn add(&mut self, b: Batch) {
        let agg = &mut self.agg;
        agg.secs += b.secs;
        agg.work.ops += b.work.ops;
        agg.work.bytes += b.work.bytes;
        if let Some(h) = b.work.latency {
            match &mut agg.work.latency {
                Some(m) => {
                    // Both histograms auto-resize, so adding cannot fail on range.
                    let _ = m.add(&h);
                }
                None => agg.work.latency = Some(h),
            }
        }
        for (k, v) in b.work.values {
            let e = self
                .values
                .entry(k)
                .or_insert((0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, v));
            e.0 += v * b.secs;
            e.1 += b.secs;
            e.2 = e.2.min(v);
            e.3 = e.3.max(v);
            e.4 = v;
        }
    }

    fn finish(self, specs: &[MetricSpec]) -> Batch {
        let mut agg = self.agg;
        for (k, (sum, time, min, max, last)) in self.values {
            let source = specs
                .iter()
                .map(|s| &s.source)
                .find(|s| s.reported_key() == Some(&k));
            let v = match source {
                Some(MetricSource::ReportedMin(_)) => min,
                Some(MetricSource::ReportedMax(_)) => max,
                Some(_) if time > 0.0 => sum / time,
                // Not a metric (a value the case passes for its own notes), or
                // no time: the latest.
                _ => last,
            };
            agg.work.values.insert(k, v);
        }
        agg
    }
}

/// [`Interval`] over a list of batches (tests).
#[cfg(test)]
fn combine(specs: &[MetricSpec], batches: Vec<Batch>) -> Batch {
    let mut acc = Interval::default();
    for b in batches {
        acc.add(b);
    }
    acc.finish(specs)
}

fn sample_value(spec: &MetricSpec, b: &Batch) -> Result<f64, BenchError> {
    let w = &b.work;
    let need_ops = || {
        if w.ops == 0 {
            Err(BenchError::Other(format!(
                "metric {}: the batch reported 0 operations",
                spec.name
            )))
        } else {
            Ok(w.ops as f64)
        }
    };
    let need_time = || {
        if b.secs > 0.0 {
            Ok(b.secs)
        } else {
            Err(BenchError::Other(format!(
                "metric {}: zero elapsed time",
                spec.name
            )))
        }
    };
    match &spec.source {
        MetricSource::TimePerOp => Ok(need_time()? / need_ops()?),
        MetricSource::OpsPerSec => Ok(need_ops()? / need_time()?),
        MetricSource::BytesPerSec => Ok(w.bytes as f64 / need_time()?),
        MetricSource::Latency => match &w.latency {
            Some(h) if !h.is_empty() => Ok(h.mean() * 1e-9),
            _ => Err(BenchError::Other(format!(
                "metric {}: the case recorded no latencies",
                spec.name
            ))),
        },
        MetricSource::Reported(key)
        | MetricSource::ReportedMin(key)
        | MetricSource::ReportedMax(key) => w.values.get(key).copied().ok_or_else(|| {
            BenchError::Other(format!(
                "metric {}: the case did not report `{key}`",
                spec.name
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    //! Batch sizing with fakes that report their own elapsed time
    //! ([`Work::elapsed`]), so the tests are exact and never spin on the
    //! wall clock.

    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::host::Host;

    /// A case whose every iteration takes `per_iter`, except the calls
    /// listed in `stalls` (1-based), which report `stall` instead.
    struct Fake {
        per_iter: Duration,
        stalls: Vec<usize>,
        stall: Duration,
        calls: usize,
        sizes: Vec<u64>,
    }

    impl Fake {
        fn new(per_iter: Duration) -> Fake {
            Fake {
                per_iter,
                stalls: Vec::new(),
                stall: Duration::ZERO,
                calls: 0,
                sizes: Vec::new(),
            }
        }
    }

    impl Case for Fake {
        fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
            self.calls += 1;
            self.sizes.push(iters);
            let elapsed = if self.stalls.contains(&self.calls) {
                self.stall
            } else {
                self.per_iter * iters as u32
            };
            Ok(Work {
                elapsed: Some(elapsed),
                ..Work::ops(iters)
            })
        }

        fn finish(self: Box<Self>) -> crate::bench::Finished {
            crate::bench::Finished::default()
        }
    }

    fn config() -> RunConfig {
        RunConfig::default()
            .to_builder()
            .min_sample_time(Duration::from_millis(10))
            .warmup(Duration::ZERO)
            .runs(5)
            .build()
            .unwrap()
    }

    fn run(case: &mut Fake) -> Result<(u64, Vec<Metric>), BenchError> {
        let ctx = Context::new(Arc::new(Host::default()));
        let specs = [MetricSpec::time_per_op("t")];
        measure(case, &specs, &ctx, &config(), 1).map(|m| (m.iters, m.metrics))
    }

    #[test]
    fn batches_grow_until_a_sample_lasts_the_minimum_time() {
        let mut case = Fake::new(Duration::from_micros(1));
        let (iters, metrics) = run(&mut case).unwrap();
        // ×10 steps (capped growth) from 1 until 10 ms: 10 000 iterations,
        // confirmed once, then 5 samples of that size.
        assert_eq!(iters, 10_000);
        assert_eq!(
            case.sizes,
            [
                1, 10, 100, 1000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000
            ]
        );
        let t = &metrics[0];
        assert_eq!(t.samples.len(), 5);
        assert!(
            t.samples.iter().all(|s| (s - 1e-6).abs() < 1e-15),
            "{:?}",
            t.samples
        );
    }

    #[test]
    fn one_stall_does_not_fix_the_batch_at_its_size() {
        // The second call (10 iterations) stalls for a whole second: that
        // alone would end calibration, but the confirming run is quick, so
        // the batch keeps growing.
        let mut case = Fake::new(Duration::from_micros(1));
        case.stalls = vec![2];
        case.stall = Duration::from_secs(1);
        let (iters, metrics) = run(&mut case).unwrap();
        assert_eq!(iters, 10_000);
        assert_eq!(&case.sizes[..4], [1, 10, 10, 100]);
        assert!(metrics[0].samples.iter().all(|s| (s - 1e-6).abs() < 1e-15));
    }

    #[test]
    fn stalls_that_confirm_each_other_do_not_fix_a_small_batch() {
        // Calls 2 and 3 (10 iterations, and its confirmation) both stall
        // for 12 ms, past the 10 ms target: the first call showed 1 µs
        // per iteration, so 10 iterations cannot be a 10 ms batch and the
        // batch keeps growing to the right size.
        let mut case = Fake::new(Duration::from_micros(1));
        case.stalls = vec![2, 3];
        case.stall = Duration::from_millis(12);
        let (iters, metrics) = run(&mut case).unwrap();
        assert_eq!(&case.sizes[..4], [1, 10, 10, 100]);
        assert_eq!(iters, 10_000);
        assert!(metrics[0].samples.iter().all(|s| (s - 1e-6).abs() < 1e-15));
    }

    #[test]
    fn a_misleading_quick_first_call_costs_at_most_the_calibration_budget() {
        // The first call reports 1 ns, every later one 1 ms per iteration:
        // the estimate says the batches are far too small, but growth stops
        // once calibration has spent 20 targets.
        let mut case = Fake::new(Duration::from_millis(1));
        case.stalls = vec![1];
        case.stall = Duration::from_nanos(1);
        let (iters, _) = run(&mut case).unwrap();
        let spent: u64 = case.sizes[..case.sizes.len() - 5].iter().sum();
        assert!(iters <= 200, "{iters} iterations per batch");
        assert!(spent <= 400, "{spent} ms calibrating");
    }

    #[test]
    fn a_case_that_takes_no_time_is_an_error_not_a_hang() {
        let mut case = Fake::new(Duration::ZERO);
        let e = run(&mut case).unwrap_err().to_string();
        assert!(e.contains("does no measurable work"), "{e}");
        assert!(case.calls < 20, "{} calls", case.calls);
    }

    #[test]
    fn a_slow_case_runs_one_iteration_per_sample() {
        // Each iteration takes longer than the minimum sample time.
        let mut case = Fake::new(Duration::from_millis(50));
        let (iters, metrics) = run(&mut case).unwrap();
        assert_eq!(iters, 1);
        assert_eq!(case.sizes, [1, 1, 1, 1, 1, 1, 1]);
        assert!(metrics[0].samples.iter().all(|s| (s - 0.05).abs() < 1e-12));
    }

    #[test]
    fn an_interval_reports_over_all_its_batches_not_the_last() {
        let specs = [
            MetricSpec {
                name: "bits".into(),
                unit: "bit/s".into(),
                direction: crate::bench::Direction::Higher,
                source: MetricSource::Reported("bits".into()),
                role: crate::bench::MetricRole::Headline,
            },
            MetricSpec {
                name: "slowest".into(),
                unit: "B/s".into(),
                direction: crate::bench::Direction::Higher,
                source: MetricSource::ReportedMin("slowest".into()),
                role: crate::bench::MetricRole::Secondary,
            },
            MetricSpec {
                name: "worst".into(),
                unit: "".into(),
                direction: crate::bench::Direction::Lower,
                source: MetricSource::ReportedMax("worst".into()),
                role: crate::bench::MetricRole::Secondary,
            },
        ];
        let batch = |secs: f64, bits: f64, slowest: f64, worst: f64| {
            let mut w = Work::ops_bytes(1, (bits * secs / 8.0) as u64);
            w.values.insert("bits".into(), bits);
            w.values.insert("slowest".into(), slowest);
            w.values.insert("worst".into(), worst);
            Batch { work: w, secs }
        };
        // 0.3 s at 10 Gbit/s then 0.1 s at 2 Gbit/s: 3.2 Gbit in 0.4 s.
        let b = combine(
            &specs,
            vec![batch(0.3, 10e9, 5.0, 1.0), batch(0.1, 2e9, 7.0, 3.0)],
        );
        assert!((b.secs - 0.4).abs() < 1e-12);
        assert_eq!(b.work.ops, 2);
        assert!(
            (b.work.values["bits"] - 8e9).abs() < 1.0,
            "{:?}",
            b.work.values
        );
        assert!((b.work.values["bits"] - b.work.bytes as f64 * 8.0 / b.secs).abs() < 1e3);
        assert_eq!(b.work.values["slowest"], 5.0);
        assert_eq!(b.work.values["worst"], 3.0);
    }
}
