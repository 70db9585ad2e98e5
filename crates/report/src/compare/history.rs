//! A history of baselines as `compare` takes it: report files given one
//! by one (`history/*.json`) and the reports of a directory
//! (`--baseline-dir`, a CI cache).

use std::collections::HashSet;
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
    // Each file is resolved once (links, `..`) and told apart by that
    // (its own path where it cannot be resolved): comparing every pair had
    // cost 500k `readlink` calls for 500 files (issue 37 L4).
    let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let new_is = resolved(new);
    // (path, whether it came from the directory)
    let mut history: Vec<(PathBuf, bool)> = positional.iter().map(|p| (p.clone(), false)).collect();
    if let Some(dir) = baseline_dir {
        let unreadable = |e: std::io::Error| {
            HistoryError(format!(
                "baseline directory {}: cannot read it: {e}",
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
                "baseline directory {}: no baseline report (*.json) in it (an empty history?)",
                dir.display()
            );
        }
        found.sort();
        history.extend(found.into_iter().map(|p| (p, true)));
    }
    let mut seen = HashSet::with_capacity(history.len());
    let mut unique: Vec<PathBuf> = Vec::with_capacity(history.len());
    for (p, in_dir) in history {
        let is = resolved(&p);
        // The new report, when it is in the directory, is not its own
        // baseline.
        if in_dir && is == new_is {
            continue;
        }
        if seen.insert(is) {
            unique.push(p);
        }
    }
    if unique.is_empty() {
        fail!(
            "a comparison needs a baseline and a new report (the last one given): BASE.json [MORE.json...] NEW.json, or the reports of a baseline directory and NEW.json"
        );
    }
    Ok((unique, new.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_is_one_baseline_and_the_new_one_is_none_from_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let hist = dir.path().join("hist");
        std::fs::create_dir(&hist).unwrap();
        for name in ["a.json", "b.json", "new.json", "notes.txt"] {
            std::fs::write(hist.join(name), "{}").unwrap();
        }
        // A link to a baseline is that baseline.
        std::os::unix::fs::symlink(hist.join("a.json"), hist.join("c.json")).unwrap();
        let new = hist.join("new.json");
        // a.json given again by another spelling; new.json as a baseline
        // by name (a report against itself) stays.
        let a_again = dir.path().join("hist/../hist/a.json");
        let reports = [a_again.clone(), new.clone(), new.clone()];
        let (history, got_new) = inputs(&reports, Some(&hist)).unwrap();
        assert_eq!(got_new, new);
        assert_eq!(history, [a_again, new, hist.join("b.json")]);
        // Without the positional ones: the directory's files, sorted,
        // once each, the new one left out.
        let (history, _) =
            inputs(std::slice::from_ref(&hist.join("new.json")), Some(&hist)).unwrap();
        assert_eq!(history, [hist.join("a.json"), hist.join("b.json")]);
    }
}
