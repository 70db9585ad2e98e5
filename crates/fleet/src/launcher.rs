//! Launcher awareness: which task of a launched job this process is,
//! read from the launcher's environment (Slurm, Open MPI, PMI/PMIx,
//! torchrun, a Kubernetes Indexed Job). benchsuite never schedules
//! anything itself. The result is a [`Cluster`], which the report records.
//!
//! [`detect`] is a pure function of an environment lookup, so it is tested
//! without touching the process environment:
//!
//! ```
//! use benchsuite_core::cluster::Launcher;
//! use benchsuite_fleet::launcher::detect;
//!
//! let env = |k: &str| match k {
//!     "SLURM_PROCID" => Some("3".to_string()),
//!     "SLURM_NTASKS" => Some("4".to_string()),
//!     "SLURM_LOCALID" => Some("1".to_string()),
//!     "SLURM_JOB_ID" => Some("812".to_string()),
//!     _ => None,
//! };
//! let c = detect(env, None).unwrap().unwrap();
//! assert_eq!((c.launcher, c.rank, c.world_size), (Launcher::Slurm, 3, 4));
//! assert_eq!(c.local_rank, Some(1));
//! ```
//!
//! Launchers are tried in this order, the first whose rank variable is set
//! wins: Slurm (`SLURM_PROCID`), Open MPI (`OMPI_COMM_WORLD_RANK`), PMIx
//! (`PMIX_RANK`), PMI (`PMI_RANK`), Kubernetes Indexed Jobs
//! (`JOB_COMPLETION_INDEX`), then `RANK` (torchrun and alike). A launcher
//! that does not put the world size in the environment (Kubernetes, PMIx)
//! needs `--world-size N`; a rank without one is an error, never a guess.

use benchsuite_core::cluster::{Cluster, Launcher};

/// Why the environment could not be read as a launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// A rank is set but no world size is known.
    #[error("{var} is set but the world size is not: pass --world-size N")]
    NoWorldSize {
        /// The rank variable.
        var: &'static str,
    },
    /// A variable is not a non-negative integer.
    #[error("{var}=`{value}` is not a non-negative integer")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The rank is not below the world size.
    #[error("{var}={rank} is not below the world size {world_size}")]
    RankOutOfRange {
        /// The rank variable.
        var: &'static str,
        /// The rank.
        rank: u64,
        /// The world size.
        world_size: u64,
    },
    /// `--world-size` disagrees with the launcher's.
    #[error("--world-size {given} disagrees with {var}={found}")]
    WorldSizeMismatch {
        /// The size variable.
        var: &'static str,
        /// Its value.
        found: u64,
        /// `--world-size`.
        given: u64,
    },
    /// A world size of 0.
    #[error("the world size must be at least 1")]
    ZeroWorldSize,
}

/// Reads the launch from `env` (a variable lookup: `|k|
/// std::env::var(k).ok()` for the process). `world_size` is `--world-size`,
/// used where the launcher does not set one. `Ok(None)`: not launched.
pub fn detect(
    env: impl Fn(&str) -> Option<String>,
    world_size: Option<u64>,
) -> Result<Option<Cluster>, ClusterError> {
    let num = |var: &'static str| -> Result<Option<u64>, ClusterError> {
        match env(var) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ClusterError::NotANumber { var, value: v }),
        }
    };
    let text = |var: &str| env(var).filter(|v| !v.trim().is_empty());
    // (launcher, world size variable, local rank variable). The innermost
    // launcher wins: `mpirun` inside an `sbatch` job leaves each process the
    // Slurm variables of its node's daemon (every rank of a node would read
    // the same SLURM_PROCID), so Open MPI's own variables come first, and
    // Slurm's are skipped when a PMI rank disagrees with them.
    let launchers: [(Launcher, Option<&'static str>, Option<&'static str>); 6] = [
        (
            Launcher::OpenMpi,
            Some("OMPI_COMM_WORLD_SIZE"),
            Some("OMPI_COMM_WORLD_LOCAL_RANK"),
        ),
        (Launcher::Slurm, Some("SLURM_NTASKS"), Some("SLURM_LOCALID")),
        (Launcher::Pmix, Some("PMI_SIZE"), None),
        (Launcher::Pmi, Some("PMI_SIZE"), Some("MPI_LOCALRANKID")),
        (Launcher::Kubernetes, None, None),
        (Launcher::Env, Some("WORLD_SIZE"), Some("LOCAL_RANK")),
    ];
    for (launcher, size_var, local_var) in launchers {
        let rank_var = launcher.rank_var();
        let Some(rank) = num(rank_var)? else {
            continue;
        };
        if launcher == Launcher::Slurm
            && [num("PMIX_RANK")?, num("PMI_RANK")?]
                .into_iter()
                .flatten()
                .any(|r| r != rank)
        {
            continue;
        }
        let mut found = match size_var {
            Some(v) => num(v)?.map(|n| (v, n)),
            None => None,
        };
        if found.is_none() && launcher == Launcher::Slurm {
            // The older name, still set by some Slurm versions.
            found = num("SLURM_NPROCS")?.map(|n| ("SLURM_NPROCS", n));
        }
        let world_size = match (found, world_size) {
            (Some((var, found)), Some(given)) if found != given => {
                return Err(ClusterError::WorldSizeMismatch { var, found, given });
            }
            (Some((_, n)), _) | (None, Some(n)) => n,
            (None, None) => return Err(ClusterError::NoWorldSize { var: rank_var }),
        };
        if world_size == 0 {
            return Err(ClusterError::ZeroWorldSize);
        }
        if rank >= world_size {
            return Err(ClusterError::RankOutOfRange {
                var: rank_var,
                rank,
                world_size,
            });
        }
        let local_rank = match local_var {
            Some(v) => num(v)?,
            None => None,
        };
        let (job, step, node) = match launcher {
            Launcher::Slurm => (
                text("SLURM_JOB_ID"),
                text("SLURM_STEP_ID"),
                text("SLURMD_NODENAME").or_else(|| text("SLURM_NODEID")),
            ),
            Launcher::OpenMpi | Launcher::Pmix | Launcher::Pmi => {
                (text("PMIX_NAMESPACE"), None, None)
            }
            Launcher::Kubernetes => (None, None, None),
            // torchrun without --rdzv-id says `none`: no job id.
            Launcher::Env => (
                text("TORCHELASTIC_RUN_ID").filter(|v| v.trim() != "none"),
                None,
                None,
            ),
        };
        return Ok(Some(Cluster {
            launcher,
            job,
            step,
            rank,
            world_size,
            node,
            local_rank,
        }));
    }
    Ok(None)
}

/// [`detect`] on the process environment.
pub fn detect_env(world_size: Option<u64>) -> Result<Option<Cluster>, ClusterError> {
    detect(|k| std::env::var(k).ok(), world_size)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn no_launcher_is_none() {
        assert_eq!(detect(env(&[("HOME", "/root")]), None), Ok(None));
        assert_eq!(detect(env(&[]), Some(4)), Ok(None));
    }

    #[test]
    fn slurm_gives_every_field() {
        let c = detect(
            env(&[
                ("SLURM_PROCID", "5"),
                ("SLURM_NTASKS", "8"),
                ("SLURM_NODEID", "2"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_JOB_ID", "4242"),
                ("SLURM_STEP_ID", "0"),
                ("SLURMD_NODENAME", "node17"),
                // Slurm wins over variables other launchers also set.
                ("RANK", "0"),
                ("WORLD_SIZE", "1"),
            ]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c,
            Cluster {
                launcher: Launcher::Slurm,
                job: Some("4242".into()),
                step: Some("0".into()),
                rank: 5,
                world_size: 8,
                node: Some("node17".into()),
                local_rank: Some(1),
            }
        );
        assert!(!c.is_node_leader());
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["launcher"], "slurm");
    }

    #[test]
    fn an_mpi_launch_inside_a_slurm_job_is_ranked_by_mpi() {
        // mpirun in sbatch: every process inherits its node daemon's
        // SLURM_PROCID; the MPI rank is the real one.
        let slurm = [
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_JOB_ID", "77"),
        ];
        let mut v = slurm.to_vec();
        v.extend([
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ]);
        let c = detect(env(&v), None).unwrap().unwrap();
        assert_eq!(
            (c.launcher, c.rank, c.world_size),
            (Launcher::OpenMpi, 5, 8)
        );
        assert!(!c.is_node_leader());
        let mut v = slurm.to_vec();
        v.extend([("PMI_RANK", "3"), ("PMI_SIZE", "8")]);
        let c = detect(env(&v), None).unwrap().unwrap();
        assert_eq!((c.launcher, c.rank), (Launcher::Pmi, 3));
        // srun with PMI: the same rank, so Slurm (with its local rank) stays.
        let mut v = slurm.to_vec();
        v.extend([("PMI_RANK", "1"), ("PMI_SIZE", "2")]);
        let c = detect(env(&v), None).unwrap().unwrap();
        assert_eq!(c.launcher, Launcher::Slurm);
    }

    #[test]
    fn open_mpi_pmi_and_rank_variables() {
        let c = detect(
            env(&[
                ("OMPI_COMM_WORLD_RANK", "2"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (c.launcher, c.rank, c.world_size, c.local_rank),
            (Launcher::OpenMpi, 2, 4, Some(0))
        );
        assert!(c.is_node_leader());
        let c = detect(env(&[("SLURM_PROCID", "0"), ("SLURM_NPROCS", "3")]), None)
            .unwrap()
            .unwrap();
        assert_eq!((c.launcher, c.world_size), (Launcher::Slurm, 3));
        let c = detect(env(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")]), None)
            .unwrap()
            .unwrap();
        assert_eq!((c.launcher, c.rank, c.world_size), (Launcher::Pmi, 1, 2));
        let c = detect(
            env(&[("PMIX_RANK", "3"), ("PMIX_NAMESPACE", "prte-1")]),
            Some(4),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (c.launcher, c.job.as_deref()),
            (Launcher::Pmix, Some("prte-1"))
        );
        let c = detect(
            env(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1")]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (c.launcher, c.rank, c.world_size, c.local_rank),
            (Launcher::Env, 1, 2, Some(1))
        );
        // torchrun without --rdzv-id: `none` is no job id.
        let run_id = |id: &str| {
            let vars = [
                ("RANK", "0"),
                ("WORLD_SIZE", "2"),
                ("TORCHELASTIC_RUN_ID", id),
            ];
            detect(env(&vars), None).unwrap().unwrap().job
        };
        assert_eq!(run_id("none"), None);
        assert_eq!(run_id("train-7").as_deref(), Some("train-7"));
    }

    #[test]
    fn kubernetes_needs_the_world_size_from_the_flag() {
        let e = detect(env(&[("JOB_COMPLETION_INDEX", "3")]), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "JOB_COMPLETION_INDEX is set but the world size is not: pass --world-size N"
        );
        let c = detect(env(&[("JOB_COMPLETION_INDEX", "3")]), Some(6))
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.launcher, c.rank, c.world_size, c.local_rank),
            (Launcher::Kubernetes, 3, 6, None)
        );
        assert!(c.is_node_leader());
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        let e = detect(env(&[("RANK", "x"), ("WORLD_SIZE", "2")]), None).unwrap_err();
        assert!(e.to_string().contains("RANK=`x`"), "{e}");
        let e = detect(env(&[("RANK", "2"), ("WORLD_SIZE", "2")]), None).unwrap_err();
        assert!(e.to_string().contains("not below the world size 2"), "{e}");
        let e = detect(env(&[("RANK", "0")]), None).unwrap_err();
        assert!(e.to_string().starts_with("RANK is set"), "{e}");
        let e = detect(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")]), Some(3)).unwrap_err();
        assert!(
            e.to_string()
                .contains("--world-size 3 disagrees with PMI_SIZE=2"),
            "{e}"
        );
        let e = detect(env(&[("JOB_COMPLETION_INDEX", "0")]), Some(0)).unwrap_err();
        assert_eq!(e, ClusterError::ZeroWorldSize);
    }
}
