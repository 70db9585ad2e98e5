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
//! - the latency ladder (p50…p99.99, max) of latency metrics and the
//!   per-interval trace of time series, of the last report;
//! - the host, and every record with its warnings and notes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::compare::{CompareOptions, Tolerance, Verdict, compare};
use benchsuite_core::report::{Metric, Record, Report, Status};
use benchsuite_core::units::{format_size, format_value};

mod fleet;
mod svg;

pub use fleet::render_fleet;

use svg::{Axis, ChangeRow, Chart, Line, Pt, color, escape};

/// The `id` of the `<script>` element holding the embedded reports.
pub const DATA_ID: &str = "benchsuite-reports";

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

/// One sweep: a benchmark's headline metric against one numeric parameter.
/// Records of one series, by the swept value.
type Points<'a> = Vec<(f64, &'a Record)>;
/// A series' key: the report's index and the other parameters' values.
type SeriesKey = (usize, Vec<(String, String)>);

pub(crate) struct Sweep<'a> {
    pub id: String,
    pub param: String,
    pub metric: String,
    pub unit: String,
    /// Parameters the same in every series.
    pub fixed: String,
    /// (label, report index, points sorted by x).
    pub series: Vec<(String, usize, Points<'a>)>,
}

fn numeric(v: &benchsuite_core::param::Value) -> Option<f64> {
    match v {
        benchsuite_core::param::Value::Int(_) | benchsuite_core::param::Value::Float(_) => {
            v.as_f64()
        }
        _ => None,
    }
}

fn size_like(param: &str) -> bool {
    matches!(param, "block" | "size" | "stride")
        || param.contains("size")
        || param.contains("bytes")
}

fn headline(r: &Record) -> Option<&Metric> {
    r.metrics.first()
}

/// At most this many series (combinations of two or more other
/// parameters) share a chart; past it the sweep is split into one chart
/// per value of the parameter with the fewest values (a facet), until each
/// fits. Series of one parameter alone (blocks 1 KiB … 100 MiB) stay
/// together up to one per palette colour; more share out over as few
/// charts as that takes, consecutive values together.
const MAX_SERIES: usize = 6;

/// Finds every sweep of the ok records of `reports`: per benchmark and
/// plan phase (a plan's phases are separate experiments), per numeric
/// parameter.
pub(crate) fn sweeps(reports: &[(String, Report)]) -> Vec<Sweep<'_>> {
    type Experiment<'a> = (&'a str, Option<&'a str>);
    let mut by_id: BTreeMap<Experiment<'_>, Vec<(usize, &Record)>> = BTreeMap::new();
    for (i, (_, rep)) in reports.iter().enumerate() {
        for r in &rep.records {
            if r.status == Status::Ok && headline(r).is_some() {
                by_id
                    .entry((r.id.as_str(), r.phase.as_deref()))
                    .or_default()
                    .push((i, r));
            }
        }
    }
    let mut found = Vec::new();
    for ((id, phase), recs) in by_id {
        let metric = headline(recs[0].1).expect("filtered");
        let (mname, unit) = (metric.name.clone(), metric.unit.clone());
        let names: BTreeSet<&str> = recs
            .iter()
            .flat_map(|(_, r)| r.requested_params().0.keys().map(String::as_str))
            .collect();
        for p in names {
            if !recs
                .iter()
                .all(|(_, r)| r.params.get(p).and_then(numeric).is_some())
            {
                continue;
            }
            // Group by report and the other parameters as requested: an
            // `auto` that resolves differently along the sweep (nt=auto
            // turning on non-temporal stores above the last-level cache)
            // stays one series, as `compare` pairs records.
            let mut groups: BTreeMap<SeriesKey, Points<'_>> = BTreeMap::new();
            for (i, r) in &recs {
                if r.metric(&mname).is_none() {
                    continue;
                }
                let others: Vec<(String, String)> = r
                    .requested_params()
                    .0
                    .iter()
                    .filter(|(k, _)| k.as_str() != p)
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect();
                let x = r.params.get(p).and_then(numeric).expect("checked");
                let g = groups.entry((*i, others)).or_default();
                if !g.iter().any(|(gx, _)| *gx == x) {
                    g.push((x, r));
                }
            }
            groups.retain(|_, g| g.len() >= 2);
            if groups.is_empty() {
                continue;
            }
            let sweep = Sweep {
                id: match phase {
                    Some(ph) => format!("{id} [{ph}]"),
                    None => id.to_string(),
                },
                param: p.to_string(),
                metric: mname.clone(),
                unit: unit.clone(),
                fixed: String::new(),
                series: Vec::new(),
            };
            facet(sweep, groups.into_iter().collect(), reports, &mut found);
        }
    }
    found
}

/// The parameters whose value differs between the series of `groups`,
/// each with its number of distinct values.
fn varying(groups: &[(SeriesKey, Points<'_>)]) -> BTreeMap<String, usize> {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ((_, others), _) in groups {
        for (k, v) in others {
            values.entry(k).or_default().insert(v);
        }
    }
    values
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, v)| (k.to_string(), v.len()))
        .collect()
}

/// Finishes `sweep` from `groups` (its series), first splitting it into
/// one chart per value of a parameter while more than [`MAX_SERIES`]
/// combinations of the other parameters would share one chart.
fn facet<'a>(
    sweep: Sweep<'a>,
    mut groups: Vec<(SeriesKey, Points<'a>)>,
    reports: &[(String, Report)],
    found: &mut Vec<Sweep<'a>>,
) {
    let varying = varying(&groups);
    let combos: BTreeSet<&Vec<(String, String)>> = groups.iter().map(|((_, o), _)| o).collect();
    let crowded = match varying.len() {
        0 => false,
        1 => combos.len() > svg::PALETTE.len(),
        _ => combos.len() > MAX_SERIES,
    };
    if crowded && let Some((split, _)) = varying.iter().min_by_key(|(k, n)| (**n, k.as_str())) {
        let value = |o: &Vec<(String, String)>| {
            o.iter()
                .find(|(k, _)| k == split)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut parts: BTreeMap<String, Vec<(SeriesKey, Points<'a>)>> = BTreeMap::new();
        for g in groups {
            parts.entry(value(&g.0.1)).or_default().push(g);
        }
        let mut parts: Vec<_> = parts.into_iter().collect();
        parts.sort_by(|(a, _), (b, _)| numeric_order(a, b));
        let mut parts: Vec<Vec<(SeriesKey, Points<'a>)>> =
            parts.into_iter().map(|(_, p)| p).collect();
        if varying.len() == 1 {
            // One parameter with too many values for one chart (blocks
            // 1 B … 64 KiB): consecutive values share a chart, up to a
            // palette's worth each, in as few charts as that takes.
            let per = parts
                .len()
                .div_ceil(parts.len().div_ceil(svg::PALETTE.len()));
            let mut merged = Vec::new();
            let mut it = parts.into_iter().peekable();
            while it.peek().is_some() {
                merged.push(it.by_ref().take(per).flatten().collect());
            }
            parts = merged;
        }
        for part in parts {
            let sub = Sweep {
                series: Vec::new(),
                fixed: String::new(),
                id: sweep.id.clone(),
                param: sweep.param.clone(),
                metric: sweep.metric.clone(),
                unit: sweep.unit.clone(),
            };
            facet(sub, part, reports, found);
        }
        return;
    }
    let fixed = groups[0]
        .0
        .1
        .iter()
        .filter(|(k, _)| !varying.contains_key(k))
        .map(|(k, v)| format!("{k}={}", show_param(k, v)))
        .collect::<Vec<_>>()
        .join(" ");
    // Series in numeric order of their parameters (threads 1, 2, 4).
    groups.sort_by(|((a, ao), _), ((b, bo), _)| {
        a.cmp(b).then_with(|| {
            ao.iter()
                .zip(bo)
                .map(|((_, x), (_, y))| numeric_order(x, y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    let series = groups
        .into_iter()
        .map(|((i, others), mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut label = others
                .iter()
                .filter(|(k, _)| varying.contains_key(k))
                .map(|(k, v)| format!("{k}={}", show_param(k, v)))
                .collect::<Vec<_>>()
                .join(" ");
            if reports.len() > 1 {
                label = format!(
                    "{}{}{label}",
                    reports[i].0,
                    if label.is_empty() { "" } else { ": " }
                );
            }
            if label.is_empty() {
                label = sweep.metric.clone();
            }
            (label, i, pts)
        })
        .collect();
    found.push(Sweep {
        fixed,
        series,
        ..sweep
    });
}

/// Numbers in numeric order, before any text, text in text order.
fn numeric_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

fn show_param(k: &str, v: &str) -> String {
    match v.parse::<u64>() {
        // A zero size asks for the benchmark's automatic one.
        Ok(0) if size_like(k) => "auto".into(),
        Ok(n) if size_like(k) => format_size(n),
        _ => v.to_string(),
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn sweep_chart(s: &Sweep<'_>, reports: &[(String, Report)]) -> String {
    let xs: Vec<f64> = s
        .series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(x, _)| *x))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let log = lo > 0.0 && hi / lo > 8.0;
    let sizes = size_like(&s.param);
    let mut lines = Vec::new();
    let many = reports.len() > 1;
    for (n, (label, ri, pts)) in s.series.iter().enumerate() {
        // The same series of each report shares a colour: base lighter.
        let c = if many {
            let first = s
                .series
                .iter()
                .position(|(l, _, _)| strip(l) == strip(label));
            color(first.unwrap_or(n))
        } else {
            color(n)
        };
        let opacity = if many && *ri == 0 { 0.55 } else { 1.0 };
        let mut points = Vec::new();
        let mut peak = Vec::new();
        for (x, r) in pts {
            let m = r.metric(&s.metric).expect("grouped on it");
            let xs = if sizes {
                format_size(*x as u64)
            } else {
                num(*x)
            };
            let mut title = format!(
                "{} = {xs}\nmedian {}\np5–p95 {} – {}",
                s.param,
                format_value(m.summary.median, &m.unit),
                format_value(m.summary.p5, &m.unit),
                format_value(m.summary.p95, &m.unit)
            );
            if let Some(p) = r.peak.as_ref().filter(|p| p.metric == s.metric) {
                let eff = p.efficiency.unwrap_or(m.summary.median / p.value);
                let _ = write!(
                    title,
                    "\npeak {} ({:.1}% of peak)",
                    format_value(p.value, &p.unit),
                    eff * 100.0
                );
                peak.push(Pt {
                    x: *x,
                    y: p.value,
                    band: None,
                    title: String::new(),
                });
            }
            points.push(Pt {
                x: *x,
                y: m.summary.median,
                band: Some((m.summary.p5, m.summary.p95)),
                title,
            });
        }
        let effs: Vec<f64> = pts
            .iter()
            .filter_map(|(_, r)| {
                let p = r.peak.as_ref().filter(|p| p.metric == s.metric)?;
                Some(
                    p.efficiency
                        .unwrap_or(r.metric(&s.metric)?.summary.median / p.value),
                )
            })
            .collect();
        lines.push(Line {
            name: label.clone(),
            color: c,
            points,
            dashed: false,
            markers: true,
            opacity,
        });
        if !peak.is_empty() {
            let best = effs.iter().cloned().fold(0f64, f64::max);
            // A network peak is the link's line rate: say so, with the rate.
            let what = pts
                .iter()
                .find_map(|(_, r)| r.peak.as_ref()?.inputs.get("link_speed"))
                .map_or_else(
                    || "peak".to_string(),
                    |l| format!("link {} {}", num(l.value), l.unit),
                );
            lines.push(Line {
                name: format!("{what} {label} (best {:.0}%)", best * 100.0),
                color: c,
                points: peak,
                dashed: true,
                markers: false,
                opacity,
            });
        }
    }
    let mut marks = Vec::new();
    // Cache sizes on working-set sweeps (the memory benchmarks' `size`; a
    // block size is not a working set).
    if s.param == "size" && log && s.id.starts_with("mem.") {
        let host = &reports[s.series[0].1].1.host;
        for c in &host.cpu.caches {
            if c.kind != "Instruction" {
                let k = if c.kind == "Data" { "d" } else { "" };
                marks.push((
                    c.size_bytes as f64,
                    format!("L{}{k} {}", c.level, format_size(c.size_bytes)),
                ));
            }
        }
    }
    let unit = s.unit.clone();
    let y_log = {
        let ys: Vec<f64> = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.y))
            .filter(|v| *v > 0.0)
            .collect();
        let (a, b) = ys
            .iter()
            .fold((f64::INFINITY, 0f64), |(a, b), &y| (a.min(y), b.max(y)));
        !ys.is_empty() && b / a > 200.0
    };
    let title = if s.fixed.is_empty() {
        format!("{}: {} vs {}", s.id, s.metric, s.param)
    } else {
        format!("{}: {} vs {} ({})", s.id, s.metric, s.param, s.fixed)
    };
    Chart {
        title,
        x: Axis {
            label: format!(
                "{}{}{}",
                s.param,
                if sizes { " (bytes)" } else { "" },
                if log { ", log2 scale" } else { "" }
            ),
            log,
            integer: xs.iter().all(|x| x.fract() == 0.0),
            format: if sizes {
                Box::new(|v| format_size(v.max(0.0) as u64))
            } else {
                Box::new(num)
            },
        },
        y: Axis {
            label: format!(
                "{} median ({}){}",
                s.metric,
                if unit.is_empty() { "-" } else { &unit },
                if y_log { ", log scale" } else { "" }
            ),
            log: y_log,
            integer: false,
            format: Box::new(move |v| tick(v, &unit)),
        },
        lines,
        marks,
    }
    .render()
}

/// A short axis tick: `10 GB/s`, `2.5 µs` (no trailing zeros).
fn tick(v: f64, unit: &str) -> String {
    if unit == "s" || unit == "B" || unit == "%" {
        return format_value(v, unit);
    }
    let s = format_value(v, unit);
    match s.split_once(' ') {
        Some((n, u)) if n.contains('.') => {
            format!("{} {u}", n.trim_end_matches('0').trim_end_matches('.'))
        }
        _ => s,
    }
}

fn strip(label: &str) -> &str {
    label.split_once(": ").map_or(label, |(_, r)| r)
}

/// `ID WHAT (PARAMS)`: the chart header puts the parameters on a line of
/// their own.
fn titled(r: &Record, what: &str) -> String {
    let p = r.params.label();
    if p.is_empty() {
        format!("{} {what}", r.id)
    } else {
        format!("{} {what} ({p})", r.id)
    }
}

fn latency_chart(r: &Record, m: &Metric) -> Option<String> {
    let l = m.latency.as_ref()?;
    let bars = vec![
        ("p50".to_string(), l.p50),
        ("p90".to_string(), l.p90),
        ("p99".to_string(), l.p99),
        ("p99.9".to_string(), l.p99_9),
        ("p99.99".to_string(), l.p99_99),
        ("max".to_string(), l.max),
    ];
    Some(svg::bar_chart(&titled(r, &m.name), &bars, &|v| {
        format_value(v, "s")
    }))
}

fn trace_chart(r: &Record, m: &Metric) -> Option<String> {
    let ts = m.timestamps.as_ref()?;
    let unit = m.unit.clone();
    let points = ts
        .iter()
        .zip(&m.samples)
        .map(|(t, v)| Pt {
            x: *t,
            y: *v,
            band: None,
            title: format!("t = {t:.1} s: {}", format_value(*v, &m.unit)),
        })
        .collect();
    Some(
        Chart {
            title: titled(r, &format!("{} per interval", m.name)),
            x: Axis {
                label: "time since start (s)".into(),
                log: false,
                integer: false,
                format: Box::new(num),
            },
            y: Axis {
                label: format!("{} ({})", m.name, m.unit),
                log: false,
                integer: false,
                format: Box::new(move |v| tick(v, &unit)),
            },
            lines: vec![Line {
                name: m.name.clone(),
                color: color(0),
                points,
                dashed: false,
                markers: ts.len() <= 120,
                opacity: 1.0,
            }],
            marks: Vec::new(),
        }
        .render(),
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1240px}\
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}\
th{background:#f3f3f3}.regressed{background:#fde0e0;color:#a00000;font-weight:bold}\
.improved{background:#e2f5e2}.noisy{background:#fff6d6}.failed{color:#a00000}\
.skipped{color:#777}svg.chart{margin:.4em .4em .4em 0;border:1px solid #eee}\
.grid{display:flex;flex-wrap:wrap}ul{margin:0;padding-left:1.2em}pre{font-size:.8em;background:#f7f7f7;padding:.5em;overflow:auto}";

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

    let sw = sweeps(reports);
    let _ = writeln!(h, "<h2>Sweeps ({})</h2>", sw.len());
    if sw.is_empty() {
        h.push_str(
            "<p>No sweep: no benchmark ran at two or more values of a numeric parameter.</p>\n",
        );
    }
    for s in &sw {
        h.push_str(&sweep_chart(s, reports));
        h.push('\n');
    }

    let last = reports.len().saturating_sub(1);
    let mut lat = String::new();
    let mut trace = String::new();
    for (i, (_, rep)) in reports.iter().enumerate() {
        if i != last {
            continue;
        }
        for r in rep.records.iter().filter(|r| r.status == Status::Ok) {
            for m in &r.metrics {
                if let Some(c) = latency_chart(r, m) {
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

    let json = serde_json::to_string(&reports.iter().map(|(_, r)| r).collect::<Vec<_>>())
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
        let rows: Vec<ChangeRow> = c
            .metrics
            .iter()
            .filter(|m| matches!(m.tolerance, Tolerance::Relative(_)))
            .filter_map(|m| {
                Some(ChangeRow {
                    label: format!("{} {}", m.key, m.metric),
                    change: m.change?,
                    interval: m.interval,
                    // A metric that cannot fail the gate is drawn grey.
                    color: if m.gated {
                        verdict_color(m.verdict)
                    } else {
                        verdict_color(Verdict::Unchanged)
                    },
                    title: format!("{}: {}", verdict_text(m), m.change_text()),
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
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if m.gated {
                    m.verdict.as_str().replace(' ', "-")
                } else {
                    "not-gated".into()
                },
                escape(&m.key),
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
        Verdict::Noisy => "#E69F00",
        Verdict::Unchanged => "#999999",
        Verdict::NotJudged => "#CCCCCC",
    }
}

fn host(h: &mut String, label: &str, r: &Report) {
    let host = &r.host;
    let cpu = &host.cpu;
    let _ = write!(h, "<h2>Host: {}</h2>\n<table>", escape(label));
    let mut row = |k: &str, v: String| {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(&v));
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    row("hostname", opt(host.hostname.clone()));
    row("os / arch", format!("{} / {}", host.os, host.arch));
    row("kernel", opt(host.kernel.clone()));
    row("cpu", opt(cpu.model.clone()));
    row("vendor", opt(cpu.vendor.clone()));
    row("microarchitecture", opt(cpu.microarchitecture.clone()));
    row(
        "cores",
        format!(
            "{} logical, {} physical, {} sockets",
            opt(cpu.logical_cpus.map(|v| v.to_string())),
            opt(cpu.physical_cores.map(|v| v.to_string())),
            opt(cpu.sockets.map(|v| v.to_string()))
        ),
    );
    row(
        "frequency",
        format!(
            "base {} MHz, max {} MHz, governor {}",
            opt(cpu.base_mhz.map(|v| format!("{v:.0}"))),
            opt(cpu.max_mhz.map(|v| format!("{v:.0}"))),
            opt(cpu.governor.clone())
        ),
    );
    row("simd", cpu.simd.join(" "));
    row(
        "caches",
        cpu.caches
            .iter()
            .map(|c| format!("L{} {} {}", c.level, c.kind, format_size(c.size_bytes)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    row("memory", opt(host.memory_bytes.map(format_size)));
    row(
        "memory available",
        opt(host.memory_available_bytes.map(format_size)),
    );
    row("virtualization", opt(host.virtualization.clone()));
    row(
        "build",
        format!(
            "{} {} {}",
            host.build.version, host.build.profile, host.build.target
        ),
    );
    row(
        "config",
        format!(
            "runs {}, rounds {}, quick {}, selectors {}",
            r.config.runs,
            r.config.rounds,
            r.config.quick,
            r.config.selectors.join(" ")
        ),
    );
    h.push_str("</table>\n");
    for (k, v) in &host.extra {
        let _ = writeln!(
            h,
            "<h3>{}</h3><pre>{}</pre>",
            escape(k),
            escape(&serde_json::to_string_pretty(v).unwrap_or_default())
        );
    }
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
