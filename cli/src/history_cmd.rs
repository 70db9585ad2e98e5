//! `benchsuite history`: change points over a main branch's reports (see
//! `benchsuite::trend`), for a scheduled job that alarms after the merge.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use benchsuite::compare::Tolerance;
use benchsuite::export::{self, Format};
use benchsuite::fleet::{Fleet, ReportFile};
use benchsuite::trend::{Ack, TrendOptions, trend};

use crate::command_args::HistoryArgs;

/// The report files of `inputs`: files as given, directories' `*.json`
/// sorted, each file once.
pub(crate) fn files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("{}: cannot read the directory", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json") && f.is_file())
                .collect();
            if found.is_empty() {
                bail!("{}: no report (*.json) in it", p.display());
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())));
    Ok(out)
}

/// Reads an acknowledgement file; a parse error names the file and line.
pub fn read_acks(path: &Path) -> Result<Vec<Ack>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct AckFile {
        #[serde(default)]
        ack: Vec<Ack>,
    }
    let name = path.display().to_string();
    let file: AckFile = crate::output::read_toml("--acks", path)?;
    for (i, a) in file.ack.iter().enumerate() {
        if a.commit.trim().len() < 7 {
            bail!(
                "--acks {name}: ack {} ({}): commit `{}` is too short to name one commit (7 characters or more)",
                i + 1,
                a.record,
                a.commit
            );
        }
    }
    Ok(file.ack)
}

/// Prints the change points; 1 on an alarm, else 0.
pub fn cmd_history(args: &HistoryArgs, registry: &benchsuite::Registry) -> Result<i32> {
    let format = match (&args.format, &args.output) {
        (Some(f), _) => f
            .parse::<Format>()
            .map_err(|e| anyhow::anyhow!("--format: {e}"))?,
        (None, Some(file)) => file
            .extension()
            .and_then(|e| e.to_str())
            .and_then(Format::from_extension)
            .unwrap_or(Format::Table),
        (None, None) => Format::Table,
    };
    if !matches!(
        format,
        Format::Table | Format::Json | Format::Csv | Format::Markdown | Format::Html
    ) {
        bail!("--format {format}: a history is written as table, json, csv, md or html");
    }
    let threshold = match Tolerance::parse(&args.threshold) {
        Ok(Tolerance::Relative(x)) => x,
        Ok(_) => bail!("--threshold `{}`: give a percentage (`5%`)", args.threshold),
        Err(e) => bail!("--threshold {e}"),
    };
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        bail!(
            "--alpha {}: give a level between 0 and 0.5 (0.01)",
            args.alpha
        );
    }
    if args.since == 0 {
        bail!("--since 0: give the number of newest runs a regression alarms in (1 or more)");
    }
    let acks = match &args.acks {
        Some(p) => read_acks(p)?,
        None => Vec::new(),
    };
    let mut reports = Vec::new();
    for path in files(&args.inputs)? {
        match Fleet::read_file(&path)? {
            ReportFile::Report(mut r) => {
                registry.fill_roles(&mut r);
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                reports.push((name, r));
            }
            ReportFile::Fleet(_) => bail!(
                "{}: a fleet report; history takes one testbed's reports (a host's report of `run --output-dir`)",
                path.display()
            ),
        }
    }
    let rules = match &args.thresholds {
        Some(p) => crate::calibrate_cmd::read_thresholds(p)?.rules(&p.display().to_string())?,
        None => Vec::new(),
    };
    let options = TrendOptions {
        alpha: args.alpha,
        threshold,
        since: args.since,
        acks,
        rules,
    };
    let t = trend(&reports, &options)?;
    for e in &t.excluded {
        eprintln!(
            "warning: left out (another testbed): {}",
            benchsuite_core::text::printable(&e.to_string())
        );
    }
    let code = t.exit_code();
    match &args.output {
        Some(path) => {
            crate::output::replace_file(path, |w| export::write_trend(format, &t, w))?;
        }
        None => {
            let mut out = io::stdout().lock();
            match export::write_trend(format, &t, &mut out).and_then(|()| out.flush()) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                r => r?,
            }
        }
    }
    Ok(code)
}
