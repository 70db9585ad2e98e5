//! Which task of which job a run was: the launcher, rank, world size and
//! job id a launcher set (no scheduler library is linked).
//!
//! This module holds the record (the report's `cluster` section); the
//! detection is `benchsuite_fleet::launcher::detect`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The launcher that started this task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Slurm (`srun`, `sbatch`): `SLURM_*`.
    Slurm,
    /// Open MPI's `mpirun`: `OMPI_COMM_WORLD_*`.
    OpenMpi,
    /// A PMIx launcher (`prterun`, `srun --mpi=pmix`): `PMIX_RANK`.
    Pmix,
    /// A PMI launcher (MPICH's Hydra `mpiexec`): `PMI_RANK`, `PMI_SIZE`.
    Pmi,
    /// A Kubernetes Indexed Job: `JOB_COMPLETION_INDEX`.
    Kubernetes,
    /// Plain `RANK` / `WORLD_SIZE` / `LOCAL_RANK` (torchrun and alike).
    Env,
}

impl Launcher {
    /// The variable holding the rank for this launcher.
    pub fn rank_var(self) -> &'static str {
        match self {
            Launcher::Slurm => "SLURM_PROCID",
            Launcher::OpenMpi => "OMPI_COMM_WORLD_RANK",
            Launcher::Pmix => "PMIX_RANK",
            Launcher::Pmi => "PMI_RANK",
            Launcher::Kubernetes => "JOB_COMPLETION_INDEX",
            Launcher::Env => "RANK",
        }
    }
}

/// Where this task sits in a launched job, as recorded in a report's
/// `cluster` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cluster {
    /// The launcher whose variables were read.
    pub launcher: Launcher,
    /// Job id (`SLURM_JOB_ID`, `PMIX_NAMESPACE`, `TORCHELASTIC_RUN_ID`),
    /// where the launcher gives one.
    #[serde(default)]
    pub job: Option<String>,
    /// Job step (`SLURM_STEP_ID`).
    #[serde(default)]
    pub step: Option<String>,
    /// This task's rank, 0-based.
    pub rank: u64,
    /// Tasks in the job.
    pub world_size: u64,
    /// The node as the launcher names it (`SLURMD_NODENAME`, else
    /// `SLURM_NODEID`).
    #[serde(default)]
    pub node: Option<String>,
    /// This task's rank among the tasks on its node, where the launcher
    /// says (`SLURM_LOCALID`, `OMPI_COMM_WORLD_LOCAL_RANK`, `LOCAL_RANK`).
    #[serde(default)]
    pub local_rank: Option<u64>,
}

impl Cluster {
    /// Whether this task is the first on its node. A launcher that does
    /// not say counts every task as first (each measures).
    pub fn is_node_leader(&self) -> bool {
        self.local_rank.is_none_or(|r| r == 0)
    }
}
