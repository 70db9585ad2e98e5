//! Fleets end to end: `run` under a (simulated) launcher with
//! `--output-dir`, network benchmarks between ranks (`--net-pairs`, the
//! ranks being processes started together on loopback), and `merge`
//! finding the planted slow host.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

mod common;
use common::{benchsuite as bin, records};

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
    assert!(r["cluster"]["job"].is_null(), "{}", r["cluster"]);

    // ... with --job-id (its controller-uid): DIR/<id>/, cluster.job.
    let o = run(
        &args(&fast(&[
            "--world-size",
            "4",
            "--job-id",
            "5c1a-77/x",
            "--output-dir",
            out_s,
        ])),
        &[("JOB_COMPLETION_INDEX", "3")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = the_only_file(&out.join("5c1a-77_x"));
    assert!(file.to_str().unwrap().ends_with("-r3.json"), "{file:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(r["cluster"]["job"], "5c1a-77/x");
    // The launcher's own id, given again, agrees.
    let o = run(
        &args(&fast(&[
            "--per-task",
            "--job-id",
            "4242",
            "--format",
            "json",
        ])),
        SLURM_RANK1_LOCAL1,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["cluster"]["job"], "4242");
    // Without a launcher it is ignored, saying so.
    let o = run(&args(&fast(&["--job-id", "abc", "--format", "json"])), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: --job-id is ignored: no launcher variable"),
        "{}",
        stderr(&o)
    );
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

/// A rank that failed before the barrier: [`assert_error`]'s one line,
/// then the line saying it stays until the others have seen its failure.
fn assert_failed_rank(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.trim_end().lines().collect();
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(needle),
        "should name {needle} first: {err}"
    );
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[1].contains(
            "staying until the other ranks reach the network barrier and see its failure marker"
        ),
        "{err}"
    );
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
    // Network pairs without a launcher, without --output-dir, without a
    // net benchmark.
    let net: Vec<String> = NET_FAST.iter().map(|s| s.to_string()).collect();
    let o = run(
        &args(&[net.clone(), vec!["--net-pairs".into(), "pairwise".into()]].concat()),
        &[],
    );
    assert_error(
        &o,
        "--net-pairs pairwise: needs a launcher's rank and world size",
    );
    let two = [("RANK", "0"), ("WORLD_SIZE", "2")];
    let o = run(
        &args(&[net.clone(), vec!["--net-pairs".into(), "fan-in".into()]].concat()),
        &two,
    );
    assert_error(&o, "--net-pairs fan-in: needs --output-dir DIR");
    let out = tmp.path().join("pairs");
    let o = run(
        &args(&fast(&[
            "--net-pairs",
            "pairwise",
            "--output-dir",
            out.to_str().unwrap(),
        ])),
        &two,
    );
    assert_error(&o, "--net-pairs pairwise: no net benchmark is selected");
    // A --job-id that disagrees with the launcher's, or is empty.
    let o = run(&args(&fast(&["--job-id", "99"])), SLURM_RANK1_LOCAL1);
    assert_error(&o, "--job-id 99 disagrees with the launcher's job id 4242");
    let o = run(
        &args(&fast(&["--job-id", " ", "--world-size", "2"])),
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert_error(&o, "--job-id ``: give 1 to 128 printable characters");
    let o = run(&args(&fast(&["--rendezvous-timeout", "soon"])), &[]);
    assert_error(&o, "invalid value `soon` for --rendezvous-timeout");
    // A --net-bind the other ranks cannot connect to.
    for ip in ["0.0.0.0", "::", "224.0.0.1"] {
        let o = run(
            &args(&[net.clone(), vec!["--net-bind".into(), ip.into()]].concat()),
            &two,
        );
        assert_error(
            &o,
            &format!("--net-bind {ip}: give the address of one interface"),
        );
    }
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

/// A quick network run: TCP throughput and connection setup, then
/// `os.syscall` (which runs first: net benchmarks go last when paired).
const NET_FAST: &[&str] = &[
    "run",
    "net.tcp_throughput",
    "net.connect",
    "os.syscall",
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

/// Starts `world` ranks at once (RANK, WORLD_SIZE and a job id of their
/// own), each `NET_FAST` plus `extra` into `out`, on loopback
/// (`--net-bind 127.0.0.1`); waits for all (killed past 120 s).
fn launch(world: usize, job: &str, out: &Path, extra: &[&str]) -> Vec<Output> {
    launch_local(world, job, out, extra, &[])
}

/// [`launch`], rank r with LOCAL_RANK `local[r]` where given.
fn launch_local(
    world: usize,
    job: &str,
    out: &Path,
    extra: &[&str],
    local: &[&str],
) -> Vec<Output> {
    let world_s = world.to_string();
    let children: Vec<_> = (0..world)
        .map(|r| {
            let rank = r.to_string();
            let mut env = vec![
                ("RANK", rank.as_str()),
                ("WORLD_SIZE", &world_s),
                ("TORCHELASTIC_RUN_ID", job),
            ];
            if let Some(l) = local.get(r) {
                env.push(("LOCAL_RANK", l));
            }
            bin(&env)
                .args(NET_FAST)
                .args([
                    "--output-dir",
                    out.to_str().unwrap(),
                    "--net-bind",
                    "127.0.0.1",
                ])
                .args(extra)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the binary starts")
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    children
        .into_iter()
        .map(|mut c| {
            while c.try_wait().unwrap().is_none() {
                if std::time::Instant::now() > deadline {
                    let _ = c.kill();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            c.wait_with_output().unwrap()
        })
        .collect()
}

/// Rank `rank`'s report in DIR/JOB.
fn rank_report(out: &Path, job: &str, rank: usize) -> Value {
    let r = common::report_of_rank(&out.join(job), rank);
    assert_valid_report(&r);
    r
}

#[test]
fn two_ranks_measure_each_other_pairwise_without_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // `auto`: a launcher, a world of 2, --output-dir and net selected.
    let outs = launch(2, "pairs-test", &out, &[]);
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    for rank in 0..2 {
        let other = 1 - rank;
        let r = rank_report(&out, "pairs-test", rank);
        let ids: Vec<&str> = r["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["os.syscall", "net.tcp_throughput", "net.connect"],
            "net goes last"
        );
        assert_eq!(
            r["config"]["selectors"],
            json!(["net.tcp_throughput", "net.connect", "os.syscall"]),
            "the selectors as given"
        );
        for rec in records(&r, "net.") {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
            let notes = rec["notes"].to_string();
            assert!(
                notes.contains(&format!(
                    "cross-host (--net-pairs pairwise): measured against the server of rank {other} (host "
                )),
                "rank {rank}: {notes}"
            );
            assert!(
                notes.contains(&format!("round {} of 2", other + 1)),
                "{notes}"
            );
        }
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert_eq!(p["mode"], "pairwise", "{p}");
        assert_eq!(p["rank"], rank);
        assert_eq!(p["measuring_ranks"], json!([0, 1]));
        assert_eq!(p["measured_against"]["rank"], other, "{p}");
        assert_eq!(p["served"][0]["rank"], other, "{p}");
        let addr = p["measured_against"]["address"].as_str().unwrap();
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        assert_eq!(
            r["host"]["extra"]["net"]["server"], addr,
            "{}",
            r["host"]["extra"]["net"]
        );
        assert!(
            !r.to_string().contains("stand-in"),
            "no stand-in token or peer"
        );
    }
    // The token files are gone; the reports merge as two hosts.
    let rdv = out.join("pairs-test/.rendezvous/run");
    let left: Vec<String> = std::fs::read_dir(&rdv)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|f| !f.ends_with(".token")), "{left:?}");
    assert!(left.contains(&"r0.json".to_string()), "{left:?}");
    let files: Vec<String> = std::fs::read_dir(out.join("pairs-test"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let fleet = tmp.path().join("fleet.json");
    let mut a = vec!["merge".to_string()];
    a.extend(files);
    a.extend(["-o".into(), fleet.to_str().unwrap().into()]);
    let o = run(&args(&a), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn fan_in_three_ranks_each_client_its_own_result() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let outs = launch(3, "fan-test", &out, &["--net-pairs", "fan-in"]);
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    // Rank 0 served: its net records are skipped, saying so.
    let r0 = rank_report(&out, "fan-test", 0);
    assert_eq!(records(&r0, "net.").len(), 2, "{r0}");
    for rec in records(&r0, "net.") {
        assert_eq!(rec["status"], "skipped", "{rec}");
        assert!(
            rec["reason"]
                .as_str()
                .unwrap()
                .contains("served the fan-in (2 clients at once)"),
            "{rec}"
        );
    }
    assert_eq!(records(&r0, "os.")[0]["status"], "ok");
    let served: Vec<u64> = r0["host"]["extra"]["net"]["pairing"]["served"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(served, [1, 2]);
    for rank in 1..3 {
        let r = rank_report(&out, "fan-test", rank);
        let net = records(&r, "net.");
        assert_eq!(net.len(), 2);
        for rec in net {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
            assert!(rec["notes"].to_string().contains(
                "cross-host (--net-pairs fan-in): one of 2 clients measuring the server of rank 0 (host "
            ), "{rec}");
        }
        assert_eq!(
            r["host"]["extra"]["net"]["pairing"]["measured_against"]["rank"],
            0
        );
    }
}

#[test]
fn idle_ranks_say_so_and_the_measuring_ones_pair_up() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Rank 1 shares rank 0's node (local rank 1): idle; 0 and 2 pair.
    let outs = launch_local(3, "idle-test", &out, &[], &["0", "1", "0"]);
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert!(
        stderr(&outs[1]).contains("idle on purpose"),
        "{}",
        stderr(&outs[1])
    );
    for (rank, other) in [(0, 2), (2, 0)] {
        let r = rank_report(&out, "idle-test", rank);
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert_eq!(p["measuring_ranks"], json!([0, 2]), "{p}");
        assert_eq!(p["measured_against"]["rank"], other, "{p}");
        assert_eq!(records(&r, "net.").len(), 2, "rank {rank}");
        for rec in records(&r, "net.") {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
        }
    }
    // The idle rank stayed for the barrier, then left its file final: it
    // lists the nonces of the ranks it met.
    let idle: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("idle-test/.rendezvous/run/r1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(idle["role"], "idle", "{idle}");
    assert_eq!(idle["met"].as_object().map(|m| m.len()), Some(3), "{idle}");
}

#[test]
fn a_rank_that_fails_or_never_comes_does_not_hang_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let net: Vec<String> = NET_FAST.iter().map(|s| s.to_string()).collect();
    let env = |rank: &'static str| {
        [
            ("RANK", rank),
            ("WORLD_SIZE", "2"),
            ("TORCHELASTIC_RUN_ID", "fail"),
        ]
    };
    let env_plan = |rank: &'static str| {
        [
            ("RANK", rank),
            ("WORLD_SIZE", "2"),
            ("TORCHELASTIC_RUN_ID", "plan-fail"),
        ]
    };
    // Rank 1 fails before measuring (its -o cannot be created): rank 0
    // learns it from rank 1's failure file, long before its 60 s wait.
    let started = std::time::Instant::now();
    let rank0 = bin(&env("0"))
        .args(&net)
        .args([
            "--output-dir",
            out_s,
            "--net-bind",
            "127.0.0.1",
            "--rendezvous-timeout",
            "60s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = run(
        &[
            &args(&net)[..],
            &["--output-dir", out_s, "-o", "/nonexistent-dir/x.json"],
        ]
        .concat(),
        &env("1"),
    );
    assert_failed_rank(&b, "-o /nonexistent-dir/x.json");
    let a = rank0.wait_with_output().unwrap();
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "waited the timeout out: {}",
        stderr(&a)
    );
    let r = rank_report(&out, "fail", 0);
    assert_eq!(records(&r, "os.")[0]["status"], "ok");
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(why.contains("--net-pairs pairwise: rank 1 (host "), "{why}");
        assert!(
            why.contains("failed: it ended before its network phase"),
            "{why}"
        );
    }
    // Rank 1 fails while planning (a bad parameter value), before its
    // other benchmarks: its failure marker is there all the same.
    let started = std::time::Instant::now();
    let rank0 = bin(&env_plan("0"))
        .args(&net)
        .args([
            "--output-dir",
            out_s,
            "--net-bind",
            "127.0.0.1",
            "--rendezvous-timeout",
            "60s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = run(
        &[
            &args(&net)[..],
            &[
                "net.udp_throughput",
                "--param",
                "rate=fast",
                "--output-dir",
                out_s,
            ],
        ]
        .concat(),
        &env_plan("1"),
    );
    assert_failed_rank(&b, "--param rate");
    let a = rank0.wait_with_output().unwrap();
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "waited the timeout out: {}",
        stderr(&a)
    );
    let r = rank_report(&out, "plan-fail", 0);
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(why.contains("rank 1 (host "), "{why}");
    }
    // Rank 1 fails before rank 0 even starts (a late rank 0, which then
    // spends 8 s on its other benchmarks): rank 1's marker, written before
    // rank 0 began, counts only once rank 0 has seen rank 1's heartbeat of
    // this run (it could be an earlier run's), so rank 1 keeps beating
    // until rank 0 has reached the barrier and seen it.
    let (b, r) = late_rank_0(
        &out,
        "late",
        &["--net-bind", "127.0.0.1", "-o", "/nonexistent-dir/x.json"],
        &["--duration", "8s"],
    );
    assert_failed_rank(&b, "-o /nonexistent-dir/x.json");
    for rec in records(&r, "net.") {
        let why = rec["reason"].as_str().unwrap();
        assert!(why.contains("rank 1 (host "), "{why}");
    }
    // The same where rank 1 fails in its net phase, before the barrier
    // (its server cannot bind a documentation address, not this host's).
    let (b, r) = late_rank_0(&out, "late-server", &["--net-bind", "192.0.2.1"], &[]);
    assert!(
        stderr(&b).contains("cannot start this rank's server on 192.0.2.1")
            && stderr(&b).contains("staying until the other ranks reach the network barrier"),
        "{}",
        stderr(&b)
    );
    for rec in records(&r, "net.") {
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("rank 1 (host ") && why.contains("cannot start this rank's server"),
            "{why}"
        );
    }
    // Rank 1 never comes: rank 0 gives up after --rendezvous-timeout,
    // naming the rank and the file it waited for.
    let o = run(
        &[
            &args(&net)[..],
            &[
                "--output-dir",
                out_s,
                "--net-bind",
                "127.0.0.1",
                "--rendezvous-timeout",
                "1s",
            ],
        ]
        .concat(),
        &[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("TORCHELASTIC_RUN_ID", "alone"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("3 records: 1 ok, 0 skipped, 2 failed"),
        "{}",
        stderr(&o)
    );
    let r = rank_report(&out, "alone", 0);
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("waiting for rank 1 to reach the network phase")
                && why.contains("r1.json"),
            "{why}"
        );
    }
}

/// Rank 1 of job `job` (`NET_FAST` and `rank1`, into `out`) fails before
/// the barrier; rank 0 (`NET_FAST`, `--net-bind 127.0.0.1` and `rank0`)
/// starts 1.5 s after rank 1's failure marker appeared, and must learn of
/// the failure rather than wait rank 1's 60 s `--rendezvous-timeout` out.
/// Rank 1's output, and rank 0's report (its net records failed).
fn late_rank_0(out: &Path, job: &str, rank1: &[&str], rank0: &[&str]) -> (Output, Value) {
    let env = |rank| {
        [
            ("RANK", rank),
            ("WORLD_SIZE", "2"),
            ("TORCHELASTIC_RUN_ID", job),
        ]
    };
    let common = [
        "--output-dir",
        out.to_str().unwrap(),
        "--rendezvous-timeout",
        "60s",
    ];
    let started = std::time::Instant::now();
    let child = bin(&env("1"))
        .args(NET_FAST)
        .args(common)
        .args(rank1)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let marker = out.join(job).join(".rendezvous/run/r1.failed");
    while !marker.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{job}: no failure marker"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let late = std::time::Instant::now();
    let a = run(
        &[NET_FAST, &common[..], &["--net-bind", "127.0.0.1"], rank0].concat(),
        &env("0"),
    );
    assert_eq!(a.status.code(), Some(0), "{job}: {}", stderr(&a));
    assert!(
        late.elapsed() < std::time::Duration::from_secs(30),
        "{job}: waited the timeout out: {}",
        stderr(&a)
    );
    let r = rank_report(out, job, 0);
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        assert_eq!(rec["status"], "failed", "{job}: {rec}");
    }
    (finish(child), r)
}

/// Starts one rank of a world of 2 (`NET_FAST` plus `extra` into `out`, on
/// loopback) in the background.
fn spawn_rank(rank: &str, job: &str, out: &Path, extra: &[&str]) -> std::process::Child {
    spawn_rank_of(rank, "2", job, out, extra)
}

/// [`spawn_rank`] in a world of `world`.
fn spawn_rank_of(
    rank: &str,
    world: &str,
    job: &str,
    out: &Path,
    extra: &[&str],
) -> std::process::Child {
    bin(&[
        ("RANK", rank),
        ("WORLD_SIZE", world),
        ("TORCHELASTIC_RUN_ID", job),
    ])
    .args(NET_FAST)
    .args([
        "--output-dir",
        out.to_str().unwrap(),
        "--net-bind",
        "127.0.0.1",
    ])
    .args(extra)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("the binary starts")
}

/// Waits for `child`, killing it past 120 s.
fn finish(mut child: std::process::Child) -> Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

#[test]
fn a_rerun_into_the_same_directory_ignores_the_earlier_runs_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // torchrun without --rdzv-id says TORCHELASTIC_RUN_ID=none: no job
    // id, so DIR/local, where every such run meets.
    for o in launch(2, "none", &out, &[]) {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert!(out.join("local").is_dir() && !out.join("none").exists());
    // The first run's files stay (r0.json, r1.json, r1.alive...), and a
    // failure marker of an earlier run of rank 1 is planted. Rank 0 of
    // the rerun reaches the barrier long before rank 1 starts (and removes
    // its own old files): neither may count.
    let rdv = out.join("local/.rendezvous/run");
    assert!(rdv.join("r1.json").is_file() && rdv.join("r1.alive").is_file());
    let old_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        - 1000;
    std::fs::write(
        rdv.join("r1.failed"),
        json!({"rank": 1, "host": "old", "nonce": "0123456789abcdef", "reason": "an earlier run", "written_at_ms": old_ms}).to_string(),
    )
    .unwrap();
    let rank0 = spawn_rank("0", "none", &out, &["--rendezvous-timeout", "60s"]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let rank1 = spawn_rank("1", "none", &out, &["--rendezvous-timeout", "60s"]);
    for (rank, o) in [finish(rank0), finish(rank1)].iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
        let r = rank_report(&out, "local", rank);
        assert_eq!(records(&r, "net.").len(), 2, "rank {rank}: {r}");
        for rec in records(&r, "net.") {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
        }
    }
}

#[test]
fn a_requeued_slurm_job_meets_in_a_directory_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // A requeued job keeps SLURM_JOB_ID, and its step ids start again.
    let children: Vec<_> = ["0", "1"]
        .into_iter()
        .map(|rank| {
            bin(&[
                ("SLURM_PROCID", rank),
                ("SLURM_NTASKS", "2"),
                ("SLURM_JOB_ID", "77"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_RESTART_COUNT", "1"),
            ])
            .args(NET_FAST)
            .args([
                "--output-dir",
                out.to_str().unwrap(),
                "--net-bind",
                "127.0.0.1",
                "--per-task",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for (rank, c) in children.into_iter().enumerate() {
        let o = finish(c);
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(&o));
        let r = rank_report(&out, "77", rank);
        assert_eq!(records(&r, "net.").len(), 2, "rank {rank}: {r}");
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert!(
            p["rendezvous"]
                .as_str()
                .unwrap()
                .ends_with("77/.rendezvous/0.restart1"),
            "{p}"
        );
    }
}

#[test]
fn a_busy_rank_is_waited_for_while_its_heartbeat_beats() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = out.join("beat/.rendezvous/run");
    std::fs::create_dir_all(&rdv).unwrap();
    // Rank 1 stands in: alive (its heartbeat changing) for 4 s, far past
    // the 1 s timeout, but never at the barrier; then it stops beating.
    let started = std::time::Instant::now();
    let rank0 = spawn_rank("0", "beat", &out, &["--rendezvous-timeout", "1s"]);
    let mut beat = 0;
    while started.elapsed() < std::time::Duration::from_secs(4) {
        beat += 1;
        let tmp_file = rdv.join(".r1.alive.test.tmp");
        std::fs::write(
            &tmp_file,
            json!({"nonce": "feedfacefeedface", "beat": beat}).to_string(),
        )
        .unwrap();
        std::fs::rename(&tmp_file, rdv.join("r1.alive")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = finish(rank0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(4),
        "gave up on a rank that was alive"
    );
    let r = rank_report(&out, "beat", 0);
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("waiting for rank 1 to reach the network phase")
                && why.contains("heartbeat r1.alive stopped"),
            "{why}"
        );
    }
}

/// Rewrites `rR.alive` of the stand-in ranks `ranks` (rank, nonce) every
/// 100 ms until `stop`.
fn beat(
    rdv: &Path,
    ranks: &[(u64, &'static str)],
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let rdv = rdv.to_path_buf();
    let ranks = ranks.to_vec();
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            n += 1;
            for (q, nonce) in &ranks {
                let tmp = rdv.join(format!(".r{q}.alive.test.tmp"));
                std::fs::write(&tmp, json!({"nonce": nonce, "beat": n}).to_string()).unwrap();
                std::fs::rename(&tmp, rdv.join(format!("r{q}.alive"))).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    })
}

/// Waits (20 s at most) for `path` to hold JSON for which `ok` holds.
fn wait_json(path: &Path, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(v) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(&ok)
        {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {} as expected",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_fan_in_client_stops_when_the_server_rank_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = out.join("fan-fail/.rendezvous/run");
    std::fs::create_dir_all(&rdv).unwrap();
    // Rank 1 is real; rank 0 (the server) and rank 2 (the other client,
    // alive but never ready) stand in.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beats = beat(
        &rdv,
        &[(0, "00000000000000a0"), (2, "00000000000000a2")],
        stop.clone(),
    );
    let started = std::time::Instant::now();
    let rank1 = spawn_rank_of(
        "1",
        "3",
        "fan-fail",
        &out,
        &["--net-pairs", "fan-in", "--rendezvous-timeout", "60s"],
    );
    let r1 = wait_json(&rdv.join("r1.json"), |v| v["schedule"].is_string());
    for (q, nonce) in [(0, "00000000000000a0"), (2, "00000000000000a2")] {
        let v = json!({
            "rank": q, "host": format!("fake{q}"), "role": "measure",
            "address": "127.0.0.1:9", "nonce": nonce, "mode": "fan-in",
            "schedule": r1["schedule"], "met": {},
        });
        std::fs::write(rdv.join(format!("r{q}-{nonce}.token")), "x").unwrap();
        std::fs::write(rdv.join(format!("r{q}.json")), v.to_string()).unwrap();
    }
    // Past the barrier, the server's rank fails.
    wait_json(&rdv.join("r1.json"), |v| {
        v["met"].as_object().is_some_and(|m| m.len() == 3)
    });
    let failed = json!({
        "rank": 0, "host": "fake0", "nonce": "00000000000000a0",
        "reason": "its server crashed",
        "written_at_ms": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64,
    });
    std::fs::write(rdv.join("r0.failed"), failed.to_string()).unwrap();
    let o = finish(rank1);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    beats.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "waited the timeout out: {}",
        stderr(&o)
    );
    let r = rank_report(&out, "fan-fail", 1);
    assert_eq!(records(&r, "net.").len(), 2, "{r}");
    for rec in records(&r, "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("rank 0 (host fake0) failed: its server crashed"),
            "{why}"
        );
    }
    // Rank 1 said so to the others, too.
    let mine = wait_json(&rdv.join("r1.failed"), |v| v["reason"].is_string());
    assert!(
        mine["reason"]
            .as_str()
            .unwrap()
            .contains("rank 0 (host fake0) failed")
    );
}

#[test]
fn ranks_given_different_net_pairs_stop_at_once_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let started = std::time::Instant::now();
    let rank0 = spawn_rank(
        "0",
        "mixed",
        &out,
        &["--net-pairs", "pairwise", "--rendezvous-timeout", "60s"],
    );
    let rank1 = spawn_rank(
        "1",
        "mixed",
        &out,
        &["--net-pairs", "fan-in", "--rendezvous-timeout", "60s"],
    );
    let outs = [finish(rank0), finish(rank1)];
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "waited the timeout out: {}",
        stderr(&outs[1])
    );
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
        let r = rank_report(&out, "mixed", rank);
        assert_eq!(records(&r, "net.").len(), 2, "rank {rank}: {r}");
        for rec in records(&r, "net.") {
            assert_eq!(rec["status"], "failed", "{rec}");
            let why = rec["reason"].as_str().unwrap();
            assert!(
                why.contains("rank 0 (host ")
                    && why.contains("rank 1 (host ")
                    && why.contains("--net-pairs pairwise")
                    && why.contains("--net-pairs fan-in")
                    && why.contains("give every rank the same command"),
                "rank {rank}: {why}"
            );
        }
    }
}

#[test]
fn auto_falls_back_to_loopback_where_pairing_cannot_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    // net.latency pinned to one CPU cannot measure another rank's server:
    // `auto` measures loopback as before, saying so; `pairwise` refuses.
    let latency = [
        "run",
        "net.latency",
        "--param",
        "cpus=same",
        "--runs",
        "3",
        "--min-sample-time",
        "1ms",
        "--warmup",
        "1ms",
        "--no-progress",
        "--output-dir",
        out_s,
    ];
    let env = [
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("TORCHELASTIC_RUN_ID", "auto"),
    ];
    let o = run(&latency, &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: net benchmarks measure each rank's own loopback"),
        "{}",
        stderr(&o)
    );
    let r = rank_report(&out, "auto", 0);
    assert_eq!(records(&r, "net.latency")[0]["status"], "ok", "{r}");
    assert!(r["host"]["extra"]["net"].get("pairing").is_none(), "{r}");
    // The error is this rank's before the barrier: it stays for the
    // others (never coming here) as long as --rendezvous-timeout at most.
    let o = run(
        &[
            &latency[..],
            &["--net-pairs", "pairwise", "--rendezvous-timeout", "1s"],
        ]
        .concat(),
        &env,
    );
    assert_failed_rank(
        &o,
        "--net-pairs pairwise: the net benchmarks measure another rank's server",
    );
    // Flags of the pairing, where nothing pairs: a note.
    let o = run(
        &args(&fast(&[
            "--net-bind",
            "127.0.0.1",
            "--rendezvous-timeout",
            "5s",
        ])),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: --net-bind and --rendezvous-timeout ignored"),
        "{}",
        stderr(&o)
    );
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p = dir.join(format!("{name}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_plan_file_under_a_launcher_pairs_its_net_phases() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("net.toml");
    // A net phase with its own parameters, and a phase mixing a net
    // benchmark with another: the other benchmarks run first, then every
    // net point between the ranks, each named after its phase.
    std::fs::write(
        &plan,
        "[[phase]]\nname = \"tcp\"\nselect = [\"net.tcp_throughput\"]\nparams = { block = \"4K,64K\" }\n\n\
         [[phase]]\nname = \"mixed\"\nselect = [\"net.connect\", \"os.syscall\"]\nruns = 4\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let plan_run = [
        "run",
        "-f",
        plan.to_str().unwrap(),
        "--min-sample-time",
        "1ms",
        "--warmup",
        "1ms",
        "--no-progress",
    ];
    let ranks: Vec<_> = ["0", "1"]
        .into_iter()
        .map(|rank| {
            bin(&[
                ("RANK", rank),
                ("WORLD_SIZE", "2"),
                ("TORCHELASTIC_RUN_ID", "plan"),
            ])
            .args(plan_run)
            .args([
                "--output-dir",
                out.to_str().unwrap(),
                "--net-bind",
                "127.0.0.1",
                "--rendezvous-timeout",
                "60s",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts")
        })
        .collect();
    let outs: Vec<Output> = ranks.into_iter().map(finish).collect();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
        assert!(
            !stderr(o).contains("loopback"),
            "rank {rank}: {}",
            stderr(o)
        );
        let other = 1 - rank;
        let r = rank_report(&out, "plan", rank);
        let got: Vec<(String, String)> = r["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["id"].as_str().unwrap_or("?").to_string(),
                    x["phase"].as_str().unwrap_or("-").to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = [
            ("os.syscall", "mixed"),
            ("net.tcp_throughput", "tcp"),
            ("net.tcp_throughput", "tcp"),
            ("net.connect", "mixed"),
        ]
        .iter()
        .map(|(b, p)| (b.to_string(), p.to_string()))
        .collect();
        assert_eq!(got, want, "rank {rank}: {r}");
        for rec in records(&r, "net.") {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
            let notes = rec["notes"].to_string();
            assert!(
                notes.contains(&format!(
                    "cross-host (--net-pairs pairwise): measured against the server of rank {other}"
                )),
                "rank {rank}: {rec}"
            );
        }
        // The phase's settings hold for its net part: 4 runs each.
        let connect = &records(&r, "net.connect")[0];
        assert_eq!(
            connect["metrics"][0]["samples"].as_array().map(Vec::len),
            Some(4),
            "{connect}"
        );
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert_eq!(p["measured_against"]["rank"], other, "{p}");
    }
    // The report's config says what the plan ran, as without pairing
    // (one process, no launcher).
    let alone = tmp.path().join("alone.json");
    let o = bin(&[])
        .args(plan_run)
        .args(["-o", alone.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let alone: Value = serde_json::from_str(&std::fs::read_to_string(&alone).unwrap()).unwrap();
    let paired = rank_report(&out, "plan", 0);
    for key in [
        "selectors",
        "params",
        "runs",
        "rounds",
        "min_sample_time_s",
        "warmup_time_s",
        "duration_s",
        "quick",
    ] {
        assert_eq!(
            paired["config"][key], alone["config"][key],
            "config.{key}: paired {} vs alone {}",
            paired["config"], alone["config"]
        );
    }
}
