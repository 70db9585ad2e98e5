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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use crate::compare::{
    BetweenSource, Comparison, GateRule, MetricComparison, ProblemKind, Tolerance, Verdict,
};
use benchsuite_core::report::{Metric, Record, Report, Status};
use benchsuite_core::units::format_value;

mod bmf;
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

pub use gha::GhaTool;
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

/// Header of the comparison columns.
const COMPARISON_HEADER: [&str; 8] = [
    "benchmark",
    "metric",
    "base",
    "new",
    "change [interval]",
    "verdict",
    "worst",
    "rerun CV",
];

/// Which columns of [`COMPARISON_HEADER`] are right-aligned.
const COMPARISON_RIGHT: [bool; 8] = [false, false, true, true, true, false, true, true];

/// How a comparison is shown in the human-readable formats: each record by
/// its short key (what differs between the records of one benchmark, in
/// human sizes; [`keys::short_keys`]) unless `full_keys`, and with `all`,
/// the metrics that cannot fail the gate (derived and spread) too.
struct ComparisonView<'a> {
    c: &'a Comparison,
    /// Full key → short key, for every record the comparison names; empty
    /// with full keys.
    short: BTreeMap<&'a str, String>,
    all: bool,
}

impl<'a> ComparisonView<'a> {
    fn new(c: &'a Comparison, all: bool, full_keys: bool) -> Self {
        if full_keys {
            return ComparisonView {
                c,
                short: BTreeMap::new(),
                all,
            };
        }
        let mut items: Vec<(&str, &str, &benchsuite_core::param::Point)> = Vec::new();
        items.extend(
            c.metrics
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.problems
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.added
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.not_comparable
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        let pairs: Vec<(&str, &benchsuite_core::param::Point)> =
            items.iter().map(|(_, id, p)| (*id, *p)).collect();
        let keys = keys::short_keys(&pairs, &BTreeSet::new());
        let short = items.iter().map(|(k, _, _)| *k).zip(keys).collect();
        ComparisonView { c, short, all }
    }

    /// The short key of a record named by its full key.
    fn key<'k>(&'k self, full: &'k str) -> &'k str {
        self.short.get(full).map_or(full, String::as_str)
    }

    /// The metrics shown: all with `all`, else those that can fail the gate.
    fn metrics(&self) -> impl Iterator<Item = &'a MetricComparison> + '_ {
        self.c.metrics.iter().filter(|m| self.all || m.gated)
    }
}

/// The cells of each shown metric, under [`COMPARISON_HEADER`]: the change
/// with its interval, the verdict (with `worse` for an undecided change on
/// the worse side), the worst change the evidence leaves open and the
/// noise between runs it was judged with (where the rounds were the unit,
/// `drift`, the notes list).
fn comparison_rows(v: &ComparisonView<'_>) -> Vec<[String; 8]> {
    v.metrics()
        .map(|m| {
            let mut tags = Vec::new();
            if m.verdict == Verdict::Undecided && m.is_worse() {
                tags.push("worse");
            }
            if !m.gated {
                tags.push("not gated");
            }
            let verdict = if tags.is_empty() {
                m.verdict.to_string()
            } else {
                format!("{} ({})", m.verdict, tags.join(", "))
            };
            [
                v.key(&m.key).to_string(),
                m.metric.clone(),
                format_value(m.base_median, &m.unit),
                format_value(m.new_median, &m.unit),
                m.change_text(),
                verdict,
                m.worst_text(),
                between_cell(m),
            ]
        })
        .collect()
}

/// The noise between runs a metric was judged with: `3.1% (10 runs)`
/// measured from a history, `5% prior` without one.
fn between_cell(m: &MetricComparison) -> String {
    if m.between_source == Some(BetweenSource::Paired) {
        return "paired".into();
    }
    let Some(cv) = m.between_cv else {
        return String::new();
    };
    let cv = format!("{:.1}%", cv * 100.0);
    match m.between_source {
        Some(BetweenSource::History) => format!("{cv} ({} runs)", m.history_runs),
        Some(BetweenSource::Floor) => format!("{cv} floor"),
        Some(BetweenSource::Prior) => format!("{cv} prior"),
        _ => String::new(),
    }
}

/// What fails the gate, one line each, listed before anything else:
/// `FAIL os.syscall call=write: failed in new: prepare: ...`, then each
/// regression.
fn gate_lines(v: &ComparisonView<'_>) -> Vec<String> {
    let c = v.c;
    let mut lines = Vec::new();
    for p in &c.problems {
        let what = match (&p.metric, p.key.is_empty()) {
            (Some(m), _) => format!("{} ({m})", v.key(&p.key)),
            (None, false) => v.key(&p.key).to_string(),
            (None, true) => "new report".into(),
        };
        let tag = if p.allowed { "allowed" } else { "FAIL" };
        lines.push(match p.kind {
            ProblemKind::NotJudged => format!("{tag} {what}: not judged: {}", p.reason),
            kind => format!("{tag} {what}: {kind} in new: {}", p.reason),
        });
    }
    for m in c.with_verdict(Verdict::Regressed).filter(|m| m.gated) {
        lines.push(format!(
            "FAIL {} ({}): regressed {} (threshold {})",
            v.key(&m.key),
            m.metric,
            m.change_text(),
            m.tolerance
        ));
    }
    lines
}

/// The one-line summary under a comparison, then one line per thing the
/// reader should know: the rule, the noise floor, what differs between the
/// runs, added records and records not compared (those not compared for
/// one reason on one line).
fn comparison_notes(v: &ComparisonView<'_>) -> (String, Vec<String>) {
    let c = v.c;
    let mut rule = match c.rule {
        GateRule::Interval => "rule: regressed when the whole interval of the change lies beyond the threshold; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
        GateRule::Band => "rule: regressed when the change lies outside the band the baselines predict for an unchanged run, beyond the threshold, in most of new's rounds and at no level the history holds; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
        GateRule::Paired => "rule: regressed when the interleaved rounds' paired differences rule out no change and their trimmed mean is beyond the threshold; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
    };
    rule.push_str(&format!(
        " ({}; metrics in %: {}pp; tails: {}",
        Tolerance::Relative(c.threshold),
        crate::compare::rules::PERCENT_METRIC_DEFAULT,
        Tolerance::Relative(c.tail_threshold),
    ));
    for r in &c.rules {
        rule.push_str(&format!("; {r}"));
    }
    rule.push(')');
    let mut notes = vec![rule];
    if c.metrics.iter().any(|m| m.unchanged_above.is_some()) {
        notes.push(format!(
            "worst: the worst change this evidence leaves open ({:.0}% one-sided): a metric is unchanged when it lies within the threshold",
            100.0 * (1.0 - c.beta)
        ));
    }
    if c.family > 0 {
        let least = c
            .metrics
            .iter()
            .filter(|m| m.gated)
            .filter_map(|m| m.level)
            .fold(c.alpha, f64::min);
        let pct = |v: f64| {
            let s = format!("{:.3}", v * 100.0);
            format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
        };
        notes.push(format!(
            "family: {} gated metrics share a {} chance of any false alarm (Holm): each is judged at a one-sided level of {} to {}, its interval the two-sided 1 − 2·level one",
            c.family,
            pct(c.alpha),
            pct(least),
            pct(c.alpha),
        ));
    }
    match c.baselines.len() {
        0 | 1 => {
            if c.metrics.iter().any(|m| m.between_source == Some(BetweenSource::Prior)) {
                notes.push("history: one baseline, so the noise between runs is unknown: each metric's prior between-run CV stands in for it (conservative; give several baselines, or set --between-run-cv)".into());
            } else if c.metrics.iter().any(|m| m.between_source == Some(BetweenSource::None)) {
                notes.push("history: one baseline and no between-run CV: only the noise inside the two runs counts, so a machine state that outlasts a run looks like a change".into());
            }
        }
        n => notes.push(format!(
            "history: {n} baseline runs ({} … {}, the newest decides what is missing); each metric's noise between runs is measured from them",
            c.baselines[0],
            c.baselines[n - 1]
        )),
    }
    for e in &c.excluded {
        notes.push(format!(
            "left out of the history: {e} (--allow-mixed-hosts keeps it)"
        ));
    }
    if let Some(k) = &c.confirmation {
        notes.push(format!(
            "confirmation: {} of the {} undecided metrics decided by {} interleaved pairs of the two builds ({} record(s), looks at {} pairs, {:.0} s){}",
            k.decided,
            k.open,
            k.pairs,
            k.records.len(),
            k.looks.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "),
            k.wall_s,
            k.note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
        ));
    } else if c.outcome() == crate::compare::Outcome::Undecided {
        notes.push("undecided: the new run alone cannot tell these changes from the noise; measure the two builds side by side (interleaved) to decide them".into());
    }
    // Only the interval rule alarms exactly when an interval clears the
    // threshold, so only there does the quiet threshold of an A/A pair say
    // which threshold would have kept it quiet.
    let quiet = c
        .noise_floor()
        .filter(|(q, _)| c.rule == GateRule::Interval && *q > 0.0);
    let moved = c.count(Verdict::Regressed) + c.count(Verdict::Improved) > 0;
    if let (Some((q, qm)), false) = (quiet, moved) {
        notes.push(format!(
            "noise (if these are two runs of the same build): an alarm at any threshold below {} ({} {}); set --threshold above it",
            pct_text(q),
            v.key(&qm.key),
            qm.metric,
        ));
    }
    if let (Some((w, wm)), true) = (c.widest_noise(), moved) {
        notes.push(format!(
            "noise: the widest interval is ±{} ({} {}): smaller real changes cannot be confirmed at these --runs/--rounds",
            pct_text(w).trim_start_matches('+'),
            v.key(&wm.key),
            wm.metric
        ));
    }
    let what = |key: &str, metric: &Option<String>| match metric {
        Some(m) => format!("{} ({m})", v.key(key)),
        None => v.key(key).to_string(),
    };
    for d in &c.context_differences {
        notes.push(format!("differs between the runs: {d}"));
    }
    let drifted: Vec<String> = v
        .metrics()
        .filter(|m| m.drift && m.verdict != Verdict::NotJudged)
        .map(|m| format!("{} ({})", v.key(&m.key), m.metric))
        .collect();
    if !drifted.is_empty() {
        notes.push(format!(
            "drift: the rounds of a side differed by more than their samples' noise, so each round counted as one sample: {}",
            drifted.join(", ")
        ));
    }
    for m in v.metrics().filter(|m| m.verdict != Verdict::NotJudged) {
        if let Some(n) = &m.note {
            notes.push(format!("{} ({}): {n}", v.key(&m.key), m.metric));
        }
    }
    if !c.added.is_empty() {
        let added: Vec<String> = c.added.iter().map(|u| what(&u.key, &u.metric)).collect();
        notes.push(format!("added in new: {}", added.join(", ")));
    }
    // Records not compared for one reason (five GPU records without a
    // driver, skipped on both sides) share one line.
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for n in &c.not_comparable {
        let w = what(&n.key, &n.metric);
        match groups.iter_mut().find(|(r, _)| *r == n.reason) {
            Some((_, keys)) => keys.push(w),
            None => groups.push((n.reason.as_str(), vec![w])),
        }
    }
    for (reason, keys) in groups {
        notes.push(format!("not compared: {}: {reason}", keys.join(", ")));
    }
    (c.summary(), notes)
}

/// A relative change as a percentage: `+7.2%`, or `+2.8e13%` past
/// ±10,000% (never capped).
pub(crate) fn pct_text(v: f64) -> String {
    crate::compare::percent_text(v)
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
