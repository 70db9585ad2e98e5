//! Exporters: one small file per output format, chosen with [`Format`].
//!
//! | format        | report                                           | comparison                    |
//! |---------------|--------------------------------------------------|-------------------------------|
//! | `table`       | aligned plain text, the default on a TTY         | one line per metric + verdict |
//! | `json`        | the full [`Report`], the baseline format         | the full [`Comparison`]       |
//! | `csv`         | one row per record × metric                      | one row per compared metric   |
//! | `markdown`    | a GitHub table of the headline columns           | a GitHub table with verdicts  |
//! | `bmf`         | Bencher Metric Format JSON (ok records)          | —                             |
//! | `gha`         | github-action-benchmark JSON, two files (`-o`)   | —                             |
//! | `openmetrics` | OpenMetrics text with a status gauge, `# EOF`    | —                             |
//!
//! Every record appears in `table`, `json`, `csv` and `markdown`, a skipped
//! or failed one with its status and reason. The dashboard formats (`bmf`,
//! `gha`) carry only `ok` records, having no place for a status;
//! `openmetrics` gives each record a `benchsuite_record_ok` sample. A format
//! that writes no comparison returns [`io::ErrorKind::InvalidInput`] from
//! [`write_comparison`] (check [`Format::writes_comparison`] first).
//!
//! Every writer takes a `&mut dyn Write` and returns [`io::Result`], so a
//! closed pipe surfaces as [`io::ErrorKind::BrokenPipe`] for the binary to
//! treat as success.

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use crate::compare::Comparison;
use benchsuite_core::report::{Metric, Record, Report, Status};
use benchsuite_core::units::format_value;

mod bmf;
mod comparison;
mod csv;
pub mod facts;
mod gha;
pub mod host;
pub mod html;
mod json;
mod keys;
mod ladder;
pub mod list;
mod markdown;
mod openmetrics;
pub mod reference;
mod table;
mod trend;

use comparison::{
    COMPARISON_HEADER, COMPARISON_RIGHT, ComparisonView, comparison_notes, comparison_rows,
    gate_lines,
};
pub use gha::GhaTool;
pub(crate) use markdown::escape as escape_markdown;
pub(crate) use table::printable;
pub use trend::{sparkline, write_trend};

/// How the `table` format writes a report or a comparison (the other
/// formats take none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// A report: print the records' notes; otherwise one line counts them
    /// (`12 notes, -v to show`). A comparison: show the metrics that
    /// cannot fail the gate (derived and spread) too; otherwise one line
    /// counts them.
    pub verbose: bool,
}

/// An output format. Parsed from the `--format` flag: `table`, `json`, `csv`,
/// `markdown` (or `md`), `bmf` (or `bencher`), `gha`, `openmetrics` (or
/// `prometheus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Aligned plain-text table for a terminal (the default on a TTY).
    Table,
    /// The full data as pretty JSON; a JSON report is the baseline that
    /// `compare` reads back.
    Json,
    /// A flat CSV projection for spreadsheets and scripts.
    Csv,
    /// A GitHub-flavoured Markdown table, for pull-request comments.
    Markdown,
    /// Bencher Metric Format JSON, for `bencher run --adapter json`.
    Bmf,
    /// github-action-benchmark's custom-tool JSON: two files, one per
    /// [`GhaTool`], written with [`write_gha`]; [`write_report`] refuses it.
    Gha,
    /// OpenMetrics text exposition (also Prometheus text 0.0.4), for
    /// node_exporter's textfile collector and GitLab metrics reports.
    OpenMetrics,
    /// One self-contained HTML page of charts with the report embedded as
    /// JSON (see [`html`]); the default for `-o FILE.html`.
    Html,
}

impl Format {
    /// Every format, in the order they are listed in help texts.
    pub const ALL: [Format; 8] = [
        Format::Table,
        Format::Json,
        Format::Csv,
        Format::Markdown,
        Format::Bmf,
        Format::Gha,
        Format::OpenMetrics,
        Format::Html,
    ];

    /// The canonical name, as accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
            Format::Bmf => "bmf",
            Format::Gha => "gha",
            Format::OpenMetrics => "openmetrics",
            Format::Html => "html",
        }
    }

    /// The format `-o FILE` implies when no `--format` is given, where the
    /// extension names one: `.json`, `.csv`, `.md`, `.prom` (the name
    /// node_exporter's textfile collector reads), `.html`. BMF and GHA files are
    /// JSON too, so they need `--format`.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "md" | "markdown" => Some(Format::Markdown),
            "prom" => Some(Format::OpenMetrics),
            "html" | "htm" => Some(Format::Html),
            _ => None,
        }
    }

    /// Whether [`write_report`] can write this format to one stream (all
    /// but `gha`, which needs two files).
    pub fn writes_one_stream(self) -> bool {
        self != Format::Gha
    }

    /// Whether [`write_comparison`] writes this format (`table`, `json`,
    /// `csv`, `markdown`).
    pub fn writes_comparison(self) -> bool {
        matches!(
            self,
            Format::Table | Format::Json | Format::Csv | Format::Markdown
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--format` value; its message lists the valid choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown output format `{given}`: expected one of table, json, csv, markdown (or md), bmf, gha, openmetrics, html"
)]
pub struct UnknownFormat {
    /// The text that was given.
    pub given: String,
}

impl FromStr for Format {
    type Err = UnknownFormat;

    /// Parses a format name, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "md" | "markdown" => Ok(Format::Markdown),
            "bmf" | "bencher" => Ok(Format::Bmf),
            "gha" => Ok(Format::Gha),
            "openmetrics" | "prometheus" => Ok(Format::OpenMetrics),
            "html" => Ok(Format::Html),
            _ => Err(UnknownFormat {
                given: s.to_string(),
            }),
        }
    }
}

/// Writes `report` to `out` in `format`. `gha` is two files, not one
/// stream: it returns [`io::ErrorKind::InvalidInput`]; use [`write_gha`].
pub fn write_report(format: Format, report: &Report, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Table => table::write_report(report, &TableOptions::default(), out),
        Format::Json => json::write_report(report, out),
        Format::Csv => csv::write_report(report, out),
        Format::Markdown => markdown::write_report(report, out),
        Format::Bmf => bmf::write_report(report, out),
        Format::Gha => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            gha::NEEDS_FILES,
        )),
        Format::OpenMetrics => openmetrics::write_report(report, out),
        Format::Html => html::write_html(&[(html_label(report), report.clone())], out),
    }
}

/// The label a single report is shown under in its HTML page: the run's
/// start time (a file name is not known here).
fn html_label(report: &Report) -> String {
    format!("run {}", report.started_at)
}

/// Writes `report` to `out` in `format`, the `table` format with
/// `options`; otherwise the same as [`write_report`].
pub fn write_report_with(
    format: Format,
    report: &Report,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Table => table::write_report(report, options, out),
        f => write_report(f, report, out),
    }
}

/// Writes the `gha` entries of `report` for one github-action-benchmark
/// tool: the metrics whose direction matches it (see [`GhaTool::path`] for
/// the file names `-o PREFIX` uses).
pub fn write_gha(tool: GhaTool, report: &Report, out: &mut dyn Write) -> io::Result<()> {
    gha::write_report(report, tool, out)
}

/// Writes `comparison` to `out` in `format`.
pub fn write_comparison(
    format: Format,
    comparison: &Comparison,
    out: &mut dyn Write,
) -> io::Result<()> {
    write_comparison_with(format, comparison, &TableOptions::default(), out)
}

/// Writes `comparison` to `out` in `format`, the `table` format with
/// `options` (with `verbose`, full of the metrics that cannot fail the
/// gate too); otherwise the same as [`write_comparison`].
pub fn write_comparison_with(
    format: Format,
    comparison: &Comparison,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Table => table::write_comparison(comparison, options, out),
        Format::Json => json::write_comparison(comparison, out),
        Format::Csv => csv::write_comparison(comparison, out),
        Format::Markdown => markdown::write_comparison(comparison, out),
        Format::Bmf | Format::Gha | Format::OpenMetrics | Format::Html => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the {format} format is for reports (`benchsuite report BASE.json NEW.json` draws a comparison); a comparison is written as table, json, csv or markdown"
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// Shared by the human-readable formats (table, markdown).

/// Header of the headline columns of a report.
const REPORT_HEADER: [&str; 7] = [
    "benchmark",
    "metric",
    "median",
    "±95% CI",
    "min .. max",
    "p99",
    "% of peak",
];

/// One line of the human-readable report.
enum Line {
    /// A measured metric: the cells under [`REPORT_HEADER`]; `first` is true
    /// on the first metric of a record.
    Metric { cells: [String; 7], first: bool },
    /// A record that did not run: its key and `skipped: reason`.
    NotRun { key: String, note: String },
}

/// The headline lines of a report, one per record × metric.
fn report_lines(report: &Report) -> Vec<Line> {
    let keys: Vec<String> = report.records.iter().map(Record::key).collect();
    report_lines_keyed(report, &keys)
}

/// [`report_lines`] with the records' keys given, one per record.
fn report_lines_keyed(report: &Report, keys: &[String]) -> Vec<Line> {
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

fn metric_cells(key: &str, r: &Record, m: &Metric) -> [String; 7] {
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
fn warning_lines(report: &Report) -> Vec<String> {
    report
        .records
        .iter()
        .flat_map(|r| r.warnings.iter().map(move |w| format!("{}: {w}", r.key())))
        .collect()
}

/// The records' notes, each text once: a note that several records share
/// (the same scratch directory, the same clock source) is shown with the
/// first record's key and how many more carry it.
fn note_lines(report: &Report) -> Vec<String> {
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

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A small report and comparison shared by the exporters' tests.

    use benchsuite_core::report::Report;
    use benchsuite_core::stats::Summary;

    use crate::compare::{CompareOptions, Comparison, compare};

    /// Three records (see [`benchsuite_core::testing::fixture_report`]).
    pub(crate) fn report() -> Report {
        benchsuite_core::testing::fixture_report()
    }

    /// A report of one capacity search for `p99<=1ms` over five steps:
    /// met at 1k, 2k and 3k/s, broken at 4k/s (saturated at 3.6k), its
    /// summary last.
    pub(crate) fn capacity_report() -> Report {
        use benchsuite_core::capacity::{Capacity, Step, Verdict};
        use benchsuite_core::openloop::OpenLoad;
        use benchsuite_core::param::{Point, Value};
        use benchsuite_core::report::{Record, Status};
        let mut r = report();
        r.records.clear();
        r.config.slo = Some("p99<=1ms".into());
        let step = |offered: f64, achieved: f64, p99: f64, met: bool| Step {
            offered,
            achieved,
            saturated: achieved < offered * 0.95,
            p50: p99 / 4.0,
            p99,
            p99_9: p99 * 2.0,
            count: 10_000,
            slo_value: Some([p99 * 0.9, p99, p99 * 1.1]),
            met: Some(met),
            failed: false,
        };
        let steps = vec![
            step(1000.0, 1000.0, 200e-6, true),
            step(2000.0, 1999.0, 300e-6, true),
            step(4000.0, 3600.0, 80e-3, false),
            step(3000.0, 2998.0, 700e-6, true),
            step(3464.0, 3450.0, 2e-3, false),
        ];
        for (i, s) in steps.iter().enumerate() {
            let mut p = Point::default();
            p.set("rate", Value::Int(s.offered as u64));
            let mut rec = Record::skipped("disk.io", p, "");
            rec.status = Status::Ok;
            rec.reason = None;
            rec.load = Some(OpenLoad {
                offered: s.offered,
                achieved: s.achieved,
                saturated: s.saturated,
                step: Some(i + 1),
            });
            r.records.push(rec);
        }
        let mut p = Point::default();
        p.set("rate", Value::Str("auto".into()));
        let mut sum = Record::skipped("disk.io", p, "");
        sum.status = Status::Ok;
        sum.reason = None;
        sum.capacity = Some(Capacity {
            slo: Some("p99<=1ms".into()),
            metric: "latency".into(),
            verdict: Verdict::Met,
            rate: Some(3000.0),
            interval: Some([Some(3000.0), Some(3464.0)]),
            knee: Some(3450.0),
            confidence: 0.95,
            steps,
        });
        r.records.push(sum);
        r
    }

    /// The fixture report against itself with bandwidth 30% lower.
    pub(crate) fn comparison() -> Comparison {
        let base = report();
        let mut new = base.clone();
        let m = &mut new.records[1].metrics[0];
        for s in &mut m.samples {
            *s *= 0.7;
        }
        m.summary = Summary::new(&m.samples).unwrap();
        new.records.remove(0);
        compare(&base, &new, &CompareOptions::default()).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_cannot_steer_a_terminal_a_spreadsheet_or_a_summary() {
        // A foreign report: an escape sequence (a window title, a colour),
        // a C1 CSI, a formula, a link and a mention in its strings.
        let mut r = fixtures::report();
        let hostile =
            "=HYPERLINK(\"http://x\") \u{1b}]0;pwned\u{7}\u{9b}31m [click](http://x) @everyone";
        r.records[2].reason = Some(hostile.into());
        r.records[1].notes.push(hostile.into());
        r.host.hostname = Some(hostile.into());
        let text = |f: Format| {
            let mut out = Vec::new();
            write_report_with(f, &r, &TableOptions { verbose: true }, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let table = text(Format::Table);
        assert!(table.contains("HYPERLINK"), "{table}");
        for c in ['\u{1b}', '\u{7}', '\u{9b}'] {
            assert!(!table.contains(c), "{c:?} in the table: {table}");
        }
        let csv = text(Format::Csv);
        let rows: Vec<::csv::StringRecord> = ::csv::Reader::from_reader(csv.as_bytes())
            .records()
            .map(|r| r.unwrap())
            .collect();
        let cells: Vec<&str> = rows.iter().flat_map(|r| r.iter()).collect();
        assert!(cells.iter().any(|c| c.starts_with("'=HYPERLINK")), "{csv}");
        assert!(!cells.iter().any(|c| c.starts_with("=HYPERLINK")), "{csv}");
        // Numbers keep their sign.
        assert!(
            !cells
                .iter()
                .any(|c| c.starts_with("'-") && c[1..].parse::<f64>().is_ok())
        );
        let md = text(Format::Markdown);
        assert!(
            md.contains("\\[click\\](http://x)") && md.contains("\\@everyone"),
            "{md}"
        );
        assert!(!md.contains('\u{1b}') && !md.contains('\u{9b}'), "{md}");
        // The comparison table too.
        let mut c = fixtures::comparison();
        c.metrics[0].note = Some(hostile.into());
        let mut out = Vec::new();
        write_comparison(Format::Table, &c, &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("HYPERLINK") && !t.contains('\u{1b}'), "{t}");
    }

    #[test]
    fn formats_parse_and_list_the_choices() {
        assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
        assert_eq!("Markdown".parse::<Format>().unwrap(), Format::Markdown);
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!("Prometheus".parse::<Format>().unwrap(), Format::OpenMetrics);
        assert_eq!("bencher".parse::<Format>().unwrap(), Format::Bmf);
        let e = "yaml".parse::<Format>().unwrap_err().to_string();
        assert!(e.contains("`yaml`"), "{e}");
        // The message lists every format.
        for f in Format::ALL {
            assert!(e.contains(f.name()), "{f}: {e}");
        }
        assert_eq!(Format::from_extension("PROM"), Some(Format::OpenMetrics));
        assert_eq!(Format::from_extension("md"), Some(Format::Markdown));
        assert_eq!(Format::from_extension("txt"), None);
    }

    #[test]
    fn formats_without_a_document_kind_say_so() {
        let (r, c) = (fixtures::report(), fixtures::comparison());
        let e = write_report(Format::Gha, &r, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("-o PREFIX"), "{e}");
        for f in Format::ALL.into_iter().filter(|f| !f.writes_comparison()) {
            let e = write_comparison(f, &c, &mut Vec::new()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{f}");
            assert!(e.to_string().contains(f.name()), "{e}");
        }
    }

    #[test]
    fn every_format_writes_every_document() {
        let (r, c) = (fixtures::report(), fixtures::comparison());
        for f in Format::ALL {
            let mut out = Vec::new();
            match f.writes_one_stream() {
                true => write_report(f, &r, &mut out).unwrap(),
                false => write_gha(GhaTool::SmallerIsBetter, &r, &mut out).unwrap(),
            }
            let text = String::from_utf8(out).unwrap();
            // The table's key shows only what tells records apart.
            let name = if f == Format::Table {
                "os.syscall"
            } else {
                "getppid"
            };
            assert!(text.contains(name), "{f}: {text}");
            if !f.writes_comparison() {
                continue;
            }
            let mut out = Vec::new();
            write_comparison(f, &c, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("regressed"), "{f}: {text}");
        }
    }
}
