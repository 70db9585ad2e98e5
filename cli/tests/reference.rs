//! `benchsuite reference` end to end, against stand-in tools (shell
//! scripts on PATH), so it runs where no reference tool is installed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

/// `benchsuite reference cpu.prime` (small, fast) with PATH = `path`.
fn reference(path: &Path, dir: &Path) -> serde_json::Value {
    let out = dir.join("ref.json");
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .args([
            "reference",
            "cpu.prime",
            "--param",
            "max_prime=200",
            "--rounds",
            "2",
            "--runs",
            "3",
            "--min-sample-time",
            "1ms",
            "--warmup",
            "1ms",
            "--no-progress",
            "-o",
        ])
        .arg(&out)
        .env("PATH", path)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("benchsuite vs reference tools"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_valid_report(&v);
    v
}

#[test]
fn a_stand_in_sysbench_is_run_each_round_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("sysbench");
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sysbench 9.9'; exit 0; fi\n\
         echo \"args: $*\" >> \"${0%/*}/calls\"\n\
         printf 'CPU speed:\\n    events per second:  1000.50\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let v = reference(dir.path(), dir.path());
    let rec = &v["records"][0];
    assert_eq!(rec["status"], "ok");
    let r = &rec["reference"];
    assert_eq!(r["tool"], "sysbench");
    assert_eq!(r["version"], "sysbench 9.9");
    assert_eq!(
        r["command"],
        "sysbench cpu --cpu-max-prime=200 --threads=1 --time=4 run"
    );
    assert_eq!(r["rounds"], serde_json::json!([1000.5, 1000.5]));
    assert_eq!(r["median"], 1000.5);
    assert_eq!(r["unit"], "event/s");
    let ours = rec["metrics"][0]["summary"]["median"].as_f64().unwrap();
    let ratio = r["ratio"].as_f64().unwrap();
    assert!((ratio - ours / 1000.5).abs() < 1e-9 * ratio, "{ratio}");
    // Ours ran as many rounds as the tool: pooled, 3 samples each.
    assert_eq!(rec["metrics"][0]["rounds"], serde_json::json!([3, 3]));
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
    assert_eq!(calls.lines().count(), 2, "{calls}");
    assert_eq!(v["config"]["rounds"], 2);
}

#[test]
fn a_missing_tool_names_its_package() {
    let dir = tempfile::tempdir().unwrap();
    let v = reference(dir.path(), dir.path());
    let r = &v["records"][0]["reference"];
    assert_eq!(r["median"], serde_json::Value::Null);
    assert_eq!(r["ratio"], serde_json::Value::Null);
    let note = r["note"].as_str().unwrap();
    assert!(
        note.starts_with("not installed: apt install sysbench"),
        "{note}"
    );
}
