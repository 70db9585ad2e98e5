//! One point through a case: prepared, measured ([`super::measure`]),
//! always finished, and made into its record. The plan's loops
//! ([`super::run_plan`]) and a capacity search's steps
//! ([`crate::capacity`]) both run points through [`run_point`].

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::measure::{Hists, Measured, measure, over_peak_warning};
use super::steal::{CpuTimes, STEAL_WARN};
use crate::bench::{About, Benchmark, Context, Finished, MetricSpec};
use crate::caveat::Caveat;
use crate::config::RunConfig;
use crate::error::{BenchError, error_chain};
use crate::openloop::{OpenLoad, Rate};
use crate::param::{Point, Value};
use crate::results::{Record, Status};

/// The shortest sample of an open-loop point (`rate=N`): 100 ms.
pub const OPEN_LOOP_SAMPLE: std::time::Duration = std::time::Duration::from_millis(100);

pub(super) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// `point` with the values the case resolved in `prepare`.
fn resolved_point(point: &Point, resolved: &[(Cow<'static, str>, Value)]) -> Point {
    let mut p = point.clone();
    for (name, value) in resolved {
        if p.get(name).is_some() {
            p.set(name, value.clone());
        }
    }
    p
}

pub(crate) fn run_point(
    bench: &dyn Benchmark,
    specs: &[MetricSpec],
    id: &str,
    point: &Point,
    ctx: &Context,
    config: &RunConfig,
) -> (Record, Hists) {
    let mut case = match catch_unwind(AssertUnwindSafe(|| bench.prepare(ctx, point))) {
        Ok(Ok(c)) => c,
        Ok(Err(BenchError::Skip(reason))) => {
            return (Record::skipped(id, point.clone(), reason), Vec::new());
        }
        Ok(Err(e)) => {
            return (
                Record::failed(id, point.clone(), format!("prepare: {}", error_chain(&e))),
                Vec::new(),
            );
        }
        Err(p) => {
            let why = format!("prepare panicked: {}", panic_message(&p));
            return (Record::failed(id, point.clone(), why), Vec::new());
        }
    };
    let cpu_before = CpuTimes::read();
    // An open-loop point: samples of at least OPEN_LOOP_SAMPLE, so the
    // drain at the end of each (its last operations' latency) is a small
    // part of it; batches grow from two operations, since one takes a
    // latency whatever the rate (growing from it overshoots at low rates:
    // 1 then 10 at rate=1 is a 9 s batch), and two take one period. Not
    // from the rate's full sample size: a system that does not keep up
    // would take that many operations at its own, lower speed.
    let open_config;
    let (config, first) = match Rate::of(point).fixed() {
        Some(_) => {
            open_config = config.with_min_sample_time_at_least(OPEN_LOOP_SAMPLE);
            (&open_config, 2)
        }
        None => (config, 1),
    };
    let measured = catch_unwind(AssertUnwindSafe(|| {
        measure(case.as_mut(), specs, ctx, config, first)
    }))
    .unwrap_or_else(|p| {
        Err(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        )))
    });
    let finished = catch_unwind(AssertUnwindSafe(|| case.finish())).unwrap_or_else(|p| Finished {
        error: Some(BenchError::Other(format!(
            "panicked: {}",
            panic_message(&p)
        ))),
        ..Finished::default()
    });
    let steal = CpuTimes::read()
        .zip(cpu_before)
        .and_then(|(after, before)| after.steal_fraction_since(&before));
    let About {
        peak,
        caveats,
        notes,
        resolved,
    } = finished.about;
    let params = resolved_point(point, &resolved);
    let requested = (params != *point).then(|| point.clone());
    let mut hists = Vec::new();
    let mut record = match measured {
        Ok(Measured {
            iters,
            metrics,
            mut warnings,
            hists: h,
            ops,
            secs,
        }) => {
            hists = h;
            let load = Rate::of(point)
                .fixed()
                .map(|offered| OpenLoad::new(offered, ops, secs));
            if let Some(l) = load.filter(|l| l.saturated) {
                warnings.push(Caveat::Saturated {
                    offered: l.offered,
                    achieved: l.achieved,
                });
            }
            warnings.extend(caveats);
            if let Some(st) = steal.filter(|s| *s > STEAL_WARN) {
                warnings.push(Caveat::Steal { fraction: st });
            }
            let peak = peak.map(|mut pk| {
                if let Some(m) = metrics.iter().find(|m| m.name == pk.metric) {
                    let eff = m.summary.median / pk.value;
                    if eff.is_finite() {
                        pk.efficiency = Some(eff);
                        if eff > 1.0 {
                            warnings.push(over_peak_warning(&pk.metric, eff));
                        }
                    }
                }
                pk
            });
            Record {
                requested,
                iters_per_sample: Some(iters),
                peak,
                warnings,
                notes,
                load,
                ..Record::ok(id, params, metrics)
            }
        }
        Err(e) => {
            let mut r = Record::failed(id, params, error_chain(&e));
            r.requested = requested;
            r.warnings.extend(caveats);
            r.notes.extend(notes);
            r
        }
    };
    if let Some(e) = finished.error {
        record.status = Status::Failed;
        let msg = format!("teardown: {}", error_chain(&e));
        record.reason = Some(match record.reason.take() {
            Some(r) => format!("{r}; {msg}"),
            None => msg,
        });
    }
    (record, hists)
}
