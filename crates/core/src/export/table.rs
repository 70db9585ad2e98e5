//! Table: aligned plain text for a terminal, the default when stdout is a
//! TTY. No colour, so it reads the same in a log file.
//!
//! A report shows one line per record × metric: the benchmark key (id and
//! parameters, on the first metric of a record only), the metric, the median
//! in human units, the half-width of the 95% confidence interval of the mean
//! as a percentage of the mean, the range of the samples, the latency p99 and
//! the efficiency against the theoretical peak (those last two columns only
//! when some record has them). A record that did not run shows its status
//! and reason. Warnings follow the table, one per line, then the records'
//! notes (each distinct text once).

use std::io::{self, Write};

use crate::compare::Comparison;
use crate::report::Report;

use super::{
    COMPARISON_HEADER, Line, REPORT_HEADER, comparison_notes, comparison_rows, gate_lines,
    note_lines, report_lines, warning_lines,
};

/// Space between columns.
const GAP: &str = "  ";

/// The widest key (first column) kept on its metric's line. A longer one (a
/// benchmark with many parameters: `disk.io` has twelve) stands on a line of
/// its own above its metrics, so one long key does not push every number of
/// the table off a terminal's width.
const KEY_MAX: usize = 56;

/// Writes the report as an aligned table followed by its warnings.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let lines = report_lines(report);
    let rows: Vec<Row> = lines
        .into_iter()
        .map(|l| match l {
            Line::Metric { mut cells, first } => {
                if !first {
                    cells[0].clear();
                }
                Row::Cells(cells.to_vec())
            }
            Line::NotRun { key, note } => Row::Note(key, note),
        })
        .collect();
    // Columns 0 and 1 are text, the others numbers.
    let right = [false, false, true, true, true, true, true];
    for line in render(&REPORT_HEADER, &rows, &right) {
        writeln!(out, "{line}")?;
    }
    let c = &report.config;
    let sampling = match (c.duration_s, c.interval_s) {
        (Some(d), Some(i)) => format!("time series over {d} s, one sample per {i} s"),
        _ => format!("{} samples per record", c.runs),
    };
    writeln!(
        out,
        "\n{sampling}, each batch >= {} (clock read costs {}, {:.4}% of a batch){}",
        crate::units::format_seconds(c.min_sample_time_s),
        crate::units::format_seconds(c.timer_overhead_s),
        100.0 * c.timer_overhead_s / c.min_sample_time_s,
        if report.host.build.is_debug() {
            "; DEBUG BUILD"
        } else {
            ""
        }
    )?;
    let warnings = warning_lines(report);
    if !warnings.is_empty() {
        writeln!(out)?;
        for w in warnings {
            writeln!(out, "warning: {w}")?;
        }
    }
    let notes = note_lines(report);
    if !notes.is_empty() {
        writeln!(out)?;
        for n in notes {
            writeln!(out, "note: {n}")?;
        }
    }
    Ok(())
}

/// Writes what fails the gate first (one line each, with its reason), then
/// one line per compared metric, the summary line and the notes.
pub(super) fn write_comparison(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let gate = gate_lines(c);
    for line in &gate {
        writeln!(out, "{line}")?;
    }
    if !gate.is_empty() {
        writeln!(out)?;
    }
    let rows: Vec<Row> = comparison_rows(c)
        .into_iter()
        .map(|r| Row::Cells(r.to_vec()))
        .collect();
    let right = [false, false, true, true, true, false, true];
    for line in render(&COMPARISON_HEADER, &rows, &right) {
        writeln!(out, "{line}")?;
    }
    let (summary, notes) = comparison_notes(c);
    writeln!(out)?;
    writeln!(out, "{summary}")?;
    for n in notes {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// One table row.
enum Row {
    /// One cell per column.
    Cells(Vec<String>),
    /// A first cell, then free text that spans the other columns.
    Note(String, String),
}

/// Lays out `rows` under `header`, padding each column to its widest cell
/// (counted in characters, so `µs` is two wide). Columns empty in every row
/// are dropped; trailing spaces are trimmed.
fn render(header: &[&str], rows: &[Row], right: &[bool]) -> Vec<String> {
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
    // Keys longer than KEY_MAX get their own line and do not widen column 0.
    let key_width = |k: &str| {
        let w = width(k);
        if w > KEY_MAX { 0 } else { w }
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
                out.push(format!(
                    "{first}{}{GAP}{note}",
                    " ".repeat(widths[0] - width(first))
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn report_table_is_aligned_and_readable() {
        let t = text(|o| write_report(&fixtures::report(), o));
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
        assert!(lines[2].starts_with("os.syscall call=getppid"), "{t}");
        assert!(lines[3].contains("50.0%"), "{t}");
        // The latency row carries the p99 and, being a second metric, no key.
        assert!(
            lines[4].starts_with(' ') && lines[4].contains("2.50 µs"),
            "{t}"
        );
        assert!(
            lines[5].starts_with("gpu.flops precision=f16")
                && lines[5].ends_with("skipped: no GPU, found none via NVML"),
            "{t}"
        );
        assert_eq!(
            lines.last().unwrap(),
            &"warning: os.syscall call=getppid: vDSO, not a real syscall"
        );
    }

    #[test]
    fn failed_and_skipped_records_show_their_status_and_reason() {
        let mut r = fixtures::report();
        // Measured, then its teardown failed: no numbers, the reason instead.
        r.records[1].status = crate::Status::Failed;
        r.records[1].reason = Some("teardown: unmap failed\ncaused by: EBUSY".into());
        let t = text(|o| write_report(&r, o));
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[3].starts_with("mem.bandwidth block=4096 op=copy")
                && lines[3].ends_with("failed: teardown: unmap failed caused by: EBUSY"),
            "{t}"
        );
        assert!(
            lines[4].starts_with("gpu.flops precision=f16")
                && lines[4].ends_with("skipped: no GPU, found none via NVML"),
            "{t}"
        );
        assert!(!t.contains("GB/s") && !t.contains("% of peak"), "{t}");
        // A report of nothing but records that did not run still lists them.
        r.records.remove(0);
        let t = text(|o| write_report(&r, o));
        assert!(
            t.contains("failed: teardown") && t.contains("skipped: no GPU"),
            "{t}"
        );
    }

    #[test]
    fn notes_follow_the_warnings_each_text_once() {
        let mut r = fixtures::report();
        r.records[0].notes = vec!["clock: tsc".into(), "one op = one getppid".into()];
        r.records[1].notes = vec!["clock: tsc".into()];
        let t = text(|o| write_report(&r, o));
        let notes: Vec<&str> = t.lines().filter(|l| l.starts_with("note: ")).collect();
        assert_eq!(
            notes,
            [
                "note: os.syscall call=getppid (and 1 more record): clock: tsc",
                "note: os.syscall call=getppid: one op = one getppid",
            ],
            "{t}"
        );
        assert!(
            t.find("warning: ").unwrap() < t.find("note: ").unwrap(),
            "{t}"
        );
    }

    #[test]
    fn a_long_key_stands_on_its_own_line() {
        let mut r = fixtures::report();
        let long: String = (0..12).map(|i| format!(" param{i}=1048576")).collect();
        r.records[1]
            .params
            .set("zz", crate::Value::Str(long.clone()));
        r.records[2].params.set("zz", crate::Value::Str(long));
        let t = text(|o| write_report(&r, o));
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

    #[test]
    fn empty_columns_are_dropped() {
        let mut r = fixtures::report();
        r.records.truncate(1);
        let t = text(|o| write_report(&r, o));
        assert!(!t.contains("p99") && !t.contains("% of peak"), "{t}");
        assert!(t.contains("±95% CI"), "{t}");
    }

    #[test]
    fn comparison_table_says_what_differs_between_the_runs() {
        let mut c = fixtures::comparison();
        c.context_differences = vec!["--quick: false → true".into()];
        let t = text(|o| write_comparison(&c, o));
        assert!(
            t.lines()
                .any(|l| l == "differs between the runs: --quick: false → true"),
            "{t}"
        );
    }

    #[test]
    fn comparison_table_lists_gate_failures_first_then_verdicts_and_notes() {
        let t = text(|o| write_comparison(&fixtures::comparison(), o));
        let first: Vec<&str> = t.lines().take(2).collect();
        assert_eq!(
            first[0],
            "FAIL os.syscall call=getppid: missing in new: ran in base, absent from new"
        );
        assert!(
            first[1].starts_with(
                "FAIL mem.bandwidth block=4096 op=copy (bandwidth): regressed -30.0% ["
            ),
            "{t}"
        );
        let row = t.lines().find(|l| l.contains("bandwidth  ")).unwrap();
        assert!(row.contains("-30.0% [") && row.contains("regressed"), "{t}");
        assert!(
            t.contains("gate FAILED: 1 regressed, 1 unchanged, 1 missing in new"),
            "{t}"
        );
        assert!(
            t.contains("rule: regressed when the whole 90% interval"),
            "{t}"
        );
        assert!(
            t.contains("not compared: gpu.flops precision=f16: skipped (no GPU"),
            "{t}"
        );
    }
}
