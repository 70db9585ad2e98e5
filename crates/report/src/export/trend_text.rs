//! The text of a history shared by its formats: each series' short key,
//! the sparkline, the verdict line and the notes. A leaf below the
//! exporters of a trend (`trend.rs`, `html/trend.rs`) and `markdown.rs`.

use std::collections::BTreeSet;

use benchsuite_core::units::format_value;

use crate::trend::{ChangePoint, Series, Trend};

/// The most runs a sparkline shows: the newest.
pub(super) const SPARK_RUNS: usize = 60;

/// Each series' short key (what differs between the records of one
/// benchmark).
pub(crate) fn keys(trend: &Trend) -> Vec<String> {
    let items: Vec<(&str, &benchsuite_core::param::Point)> = trend
        .series
        .iter()
        .map(|s| (s.id.as_str(), &s.params))
        .collect();
    super::keys::short_keys(&items, &BTreeSet::new())
}

/// The run medians as one line of block characters, low to high (the
/// newest 60; a run without the metric is a space).
pub fn sparkline(medians: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let shown = &medians[medians.len().saturating_sub(SPARK_RUNS)..];
    let (lo, hi) = shown
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    shown
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if hi <= lo => BARS[3],
            Some(v) => BARS[(((v - lo) / (hi - lo)) * 7.0).round().clamp(0.0, 7.0) as usize],
        })
        .collect()
}

/// `r21.json (abc1234): -25.0% [-28.1%, -21.9%] regression, ALARM`.
pub(super) fn change_text(s: &Series, c: &ChangePoint) -> String {
    let commit = c
        .commit
        .as_deref()
        .map(|x| format!(" ({})", &x[..x.len().min(10)]))
        .unwrap_or_default();
    let mut what = Vec::new();
    if c.regression {
        what.push("regression".to_string());
    }
    if let Some(why) = &c.acknowledged {
        what.push(format!("acknowledged: {why}"));
    }
    if c.alarm {
        what.push("ALARM".into());
    }
    format!(
        "{}{commit}: {} [{}, {}] from {} to {}{}",
        c.run,
        s.step_text(c.step),
        s.step_text(c.interval[0]),
        s.step_text(c.interval[1]),
        format_value(c.before, &s.unit),
        format_value(c.after, &s.unit),
        if what.is_empty() {
            String::new()
        } else {
            format!(", {}", what.join(", "))
        }
    )
}

/// The verdict line: alarms first.
pub(crate) fn summary(trend: &Trend) -> String {
    let n: usize = trend.series.iter().map(|s| s.change_points.len()).sum();
    let regressions = trend
        .series
        .iter()
        .flat_map(|s| &s.change_points)
        .filter(|c| c.regression)
        .count();
    let acked = trend
        .series
        .iter()
        .flat_map(|s| &s.change_points)
        .filter(|c| c.acknowledged.is_some())
        .count();
    let alarms = trend.alarms().count();
    let head = if alarms > 0 {
        format!(
            "history ALARM: {alarms} unacknowledged regression{} in the last {} runs",
            if alarms == 1 { "" } else { "s" },
            trend.since
        )
    } else {
        format!(
            "history passed: no unacknowledged regression in the last {} runs",
            trend.since
        )
    };
    format!(
        "{head}; {n} change point{} in {} metrics over {} runs ({regressions} regression{}, {acked} acknowledged)",
        if n == 1 { "" } else { "s" },
        trend.series.len(),
        trend.runs.len(),
        if regressions == 1 { "" } else { "s" },
    )
}

/// What the reader should know: the method, left-out reports, ties, stale
/// acknowledgements.
pub(crate) fn notes(trend: &Trend) -> Vec<String> {
    let first = trend.runs.first();
    let last = trend.runs.last();
    let mut notes = vec![format!(
        "runs: {} ({} … {}), oldest first by started_at",
        trend.runs.len(),
        first.map_or("", |r| r.name.as_str()),
        last.map_or("", |r| r.name.as_str()),
    )];
    notes.push(format!(
        "method: each gated metric's run medians split where their ranks differ most (a permutation test of the largest split at {}% per segment, so a series without a change is split about that often; a machine state that outlasts runs is found as one); a regression is worse by {}% or more ({}pp for metrics in %)",
        trend.alpha * 100.0,
        trend.threshold * 100.0,
        crate::trend::PERCENT_THRESHOLD_PP
    ));
    if !trend.rules.is_empty() {
        notes.push(format!(
            "per-metric thresholds (a regression must reach them instead): {}",
            trend.rules.join(", ")
        ));
    }
    for e in &trend.excluded {
        notes.push(format!("left out (another testbed): {e}"));
    }
    notes.extend(trend.notes.iter().cloned());
    for a in &trend.stale {
        notes.push(format!(
            "stale acknowledgement: {}{} at {} ({}): no change point starts there",
            a.record,
            a.metric
                .as_ref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default(),
            a.commit,
            a.reason
        ));
    }
    notes
}
