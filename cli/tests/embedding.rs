//! The ready `main` as an embedder meets it: `examples/custom_benchmark.rs`
//! (a hashing benchmark behind `benchsuite::main_with`) built the way
//! `cargo run --example` builds it, then run as its own binary: `list`,
//! `run` with a sweep, a usage error, and `compare --interleave` of two
//! builds of it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

/// Fast sampling settings (as the CLI tests use them).
const FAST: &[&str] = &[
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

/// The example's executable: `cargo build --example custom_benchmark` with
/// this test's features and profile into this test's target directory, so
/// that it reuses what `cargo test` built and only links the example.
fn example() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let features: Vec<&str> = [
            ("cli", cfg!(feature = "cli")),
            ("os", cfg!(feature = "os")),
            ("cpu", cfg!(feature = "cpu")),
            ("mem", cfg!(feature = "mem")),
            ("disk", cfg!(feature = "disk")),
            ("net", cfg!(feature = "net")),
            ("gpu", cfg!(feature = "gpu")),
            ("fleet", cfg!(feature = "fleet")),
            ("wgpu", cfg!(feature = "wgpu")),
            ("testing", cfg!(feature = "testing")),
        ]
        .into_iter()
        .filter_map(|(f, on)| on.then_some(f))
        .collect();
        // CARGO_TARGET_TMPDIR is `<target dir>/tmp`.
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["build", "--quiet", "--message-format=json"])
            .args(["-p", "benchsuite", "--example", "custom_benchmark"])
            .args(["--no-default-features", "--features", &features.join(",")])
            .arg("--target-dir")
            .arg(target_dir);
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let o = cargo.output().expect("cargo runs");
        assert!(
            o.status.success(),
            "cargo build --example custom_benchmark: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["target"]["name"] == "custom_benchmark")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the example's executable")
    })
}

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .env_remove("BENCHSUITE_TOKEN")
        .output()
        .expect("the example runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_example_runs_its_benchmark_through_the_ready_main() {
    let exe = example();
    // `list`: ours beside the built-in modules, with its parameters.
    let o = run(exe, &["list", "myapp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let list = String::from_utf8_lossy(&o.stdout);
    for needle in ["myapp.hash", "size", "algo", "fnv1a|sip", "bandwidth"] {
        assert!(list.contains(needle), "`list myapp` lacks {needle}: {list}");
    }
    let o = run(exe, &["list", "os.syscall"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // The README's sweep: one record per size, the bandwidth the headline.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hash.json");
    let mut args = vec![
        "run",
        "myapp.hash",
        "--param",
        "size=4K,64K",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(FAST);
    let o = run(exe, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = read_json(&out);
    assert_valid_report(&report);
    let records = report["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{report}");
    for (r, size) in records.iter().zip([4096, 65536]) {
        assert_eq!(r["id"], "myapp.hash");
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["params"]["size"], size, "{r}");
        assert_eq!(r["params"]["algo"], "fnv1a", "{r}");
        assert_eq!(
            r["notes"][0],
            format!("one op = one fnv1a hash of {size} bytes")
        );
        let m = &r["metrics"];
        assert_eq!(
            (&m[0]["name"], &m[0]["role"]),
            (&"bandwidth".into(), &"headline".into())
        );
        assert_eq!(
            (&m[1]["name"], &m[1]["role"]),
            (&"time_per_hash".into(), &"secondary".into())
        );
        // Above 1 MB/s even for a debug build on a busy machine; below
        // 1 TB/s, beyond any core's hashing rate.
        let bw = m[0]["summary"]["median"].as_f64().unwrap();
        assert!(bw > 1e6 && bw < 1e12, "bandwidth {bw}");
        // The two metrics are one measurement: bytes per hash.
        let t = m[1]["summary"]["median"].as_f64().unwrap();
        let implied = size as f64 / t;
        assert!(
            (implied / bw - 1.0).abs() < 0.25,
            "{size} B / {t} s = {implied} B/s vs {bw}"
        );
    }
    // The sweep is checked against the declaration, with the flag named.
    let o = run(exe, &["run", "myapp.hash", "--param", "algo=md5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("md5") && stderr(&o).contains("fnv1a"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn compare_interleave_judges_two_builds_of_the_example() {
    let exe = example();
    let dir = tempfile::tempdir().unwrap();
    // Two builds: two copies of one binary, each in a directory of its own
    // (the CI recipe's base and PR builds).
    let builds: Vec<PathBuf> = ["base", "new"]
        .iter()
        .map(|side| {
            let d = dir.path().join(side);
            std::fs::create_dir(&d).unwrap();
            let p = d.join("custom_benchmark");
            std::fs::copy(exe, &p).unwrap();
            p
        })
        .collect();
    let rounds = dir.path().join("rounds");
    std::fs::create_dir(&rounds).unwrap();
    let mut args = vec![
        "compare",
        "--interleave",
        builds[0].to_str().unwrap(),
        builds[1].to_str().unwrap(),
        "--rounds",
        "3",
        "--interleave-dir",
        rounds.to_str().unwrap(),
        "--format",
        "json",
        "--",
        "myapp.hash",
        "--param",
        "size=4K",
    ];
    args.extend_from_slice(FAST);
    let o = run(exe, &args);
    // One build twice: never a failure; passed, or undecided where three
    // pairs of a (debug, possibly busy) build cannot say.
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_ne!(j["outcome"], "failed", "{j}");
    let metric = &j["metrics"][0];
    assert_eq!(metric["id"], "myapp.hash", "{j}");
    assert_eq!(metric["metric"], "bandwidth", "{j}");
    assert_eq!(metric["between_source"], "paired", "{j}");
    for side in ["base", "new"] {
        let r = read_json(&rounds.join(format!("interleave-{side}.json")));
        assert_valid_report(&r);
        assert_eq!(r["records"][0]["id"], "myapp.hash");
        assert_eq!(
            r["records"][0]["metrics"][0]["rounds"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }
}
