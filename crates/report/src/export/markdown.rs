//! Markdown: GitHub-flavoured tables with the same headline columns as the
//! terminal table, for pull-request comments and job summaries. A report of
//! `benchsuite reference` adds a `vs reference` column (`0.98×`, above 1
//! means benchsuite did better) and lists each tool and its command line.

use std::io::{self, Write};

use crate::compare::Comparison;
use benchsuite_core::results::Report;

use super::comparison::{
    COMPARISON_HEADER, COMPARISON_RIGHT, ComparisonView, comparison_notes, comparison_rows,
    gate_lines,
};
use super::layout::{Line, REPORT_HEADER, note_lines, report_lines, warning_lines};
use super::table::{line_records, reference_cell, reference_text};

/// Writes the report as a table, then its warnings and notes as lists.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    // `benchsuite reference` reports add the ratio to the tool.
    let with_ref = report.records.iter().any(|r| r.reference.is_some());
    let mut header = REPORT_HEADER.to_vec();
    let mut right = vec![false, false, true, true, true, true, true];
    if with_ref {
        header.push("vs reference");
        right.push(true);
    }
    write_header(out, &header, &right)?;
    for (line, r) in report_lines(report).into_iter().zip(line_records(report)) {
        let mut cells = match line {
            Line::Metric { cells, .. } => cells.to_vec(),
            Line::NotRun { key, note } => {
                let mut cells = vec![String::new(); REPORT_HEADER.len()];
                cells[0] = key;
                cells[1] = note;
                cells
            }
        };
        if with_ref {
            let metric = cells[1].clone();
            cells.push(reference_cell(r, &metric));
        }
        write_row(out, &cells)?;
    }
    let warnings = warning_lines(report);
    if !warnings.is_empty() {
        writeln!(out, "\n**Warnings**\n")?;
        for w in warnings {
            writeln!(out, "- {}", escape(&w))?;
        }
    }
    let notes = note_lines(report);
    if !notes.is_empty() {
        writeln!(out, "\n**Notes**\n")?;
        for n in notes {
            writeln!(out, "- {}", escape(&n))?;
        }
    }
    if with_ref {
        writeln!(out, "\n**Reference tools**\n")?;
        for r in &report.records {
            if let Some(x) = &r.reference {
                writeln!(
                    out,
                    "- {}: {}",
                    escape(&r.key()),
                    escape(&reference_text(x))
                )?;
            }
        }
    }
    Ok(())
}

/// Writes a CI job summary (or a pull-request comment): the verdict line,
/// what fails the gate, the metrics that moved or are open (regressed,
/// improved, undecided, not judged) as a table with a sparkline of their
/// run medians (the baselines', then the new run's, last), the others in a
/// collapsed table, then the notes.
pub(super) fn write_comparison(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let view = ComparisonView::new(c, true, false);
    let (summary, notes) = comparison_notes(&view);
    let mark = match c.outcome() {
        crate::compare::Outcome::Passed => "✅",
        crate::compare::Outcome::Failed => "❌",
        crate::compare::Outcome::Undecided => "❔",
    };
    writeln!(out, "**{mark} {}**\n", escape(&summary))?;
    let gate = gate_lines(&view);
    if !gate.is_empty() {
        for g in gate {
            writeln!(out, "- {}", escape(&g))?;
        }
        writeln!(out)?;
    }
    let mut header = COMPARISON_HEADER.to_vec();
    header.push("runs, new last");
    let mut right = COMPARISON_RIGHT.to_vec();
    right.push(false);
    let moved = |m: &crate::compare::MetricComparison| {
        m.gated && !matches!(m.verdict, crate::compare::Verdict::Unchanged)
    };
    let rows: Vec<(bool, String)> = view
        .metrics()
        .zip(comparison_rows(&view))
        .map(|(m, cells)| {
            let mut line: Vec<String> = cells.iter().map(|c| escape(c)).collect();
            let mut runs: Vec<Option<f64>> = m.history.iter().copied().map(Some).collect();
            runs.push(Some(m.new_median));
            line.push(if m.history.is_empty() {
                String::new()
            } else {
                format!("`{}`", super::sparkline(&runs))
            });
            (moved(m), format!("| {} |", line.join(" | ")))
        })
        .collect();
    let (shown, rest): (Vec<_>, Vec<_>) = rows.into_iter().partition(|(m, _)| *m);
    if !shown.is_empty() {
        write_header(out, &header, &right)?;
        for (_, row) in &shown {
            writeln!(out, "{row}")?;
        }
    }
    if !rest.is_empty() {
        writeln!(
            out,
            "\n<details><summary>{} more metric{}: unchanged, or not gated</summary>\n",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        )?;
        write_header(out, &header, &right)?;
        for (_, row) in &rest {
            writeln!(out, "{row}")?;
        }
        writeln!(out, "\n</details>")?;
    }
    if !notes.is_empty() {
        writeln!(out)?;
        for n in notes {
            writeln!(out, "- {}", escape(&n))?;
        }
    }
    Ok(())
}

fn write_header(out: &mut dyn Write, header: &[&str], right: &[bool]) -> io::Result<()> {
    writeln!(out, "| {} |", header.join(" | "))?;
    let rule: Vec<&str> = right
        .iter()
        .map(|&r| if r { "---:" } else { ":---" })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))
}

fn write_row(out: &mut dyn Write, cells: &[String]) -> io::Result<()> {
    let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
    writeln!(out, "| {} |", cells.join(" | "))
}

/// Escapes what would break a table cell or be read as markup (links,
/// mentions), and shows control characters and bidi overrides
/// ([`benchsuite_core::text::is_unsafe`], and tabs) as `?`. Underscores are left
/// alone: GitHub does not emphasise inside words (`time_per_op`).
pub(crate) fn escape(s: &str) -> String {
    let mut e = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            // `[` `]` would make a link of a foreign report's text, `@` a
            // mention in a CI summary.
            '|' | '\\' | '*' | '`' | '<' | '[' | ']' | '@' => {
                e.push('\\');
                e.push(ch);
            }
            '\n' | '\r' => e.push(' '),
            c if c == '\t' || benchsuite_core::text::is_unsafe(c) => e.push('?'),
            c => e.push(c),
        }
    }
    e
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

    /// Rows of the first table, split into cells (pipes inside cells are
    /// escaped, so a plain split is wrong only on `\|`).
    fn table_rows(t: &str) -> Vec<Vec<String>> {
        t.lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim_matches('|')
                    .replace("\\|", "\u{0}")
                    .split('|')
                    .map(|c| c.trim().replace('\u{0}', "|"))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn failed_records_are_rows_with_their_reason() {
        let mut r = fixtures::report();
        r.records[1].status = benchsuite_core::Status::Failed;
        r.records[1].reason = Some("round 2: prepare: out of memory\nretry with less".into());
        let t = text(|o| write_report(&r, o));
        let rows = table_rows(&t);
        // header, rule, syscall, the failed record on one row, skipped gpu.
        assert_eq!(rows.len(), 5, "{t}");
        assert_eq!(
            rows[3][..2],
            [
                "mem.bandwidth block=4096 op=copy",
                "failed: round 2: prepare: out of memory retry with less"
            ]
        );
        assert!(rows[3][2..].iter().all(String::is_empty), "{t}");
        assert_eq!(rows[4][1], "skipped: no GPU, found none via NVML");
    }

    #[test]
    fn report_is_a_github_table() {
        let mut r = fixtures::report();
        r.records[2].reason = Some("driver a|b".into());
        let t = text(|o| write_report(&r, o));
        let rows = table_rows(&t);
        assert_eq!(rows[0][0], "benchmark");
        assert_eq!(rows[1][2], "---:");
        // header, rule, 4 lines; every line has the same number of cells.
        assert_eq!(rows.len(), 6, "{t}");
        assert!(rows.iter().all(|r| r.len() == 7), "{t}");
        assert_eq!(
            rows[2][..3],
            ["os.syscall call=getppid", "time_per_op", "51.00 ns"]
        );
        assert_eq!(rows[3][6], "50.0%");
        assert_eq!(rows[5][1], "skipped: driver a|b");
        assert!(
            t.contains("- os.syscall call=getppid: vDSO, not a real syscall"),
            "{t}"
        );
    }

    #[test]
    fn a_reference_report_has_a_ratio_column_and_the_commands() {
        let mut r = fixtures::report();
        let rows = table_rows(&text(|o| write_report(&r, o)));
        assert!(rows.iter().all(|r| r.len() == 7));
        r.records[1].reference = Some(benchsuite_core::reference::ReferenceResult {
            tool: "likwid-bench".into(),
            version: None,
            command: "likwid-bench -t copy -w S0:1GB".into(),
            metric: "bandwidth".into(),
            median: Some(2e9),
            unit: "B/s".into(),
            ratio: Some(1.25),
            rounds: vec![2e9],
            note: Some("a|b".into()),
            our_rounds: None,
            round_ratios: Vec::new(),
        });
        let t = text(|o| write_report(&r, o));
        let rows = table_rows(&t);
        assert!(rows.iter().all(|r| r.len() == 8), "{t}");
        assert_eq!(rows[0][7], "vs reference");
        assert_eq!(rows[3][7], "1.25×");
        // Not on the latency row, nor on the other records.
        assert_eq!(rows[4][7], "");
        assert_eq!(rows[2][7], "");
        assert!(
            t.ends_with(
                "**Reference tools**\n\n- mem.bandwidth block=4096 op=copy: reference: likwid-bench: likwid-bench -t copy -w S0:1GB; a\\|b\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn comparison_is_a_job_summary_with_a_github_table() {
        let t = text(|o| write_comparison(&fixtures::comparison(), o));
        assert!(
            t.starts_with("**❌ gate FAILED: 1 regressed, 1 undecided, 1 missing in new**"),
            "{t}"
        );
        // What fails the gate comes before the table.
        let fail = t.find("- FAIL os.syscall: missing in new").unwrap();
        let rows = table_rows(&t);
        assert_eq!(rows[0][..8], COMPARISON_HEADER);
        assert_eq!(rows[0][8], "runs, new last");
        assert!(fail < t.find("| benchmark |").unwrap(), "{t}");
        let bw = rows.iter().find(|r| r[1] == "bandwidth").unwrap();
        // Brackets escaped: a foreign report's text cannot make a link.
        assert!(bw[4].starts_with("-30% \\["), "{bw:?}");
        assert_eq!(bw[5], "regressed");
        // One baseline and the new run: high, then low.
        assert_eq!(bw[8], "`█▁`", "{bw:?}");
    }

    /// A pull request's summary: only what moved is in the first table,
    /// each with its history and the new run; the rest folded away.
    #[test]
    fn a_pull_request_summary_shows_what_moved_with_its_history() {
        use crate::compare::{Baseline, CompareOptions, compare_history};
        use benchsuite_core::stats::Summary;
        let base = fixtures::report();
        let runs: Vec<_> = (0..4)
            .map(|i| {
                let mut r = base.clone();
                r.started_at = format!("2026-11-0{}T00:00:00Z", i + 1);
                for rec in &mut r.records {
                    for m in &mut rec.metrics {
                        for s in &mut m.samples {
                            *s *= 1.0 + 0.002 * i as f64;
                        }
                        m.summary = Summary::new(&m.samples).unwrap();
                    }
                }
                r
            })
            .collect();
        let mut new = runs[3].clone();
        new.started_at = "2026-11-09T00:00:00Z".into();
        let m = &mut new.records[1].metrics[0];
        m.samples.iter_mut().for_each(|s| *s *= 0.5);
        m.summary = Summary::new(&m.samples).unwrap();
        let names = ["a", "b", "c", "d"];
        let history: Vec<Baseline<'_>> = runs
            .iter()
            .zip(names)
            .map(|(report, name)| Baseline { name, report })
            .collect();
        let c = compare_history(&history, &new, &CompareOptions::default()).unwrap();
        let t = text(|o| write_comparison(&c, o));
        let first = &t[..t.find("<details>").unwrap_or(t.len())];
        let rows = table_rows(first);
        let bw = rows
            .iter()
            .find(|r| r[1] == "bandwidth")
            .unwrap_or_else(|| panic!("{t}"));
        assert_eq!(bw[5], "regressed", "{t}");
        // Four baselines, then the new run at the bottom.
        let spark = bw[8].trim_matches('`');
        assert_eq!(spark.chars().count(), 5, "{bw:?}");
        assert_eq!(spark.chars().last(), Some('▁'), "{bw:?}");
        // Oldest first: the baselines grew by 0.2% a run.
        let h: Vec<f64> = c
            .metrics
            .iter()
            .find(|m| m.metric == "bandwidth")
            .unwrap()
            .history
            .clone();
        assert_eq!(h.len(), 4);
        assert!(h.windows(2).all(|w| w[0] < w[1]), "{h:?}");
        // Unchanged metrics are folded away, counted.
        for r in &rows[1..] {
            assert_ne!(r[5], "unchanged", "{t}");
        }
        if c.metrics
            .iter()
            .any(|m| m.verdict == crate::compare::Verdict::Unchanged)
        {
            assert!(t.contains("<details><summary>"), "{t}");
        }
    }
}
