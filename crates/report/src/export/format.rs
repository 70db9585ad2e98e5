//! The output formats ([`Format`]), as a name on the command line or a
//! file's extension gives them, and the `table` format's options. Plain
//! data: the writers in [`super`] dispatch on it.

use std::fmt;
use std::str::FromStr;

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
    /// [`GhaTool`](super::GhaTool), written with [`write_gha`](super::write_gha); [`write_report`](super::write_report) refuses it.
    Gha,
    /// OpenMetrics text exposition (also Prometheus text 0.0.4), for
    /// node_exporter's textfile collector and GitLab metrics reports.
    OpenMetrics,
    /// One self-contained HTML page of charts with the report embedded as
    /// JSON (see [`html`](super::html)); the default for `-o FILE.html`.
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

    /// Whether [`write_report`](super::write_report) can write this format to one stream (all
    /// but `gha`, which needs two files).
    pub fn writes_one_stream(self) -> bool {
        self != Format::Gha
    }

    /// Whether [`write_comparison`](super::write_comparison) writes this format (`table`, `json`,
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
