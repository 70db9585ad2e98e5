//! A fleet run on a real Slurm, not a mock: the test starts munged,
//! slurmctld and two slurmd (nodes `n1` and `n2`, both on this host, each
//! with its own port and spool directory) from a generated `slurm.conf` in
//! a temporary directory, runs `srun -N2 --ntasks-per-node=1 benchsuite run
//! ... --output-dir DIR`, then `benchsuite merge`, and checks that both
//! ranks' reports carry the job's `cluster` facts and cross-host network
//! records: under the launcher the two ranks pair up by themselves
//! (`--net-pairs` defaults to `pairwise`: each serves while the other
//! measures, meeting through `DIR/JOB/.rendezvous/`), no `benchsuite
//! serve` started by hand.
//!
//! It needs Linux, root and Debian's `slurmctld`, `slurmd` and `munge`
//! packages (`.ci/run` installs them); without them it skips, saying why.
//! Every process it starts is stopped by its PID (SIGTERM, then SIGKILL)
//! and waited for, every wait has a deadline, and the temporary directory
//! is removed.
//!
//! Both nodes are this host (NodeAddr 127.0.0.1), so the ranks' servers
//! bind 127.0.0.1 (`--net-bind`): the "cross-host" traffic stays on
//! loopback, between two processes started by two slurmd.

use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The benchmarks each task runs: quick, and one of each kind the issue
/// names (an OS primitive, the sysbench-style prime count, TCP throughput
/// and a round trip to the other rank), in the order they run (the
/// network last).
const BENCHMARKS: &[&str] = &[
    "os.syscall",
    "cpu.prime",
    "net.tcp_throughput",
    "net.latency",
];

/// Launcher variables of an enclosing job (if the test itself runs under
/// Slurm, MPI...): removed from every process started here, so that
/// `srun` makes a new job on the test's own cluster.
fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("SLURM")
            || k.starts_with("OMPI_")
            || k.starts_with("PMI")
            || matches!(
                k.as_str(),
                "JOB_COMPLETION_INDEX" | "RANK" | "WORLD_SIZE" | "LOCAL_RANK" | "MPI_LOCALRANKID"
            )
        {
            cmd.env_remove(&k);
        }
    }
    cmd
}

/// A program by name on PATH or in the sbin directories (root's PATH may
/// lack them under a test harness).
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Why the test cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("not Linux".into());
    }
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next().map(str::to_string));
    if uid.as_deref() != Some("0") {
        return Some("not root (slurmd and munged run as root here; SlurmUser=root)".into());
    }
    let missing: Vec<&str> = [
        "munged",
        "slurmctld",
        "slurmd",
        "srun",
        "sinfo",
        "squeue",
        "scancel",
    ]
    .into_iter()
    .filter(|p| which(p).is_none())
    .collect();
    if !missing.is_empty() {
        return Some(format!(
            "{} not found (install Debian's slurmctld, slurmd and munge packages: apt-get install slurmctld slurmd munge)",
            missing.join(", ")
        ));
    }
    None
}

/// A process this test started: on drop, SIGTERM by its PID, up to 5 s to
/// exit, then SIGKILL, and always waited for (no zombie, no orphan).
struct Proc {
    name: String,
    child: Option<Child>,
}

impl Proc {
    fn spawn(name: &str, cmd: &mut Command, log: &Path) -> Proc {
        let out = fs::File::create(log).expect("create log file");
        let err = out.try_clone().expect("clone log file");
        let child = clean_env(cmd)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        eprintln!("started {name} (pid {})", child.id());
        Proc {
            name: name.into(),
            child: Some(child),
        }
    }

    /// Fails if the process has already exited (a daemon that died).
    fn check_alive(&mut self, log: &Path) {
        let c = self.child.as_mut().expect("running");
        if let Ok(Some(st)) = c.try_wait() {
            panic!(
                "{} exited early ({st}); its log:\n{}",
                self.name,
                fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        let pid = c.id();
        if matches!(c.try_wait(), Ok(None)) {
            // SIGTERM first, so that the daemons shut down cleanly.
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if !matches!(c.try_wait(), Ok(None)) {
                    break;
                }
                sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
        }
        let _ = c.wait();
        eprintln!("stopped {} (pid {pid})", self.name);
    }
}

/// Runs a command to completion with a deadline (killed and waited for
/// past it); returns the status (None: timed out), stdout and stderr.
fn run_for(cmd: &mut Command, limit: Duration) -> (Option<ExitStatus>, String, String) {
    let dir = tempfile::tempdir().expect("tempdir for output");
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = clean_env(cmd)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&o).unwrap())
        .stderr(fs::File::create(&e).unwrap())
        .spawn()
        .unwrap_or_else(|err| panic!("start {cmd:?}: {err}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < deadline => sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    (
        status,
        fs::read_to_string(o).unwrap_or_default(),
        fs::read_to_string(e).unwrap_or_default(),
    )
}

/// `n` TCP ports free right now (held together while chosen, so distinct),
/// below Linux's ephemeral range (32768–60999 by default): a port the
/// kernel hands out for `bind(0)` or an outgoing connection could be taken
/// by a test running beside this one between our check and slurmd's bind.
fn free_ports(n: usize) -> Vec<u16> {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64)
        ^ (u64::from(std::process::id()) << 16);
    let mut ls: Vec<TcpListener> = Vec::new();
    for _ in 0..10_000 {
        if ls.len() == n {
            break;
        }
        // xorshift: a port in 20000..32000.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let port = 20_000 + (seed % 12_000) as u16;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            ls.push(l);
        }
    }
    assert_eq!(ls.len(), n, "no {n} free ports in 20000..32000");
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// `KEY=value` from `slurmd -C`'s line.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// The running cluster: its processes (stopped in reverse order of start
/// on drop: slurmd, slurmctld, munged) and its `slurm.conf`.
struct Cluster {
    conf: PathBuf,
    log_dir: PathBuf,
    procs: Vec<Proc>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A step left by a failed run: cancelled while slurmctld and the
        // slurmd still run, so no slurmstepd (started by slurmd, not by
        // this test) outlives the cluster.
        if std::thread::panicking() {
            let _ = run_for(
                Command::new(which("scancel").unwrap())
                    .args(["--full", "--user=root"])
                    .env("SLURM_CONF", &self.conf),
                Duration::from_secs(10),
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let (st, out, _) = run_for(
                    Command::new(which("squeue").unwrap())
                        .arg("-h")
                        .env("SLURM_CONF", &self.conf),
                    Duration::from_secs(5),
                );
                if st.is_some_and(|s| s.success()) && out.trim().is_empty() {
                    break;
                }
                sleep(Duration::from_millis(200));
            }
            for entry in fs::read_dir(&self.log_dir).into_iter().flatten().flatten() {
                let text = fs::read_to_string(entry.path()).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                eprintln!("--- {} (last lines)", entry.path().display());
                for l in tail.iter().rev() {
                    eprintln!("{l}");
                }
            }
        }
        while let Some(p) = self.procs.pop() {
            drop(p);
        }
    }
}

/// Starts munged, slurmctld and slurmd for nodes n1 and n2 under `root`,
/// and waits (at most 30 s) until both nodes are idle.
fn start_cluster(root: &Path) -> Cluster {
    let munge_dir = root.join("munge");
    let log_dir = root.join("log");
    for d in [&munge_dir, &log_dir, &root.join("state")] {
        fs::create_dir_all(d).unwrap();
    }
    for n in ["n1", "n2"] {
        fs::create_dir_all(root.join("spool").join(n)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&munge_dir, fs::Permissions::from_mode(0o700)).unwrap();
    // The cluster's own munge key: 1 KiB of randomness, root-only.
    let key = munge_dir.join("munge.key");
    let mut bytes = vec![0u8; 1024];
    std::io::Read::read_exact(&mut fs::File::open("/dev/urandom").unwrap(), &mut bytes).unwrap();
    fs::File::create(&key).unwrap().write_all(&bytes).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o400)).unwrap();
    let socket = munge_dir.join("munge.socket");

    let mut cluster = Cluster {
        conf: root.join("slurm.conf"),
        log_dir: log_dir.clone(),
        procs: Vec::new(),
    };
    let munged_log = log_dir.join("munged.out");
    cluster.procs.push(Proc::spawn(
        "munged",
        Command::new(which("munged").unwrap())
            .arg("--foreground")
            .arg("--force")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!(
                "--pid-file={}",
                munge_dir.join("munged.pid").display()
            ))
            .arg(format!(
                "--seed-file={}",
                munge_dir.join("munged.seed").display()
            ))
            .arg(format!(
                "--log-file={}",
                log_dir.join("munged.log").display()
            )),
        &munged_log,
    ));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        cluster.procs[0].check_alive(&munged_log);
        assert!(Instant::now() < deadline, "munged made no socket in 10 s");
        sleep(Duration::from_millis(50));
    }

    // This machine as slurmd sees it; both nodes are this machine.
    let (st, probe, err) = run_for(
        Command::new(which("slurmd").unwrap()).arg("-C"),
        Duration::from_secs(10),
    );
    assert!(st.is_some_and(|s| s.success()), "slurmd -C failed: {err}");
    let line = probe
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .unwrap_or_else(|| panic!("slurmd -C printed no NodeName line: {probe}"));
    let cpus = field(line, "CPUs").expect("CPUs in slurmd -C");
    let mem = field(line, "RealMemory").expect("RealMemory in slurmd -C");
    let hostname = fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .split('.')
        .next()
        .unwrap()
        .to_string();
    let [ctld_port, n1_port, n2_port]: [u16; 3] = free_ports(3).try_into().unwrap();
    let r = root.display();
    let conf = format!(
        "ClusterName=benchsuite
SlurmctldHost={hostname}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={n1_port} CPUs={cpus} RealMemory={mem} State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port={n2_port} CPUs={cpus} RealMemory={mem} State=UNKNOWN
PartitionName=test Nodes=n1,n2 Default=YES MaxTime=5 State=UP
",
        socket = socket.display()
    );
    fs::write(&cluster.conf, conf).unwrap();
    eprintln!(
        "slurm.conf: {} (slurmctld :{ctld_port}, n1 :{n1_port}, n2 :{n2_port}, {cpus} CPUs, {mem} MB each)",
        cluster.conf.display()
    );

    let ctld_log = log_dir.join("slurmctld.out");
    cluster.procs.push(Proc::spawn(
        "slurmctld",
        Command::new(which("slurmctld").unwrap())
            .args(["-D", "-i", "-f"])
            .arg(&cluster.conf),
        &ctld_log,
    ));
    let mut logs = vec![munged_log, ctld_log];
    for n in ["n1", "n2"] {
        let log = log_dir.join(format!("slurmd-{n}.out"));
        cluster.procs.push(Proc::spawn(
            &format!("slurmd -N {n}"),
            Command::new(which("slurmd").unwrap())
                .args(["-D", "-N", n, "-f"])
                .arg(&cluster.conf),
            &log,
        ));
        logs.push(log);
    }

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (p, log) in cluster.procs.iter_mut().zip(&logs) {
            p.check_alive(log);
        }
        let (st, out, _) = run_for(
            Command::new(which("sinfo").unwrap())
                .args(["-h", "-N", "-o", "%N %t"])
                .env("SLURM_CONF", &cluster.conf),
            Duration::from_secs(5),
        );
        let idle = out.lines().filter(|l| l.trim().ends_with(" idle")).count();
        if st.is_some_and(|s| s.success()) && idle == 2 {
            eprintln!("sinfo: {}", out.trim().replace('\n', ", "));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the two nodes were not idle within 30 s; sinfo: {out}"
        );
        sleep(Duration::from_millis(250));
    }
    cluster
}

#[test]
fn srun_on_two_slurm_nodes_then_merge() {
    if let Some(why) = skip_reason() {
        eprintln!("skipping the real-Slurm test: {why}");
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("benchsuite-slurm.")
        .tempdir()
        .expect("tempdir");
    let tmp_path = tmp.path().to_path_buf();
    let out_dir = tmp_path.join("out");
    let fleet_path = tmp_path.join("fleet.json");
    {
        let cluster = start_cluster(&tmp_path);
        let bin = env!("CARGO_BIN_EXE_benchsuite");
        let mut srun = Command::new(which("srun").unwrap());
        srun.env("SLURM_CONF", &cluster.conf)
            .args([
                "-N2",
                "--ntasks-per-node=1",
                "--time=2",
                "--kill-on-bad-exit=1",
                "--job-name=benchsuite-test",
            ])
            .arg(format!("--chdir={}", tmp_path.display()))
            .arg(bin)
            .arg("run")
            .args(BENCHMARKS)
            .args([
                "--quick",
                "--min-sample-time",
                "1ms",
                "--warmup",
                "1ms",
                "--no-progress",
                "--net-bind",
                "127.0.0.1",
                "--output-dir",
            ])
            .arg(&out_dir);
        let (st, out, err) = run_for(&mut srun, Duration::from_secs(60));
        eprintln!("srun stdout:\n{out}\nsrun stderr:\n{err}");
        assert!(
            st.is_some_and(|s| s.success()),
            "srun -N2 benchsuite run failed or timed out (status {st:?})"
        );

        // One job directory holding both ranks' reports.
        let jobs: Vec<PathBuf> = fs::read_dir(&out_dir)
            .expect("--output-dir exists")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(jobs.len(), 1, "one job directory: {jobs:?}");
        let job_dir = &jobs[0];
        let job_id = job_dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            job_id.parse::<u64>().is_ok(),
            "the directory is the Slurm job id: {job_id}"
        );
        // The reports (the rendezvous directory `.rendezvous` beside them).
        let mut files: Vec<PathBuf> = fs::read_dir(job_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        eprintln!("reports: {job_id}/{{{}}}", names.join(", "));
        assert_eq!(files.len(), 2, "one report per rank: {names:?}");

        let mut nodes = Vec::new();
        for (rank, path) in files.iter().enumerate() {
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(
                name.ends_with(&format!("-r{rank}.json")),
                "{name}: rank {rank}'s file"
            );
            let v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let c = &v["cluster"];
            eprintln!("{name}: cluster {c}");
            assert_eq!(c["launcher"], "slurm", "{name}");
            assert_eq!(c["job"].as_str(), Some(job_id.as_str()), "{name}");
            assert_eq!(c["rank"], rank as u64, "{name}");
            assert_eq!(c["world_size"], 2, "{name}");
            assert_eq!(c["local_rank"], 0, "{name}: one task per node");
            assert!(c["step"].is_string(), "{name}: step id");
            nodes.push(c["node"].as_str().unwrap_or_default().to_string());
            let ids: Vec<&str> = v["records"]
                .as_array()
                .expect("records")
                .iter()
                .map(|r| {
                    assert_eq!(r["status"], "ok", "{name}: {r}");
                    r["id"].as_str().unwrap()
                })
                .collect();
            assert_eq!(ids, BENCHMARKS, "{name}");
        }
        nodes.sort();
        assert_eq!(nodes, ["n1", "n2"], "one rank on each node");

        // `benchsuite merge` on the job's files.
        let (st, out, err) = run_for(
            Command::new(bin)
                .arg("merge")
                .args(&files)
                .arg("-o")
                .arg(&fleet_path),
            Duration::from_secs(30),
        );
        eprintln!("benchsuite merge stdout:\n{out}\nstderr:\n{err}");
        assert!(st.is_some_and(|s| s.success()), "merge failed: {err}");
        let fleet: Value = serde_json::from_str(&fs::read_to_string(&fleet_path).unwrap())
            .expect("fleet report is JSON");
        let hosts = fleet["hosts"].as_array().expect("hosts");
        assert_eq!(hosts.len(), 2, "both ranks in the fleet report");
        let mut ranks: Vec<(u64, String)> = hosts
            .iter()
            .map(|h| {
                let c = &h["cluster"];
                assert_eq!(c["launcher"], "slurm");
                assert_eq!(c["job"].as_str(), Some(job_id.as_str()));
                assert_eq!(c["world_size"], 2);
                assert_eq!(
                    h["records"].as_array().map(Vec::len),
                    Some(BENCHMARKS.len())
                );
                // The cross-host network records: measured against the
                // other rank's server, which the pairing says.
                let rank = c["rank"].as_u64().unwrap();
                let other = 1 - rank;
                let pairing = &h["host"]["extra"]["net"]["pairing"];
                assert_eq!(pairing["mode"], "pairwise", "rank {rank}: {pairing}");
                assert_eq!(pairing["measured_against"]["rank"], other, "{pairing}");
                assert_eq!(pairing["served"][0]["rank"], other, "{pairing}");
                let net: Vec<&Value> = h["records"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["id"].as_str().unwrap().starts_with("net."))
                    .collect();
                assert_eq!(net.len(), 2, "rank {rank}");
                for r in net {
                    assert_eq!(r["status"], "ok", "rank {rank}: {r}");
                    let notes = r["notes"].to_string();
                    assert!(
                        notes.contains(&format!(
                            "cross-host (--net-pairs pairwise): measured against the server of rank {other} (host "
                        )),
                        "rank {rank}: {notes}"
                    );
                }
                (
                    c["rank"].as_u64().unwrap(),
                    c["node"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        ranks.sort();
        assert_eq!(ranks.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1]);
        // Cluster (and the daemons) stopped here, by PID.
        drop(cluster);
    }
    tmp.close().expect("remove the temporary directory");
    assert!(!tmp_path.exists(), "{} left behind", tmp_path.display());
    eprintln!(
        "real Slurm (two slurmd on this host, nodes n1 and n2): done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
