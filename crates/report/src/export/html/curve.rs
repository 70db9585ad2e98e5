//! The latency–throughput curve of a capacity search: p50, p99 and p99.9
//! (from each operation's intended start) against the rate carried, with
//! the knee (the highest rate carried without saturation), the answer and
//! the target marked.

use super::charts::titled;
use super::svg::{Axis, Chart, Line, Pt, color};
use benchsuite_core::results::Record;
use benchsuite_core::units::format_value;

/// The curve of the search whose summary is `r`, if it has two steps or
/// more that ran.
pub(super) fn curve_chart(r: &Record) -> Option<String> {
    let c = r.capacity.as_ref()?;
    let mut steps: Vec<_> = c
        .steps
        .iter()
        .filter(|s| !s.failed && s.achieved > 0.0 && s.p50.is_finite())
        .collect();
    if steps.len() < 2 {
        return None;
    }
    steps.sort_by(|a, b| a.achieved.total_cmp(&b.achieved));
    let series =
        |name: &str, i: usize, value: &dyn Fn(&benchsuite_core::capacity::Step) -> f64| Line {
            name: name.to_string(),
            color: color(i),
            points: steps
                .iter()
                .map(|s| Pt {
                    x: s.achieved,
                    y: value(s).max(1e-9),
                    band: None,
                    title: format!(
                        "offered {}, carried {}{}: {name} {}",
                        format_value(s.offered, "/s"),
                        format_value(s.achieved, "/s"),
                        if s.saturated { " (saturated)" } else { "" },
                        format_value(value(s), "s")
                    ),
                })
                .collect(),
            dashed: false,
            markers: true,
            joined: true,
            opacity: 1.0,
        };
    let mut lines = vec![
        series("p50", 0, &|s| s.p50),
        series("p99", 1, &|s| s.p99),
        series("p99.9", 2, &|s| s.p99_9),
    ];
    if let (Some(slo), Some(bound)) = (&c.slo, slo_bound(c)) {
        let (lo, hi) = (steps[0].achieved, steps[steps.len() - 1].achieved);
        lines.push(Line {
            name: format!("target {slo}"),
            color: color(3),
            points: [lo, hi]
                .iter()
                .map(|x| Pt {
                    x: *x,
                    y: bound,
                    band: None,
                    title: format!("target {slo}"),
                })
                .collect(),
            dashed: true,
            markers: false,
            joined: true,
            opacity: 0.8,
        });
    }
    let mut marks = Vec::new();
    if let Some(k) = c.knee {
        marks.push((k, format!("knee {}", format_value(k, "/s"))));
    }
    if let (Some(rate), Some(_)) = (c.rate, &c.slo) {
        // The answer is an offered rate; mark it where that step carried.
        let at = c
            .steps
            .iter()
            .find(|s| s.offered == rate)
            .map_or(rate, |s| s.achieved);
        marks.push((at, format!("capacity {}", format_value(rate, "/s"))));
    }
    Some(
        Chart {
            title: titled(r, "latency against the rate carried"),
            x: Axis {
                label: "operations per second carried".into(),
                log: true,
                integer: false,
                format: Box::new(|v| format_value(v, "/s")),
            },
            y: Axis {
                label: format!("{} from intended start (s)", c.metric),
                log: true,
                integer: false,
                format: Box::new(|v| format_value(v, "s")),
            },
            lines,
            marks,
        }
        .render(),
    )
}

/// The target's bound in seconds, read back from its text (`p99<=1ms`).
fn slo_bound(c: &benchsuite_core::capacity::Capacity) -> Option<f64> {
    let text = c.slo.as_deref()?;
    benchsuite_core::capacity::Slo::parse(text)
        .ok()
        .map(|s| s.bound_s)
}
