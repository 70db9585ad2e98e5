//! Table: aligned plain text for a terminal, the default when stdout is a
//! TTY. No colour, so it reads the same in a log file.
//!
//! A report shows one line per record × metric: the benchmark key (on the
//! first metric of a record only), the metric, the median in human units,
//! the half-width of the 95% confidence interval of the mean as a
//! percentage of the mean, the range of the samples, the latency p99, the
//! efficiency against the theoretical peak and, in a report of `benchsuite
//! reference`, the ratio to the reference tool (`0.98×`, above 1 means
//! benchsuite did better; on the row of the metric the tool measured; the
//! column costs 8 characters, so the tool's name is with the notes).
//! Those last three columns appear only when some record has them. A record
//! that did not run shows its status and reason. The tool's command line,
//! version and note are listed with the notes.
//!
//! The key shows only what tells records apart ([`short_keys`]): the
//! parameters that vary between the records of one benchmark, and those
//! given on the command line; sizes read `1MiB`. The full set stays in
//! JSON and CSV. Warnings follow the table, grouped under their record,
//! each text once; the notes are counted on one line, or listed the same
//! way with [`TableOptions::verbose`]. Free text is wrapped at [`WIDTH`]
//! columns.

use std::collections::BTreeSet;
use std::io::{self, Write};

use crate::compare::{BetweenSource, Comparison};
use benchsuite_core::param::Point;
use benchsuite_core::reference::ReferenceResult;
use benchsuite_core::results::{Record, Report, Status};

use super::TableOptions;
use super::comparison::{
    COMPARISON_HEADER, COMPARISON_RIGHT, ComparisonView, comparison_notes, comparison_rows,
    gate_lines,
};
use super::layout::{Line, report_lines_keyed};

/// Space between columns.
const GAP: &str = "  ";

/// The width the table is laid out for: the quick pass fits it, and free
/// text (reasons, warnings, notes) is wrapped at it.
const WIDTH: usize = 120;

/// The widest key (first column) kept on its metric's line. A longer one (a
/// sweep over many parameters) stands on a line of its own above its
/// metrics, so one long key does not push every number of the table off a
/// terminal's width.
const KEY_MAX: usize = 40;

/// Header of the report columns (shorter than the Markdown one's, so the
/// table fits [`WIDTH`]).
const HEADER: [&str; 8] = [
    "benchmark",
    "metric",
    "median",
    "±95% CI",
    "min .. max",
    "p99",
    "% peak",
    "vs ref",
];

/// A writer that shows control characters instead of sending them: text
/// from a report (a host name, a note, a parameter value of a foreign
/// report) cannot steer the terminal or reorder a line. Every character
/// [`benchsuite_core::text::is_unsafe`] (ASCII controls other than the
/// line feed, DEL, the C1 controls U+0080–U+009F that some terminals take
/// as escapes, bidi overrides and isolates, zero-width characters), the
/// tab, and bytes that are not UTF-8 become `?`.
pub(crate) struct Printable<'a> {
    out: &'a mut dyn Write,
    /// The start of a character split between two writes.
    pending: Vec<u8>,
}

impl<'a> Printable<'a> {
    pub(crate) fn new(out: &'a mut dyn Write) -> Printable<'a> {
        Printable {
            out,
            pending: Vec::new(),
        }
    }

    pub(crate) fn finish(mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.pending).is_empty() {
            self.out.write_all(b"?")?;
        }
        self.out.flush()
    }
}

/// Appends `text` to `clean` with what [`Printable`] hides as `?`.
fn push_clean(clean: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        if c == '\t' || benchsuite_core::text::is_unsafe(c) {
            clean.push(b'?');
        } else {
            let mut b = [0u8; 4];
            clean.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
    }
}

impl Write for Printable<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(buf);
        let mut clean = Vec::with_capacity(data.len());
        let mut rest = &data[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_clean(&mut clean, text);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // The prefix was just checked.
                    push_clean(&mut clean, std::str::from_utf8(valid).unwrap_or(""));
                    match e.error_len() {
                        // A character the next write completes.
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                        Some(n) => {
                            clean.push(b'?');
                            rest = &after[n..];
                        }
                    }
                }
            }
        }
        self.out.write_all(&clean)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes the report as an aligned table followed by its warnings and notes.
pub(super) fn write_report(
    report: &Report,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut p = Printable::new(out);
    write_report_raw(report, options, &mut p)?;
    p.finish()
}

fn write_report_raw(
    report: &Report,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let keys = short_keys(report);
    let rows: Vec<Row> = report_lines_keyed(report, &keys)
        .into_iter()
        .zip(line_records(report))
        .map(|(l, r)| match l {
            Line::Metric { mut cells, first } => {
                if !first {
                    cells[0].clear();
                }
                cells[4] = one_unit_range(&cells[4]);
                let reference = reference_cell(r, &cells[1]);
                let mut cells = cells.to_vec();
                cells.push(reference);
                Row::Cells(cells)
            }
            Line::NotRun { key, note } => Row::Note(key, note),
        })
        .collect();
    let rows = group_notes(rows);
    // Columns 0 and 1 are text, the others numbers. An empty column (no
    // latency, no peak, no reference) is dropped.
    let right = [false, false, true, true, true, true, true, true];
    for line in render(&HEADER, &rows, &right, KEY_MAX) {
        writeln!(out, "{line}")?;
    }
    super::ladder::write_ladders(report, &keys, out)?;
    let c = &report.config;
    let mut sampling = match (c.duration_s, c.interval_s) {
        (Some(d), Some(i)) => format!("time series over {d} s, one sample per {i} s"),
        _ => format!("{} samples per record", c.runs),
    };
    if report.records.iter().any(|r| r.capacity.is_some()) {
        sampling.push_str(" (a capacity search's steps: 5 samples, 1-5 s in all)");
    } else if report.records.iter().any(|r| r.load.is_some()) {
        sampling.push_str(" (open-loop records: samples of at least 100 ms)");
    }
    writeln!(
        out,
        "\n{sampling}, each batch >= {} (clock read costs {}, {:.4}% of a batch){}",
        benchsuite_core::units::format_seconds(c.min_sample_time_s),
        benchsuite_core::units::format_seconds(c.timer_overhead_s),
        100.0 * c.timer_overhead_s / c.min_sample_time_s,
        if report.host.build.is_debug() {
            "; DEBUG BUILD"
        } else {
            ""
        }
    )?;
    let warnings = grouped(
        report.records.iter().zip(&keys).map(|(r, k)| {
            (
                k.as_str(),
                r.warnings.iter().map(|w| w.to_string()).collect(),
            )
        }),
        false,
    );
    if !warnings.is_empty() {
        writeln!(out, "\nwarnings:")?;
        for line in warnings {
            writeln!(out, "{line}")?;
        }
    }
    let notes = grouped(
        report
            .records
            .iter()
            .zip(&keys)
            .map(|(r, k)| (k.as_str(), record_notes(r))),
        true,
    );
    if options.verbose && !notes.is_empty() {
        writeln!(out, "\nnotes:")?;
        for line in notes {
            writeln!(out, "{line}")?;
        }
    } else if !notes.is_empty() {
        let n = note_count(report);
        let s = if n == 1 { "" } else { "s" };
        writeln!(out, "\n{n} note{s}, -v to show")?;
    }
    Ok(())
}

/// Records in a row that did not run for one reason (five GPU records
/// without a driver) as one row: their keys, then the reason once.
fn group_notes(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    for row in rows {
        if let (Row::Note(key, note), Some(Row::Note(keys, last))) = (&row, out.last_mut())
            && note == last
        {
            keys.push_str(", ");
            keys.push_str(key);
            continue;
        }
        out.push(row);
    }
    out
}

/// The records' distinct note texts: how many lines `-v` would show.
fn note_count(report: &Report) -> usize {
    report
        .records
        .iter()
        .flat_map(record_notes)
        .collect::<BTreeSet<_>>()
        .len()
}

/// A record's notes, then what its reference tool ran (`reference: fio
/// 3.33: fio --name=... ; note`), for the notes of the table.
fn record_notes(r: &Record) -> Vec<String> {
    let mut notes = r.notes.clone();
    if let Some(x) = &r.reference {
        notes.push(reference_text(x));
    }
    notes
}

/// `reference: TOOL VERSION: COMMAND` and its note, one line.
pub(super) fn reference_text(x: &ReferenceResult) -> String {
    let mut s = format!("reference: {}", x.tool);
    if let Some(v) = &x.version {
        // Most tools print their name in their version line.
        if v.starts_with(&x.tool) {
            s = format!("reference: {v}");
        } else {
            s.push_str(&format!(" ({v})"));
        }
    }
    s.push_str(&format!(": {}", x.command));
    if let Some(n) = &x.note {
        s.push_str(&format!("; {n}"));
    }
    s
}

/// The record each line of [`report_lines_keyed`] comes from, in the same
/// order: one line for a record that did not run, one per metric of one
/// that did.
pub(super) fn line_records(report: &Report) -> Vec<&Record> {
    report
        .records
        .iter()
        .flat_map(|r| {
            let n = if r.status != Status::Ok || r.metrics.is_empty() {
                1
            } else {
                r.metrics.len()
            };
            std::iter::repeat_n(r, n)
        })
        .collect()
}

/// The reference cell of a record's row for `metric`: `0.98×` on the row
/// of the metric the tool measured (`-` where there is no ratio: the tool
/// is missing or failed; the notes say why), empty elsewhere.
pub(super) fn reference_cell(r: &Record, metric: &str) -> String {
    match &r.reference {
        Some(x) if benchsuite_core::reference::base_metric(&x.metric) == metric => match x.ratio {
            Some(v) => format!("{v:.2}×"),
            None => "-".to_string(),
        },
        _ => String::new(),
    }
}

/// Each record's key, showing only what distinguishes it: a parameter
/// whose value differs between the records of the same benchmark in this
/// report, or one given on the command line (`report.config.params`).
/// Sizes (`block`, `size`, `stride`, `*_size`, `*bytes`) read `1MiB`.
pub(super) fn short_keys(report: &Report) -> Vec<String> {
    let given: BTreeSet<&str> = report.config.params.keys().map(String::as_str).collect();
    let items: Vec<(&str, &Point)> = report
        .records
        .iter()
        .map(|r| (r.id.as_str(), &r.params))
        .collect();
    super::keys::short_keys(&items, &given)
}

/// `1.0 GB/s .. 1.2 GB/s` as `1.0 .. 1.2 GB/s`: the unit once where both
/// ends share it.
fn one_unit_range(range: &str) -> String {
    let Some((lo, hi)) = range.split_once(" .. ") else {
        return range.to_string();
    };
    match (lo.rsplit_once(' '), hi.rsplit_once(' ')) {
        (Some((a, u)), Some((b, v))) if u == v => format!("{a} .. {b} {u}"),
        _ => range.to_string(),
    }
}

/// Texts grouped under their record's key, each distinct text once per
/// record: `  key` then `    text` (wrapped at [`WIDTH`]). With `once`, a
/// text is shown only under the first record that has it, with how many
/// more records share it.
fn grouped<'a>(records: impl Iterator<Item = (&'a str, Vec<String>)>, once: bool) -> Vec<String> {
    let records: Vec<(&str, Vec<String>)> = records.collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for (i, (key, texts)) in records.iter().enumerate() {
        let mut mine: Vec<String> = Vec::new();
        for t in texts {
            if !once && mine.contains(t) {
                continue;
            }
            if once {
                if !seen.insert(t.as_str()) {
                    continue;
                }
                let more = records[i + 1..]
                    .iter()
                    .filter(|(_, ts)| ts.contains(t))
                    .count();
                mine.push(match more {
                    0 => t.clone(),
                    1 => format!("{t} (and 1 more record)"),
                    m => format!("{t} (and {m} more records)"),
                });
            } else {
                mine.push(t.clone());
            }
        }
        if mine.is_empty() {
            continue;
        }
        out.push(format!("  {key}"));
        for m in mine {
            out.extend(wrap(&m, "    ", "      "));
        }
    }
    out
}

/// Splits `text` into lines of at most [`WIDTH`] characters at spaces, the
/// first line starting with `first`, the others with `rest`. A word longer
/// than a line stands alone on its line.
pub(super) fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let width = |s: &str| s.chars().count();
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && width(&line) + 1 + width(word) > WIDTH {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

/// Runs `f` on a writer that shows control characters instead of sending
/// them ([`Printable`]).
pub(crate) fn printable(
    out: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut p = Printable::new(out);
    f(&mut p)?;
    p.finish()
}

/// Writes what fails the gate first (one line each, with its reason), then
/// one line per compared metric (those that can fail the gate; all of
/// them with [`TableOptions::verbose`]), the summary line and the notes,
/// each record by its short key ([`short_keys`]) and free text wrapped at
/// [`WIDTH`].
pub(super) fn write_comparison(
    c: &Comparison,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut p = Printable::new(out);
    write_comparison_raw(c, options, &mut p)?;
    p.finish()
}

fn write_comparison_raw(
    c: &Comparison,
    options: &TableOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let view = ComparisonView::new(c, options.verbose, options.verbose);
    let gate = gate_lines(&view);
    for line in &gate {
        for l in wrap(line, "", "    ") {
            writeln!(out, "{l}")?;
        }
    }
    if !gate.is_empty() {
        writeln!(out)?;
    }
    let mut cells = comparison_rows(&view);
    let measured = c.metrics.iter().any(|m| {
        matches!(
            m.between_source,
            Some(BetweenSource::History | BetweenSource::Floor)
        )
    });
    if !options.verbose && !measured {
        // The noise between runs is only assumed (a prior, the paired
        // rounds): the notes say so, and -v, JSON and CSV have each value.
        for r in &mut cells {
            r[7].clear();
        }
    }
    // A record's key on its first metric only.
    let mut last: Option<String> = None;
    let rows: Vec<Row> = cells
        .iter()
        .map(|r| {
            let mut r = r.to_vec();
            if last.as_deref() == Some(r[0].as_str()) {
                r[0].clear();
            } else {
                last = Some(r[0].clone());
            }
            Row::Cells(r)
        })
        .collect();
    let mut lines = render(&COMPARISON_HEADER, &rows, &COMPARISON_RIGHT, KEY_MAX);
    let widest = |lines: &[String]| lines.iter().map(|l| l.chars().count()).max();
    if let Some(w) = widest(&lines).filter(|&w| w > WIDTH) {
        // Too wide for a terminal: the keys that do not fit stand on a
        // line of their own above their metrics (the rule line below the
        // header is as wide as the columns).
        let key = rows
            .iter()
            .filter_map(|r| match r {
                Row::Cells(c) => Some(c[0].chars().count()),
                _ => None,
            })
            .filter(|&k| k <= KEY_MAX)
            .fold(COMPARISON_HEADER[0].len(), usize::max);
        let fits = (WIDTH + key).saturating_sub(w);
        if fits >= COMPARISON_HEADER[0].len() {
            lines = render(&COMPARISON_HEADER, &rows, &COMPARISON_RIGHT, fits);
        }
    }
    if widest(&lines).is_some_and(|w| w > WIDTH) {
        // Still too wide: every key on its own line, and no key column.
        let mut rows = Vec::new();
        let mut last: Option<&str> = None;
        for r in &cells {
            if last != Some(r[0].as_str()) {
                rows.push(Row::Heading(r[0].clone()));
                last = Some(r[0].as_str());
            }
            let mut c = r[1..].to_vec();
            c[0] = format!("  {}", c[0]);
            rows.push(Row::Cells(c));
        }
        lines = render(
            &COMPARISON_HEADER[1..],
            &rows,
            &COMPARISON_RIGHT[1..],
            KEY_MAX,
        );
    }
    for line in lines {
        writeln!(out, "{line}")?;
    }
    let (summary, notes) = comparison_notes(&view);
    writeln!(out)?;
    writeln!(out, "{summary}")?;
    for n in notes {
        for l in wrap(&n, "", "    ") {
            writeln!(out, "{l}")?;
        }
    }
    let hidden = c.metrics.len() - view.metrics().count();
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        writeln!(
            out,
            "{hidden} metric{s} that cannot fail the gate (derived or spread) not shown, -v to show"
        )?;
    }
    Ok(())
}

/// One table row.
enum Row {
    /// One cell per column.
    Cells(Vec<String>),
    /// A first cell, then free text that spans the other columns.
    Note(String, String),
    /// A line of its own above the rows it heads (a record's key).
    Heading(String),
}

/// Lays out `rows` under `header`, padding each column to its widest cell
/// (counted in characters, so `µs` is two wide). Columns empty in every row
/// are dropped; trailing spaces are trimmed.
fn render(header: &[&str], rows: &[Row], right: &[bool], key_max: usize) -> Vec<String> {
    let width = |s: &str| s.chars().count();
    let used: Vec<usize> = (0..header.len())
        .filter(|&i| {
            i == 0
                || rows
                    .iter()
                    .any(|r| matches!(r, Row::Cells(c) if !c[i].is_empty()))
        })
        .collect();
    let mut widths: Vec<usize> = used.iter().map(|&i| width(header[i])).collect();
    // Keys longer than key_max get their own line and do not widen column 0.
    let key_width = |k: &str| {
        let w = width(k);
        if w > key_max { 0 } else { w }
    };
    for r in rows {
        match r {
            Row::Cells(c) => {
                for (k, (w, &i)) in widths.iter_mut().zip(&used).enumerate() {
                    let cw = if k == 0 {
                        key_width(&c[i])
                    } else {
                        width(&c[i])
                    };
                    *w = (*w).max(cw);
                }
            }
            Row::Note(first, _) => widths[0] = widths[0].max(key_width(first)),
            Row::Heading(_) => {}
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (k, (&i, &w)) in used.iter().zip(&widths).enumerate() {
            if k > 0 {
                s.push_str(GAP);
            }
            let pad = " ".repeat(w - width(cells[i]));
            if right[i] {
                s.push_str(&pad);
                s.push_str(cells[i]);
            } else {
                s.push_str(cells[i]);
                s.push_str(&pad);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(header)];
    let total = widths.iter().sum::<usize>() + GAP.len() * (widths.len() - 1);
    out.push("-".repeat(total));
    for r in rows {
        match r {
            Row::Cells(c) => {
                let mut cells: Vec<&str> = c.iter().map(String::as_str).collect();
                if width(cells[0]) > widths[0] {
                    out.push(cells[0].to_string());
                    cells[0] = "";
                }
                out.push(line(&cells));
            }
            Row::Note(first, note) => {
                let first = if width(first) > widths[0] {
                    out.push(first.clone());
                    ""
                } else {
                    first.as_str()
                };
                // The reason wrapped at WIDTH, under itself.
                let first = format!("{first}{}{GAP}", " ".repeat(widths[0] - width(first)));
                let rest = " ".repeat(widths[0] + GAP.len());
                out.extend(wrap(note, &first, &rest));
            }
            Row::Heading(text) => out.push(text.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use crate::export::keys::param_text;
    use benchsuite_core::param::Value;

    /// What the table writer lets through, written byte by byte (so each
    /// multi-byte character is split between writes) and at once.
    #[test]
    fn printable_hides_controls_and_bidi_even_split_between_writes() {
        let text = "é\x1b]0;X\x07\u{9b}2J\u{202e}evil\u{2066}\tok ✓\n";
        let want = "é?]0;X??2J?evil??ok ✓\n";
        let mut at_once = Vec::new();
        printable(&mut at_once, |w| w.write_all(text.as_bytes())).unwrap();
        assert_eq!(String::from_utf8(at_once).unwrap(), want);
        let mut split = Vec::new();
        printable(&mut split, |w| {
            text.bytes().try_for_each(|b| w.write_all(&[b]))
        })
        .unwrap();
        assert_eq!(String::from_utf8(split).unwrap(), want);
        // Bytes that are not UTF-8, and a character cut at the end.
        let mut bad = Vec::new();
        printable(&mut bad, |w| w.write_all(b"a\xffb\xe2\x80")).unwrap();
        assert_eq!(bad, b"a?b?");
    }

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn table(r: &Report, verbose: bool) -> String {
        text(|o| write_report(r, &TableOptions { verbose }, o))
    }

    fn widest(t: &str) -> usize {
        t.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    /// The report of a real `benchsuite run` (the quick pass, 22 records,
    /// a long-keyed disk.io, skipped GPU records with a long reason).
    fn quick_pass() -> Report {
        Report::from_json(include_str!("testdata/quick-pass.json"), "quick-pass.json").unwrap()
    }

    #[test]
    fn report_table_is_aligned_and_readable() {
        let t = table(&fixtures::report(), false);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("benchmark"), "{t}");
        // The median column ends at the same character on every metric row.
        let end_of = |l: &str, needle: &str| {
            l.find(needle)
                .map(|b| l[..b].chars().count() + needle.chars().count())
        };
        let e1 = end_of(lines[2], "51.00 ns").unwrap();
        let e2 = end_of(lines[3], "2.500 GB/s").unwrap();
        let e3 = end_of(lines[4], "1.00 µs").unwrap();
        assert_eq!((e1, e2), (e3, e3), "{t}");
        // One record per benchmark and no parameter given: the id alone.
        assert!(lines[2].starts_with("os.syscall  "), "{t}");
        assert!(lines[3].contains("50.0%"), "{t}");
        // The range names its unit once.
        assert!(lines[3].contains("2.400 .. 2.600 GB/s"), "{t}");
        // The latency row carries the p99 and, being a second metric, no key.
        assert!(
            lines[4].starts_with(' ') && lines[4].contains("2.50 µs"),
            "{t}"
        );
        assert!(
            lines[5].starts_with("gpu.flops ")
                && lines[5].ends_with("skipped: no GPU, found none via NVML"),
            "{t}"
        );
        let tail: Vec<&str> = lines.iter().rev().take(3).rev().copied().collect();
        assert_eq!(
            tail,
            ["warnings:", "  os.syscall", "    vDSO, not a real syscall"],
            "{t}"
        );
    }

    #[test]
    fn the_key_shows_what_varies_and_what_was_given_in_human_units() {
        let mut r = fixtures::report();
        let mut big = r.records[1].clone();
        big.params.set("block", Value::Int(1 << 20));
        r.records.insert(2, big);
        let keys = short_keys(&r);
        assert_eq!(
            keys,
            [
                "os.syscall",
                "mem.bandwidth block=4KiB",
                "mem.bandwidth block=1MiB",
                "gpu.flops",
            ]
        );
        // A parameter given on the command line stays in the key, even
        // where it does not vary.
        r.config.params.insert("op".into(), "copy".into());
        r.config.params.insert("precision".into(), "f16".into());
        let keys = short_keys(&r);
        assert_eq!(keys[1], "mem.bandwidth block=4KiB op=copy");
        assert_eq!(keys[3], "gpu.flops precision=f16");
        let t = table(&r, false);
        assert!(
            t.contains("\nmem.bandwidth block=1MiB op=copy  bandwidth"),
            "{t}"
        );
        // JSON and CSV keep every parameter.
        let mut csv = Vec::new();
        super::super::write_report(super::super::Format::Csv, &r, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv.contains("1048576"), "{csv}");
        assert_eq!(param_text("threads", &Value::Int(4096)), "4096");
        assert_eq!(param_text("stride", &Value::Int(64)), "64B");
        assert_eq!(param_text("file_size", &Value::Int(1 << 30)), "1GiB");
    }

    #[test]
    fn failed_and_skipped_records_show_their_status_and_reason() {
        let mut r = fixtures::report();
        // Measured, then its teardown failed: no numbers, the reason instead.
        r.records[1].status = benchsuite_core::Status::Failed;
        r.records[1].reason = Some("teardown: unmap failed\ncaused by: EBUSY".into());
        let t = table(&r, false);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[3].starts_with("mem.bandwidth ")
                && lines[3].ends_with("failed: teardown: unmap failed caused by: EBUSY"),
            "{t}"
        );
        assert!(
            lines[4].starts_with("gpu.flops ")
                && lines[4].ends_with("skipped: no GPU, found none via NVML"),
            "{t}"
        );
        assert!(!t.contains("GB/s") && !t.contains("% peak"), "{t}");
        // A long reason wraps under itself within the width.
        r.records[2].reason = Some("no GPU: ".repeat(40));
        let t = table(&r, false);
        assert!(widest(&t) <= WIDTH, "{t}");
        let at = t.find("skipped: no GPU").unwrap();
        let column = t[..at].rsplit('\n').next().unwrap().chars().count();
        let next = t[at..].lines().nth(1).unwrap();
        assert_eq!(next.len() - next.trim_start().len(), column, "{t}");
        // A report of nothing but records that did not run still lists them.
        r.records.remove(0);
        let t = table(&r, false);
        assert!(
            t.contains("failed: teardown") && t.contains("skipped: no GPU"),
            "{t}"
        );
    }

    #[test]
    fn notes_are_counted_unless_verbose_then_listed_each_text_once() {
        let mut r = fixtures::report();
        r.records[0].notes = vec!["clock: tsc".into(), "one op = one getppid".into()];
        r.records[1].notes = vec!["clock: tsc".into()];
        let t = table(&r, false);
        assert!(!t.contains("clock: tsc"), "{t}");
        assert_eq!(t.lines().last().unwrap(), "2 notes, -v to show", "{t}");
        let t = table(&r, true);
        let notes: Vec<&str> = t.lines().skip_while(|l| *l != "notes:").collect();
        assert_eq!(
            notes,
            [
                "notes:",
                "  os.syscall",
                "    clock: tsc (and 1 more record)",
                "    one op = one getppid",
            ],
            "{t}"
        );
        assert!(
            t.find("warnings:").unwrap() < t.find("notes:").unwrap(),
            "{t}"
        );
        r.records[0].notes.truncate(1);
        r.records[1].notes.clear();
        assert!(table(&r, false).ends_with("\n1 note, -v to show\n"));
        r.records[0].notes.clear();
        let t = table(&r, false);
        assert!(!t.contains("note"), "{t}");
    }

    #[test]
    fn warnings_are_grouped_under_their_record_each_text_once() {
        let mut r = fixtures::report();
        r.records[0]
            .warnings
            .push("vDSO, not a real syscall".into());
        r.records[1].warnings = vec![
            benchsuite_core::Caveat::Noisy {
                metric: "bandwidth".into(),
                cv: 0.2,
                n: 3,
            },
            benchsuite_core::Caveat::text("x ".repeat(100)),
        ];
        let t = table(&r, false);
        assert_eq!(t.matches("vDSO, not a real syscall").count(), 1, "{t}");
        let w: Vec<&str> = t.lines().skip_while(|l| *l != "warnings:").collect();
        assert_eq!(
            w[1..3],
            ["  os.syscall", "    vDSO, not a real syscall"],
            "{t}"
        );
        assert_eq!(w[3], "  mem.bandwidth", "{t}");
        assert!(w[4].starts_with("    bandwidth is noisy: CV 20.0%"), "{t}");
        // A long text wraps within the width, indented under itself.
        assert!(w[6].starts_with("      x x"), "{t}");
        assert!(widest(&t) <= WIDTH, "{t}");
    }

    #[test]
    fn the_quick_pass_fits_120_columns() {
        let r = quick_pass();
        for verbose in [false, true] {
            let t = table(&r, verbose);
            assert!(widest(&t) <= 120, "{}:\n{t}", widest(&t));
            // Every number is there: one row per metric of every ok record.
            let metrics: usize = r.records.iter().map(|r| r.metrics.len()).sum();
            let skipped = r.records.iter().filter(|r| r.metrics.is_empty()).count();
            let rows = t.lines().filter(|l| l.contains(" .. ")).count();
            assert!(rows >= metrics, "{rows} rows for {metrics} metrics:\n{t}");
            // Records skipped in a row for one reason share one row: the
            // reason once, after all their keys.
            let mut groups = 0;
            let mut last: Option<&str> = None;
            for rec in &r.records {
                let reason = rec
                    .metrics
                    .is_empty()
                    .then(|| rec.reason.as_deref().unwrap_or(""));
                if reason.is_some() && reason != last {
                    groups += 1;
                }
                last = reason;
                if rec.metrics.is_empty() {
                    assert!(t.contains(&rec.id), "{} missing:\n{t}", rec.id);
                }
            }
            assert!(
                groups < skipped,
                "the fixture has no group: {groups} of {skipped}"
            );
            assert_eq!(t.matches("skipped: ").count(), groups, "{t}");
            assert!(t.contains("gpu.flops, gpu.iops, gpu.matmul"), "{t}");
            // Keys are the ids alone: each benchmark ran once.
            let rows: String = t.lines().take_while(|l| !l.is_empty()).collect();
            assert!(
                t.contains("\ndisk.io  ") && !rows.contains("1048576"),
                "{t}"
            );
            // Each warning once.
            let warnings: usize = r.records.iter().map(|r| r.warnings.len()).sum();
            let listed = t
                .lines()
                .skip_while(|l| *l != "warnings:")
                .take_while(|l| !l.is_empty())
                .filter(|l| l.starts_with("    ") && !l.starts_with("      "))
                .count();
            assert_eq!(listed, warnings, "{t}");
        }
        let t = table(&r, false);
        let notes = r
            .records
            .iter()
            .flat_map(|r| &r.notes)
            .collect::<BTreeSet<_>>()
            .len();
        assert!(
            t.ends_with(&format!("\n{notes} notes, -v to show\n")),
            "{t}"
        );
        assert!(!t.contains("loopback"), "{t}");
        let t = table(&r, true);
        assert_eq!(t.matches("path to 127.0.0.1: loopback").count(), 2, "{t}");
    }

    #[test]
    fn a_long_key_stands_on_its_own_line() {
        let mut r = fixtures::report();
        let long: String = (0..12).map(|i| format!(" param{i}=1048576")).collect();
        r.config.params.insert("zz".into(), "long".into());
        r.records[1]
            .params
            .set("zz", benchsuite_core::Value::Str(long.clone()));
        r.records[2]
            .params
            .set("zz", benchsuite_core::Value::Str(long));
        let t = table(&r, false);
        let lines: Vec<&str> = t.lines().collect();
        let key = lines
            .iter()
            .position(|l| l.contains("param11=1048576") && !l.contains("skipped"))
            .unwrap();
        // The key line holds nothing else; its metric follows, unindented
        // by the long key, its median aligned with the short-key rows'.
        assert!(!lines[key].contains("GB/s"), "{t}");
        let end_of = |l: &str, needle: &str| {
            l.find(needle)
                .map(|b| l[..b].chars().count() + needle.chars().count())
        };
        assert_eq!(
            end_of(lines[key + 1], "2.500 GB/s"),
            end_of(lines[2], "51.00 ns"),
            "{t}"
        );
        assert!(lines[key + 1].len() < 120, "{t}");
        // A skipped record with a long key: the reason on the next line.
        let skipped = t.lines().find(|l| l.contains("skipped: no GPU")).unwrap();
        assert!(
            skipped.starts_with(' ') && !skipped.contains("param11"),
            "{t}"
        );
    }

    fn reference(metric: &str, ratio: Option<f64>, note: Option<&str>) -> ReferenceResult {
        ReferenceResult {
            tool: "fio".into(),
            version: Some("fio-3.33".into()),
            command: "fio --name=x --rw=read".into(),
            metric: metric.into(),
            median: ratio.map(|_| 2e9),
            unit: "B/s".into(),
            ratio,
            rounds: Vec::new(),
            note: note.map(String::from),
            our_rounds: None,
            round_ratios: Vec::new(),
        }
    }

    #[test]
    fn the_reference_ratio_is_a_column_on_the_tools_metric() {
        let mut r = fixtures::report();
        assert!(!table(&r, false).contains("vs ref"));
        r.records[1].reference = Some(reference("bandwidth", Some(1.25), None));
        r.records[0].reference = Some(reference(
            "time_per_op",
            None,
            Some("not installed: apt install fio"),
        ));
        let t = table(&r, false);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].ends_with("vs ref"), "{t}");
        // On the bandwidth row, not on the latency row of the same record.
        assert!(lines[3].ends_with(" 1.25×"), "{t}");
        assert!(!lines[4].contains('×'), "{t}");
        // No ratio: a dash, and the reason with the notes.
        assert!(lines[2].ends_with(" -"), "{t}");
        assert!(t.ends_with("\n2 notes, -v to show\n"), "{t}");
        let t = table(&r, true);
        assert!(
            t.contains(
                "    reference: fio-3.33: fio --name=x --rw=read; not installed: apt install fio"
            ),
            "{t}"
        );
        // The column's right edge lines up.
        let w = lines[0].chars().count();
        assert_eq!(lines[2].chars().count(), w, "{t}");
        assert_eq!(lines[3].chars().count(), w, "{t}");
    }

    #[test]
    fn the_reference_column_costs_eight_characters() {
        let mut r = quick_pass();
        // The rule under the header is as wide as the columns.
        let rule = |t: &str| t.lines().nth(1).unwrap().len();
        let plain = rule(&table(&r, false));
        for rec in r.records.iter_mut().filter(|r| !r.metrics.is_empty()) {
            let m = rec.metrics[0].name.clone();
            let mut x = reference(&m, Some(0.987), None);
            x.tool = "likwid-bench".into();
            rec.reference = Some(x);
        }
        let t = table(&r, false);
        assert!(t.contains(" 0.99×\n"), "{t}");
        assert_eq!(rule(&t), plain + GAP.len() + "vs ref".len(), "{t}");
        // The quick pass's widest row is UDP's datagram rate
        // (`134.650 .. 227.204 kdatagram/s`); without it a reference
        // report of every other benchmark fits.
        r.records.retain(|r| r.id != "net.udp_throughput");
        let t = table(&r, false);
        assert!(widest(&t) <= WIDTH, "{}:\n{t}", widest(&t));
    }

    #[test]
    fn empty_columns_are_dropped() {
        let mut r = fixtures::report();
        r.records.truncate(1);
        let t = table(&r, false);
        assert!(!t.contains("p99") && !t.contains("% peak"), "{t}");
        assert!(t.contains("±95% CI"), "{t}");
    }

    #[test]
    fn comparison_table_says_what_differs_between_the_runs() {
        let mut c = fixtures::comparison();
        c.context_differences = vec!["quick: false → true".into()];
        let t = text(|o| write_comparison(&c, &TableOptions::default(), o));
        assert!(
            t.lines()
                .any(|l| l == "differs between the runs: quick: false → true"),
            "{t}"
        );
    }

    #[test]
    fn comparison_table_lists_gate_failures_first_then_verdicts_and_notes() {
        let t = text(|o| write_comparison(&fixtures::comparison(), &TableOptions::default(), o));
        let first: Vec<&str> = t.lines().take(2).collect();
        // One record of each benchmark: the id says which.
        assert_eq!(
            first[0],
            "FAIL os.syscall: missing in new: ran in base, absent from new"
        );
        assert!(
            first[1].starts_with("FAIL mem.bandwidth (bandwidth): regressed -30% [-48%, -5.7%]"),
            "{t}"
        );
        let row = t.lines().find(|l| l.contains("bandwidth  ")).unwrap();
        assert!(row.starts_with("mem.bandwidth  bandwidth "), "{t}");
        assert!(row.contains("-30% [") && row.contains("regressed"), "{t}");
        // The record's second metric under its first, without its key.
        let row = t.lines().find(|l| l.contains("latency  ")).unwrap();
        assert!(row.starts_with("  ") && row.contains("undecided"), "{t}");
        assert!(
            t.contains("gate FAILED: 1 regressed, 1 undecided, 1 missing in new"),
            "{t}"
        );
        assert!(t.contains("rule: regressed when the whole interval"), "{t}");
        assert!(
            t.contains(
                "not compared: gpu.flops: skipped (no GPU, found none via NVML) in base and new"
            ),
            "{t}"
        );
        // -v: the full keys.
        let v =
            text(|o| write_comparison(&fixtures::comparison(), &TableOptions { verbose: true }, o));
        assert!(
            v.lines()
                .any(|l| l.starts_with("mem.bandwidth block=4096 op=copy  bandwidth")),
            "{v}"
        );
    }

    /// The quick pass against a second run of it: metrics that moved by a
    /// few percent, one whose rounds disagree wildly, GPU records skipped
    /// on both sides.
    fn quick_pass_comparison(rule: crate::compare::GateRule) -> Comparison {
        use benchsuite_core::stats::Summary;
        let base = quick_pass();
        let mut new = base.clone();
        for (i, r) in new.records.iter_mut().enumerate() {
            for m in &mut r.metrics {
                let by = 1.0 + 0.02 * ((i % 5) as f64 - 2.0);
                for s in &mut m.samples {
                    *s *= by;
                }
                if r.id == "os.process_create" {
                    let n = m.samples.len();
                    m.samples[n - 1] *= 70.0;
                }
                if let Ok(s) = Summary::new(&m.samples) {
                    m.summary = s;
                }
            }
        }
        let options = crate::compare::CompareOptions {
            rule: Some(rule),
            ..Default::default()
        };
        crate::compare::compare(&base, &new, &options).unwrap()
    }

    #[test]
    fn the_quick_pass_comparison_fits_120_columns_and_prints_nothing_that_means_nothing() {
        use crate::compare::GateRule;
        for rule in [GateRule::Interval, GateRule::Band, GateRule::Paired] {
            let c = quick_pass_comparison(rule);
            let t = text(|o| write_comparison(&c, &TableOptions::default(), o));
            assert!(widest(&t) <= 120, "{}:\n{t}", widest(&t));
            // Keys say what differs, in human sizes: no record of the quick
            // pass shares its benchmark, so each is its id.
            assert!(
                !t.contains("size=1073741824") && !t.contains("engine=io_uring"),
                "{t}"
            );
            assert!(
                t.lines()
                    .any(|l| l == "disk.io" || l.starts_with("disk.io ")),
                "{t}"
            );
            // The GPU records skipped on both sides for one reason: once.
            assert_eq!(t.matches("no CUDA driver").count(), 1, "{t}");
            assert!(
                t.contains("not compared: gpu.flops, gpu.iops, gpu.matmul, gpu.bandwidth, gpu.latency: skipped (no CUDA driver"),
                "{t}"
            );
            assert!(!t.contains("in base; skipped"), "{t}");
            // No column or line that says nothing under the rule in force.
            assert!(
                !t.contains("quiet") && !t.contains("threshold of 0.0%"),
                "{t}"
            );
            assert!(t.contains("worst"), "{t}");
            // Paired rounds: judged round by round (no drift note), and
            // an undecided job is told to measure more rounds, not to
            // interleave what already was.
            if rule == GateRule::Paired {
                assert!(!t.contains("\ndrift:"), "{t}");
                assert!(!t.contains("measure the two builds side by side"), "{t}");
                if c.outcome() == crate::compare::Outcome::Undecided {
                    assert!(t.contains("more rounds (`Builds::rounds`) would"), "{t}");
                }
            }
            // Metrics that cannot fail the gate: counted, listed with -v.
            let hidden = c.metrics.iter().filter(|m| !m.gated).count();
            assert!(hidden > 0);
            let s = if hidden == 1 { "" } else { "s" };
            assert!(
                t.contains(&format!("{hidden} metric{s} that cannot fail the gate (derived or spread) not shown, -v to show")),
                "{t}"
            );
            let v = text(|o| write_comparison(&c, &TableOptions { verbose: true }, o));
            assert!(v.contains("(not gated)") && v.contains("rerun CV"), "{v}");
            assert!(v.contains("size=1073741824"), "{v}");
            assert!(!v.contains("not shown, -v to show"), "{v}");
        }
    }
}
