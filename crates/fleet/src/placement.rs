//! Where a launched task sits (its rank, from the launcher) and where its
//! report goes (`--output-dir DIR/JOB/HOST-rRANK.json`).

use std::io;
use std::path::{Path, PathBuf};

use benchsuite_core::atomic::replace_file;
use benchsuite_core::cluster::Cluster;
use benchsuite_core::{Report, RunConfig};
use benchsuite_report::export::{self, Format};

use crate::FleetError;
use crate::launcher::detect_env;

/// `run`'s flags for launched jobs, as plain data (the CLI's
/// `--output-dir`, `--per-task`, `--no-cluster`, `--world-size`,
/// `--job-id`).
#[derive(Debug, Clone, Default)]
pub struct PlacementConfig {
    /// `--output-dir DIR`.
    pub output_dir: Option<PathBuf>,
    /// `--per-task`: every task measures, not one per node.
    pub per_task: bool,
    /// `--no-cluster`: ignore the launcher's environment.
    pub no_cluster: bool,
    /// `--world-size N`, for launchers that give none.
    pub world_size: Option<u64>,
    /// `--job-id ID`, for launchers that give none.
    pub job_id: Option<String>,
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
    pub fn new(args: &PlacementConfig, cfg: &mut RunConfig) -> Result<Placement, FleetError> {
        let mut cluster = if args.no_cluster {
            None
        } else {
            detect_env(args.world_size).map_err(|e| FleetError::Usage(e.to_string()))?
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
        *cfg = cfg.with_cluster(cluster.clone());
        let dir = match &args.output_dir {
            None => None,
            Some(root) => {
                let job = cluster
                    .as_ref()
                    .and_then(|c| c.job.as_deref())
                    .map(file_part)
                    .unwrap_or_else(|| "local".into());
                let dir = root.join(job);
                check_writable(&dir).map_err(|e| FleetError::Io {
                    what: format!("--output-dir {}: cannot write there", root.display()),
                    source: e,
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
    pub fn write(&self, report: &Report) -> Result<String, FleetError> {
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
        replace_file(&path, |w| export::write_report(Format::Json, report, w)).map_err(|e| {
            let what = format!("--output-dir {e}");
            match e.into_source() {
                Some(source) => FleetError::Io { what, source },
                None => FleetError::Usage(what),
            }
        })?;
        Ok(format!("; written to {}", path.display()))
    }
}

/// `--job-id ID`, checked: a short printable id that agrees with the
/// launcher's own (`launcher`), if it gives one.
fn checked_job_id(id: &str, launcher: Option<&str>) -> Result<String, FleetError> {
    let id = id.trim();
    if id.is_empty() || id.len() > 128 || id.chars().any(char::is_control) {
        return Err(FleetError::Usage(format!(
            "--job-id `{}`: give 1 to 128 printable characters",
            id.escape_debug()
        )));
    }
    match launcher {
        Some(l) if l != id => Err(FleetError::Usage(format!(
            "--job-id {id} disagrees with the launcher's job id {l}"
        ))),
        _ => Ok(id.to_string()),
    }
}

/// A job id or host name as a safe file-name part.
pub fn file_part(s: &str) -> String {
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
    let host = file_part(&benchsuite_core::Host::detect().hostname.unwrap_or_default());
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
