//! A history's change points ([`crate::trend`]) as a table (a sparkline
//! of run medians per metric), JSON, CSV (one row per change point) or
//! Markdown (a CI job summary: the verdict, then only the metrics that
//! changed).

use std::collections::BTreeSet;
use std::io::{self, Write};

use benchsuite_core::units::format_value;

use super::Format;
use crate::trend::{ChangePoint, Series, Trend};

/// The most runs a sparkline shows: the newest.
const SPARK_RUNS: usize = 60;

/// Writes `trend` in `format` (table, json, csv, markdown, html: a chart
/// per metric); the other formats are for reports and return
/// [`io::ErrorKind::InvalidInput`].
pub fn write_trend(format: Format, trend: &Trend, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Table => super::table::printable(out, |o| table(trend, o)),
        Format::Json => {
            benchsuite_core::text::write_json_pretty(&mut *out, trend).map_err(io::Error::from)?;
            writeln!(out)
        }
        Format::Csv => csv(trend, out),
        Format::Markdown => markdown(trend, out),
        Format::Html => out.write_all(super::html::render_trend(trend).as_bytes()),
        f => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the {f} format is for reports; a history is written as table, json, csv or md"
            ),
        )),
    }
}

/// Each series' short key (what differs between the records of one
/// benchmark).
pub(super) fn keys(trend: &Trend) -> Vec<String> {
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
fn change_text(s: &Series, c: &ChangePoint) -> String {
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
pub(super) fn summary(trend: &Trend) -> String {
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
pub(super) fn notes(trend: &Trend) -> Vec<String> {
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

fn table(trend: &Trend, out: &mut dyn Write) -> io::Result<()> {
    let keys = keys(trend);
    let kw = keys
        .iter()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let mw = trend
        .series
        .iter()
        .map(|s| s.metric.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let spark = trend.runs.len().clamp(5, SPARK_RUNS);
    writeln!(
        out,
        "{:kw$}  {:mw$}  {:spark$}  {:>15}  change points",
        "benchmark", "metric", "run medians", "last"
    )?;
    for (s, key) in trend.series.iter().zip(&keys) {
        let last = s
            .medians
            .iter()
            .rev()
            .flatten()
            .next()
            .map(|v| format_value(*v, &s.unit))
            .unwrap_or_default();
        let lead = format!(
            "{key:kw$}  {:mw$}  {:spark$}  {last:>15}  ",
            s.metric,
            sparkline(&s.medians)
        );
        let pad = " ".repeat(lead.chars().count());
        if s.change_points.is_empty() {
            writeln!(out, "{}-", lead)?;
        }
        for (i, c) in s.change_points.iter().enumerate() {
            let text = change_text(s, c);
            writeln!(out, "{}{text}", if i == 0 { &lead } else { &pad })?;
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", summary(trend))?;
    for n in notes(trend) {
        for l in super::table::wrap(&n, "", "    ") {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

const CSV_HEADER: [&str; 17] = [
    "key",
    "id",
    "metric",
    "unit",
    "run",
    "commit",
    "at",
    "before",
    "after",
    "step",
    "step_low",
    "step_high",
    "p",
    "regression",
    "acknowledged",
    "alarm",
    "runs",
];

fn csv(trend: &Trend, out: &mut dyn Write) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    let header: Vec<String> = CSV_HEADER.iter().map(|s| s.to_string()).collect();
    super::csv::write_row(&mut w, &header)?;
    for s in &trend.series {
        for c in &s.change_points {
            super::csv::write_row(
                &mut w,
                &[
                    s.key.clone(),
                    s.id.clone(),
                    s.metric.clone(),
                    s.unit.clone(),
                    c.run.clone(),
                    c.commit.clone().unwrap_or_default(),
                    c.at.to_string(),
                    super::csv::num(Some(c.before)),
                    super::csv::num(Some(c.after)),
                    super::csv::num(Some(c.step)),
                    super::csv::num(Some(c.interval[0])),
                    super::csv::num(Some(c.interval[1])),
                    super::csv::num(Some(c.p)),
                    c.regression.to_string(),
                    c.acknowledged.clone().unwrap_or_default(),
                    c.alarm.to_string(),
                    trend.runs.len().to_string(),
                ],
            )?;
        }
    }
    w.flush()
}

/// A CI job summary: the verdict, then only the metrics with a change
/// point, each with its sparkline.
fn markdown(trend: &Trend, out: &mut dyn Write) -> io::Result<()> {
    let esc = super::markdown::escape;
    let mark = if trend.alarms().next().is_some() {
        "❌"
    } else {
        "✅"
    };
    writeln!(out, "**{mark} {}**\n", esc(&summary(trend)))?;
    let keys = keys(trend);
    let changed: Vec<(&Series, &String)> = trend
        .series
        .iter()
        .zip(&keys)
        .filter(|(s, _)| !s.change_points.is_empty())
        .collect();
    if !changed.is_empty() {
        writeln!(out, "| benchmark | metric | run medians | change point |")?;
        writeln!(out, "| :--- | :--- | :--- | :--- |")?;
        for (s, key) in changed {
            for c in &s.change_points {
                writeln!(
                    out,
                    "| {} | {} | `{}` | {} |",
                    esc(key),
                    esc(&s.metric),
                    sparkline(&s.medians),
                    esc(&change_text(s, c))
                )?;
            }
        }
        writeln!(out)?;
    }
    for n in notes(trend) {
        writeln!(out, "- {}", esc(&n))?;
    }
    Ok(())
}
