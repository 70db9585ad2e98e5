//! `benchsuite history`: change points over a directory of reports, the
//! alarm's exit status, acknowledgements and bad input.

use std::path::Path;
use std::process::{Command, Output};

use benchsuite_core::testing::{Capability, skip};
use serde_json::{Value, json};

mod common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_benchsuite"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Run `i` of a nightly job at commit `c{i}…`: the quick pass in three
/// rounds, with mem.bandwidth's samples scaled by `by` and the others by a
/// ±0.5% wobble.
fn report(i: usize, by: f64) -> Value {
    let text = include_str!("../../crates/report/src/export/testdata/quick-pass.json");
    let mut r: Value = serde_json::from_str(text).unwrap();
    r["started_at"] = json!(format!("2026-11-{:02}T03:00:00Z", i + 1));
    r["host"]["build"]["commit"] = json!(format!("c{i:02}aaaaaaaaa"));
    let wobble = 1.0 + 0.005 * (((i * 7) % 5) as f64 - 2.0) / 2.0;
    for rec in r["records"].as_array_mut().unwrap() {
        let f = if rec["id"] == "mem.bandwidth" {
            by
        } else {
            wobble
        };
        for m in rec["metrics"].as_array_mut().unwrap() {
            for s in m["samples"].as_array_mut().unwrap() {
                *s = json!(s.as_f64().unwrap() * f);
            }
            // Three rounds, as `run --rounds 3` records them.
            let n = m["samples"].as_array().unwrap().len();
            if n >= 3 {
                m["rounds"] = json!([n / 3, n / 3, n - 2 * (n / 3)]);
            }
            for k in ["mean", "median", "min", "max", "p5", "p95", "trimmed_mean"] {
                if let Some(v) = m["summary"][k].as_f64() {
                    m["summary"][k] = json!(v * f);
                }
            }
        }
    }
    r
}

/// `n` runs into `dir`, mem.bandwidth 30% lower from run `step` on.
fn history(dir: &Path, n: usize, step: usize) {
    for i in 0..n {
        let noise = 1.0 + 0.004 * ((i * 5 % 7) as f64 - 3.0);
        let by = if i >= step { 0.7 * noise } else { noise };
        std::fs::write(
            dir.join(format!("r{i:02}.json")),
            serde_json::to_string(&report(i, by)).unwrap(),
        )
        .unwrap();
    }
}

#[test]
fn a_new_regression_alarms_and_an_acknowledged_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    history(&runs, 14, 10);
    let runs_s = runs.to_str().unwrap();
    let o = run(&["history", runs_s]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("mem.bandwidth "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("r10.json (c10aaaaaaa): -"), "{line}");
    assert!(line.contains("regression, ALARM"), "{line}");
    assert!(
        out.contains("history ALARM: 1 unacknowledged regression in the last 5 runs"),
        "{out}"
    );

    // Older than --since: listed, no alarm.
    let o = run(&["history", runs_s, "--since", "3"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));

    // Acknowledged: exit 0, the reason shown; an ack matching nothing is
    // stale.
    let acks = dir.path().join("perf-acks.toml");
    std::fs::write(
        &acks,
        "[[ack]]\nrecord = \"mem.bandwidth\"\nmetric = \"bandwidth\"\ncommit = \"c10aaaa\"\nreason = \"smaller pages by default\"\n\n[[ack]]\nrecord = \"cpu.flops\"\ncommit = \"c03aaaaa\"\nreason = \"nothing\"\n",
    )
    .unwrap();
    let o = run(&["history", runs_s, "--acks", acks.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("acknowledged: smaller pages by default"),
        "{out}"
    );
    assert!(
        out.contains("stale acknowledgement: cpu.flops at c03aaaaa"),
        "{out}"
    );

    // Markdown: the verdict first, only what changed.
    let o = run(&["history", runs_s, "--format", "md"]);
    let (out, _) = text(&o);
    assert!(out.starts_with("**❌ history ALARM"), "{out}");
    assert!(!out.contains("| os.timer"), "{out}");
    // CSV: one row per change point.
    let o = run(&["history", runs_s, "--format", "csv"]);
    assert_eq!(text(&o).0.lines().count(), 2, "{:?}", text(&o));

    // The trend page: one chart per metric, the alarm's first, its change
    // point marked; it renders in a real browser.
    let page = dir.path().join("trend.html");
    let o = run(&["history", runs_s, "-o", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let charts: Vec<&str> = html.split("<svg").skip(1).collect();
    let o = run(&["history", runs_s, "--format", "json"]);
    let series = serde_json::from_slice::<Value>(&o.stdout).unwrap()["series"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(charts.len(), series, "one chart per metric");
    assert!(
        charts[0].contains("mem.bandwidth: bandwidth"),
        "{}",
        charts[0]
    );
    assert!(charts[0].contains("% ALARM</text>"), "{}", charts[0]);
    // Each run's commit on hover.
    assert!(
        charts[0].contains("r10.json (c10aaaaaaaaa, "),
        "{}",
        charts[0]
    );
    // Each run's rounds beneath its median (the fixture has 3 per run).
    assert!(charts[0].contains("r10.json round 3: "), "{}", charts[0]);

    // The gate's thresholds file: a 30% step is not a regression of a
    // metric whose threshold is 35%; still listed as a change point.
    let thresholds = dir.path().join("perf-thresholds.toml");
    std::fs::write(
        &thresholds,
        "testbed = \"x\"\n\n[thresholds]\n\"mem.bandwidth:bandwidth\" = \"35%\"\n",
    )
    .unwrap();
    let o = run(&[
        "history",
        runs_s,
        "--thresholds",
        thresholds.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("mem.bandwidth:bandwidth=35%"), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("mem.bandwidth "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("r10.json (c10aaaaaaa): -"), "{line}");
    assert!(!line.contains("regression"), "{line}");
    let o = run(&["history", runs_s, "--thresholds", "/nonexistent/t.toml"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--thresholds"), "{err}");

    let Some(browser) = common::chromium() else {
        skip(
            Capability::Chromium,
            "the trend page's render: neither `chromium` nor `chromium-browser` is on PATH (apt-get install chromium)",
        );
        return;
    };
    let ink = common::screenshot(browser, &page, &dir.path().join("trend.png"), 1600);
    assert!(ink.inked > 0.02 && ink.coloured > 0.002, "{ink:?}");
}

#[test]
fn bad_input_is_an_error_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), 5, 99);
    let d = dir.path().to_str().unwrap();
    // Too few runs.
    let o = run(&["history", d]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs at least 6 runs"), "{err}");
    // Another testbed: left out, named on stderr.
    history(dir.path(), 8, 99);
    let mut other = report(20, 1.0);
    other["host"]["cpu"]["model"] = json!("Another CPU");
    other["started_at"] = json!("2026-11-02T12:00:00Z");
    std::fs::write(dir.path().join("other.json"), other.to_string()).unwrap();
    let o = run(&["history", d]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains("left out (another testbed): other.json: cpu.model"),
        "{err}"
    );
    // An acknowledgement file that does not parse: its line named.
    let acks = dir.path().join("acks.toml");
    std::fs::write(&acks, "[[ack]]\nrecord = \"cpu.flops\"\ncommit = 12\n").unwrap();
    let o = run(&["history", d, "--acks", acks.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("acks.toml: line 3"), "{err}");
    // Flags.
    for (args, flag) in [
        (vec!["--since", "0"], "--since"),
        (vec!["--alpha", "0.9"], "--alpha"),
        (vec!["--threshold", "2ms"], "--threshold"),
        (vec!["--format", "bmf"], "--format"),
    ] {
        let mut a = vec!["history", d];
        a.extend(args);
        let o = run(&a);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(flag), "{flag}: {err}");
    }
}
