//! `benchsuite calibrate`: per-metric thresholds this machine can judge
//! at, fitted from A/A jobs (see `benchsuite::compare::calibrate`), and
//! the thresholds file `compare --thresholds` reads.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Result, bail};
use benchsuite::compare::calibrate::{AaJob, CalibrateOptions, calibrate};
use benchsuite::compare::{ThresholdRule, Tolerance};
use benchsuite::fleet::{Fleet, ReportFile};

use crate::command_args::CalibrateArgs;

/// The two pooled reports `compare --interleave` writes into its
/// `--interleave-dir`.
const POOLED: [&str; 2] = ["interleave-base.json", "interleave-new.json"];

fn percent(flag: &str, v: &str) -> Result<f64> {
    match Tolerance::parse(v) {
        Ok(Tolerance::Relative(x)) if x > 0.0 => Ok(x),
        Ok(_) => bail!("{flag} `{v}`: give a percentage above 0 (`5%`)"),
        Err(e) => bail!("{flag} {e}"),
    }
}

/// Reads one A/A job's two pooled reports.
fn read_job(dir: &Path) -> Result<[benchsuite::Report; 2]> {
    if !dir.is_dir() {
        bail!(
            "{}: not a directory; give the --interleave-dir of an A/A `compare --interleave` (it holds {} and {})",
            dir.display(),
            POOLED[0],
            POOLED[1]
        );
    }
    let read = |name: &str| -> Result<benchsuite::Report> {
        let path = dir.join(name);
        if !path.is_file() {
            bail!(
                "{}: no {name}; give the --interleave-dir of an A/A `compare --interleave`",
                dir.display()
            );
        }
        match Fleet::read_file(&path)? {
            ReportFile::Report(r) => Ok(r),
            ReportFile::Fleet(_) => bail!("{}: a fleet report", path.display()),
        }
    };
    Ok([read(POOLED[0])?, read(POOLED[1])?])
}

/// Fits and writes the thresholds file; 0 on success.
pub fn cmd_calibrate(args: &CalibrateArgs, registry: &benchsuite::Registry) -> Result<i32> {
    let options = CalibrateOptions {
        budget: args.budget,
        undecided: percent("--undecided", &args.undecided)?,
        floor: percent("--threshold", &args.threshold)?,
        tail_floor: percent("--tail-threshold", &args.tail_threshold)?,
        ..CalibrateOptions::default()
    };
    if options.budget < 3 {
        bail!(
            "--budget {}: a confirmation needs at least 3 pairs",
            options.budget
        );
    }
    if options.undecided >= 1.0 {
        bail!("--undecided {}: give a share below 100%", args.undecided);
    }
    let mut names = Vec::new();
    let mut reports = Vec::new();
    for dir in &args.jobs {
        let [mut b, mut n] = read_job(dir)?;
        registry.fill_roles(&mut b);
        registry.fill_roles(&mut n);
        names.push(dir.display().to_string());
        reports.push((b, n));
    }
    let jobs: Vec<AaJob<'_>> = reports
        .iter()
        .zip(&names)
        .map(|((b, n), name)| AaJob {
            name,
            base: b,
            new: n,
        })
        .collect();
    let c = calibrate(&jobs, &options)?;
    if c.jobs < 20 {
        eprintln!(
            "warning: {} A/A job(s): a threshold fitted on fewer than 20 under-samples the noisiest jobs (on a 2-vCPU VM, 10 jobs left 7 of 48 later jobs undecided)",
            c.jobs
        );
    }
    let raised = c.rules();
    eprintln!(
        "calibrated on {} A/A jobs ({}): {} of {} metrics need more than the floor{}",
        c.jobs,
        benchsuite_core::text::printable(&c.testbed),
        raised.len(),
        c.thresholds.len(),
        if raised.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                raised
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let text = c.to_toml(env!("CARGO_PKG_VERSION"));
    match &args.output {
        Some(path) => crate::output::replace_file(path, |w| w.write_all(text.as_bytes()))?,
        None => {
            let mut out = io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                r => r?,
            }
        }
    }
    Ok(0)
}

/// A thresholds file: what `calibrate` writes, as a person may have
/// edited it.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsFile {
    /// The testbed it was fitted on.
    pub testbed: Option<String>,
    /// The confirmation budget it was fitted for.
    pub budget: Option<usize>,
    /// How many A/A jobs.
    pub jobs: Option<usize>,
    /// The share of A/A jobs its thresholds allow to end undecided (for
    /// people and for refits; the gate needs only the thresholds).
    #[allow(dead_code)]
    pub undecided: Option<String>,
    /// `"ID:METRIC" = "VALUE"`.
    #[serde(default)]
    thresholds: BTreeMap<String, String>,
}

impl ThresholdsFile {
    /// The rules, in the file's order of keys.
    pub fn rules(&self, name: &str) -> Result<Vec<ThresholdRule>> {
        self.thresholds
            .iter()
            .map(|(k, v)| {
                ThresholdRule::parse(&format!("{k}={v}"))
                    .map_err(|e| anyhow::anyhow!("--thresholds {name}: {e}"))
            })
            .collect()
    }
}

/// Reads a thresholds file (`compare --thresholds`); a parse error names
/// the file and line.
pub fn read_thresholds(path: &Path) -> Result<ThresholdsFile> {
    crate::output::read_toml("--thresholds", path)
}

/// Drops the rules of thresholds file `path` that name nothing in
/// `reports` from `rules`: a file fitted on the whole quick pass gates a
/// narrower plan too. A `--threshold` rule that names nothing stays an
/// error.
pub fn drop_unused_file_rules(
    rules: &mut Vec<ThresholdRule>,
    path: &Path,
    reports: &[&benchsuite::Report],
) -> Result<()> {
    let from_file = read_thresholds(path)?.rules(&path.display().to_string())?;
    let used = |r: &ThresholdRule| {
        reports.iter().flat_map(|p| &p.records).any(|rec| {
            r.matches_id(&rec.id)
                && rec.metrics.iter().any(|m| {
                    r.matches_metric(&m.name)
                        || r.metric
                            .as_deref()
                            .and_then(|x| x.strip_prefix(m.name.as_str()))
                            .is_some_and(|tail| tail.starts_with('.'))
                })
        })
    };
    rules.retain(|r| !from_file.contains(r) || used(r));
    Ok(())
}
