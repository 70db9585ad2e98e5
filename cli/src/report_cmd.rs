//! `benchsuite report`: one self-contained HTML page of charts from one or
//! more JSON reports (the first is the base the others are compared to).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use benchsuite::Report;
use benchsuite::export::html;
use clap::Args;

/// `benchsuite report IN.json [MORE.json ...] -o report.html`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// JSON reports (written by `benchsuite run -o`). With two or more,
    /// the first is the base: the page draws base and new on the same axes
    /// and the change of each metric, judged as `compare` judges it.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,

    /// The HTML file to write (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Writes the page; 0 on success.
pub fn cmd_report(args: &ReportArgs) -> Result<i32> {
    let mut reports = Vec::new();
    for path in &args.reports {
        let report = Report::read(path)?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        reports.push((label, report));
    }
    match &args.output {
        Some(path) => {
            let f =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = BufWriter::new(f);
            html::write_html(&reports, &mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "{} report(s), {} records -> {}",
                reports.len(),
                reports.iter().map(|(_, r)| r.records.len()).sum::<usize>(),
                path.display()
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            html::write_html(&reports, &mut out)?;
            out.flush()?;
        }
    }
    Ok(0)
}
