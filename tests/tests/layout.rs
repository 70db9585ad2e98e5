//! The shape of the tree (docs/architecture.md), checked on the files:
//! the CLI's files import each other without a circle, and no source file
//! holds more than 800 lines outside its tests (data tables aside).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The lines of `text` before its test module (`#[cfg(test)]` at the
/// start of a line, then `mod tests`).
fn lines_outside_tests(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod tests"))
        .unwrap_or(lines.len())
}

/// Every library and CLI source file that is not a test file: its path
/// from the repository's root and its text.
fn library_sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in ["crates", "cli/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    let sources: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let is_test = rel.contains("/tests/") || rel.ends_with("/tests.rs");
            (!is_test && rel.contains("/src/")).then(|| (rel, std::fs::read_to_string(f).unwrap()))
        })
        .collect();
    assert!(sources.len() > 100, "found only {} files", sources.len());
    sources
}

#[test]
fn no_source_file_is_over_800_lines_outside_its_tests() {
    // Data tables: the CPU and GPU peak tables, one row per model.
    let tables = ["crates/cpu/src/peak.rs", "crates/gpu/src/peak.rs"];
    let over: Vec<String> = library_sources()
        .iter()
        .filter(|(rel, _)| !tables.contains(&rel.as_str()))
        .map(|(rel, text)| (rel, lines_outside_tests(text)))
        .filter(|(_, n)| *n > 800)
        .map(|(rel, n)| format!("{rel}: {n} lines"))
        .collect();
    assert!(over.is_empty(), "over 800 lines outside tests: {over:?}");
}

#[test]
fn the_cli_files_import_each_other_without_a_circle() {
    let dir = root().join("cli/src");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let name = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| name(p))
        .filter(|n| n != "main" && n != "lib")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = name(f);
        if !modules.contains(&from) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in code.match_indices("crate::") {
            let to: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if to != from && modules.contains(&to) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 5,
        "{edges:?}"
    );
    // Depth-first search for a back edge; the path shows the circle.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut circle = path[at..].to_vec();
            circle.push(n.to_string());
            return Some(circle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in &modules {
        if let Some(c) = visit(m, &edges, &mut Vec::new(), &mut done) {
            panic!("an import circle in cli/src: {}", c.join(" -> "));
        }
    }
}

#[test]
fn no_library_source_reads_a_file_outside_its_crate() {
    // A published crate carries only its own directory: `include_str!` of
    // `../../` in library code would build here and not from crates.io.
    let mut escaping = Vec::new();
    for (rel, text) in library_sources() {
        let code = &text[..text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len())];
        for (i, _) in code.match_indices("include_") {
            let call = code[i..].lines().next().unwrap_or("");
            if (call.starts_with("include_str!(\"") || call.starts_with("include_bytes!(\""))
                && call.contains("\"../../")
            {
                escaping.push(format!("{rel}: {call}"));
            }
        }
    }
    assert!(escaping.is_empty(), "{escaping:?}");
}
