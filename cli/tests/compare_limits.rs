//! `compare` at the edges of its inputs (issue 37 L3, L4): samples at the
//! ends of `f64`, numbers beyond it, report files over the size limit,
//! and a baseline directory of many files and links. Each is an answer
//! (exit 0, 1 or 3) or an error naming the file (exit 2), never a panic.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

const FIXTURE: &str = include_str!("../../crates/report/tests/fixtures/report-1.0.json");

fn compare(args: &[&str]) -> Output {
    common::benchsuite(&[])
        .arg("compare")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The fixture with its one metric's samples replaced by `samples` (JSON
/// numbers as written).
fn with_samples(dir: &Path, name: &str, samples: &str) -> PathBuf {
    let r: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let text = serde_json::to_string(&r).unwrap();
    let at = text.find("\"samples\":[").expect("the fixture has samples") + 11;
    let end = at + text[at..].find(']').unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{}{samples}{}", &text[..at], &text[end..])).unwrap();
    path
}

#[test]
fn samples_at_the_ends_of_f64_get_an_exit_code_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "1e308,-1e308,1e308,-1e308,1e308",
        "1.7976931348623157e308,1.7976931348623157e308,1.7976931348623157e308",
        "-1.7976931348623157e308,1.7976931348623157e308,0",
        "5e-324,1e-320,2.5e-322,5e-324",
        "0,0,0,0",
        "1e-7,1e-7,1e-7",
        "1.1e-7,1.0e-7,1.05e-7,1.2e-7",
    ];
    let paths: Vec<PathBuf> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| with_samples(dir.path(), &format!("s{i}.json"), s))
        .collect();
    for b in &paths {
        for n in &paths {
            let (b, n) = (b.to_str().unwrap(), n.to_str().unwrap());
            for extra in [&[][..], &["--allow-unjudged"], &["--format", "json"]] {
                let mut args = vec![b, n];
                args.extend_from_slice(extra);
                let o = compare(&args);
                let err = stderr(&o);
                assert!(
                    matches!(o.status.code(), Some(0..=3)) && !err.contains("panicked"),
                    "compare {args:?}: {:?} {err}",
                    o.status.code()
                );
            }
        }
    }
    // ±1e308 against ordinary samples: not judged, saying why; the gate
    // fails (exit 1) unless unjudged metrics are allowed.
    let (wild, calm) = (paths[0].to_str().unwrap(), paths[6].to_str().unwrap());
    let o = compare(&[calm, wild]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out} {}", stderr(&o));
    assert!(out.contains("overflow"), "{out}");
    let o = compare(&[calm, wild, "--allow-unjudged"]);
    assert_ne!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn a_number_beyond_f64_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = with_samples(dir.path(), "good.json", "1e-7,1.1e-7,1.2e-7");
    let bad = with_samples(dir.path(), "beyond.json", "1e-7,1e400,1.2e-7");
    let o = compare(&[good.to_str().unwrap(), bad.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("beyond.json") && err.contains("out of range"),
        "{err}"
    );
}

#[test]
fn a_report_file_over_the_limit_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let good = with_samples(dir.path(), "good.json", "1e-7,1.1e-7,1.2e-7");
    // Sparse: a 1 GiB file that takes no disk.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for args in [
        [good.to_str().unwrap(), big.to_str().unwrap()],
        [big.to_str().unwrap(), good.to_str().unwrap()],
    ] {
        let started = std::time::Instant::now();
        let o = compare(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("big.json") && err.contains("1GiB") && err.contains("256MiB"),
            "{err}"
        );
        // Refused from its size: not a gigabyte read (seconds) first.
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    }
    // In a baseline directory too.
    let hist = dir.path().join("hist");
    std::fs::create_dir(&hist).unwrap();
    std::fs::copy(&good, hist.join("a.json")).unwrap();
    std::fs::rename(&big, hist.join("b.json")).unwrap();
    let o = compare(&[
        "--baseline-dir",
        hist.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("b.json") && err.contains("256MiB"), "{err}");
}

#[test]
fn a_baseline_directory_of_many_files_and_links_counts_each_report_once() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist");
    std::fs::create_dir(&hist).unwrap();
    let new = with_samples(&hist, "new.json", "1e-7,1.1e-7,1.2e-7,1.05e-7");
    let files = 400;
    for i in 0..files {
        let mut r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&new).unwrap()).unwrap();
        r["started_at"] = serde_json::json!(format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60));
        std::fs::write(hist.join(format!("r{i:04}.json")), r.to_string()).unwrap();
        // A link to each: the same baseline, not another.
        std::os::unix::fs::symlink(
            hist.join(format!("r{i:04}.json")),
            hist.join(format!("l{i:04}.json")),
        )
        .unwrap();
    }
    let o = compare(&[
        "--baseline-dir",
        hist.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // new.json is in the directory, and is not its own baseline.
    assert_eq!(
        j["baselines"].as_array().unwrap().len(),
        files,
        "{}",
        j["baselines"]
    );
}
