//! # benchsuite-report
//!
//! What benchsuite does with a [`Report`](benchsuite_core::Report) once it
//! exists: the exporters ([`export`]: table, CSV, Markdown, JSON, BMF,
//! GitHub Actions, OpenMetrics and the HTML report), the gate
//! ([`compare`]), change points over a history after the merge
//! ([`trend`]), the fleet view ([`fleet`]), node acceptance against a
//! per-machine-type baseline ([`acceptance`]) and the break-even solver
//! ([`breakeven`]).
//!
//! It depends on `benchsuite-core` only; no benchmark depends on it, so an
//! embedder that only runs benchmarks compiles without it.
//!
//! ```
//! use benchsuite_report::compare::{CompareOptions, compare};
//! use benchsuite_report::export::{Format, write_report};
//! # let report = benchsuite_core::Report {
//! #     schema_version: benchsuite_core::SCHEMA_VERSION.into(), tool_version: "0.1.0".into(),
//! #     started_at: String::new(), host: Default::default(), cluster: None,
//! #     config: Default::default(), progress: None, records: vec![] };
//! let mut out = Vec::new();
//! write_report(Format::Json, &report, &mut out).unwrap();
//! let verdict = compare(&report, &report, &CompareOptions::default()).unwrap();
//! assert!(!verdict.passed()); // an empty new report never passes
//! ```

pub mod acceptance;
pub mod breakeven;
pub mod compare;
pub mod export;
pub mod fleet;
pub mod trend;

pub use compare::{CompareOptions, Comparison, Verdict};
