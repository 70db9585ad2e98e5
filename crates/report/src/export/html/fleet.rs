//! The fleet page (`benchsuite report fleet.json`): the hosts of a merged
//! fleet report, which are slow and which are different.
//!
//! Shown: the host groups (hosts whose CPU model, microcode, kernel,
//! memory or governor differ are grouped apart, as [`Fleet::view`] does),
//! the outlier hosts with the size of their gap, a strip chart per group —
//! one row per record, one dot per host at its headline median relative to
//! its group's median (better to the right), outliers red, the outlier
//! threshold (3 scaled MADs) as a red tick — and the fleet table. The
//! hosts' reports are embedded as JSON, as on the single-run page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::common::{DATA_ID, STYLE};
use super::svg::{StripRow, color, escape, strip_chart};
use crate::fleet::{
    Fleet, FleetRow, MIN_GAP, MIN_HOSTS, MIN_RELATIVE_SPREAD, OUTLIER_MADS, host_label,
};
use benchsuite_core::bench::Direction;
use benchsuite_core::results::Status;
use benchsuite_core::units::format_value;

/// Rows per strip chart, so that one chart stays readable.
const ROWS_PER_CHART: usize = 40;

/// The fleet page for `fleet`, shown under `label` (a file name).
pub fn render_fleet(label: &str, fleet: &Fleet) -> String {
    let view = fleet.view();
    let mut h = String::new();
    let title = format!("benchsuite fleet: {label}");
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>",
        t = escape(&title)
    );
    let _ = writeln!(
        h,
        "<p>{} hosts in {} group{} (hosts differing in CPU model, microcode, kernel, memory size or governor are grouped apart; outliers are judged within a group of at least {MIN_HOSTS}: beyond {OUTLIER_MADS} scaled MADs of the group's median in the bad direction, and at least {:.0}% worse).</p>",
        fleet.hosts.len(),
        view.groups.len(),
        if view.groups.len() == 1 { "" } else { "s" },
        MIN_GAP * 100.0
    );
    h.push_str("<table><tr><th>group</th><th>hosts</th><th>facts</th></tr>");
    for (i, g) in view.groups.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            escape(&g.hosts.join(", ")),
            escape(&g.facts.to_string())
        );
    }
    h.push_str("</table>\n");

    // Outliers first: the answer to "which node is slow".
    let outliers = view.outlier_hosts();
    let _ = writeln!(h, "<h2>Outlier hosts ({})</h2>", outliers.len());
    if outliers.is_empty() {
        h.push_str("<p>No host is an outlier of its group.</p>\n");
    } else {
        h.push_str("<table><tr><th>host</th><th>record</th><th>metric</th><th>host median</th><th>group median</th><th>worse by</th><th>scaled MADs</th></tr>");
        for (host, rows) in &outliers {
            for r in rows {
                let o = r.outliers.iter().find(|o| o.host == *host).expect("listed");
                let _ = write!(
                    h,
                    "<tr class=\"regressed\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td></tr>",
                    escape(host),
                    escape(&r.key),
                    escape(&r.metric),
                    escape(&format_value(o.value, &r.unit)),
                    escape(&format_value(r.median, &r.unit)),
                    // A group median of zero has no relative gap.
                    if o.gap_percent.is_finite() {
                        format!("{:.1}%", o.gap_percent)
                    } else {
                        "-".into()
                    },
                    o.mads
                );
            }
        }
        h.push_str("</table>\n");
    }

    // Each host's headline median per (record key, group, metric): a host
    // whose first metric is another one is not drawn against this row.
    type Cell = (String, usize, String);
    let mut values: BTreeMap<Cell, Vec<(String, f64)>> = BTreeMap::new();
    let group_of: BTreeMap<String, usize> = view
        .groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.hosts.iter().map(move |h| (h.clone(), i + 1)))
        .collect();
    for r in &fleet.hosts {
        let host = host_label(r);
        let g = group_of.get(&host).copied().unwrap_or(0);
        for rec in r.records.iter().filter(|x| x.status == Status::Ok) {
            if let Some(m) = rec.metrics.first().filter(|m| m.summary.median.is_finite()) {
                values
                    .entry((rec.requested_key(), g, m.name.clone()))
                    .or_default()
                    .push((host.clone(), m.summary.median));
            }
        }
    }
    let _ = writeln!(h, "<h2>Hosts against their group</h2>");
    for g in 1..=view.groups.len() {
        let rows: Vec<&FleetRow> = view.rows.iter().filter(|r| r.group == g).collect();
        let strips: Vec<StripRow> = rows
            .iter()
            .map(|r| {
                let cell = (r.key.clone(), g, r.metric.clone());
                strip(r, values.get(&cell).map_or(&[][..], |v| v))
            })
            .collect();
        for (n, chunk) in strips.chunks(ROWS_PER_CHART).enumerate() {
            let part = if strips.len() > ROWS_PER_CHART {
                format!(" ({}/{})", n + 1, strips.len().div_ceil(ROWS_PER_CHART))
            } else {
                String::new()
            };
            h.push_str(&strip_chart(
                &format!("group {g}: each host's median vs the group median{part}"),
                "host median vs group median, headline metric (right = better; red: outlier; red tick: outlier threshold)",
                chunk,
            ));
            h.push('\n');
        }
    }

    h.push_str("<h2>Fleet table</h2>\n<pre>");
    let mut table = Vec::new();
    let _ = view.write_table(&mut table);
    h.push_str(&escape(&String::from_utf8_lossy(&table)));
    h.push_str("</pre>\n");

    let json = benchsuite_core::text::to_json_compact(&fleet.hosts)
        .expect("a report always serialises")
        .replace("<!--", "\\u003c!--")
        .replace("</", "<\\/");
    let _ = writeln!(
        h,
        "<script type=\"application/json\" id=\"{DATA_ID}\">{json}</script>\n</body></html>"
    );
    h
}

/// One strip: each host at its median relative to the group median, the
/// sign turned so that better is to the right.
fn strip(r: &FleetRow, hosts: &[(String, f64)]) -> StripRow {
    let better = |v: f64| {
        let rel = if r.median != 0.0 {
            (v - r.median) / r.median.abs()
        } else {
            0.0
        };
        match r.direction {
            Direction::Higher => rel,
            Direction::Lower => -rel,
        }
    };
    let dots = hosts
        .iter()
        .map(|(host, v)| {
            let out = r.outliers.iter().any(|o| &o.host == host);
            (
                better(*v),
                if out { "#c00000" } else { color(r.group - 1) },
                format!(
                    "{host}: {} ({:+.1}% vs the group median){}",
                    format_value(*v, &r.unit),
                    better(*v) * 100.0,
                    if out { ", outlier" } else { "" }
                ),
            )
        })
        .collect();
    let threshold = (r.hosts >= MIN_HOSTS && r.median != 0.0).then(|| {
        let scale = r.spread.max(MIN_RELATIVE_SPREAD * r.median.abs());
        -(OUTLIER_MADS * scale).max(MIN_GAP * r.median.abs()) / r.median.abs()
    });
    StripRow {
        label: format!("{} {}", r.key, r.metric),
        dots,
        threshold,
    }
}
