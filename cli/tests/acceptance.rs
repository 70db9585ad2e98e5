//! `benchsuite baseline` and `benchsuite check`: a baseline built from real
//! runs of this machine, a node judged alone, a planted fault failing the
//! right band with the exit codes a Slurm prolog and Node Problem Detector
//! read, and bad input exiting 2 naming what is wrong.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const FAST: &[&str] = &[
    "--min-sample-time",
    "2ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

fn run(args: &[&str]) -> Output {
    common::benchsuite(&[])
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A real run of `os.syscall` and `cpu.prime` as node `host`.
fn node_run(dir: &Path, host: &str) -> PathBuf {
    let path = dir.join(format!("{host}.json"));
    let mut args = vec!["run", "os.syscall", "cpu.prime", "--quick", "-o", s(&path)];
    args.extend_from_slice(FAST);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    edit(&path, |r| r["host"]["hostname"] = Value::from(host));
    path
}

fn edit(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// Scales every value of `id`'s first metric (samples and summary) by `f`:
/// a planted fault in a real report.
fn plant(path: &Path, id: &str, f: f64) {
    edit(path, |r| {
        for rec in r["records"].as_array_mut().unwrap() {
            if rec["id"] != id {
                continue;
            }
            let m = &mut rec["metrics"][0];
            for x in m["samples"].as_array_mut().unwrap() {
                *x = Value::from(x.as_f64().unwrap() * f);
            }
            let sum = m["summary"].as_object_mut().unwrap();
            for (k, v) in sum.iter_mut() {
                if k == "n" || k == "cv" {
                    continue;
                }
                if let Some(x) = v.as_f64() {
                    *v = Value::from(x * f);
                } else if let Some(a) = v.as_array_mut() {
                    for x in a {
                        *x = Value::from(x.as_f64().unwrap() * f);
                    }
                }
            }
        }
    });
}

/// Real runs as three nodes, and the baseline built from them (its
/// `baseline` command's output).
fn healthy_baseline(dir: &Path, hosts: [&str; 3]) -> (Vec<PathBuf>, PathBuf, Output) {
    let runs: Vec<PathBuf> = hosts.iter().map(|h| node_run(dir, h)).collect();
    let base = dir.join("baseline.toml");
    // A wide margin: these runs share one machine whose quick passes drift
    // more than 5% between runs; the tests are about the verdicts.
    let mut args = vec!["baseline", "--margin", "40%", "-o", s(&base)];
    args.extend(runs.iter().map(|p| s(p)));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (runs, base, o)
}

#[test]
fn a_baseline_from_healthy_runs_passes_them_and_fails_a_planted_fault_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let (runs, base, o) = healthy_baseline(tmp.path(), ["node1", "node2", "node3"]);
    assert!(
        stderr(&o).contains("band(s) from 3 run(s) of 3 host(s)"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(&base).unwrap();
    assert!(
        text.contains("[[machine]]") && text.contains("runs = 3"),
        "{text}"
    );
    assert!(text.contains("{ record = \"cpu.prime"), "{text}");
    assert!(text.contains("{ record = \"os.syscall"), "{text}");

    // Each healthy run, judged alone: no FAIL, exit 0.
    for r in &runs {
        let o = run(&["check", "--baseline", s(&base), s(r)]);
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(!stdout(&o).contains("FAIL"), "{}", stdout(&o));
    }

    // cpu.prime at 30% of its events: FAIL naming the band, exit 1.
    let sick = tmp.path().join("sick.json");
    std::fs::copy(&runs[0], &sick).unwrap();
    edit(&sick, |r| r["host"]["hostname"] = Value::from("sick"));
    plant(&sick, "cpu.prime", 0.3);
    let o = run(&["check", "--baseline", s(&base), s(&sick)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains("FAIL  cpu.prime"))
        .unwrap_or_else(|| panic!("{out}"));
    // 30% of runs[0], against the median of three runs: 25-35% of it.
    let pct: u32 = line
        .split("% of the baseline's")
        .next()
        .unwrap()
        .rsplit('(')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(line.contains("below") && (25..=35).contains(&pct), "{line}");
    assert!(out.contains("next:") && out.contains("governor"), "{out}");
    assert!(
        stderr(&o).contains("1 FAIL; defective: sick"),
        "{}",
        stderr(&o)
    );

    // The Slurm drain reason and the NPD message.
    let o = run(&[
        "check",
        "--baseline",
        s(&base),
        s(&sick),
        "--format",
        "slurm",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.starts_with("sick\tbenchsuite: cpu.prime"), "{out}");
    assert!(
        out.contains("events ") && out.contains("% of baseline"),
        "{out}"
    );
    let o = run(&["check", "--baseline", s(&base), s(&sick), "--format", "npd"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1);
    assert!(
        out.trim_end().chars().count() <= 80 && out.starts_with("benchsuite FAIL: cpu.prime"),
        "{out}"
    );
    let o = run(&[
        "check",
        "--baseline",
        s(&base),
        s(&runs[1]),
        "--format",
        "slurm",
    ]);
    assert_eq!((o.status.code(), stdout(&o).as_str()), (Some(0), ""));

    // A record missing from the report fails: not measured is not a pass.
    let gone = tmp.path().join("gone.json");
    std::fs::copy(&runs[0], &gone).unwrap();
    edit(&gone, |r| {
        r["records"]
            .as_array_mut()
            .unwrap()
            .retain(|x| x["id"] != "os.syscall")
    });
    let o = run(&[
        "check",
        "--baseline",
        s(&base),
        s(&gone),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = j[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["record"].as_str().unwrap().starts_with("os.syscall"))
        .unwrap();
    assert_eq!(r["grade"], "FAIL");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("missing measurement"),
        "{r}"
    );

    // A fleet report: every node judged, the defective one named.
    let fleet = tmp.path().join("fleet.json");
    let o = run(&["merge", s(&runs[1]), s(&sick), "-o", s(&fleet)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&[
        "check",
        "--baseline",
        s(&base),
        s(&fleet),
        "--format",
        "slurm",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(stdout(&o).starts_with("sick\t"));
    // `merge --baseline`: the fleet view, then the defective nodes.
    let o = run(&["merge", s(&runs[1]), s(&sick), "--baseline", s(&base)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("acceptance: 2 node(s), 1 PASS, 0 WARN, 1 FAIL")
            || out.contains("acceptance: 2 node(s), 0 PASS, 1 WARN, 1 FAIL"),
        "{out}"
    );
    assert!(
        out.contains("defective nodes:\n  sick\tbenchsuite: cpu.prime"),
        "{out}"
    );
    let o = run(&["merge", s(&runs[1]), s(&runs[2]), "--baseline", s(&base)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("defective"), "{}", stdout(&o));

    // A rule added by hand: kept by --merge, judged by check.
    let rules = "\n[[rule]]\nrecord = \"cpu.prime\"\nrequire = \">= 120% of baseline\"\nseverity = \"warn\"\nnext = \"call the vendor\"\n";
    std::fs::write(&base, text.clone() + rules).unwrap();
    let o = run(&["check", "--baseline", s(&base), s(&runs[1])]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("WARN  cpu.prime: >= 120% of baseline"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("call the vendor"), "{}", stdout(&o));
    let o = run(&["baseline", "-o", s(&base), s(&runs[0])]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--merge"), "{}", stderr(&o));
    let o = run(&[
        "baseline",
        "--merge",
        s(&base),
        "-o",
        s(&base),
        s(&runs[0]),
        s(&runs[2]),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let merged = std::fs::read_to_string(&base).unwrap();
    assert!(
        merged.contains("call the vendor") && merged.contains("runs = 2"),
        "{merged}"
    );
}

#[test]
fn a_baseline_that_cannot_judge_the_report_exits_2_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    let r = node_run(tmp.path(), "node1");
    let base = tmp.path().join("b.toml");
    let o = run(&["baseline", "-o", s(&base), s(&r)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("fewer than 3 runs"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&base).unwrap();
    let judge = |baseline: &str, report: &Path| {
        let f = tmp.path().join("edited.toml");
        std::fs::write(&f, baseline).unwrap();
        let o = run(&["check", "--baseline", s(&f), s(report)]);
        assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
        stderr(&o)
    };
    // Another machine type: the difference named.
    let big = tmp.path().join("big.json");
    std::fs::copy(&r, &big).unwrap();
    edit(&big, |v| {
        let m = v["host"]["memory_bytes"].as_u64().unwrap_or(0);
        v["host"]["memory_bytes"] = Value::from(m + (64u64 << 30));
    });
    let e = judge(&text, &big);
    assert!(e.contains("differs in memory"), "{e}");
    // Another format.
    let e = judge(&text.replace("format = 1", "format = 7"), &r);
    assert!(e.contains("format 7"), "{e}");
    // A rule naming an unknown benchmark, or metric: close names listed.
    let e = judge(
        &(text.clone() + "\n[[rule]]\nrecord = \"os.sycall\"\nrequire = \"ok\"\n"),
        &r,
    );
    assert!(
        e.contains("no benchmark `os.sycall`") && e.contains("os.syscall"),
        "{e}"
    );
    let e = judge(
        &(text.clone()
            + "\n[[rule]]\nrecord = \"cpu.prime\"\nmetric = \"event\"\nrequire = \"ok\"\n"),
        &r,
    );
    assert!(
        e.contains("no metric `event`") && e.contains("events"),
        "{e}"
    );
    // A requirement it cannot read, a value in the wrong unit.
    let e = judge(
        &(text.clone() + "\n[[rule]]\nrecord = \"cpu.prime\"\nrequire = \"fast\"\n"),
        &r,
    );
    assert!(e.contains("require `fast`"), "{e}");
    let e = judge(
        &(text.clone() + "\n[[rule]]\nrecord = \"cpu.prime\"\nrequire = \">= 5 GB/s\"\n"),
        &r,
    );
    assert!(e.contains("the unit is not"), "{e}");
    // Not TOML: the line named.
    let e = judge(&(text.clone() + "\n[[rule]\n"), &r);
    assert!(e.contains("--baseline") && e.contains("line"), "{e}");
    // A band value without its unit.
    let mut broken = text.clone();
    let at = broken.find("expected = \"").unwrap() + "expected = \"".len();
    let end = at + broken[at..].find('"').unwrap();
    broken.replace_range(at..end, "12");
    let e = judge(&broken, &r);
    assert!(e.contains("has no unit"), "{e}");
}

#[test]
fn check_measure_runs_the_node_and_measures_again_what_did_not_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (runs, base, _) = healthy_baseline(tmp.path(), ["a", "b", "c"]);
    // The node's machine type must match: the runs' host name is edited,
    // the machine is this one.
    let measure = |baseline: &Path| {
        let mut a = vec![
            "check",
            "--baseline",
            s(baseline),
            "--measure",
            "--wait",
            "0s",
        ];
        a.extend([
            "--format",
            "json",
            "--",
            "os.syscall",
            "cpu.prime",
            "--quick",
        ]);
        a.extend_from_slice(FAST);
        run(&a)
    };
    let o = measure(&base);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("check: measured in"), "{}", stderr(&o));
    // A band no run of this machine can meet (cpu.prime at least 100× its
    // median): measured three times, failed every time, exit 1.
    let text = std::fs::read_to_string(&base).unwrap();
    let at = text.find("{ record = \"cpu.prime").unwrap();
    let row_end = at + text[at..].find('\n').unwrap();
    let row = &text[at..row_end];
    let min_at = row.find("min = \"").unwrap() + "min = \"".len();
    let min_end = min_at + row[min_at..].find('"').unwrap();
    let mut impossible = text.clone();
    impossible.replace_range(at + min_at..at + min_end, "1 Pevent/s");
    let sick = tmp.path().join("impossible.toml");
    std::fs::write(&sick, impossible).unwrap();
    let o = measure(&sick);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("measuring them again"),
        "{}",
        stderr(&o)
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = j[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["grade"] == "FAIL")
        .unwrap();
    assert!(
        r["record"].as_str().unwrap().starts_with("cpu.prime"),
        "{r}"
    );
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("measured 3×: FAIL → FAIL → FAIL; failed every time"),
        "{r}"
    );
    // Flags `check` sets itself are refused after `--`; a report and
    // --measure together are refused by the parser.
    let o = run(&[
        "check",
        "--baseline",
        s(&base),
        "--measure",
        "--",
        "-o",
        "x.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sets each run's -o"), "{}", stderr(&o));
    let o = run(&["check", "--baseline", s(&base), "--measure", s(&runs[0])]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--measure"), "{}", stderr(&o));
}
