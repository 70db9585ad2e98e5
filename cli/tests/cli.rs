//! The `benchsuite` binary end to end: outputs parse, bad input exits 2
//! with a message naming the flag or file, compare's exit codes.

use std::path::Path;
use std::process::{Command, Output};

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

mod common;

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

/// A threshold no honest comparison of `report` with itself can fail to
/// call unchanged: 50%, or three times the widest spread (max/min − 1) of
/// any metric's samples where a busy machine made them wider (a
/// preempted sample 10× the others), as `--threshold`'s text.
fn self_threshold(report: &serde_json::Value) -> String {
    let mut spread: f64 = 0.0;
    for r in report["records"].as_array().unwrap() {
        for m in r["metrics"].as_array().into_iter().flatten() {
            let xs: Vec<f64> = m["samples"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_f64())
                .collect();
            let (lo, hi) = xs
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            if lo > 0.0 && hi.is_finite() {
                spread = spread.max(hi / lo - 1.0);
            }
        }
    }
    format!("{:.0}%", (300.0 * spread).max(50.0).ceil())
}

fn run_json(extra: &[&str], dir: &Path, name: &str) -> serde_json::Value {
    let out = dir.join(name);
    let mut args = vec!["run"];
    args.extend_from_slice(extra);
    args.extend_from_slice(FAST);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let report = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_valid_report(&report);
    report
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
    assert_valid_report(&v);
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
    // The configuration's builder refuses these, naming its settings,
    // which the CLI tells as its flags.
    let e = assert_usage_error(
        &["run", "os", "--min-sample-time", "0s"],
        "--min-sample-time",
    );
    assert!(!e.contains("RunConfig"), "{e}");
    assert_usage_error(
        &["run", "os", "--duration", "1s", "--interval", "2s"],
        "is longer than --duration",
    );
    assert_usage_error(&["run", "os", "--param", "nosuch=1"], "nosuch");
    assert_usage_error(&["run", "os.call", "--param", "args=9"], "--param args");
    let e = assert_usage_error(&["run", "os", "--format", "xml"], "--format");
    assert!(e.contains("bmf, gha, openmetrics"), "{e}");
    assert_usage_error(&["run", "os", "--format", "gha"], "-o PREFIX");
    assert_usage_error(&["run", "os", "--duration", "ten"], "--duration");
    assert_usage_error(&["run", "os", "--bogus-flag"], "--bogus-flag");
    assert_usage_error(
        &["run", "mem.bandwidth", "--peak-mem-bw", "fast"],
        "--peak-mem-bw",
    );
    // Module options are declared: a typo or a bad value is refused
    // before anything runs, naming the flag.
    let e = assert_usage_error(&["run", "cpu.flops", "--opt", "cpu-gz=3"], "--opt cpu-gz");
    assert!(e.contains("cpu-ghz"), "{e}");
    assert_usage_error(
        &["run", "cpu.flops", "--opt", "cpu-ghz=fast"],
        "--opt cpu-ghz",
    );
    let e = assert_usage_error(&["run", "os.syscall", "--peer", "h:1"], "--peer");
    assert!(
        e.contains("is read by net.") && e.contains("not selected"),
        "{e}"
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

    // A report against itself, as one baseline: the prior noise between
    // runs (os: 5%) leaves a change beyond 5% possible, so the gate is
    // undecided (exit 3), not passed; judged on the noise inside the two
    // runs alone, no change: exit 0.
    let o = run(&[
        "compare",
        base_path.to_str().unwrap(),
        base_path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("gate UNDECIDED"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = run(&[
        "compare",
        base_path.to_str().unwrap(),
        base_path.to_str().unwrap(),
        "--between-run-cv",
        "0%",
        "--threshold",
        &self_threshold(&base),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Every sample and the median made worse by 3× the base's own spread
    // (max/min): each new sample is then 3× worse than the base's worst,
    // so every resampled change is a 3× regression and the gate exits 1
    // whatever the noise of this (debug, possibly busy) run. A plain 3×
    // was judged noisy under a CPU-burning neighbour, whose preemptions
    // make the base's samples bimodal.
    let mut worse = base.clone();
    for r in worse["records"].as_array_mut().unwrap() {
        for m in r["metrics"].as_array_mut().unwrap() {
            let xs: Vec<f64> = m["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_f64().unwrap())
                .collect();
            let spread = xs.iter().cloned().fold(f64::MIN, f64::max)
                / xs.iter().cloned().fold(f64::MAX, f64::min);
            assert!(spread.is_finite() && spread >= 1.0, "{m}");
            let f = if m["direction"] == "lower" {
                3.0 * spread
            } else {
                1.0 / (3.0 * spread)
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

/// Runs `args` with stdout closed before the binary writes a byte (as
/// `| head -1` does once it has its line): every write to stdout fails
/// with EPIPE. Returns the exit code and stderr.
fn run_with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    (o.status.code(), stderr(&o))
}

#[test]
fn a_failed_gate_exits_1_even_when_stdout_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let base = run_json(&["os.syscall"], dir.path(), "base.json");
    let base_p = write(dir.path(), "base.json", &base);
    // The record failed in new: the gate fails whatever the noise.
    let mut new = base.clone();
    new["records"][0]["status"] = serde_json::json!("failed");
    new["records"][0]["reason"] = serde_json::json!("prepare: EPERM");
    new["records"][0]["metrics"] = serde_json::json!([]);
    let new_p = write(dir.path(), "new.json", &new);
    for format in ["table", "json", "csv", "md"] {
        let (code, err) = run_with_stdout_closed(&["compare", &base_p, &new_p, "--format", format]);
        assert_eq!(code, Some(1), "compare --format {format} | head: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // An unchanged run still passes with stdout closed: nothing to report.
    let (code, err) = run_with_stdout_closed(&[
        "compare",
        &base_p,
        &base_p,
        "--between-run-cv",
        "0%",
        "--threshold",
        &self_threshold(&base),
    ]);
    assert_eq!(code, Some(0), "{err}");

    // run --strict with a failed benchmark (a peer that is not there), its
    // table going nowhere: still exit 1.
    let mut args = vec![
        "run",
        "net.connect",
        "--peer",
        "127.0.0.1:1",
        "--strict",
        "--format",
        "table",
    ];
    args.extend_from_slice(FAST);
    let (code, err) = run_with_stdout_closed(&args);
    assert_eq!(code, Some(1), "run --strict | head: {err}");
    assert!(!err.contains("panicked"), "{err}");
    // Without --strict the same run's closed stdout is success.
    args.retain(|a| *a != "--strict");
    let (code, err) = run_with_stdout_closed(&args);
    assert_eq!(code, Some(0), "run | head: {err}");
}

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_broken_benchmark_in_new_fails_the_gate_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let one = run_json(&["os.syscall"], dir.path(), "one.json");
    // Three records of the same measurement under three parameter values.
    let mut base = one.clone();
    let r0 = one["records"][0].clone();
    let with_call = |call: &str| {
        let mut r = r0.clone();
        r["params"]["call"] = serde_json::json!(call);
        r
    };
    base["records"] = serde_json::json!([with_call("a"), with_call("b"), with_call("c")]);
    let base_p = write(dir.path(), "base.json", &base);

    // b failed, c was skipped, and a lost nothing: exit 1, failures first.
    let mut new = base.clone();
    new["records"][1]["status"] = serde_json::json!("failed");
    new["records"][1]["reason"] = serde_json::json!("prepare: EPERM");
    new["records"][1]["metrics"] = serde_json::json!([]);
    new["records"][2]["status"] = serde_json::json!("skipped");
    new["records"][2]["reason"] = serde_json::json!("no permission");
    new["records"][2]["metrics"] = serde_json::json!([]);
    let new_p = write(dir.path(), "new.json", &new);
    let o = run(&["compare", &base_p, &new_p]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "FAIL os.syscall call=b: failed in new: prepare: EPERM",
        "{out}"
    );
    assert_eq!(
        lines[1], "FAIL os.syscall call=c: skipped in new: no permission",
        "{out}"
    );
    assert!(out.contains("gate FAILED"), "{out}");
    // Allowing skips does not let a failure pass.
    let o = run(&["compare", &base_p, &new_p, "--allow-skipped"]);
    assert_eq!(o.status.code(), Some(1));

    // A record that vanished: exit 1, unless --allow-missing.
    let mut fewer = base.clone();
    fewer["records"].as_array_mut().unwrap().truncate(2);
    let fewer_p = write(dir.path(), "fewer.json", &fewer);
    let o = run(&["compare", &base_p, &fewer_p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("FAIL os.syscall call=c: missing in new")
    );
    // (Allowed: it does not fail; the rest is unchanged, or undecided
    // where this machine was too noisy to say.)
    let o = run(&[
        "compare",
        &base_p,
        &fewer_p,
        "--allow-missing",
        "--between-run-cv",
        "0%",
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // An empty new report never passes.
    let mut empty = base.clone();
    empty["records"] = serde_json::json!([]);
    let empty_p = write(dir.path(), "empty.json", &empty);
    let o = run(&["compare", &base_p, &empty_p, "--allow-missing"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("the new report has no records"));

    // Too few samples to judge: exit 1 unless --allow-unjudged.
    let mut thin = base.clone();
    for r in thin["records"].as_array_mut().unwrap() {
        for m in r["metrics"].as_array_mut().unwrap() {
            m["samples"].as_array_mut().unwrap().truncate(2);
        }
    }
    let thin_p = write(dir.path(), "thin.json", &thin);
    let o = run(&["compare", &base_p, &thin_p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("not judged: new has 2 sample"));
    let o = run(&[
        "compare",
        &base_p,
        &thin_p,
        "--allow-unjudged",
        "--between-run-cv",
        "0%",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 3)));

    // Every export carries the verdicts and the gate.
    let o = run(&["compare", &base_p, &new_p, "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["passed"], false);
    assert_eq!(j["problems"][0]["kind"], "failed");
    let o = run(&["compare", &base_p, &new_p, "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("os.syscall,b,") && l.contains("failed,fail,prepare: EPERM")),
        "{csv}"
    );
    let o = run(&["compare", &base_p, &new_p, "--format", "md"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("**❌ gate FAILED"));

    // Bad thresholds and reports that cannot be compared: exit 2, one line.
    let e = assert_usage_error(
        &["compare", &base_p, &new_p, "--threshold", "5"],
        "--threshold",
    );
    assert!(e.contains("has no unit") && e.contains("5%"), "{e}");
    assert_usage_error(
        &["compare", &base_p, &new_p, "--threshold", "-3%"],
        "0 or more",
    );
    let e = assert_usage_error(
        &[
            "compare",
            &base_p,
            &new_p,
            "--threshold",
            "os.syscall:rtt=10%",
        ],
        "no metric `rtt`",
    );
    assert!(e.contains("time_per_op"), "{e}");
    assert_usage_error(
        &["compare", &base_p, &new_p, "--threshold", "net.*=10%"],
        "no record matches",
    );
    assert_usage_error(&["compare", &base_p, &new_p, "--format", "bmf"], "convert");
    let mut other = base.clone();
    for r in other["records"].as_array_mut().unwrap() {
        r["id"] = serde_json::json!("os.timer");
    }
    let other_p = write(dir.path(), "other.json", &other);
    assert_usage_error(&["compare", &base_p, &other_p], "no record in common");
}

#[test]
fn the_token_never_reaches_a_report_an_export_or_a_log() {
    let secret = "s3cret-TOKEN-4d2f";
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec!["run", "net.connect", "--token", secret, "--quick"];
    args.extend_from_slice(FAST);
    args.extend_from_slice(&["-o", json.to_str().unwrap()]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut seen = vec![
        String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr(&o),
        std::fs::read_to_string(&json).unwrap(),
    ];
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["config"]["options"]["token"], "<redacted>");
    assert_eq!(
        report["records"][0]["status"], "ok",
        "{}",
        report["records"][0]
    );
    for format in ["table", "json", "csv", "md", "bmf", "openmetrics"] {
        let o = run(&["convert", json.to_str().unwrap(), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        seen.push(String::from_utf8_lossy(&o.stdout).into_owned());
        seen.push(stderr(&o));
    }
    let prefix = dir.path().join("gha");
    let o = run(&[
        "convert",
        json.to_str().unwrap(),
        "--format",
        "gha",
        "-o",
        prefix.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for side in ["bigger", "smaller"] {
        seen.push(std::fs::read_to_string(dir.path().join(format!("gha-{side}.json"))).unwrap());
    }
    let o = run(&[
        "compare",
        json.to_str().unwrap(),
        json.to_str().unwrap(),
        "--format",
        "json",
    ]);
    seen.push(String::from_utf8_lossy(&o.stdout).into_owned());
    // A report written before redaction still has the token: convert
    // does not copy it.
    let mut old = report.clone();
    old["config"]["options"]["token"] = serde_json::json!(secret);
    let old_p = dir.path().join("old.json");
    std::fs::write(&old_p, old.to_string()).unwrap();
    let o = run(&["convert", old_p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    seen.push(String::from_utf8_lossy(&o.stdout).into_owned());
    for (i, text) in seen.iter().enumerate() {
        assert!(!text.contains(secret), "output {i} holds the token: {text}");
    }
}

/// A `benchsuite serve` on a free loopback port with `env` set; its
/// address, and its stderr lines as they come. Killed when dropped.
struct ServeProc {
    child: std::process::Child,
    addr: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for ServeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(extra: &[&str], env: &[(&str, &str)]) -> ServeProc {
    use std::io::BufRead;
    let mut cmd = bin();
    cmd.args(["serve", "--bind", "127.0.0.1:0"])
        .args(extra)
        .env_remove("BENCHSUITE_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let log2 = log.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let addr = line
                .split("listening on ")
                .nth(1)
                .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string());
            // Logged before the address is announced, so the caller sees
            // the listening line in the log.
            log2.lock().unwrap().push(line);
            if let Some(a) = addr {
                let _ = tx.send(a);
            }
        }
    });
    let addr = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("serve did not start: {:?}", log.lock().unwrap()));
    ServeProc { child, addr, log }
}

#[test]
fn the_token_from_env_or_file_reaches_no_output_and_the_flag_is_warned_about() {
    let secret = "s3cret-ENV-FILE-9b1c";
    let srv = serve(&[], &[("BENCHSUITE_TOKEN", secret)]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{secret}\nsecond line ignored\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let file_s = file.to_str().unwrap();
    let mut seen = Vec::new();
    // The three sources: env, file, flag (warned about); each authenticates.
    for (i, (flags, env)) in [
        (vec![], Some(secret)),
        (vec!["--token-file", file_s], None),
        (vec!["--token", secret], None),
        // --token-file beats the environment.
        (vec!["--token-file", file_s], Some("wrong-env-token")),
    ]
    .into_iter()
    .enumerate()
    {
        let json = dir.path().join(format!("r{i}.json"));
        let mut cmd = bin();
        cmd.args(["run", "net.connect", "--peer", &srv.addr, "--quick"])
            .args(&flags)
            .args(FAST)
            .args(["-o", json.to_str().unwrap()])
            .env_remove("BENCHSUITE_TOKEN");
        if let Some(e) = env {
            cmd.env("BENCHSUITE_TOKEN", e);
        }
        let o = cmd.output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {err}");
        let text = std::fs::read_to_string(&json).unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["records"][0]["status"], "ok", "{flags:?}: {report}");
        assert_eq!(report["config"]["options"]["token"], "<redacted>");
        let warned = err.contains("warning: --token puts the token on the command line");
        assert_eq!(
            warned,
            flags.first() == Some(&"--token"),
            "{flags:?}: {err}"
        );
        if warned {
            assert!(
                err.contains("BENCHSUITE_TOKEN") && err.contains("--token-file"),
                "{err}"
            );
        }
        assert!(!err.contains("may be read by other users"), "{err}");
        seen.extend([String::from_utf8_lossy(&o.stdout).into_owned(), err, text]);
    }
    // A wrong token is refused, and the server logs it without the token.
    let o = bin()
        .args([
            "run",
            "net.connect",
            "--peer",
            &srv.addr,
            "--quick",
            "--format",
            "json",
        ])
        .args(FAST)
        .env("BENCHSUITE_TOKEN", "not-it-not-it-not-it")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reason = report["records"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("wrong token"), "{report}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = srv.log.lock().unwrap().clone();
    assert!(
        log.iter().any(|l| l.contains("refused: wrong token")),
        "{log:?}"
    );
    assert!(
        log[0].contains("token required (from BENCHSUITE_TOKEN)"),
        "{log:?}"
    );
    seen.extend(log);
    for (i, text) in seen.iter().enumerate() {
        assert!(!text.contains(secret), "output {i} holds the token: {text}");
    }
    drop(srv);

    // A serve started with --token-file, and one with --token (warned).
    let srv = serve(&["--token-file", file_s], &[]);
    assert!(srv.log.lock().unwrap()[0].contains("(from --token-file)"));
    drop(srv);

    // Unreadable or empty files, and an empty environment variable, are
    // refused naming the source; so is giving the token twice.
    let missing = dir.path().join("no-such-token");
    let e = assert_usage_error(
        &[
            "run",
            "net.connect",
            "--token-file",
            missing.to_str().unwrap(),
        ],
        "no-such-token",
    );
    assert!(e.contains("--token-file"), "{e}");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let e = assert_usage_error(&["serve", "--token-file", empty.to_str().unwrap()], "empty");
    assert!(e.contains("--token-file"), "{e}");
    let o = bin()
        .args(["run", "net.connect", "--quick"])
        .env("BENCHSUITE_TOKEN", "")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("BENCHSUITE_TOKEN is set but empty"),
        "{}",
        stderr(&o)
    );
    assert_usage_error(
        &["run", "net.connect", "--token", "a", "--token-file", file_s],
        "cannot be used with",
    );
    // BENCHSUITE_TOKEN in the environment does not disturb a run without
    // network benchmarks.
    let o = bin()
        .args(["run", "os.syscall", "--quick", "--format", "json"])
        .args(FAST)
        .env("BENCHSUITE_TOKEN", secret)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains(secret));
}

#[test]
fn serve_requires_a_token_unless_no_auth_on_loopback() {
    let o = bin()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("BENCHSUITE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("requires a token") && e.contains("BENCHSUITE_TOKEN") && e.contains("--no-auth"),
        "{e}"
    );
    let o = bin()
        .args(["serve", "--bind", "0.0.0.0:0", "--no-auth"])
        .env_remove("BENCHSUITE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--no-auth is refused on 0.0.0.0:0"), "{e}");
    let o = bin()
        .args(["serve", "--bind", "0.0.0.0:0"])
        .env_remove("BENCHSUITE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("without a token"), "{}", stderr(&o));
    // A token shorter than 16 characters is refused, saying why.
    let o = bin()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("BENCHSUITE_TOKEN", "short-token")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("11 characters") && e.contains("at least 16") && e.contains("offline"),
        "{e}"
    );
    // --no-auth on loopback: clients need nothing, and one round trip.
    let srv = serve(&["--no-auth"], &[("BENCHSUITE_TOKEN", "ignored-here")]);
    let log = srv.log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|l| l.contains("BENCHSUITE_TOKEN is set but ignored")),
        "{log:?}"
    );
    assert!(
        log.iter().any(|l| l.contains("no token (--no-auth")),
        "{log:?}"
    );
    let o = bin()
        .args([
            "run",
            "net.connect",
            "--peer",
            &srv.addr,
            "--quick",
            "--format",
            "json",
        ])
        .args(FAST)
        .env_remove("BENCHSUITE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["records"][0]["status"], "ok", "{report}");
}

#[test]
fn kill_9_mid_run_leaves_a_valid_report_of_the_finished_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    std::fs::write(&out, "OLD").unwrap();
    // Eight records of at least 1.2 s each (1 s warm-up, 5 × 50 ms samples).
    let mut child = bin()
        .args([
            "run",
            "os.call",
            "--param",
            "args=0..7",
            "--warmup",
            "1s",
            "--min-sample-time",
            "50ms",
            "--no-progress",
            "-o",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Untouched until the first record is done.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "OLD");
    let t0 = std::time::Instant::now();
    let report = loop {
        assert!(t0.elapsed().as_secs() < 60, "no checkpoint with 2 records");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let text = std::fs::read_to_string(&out).unwrap();
        if let Ok(r) = serde_json::from_str::<serde_json::Value>(&text)
            && r["records"].as_array().is_some_and(|a| a.len() >= 2)
        {
            break r;
        }
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Whatever the file holds now is a whole report (the last checkpoint).
    let text = std::fs::read_to_string(&out).unwrap();
    let last: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&report);
    assert_valid_report(&last);
    let n = last["records"].as_array().unwrap().len();
    assert!((2..8).contains(&n), "{n} records");
    assert_eq!(last["progress"]["done"], n);
    assert_eq!(last["progress"]["planned"], 8);
    // compare loads it and says it is unfinished.
    let p = out.to_str().unwrap();
    let o = run(&["compare", p, p, "--between-run-cv", "0%"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("report is unfinished"));
}

#[test]
fn convert_writes_a_stored_report_in_another_format() {
    let dir = tempfile::tempdir().unwrap();
    run_json(&["os.syscall"], dir.path(), "r.json");
    let r = dir.path().join("r.json");
    let o = run(&["convert", r.to_str().unwrap(), "--format", "bmf"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bmf: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let name = "os.syscall call=getppid";
    assert!(bmf[name].is_object(), "{bmf}");
    let prom = dir.path().join("m.prom");
    let o = run(&["convert", r.to_str().unwrap(), "-o", prom.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&prom).unwrap().ends_with("# EOF\n"));
    assert_usage_error(
        &["convert", r.to_str().unwrap(), "--format", "gha"],
        "-o PREFIX",
    );
}

#[test]
fn list_json_describes_every_benchmark_and_probe_says_what_runs_here() {
    let o = run(&["list", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let benches = v["benchmarks"].as_array().unwrap();
    let bench = |id: &str| {
        benches
            .iter()
            .find(|b| b["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {v}"))
            .clone()
    };
    let param = |b: &serde_json::Value, name: &str| {
        b["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {b}"))
            .clone()
    };
    let disk = bench("disk.io");
    let block = param(&disk, "block");
    assert_eq!(block["kind"], "size", "{block}");
    assert_eq!(block["unit"], "B", "{block}");
    assert!(block["default"].is_u64() && block["min"].is_u64() && block["max"].is_u64());
    assert!(
        block["smoke"].is_u64() && block["help"].is_string(),
        "{block}"
    );
    let op = param(&disk, "op");
    assert_eq!(op["kind"], "choice", "{op}");
    assert!(
        op["values"].as_array().unwrap().contains(&op["default"]),
        "{op}"
    );
    let syscall = bench("os.syscall");
    let metric = syscall["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "time_per_op")
        .unwrap()
        .clone();
    assert_eq!(metric["direction"], "lower", "{metric}");
    assert_eq!(metric["unit"], "s", "{metric}");
    assert!(syscall.get("probe").is_none(), "{syscall}");
    // Every module is listed; network benchmarks declare the token secret.
    for m in ["os", "cpu", "mem", "disk", "net", "gpu"] {
        assert!(
            v["modules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["name"] == m)
        );
    }
    let net = benches.iter().find(|b| b["module"] == "net").unwrap();
    assert!(
        net["options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["name"] == "token" && o["secret"] == true),
        "{net}"
    );

    // --probe: each selected benchmark says whether it can run here.
    let o = run(&["list", "os.syscall", "gpu", "--format", "json", "--probe"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let benches = v["benchmarks"].as_array().unwrap();
    assert!(
        benches
            .iter()
            .all(|b| b["module"] == "os" || b["module"] == "gpu")
    );
    assert_eq!(benches[0]["id"], "os.syscall");
    assert_eq!(benches[0]["probe"]["ready"], true, "{v}");
    for b in benches {
        let p = &b["probe"];
        assert!(
            p["ready"] == true || p["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{b}"
        );
    }
    assert_usage_error(&["list", "--format", "csv"], "table or json");
}

#[test]
fn the_table_counts_notes_unless_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_json(&["os.timer"], dir.path(), "t.json");
    let notes = report["records"][0]["notes"].as_array().unwrap().len();
    assert!(notes > 0, "{report}");
    let r = dir.path().join("t.json");
    let o = run(&["convert", r.to_str().unwrap(), "--format", "table"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    let s = if notes == 1 { "" } else { "s" };
    assert!(
        t.contains(&format!("\n{notes} note{s}, -v to show\n")),
        "{t}"
    );
    assert!(t.lines().all(|l| l.chars().count() <= 120), "{t}");
    let o = run(&["convert", r.to_str().unwrap(), "--format", "table", "-v"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("\nnotes:\n  os.timer") && !t.contains("-v to show"),
        "{t}"
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

#[test]
fn schema_prints_the_report_schema() {
    let o = run(&["schema"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(printed, benchsuite::schema::json_schema());
    assert_eq!(
        printed["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(printed["$defs"]["Record"]["properties"]["status"].is_object());
}

#[test]
fn dashboard_formats_are_written_from_run() {
    let dir = tempfile::tempdir().unwrap();
    let run_to = |extra: &[&str]| {
        let mut args = vec!["run", "os.syscall", "--runs", "3"];
        args.extend_from_slice(extra);
        args.extend_from_slice(FAST);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        o
    };

    // BMF on stdout: benchmark = requested key, measure = metric (unit).
    let o = run_to(&["--format", "bmf"]);
    let bmf: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let (name, measures) = bmf.as_object().unwrap().iter().next().unwrap();
    assert!(name.starts_with("os.syscall "), "{bmf}");
    assert!(
        measures["time_per_op (s)"]["value"].as_f64().unwrap() > 0.0,
        "{bmf}"
    );

    // GHA: -o PREFIX.json gives one file per tool; os.syscall has only a
    // lower-is-better metric, so the bigger-is-better file is empty, and
    // stderr says so.
    let prefix = dir.path().join("bench.json");
    let o = run_to(&["--format", "gha", "-o", prefix.to_str().unwrap()]);
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    let smaller = read("bench-smaller.json");
    let entry = &smaller[0];
    assert!(
        entry["name"].as_str().unwrap().ends_with(" — time_per_op"),
        "{smaller}"
    );
    assert_eq!(entry["unit"], "ns");
    assert!(entry["value"].as_f64().unwrap() > 0.0);
    assert_eq!(read("bench-bigger.json"), serde_json::json!([]));
    assert!(!dir.path().join("bench.json").exists());
    let err = stderr(&o);
    assert!(
        err.contains("bench-smaller.json (1 entry, tool customSmallerIsBetter)")
            && err.contains("bench-bigger.json is empty"),
        "{err}"
    );

    // OpenMetrics from the .prom extension (node_exporter's textfile name).
    let prom = dir.path().join("bench.prom");
    run_to(&["-o", prom.to_str().unwrap()]);
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(
        text.starts_with("# TYPE benchsuite_os_syscall_time_per_op_seconds gauge\n"),
        "{text}"
    );
    assert!(
        text.contains("\nbenchsuite_record_ok{id=\"os.syscall\","),
        "{text}"
    );
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    // Each file replaced whole, by a rename: no temporary file is left.
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["bench-bigger.json", "bench-smaller.json", "bench.prom"]
    );
}

/// The shipped plan files.
fn plan_path(name: &str) -> String {
    format!("{}/../plans/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Every shipped plan runs at its `--quick` size into one valid report,
/// written as HTML (`-o plan.html`, the report embedded as JSON): each
/// record says its phase, every phase ran, nothing failed, the command
/// line overrides the file (the trace's duration), the page has at least
/// the charts the plan's sweeps make, and it renders in headless Chromium
/// (not blank, no console error; skipped, saying so, without a browser).
#[test]
fn every_shipped_plan_runs_quick_into_one_report() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    // (plan, its phases, at least this many sweep charts at --quick size
    // on a machine without a GPU, extra flags)
    let cases: [(&str, &[&str], usize, &[&str]); 8] = [
        (
            "os.toml",
            &["timer", "call", "syscall", "create", "switch"],
            1,
            &[],
        ),
        ("sysbench.toml", &["cpu", "fileio"], 0, &[]),
        ("cpu.toml", &["flops", "iops", "linpack"], 3, &[]),
        (
            "network.toml",
            &["tcp", "udp", "latency", "connect", "capacity"],
            3,
            &[],
        ),
        (
            "cpu-trace.toml",
            &["flops-trace", "iops-trace"],
            0,
            &["--duration", "2s", "--interval", "1s"],
        ),
        (
            "memory.toml",
            &["blocks", "block-sweep", "working-set", "latency"],
            5,
            &[],
        ),
        ("disk.toml", &["blocks", "threads", "capacity"], 3, &[]),
        (
            "gpu.toml",
            &["flops", "iops", "matmul", "copies", "copy-sweep", "latency"],
            0,
            &[],
        ),
    ];
    let browser = common::chromium();
    if browser.is_none() {
        benchsuite_core::testing::skip(
            benchsuite_core::testing::Capability::Chromium,
            "the plans' browser render: neither `chromium` nor `chromium-browser` is on PATH (apt-get install chromium)",
        );
    }
    for (plan, phases, min_charts, extra) in cases {
        let out = dir.path().join(format!("{plan}.html"));
        let path = plan_path(plan);
        let mut args = vec![
            "run",
            "-f",
            path.as_str(),
            "--quick",
            "--scratch-dir",
            scratch.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(FAST);
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{plan}: {}", stderr(&o));
        let page = std::fs::read_to_string(&out).unwrap();
        let open = r#"<script type="application/json" id="benchsuite-reports">"#;
        let json = &page[page.find(open).expect("embedded reports") + open.len()..];
        let json = &json[..json.find("</script>").unwrap()];
        let reports: serde_json::Value = serde_json::from_str(json).unwrap();
        let report = &reports[0];
        assert_valid_report(report);
        assert!(report.get("progress").is_none(), "{plan}: complete");
        let records = report["records"].as_array().unwrap();
        for phase in phases {
            assert!(
                records.iter().any(|r| r["phase"] == *phase),
                "{plan}: no record of phase {phase}"
            );
        }
        if plan == "disk.toml" || plan == "network.toml" {
            // The capacity phase: a search's summary with its answer (or
            // its plain verdict) and the curve drawn.
            let summary = records
                .iter()
                .find(|r| r.get("capacity").is_some())
                .unwrap_or_else(|| panic!("{plan}: no capacity search"));
            assert!(summary["capacity"]["steps"].as_array().unwrap().len() >= 2);
            assert!(page.contains("latency against the rate carried"), "{plan}");
        }
        for r in records {
            assert_ne!(r["status"], "failed", "{plan}: {r}");
            if plan == "cpu-trace.toml" && r["status"] == "ok" {
                let stamps = r["metrics"][0]["timestamps"].as_array().unwrap();
                assert!((1..=3).contains(&stamps.len()), "2 s at 1 s: {stamps:?}");
            }
        }
        // One chart per sweep, titled `ID [PHASE]: METRIC vs PARAM`; no
        // sweep, no heading.
        let sweeps: usize = page.split("<h2>Sweeps (").nth(1).map_or(0, |t| {
            t.split(')')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a count in the sweeps heading")
        });
        let sweep_charts = page
            .split(r#"class="chart""#)
            .skip(1)
            .filter(|svg| {
                let t = &svg[svg.find("<title>").unwrap() + 7..];
                t[..t.find("</title>").unwrap()].contains(" vs ")
            })
            .count();
        assert_eq!(sweep_charts, sweeps, "{plan}: one chart per sweep");
        assert!(
            sweeps >= min_charts,
            "{plan}: {sweeps} sweep charts, expected at least {min_charts}"
        );
        if let Some(b) = browser {
            let ink = common::screenshot(b, &out, &dir.path().join(format!("{plan}.png")), 2400);
            assert!(
                ink.inked > 0.01,
                "{plan}: the page renders (nearly) blank: {ink:?}"
            );
            if sweeps > 0 {
                assert!(ink.coloured > 0.0001, "{plan}: no chart colour: {ink:?}");
            }
        }
    }
    // Nothing left behind by the disk phases.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn plan_file_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let unknown_key = write(
        "key.toml",
        "[[phase]]\nname = \"a\"\nselect = [\"os.syscall\"]\nrnus = 3\n",
    );
    assert_usage_error(&["run", "-f", &unknown_key], "key.toml:4");
    let unknown_param = write(
        "param.toml",
        "[[phase]]\nname = \"a\"\nselect = [\"os.syscall\"]\n\n[phase.params]\ncalll = \"getppid\"\n",
    );
    let e = assert_usage_error(&["run", "-f", &unknown_param], "param.toml:6");
    assert!(e.contains("calll"), "{e}");
    let bad_value = write(
        "value.toml",
        "[[phase]]\nname = \"a\"\nselect = [\"os.syscall\"]\nparams = { call = \"fork\" }\n",
    );
    assert_usage_error(&["run", "-f", &bad_value], "value.toml:4");
    let bad_duration = write(
        "dur.toml",
        "[[phase]]\nname = \"a\"\nselect = [\"os.syscall\"]\nduration = \"soon\"\n",
    );
    assert_usage_error(&["run", "-f", &bad_duration], "dur.toml:4");
    assert_usage_error(&["run", "-f", &bad_value, "os"], "no selectors");
    assert_usage_error(
        &["run", "-f", "/nonexistent/plan.toml"],
        "/nonexistent/plan.toml",
    );
    // A command-line parameter no phase takes names its flag.
    assert_usage_error(
        &["run", "-f", &plan_path("os.toml"), "--block", "4K"],
        "--block: no phase of the plan runs a benchmark that takes `block`",
    );
}

/// The break-even example of docs/breakeven.md: its numbers come back
/// from the committed reports, and a report without a needed record is an
/// error naming the file and what was needed.
#[test]
fn breakeven_reproduces_the_documented_example_and_names_missing_inputs() {
    let doc = |f: &str| format!("{}/../docs/breakeven/{f}", env!("CARGO_MANIFEST_DIR"));
    let (local, remote, net) = (doc("local.json"), doc("remote.json"), doc("net.json"));
    let args = [
        "breakeven",
        "--local",
        &local,
        "--remote",
        &remote,
        "--net",
        &net,
        "--events",
        "100000",
        "--bytes",
        "1G",
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let documented = std::fs::read_to_string(format!(
        "{}/../docs/breakeven.md",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let answer = out.lines().find(|l| l.starts_with("break-even:")).unwrap();
    assert!(documented.contains(answer), "the doc shows: {answer}");
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let o = run(&json_args);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = v["n_bytes"].as_f64().unwrap();
    let net_bps = v["inputs"][4]["value"].as_f64().unwrap();
    let gap = v["local_s"].as_f64().unwrap() - v["remote_fixed_s"].as_f64().unwrap();
    assert!(
        (n - gap * net_bps).abs() <= 1.0,
        "n* = (local − remote) × net"
    );
    // The net report has no cpu.prime record: named, exit 2.
    assert_usage_error(
        &[
            "breakeven",
            "--local",
            &net,
            "--remote",
            &remote,
            "--net",
            &net,
            "--events",
            "1",
            "--bytes",
            "1",
        ],
        "net.json: no ok `cpu.prime` record (needed for the local CPU)",
    );
}

#[test]
fn compare_judges_a_new_run_against_a_history_of_baselines() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("history");
    std::fs::create_dir(&hist).unwrap();
    let mut paths = Vec::new();
    for i in 0..3 {
        run_json(
            &["os.syscall", "--rounds", "3"],
            &hist,
            &format!("r{i}.json"),
        );
        paths.push(
            hist.join(format!("r{i}.json"))
                .to_str()
                .unwrap()
                .to_string(),
        );
    }
    let new = run_json(&["os.syscall", "--rounds", "3"], dir.path(), "new.json");
    let new_p = dir.path().join("new.json").to_str().unwrap().to_string();
    // BASE... NEW: the history's runs are named and counted.
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(paths.iter().map(String::as_str));
    args.push(&new_p);
    let o = run(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("history: 3 baseline runs") && out.contains("(3 runs)"),
        "{out}"
    );
    // The same through --baseline-dir, as JSON.
    let o = run(&[
        "compare",
        "--baseline-dir",
        hist.to_str().unwrap(),
        &new_p,
        "--format",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["baselines"].as_array().unwrap().len(), 3, "{j}");
    assert_eq!(j["metrics"][0]["history_runs"], 3, "{j}");
    assert_eq!(j["rule"], "band");
    // Every sample worse by 3× the history's whole spread (max/min of all
    // its samples) to the 12th power: the prediction of one more run from
    // 3 runs has 2 degrees of freedom (a t quantile near 10 at the job's
    // level), and the spread of their medians is at most the log of that
    // range, so this is a regression, exit 1, however noisy this (debug,
    // possibly busy) machine was.
    let mut all: Vec<f64> = Vec::new();
    for p in &paths {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        for s in r["records"][0]["metrics"][0]["samples"].as_array().unwrap() {
            all.push(s.as_f64().unwrap());
        }
    }
    let spread =
        all.iter().cloned().fold(f64::MIN, f64::max) / all.iter().cloned().fold(f64::MAX, f64::min);
    let f = 3.0 * spread.powi(12);
    let mut worse = new.clone();
    for m in worse["records"][0]["metrics"].as_array_mut().unwrap() {
        let g = if m["direction"] == "lower" {
            f
        } else {
            1.0 / f
        };
        for s in m["samples"].as_array_mut().unwrap() {
            *s = serde_json::json!(s.as_f64().unwrap() * g);
        }
    }
    let worse_p = write(dir.path(), "worse.json", &worse);
    let o = run(&[
        "compare",
        "--baseline-dir",
        hist.to_str().unwrap(),
        &worse_p,
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // Bad input: an empty history, a history file of another major.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_usage_error(
        &["compare", "--baseline-dir", empty.to_str().unwrap(), &new_p],
        "no baseline report",
    );
    let glob = format!("{}/*.json", empty.display());
    assert_usage_error(&["compare", &glob, &new_p], "no file matches");
    let mut future = new.clone();
    future["schema_version"] = serde_json::json!("2.0");
    let future_p = write(dir.path(), "future.json", &future);
    assert_usage_error(&["compare", &paths[0], &future_p, &new_p], "future.json");
    assert_usage_error(&["compare", &new_p], "a baseline and a new report");
}

#[test]
fn compare_interleave_runs_two_builds_alternately_and_judges_the_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let me = env!("CARGO_BIN_EXE_benchsuite");
    let mut args = vec![
        "compare",
        "--interleave",
        me,
        me,
        "--rounds",
        "3",
        "--interleave-dir",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--",
        "os.syscall",
    ];
    args.extend_from_slice(FAST);
    let o = run(&args);
    // Two copies of one build: never a failure; passed, or undecided where
    // three pairs of this (debug, possibly busy) build cannot say.
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["metrics"][0]["between_source"], "paired", "{j}");
    for side in ["base", "new"] {
        let r =
            std::fs::read_to_string(dir.path().join(format!("interleave-{side}.json"))).unwrap();
        let r: serde_json::Value = serde_json::from_str(&r).unwrap();
        assert_valid_report(&r);
        assert_eq!(
            r["records"][0]["metrics"][0]["rounds"],
            serde_json::json!([5, 5, 5])
        );
    }
    // A binary that does not run, or prints no report: exit 2, saying so.
    assert_usage_error(
        &[
            "compare",
            "--interleave",
            "/nonexistent/benchsuite",
            me,
            "--",
            "os.call",
        ],
        "cannot run it",
    );
    let e = assert_usage_error(
        &["compare", "--interleave", "/bin/false", me, "--", "os.call"],
        "printed no report",
    );
    assert!(e.contains("/bin/false"), "{e}");
    assert_usage_error(
        &[
            "compare",
            "--interleave",
            me,
            me,
            "--",
            "os.call",
            "-o",
            "x.json",
        ],
        "sets each run's -o",
    );
}

#[test]
fn run_only_runs_just_the_named_records() {
    let dir = tempfile::tempdir().unwrap();
    let j = run_json(
        &[
            "os.call",
            "--param",
            "args=0,1,2",
            "--only",
            "os.call args=1",
        ],
        dir.path(),
        "only.json",
    );
    let records = j["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{j}");
    assert_eq!(records[0]["params"]["args"], 1);
    let mut args = vec![
        "run",
        "os.call",
        "--param",
        "args=0,1",
        "--only",
        "os.call args=7",
    ];
    args.extend_from_slice(FAST);
    let e = assert_usage_error(&args, "--only os.call args=7");
    assert!(e.contains("no record of this run"), "{e}");
}

#[test]
fn compare_confirm_measures_the_undecided_records_of_both_builds_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let me = env!("CARGO_BIN_EXE_benchsuite");
    let base = run_json(&["os.call", "--param", "args=0,1"], dir.path(), "base.json");
    let base_p = dir.path().join("base.json").to_str().unwrap().to_string();
    // One baseline: the prior noise between runs (os: 5%) leaves every
    // metric undecided, so the pairs decide; two copies of one build.
    let mut args = vec![
        "compare",
        &base_p,
        &base_p,
        "--confirm",
        me,
        me,
        "--budget",
        "5",
        "--format",
        "json",
        "--",
        "os.call",
        "--param",
        "args=0,1",
    ];
    args.extend_from_slice(FAST);
    let o = run(&args);
    let err = stderr(&o);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &j["confirmation"];
    assert_eq!(c["pairs"], 5, "{j}");
    assert_eq!(c["looks"], serde_json::json!([5]), "{j}");
    assert_eq!(c["records"].as_array().unwrap().len(), 2, "{j}");
    let gated: Vec<&serde_json::Value> = j["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["gated"] == true)
        .collect();
    assert!(!gated.is_empty());
    for m in gated {
        assert_eq!(m["stage"], "confirm", "{m}");
        assert_eq!(m["pairs"], 5, "{m}");
        assert_eq!(m["between_source"], "paired", "{m}");
        assert_ne!(m["verdict"], "regressed", "{m}");
    }
    assert!(err.contains("confirm round 5/5: new"), "{err}");
    assert_eq!(
        j["outcome"],
        if o.status.code() == Some(0) {
            "passed"
        } else {
            "undecided"
        }
    );

    // The builds ran on another testbed than the new report: the screen's
    // verdicts stand, and the confirmation says why.
    let mut elsewhere = base.clone();
    elsewhere["host"]["cpu"]["model"] = serde_json::json!("Another CPU 9000");
    let elsewhere_p = write(dir.path(), "elsewhere.json", &elsewhere);
    let mut args = vec![
        "compare",
        &base_p,
        &elsewhere_p,
        "--confirm",
        me,
        "--format",
        "json",
        "--",
        "os.call",
        "--param",
        "args=0,1",
    ];
    args.extend_from_slice(FAST);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let note = j["confirmation"]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("another testbed") && note.contains("Another CPU 9000"),
        "{j}"
    );
    assert_eq!(j["confirmation"]["pairs"], 1, "{j}");

    // Bad input: a build that prints no report, a budget of 0 or none.
    let e = assert_usage_error(
        &[
            "compare",
            &base_p,
            &base_p,
            "--confirm",
            "/bin/false",
            "--",
            "os.call",
        ],
        "printed no report",
    );
    assert!(e.contains("/bin/false"), "{e}");
    assert_usage_error(
        &[
            "compare",
            &base_p,
            &base_p,
            "--confirm",
            me,
            "--budget",
            "0",
        ],
        "--budget 0",
    );
    assert_usage_error(
        &[
            "compare",
            &base_p,
            &base_p,
            "--confirm",
            me,
            "--budget",
            "x",
        ],
        "--budget",
    );
    assert_usage_error(&["compare", &base_p, &base_p, "--budget", "9"], "--confirm");
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[test]
fn compare_o_writes_into_a_fifo_and_through_a_link_and_replaces_neither() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tempfile::tempdir().unwrap();
    let report = run_json(&["os.syscall", "--runs", "3"], dir.path(), "base.json");
    // A threshold no self-comparison can miss, on a busy machine too.
    let threshold = self_threshold(&report);
    let base = dir.path().join("base.json");
    let base = base.to_str().unwrap();
    let kind = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();

    // A FIFO: its reader gets the comparison, and it stays a FIFO.
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || {
        // Opening waits for the writer; a FIFO replaced by a file before
        // this opens it gives the file's bytes, and the check below fails.
        let got = std::fs::read(&reader).unwrap_or_default();
        let _ = tx.send(got);
    });
    let o = run(&[
        "compare",
        base,
        base,
        "--between-run-cv",
        "0%",
        "--threshold",
        &threshold,
        "--format",
        "json",
        "-o",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        kind(&fifo).is_fifo(),
        "-o replaced the FIFO: {:?}",
        kind(&fifo)
    );
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the FIFO's reader got nothing");
    let v: serde_json::Value = serde_json::from_slice(&got).unwrap();
    assert!(v.is_object(), "{v}");

    // A link to a file: the link stays, its target gets the comparison.
    let target = dir.path().join("target.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    let o = run(&[
        "compare",
        base,
        base,
        "--between-run-cv",
        "0%",
        "--threshold",
        &threshold,
        "--format",
        "json",
        "-o",
        link.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        kind(&link).is_symlink(),
        "-o replaced the link: {:?}",
        kind(&link)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert!(v.is_object(), "{v}");

    // A link to nothing: refused, naming it; nothing is created.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink("missing.json", &dangling).unwrap();
    let err = assert_usage_error(
        &["compare", base, base, "-o", dangling.to_str().unwrap()],
        dangling.to_str().unwrap(),
    );
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("missing.json").exists());
    assert!(kind(&dangling).is_symlink());
}

/// `--param SELECTOR:NAME=VALUES` sweeps the benchmarks the selector names
/// only: `mode` means one thing to os.process_create and another to
/// os.context_switch.
#[test]
fn a_scoped_param_sweeps_only_the_benchmarks_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_json(
        &[
            "os.process_create",
            "os.context_switch",
            "--param",
            "os.context_switch:mode=thread,process",
        ],
        dir.path(),
        "scoped.json",
    );
    let modes = |id: &str| -> Vec<String> {
        r["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["id"] == id)
            .map(|x| x["params"]["mode"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(modes("os.context_switch"), ["thread", "process"]);
    assert_eq!(modes("os.process_create"), ["fork_exit"]);
    // Unscoped, the value must suit every benchmark that declares `mode`.
    assert_usage_error(
        &[
            "run",
            "os.process_create",
            "os.context_switch",
            "--param",
            "mode=thread",
        ],
        "--param mode",
    );
    // A scope whose benchmarks lack the parameter names the scoped key and
    // lists what those benchmarks take.
    let e = assert_usage_error(
        &[
            "run",
            "os.call",
            "os.syscall",
            "--param",
            "os.call:call=getppid",
        ],
        "--param os.call:call",
    );
    assert!(e.contains("args") && !e.contains("getppid|"), "{e}");
}
