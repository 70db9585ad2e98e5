//! The shape of the tree (docs/architecture.md), checked on the files:
//! no crate's files import each other in a circle, and no source file
//! holds more than 800 lines outside its tests (data tables aside).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "layout/imports.rs"]
mod imports;

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

/// Import circles that are kept for now, each with why: (crate, its
/// modules sorted as `imports::Graph::circles` lists them, the reason).
/// core has none. An entry that no longer matches a circle fails the test,
/// so a split shows here as a line to delete.
const ALLOWED_CIRCLES: &[(&str, &[&str], &str)] = &[(
    "gpu",
    &[
        "cuda::blas",
        "cuda::device",
        "cuda::libs",
        "cuda::nvml",
        "cuda::nvrtc",
        "cuda::rt",
    ],
    "the CUDA driver bindings: each library's loader and its handles refer to the others' (one FFI layer)",
)];

/// Every crate's `src` (the resource, core, report and fleet crates and the
/// CLI): its files import each other without a circle, apart from the
/// circles in `ALLOWED_CIRCLES`. A file of types sits below the code that
/// acts on them (docs/architecture.md); what counts as an import is
/// described in `layout/imports.rs`: real uses through `crate::`, `super::`,
/// `self::`, child-module and imported-module paths count, `mod`
/// declarations and `pub use` re-exports do not (a re-exported item is
/// followed to the module that defines it), and test code is left out.
#[test]
fn no_crate_has_an_import_circle() {
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p.join("src"),
            )
        })
        .collect();
    dirs.push(("cli".into(), root().join("cli/src")));
    dirs.sort();
    assert!(dirs.len() >= 9, "{dirs:?}");
    let mut found = Vec::new();
    let mut unexpected = Vec::new();
    for (name, src) in &dirs {
        let graph = imports::Graph::read(src);
        let n_edges: usize = graph.edges.values().map(BTreeSet::len).sum();
        assert!(
            n_edges >= 3,
            "{name}: only {n_edges} import edges read: {:?}",
            graph.edges
        );
        for circle in graph.circles() {
            let modules: Vec<&str> = circle.iter().map(|m| imports::display(m)).collect();
            found.push((
                name.clone(),
                modules.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            ));
            let allowed = ALLOWED_CIRCLES
                .iter()
                .any(|(c, ms, _)| c == name && *ms == modules.as_slice());
            if !allowed {
                unexpected.push(format!(
                    "{name}: {} ({})",
                    modules.join(", "),
                    graph.edges_within(&circle).join(", ")
                ));
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "import circles (move the shared types into a file below both):\n  {}",
        unexpected.join("\n  ")
    );
    let stale: Vec<_> = ALLOWED_CIRCLES
        .iter()
        .filter(|(c, ms, _)| {
            !found
                .iter()
                .any(|(n, f)| n == c && f.iter().map(String::as_str).eq(ms.iter().copied()))
        })
        .collect();
    assert!(stale.is_empty(), "allowed circles that are gone: {stale:?}");
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
