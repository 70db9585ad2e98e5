//! The report's lines as the human-readable formats lay them out (the
//! headline columns, the warning and note lines, a status's name): shared
//! by `table`, `markdown` and `csv`, below all three.

use benchsuite_core::results::{Metric, Record, Report, Status};
use benchsuite_core::units::format_value;

/// Header of the headline columns of a report.
pub(super) const REPORT_HEADER: [&str; 7] = [
    "benchmark",
    "metric",
    "median",
    "±95% CI",
    "min .. max",
    "p99",
    "% of peak",
];

/// One line of the human-readable report.
pub(super) enum Line {
    /// A measured metric: the cells under [`REPORT_HEADER`]; `first` is true
    /// on the first metric of a record.
    Metric { cells: [String; 7], first: bool },
    /// A record that did not run: its key and `skipped: reason`.
    NotRun { key: String, note: String },
}

/// The headline lines of a report, one per record × metric.
pub(super) fn report_lines(report: &Report) -> Vec<Line> {
    let keys: Vec<String> = report.records.iter().map(Record::key).collect();
    report_lines_keyed(report, &keys)
}

/// [`report_lines`] with the records' keys given, one per record.
pub(super) fn report_lines_keyed(report: &Report, keys: &[String]) -> Vec<Line> {
    let mut lines = Vec::new();
    for (r, key) in report.records.iter().zip(keys) {
        let key = key.clone();
        if r.status != Status::Ok || r.metrics.is_empty() {
            let status = status_name(r.status);
            // One line whatever the error said: a multi-line reason would
            // break the table's rows.
            let note = match &r.reason {
                Some(why) => format!("{status}: {}", why.lines().collect::<Vec<_>>().join(" ")),
                None => status.to_string(),
            };
            lines.push(Line::NotRun { key, note });
            continue;
        }
        for (i, m) in r.metrics.iter().enumerate() {
            lines.push(Line::Metric {
                cells: metric_cells(&key, r, m),
                first: i == 0,
            });
        }
    }
    lines
}

pub(super) fn metric_cells(key: &str, r: &Record, m: &Metric) -> [String; 7] {
    let s = &m.summary;
    let ci = match s.ci95 {
        Some([lo, hi]) if s.mean != 0.0 => {
            format!("±{:.1}%", (hi - lo) / 2.0 / s.mean.abs() * 100.0)
        }
        _ => "-".to_string(),
    };
    let p99 = m
        .latency
        .as_ref()
        .map(|l| format_value(l.p99, "s"))
        .unwrap_or_default();
    let efficiency = r
        .peak
        .as_ref()
        .filter(|p| p.metric == m.name)
        .and_then(|p| p.efficiency)
        .map(|e| format!("{:.1}%", e * 100.0))
        .unwrap_or_default();
    [
        key.to_string(),
        m.name.clone(),
        format_value(s.median, &m.unit),
        ci,
        format!(
            "{} .. {}",
            format_value(s.min, &m.unit),
            format_value(s.max, &m.unit)
        ),
        p99,
        efficiency,
    ]
}

/// `warning: key: text` for every warning of every record.
pub(super) fn warning_lines(report: &Report) -> Vec<String> {
    report
        .records
        .iter()
        .flat_map(|r| r.warnings.iter().map(move |w| format!("{}: {w}", r.key())))
        .collect()
}

/// The records' notes, each text once: a note that several records share
/// (the same scratch directory, the same clock source) is shown with the
/// first record's key and how many more carry it.
pub(super) fn note_lines(report: &Report) -> Vec<String> {
    let mut order: Vec<(&str, String, usize)> = Vec::new();
    for r in &report.records {
        for n in &r.notes {
            match order.iter_mut().find(|(text, _, _)| *text == n.as_str()) {
                Some(e) => e.2 += 1,
                None => order.push((n.as_str(), r.key(), 0)),
            }
        }
    }
    order
        .into_iter()
        .map(|(text, key, more)| match more {
            0 => format!("{key}: {text}"),
            1 => format!("{key} (and 1 more record): {text}"),
            m => format!("{key} (and {m} more records): {text}"),
        })
        .collect()
}

pub(super) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    }
}
