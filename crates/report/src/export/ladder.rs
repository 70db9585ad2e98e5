//! The capacity searches of a report (`rate=auto`, `--slo`) as text: each
//! search's steps in the order they ran (offered and carried rate, the
//! percentiles from each operation's intended start, the verdict), then
//! its answer in one sentence. The table prints it after the records.

use std::io::{self, Write};

use benchsuite_core::results::Report;
use benchsuite_core::units::{format_seconds, format_value};

/// Writes every search of `report` (nothing when it has none), each
/// headed by its summary record's key in `keys` (one per record of the
/// report, as the table shows them).
pub(crate) fn write_ladders(
    report: &Report,
    keys: &[String],
    out: &mut dyn Write,
) -> io::Result<()> {
    for (r, key) in report.records.iter().zip(keys) {
        let Some(c) = &r.capacity else { continue };
        let what = match &c.slo {
            Some(s) => format!("capacity search for {s}"),
            None => "ladder up to saturation".to_string(),
        };
        writeln!(out, "\n{what}: {key}")?;
        let rows: Vec<[String; 7]> = c
            .steps
            .iter()
            .map(|s| {
                let t = |v: f64| {
                    if v.is_finite() {
                        format_seconds(v)
                    } else {
                        "-".into()
                    }
                };
                let verdict = if s.failed {
                    "failed".to_string()
                } else {
                    let mut v = match s.met {
                        Some(true) => "met".to_string(),
                        Some(false) => "not met".to_string(),
                        None => String::new(),
                    };
                    if s.saturated {
                        if !v.is_empty() {
                            v.push_str(", ");
                        }
                        v.push_str("saturated");
                    }
                    v
                };
                [
                    format_value(s.offered, "/s"),
                    format_value(s.achieved, "/s"),
                    t(s.p50),
                    t(s.p99),
                    t(s.p99_9),
                    s.slo_value
                        .map(|[lo, _, hi]| format!("{} .. {}", t(lo), t(hi)))
                        .unwrap_or_default(),
                    verdict,
                ]
            })
            .collect();
        let pct = c
            .slo
            .as_deref()
            .and_then(|s| s.split("<=").next())
            .map(|p| p.rsplit('.').next().unwrap_or(p))
            .map(|p| format!("{p} 95% interval"))
            .unwrap_or_default();
        let header = [
            "offered",
            "carried",
            "p50",
            "p99",
            "p99.9",
            pct.as_str(),
            "",
        ];
        let mut width = header.map(str::len);
        for row in &rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[&str]| {
            let mut s = String::from("  ");
            for (i, (cell, w)) in cells.iter().zip(width).enumerate() {
                if w == 0 {
                    continue;
                }
                let pad = w - cell.chars().count();
                if i == cells.len() - 1 {
                    s.push_str(cell);
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                    s.push_str("  ");
                }
            }
            s.trim_end().to_string()
        };
        writeln!(out, "{}", line(&header))?;
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            writeln!(out, "{}", line(&cells))?;
        }
        writeln!(out, "  {}", c.sentence())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_prints_its_steps_in_order_then_the_answer() {
        let r = crate::export::fixtures::capacity_report();
        let mut out = Vec::new();
        let keys: Vec<String> = r.records.iter().map(|x| x.key()).collect();
        write_ladders(&r, &keys, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].starts_with("capacity search for p99<=1ms: disk.io"),
            "{text}"
        );
        assert!(
            lines[2].contains("offered") && lines[2].contains("p99 95% interval"),
            "{text}"
        );
        // The steps in the order they ran: 1k, 2k, 4k (saturated), 3k, 3.464k.
        assert!(
            lines[3].contains("met") && lines[3].trim_start().starts_with("1.000 k/s"),
            "{text}"
        );
        assert!(lines[5].contains("not met, saturated"), "{text}");
        assert!(lines[6].trim_start().starts_with("3.000 k/s"), "{text}");
        assert!(
            lines[8].contains("capacity for p99<=1ms: 3.000 k/s"),
            "{text}"
        );
        assert!(lines[8].contains("broken at 3.464 k/s"), "{text}");
        // Every step line has its columns aligned under the header.
        let at = lines[2].find("carried").unwrap() + "carried".len();
        for l in &lines[3..8] {
            assert_eq!(&l[at - 3..at], "k/s", "{text}");
        }
    }
}
