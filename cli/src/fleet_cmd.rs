//! `benchsuite merge`: the hosts' reports as one fleet report, and the
//! fleet view on stdout.

use std::io::{self, Write};

use anyhow::{Result, anyhow};
use benchsuite::fleet::Fleet;

use crate::args::MergeArgs;
use crate::output::replace_file_as;

/// `benchsuite merge`: one fleet report, and the fleet view on stdout.
pub fn cmd_merge(args: &MergeArgs) -> Result<i32> {
    let mut reports = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        for r in Fleet::read_hosts(path)? {
            reports.push((path.display().to_string(), r));
        }
    }
    let fleet = Fleet::merge(reports).map_err(|e| anyhow!(e))?;
    if let Some(path) = &args.output {
        replace_file_as("-o", path, |w| {
            w.write_all(fleet.to_json().as_bytes())?;
            w.write_all(b"\n")
        })?;
    }
    let view = fleet.view();
    let mut out = io::stdout().lock();
    view.write_table(&mut out)?;
    out.flush()?;
    if let Some(path) = &args.output {
        eprintln!(
            "{} reports merged; written to {}",
            fleet.hosts.len(),
            path.display()
        );
    }
    Ok(0)
}
