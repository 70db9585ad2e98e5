//! A history of baselines as `compare` takes it: report files given one
//! by one (`history/*.json`) and the reports of a directory
//! (`--baseline-dir`, a CI cache).

use std::path::{Path, PathBuf};

/// A history that cannot be read; the message names the file, pattern or
/// directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

macro_rules! fail {
    ($($t:tt)*) => { return Err(HistoryError(format!($($t)*))) };
}

/// The baselines and the new report from `reports` (the last is the new
/// one; the others are baselines) and `baseline_dir`'s `*.json` (sorted),
/// each file once, the new one never its own baseline. A pattern the shell left unexpanded (no file
/// matched) and a directory without reports are errors that say so.
pub fn inputs(
    reports: &[PathBuf],
    baseline_dir: Option<&Path>,
) -> Result<(Vec<PathBuf>, PathBuf), HistoryError> {
    let Some((new, positional)) = reports.split_last() else {
        fail!("compare needs a new report");
    };
    for p in reports {
        let text = p.to_string_lossy();
        if text.contains(['*', '?', '[']) && !p.exists() {
            fail!(
                "{text}: no file matches this pattern (an empty history?); record a baseline first with `benchsuite run -o`"
            );
        }
    }
    let same = |a: &PathBuf, b: &PathBuf| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let mut history: Vec<PathBuf> = positional.to_vec();
    if let Some(dir) = baseline_dir {
        let unreadable = |e: std::io::Error| {
            HistoryError(format!(
                "--baseline-dir {}: cannot read it: {e}",
                dir.display()
            ))
        };
        let entries = std::fs::read_dir(dir).map_err(unreadable)?;
        let mut found = Vec::new();
        for e in entries {
            let path = e.map_err(unreadable)?.path();
            if path.extension().is_some_and(|x| x == "json") && path.is_file() {
                found.push(path);
            }
        }
        if found.is_empty() {
            fail!(
                "--baseline-dir {}: no baseline report (*.json) in it (an empty history?)",
                dir.display()
            );
        }
        found.sort();
        // The new report, when it is in the directory, is not its own
        // baseline.
        found.retain(|p| !same(p, new));
        history.extend(found);
    }
    let mut unique: Vec<PathBuf> = Vec::with_capacity(history.len());
    for p in history {
        if !unique.iter().any(|q| same(q, &p)) {
            unique.push(p);
        }
    }
    if unique.is_empty() {
        fail!(
            "compare needs a baseline and a new report: BASE.json [MORE.json...] NEW.json, or --baseline-dir DIR NEW.json"
        );
    }
    Ok((unique, new.clone()))
}
