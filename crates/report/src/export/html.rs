//! HTML: one self-contained page of charts for one or more reports.
//!
//! The page needs no network and no JavaScript: charts are inline SVG
//! (drawn by the small `svg` module), tooltips are SVG `<title>`s, and the reports
//! themselves are embedded as a JSON array in
//! `<script type="application/json" id="benchsuite-reports">` (with `</`
//! written `<\/` and `<!--` as `\u003c!--`), so the HTML file is also a data file: see
//! [`read_embedded`].
//!
//! What it shows, in order:
//! - with two or more reports, the change of each metric of every later
//!   report against the first, judged by [`crate::compare::compare`]
//!   (regressions in red);
//! - one chart per sweep: for each benchmark (and plan phase), each
//!   numeric parameter that varies while the others stay put, the headline
//!   metric's median against it (log2 axis when it spans more than 8×), the
//!   p5–p95 spread as a band, one series per value of the other parameters
//!   (and per report; past six combinations of several parameters, one
//!   chart per value of the parameter with the fewest values),
//!   the record's theoretical peak dashed, and cache sizes marked on size
//!   sweeps;
//! - the latency–throughput curve of each capacity search (`rate=auto`,
//!   `--slo`): p50, p99 and p99.9 against the rate carried, the knee, the
//!   answer and the target marked;
//! - the latency ladder (p50…p99.99, max) of latency metrics and the
//!   per-interval trace of time series, of the last report;
//! - the host, and every record with its warnings and notes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::compare::{CompareOptions, Tolerance, Verdict, compare};
use benchsuite_core::results::{Report, Status};
use benchsuite_core::units::format_value;

mod charts;
mod common;
mod curve;
mod fleet;
mod svg;
mod trend;

use charts::*;
pub use common::DATA_ID;
use common::*;

pub use fleet::render_fleet;
pub use trend::render_trend;

use svg::{ChangeRow, escape};

/// Writes the page for `reports`, each with the label it is shown under
/// (a file name); the first is the base the others are compared against.
pub fn write_html(reports: &[(String, Report)], out: &mut dyn Write) -> io::Result<()> {
    out.write_all(render(reports).as_bytes())
}

/// Writes the fleet page of a merged fleet report (`benchsuite merge`),
/// shown under `label`: see [`render_fleet`].
pub fn write_fleet_html(
    label: &str,
    fleet: &crate::fleet::Fleet,
    out: &mut dyn Write,
) -> io::Result<()> {
    out.write_all(render_fleet(label, fleet).as_bytes())
}

/// Reads back the reports embedded in a page written by [`write_html`] or
/// [`write_fleet_html`] (a fleet's host reports).
pub fn read_embedded(html: &str) -> Option<Result<Vec<Report>, serde_json::Error>> {
    let open = format!(r#"<script type="application/json" id="{DATA_ID}">"#);
    let start = html.find(&open)? + open.len();
    let end = start + html[start..].find("</script>")?;
    Some(serde_json::from_str(&html[start..end]))
}

/// The page for `reports`, as a string.
pub fn render(reports: &[(String, Report)]) -> String {
    let mut h = String::new();
    let title = match reports {
        [] => "benchsuite report".to_string(),
        [(l, _)] => format!("benchsuite report: {l}"),
        _ => format!(
            "benchsuite report: {}",
            reports
                .iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
    };
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>",
        escape(&title),
        escape(&title)
    );
    h.push_str("<table><tr><th>report</th><th>started</th><th>host</th><th>tool</th><th>records</th><th>ok</th></tr>");
    for (l, r) in reports {
        let ok = r.records.iter().filter(|x| x.status == Status::Ok).count();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{ok}</td></tr>",
            escape(l),
            escape(&r.started_at),
            escape(r.host.hostname.as_deref().unwrap_or("?")),
            escape(&r.tool_version),
            r.records.len()
        );
    }
    h.push_str("</table>\n");

    if reports.len() >= 2 {
        changes(&mut h, reports);
    }

    // No section without content: a run without a sweep has no sweep
    // section.
    let sw = sweeps(reports);
    if !sw.is_empty() {
        let _ = writeln!(h, "<h2>Sweeps ({})</h2>", sw.len());
    }
    for s in &sw {
        h.push_str(&sweep_chart(s, reports));
        h.push('\n');
    }

    let mut curves = String::new();
    for (_, rep) in reports {
        for r in &rep.records {
            if let Some(c) = curve::curve_chart(r) {
                curves.push_str(&c);
                if let Some(cap) = &r.capacity {
                    let _ = writeln!(curves, "<p>{}</p>", escape(&cap.sentence()));
                }
            }
        }
    }
    if !curves.is_empty() {
        let _ = writeln!(
            h,
            "<h2>Latency against throughput</h2>\n<p>Open loop: each operation was started on a fixed schedule and its latency counts from that intended start, so a stall counts for every operation queued behind it. Past the knee the system no longer carries what is offered and the latency grows with the length of the run.</p>\n{curves}"
        );
    }

    let last = reports.len().saturating_sub(1);
    let searched: BTreeSet<&str> = reports
        .last()
        .map(|(_, rep)| {
            rep.records
                .iter()
                .filter(|r| r.capacity.is_some())
                .map(|r| r.id.as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut lat = String::new();
    let mut trace = String::new();
    for (i, (_, rep)) in reports.iter().enumerate() {
        if i != last {
            continue;
        }
        for r in rep.records.iter().filter(|r| r.status == Status::Ok) {
            // A search's steps are drawn as its curve, not one ladder each.
            let step = r.load.is_some() && searched.contains(r.id.as_str());
            for m in &r.metrics {
                if !step && let Some(c) = latency_chart(r, m) {
                    lat.push_str(&c);
                }
                if let Some(c) = trace_chart(r, m) {
                    trace.push_str(&c);
                }
            }
        }
    }
    if !lat.is_empty() {
        let _ = writeln!(
            h,
            "<h2>Latency percentiles</h2>\n<div class=\"grid\">{lat}</div>"
        );
    }
    if !trace.is_empty() {
        let _ = writeln!(h, "<h2>Time series</h2>\n{trace}");
    }

    for (l, rep) in reports {
        host(&mut h, l, rep);
    }
    for (l, rep) in reports {
        records(&mut h, l, rep);
    }

    let json =
        benchsuite_core::text::to_json_compact(&reports.iter().map(|(_, r)| r).collect::<Vec<_>>())
            .expect("a report always serialises")
            // Nothing in the data may end the element (`</script>`) or open
            // the double-escaped state of script data (`<!--`).
            .replace("<!--", "\\u003c!--")
            .replace("</", "<\\/");
    let _ = writeln!(
        h,
        "<script type=\"application/json\" id=\"{DATA_ID}\">{json}</script>\n</body></html>"
    );
    h
}

fn changes(h: &mut String, reports: &[(String, Report)]) {
    let (bl, base) = &reports[0];
    for (nl, new) in &reports[1..] {
        let _ = writeln!(h, "<h2>Changes: {} vs {}</h2>", escape(nl), escape(bl));
        let c = match compare(base, new, &CompareOptions::default()) {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(
                    h,
                    "<p class=\"failed\">not compared: {}</p>",
                    escape(&e.to_string())
                );
                continue;
            }
        };
        let _ = writeln!(h, "<p>{}</p>", escape(&c.summary()));
        let view = super::ComparisonView::new(&c, true, false);
        // What moved first: regressed, improved, undecided, unchanged, then
        // what cannot fail the gate; the largest change first within each.
        let rank = |m: &crate::compare::MetricComparison| match (m.gated, m.verdict) {
            (true, Verdict::Regressed) => 0,
            (true, Verdict::Improved) => 1,
            (true, Verdict::Undecided) => 2,
            (true, Verdict::Unchanged) => 3,
            _ => 4,
        };
        let mut shown: Vec<&crate::compare::MetricComparison> = c
            .metrics
            .iter()
            .filter(|m| matches!(m.tolerance, Tolerance::Relative(_)) && m.change.is_some())
            .collect();
        shown.sort_by(|a, b| {
            let size = |m: &crate::compare::MetricComparison| {
                m.change.map_or(0.0, |c| (1.0 + c).max(1e-300).ln().abs())
            };
            rank(a).cmp(&rank(b)).then(size(b).total_cmp(&size(a)))
        });
        let rows: Vec<ChangeRow> = shown
            .iter()
            .filter_map(|m| {
                Some(ChangeRow {
                    label: format!("{} {}", view.key(&m.key), m.metric),
                    change: m.change?,
                    interval: m.interval,
                    threshold: match m.tolerance {
                        Tolerance::Relative(t) => Some(t),
                        Tolerance::Absolute { .. } => None,
                    },
                    text: m.change_text(),
                    // A metric that cannot fail the gate is drawn grey.
                    color: if m.gated {
                        verdict_color(m.verdict)
                    } else {
                        verdict_color(Verdict::NotJudged)
                    },
                    title: format!(
                        "{} {}: {}: {}",
                        m.key,
                        m.metric,
                        verdict_text(m),
                        m.change_text()
                    ),
                })
            })
            .collect();
        if !rows.is_empty() {
            h.push_str(&svg::change_chart(
                &format!("{nl} vs {bl}: change of each metric"),
                &rows,
            ));
        }
        h.push_str("<table><tr><th>record</th><th>metric</th><th>base</th><th>new</th><th>change [interval]</th><th>verdict</th></tr>");
        for m in &c.metrics {
            let _ = write!(
                h,
                "<tr class=\"{}\"><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if m.gated {
                    m.verdict.as_str().replace(' ', "-")
                } else {
                    "not-gated".into()
                },
                escape(&m.key),
                escape(view.key(&m.key)),
                escape(&m.metric),
                escape(&format_value(m.base_median, &m.unit)),
                escape(&format_value(m.new_median, &m.unit)),
                escape(&m.change_text()),
                escape(&verdict_text(m))
            );
        }
        h.push_str("</table>\n");
        if !c.problems.is_empty() {
            h.push_str("<ul>");
            for p in &c.problems {
                let _ = write!(
                    h,
                    "<li class=\"failed\">{}: {}</li>",
                    escape(&p.key),
                    escape(p.kind.as_str())
                );
            }
            h.push_str("</ul>\n");
        }
    }
}

/// The verdict as shown: a metric that cannot fail the gate (derived or
/// spread) says so.
fn verdict_text(m: &crate::compare::MetricComparison) -> String {
    if m.gated {
        m.verdict.to_string()
    } else {
        format!("{} (not gated)", m.verdict)
    }
}

fn verdict_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "#D00000",
        Verdict::Improved => "#009E73",
        Verdict::Undecided => "#E69F00",
        Verdict::Unchanged => "#999999",
        Verdict::NotJudged => "#CCCCCC",
    }
}

fn host(h: &mut String, label: &str, r: &Report) {
    let _ = write!(h, "<h2>Host: {}</h2>\n<table>", escape(label));
    let mut row = |k: &str, v: &str| {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    };
    // The rows `info` prints, module facts (disk, GPU, network) included.
    for (k, v) in super::host::rows(&r.host) {
        row(&k, &v);
    }
    row(
        "config",
        &format!(
            "runs {}, rounds {}, quick {}, selectors {}",
            r.config.runs,
            r.config.rounds,
            r.config.quick,
            r.config.selectors.join(" ")
        ),
    );
    h.push_str("</table>\n");
}

fn records(h: &mut String, label: &str, r: &Report) {
    let _ = write!(
        h,
        "<h2>Records: {}</h2>\n<table><tr><th>record</th><th>status</th><th>median</th><th>p5–p95</th><th>peak</th><th>warnings</th><th>notes</th></tr>",
        escape(label)
    );
    for rec in &r.records {
        let (st, med, spread) = match (rec.status, headline(rec)) {
            (Status::Ok, Some(m)) => (
                "ok".to_string(),
                format!("{} {}", m.name, format_value(m.summary.median, &m.unit)),
                format!(
                    "{} – {}",
                    format_value(m.summary.p5, &m.unit),
                    format_value(m.summary.p95, &m.unit)
                ),
            ),
            (s, _) => (
                format!(
                    "{}{}",
                    match s {
                        Status::Ok => "ok",
                        Status::Skipped => "skipped",
                        Status::Failed => "failed",
                    },
                    rec.reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
                String::new(),
                String::new(),
            ),
        };
        let peak = rec
            .peak
            .as_ref()
            .map(|p| {
                format!(
                    "{} ({}){}",
                    format_value(p.value, &p.unit),
                    p.formula,
                    p.efficiency
                        .map(|e| format!(", {:.1}% of peak", e * 100.0))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default();
        let list = |items: Vec<String>| {
            if items.is_empty() {
                String::new()
            } else {
                format!(
                    "<ul>{}</ul>",
                    items
                        .iter()
                        .map(|i| format!("<li>{}</li>", escape(i)))
                        .collect::<String>()
                )
            }
        };
        let _ = write!(
            h,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            match rec.status {
                Status::Ok => "ok",
                Status::Skipped => "skipped",
                Status::Failed => "failed",
            },
            escape(&rec.key()),
            escape(&st),
            escape(&med),
            escape(&spread),
            escape(&peak),
            list(rec.warnings.iter().map(|w| w.to_string()).collect()),
            list(rec.notes.clone())
        );
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests;
