//! The trend page (`benchsuite history --format html`): per gated metric,
//! its run medians over the history with the commit of each run on hover
//! and each run's rounds beneath them,
//! the level of each segment, the change points and acknowledgements
//! marked, and the band the history predicts for the next run.

use std::fmt::Write as _;

use super::common::STYLE;
use super::svg::{Axis, Chart, Line, Pt, escape};
use crate::trend::{Series, Trend};
use benchsuite_core::units::format_value;

/// The page of `trend`: the verdict and notes, then a chart per metric
/// with a change point (regressions first), then the others.
pub fn render_trend(trend: &Trend) -> String {
    let mut h = String::new();
    let title = format!("benchsuite history: {} runs", trend.runs.len());
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>",
        t = escape(&title)
    );
    let _ = writeln!(
        h,
        "<p class=\"{}\"><b>{}</b></p>",
        if trend.exit_code() == 0 {
            "ok"
        } else {
            "failed"
        },
        escape(&super::super::trend_text::summary(trend))
    );
    h.push_str("<ul>");
    for n in super::super::trend_text::notes(trend) {
        let _ = write!(h, "<li>{}</li>", escape(&n));
    }
    h.push_str("</ul>\n");
    let keys = super::super::trend_text::keys(trend);
    let mut order: Vec<(usize, &Series)> = trend.series.iter().enumerate().collect();
    // Alarms, then regressions, then other change points, then the rest.
    let rank = |s: &Series| {
        if s.change_points.iter().any(|c| c.alarm) {
            0
        } else if s.change_points.iter().any(|c| c.regression) {
            1
        } else if !s.change_points.is_empty() {
            2
        } else {
            3
        }
    };
    order.sort_by_key(|(i, s)| (rank(s), *i));
    let mut quiet = false;
    for (i, s) in order {
        if s.change_points.is_empty() && !quiet {
            quiet = true;
            h.push_str("<h2>Metrics without a change point</h2>\n<div class=\"grid\">");
        }
        h.push_str(&chart(trend, s, &keys[i]));
        h.push('\n');
    }
    if quiet {
        h.push_str("</div>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// One metric's chart.
fn chart(trend: &Trend, s: &Series, key: &str) -> String {
    let unit = s.unit.clone();
    let points: Vec<Pt> = s
        .medians
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let v = (*v)?;
            let run = &trend.runs[i];
            Some(Pt {
                x: (i + 1) as f64,
                y: v,
                band: None,
                title: format!(
                    "{} ({}, {}): {}",
                    run.name,
                    run.commit.as_deref().unwrap_or("no commit"),
                    run.started_at,
                    format_value(v, &unit)
                ),
            })
        })
        .collect();
    let positive = points.iter().all(|p| p.y > 0.0);
    // Each run's rounds (`--rounds`), drawn light beneath its median: the
    // spread within a run beside the steps between runs.
    let rounds: Vec<Pt> = s
        .rounds
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            let run = &trend.runs[i];
            let unit = &unit;
            r.iter().enumerate().map(move |(k, v)| Pt {
                x: (i + 1) as f64,
                y: *v,
                band: None,
                title: format!("{} round {}: {}", run.name, k + 1, format_value(*v, unit)),
            })
        })
        .collect();
    let positive = positive && rounds.iter().all(|p| p.y > 0.0);
    let mut lines = Vec::new();
    if !rounds.is_empty() {
        lines.push(Line {
            name: "round median".into(),
            color: "#56B4E9",
            points: rounds,
            dashed: false,
            markers: true,
            joined: false,
            opacity: 0.45,
        });
    }
    lines.push(Line {
        name: "run median".into(),
        color: "#0072B2",
        points,
        dashed: false,
        markers: true,
        joined: true,
        opacity: 1.0,
    });
    // Each segment's level, and the band for the next run from the last.
    let n = trend.runs.len();
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(s.change_points.iter().map(|c| c.at));
    bounds.push(n);
    for (k, w) in bounds.windows(2).enumerate() {
        let vals: Vec<f64> = s.medians[w[0]..w[1]].iter().flatten().copied().collect();
        if vals.is_empty() {
            continue;
        }
        let level = benchsuite_core::stats::median(&vals);
        lines.push(Line {
            name: if k == 0 {
                "level".into()
            } else {
                String::new()
            },
            color: "#555555",
            points: vec![
                Pt {
                    x: (w[0] + 1) as f64,
                    y: level,
                    band: None,
                    title: format!("level {}", format_value(level, &unit)),
                },
                Pt {
                    x: w[1] as f64,
                    y: level,
                    band: None,
                    title: format!("level {}", format_value(level, &unit)),
                },
            ],
            dashed: true,
            markers: false,
            joined: true,
            opacity: 0.8,
        });
    }
    let last: Vec<f64> = s.medians[*bounds.iter().rev().nth(1).unwrap_or(&0)..]
        .iter()
        .flatten()
        .copied()
        .collect();
    if last.len() >= 3 && positive {
        // The last segment's spread of run medians on the log scale: where
        // the next run of an unchanged build lands about 95% of the time.
        let logs: Vec<f64> = last.iter().map(|v| v.ln()).collect();
        let m = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd =
            (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt();
        let k = 1.96 * (1.0 + 1.0 / logs.len() as f64).sqrt();
        let (lo, hi) = ((m - k * sd).exp(), (m + k * sd).exp());
        lines.push(Line {
            name: "next run, predicted".into(),
            color: "#E69F00",
            points: vec![Pt {
                x: (n + 1) as f64,
                y: m.exp(),
                band: Some((lo, hi)),
                title: format!(
                    "the next run of an unchanged build: {} … {}",
                    format_value(lo, &unit),
                    format_value(hi, &unit)
                ),
            }],
            dashed: false,
            markers: true,
            joined: true,
            opacity: 1.0,
        });
    }
    let marks = s
        .change_points
        .iter()
        .map(|c| {
            let what = if c.acknowledged.is_some() {
                "acknowledged"
            } else if c.alarm {
                "ALARM"
            } else if c.regression {
                "regression"
            } else {
                "change"
            };
            (c.at as f64 + 0.5, format!("{} {what}", s.step_text(c.step)))
        })
        .collect();
    let u = unit.clone();
    let c = Chart {
        title: format!("{key}: {}", s.metric),
        x: Axis {
            label: "run (oldest first)".into(),
            log: false,
            integer: true,
            format: Box::new(|v| format!("{v:.0}")),
        },
        y: Axis {
            label: format!("{} ({unit})", s.metric),
            log: positive,
            integer: false,
            format: Box::new(move |v| format_value(v, &u)),
        },
        lines,
        marks,
    };
    c.render()
}
