//! `benchsuite calibrate` and `compare --thresholds`: thresholds fitted
//! from real A/A jobs of this machine, written as a file a person reads,
//! and applied by the gate (command-line rules win).

mod common;

use std::path::Path;
use std::process::Output;

const FAST: &[&str] = &[
    "--min-sample-time",
    "1ms",
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

/// One real A/A job: two copies of this build interleaved for 5 rounds of
/// `os.call` into `dir`.
fn aa_job(dir: &Path) {
    let me = env!("CARGO_BIN_EXE_benchsuite");
    let copy = dir.parent().unwrap().join("benchsuite-copy");
    if !copy.exists() {
        std::fs::copy(me, &copy).unwrap();
    }
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "compare",
        "--interleave",
        me,
        copy.to_str().unwrap(),
        "--rounds",
        "5",
        "--interleave-dir",
        d,
        "--format",
        "json",
        "--",
        "os.call",
        "--param",
        "args=0,1",
    ];
    args.extend_from_slice(FAST);
    std::fs::create_dir_all(dir).unwrap();
    let o = run(&args);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    assert!(dir.join("interleave-base.json").is_file());
}

#[test]
fn calibrate_fits_a_threshold_per_metric_from_real_a_a_jobs_and_names_its_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let jobs: Vec<String> = (1..=3)
        .map(|i| {
            let d = tmp.path().join(format!("aa{i}"));
            aa_job(&d);
            d.to_str().unwrap().to_string()
        })
        .collect();
    let out = tmp.path().join("perf-thresholds.toml");
    let mut args = vec!["calibrate", "--budget", "5", "-o", out.to_str().unwrap()];
    args.extend(jobs.iter().map(String::as_str));
    let o = run(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: 3 A/A job(s)"), "{err}");
    assert!(err.contains("calibrated on 3 A/A jobs"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("budget = 5\nundecided = \"3%\"\njobs = 3\n\n[thresholds]\n"),
        "{text}"
    );
    // Each os.call record's metric appears once, raised or as a comment
    // naming what its noise needs.
    assert_eq!(text.matches("\"os.call:time_per_op\"").count(), 1, "{text}");
    assert!(text.contains("one pair's difference: sd "), "{text}");
    // The file reads back through compare: the same job judged at its
    // thresholds.
    let base = Path::new(&jobs[0]).join("interleave-base.json");
    let new = Path::new(&jobs[0]).join("interleave-new.json");
    let o = run(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--thresholds",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
}

#[test]
fn compare_applies_a_thresholds_file_and_a_command_line_rule_wins() {
    let tmp = tempfile::tempdir().unwrap();
    aa_job(&tmp.path().join("aa"));
    let base = tmp.path().join("aa/interleave-base.json");
    let new = tmp.path().join("aa/interleave-new.json");
    let file = tmp.path().join("t.toml");
    std::fs::write(
        &file,
        // A rule for a benchmark this plan did not run is dropped, not an
        // error: a file fitted on the whole quick pass gates a narrower one.
        "testbed = \"another machine\"\nbudget = 15\njobs = 12\n\n[thresholds]\n\"os.call:time_per_op\" = \"40%\"  # noisy here\n\"net.connect:connect\" = \"20%\"\n\"net.latency:rtt.p99\" = \"300%\"\n",
    )
    .unwrap();
    let judge = |extra: &[&str]| {
        let mut args = vec![
            "compare",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--thresholds",
            file.to_str().unwrap(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let tolerances: Vec<serde_json::Value> = j["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["metric"] == "time_per_op")
            .map(|m| m["tolerance"].clone())
            .collect();
        (tolerances, stderr(&o))
    };
    let (from_file, err) = judge(&[]);
    assert_eq!(from_file.len(), 2, "{from_file:?}");
    assert!(
        from_file
            .iter()
            .all(|t| t == &serde_json::json!({"relative": 0.4})),
        "{from_file:?}"
    );
    assert!(
        err.contains("was fitted on another machine (12 A/A jobs) and this report ran on"),
        "{err}"
    );
    let (cli_wins, _) = judge(&["--threshold", "os.call:time_per_op=7%"]);
    assert!(
        cli_wins
            .iter()
            .all(|t| t == &serde_json::json!({"relative": 0.07})),
        "{cli_wins:?}"
    );
}

#[test]
fn bad_calibrate_inputs_and_thresholds_files_exit_2_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = empty.to_str().unwrap();
    let usage = |args: &[&str], needle: &str| {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    usage(&["calibrate", e], "no interleave-base.json");
    usage(&["calibrate", "/nonexistent/job"], "not a directory");
    usage(&["calibrate", "--budget", "2", e], "--budget 2");
    usage(&["calibrate", "--undecided", "0%", e], "--undecided");
    usage(&["calibrate", "--undecided", "x", e], "--undecided");
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "[thresholds]\n\"os.call:time_per_op\" = \"fast\"\n").unwrap();
    let unknown = tmp.path().join("unknown.toml");
    std::fs::write(&unknown, "\n\nthreshold = 3\n").unwrap();
    let r = tmp.path().join("r.json");
    std::fs::write(&r, "{}").unwrap();
    let rp = r.to_str().unwrap();
    usage(
        &["compare", rp, rp, "--thresholds", bad.to_str().unwrap()],
        "--thresholds",
    );
    usage(
        &["compare", rp, rp, "--thresholds", unknown.to_str().unwrap()],
        "line 3",
    );
    usage(
        &["compare", rp, rp, "--thresholds", "/nonexistent.toml"],
        "--thresholds /nonexistent.toml",
    );
}
