//! `benchsuite report`: one self-contained HTML page of charts from one or
//! more JSON reports (the first is the base the others are compared to),
//! or the fleet page of one merged fleet report (`benchsuite merge`).

use std::io::Write;

use anyhow::{Result, bail};
use benchsuite::Registry;
use benchsuite::export::html;
use benchsuite::fleet::{Fleet, ReportFile};

use crate::command_args::ReportArgs;

/// Writes the page; 0 on success.
pub fn cmd_report(args: &ReportArgs, registry: &Registry) -> Result<i32> {
    let mut reports = Vec::new();
    let mut fleet = None;
    for path in &args.reports {
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match Fleet::read_file(path)? {
            ReportFile::Report(mut report) => {
                // Before schema 1.6: the benchmarks' declared roles.
                registry.fill_roles(&mut report);
                reports.push((label, report))
            }
            ReportFile::Fleet(hosts) => fleet = Some((label, hosts)),
        }
    }
    let page = match fleet {
        Some((label, hosts)) => {
            if args.reports.len() > 1 {
                bail!(
                    "{label} is a fleet report: it makes a page of its own (`benchsuite report {label} -o fleet.html`); to compare two fleets use `benchsuite compare`"
                );
            }
            let fleet = Fleet::merge(hosts.into_iter().map(|r| (label.clone(), r)).collect())
                .map_err(|e| anyhow::anyhow!(e))?;
            let n = fleet.hosts.len();
            (
                html::render_fleet(&label, &fleet),
                format!("a fleet of {n} hosts"),
            )
        }
        None => (
            html::render(&reports),
            format!(
                "{} report(s), {} records",
                reports.len(),
                reports.iter().map(|(_, r)| r.records.len()).sum::<usize>()
            ),
        ),
    };
    match &args.output {
        Some(path) => {
            // Atomically: a full disk leaves the old page whole.
            crate::output::replace_file(path, |w| w.write_all(page.0.as_bytes()))?;
            eprintln!("{} -> {}", page.1, path.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(page.0.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(0)
}
