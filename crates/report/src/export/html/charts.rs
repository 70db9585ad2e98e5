//! The charts of the HTML report: sweeps (one series per varying
//! parameter, facets), latency distributions and time series.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::common::*;
use super::svg;
use super::svg::{Axis, Chart, Line, Pt, color};
use benchsuite_core::results::{Metric, Record, Report, Status};
use benchsuite_core::units::{format_size, format_value};

/// At most this many series (combinations of two or more other
/// parameters) share a chart; past it the sweep is split into one chart
/// per value of the parameter with the fewest values (a facet), until each
/// fits. Series of one parameter alone (blocks 1 KiB … 100 MiB) stay
/// together up to one per palette colour; more share out over as few
/// charts as that takes, consecutive values together.
pub(super) const MAX_SERIES: usize = 6;

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
pub(super) fn varying(groups: &[(SeriesKey, Points<'_>)]) -> BTreeMap<String, usize> {
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
pub(super) fn facet<'a>(
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
pub(super) fn numeric_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

pub(super) fn show_param(k: &str, v: &str) -> String {
    match v.parse::<u64>() {
        // A zero size asks for the benchmark's automatic one.
        Ok(0) if size_like(k) => "auto".into(),
        Ok(n) if size_like(k) => format_size(n),
        _ => v.to_string(),
    }
}

pub(super) fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

pub(super) fn sweep_chart(s: &Sweep<'_>, reports: &[(String, Report)]) -> String {
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
            joined: true,
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
                joined: true,
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
pub(super) fn tick(v: f64, unit: &str) -> String {
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

pub(super) fn strip(label: &str) -> &str {
    label.split_once(": ").map_or(label, |(_, r)| r)
}

/// `ID WHAT (PARAMS)`: the chart header puts the parameters on a line of
/// their own.
pub(super) fn titled(r: &Record, what: &str) -> String {
    let p = r.params.label();
    if p.is_empty() {
        format!("{} {what}", r.id)
    } else {
        format!("{} {what} ({p})", r.id)
    }
}

pub(super) fn latency_chart(r: &Record, m: &Metric) -> Option<String> {
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

pub(super) fn trace_chart(r: &Record, m: &Metric) -> Option<String> {
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
                joined: true,
                opacity: 1.0,
            }],
            marks: Vec::new(),
        }
        .render(),
    )
}
