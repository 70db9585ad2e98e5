//! The summary `benchsuite reference` prints: one line per record, ours
//! against the tool.

use benchsuite_core::reference::run::headline;
use benchsuite_core::report::{Report, Status};
use benchsuite_core::units::format_value;

/// The summary: one line per record, ours against the tool.
pub fn summary_table(report: &Report) -> String {
    let mut rows = vec![[
        "record".to_string(),
        "metric".into(),
        "benchsuite".into(),
        "ref".into(),
        "ratio".into(),
        "tool command / note".into(),
    ]];
    for r in &report.records {
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
            rows.push([r.key(), metric, value, "-".into(), "-".into(), note]);
            continue;
        };
        let ours = r
            .metric(&x.metric)
            .filter(|_| r.status == Status::Ok)
            .map_or("-".to_string(), |m| format_value(m.summary.median, &m.unit));
        let tool = x
            .median
            .map_or("-".to_string(), |v| format_value(v, &x.unit));
        let ratio = x.ratio.map_or("-".to_string(), |v| format!("{v:.2}"));
        let mut what = x.command.clone();
        if let Some(n) = &x.note {
            what = format!("{what}  [{n}]");
        }
        rows.push([r.key(), x.metric.clone(), ours, tool, ratio, what]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::from(
        "\nbenchsuite vs reference tools (ratio > 1: benchsuite better; median of interleaved rounds)\n",
    );
    for row in &rows {
        for (i, w) in widths.iter().enumerate() {
            let cell = &row[i];
            let pad = w - cell.chars().count();
            if (2..5).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            }
            s.push_str("  ");
        }
        s.push_str(&row[5]);
        s.push('\n');
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
        let skipped = table.lines().find(|l| l.contains(&long)).unwrap();
        assert!(skipped.trim_end().ends_with(&long), "{skipped}");
        assert!(table.contains("(no reference for this point)"));
    }
}
