//! The summary `benchsuite reference` prints: one line per record, ours
//! against the tool.

use benchsuite_core::reference::run::headline;
use benchsuite_core::results::{Report, Status};
use benchsuite_core::units::format_value;

/// The widest line of the summary (the tool's command and notes wrap).
const WIDTH: usize = 120;

/// The summary: one line per record, ours against the tool. Records are
/// keyed as `run`'s table keys them (what differs, sizes in human units),
/// and the tool's command wraps so that no line is over 120 columns.
pub fn summary_table(report: &Report) -> String {
    let keys = super::table::short_keys(report);
    let mut rows = vec![[
        "record".to_string(),
        "metric".into(),
        "benchsuite".into(),
        "ref".into(),
        "ratio".into(),
        "tool command / note".into(),
    ]];
    for (r, key) in report.records.iter().zip(keys) {
        let Some(x) = &r.reference else {
            // The value in its column; a skip's or failure's reason with the
            // notes, so that it does not widen the value column.
            let (metric, value, note) = match (r.status, r.metrics.first()) {
                (Status::Ok, Some(m)) => (
                    m.name.clone(),
                    format_value(m.summary.median, &m.unit),
                    "(no reference for this point)".to_string(),
                ),
                _ => (String::new(), "-".into(), headline(r, None)),
            };
            rows.push([key, metric, value, "-".into(), "-".into(), note]);
            continue;
        };
        let ours = r
            .metric(&x.metric)
            .filter(|_| r.status == Status::Ok)
            .map_or("-".to_string(), |m| format_value(m.summary.median, &m.unit));
        let tool = x
            .median
            .map_or("-".to_string(), |v| format_value(v, &x.unit));
        let ratio = x.ratio.map_or("-".to_string(), |v| {
            // The rounds' own ratios, lowest to highest, beside their median.
            let lo = x.round_ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = x.round_ratios.iter().copied().fold(0.0, f64::max);
            if x.round_ratios.len() >= 2 {
                format!("{v:.2} ({lo:.2}-{hi:.2})")
            } else {
                format!("{v:.2}")
            }
        });
        let mut what = x.command.clone();
        if let Some(n) = &x.note {
            what = format!("{what}  [{n}]");
        }
        rows.push([key, x.metric.clone(), ours, tool, ratio, what]);
    }
    // A foreign report's (or a peer's) text cannot steer the terminal.
    for cell in rows.iter_mut().flatten() {
        if let std::borrow::Cow::Owned(clean) = benchsuite_core::text::printable_line(cell) {
            *cell = clean;
        }
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::from(
        "\nbenchsuite vs reference tools (ratio > 1: benchsuite better; median of the interleaved rounds' ratios (lowest-highest))\n",
    );
    for row in &rows {
        let mut line = String::new();
        for (i, w) in widths.iter().enumerate() {
            let cell = &row[i];
            let pad = w - cell.chars().count();
            if (2..5).contains(&i) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
            line.push_str("  ");
        }
        let at = line.chars().count();
        // The command after the columns, wrapped under itself; where the
        // columns leave too little room, on the lines below.
        let lines = if at + 40 <= WIDTH {
            super::facts::wrap(&line, &row[5], at, WIDTH)
        } else {
            let mut l = vec![line.trim_end().to_string()];
            l.extend(super::facts::wrap("", &row[5], 4, WIDTH));
            l
        };
        for l in lines {
            s.push_str(l.trim_end());
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skipped record's reason goes with the notes: it must not widen
    /// the value column of every row.
    #[test]
    fn a_skip_reason_does_not_widen_the_value_column() {
        let text = include_str!("testdata/quick-pass.json");
        let mut report = Report::from_json(text, "quick-pass.json").unwrap();
        let long = "no CUDA driver: ".to_string() + &"x".repeat(200);
        report.records[0].status = Status::Skipped;
        report.records[0].reason = Some(long.clone());
        report.records[0].metrics.clear();
        let table = summary_table(&report);
        assert!(
            table.lines().all(|l| l.chars().count() <= WIDTH),
            "a line over {WIDTH} columns:\n{table}"
        );
        let header = table.lines().nth(2).unwrap();
        let before_notes = header.find("tool command / note").unwrap();
        let key_width = report
            .records
            .iter()
            .map(|r| r.key().chars().count())
            .max()
            .unwrap();
        assert!(
            before_notes < key_width + 60,
            "the value columns are {} wide:\n{table}",
            before_notes - key_width
        );
        // The reason whole, wrapped after the columns.
        let flat: String = table.split_whitespace().collect();
        let want: String = long.split_whitespace().collect();
        assert!(flat.contains(&want), "{table}");
        assert!(
            table
                .lines()
                .any(|l| l.trim_end().ends_with(&"x".repeat(20)))
        );
        assert!(table.contains("(no reference for this point)"));
    }
}
