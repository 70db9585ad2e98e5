//! `benchsuite compare` on two fleet reports (`benchsuite merge`): host by
//! host, with a planted slow host, a missing one, and the errors.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

mod common;

fn bench(args: &[&str]) -> Output {
    common::benchsuite(&[])
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One real `os.syscall` report, made once for all tests.
fn one_report() -> &'static Value {
    static REPORT: OnceLock<Value> = OnceLock::new();
    REPORT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let o = bench(&[
            "run",
            "os.syscall",
            "--runs",
            "5",
            "--min-sample-time",
            "1ms",
            "--warmup",
            "1ms",
            "--no-progress",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    })
}

/// The report as host `name`, each metric's samples replaced by a steady
/// series (±0.2%) around its median times `slower`, with the summary to
/// match: a loaded test machine's noise must not blur a planted change.
fn host_report(name: &str, slower: f64) -> Value {
    let mut r = one_report().clone();
    r["host"]["hostname"] = Value::from(name);
    for rec in r["records"].as_array_mut().unwrap() {
        for m in rec["metrics"].as_array_mut().unwrap() {
            let v = m["summary"]["median"].as_f64().unwrap() * slower;
            let samples: Vec<f64> = (0..5)
                .map(|i| v * (1.0 + 0.001 * (i as f64 - 2.0)))
                .collect();
            // Sample standard deviation of -2..2 steps of 0.1%.
            let sd = v * 0.001 * 2.5f64.sqrt();
            let half = 2.776 * sd / 5f64.sqrt();
            m["samples"] = samples.clone().into();
            m["summary"] = serde_json::json!({
                "n": 5, "mean": v, "median": v, "stddev": sd, "cv": sd / v,
                "min": samples[0], "max": samples[4], "p5": samples[0], "p95": samples[4],
                "trimmed_mean": v, "ci95": [v - half, v + half],
            });
            m["rounds"] = Value::Null;
            m["tails"] = Value::Null;
        }
    }
    r
}

/// Merges the hosts (name, slowdown) into `dir/NAME.json` with `benchsuite
/// merge`, as an operator would.
fn fleet(dir: &Path, name: &str, hosts: &[(&str, f64)]) -> PathBuf {
    let mut args = vec!["merge".to_string()];
    for (h, slower) in hosts {
        let p = dir.join(format!("{name}-{h}.json"));
        std::fs::write(&p, host_report(h, *slower).to_string()).unwrap();
        args.push(p.to_string_lossy().into_owned());
    }
    let out = dir.join(format!("{name}.json"));
    args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
    let o = bench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

/// `compare BASE NEW EXTRA...`, judged on the noise inside the runs alone
/// (`--between-run-cv 0%`): the hosts' series are steady by construction,
/// and the prior between runs (os: 5%) would leave an unchanged host
/// undecided (exit 3), which is not what these tests are about.
fn compare(base: &Path, new: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--between-run-cv",
        "0%",
    ];
    args.extend(extra);
    bench(&args)
}

const THREE: &[(&str, f64)] = &[("node1", 1.0), ("node2", 1.0), ("node3", 1.0)];

#[test]
fn a_fleet_against_itself_passes_host_by_host() {
    let dir = tempfile::tempdir().unwrap();
    let base = fleet(dir.path(), "base", THREE);
    let o = compare(&base, &base, &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    for h in ["node1", "node2", "node3"] {
        assert!(out.contains(&format!("== host {h} ==")), "{out}");
    }
    assert!(
        out.ends_with("fleet gate passed: 3 hosts compared\n"),
        "{out}"
    );
}

#[test]
fn a_planted_slow_host_fails_the_gate_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let base = fleet(dir.path(), "base", THREE);
    let new = fleet(
        dir.path(),
        "new",
        &[("node1", 1.0), ("node2", 3.0), ("node3", 1.0)],
    );
    let o = compare(&base, &new, &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("FAIL node2: gate FAILED: 1 regressed"),
        "{out}"
    );
    assert_eq!(out.matches("FAIL ").count(), 2, "{out}"); // the host, and its metric
    assert!(
        out.ends_with("fleet gate FAILED: 3 hosts compared, 1 failed (node2)\n"),
        "{out}"
    );
    // The JSON says the same to a script.
    let o = compare(&base, &new, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["passed"], false);
    let passed: Vec<(String, bool)> = j["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["comparison"]["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        passed,
        [
            ("node1".to_string(), true),
            ("node2".to_string(), false),
            ("node3".to_string(), true)
        ]
    );
}

#[test]
fn a_host_missing_from_the_new_fleet_fails_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let base = fleet(dir.path(), "base", THREE);
    let new = fleet(dir.path(), "new", &[("node1", 1.0), ("node3", 1.0)]);
    let o = compare(&base, &new, &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.starts_with("FAIL node2: missing in new: in the base fleet, absent from the new one\n"),
        "{out}"
    );
    let o = compare(&base, &new, &["--allow-missing"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.ends_with("fleet gate passed: 2 hosts compared, 1 missing in new (node2), allowed\n"),
        "{out}"
    );
}

#[test]
fn a_host_that_cannot_be_compared_fails_the_gate_and_the_others_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let base = fleet(dir.path(), "base", THREE);
    // node3 of the new fleet ran another benchmark: no record in common.
    let mut paths = Vec::new();
    for h in ["node1", "node2", "node3"] {
        let mut r = host_report(h, 1.0);
        if h == "node3" {
            for rec in r["records"].as_array_mut().unwrap() {
                rec["id"] = Value::from("os.other");
            }
        }
        let p = dir.path().join(format!("new-{h}.json"));
        std::fs::write(&p, r.to_string()).unwrap();
        paths.push(p.to_string_lossy().into_owned());
    }
    let new = dir.path().join("new.json");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["-o", new.to_str().unwrap()]);
    let o = bench(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));

    let o = compare(&base, &new, &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("FAIL node3: not comparable: ") && first.contains("os.other"),
        "{out}"
    );
    for h in ["node1", "node2"] {
        assert!(out.contains(&format!("== host {h} ==")), "{out}");
    }
    assert!(!out.contains("== host node3 =="), "{out}");
    assert!(
        out.ends_with("fleet gate FAILED: 2 hosts compared, 1 not comparable (node3)\n"),
        "{out}"
    );
    let o = compare(&base, &new, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["passed"], Value::Bool(false));
    assert_eq!(j["incomparable"][0]["host"], "node3");

    // When no host pair can be compared, that is a usage error naming one.
    let o = compare(&new, &dir.path().join("new-node3.json"), &[]);
    assert_eq!(o.status.code(), Some(2));
    let only3 = dir.path().join("only3.json");
    let o = bench(&[
        "merge",
        dir.path().join("new-node3.json").to_str().unwrap(),
        "-o",
        only3.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = compare(&base, &only3, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}{}", text(&o.stdout));
    assert!(err.starts_with("error: host node3: "), "{err}");
}

#[test]
fn fleets_without_a_common_host_or_mixed_with_a_report_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = fleet(dir.path(), "base", THREE);
    let other = fleet(dir.path(), "other", &[("node7", 1.0)]);
    let o = compare(&base, &other, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        "error: the two fleets have no host in common (base: node1, node2, node3; new: node7): compare fleets of the same hosts"
    );
    // A fleet against one host's report.
    let single = dir.path().join("base-node1.json");
    let o = compare(&base, &single, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is a fleet report and") && err.contains("base-node1.json one host's report"),
        "{err}"
    );
    // A format a fleet comparison has no shape for.
    let o = compare(&base, &base, &["--format", "csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("--format csv: a fleet comparison is written as table, json or md")
    );
    // Two plain reports compare as ever.
    let o = compare(&single, &single, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    assert!(!text(&o.stdout).contains("== host"));
}
