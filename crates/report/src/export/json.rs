//! JSON: the full document, pretty-printed, with a trailing newline. A JSON
//! report is the baseline format `compare` reads back; its layout is
//! documented on [`Report`](benchsuite_core::results).

use std::io::{self, Write};

use crate::compare::Comparison;
use benchsuite_core::results::Report;

/// Writes the full report.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(report.to_json().as_bytes())?;
    out.write_all(b"\n")
}

/// Writes the full comparison (the serde form of [`Comparison`]).
pub(super) fn write_comparison(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    benchsuite_core::text::write_json_pretty(&mut *out, comparison)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    #[test]
    fn report_round_trips() {
        let r = fixtures::report();
        let mut out = Vec::new();
        write_report(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("}\n"));
        let back = Report::from_json(&text, "test").unwrap();
        assert_eq!(back.records.len(), 3);
        assert_eq!(back.records[0].key(), "os.syscall call=getppid");
    }

    #[test]
    fn comparison_round_trips() {
        let c = fixtures::comparison();
        let mut out = Vec::new();
        write_comparison(&c, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("}\n"));
        let back: Comparison = serde_json::from_str(&text).unwrap();
        assert_eq!(back.metrics.len(), c.metrics.len());
        assert!(back.has_regression());
        assert_eq!(back.problems, c.problems);
    }
}
