//! What a newcomer and a packager meet first: `--version` says what the
//! binary is, completions parse in the shell, man pages render, and
//! `info` fits the terminal with every fact a labelled line.

use std::process::{Command, Stdio};

mod common;

fn out(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = common::benchsuite(env).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn version_says_features_profile_and_commit() {
    let (code, long, _) = out(&["--version"], &[]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = long.lines().collect();
    assert!(lines[0].starts_with("benchsuite "), "{long}");
    for key in ["features: ", "profile:  ", "commit:   "] {
        assert!(
            lines.iter().any(|l| l.starts_with(key)),
            "{key} missing: {long}"
        );
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert!(long.contains(&format!("profile:  {profile}")), "{long}");
    let (_, short, _) = out(&["-V"], &[]);
    assert_eq!(short.lines().count(), 1, "{short}");
    // A report's build facts say the same.
    let (_, json, err) = out(&["run", "os.timer", "--quick", "--format", "json"], &[]);
    let r: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {err}"));
    let commit = long
        .lines()
        .find_map(|l| l.strip_prefix("commit:   "))
        .unwrap();
    match r["host"]["build"]["commit"].as_str() {
        Some(c) => assert_eq!(c, commit),
        None => assert!(commit.starts_with("unknown"), "{commit}"),
    }
}

#[test]
fn completions_parse_in_their_shells() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (code, script, err) = out(&["completions", shell], &[]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            script.contains("benchsuite") && script.len() > 1000,
            "{shell}"
        );
    }
    let (_, script, _) = out(&["completions", "bash"], &[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("benchsuite.bash");
    std::fs::write(&file, &script).unwrap();
    // Parses, loads, and registers a completion for `benchsuite`; then
    // completes a subcommand and one of run's flags.
    let probe = format!(
        r#"set -e
source {f}
complete -p benchsuite
COMP_WORDS=(benchsuite ru); COMP_CWORD=1; COMP_LINE="benchsuite ru"; COMP_POINT=${{#COMP_LINE}}
_benchsuite benchsuite ru benchsuite
echo "words: ${{COMPREPLY[*]}}"
COMP_WORDS=(benchsuite run --thr); COMP_CWORD=2; COMP_LINE="benchsuite run --thr"; COMP_POINT=${{#COMP_LINE}}
_benchsuite benchsuite --thr run
echo "flags: ${{COMPREPLY[*]}}"
"#,
        f = file.display()
    );
    let o = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("-F _benchsuite benchsuite"), "{text}");
    assert!(text.contains("words: run"), "{text}");
    assert!(text.contains("--threads"), "{text}");
}

#[test]
fn man_pages_render() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = out(&["man", "--out-dir", d], &[]);
    assert_eq!(code, 0, "{err}");
    let pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for want in ["benchsuite.1", "benchsuite-run.1", "benchsuite-compare.1"] {
        assert!(pages.iter().any(|p| p == want), "{want} missing: {pages:?}");
    }
    if Command::new("man").arg("--version").output().is_err() {
        benchsuite_core::testing::skip(
            benchsuite_core::testing::Capability::Man,
            "no `man` here to render the page (Debian: man-db)",
        );
        return;
    }
    let o = Command::new("man")
        .args(["-l", &format!("{d}/benchsuite-run.1")])
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("benchsuite-run") && text.contains("--threads"),
        "{text}"
    );
}

#[test]
fn info_fits_the_terminal_with_labelled_lines() {
    for width in ["80", "100"] {
        let (code, text, err) = out(&["info"], &[("COLUMNS", width)]);
        assert_eq!(code, 0, "{err}");
        let w: usize = width.parse().unwrap();
        for l in text.lines() {
            assert!(l.chars().count() <= w, "over {w} columns: {l}");
            // No raw JSON object of a module's facts.
            assert!(!l.contains("{\""), "a JSON blob: {l}");
        }
        for label in ["hostname", "cpu model", "memory", "build", "net.path"] {
            assert!(
                text.lines().any(|l| l.starts_with(label)),
                "{label} missing:\n{text}"
            );
        }
    }
    // The JSON keeps the data.
    let (_, json, _) = out(&["info", "--format", "json"], &[]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["extra"]["net"].is_object(), "{json}");
}
