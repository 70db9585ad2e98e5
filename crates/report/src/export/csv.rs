//! CSV: a flat projection for spreadsheets and scripts.
//!
//! # Report layout
//!
//! One row per record × metric; a record that is not `ok` (`skipped`,
//! `failed`) gets one row with its `status` and `reason` and the metric
//! columns empty, also a failed record that measured before it failed (a
//! later round, or its teardown, failed): those numbers are not results
//! (the JSON report keeps them). Columns, in order:
//!
//! - `id`;
//! - one column per parameter name found in any record, sorted, empty where a
//!   record lacks it; values as in JSON (sizes in bytes, `true`/`false`). A
//!   parameter whose name clashes with a fixed column is written as
//!   `param.NAME`;
//! - `status`, `reason`, `metric`, `unit`, `direction`;
//! - the summary: `n`, `mean`, `median`, `stddev`, `cv`, `min`, `max`, `p5`,
//!   `p95`, `trimmed_mean`, `ci95_low`, `ci95_high`;
//! - latency percentiles: `lat_p50`, `lat_p90`, `lat_p99`, `lat_p99_9`,
//!   `lat_max` (empty unless the metric has a histogram);
//! - `peak`, `efficiency` (on the metric the peak applies to);
//! - `warnings`, joined with `; `.
//!
//! Numbers are in base units (seconds, B/s) and written as JSON writes them.
//!
//! # Comparison layout
//!
//! One row per compared metric, then one per problem of the new report
//! (failed, skipped, missing...): `id`, the parameter columns (requested
//! values), `metric`, `unit`, `direction`, `base_median`, `new_median`,
//! `base_n`, `new_n`, `base_rounds`, `new_rounds`, `change`, `change_low`,
//! `change_high` (a fraction under a relative threshold, the metric's unit
//! under an absolute one), `threshold` (as written: `5%`, `0.5pp`),
//! `quiet_threshold`, `unchanged_above`, `df`, `drift`, `verdict` (a verdict, or the problem:
//! `failed`, `skipped`, `missing`, `missing metric`, `no results`),
//! `gate` (`pass`, `fail`, `allowed`) and `note` (the reason).

use std::collections::BTreeSet;
use std::io::{self, Write};

use crate::compare::{Comparison, ProblemKind, Verdict};
use benchsuite_core::param::{Point, Value};
use benchsuite_core::results::{Record, Report, Status};

use super::layout::status_name;

/// Columns after the parameters in a report.
const REPORT_COLUMNS: [&str; 25] = [
    "status",
    "reason",
    "metric",
    "unit",
    "direction",
    "n",
    "mean",
    "median",
    "stddev",
    "cv",
    "min",
    "max",
    "p5",
    "p95",
    "trimmed_mean",
    "ci95_low",
    "ci95_high",
    "lat_p50",
    "lat_p90",
    "lat_p99",
    "lat_p99_9",
    "lat_max",
    "peak",
    "efficiency",
    "warnings",
];

/// Columns after the parameters in a comparison.
const COMPARISON_COLUMNS: [&str; 25] = [
    "metric",
    "unit",
    "direction",
    "role",
    "gated",
    "history_runs",
    "between_cv",
    "level",
    "base_median",
    "new_median",
    "base_n",
    "new_n",
    "base_rounds",
    "new_rounds",
    "change",
    "change_low",
    "change_high",
    "threshold",
    "quiet_threshold",
    "unchanged_above",
    "df",
    "drift",
    "verdict",
    "gate",
    "note",
];

/// Writes one row per record × metric.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let params = param_names(report.records.iter().map(|r| &r.params));
    let mut w = ::csv::Writer::from_writer(out);
    let mut header = vec!["id".to_string()];
    header.extend(param_headers(&params, &REPORT_COLUMNS));
    header.extend(REPORT_COLUMNS.iter().map(|c| c.to_string()));
    // `benchsuite reference` reports add the tool's columns.
    let with_ref = report.records.iter().any(|r| r.reference.is_some());
    if with_ref {
        header.extend(REFERENCE_COLUMNS.iter().map(|c| c.to_string()));
    }
    write_row(&mut w, &header)?;

    for r in &report.records {
        let lead = lead_cells(r, &params);
        let warnings = r
            .warnings
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let status = status_name(r.status).to_string();
        let reason = r.reason.clone().unwrap_or_default();
        if r.status != Status::Ok || r.metrics.is_empty() {
            let mut row = lead;
            row.extend([status, reason]);
            // Everything between `reason` and `warnings` is empty.
            row.extend(std::iter::repeat_n(String::new(), REPORT_COLUMNS.len() - 3));
            row.push(warnings);
            if with_ref {
                row.extend(reference_cells(r, None));
            }
            write_row(&mut w, &row)?;
            continue;
        }
        for m in &r.metrics {
            let s = &m.summary;
            let lat = m.latency.as_ref();
            let peak = r.peak.as_ref().filter(|p| p.metric == m.name);
            let mut row = lead.clone();
            row.extend([
                status.clone(),
                reason.clone(),
                m.name.clone(),
                m.unit.clone(),
                direction_name(m.direction).to_string(),
                s.n.to_string(),
            ]);
            row.extend(
                [
                    Some(s.mean),
                    Some(s.median),
                    Some(s.stddev),
                    Some(s.cv),
                    Some(s.min),
                    Some(s.max),
                    Some(s.p5),
                    Some(s.p95),
                    Some(s.trimmed_mean),
                    s.ci95.map(|c| c[0]),
                    s.ci95.map(|c| c[1]),
                    lat.map(|l| l.p50),
                    lat.map(|l| l.p90),
                    lat.map(|l| l.p99),
                    lat.map(|l| l.p99_9),
                    lat.map(|l| l.max),
                    peak.map(|p| p.value),
                    peak.and_then(|p| p.efficiency),
                ]
                .map(num),
            );
            row.push(warnings.clone());
            if with_ref {
                row.extend(reference_cells(r, Some(&m.name)));
            }
            write_row(&mut w, &row)?;
        }
    }
    w.flush()
}

/// Columns after `warnings` in a report of `benchsuite reference`: on the
/// row of the metric the tool measured (and on a record's status row).
const REFERENCE_COLUMNS: [&str; 5] = [
    "ref_tool",
    "ref_median",
    "ref_ratio",
    "ref_command",
    "ref_note",
];

/// The reference cells of a record's row for `metric` (None: its status
/// row): empty unless the tool measured that metric.
fn reference_cells(r: &Record, metric: Option<&str>) -> Vec<String> {
    match &r.reference {
        Some(x)
            if metric.is_none_or(|m| m == benchsuite_core::reference::base_metric(&x.metric)) =>
        {
            vec![
                x.tool.clone(),
                num(x.median),
                num(x.ratio),
                x.command.clone(),
                x.note.clone().unwrap_or_default(),
            ]
        }
        _ => vec![String::new(); REFERENCE_COLUMNS.len()],
    }
}

/// Writes one row per compared metric, then one per problem.
pub(super) fn write_comparison(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let params = param_names(
        c.metrics
            .iter()
            .map(|m| &m.params)
            .chain(c.problems.iter().map(|p| &p.params)),
    );
    let mut w = ::csv::Writer::from_writer(out);
    let mut header = vec!["id".to_string()];
    header.extend(param_headers(&params, &COMPARISON_COLUMNS));
    header.extend(COMPARISON_COLUMNS.iter().map(|c| c.to_string()));
    write_row(&mut w, &header)?;

    for m in &c.metrics {
        let mut row = vec![m.id.clone()];
        row.extend(params.iter().map(|p| param_cell(m.params.get(p))));
        let gate = match m.verdict {
            _ if !m.gated => "not gated",
            Verdict::Regressed => "fail",
            Verdict::NotJudged if !c.allow.unjudged => "fail",
            Verdict::NotJudged => "allowed",
            Verdict::Undecided => "undecided",
            _ => "pass",
        };
        row.extend([
            m.metric.clone(),
            m.unit.clone(),
            direction_name(m.direction).to_string(),
            m.role.map(|r| r.to_string()).unwrap_or_default(),
            m.gated.to_string(),
            m.history_runs.to_string(),
            num(m.between_cv),
            num(m.level),
            num(Some(m.base_median)),
            num(Some(m.new_median)),
            m.base_n.to_string(),
            m.new_n.to_string(),
            m.base_rounds.to_string(),
            m.new_rounds.to_string(),
            num(m.change),
            num(m.interval.map(|i| i[0])),
            num(m.interval.map(|i| i[1])),
            m.tolerance.to_string(),
            num(m.quiet_threshold),
            num(m.unchanged_above),
            num(m.df),
            m.drift.to_string(),
            m.verdict.to_string(),
            gate.to_string(),
            m.note.clone().unwrap_or_default(),
        ]);
        write_row(&mut w, &row)?;
    }
    for p in c
        .problems
        .iter()
        .filter(|p| p.kind != ProblemKind::NotJudged)
    {
        let mut row = vec![p.id.clone()];
        row.extend(params.iter().map(|n| param_cell(p.params.get(n))));
        let mut cells = vec![String::new(); COMPARISON_COLUMNS.len()];
        cells[0] = p.metric.clone().unwrap_or_default();
        let n = cells.len();
        cells[n - 3] = p.kind.to_string();
        cells[n - 2] = if p.allowed { "allowed" } else { "fail" }.to_string();
        cells[n - 1] = p.reason.clone();
        row.extend(cells);
        write_row(&mut w, &row)?;
    }
    w.flush()
}

/// The union of parameter names, sorted.
fn param_names<'a>(points: impl Iterator<Item = &'a Point>) -> Vec<String> {
    let set: BTreeSet<&String> = points.flat_map(|p| p.0.keys()).collect();
    set.into_iter().cloned().collect()
}

/// Parameter column headers, prefixed with `param.` where a name clashes
/// with `id` or a fixed column.
fn param_headers<'a>(names: &'a [String], fixed: &'a [&str]) -> impl Iterator<Item = String> + 'a {
    names.iter().map(|n| {
        if n == "id" || fixed.contains(&n.as_str()) {
            format!("param.{n}")
        } else {
            n.clone()
        }
    })
}

/// `id` and the parameter cells of a record.
fn lead_cells(r: &Record, params: &[String]) -> Vec<String> {
    let mut row = vec![r.id.clone()];
    row.extend(params.iter().map(|p| param_cell(r.params.get(p))));
    row
}

/// A parameter value as JSON writes it (strings unquoted).
fn param_cell(v: Option<&Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::Float(f)) => num(Some(*f)),
        Some(Value::Str(s)) => s.clone(),
    }
}

/// A number as JSON writes it (shortest round-trip form); empty when absent
/// or not finite.
pub(super) fn num(v: Option<f64>) -> String {
    v.and_then(serde_json::Number::from_f64)
        .map(|n| n.to_string())
        .unwrap_or_default()
}

fn direction_name(d: benchsuite_core::bench::Direction) -> &'static str {
    match d {
        benchsuite_core::bench::Direction::Higher => "higher",
        benchsuite_core::bench::Direction::Lower => "lower",
    }
}

/// Writes one row, each text cell guarded against formula injection and
/// its control characters shown as `?`.
pub(super) fn write_row<W: Write>(w: &mut ::csv::Writer<W>, row: &[String]) -> io::Result<()> {
    w.write_record(row.iter().map(|c| guard(c).into_owned()))
        .map_err(into_io)
}

/// A cell a spreadsheet would run as a formula (text starting with `=`,
/// `+`, `-`, `@`, a tab or a carriage return: a note, a reason or a
/// parameter value of a foreign report) gets a leading `'`, which shows it
/// as text (OWASP's advice for CSV injection). Numbers (`-0.05`, `+3`) are
/// left alone. A character that could steer a terminal or reorder a line
/// ([`benchsuite_core::text::is_unsafe`]: escapes, C1 controls, bidi
/// overrides) becomes `?`, as the table shows it; line feeds and tabs
/// stay (the cell is quoted).
fn guard(cell: &str) -> std::borrow::Cow<'_, str> {
    use benchsuite_core::text::is_unsafe;
    let cell: std::borrow::Cow<'_, str> = if cell.chars().any(is_unsafe) {
        std::borrow::Cow::Owned(
            cell.chars()
                .map(|c| if is_unsafe(c) { '?' } else { c })
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(cell)
    };
    let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && cell.trim().parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        cell
    }
}

/// Keeps the `io::Error` inside a csv error, so that a broken pipe is still
/// [`io::ErrorKind::BrokenPipe`].
pub(super) fn into_io(e: ::csv::Error) -> io::Error {
    match e.into_kind() {
        ::csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn read(bytes: &[u8]) -> (Vec<String>, Vec<::csv::StringRecord>) {
        let mut r = ::csv::Reader::from_reader(bytes);
        let headers = r.headers().unwrap().iter().map(str::to_string).collect();
        let rows = r.records().collect::<Result<Vec<_>, _>>().unwrap();
        (headers, rows)
    }

    fn cell<'a>(headers: &[String], row: &'a ::csv::StringRecord, name: &str) -> &'a str {
        let i = headers.iter().position(|h| h == name).unwrap();
        &row[i]
    }

    #[test]
    fn reference_columns_only_in_reference_reports() {
        let mut report = fixtures::report();
        report.records[1].reference = Some(benchsuite_core::reference::ReferenceResult {
            tool: "tool".into(),
            version: None,
            command: "tool --x".into(),
            metric: "latency".into(),
            median: Some(2e-6),
            unit: "s".into(),
            ratio: Some(2.0),
            rounds: vec![2e-6],
            note: None,
            our_rounds: None,
            round_ratios: Vec::new(),
        });
        let mut out = Vec::new();
        write_report(&report, &mut out).unwrap();
        let (h, rows) = read(&out);
        assert!(h.ends_with(&REFERENCE_COLUMNS.map(String::from)));
        assert!(rows.iter().all(|r| r.len() == h.len()));
        // On the latency row of mem.bandwidth only.
        assert_eq!(cell(&h, &rows[1], "ref_tool"), "");
        assert_eq!(cell(&h, &rows[2], "ref_tool"), "tool");
        assert_eq!(cell(&h, &rows[2], "ref_ratio"), "2.0");
        assert_eq!(cell(&h, &rows[2], "ref_command"), "tool --x");
    }

    #[test]
    fn report_reads_back_with_a_standard_reader() {
        let mut out = Vec::new();
        write_report(&fixtures::report(), &mut out).unwrap();
        let (h, rows) = read(&out);
        let expected: Vec<&str> = ["id", "block", "call", "op", "precision"]
            .into_iter()
            .chain(REPORT_COLUMNS)
            .collect();
        assert_eq!(h, expected);
        // syscall: 1 metric, bandwidth: 2 metrics, skipped gpu: 1 row.
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.len() == h.len()));

        let syscall = &rows[0];
        assert_eq!(cell(&h, syscall, "call"), "getppid");
        assert_eq!(cell(&h, syscall, "block"), "");
        assert_eq!(cell(&h, syscall, "median"), "5.1e-8");
        assert_eq!(cell(&h, syscall, "direction"), "lower");
        assert_eq!(cell(&h, syscall, "warnings"), "vDSO, not a real syscall");

        let bw = &rows[1];
        assert_eq!(cell(&h, bw, "block"), "4096");
        assert_eq!(cell(&h, bw, "median").parse::<f64>().unwrap(), 2.5e9);
        assert_eq!(cell(&h, bw, "efficiency"), "0.5");
        assert_eq!(cell(&h, &rows[2], "metric"), "latency");
        assert_eq!(cell(&h, &rows[2], "lat_p99"), "2.5e-6");
        assert_eq!(cell(&h, &rows[2], "efficiency"), "");

        let gpu = &rows[3];
        assert_eq!(cell(&h, gpu, "status"), "skipped");
        assert_eq!(cell(&h, gpu, "reason"), "no GPU, found none via NVML");
        assert_eq!(cell(&h, gpu, "metric"), "");
        assert_eq!(cell(&h, gpu, "median"), "");
    }

    #[test]
    fn a_failed_record_is_one_row_with_its_reason_and_no_numbers() {
        let mut r = fixtures::report();
        // Measured, then its teardown failed: the metrics are still there.
        r.records[1].status = benchsuite_core::Status::Failed;
        r.records[1].reason = Some("teardown: buffer \"b\", still mapped".into());
        let mut out = Vec::new();
        write_report(&r, &mut out).unwrap();
        let (h, rows) = read(&out);
        assert_eq!(rows.len(), 3, "syscall, failed bandwidth, skipped gpu");
        let failed = &rows[1];
        assert_eq!(cell(&h, failed, "id"), "mem.bandwidth");
        assert_eq!(cell(&h, failed, "block"), "4096");
        assert_eq!(cell(&h, failed, "status"), "failed");
        assert_eq!(
            cell(&h, failed, "reason"),
            "teardown: buffer \"b\", still mapped"
        );
        for col in [
            "metric",
            "unit",
            "n",
            "median",
            "ci95_low",
            "peak",
            "efficiency",
        ] {
            assert_eq!(cell(&h, failed, col), "", "{col}");
        }
        assert_eq!(cell(&h, &rows[2], "status"), "skipped");
    }

    #[test]
    fn a_clashing_parameter_name_is_prefixed() {
        let mut r = fixtures::report();
        r.records[0].params.set("unit", Value::Str("x".into()));
        let mut out = Vec::new();
        write_report(&r, &mut out).unwrap();
        let (h, rows) = read(&out);
        assert_eq!(cell(&h, &rows[0], "param.unit"), "x");
        assert_eq!(cell(&h, &rows[0], "unit"), "s");
    }

    #[test]
    fn comparison_reads_back_with_problems_as_rows() {
        let mut out = Vec::new();
        write_comparison(&fixtures::comparison(), &mut out).unwrap();
        let (h, rows) = read(&out);
        assert_eq!(h[..5], ["id", "block", "call", "op", "metric"]);
        assert_eq!(h.last().unwrap(), "note");
        // bandwidth and latency of mem.bandwidth, then os.syscall missing
        // in new (a gate failure with its reason); gpu.flops was skipped
        // on both sides, so it is not the new report's problem.
        assert_eq!(rows.len(), 3);
        assert_eq!(cell(&h, &rows[0], "verdict"), "regressed");
        assert_eq!(cell(&h, &rows[0], "gate"), "fail");
        assert_eq!(cell(&h, &rows[0], "threshold"), "5%");
        let change: f64 = cell(&h, &rows[0], "change").parse().unwrap();
        assert!((change + 0.3).abs() < 1e-9, "{change}");
        let lo: f64 = cell(&h, &rows[0], "change_low").parse().unwrap();
        let hi: f64 = cell(&h, &rows[0], "change_high").parse().unwrap();
        assert!(lo < change && change < hi && hi < -0.05, "{lo} {hi}");
        // The same latency against one baseline: the prior's noise between
        // runs leaves a 5% change possible, so it is undecided.
        assert_eq!(cell(&h, &rows[1], "verdict"), "undecided");
        assert_eq!(cell(&h, &rows[1], "gate"), "undecided");
        assert_eq!(cell(&h, &rows[2], "id"), "os.syscall");
        assert_eq!(cell(&h, &rows[2], "call"), "getppid");
        assert_eq!(cell(&h, &rows[2], "verdict"), "missing");
        assert_eq!(cell(&h, &rows[2], "gate"), "fail");
        assert_eq!(cell(&h, &rows[2], "note"), "ran in base, absent from new");
    }
}
