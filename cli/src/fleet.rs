//! Fleets: `run` under a launcher (`--output-dir`, `--per-task`,
//! `--no-cluster`, `--world-size`, and the network benchmarks between
//! ranks: `--net-pairs`, `--net-bind`, `--rendezvous`,
//! `--rendezvous-timeout`, see `pairing.rs`) and `benchsuite merge`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use benchsuite::cluster::{self, Cluster};
use benchsuite::export::{self, Format};
use benchsuite::fleet::Fleet;
use benchsuite::{Report, RunConfig};
use clap::Args;

use crate::app::replace_file_as;

/// `run`'s flags for launched jobs.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Write this task's JSON report to DIR/JOB/HOST-rRANK.json (JOB: the
    /// launcher's job id, or `local`; HOST: the host name; RANK: the task's
    /// rank, 0 without a launcher), atomically. On a shared file system,
    /// `benchsuite merge DIR/JOB/*.json` then gathers the fleet. The report
    /// then goes to stdout only with -o, --format or a terminal.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// Under a launcher (Slurm, MPI...), make every task measure. By
    /// default only the first task of each node (local rank 0) measures, so
    /// two tasks never compete for one node's cores or disk; the others
    /// exit 0 at once, saying so.
    #[arg(long)]
    pub per_task: bool,

    /// Ignore the launcher's environment (SLURM_*, OMPI_COMM_WORLD_*,
    /// PMI*, JOB_COMPLETION_INDEX, RANK): no `cluster` section in the
    /// report, and every task measures.
    #[arg(long, conflicts_with = "world_size")]
    pub no_cluster: bool,

    /// The number of tasks in the job, for launchers that do not put it
    /// in the environment (a Kubernetes Indexed Job: its completions).
    #[arg(long, value_name = "N")]
    pub world_size: Option<u64>,

    /// The job's id, for launchers that put none in the environment (a
    /// Kubernetes Indexed Job: pass its controller-uid from the downward
    /// API; Open MPI or PMI without PMIx; RANK without a torchrun run id).
    /// It names DIR/JOB of --output-dir (else `local`, shared by every run)
    /// and the report's cluster.job, and keeps one run's reports and
    /// rendezvous files apart from another's; --rendezvous requires one.
    /// It must agree with a job id the launcher gives.
    #[arg(long, value_name = "ID", conflicts_with = "no_cluster")]
    pub job_id: Option<String>,

    /// How network benchmarks (net.*) measure under a launcher: between
    /// ranks, with no `benchsuite serve` to start. `pairwise`: the
    /// measuring ranks pair up (i with i + N/2, a bisection), all pairs at
    /// once; the lower rank serves while the upper measures, then the other
    /// way, so every rank's report has cross-host records (with an odd
    /// count, the last rank has no partner and says so). `fan-in`: the
    /// first measuring rank serves and all the others measure it at once,
    /// each recording its own result. `off`: each rank measures its own
    /// loopback. `auto` (the default) is `pairwise` under a launcher with a
    /// world size of 2 or more, --output-dir (or --rendezvous) given and a
    /// net benchmark selected (on the command line or in a -f plan's
    /// phases; no --peer), `off` otherwise. Net benchmarks run after all
    /// others (a plan's in its phases' order, each with its phase's
    /// settings); ranks find each other through files in
    /// DIR/JOB/.rendezvous/ (DIR: --output-dir, shared by all ranks), or at
    /// the --rendezvous meeting point.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = crate::pairing::NetPairs::Auto)]
    pub net_pairs: crate::pairing::NetPairs,

    /// With --net-pairs: the address this rank's server listens on and
    /// publishes to the others. The default is the first non-loopback
    /// address of the host name, else the source address of the default
    /// route, else 127.0.0.1 (reachable from this host only). Give the
    /// address of the network to measure (e.g. the fabric, not the
    /// management LAN); not 0.0.0.0, :: or a multicast address, since the
    /// other ranks connect to it.
    #[arg(long, value_name = "ADDR")]
    pub net_bind: Option<std::net::IpAddr>,

    /// With --net-pairs: how long a rank waits for another whose
    /// heartbeat (a file in the rendezvous directory, or an entry at the
    /// --rendezvous meeting point, rewritten every second while the rank
    /// runs) does not change, before giving up and recording its network
    /// benchmarks as failed, naming that rank and its files; with
    /// --rendezvous, also how long a rank waits for the meeting point to
    /// answer. A rank still busy with its other benchmarks, or with a long
    /// net record, is alive and waited for. The default is 10m; make it
    /// longer than a host's file system can lag or stall.
    #[arg(long, value_name = "DURATION")]
    pub rendezvous_timeout: Option<String>,

    /// Network benchmarks between ranks without a shared file system: the
    /// ranks meet at HOST:PORT instead of a directory of --output-dir (a
    /// free port, like torchrun's MASTER_ADDR:MASTER_PORT but not the same
    /// port: torchrun's store listens there). Rank 0 serves the meeting point
    /// there (HOST must name rank 0's own host, e.g. `benchsuite-0.benchsuite` of
    /// a Kubernetes headless Service; not 0.0.0.0, :: or multicast) until
    /// every rank has left; the others connect, waiting up to
    /// --rendezvous-timeout for it. Every rank needs the same token
    /// (BENCHSUITE_TOKEN or --token-file; at least 16 characters, e.g.
    /// `openssl rand -hex 32`), which proves each connection and guards
    /// each rank's server, and never crosses the network; only ranks of
    /// one job (id, step, world size) meet, so a job id is required
    /// (--job-id where the launcher gives none); at most 4096 ranks. After
    /// an error, rank 0 serves on until the ranks whose heartbeats go on
    /// learnt of it (one never seen: 30 s at most). Turns --net-pairs auto
    /// into pairwise; without a net benchmark selected it is an error.
    /// Reports go where they go without it (-o, stdout, or a node-local
    /// --output-dir).
    #[arg(long, value_name = "HOST:PORT")]
    pub rendezvous: Option<String>,
}

/// `benchsuite merge`'s arguments.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The hosts' JSON reports (e.g. DIR/JOB/*.json from `run
    /// --output-dir`); a fleet report adds all its hosts.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,

    /// Write the fleet report (JSON) to FILE, atomically. The fleet view is
    /// printed to stdout either way.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Where this task sits and where its report goes.
#[derive(Debug)]
pub struct Placement {
    cluster: Option<Cluster>,
    per_task: bool,
    /// DIR/JOB, created and known writable.
    dir: Option<PathBuf>,
}

impl Placement {
    /// Reads the launcher's environment (unless `--no-cluster`) into
    /// `cfg.cluster`, and checks that `--output-dir` can be written, before
    /// anything is measured.
    pub fn new(args: &ClusterArgs, cfg: &mut RunConfig) -> Result<Placement> {
        let mut cluster = if args.no_cluster {
            None
        } else {
            cluster::detect_env(args.world_size)?
        };
        for (flag, given) in [
            ("--world-size", args.world_size.is_some()),
            ("--job-id", args.job_id.is_some()),
        ] {
            if cluster.is_none() && given {
                eprintln!(
                    "note: {flag} is ignored: no launcher variable (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, JOB_COMPLETION_INDEX, RANK) is set"
                );
            }
        }
        if let (Some(c), Some(id)) = (cluster.as_mut(), &args.job_id) {
            c.job = Some(checked_job_id(id, c.job.as_deref())?);
        }
        cfg.cluster = cluster.clone();
        let dir = match &args.output_dir {
            None => None,
            Some(root) => {
                let job = cluster
                    .as_ref()
                    .and_then(|c| c.job.as_deref())
                    .map(file_part)
                    .unwrap_or_else(|| "local".into());
                let dir = root.join(job);
                check_writable(&dir).with_context(|| {
                    format!("--output-dir {}: cannot write there", root.display())
                })?;
                Some(dir)
            }
        };
        Ok(Placement {
            cluster,
            per_task: args.per_task,
            dir,
        })
    }

    /// The launcher's task, unless `--no-cluster` (or no launcher).
    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }

    /// DIR/JOB of `--output-dir`, created and known writable.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether this task stays idle (another task of its node measures);
    /// says so on stderr.
    pub fn idle(&self) -> bool {
        let Some(c) = &self.cluster else {
            return false;
        };
        if self.per_task || c.is_node_leader() {
            return false;
        }
        eprintln!(
            "rank {} (local rank {} on node {}) is idle on purpose: one task per node measures (local rank 0), so tasks do not compete for its cores or disk; --per-task makes every task measure",
            c.rank,
            c.local_rank.unwrap_or_default(),
            c.node.as_deref().unwrap_or("?"),
        );
        true
    }

    /// Whether the report also goes to stdout: not when `--output-dir`
    /// takes it and nothing else asked for it (no `-o`, no `--format`, no
    /// terminal), so that N tasks do not print N reports into one log.
    pub fn to_stdout(&self, output_file: bool, format_given: bool, stdout_tty: bool) -> bool {
        self.dir.is_none() || output_file || format_given || stdout_tty
    }

    /// Writes the report into `--output-dir`, if given; returns what to add
    /// to the closing line.
    pub fn write(&self, report: &Report) -> Result<String> {
        let Some(dir) = &self.dir else {
            return Ok(String::new());
        };
        let host = report
            .host
            .hostname
            .as_deref()
            .or(self.cluster.as_ref().and_then(|c| c.node.as_deref()))
            .map(file_part)
            .unwrap_or_else(|| "unknown-host".into());
        let rank = self.cluster.as_ref().map_or(0, |c| c.rank);
        let path = dir.join(format!("{host}-r{rank}.json"));
        replace_file_as("--output-dir", &path, |w| {
            export::write_report(Format::Json, report, w)
        })?;
        Ok(format!("; written to {}", path.display()))
    }
}

/// `--job-id ID`, checked: a short printable id that agrees with the
/// launcher's own (`launcher`), if it gives one.
fn checked_job_id(id: &str, launcher: Option<&str>) -> Result<String> {
    let id = id.trim();
    if id.is_empty() || id.len() > 128 || id.chars().any(char::is_control) {
        return Err(anyhow!(
            "--job-id `{}`: give 1 to 128 printable characters",
            id.escape_debug()
        ));
    }
    match launcher {
        Some(l) if l != id => Err(anyhow!(
            "--job-id {id} disagrees with the launcher's job id {l}"
        )),
        _ => Ok(id.to_string()),
    }
}

/// A job id or host name as a safe file-name part.
pub(crate) fn file_part(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// Creates `dir` and a file in it (removed again). The probe's name holds
/// the host, the process and a random part: tasks on several nodes (or
/// pods, whose PIDs repeat) share `dir`, and one must never remove
/// another's probe.
fn check_writable(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let host = file_part(&benchsuite::Host::detect().hostname.unwrap_or_default());
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(
        ".benchsuite-probe.{host}.{}.{nonce:09}",
        std::process::id()
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    match std::fs::remove_file(&probe) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `benchsuite merge`: one fleet report, and the fleet view on stdout.
pub fn cmd_merge(args: &MergeArgs) -> Result<i32> {
    let mut reports = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        for r in Fleet::read_hosts(path)? {
            reports.push((path.display().to_string(), r));
        }
    }
    let fleet = Fleet::merge(reports).map_err(|e| anyhow!(e))?;
    if let Some(path) = &args.output {
        replace_file_as("-o", path, |w| {
            w.write_all(fleet.to_json().as_bytes())?;
            w.write_all(b"\n")
        })?;
    }
    let view = fleet.view();
    let mut out = io::stdout().lock();
    view.write_table(&mut out)?;
    out.flush()?;
    if let Some(path) = &args.output {
        eprintln!(
            "{} reports merged; written to {}",
            fleet.hosts.len(),
            path.display()
        );
    }
    Ok(0)
}
