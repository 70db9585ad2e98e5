//! A history's change points ([`crate::trend`]) as a table (a sparkline
//! of run medians per metric), JSON, CSV (one row per change point) or
//! Markdown (a CI job summary: the verdict, then only the metrics that
//! changed).

use std::io::{self, Write};

use benchsuite_core::units::format_value;

use super::Format;
use super::trend_text::{SPARK_RUNS, change_text, keys, notes, sparkline, summary};
use crate::trend::{Series, Trend};

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
        // One row a metric; its change points oldest first, one a line.
        for (s, key) in changed {
            let points: Vec<String> = s
                .change_points
                .iter()
                .map(|c| esc(&change_text(s, c)))
                .collect();
            writeln!(
                out,
                "| {} | {} | `{}` | {} |",
                esc(key),
                esc(&s.metric),
                sparkline(&s.medians),
                points.join("<br>")
            )?;
        }
        writeln!(out)?;
    }
    for n in notes(trend) {
        writeln!(out, "- {}", esc(&n))?;
    }
    Ok(())
}
