//! The `benchsuite` binary end to end: outputs parse, bad input exits 2
//! with a message naming the flag or file, compare's exit codes.

use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_benchsuite"))
}

/// Fast sampling settings for tests (the smoke point of `os.syscall`).
const FAST: &[&str] = &[
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `args`, asserts exit 2 with a one-line message naming `needle`, and
/// returns the message.
fn assert_usage_error(args: &[&str], needle: &str) -> String {
    let o = run(args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?} should exit 2; stderr: {err}"
    );
    assert!(
        err.contains(needle),
        "{args:?}: stderr should name {needle}: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?} panicked: {err}"
    );
    err
}

fn run_json(extra: &[&str], dir: &Path, name: &str) -> serde_json::Value {
    let out = dir.join(name);
    let mut args = vec!["run"];
    args.extend_from_slice(extra);
    args.extend_from_slice(FAST);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn run_os_json_has_ok_records_with_positive_medians() {
    let o = run(&[
        "run",
        "os",
        "--format",
        "json",
        "--runs",
        "3",
        "--min-sample-time",
        "2ms",
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["schema_version"], benchsuite::SCHEMA_VERSION);
    let records = v["records"].as_array().unwrap();
    assert!(records.len() >= 6, "one record per os benchmark at least");
    for r in records {
        let key = format!("{} {}", r["id"], r["params"]);
        // `cpus=different` needs two CPUs; on one CPU it is skipped with a reason.
        if r["status"] == "skipped" {
            assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{key}");
            continue;
        }
        assert_eq!(r["status"], "ok", "{key}: {}", r["reason"]);
        for m in r["metrics"].as_array().unwrap() {
            let med = m["summary"]["median"].as_f64().unwrap();
            assert!(med.is_finite() && med > 0.0, "{key} {}: {med}", m["name"]);
        }
    }
}

#[test]
fn csv_output_parses_with_a_standard_reader() {
    let mut args = vec![
        "run",
        "os.syscall",
        "os.call",
        "--format",
        "csv",
        "--param",
        "args=0,3",
    ];
    args.extend_from_slice(FAST);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let mut rd = csv::Reader::from_reader(o.stdout.as_slice());
    let headers = rd.headers().unwrap().clone();
    for col in [
        "id", "args", "status", "metric", "unit", "median", "ci95_low",
    ] {
        assert!(
            headers.iter().any(|h| h == col),
            "missing column {col}: {headers:?}"
        );
    }
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert!(rows.len() >= 3, "os.syscall + os.call args=0 and args=3");
    let median = headers.iter().position(|h| h == "median").unwrap();
    for row in &rows {
        let v: f64 = row[median].parse().unwrap();
        assert!(v > 0.0);
    }
}

#[test]
fn bad_input_exits_2_naming_the_flag_or_file() {
    assert_usage_error(&["run", "os", "--block", "1XB"], "--block");
    assert_usage_error(&["run", "--block", "1XB"], "XB");
    let e = assert_usage_error(&["run", "os", "--threads", "0"], "--threads");
    assert!(
        e.contains("at least 1") && !e.contains("18446744073709551615"),
        "{e}"
    );
    assert_usage_error(&["run", "nosuchbench"], "nosuchbench");
    assert_usage_error(&["run", "os", "--runs", "0"], "--runs");
    assert_usage_error(&["run", "os", "--rounds", "0"], "--rounds");
    assert_usage_error(
        &["run", "os", "--rounds", "2", "--duration", "1s"],
        "--rounds",
    );
    assert_usage_error(&["run", "os", "--param", "nosuch=1"], "nosuch");
    assert_usage_error(&["run", "os.call", "--param", "args=9"], "--param args");
    assert_usage_error(&["run", "os", "--format", "xml"], "--format");
    assert_usage_error(&["run", "os", "--duration", "ten"], "--duration");
    assert_usage_error(&["run", "os", "--bogus-flag"], "--bogus-flag");
    assert_usage_error(
        &["run", "mem.bandwidth", "--peak-mem-bw", "fast"],
        "--peak-mem-bw",
    );
    // A CPU this process may not run on: refused before listening.
    assert_usage_error(&["serve", "--echo-cpu", "100000"], "CPU 100000");
    assert_usage_error(&["serve", "--echo-cpu", "one"], "--echo-cpu");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ this is not json").unwrap();
    let (m, b) = (missing.to_str().unwrap(), bad.to_str().unwrap());
    assert_usage_error(&["compare", m, b], "missing.json");
    assert_usage_error(&["compare", b, b], "bad.json");
    assert_usage_error(&["compare", b, b, "--threshold", "lots"], "--threshold");
}

#[test]
fn compare_passes_on_the_same_run_and_fails_on_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let base = run_json(&["os.syscall", "--runs", "7"], dir.path(), "base.json");
    let base_path = dir.path().join("base.json");

    // A report against itself: no change, exit 0.
    let o = run(&[
        "compare",
        base_path.to_str().unwrap(),
        base_path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Every sample and median made 30% worse (time per op ×1.3): exit 1.
    let mut worse = base.clone();
    for r in worse["records"].as_array_mut().unwrap() {
        for m in r["metrics"].as_array_mut().unwrap() {
            let f = if m["direction"] == "lower" {
                1.3
            } else {
                1.0 / 1.3
            };
            for s in m["samples"].as_array_mut().unwrap() {
                *s = serde_json::json!(s.as_f64().unwrap() * f);
            }
            let med = m["summary"]["median"].as_f64().unwrap();
            m["summary"]["median"] = serde_json::json!(med * f);
        }
    }
    let worse_path = dir.path().join("worse.json");
    std::fs::write(&worse_path, serde_json::to_string(&worse).unwrap()).unwrap();
    let o = run(&[
        "compare",
        base_path.to_str().unwrap(),
        worse_path.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("regressed"));

    // A different major schema version is a clear error, not a verdict.
    let mut future = base.clone();
    future["schema_version"] = serde_json::json!("2.0");
    let future_path = dir.path().join("future.json");
    std::fs::write(&future_path, serde_json::to_string(&future).unwrap()).unwrap();
    assert_usage_error(
        &[
            "compare",
            base_path.to_str().unwrap(),
            future_path.to_str().unwrap(),
        ],
        "schema version",
    );
}

#[test]
fn list_and_info_describe_benchmarks_and_host() {
    let o = run(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in ["os.syscall", "os.context_switch", "disk", "gpu", "default"] {
        assert!(text.contains(needle), "list lacks {needle}: {text}");
    }
    let o = run(&["info", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let host: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(host["cpu"]["simd"].is_array());
    assert!(host["build"]["profile"] == "debug" || host["build"]["profile"] == "release");
    if cfg!(target_arch = "x86_64") {
        assert!(
            host["cpu"]["family"].as_u64().is_some_and(|f| f >= 4),
            "{host}"
        );
    }
    // The module facts a run would record: the disk under --scratch-dir.
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "info",
        "--format",
        "json",
        "--scratch-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let host: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        host["extra"]["disk"]["path"],
        dir.path().display().to_string()
    );
    let missing = dir.path().join("missing");
    assert_usage_error(
        &["info", "--scratch-dir", missing.to_str().unwrap()],
        "--scratch-dir",
    );
}
