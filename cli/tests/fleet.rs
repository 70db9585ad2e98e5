//! Fleets end to end: `run` under a (simulated) launcher with
//! `--output-dir`, and `merge` finding the planted slow host.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

/// Every variable a launcher sets that `run` reads: removed, so the tests
/// behave alike inside a Slurm job or an MPI run.
const LAUNCHER_VARS: &[&str] = &[
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NODEID",
    "SLURM_LOCALID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURMD_NODENAME",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMIX_RANK",
    "PMIX_NAMESPACE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "JOB_COMPLETION_INDEX",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "TORCHELASTIC_RUN_ID",
];

fn bin(env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchsuite"));
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    bin(env).args(args).output().expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const FAST: &[&str] = &[
    "run",
    "os.syscall",
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

fn fast(extra: &[&str]) -> Vec<String> {
    FAST.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

const SLURM_RANK1_LOCAL1: &[(&str, &str)] = &[
    ("SLURM_PROCID", "1"),
    ("SLURM_NTASKS", "2"),
    ("SLURM_NODEID", "0"),
    ("SLURM_LOCALID", "1"),
    ("SLURM_JOB_ID", "4242"),
    ("SLURM_STEP_ID", "0"),
    ("SLURMD_NODENAME", "node17"),
];

fn the_only_file(dir: &Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn output_dir_under_a_launcher_one_task_per_node_and_the_cluster_section() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();

    // Local rank 1: idle on purpose, exit 0, nothing written.
    let o = run(&args(&fast(&["--output-dir", out_s])), SLURM_RANK1_LOCAL1);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("idle on purpose"), "{}", stderr(&o));
    assert!(!out.join("4242").exists() || the_dir_is_empty(&out.join("4242")));

    // --per-task: it measures, into DIR/<job>/<host>-r<rank>.json.
    let o = run(
        &args(&fast(&["--output-dir", out_s, "--per-task"])),
        SLURM_RANK1_LOCAL1,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "the report goes to the directory only");
    let file = the_only_file(&out.join("4242"));
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with("-r1.json"), "{name}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_valid_report(&r);
    assert_eq!(
        r["cluster"],
        json!({"launcher": "slurm", "job": "4242", "step": "0", "rank": 1,
               "world_size": 2, "node": "node17", "local_rank": 1})
    );
    assert_eq!(
        name,
        format!("{}-r1.json", r["host"]["hostname"].as_str().unwrap())
    );

    // --no-cluster: the environment is ignored; no launcher, job `local`.
    let o = run(
        &args(&fast(&["--output-dir", out_s, "--no-cluster"])),
        SLURM_RANK1_LOCAL1,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = the_only_file(&out.join("local"));
    assert!(file.to_str().unwrap().ends_with("-r0.json"), "{file:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(r.get("cluster").is_none(), "{}", r["cluster"]);

    // A Kubernetes index with --world-size.
    let o = run(
        &args(&fast(&["--world-size", "4", "--format", "json"])),
        &[("JOB_COMPLETION_INDEX", "3")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["cluster"]["launcher"], "kubernetes");
    assert_eq!(r["cluster"]["rank"], 3);
    assert_eq!(r["cluster"]["world_size"], 4);
}

fn the_dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// Asserts exit 2 with a one-line message naming `needle`, nothing measured.
fn assert_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "should name {needle}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("records:"), "measured: {err}");
}

#[test]
fn bad_launches_exit_2_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    // A rank without a world size.
    let o = run(&args(&fast(&[])), &[("JOB_COMPLETION_INDEX", "2")]);
    assert_error(
        &o,
        "JOB_COMPLETION_INDEX is set but the world size is not: pass --world-size N",
    );
    let o = run(&args(&fast(&[])), &[("RANK", "0")]);
    assert_error(&o, "RANK is set but the world size is not");
    // An --output-dir that cannot be written (a path under a file: even
    // root cannot create it).
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let dir = file.join("out");
    let o = run(&args(&fast(&["--output-dir", dir.to_str().unwrap()])), &[]);
    assert_error(&o, &format!("--output-dir {}", dir.display()));
}

/// A report as host `name` (rank `rank`), its headline samples scaled by
/// `factor` (> 1: slower).
fn variant(base: &Value, name: &str, rank: u64, factor: f64, cpu: &str) -> Value {
    let mut r = base.clone();
    r["host"]["hostname"] = json!(name);
    r["host"]["cpu"]["model"] = json!(cpu);
    r["cluster"] = json!({"launcher": "slurm", "job": "7", "step": "0", "rank": rank,
                          "world_size": 7, "node": name, "local_rank": 0});
    for rec in r["records"].as_array_mut().unwrap() {
        for m in rec["metrics"].as_array_mut().unwrap() {
            let f = if m["direction"] == "lower" {
                factor
            } else {
                1.0 / factor
            };
            for s in m["samples"].as_array_mut().unwrap() {
                *s = json!(s.as_f64().unwrap() * f);
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

#[test]
fn merge_flags_the_planted_slow_host_and_groups_the_different_one() {
    let tmp = tempfile::tempdir().unwrap();
    let base_file = tmp.path().join("base.json");
    let o = run(
        &args(&fast(&[
            "--format",
            "json",
            "-o",
            base_file.to_str().unwrap(),
        ])),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let base: Value = serde_json::from_str(&std::fs::read_to_string(&base_file).unwrap()).unwrap();

    // Six alike hosts, node4 slow (1.5×); node6 has another CPU and is
    // slower still: different, not slow.
    let factors = [1.0, 1.01, 0.99, 1.005, 1.5, 0.995];
    let mut files = Vec::new();
    for (i, f) in factors.iter().enumerate() {
        let name = format!("node{i}");
        files.push(write(
            tmp.path(),
            &name,
            &variant(&base, &name, i as u64, *f, "Xeon"),
        ));
    }
    files.push(write(
        tmp.path(),
        "node6",
        &variant(&base, "node6", 6, 1.8, "EPYC"),
    ));
    let fleet = tmp.path().join("fleet.json");
    let mut a = vec!["merge".to_string()];
    a.extend(files.iter().cloned());
    a.extend(["-o".into(), fleet.to_str().unwrap().into()]);
    let o = run(&args(&a), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("fleet: 7 hosts in 2 groups"), "{table}");
    assert!(table.contains("group 2: cpu EPYC"), "{table}");
    let outliers: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("outlier: "))
        .collect();
    assert_eq!(outliers.len(), 1, "{table}");
    assert!(outliers[0].starts_with("outlier: node4-r4 "), "{table}");
    assert!(
        table.contains("node4-r4") && table.contains("% higher)"),
        "{table}"
    );
    let f: Value = serde_json::from_str(&std::fs::read_to_string(&fleet).unwrap()).unwrap();
    let hosts = f["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 7);
    for h in hosts {
        assert_valid_report(h);
    }
    assert_eq!(hosts[4]["cluster"]["rank"], 4);

    // A fleet report merges with more hosts (and not with its own again).
    let more = write(
        tmp.path(),
        "node7",
        &variant(&base, "node7", 7, 1.0, "Xeon"),
    );
    let fleet_s = fleet.to_str().unwrap();
    let o = run(&["merge", fleet_s, &more], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("fleet: 8 hosts in 2 groups"), "{table}");
    let o = run(&["merge", fleet_s, &files[1]], &[]);
    assert_error(&o, "host node1 rank 1 is already in");

    // The same rank twice: exit 2 naming the file.
    let mut a = vec!["merge".to_string()];
    a.extend(files.iter().cloned());
    a.push(files[2].clone());
    let o = run(&args(&a), &[]);
    assert_error(
        &o,
        &format!("{}: host node2 rank 2 is already in", files[2]),
    );

    // Another schema major; an unreadable file.
    let mut v2 = variant(&base, "node9", 9, 1.0, "Xeon");
    v2["schema_version"] = json!("2.0");
    let v2 = write(tmp.path(), "v2", &v2);
    let o = run(&["merge", &files[0], &v2], &[]);
    assert_error(&o, &v2);
    let missing = tmp.path().join("missing.json");
    let o = run(&["merge", &files[0], missing.to_str().unwrap()], &[]);
    assert_error(&o, missing.to_str().unwrap());
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p = dir.join(format!("{name}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}
