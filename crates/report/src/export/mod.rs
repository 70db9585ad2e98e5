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

use std::io::{self, Write};

use crate::compare::Comparison;
use benchsuite_core::results::Report;

mod bmf;
mod comparison;
mod csv;
pub mod facts;
mod format;
mod gha;
pub mod host;
pub mod html;
mod json;
mod keys;
mod ladder;
mod layout;
pub mod list;
mod markdown;
mod openmetrics;
pub mod reference;
mod table;
mod trend;
mod trend_text;

use comparison::ComparisonView;
pub use format::{Format, TableOptions, UnknownFormat};
pub use gha::GhaTool;
pub(crate) use markdown::escape as escape_markdown;
pub(crate) use table::printable;
pub use trend::write_trend;
pub use trend_text::sparkline;

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
#[cfg(test)]
pub(crate) mod fixtures {
    //! A small report and comparison shared by the exporters' tests.

    use benchsuite_core::results::Report;
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
        use benchsuite_core::capacity::{Capacity, SearchOutcome, Step};
        use benchsuite_core::openloop::OpenLoad;
        use benchsuite_core::param::{Point, Value};
        use benchsuite_core::results::{Record, Status};
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
            verdict: SearchOutcome::Met,
            rate: Some(3000.0),
            interval: Some([Some(3000.0), Some(3464.0)]),
            knee: Some(3450.0),
            confidence: 0.95,
            steps,
            searches: Vec::new(),
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
