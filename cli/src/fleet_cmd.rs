//! `benchsuite merge`: the hosts' reports as one fleet report, and the
//! fleet view on stdout.

use std::io::{self, Write};

use anyhow::{Result, anyhow};
use benchsuite::fleet::Fleet;

use crate::args::MergeArgs;
use crate::output::replace_file_as;

/// `benchsuite merge`: one fleet report, and the fleet view on stdout;
/// with `--baseline`, each host judged and the defective ones listed.
pub fn cmd_merge(args: &MergeArgs, registry: &benchsuite::Registry) -> Result<i32> {
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
    // The baseline is read (and its rules checked) before anything is
    // printed: a baseline that cannot judge is an error, not a verdict.
    let judged = match &args.baseline {
        Some(path) => Some(crate::acceptance_cmd::judge_hosts(
            path,
            fleet.hosts.clone(),
            registry,
        )?),
        None => None,
    };
    let view = fleet.view();
    let mut out = io::stdout().lock();
    view.write_table(&mut out)?;
    let mut code = 0;
    if let Some(checks) = &judged {
        code = crate::acceptance_cmd::write_fleet_summary(&mut out, checks)?;
    }
    out.flush()?;
    if let Some(path) = &args.output {
        eprintln!(
            "{} reports merged; written to {}",
            fleet.hosts.len(),
            path.display()
        );
    }
    Ok(code)
}
