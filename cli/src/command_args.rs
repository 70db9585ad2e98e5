//! The flags of `breakeven`, `report`, `history`, `calibrate`,
//! `baseline` and `check`: data only, imported by the commands and by
//! `args.rs` (which holds the rest), never importing a command.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// How `check` writes its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// A table per node: every band and rule with its grade, value, bound
    /// and reason, then the next steps.
    Table,
    /// The verdicts as JSON.
    Json,
    /// One line per FAILing node, `NODE<TAB>REASON` (NODE: the launcher's
    /// node name, else the short host name), nothing when all pass: the
    /// reason to give `scontrol update nodename=NODE state=drain
    /// reason=...` (see docs/fleet.md).
    Slurm,
    /// One line of at most --max-length characters, the message of a
    /// Kubernetes Node Problem Detector custom plugin (exit 0 OK, 1
    /// NonOK, 2 Unknown, as NPD reads it).
    Npd,
}

pub(crate) fn wait_arg(text: &str) -> Result<std::time::Duration, benchsuite_core::ValueError> {
    benchsuite_core::units::parse_duration(text)
}

#[derive(Debug, Args)]
pub struct BreakevenArgs {
    /// The local machine's report: `cpu.prime` (events/s) and `disk.io`
    /// (bandwidth) records.
    #[arg(long, value_name = "REPORT.json")]
    pub local: PathBuf,
    /// The remote machine's report, with the same records.
    #[arg(long, value_name = "REPORT.json")]
    pub remote: PathBuf,
    /// The report measured between the two (`benchsuite run
    /// net.tcp_throughput net.connect --peer REMOTE`): throughput and
    /// connection setup.
    #[arg(long, value_name = "REPORT.json")]
    pub net: PathBuf,
    /// CPU work of the job, in sysbench prime events (at the records'
    /// max_prime).
    #[arg(long, value_name = "N")]
    pub events: f64,
    /// Storage traffic of the job, bytes (`10G`).
    #[arg(long, value_name = "SIZE")]
    pub bytes: String,
    /// Which `cpu.prime` record: its parameters, e.g. `threads=1`
    /// (default: the first ok one).
    #[arg(long, value_name = "NAME=VALUE,...")]
    pub cpu: Option<String>,
    /// Which `disk.io` record, e.g. `preset=sysbench-rndrw` (default: the
    /// first ok one).
    #[arg(long, value_name = "NAME=VALUE,...")]
    pub disk: Option<String>,
    /// `table` (default) or `json`.
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    pub format: String,
}

/// `benchsuite report IN.json [MORE.json ...] -o report.html`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// JSON reports (written by `benchsuite run -o`). With two or more,
    /// the first is the base: the page draws base and new on the same axes
    /// and the change of each metric, judged as `compare` judges it. One
    /// fleet report (`benchsuite merge -o fleet.json`) makes the fleet
    /// page: host groups, outlier hosts, each host against its group.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,

    /// The HTML file to write (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `benchsuite history DIR_OR_REPORTS... [--acks perf-acks.toml]`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// JSON reports of one testbed (a main branch's rolling history, each
    /// written by `benchsuite run -o`), or directories of them (every
    /// `*.json`). Ordered by their start time; reports of another testbed
    /// than the newest are left out, named.
    #[arg(value_name = "DIR_OR_REPORT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Expected changes: a TOML file of `[[ack]]` tables, each with
    /// `record` (a benchmark id or full key), optional `metric`, `commit`
    /// (7 characters or more of the first run at the new level) and
    /// `reason`. An acknowledged change point never alarms; one that names
    /// no change point is listed as stale.
    #[arg(long, value_name = "FILE")]
    pub acks: Option<PathBuf>,

    /// Alarm (exit 1) on a regression that starts in the last N runs.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub since: usize,

    /// A worse step at least this large is a regression (metrics in %:
    /// 0.5 percentage points).
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub threshold: String,

    /// Per-metric thresholds from a file written by `benchsuite
    /// calibrate` (the gate's `--thresholds`): a metric it names is a
    /// regression only when its step reaches that threshold, so machine
    /// states the gate tolerates do not alarm after the merge either.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,

    /// The level of each change point's test: a series without a change is
    /// split about this often.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.01)]
    pub alpha: f64,

    /// Output format: table (default), json, csv (one row per change
    /// point), md (a CI job summary), html (a page with a chart per
    /// metric: its run medians, levels, change points and the band of the
    /// next run). Default: from -o's extension, else table.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `benchsuite calibrate JOB_DIR... -o perf-thresholds.toml`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A/A jobs: directories each written by `benchsuite compare
    /// --interleave BIN BIN_COPY --rounds 15 --interleave-dir DIR -- RUN_ARGS`
    /// (two copies of one build, the run arguments of the CI job), holding
    /// interleave-base.json and interleave-new.json. All of one testbed.
    /// Twenty or more give thresholds worth committing (ten under-sample
    /// the noisiest job)
    #[arg(value_name = "JOB_DIR", required = true)]
    pub jobs: Vec<PathBuf>,

    /// The confirmation budget the thresholds are for: `compare --confirm
    /// --budget`
    #[arg(long, value_name = "PAIRS", default_value_t = benchsuite::compare::confirm::DEFAULT_BUDGET)]
    pub budget: usize,

    /// The share of unchanged jobs allowed to end undecided, spread over
    /// the gated metrics. Below the 5% a CI job can live with, since the
    /// noise drifts between the calibration and the jobs it gates: fitted
    /// at 5%, 4 of 76 later A/A jobs (5.3%) ended undecided
    #[arg(long, value_name = "PERCENT", default_value = "3%")]
    pub undecided: String,

    /// The least threshold written (the one `compare` defaults to):
    /// metrics quieter than it keep it
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub threshold: String,

    /// The least threshold of a latency tail (NAME.p99, NAME.p99_9)
    #[arg(long, value_name = "PERCENT", default_value = "25%")]
    pub tail_threshold: String,

    /// Write the thresholds file to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `benchsuite baseline REPORT... -o baseline.toml`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Healthy nodes' runs: reports, fleet reports (`benchsuite merge`) or
    /// directories of them (`run --output-dir`). A node may appear in
    /// several runs; each machine type gets its own bands.
    #[arg(value_name = "REPORT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// The least distance of a band's bound from the fleet's median
    /// (bounds sit at 3 scaled MADs of the runs' spread, or this, whichever
    /// is wider; this alone below 3 runs)
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub margin: String,

    /// Merge into this existing baseline: machine types the new runs have
    /// are replaced (keeping the severity and next step written on a
    /// band), the others and every [[rule]] are kept. Without it an
    /// existing -o file is refused
    #[arg(long, value_name = "FILE")]
    pub merge: Option<PathBuf>,

    /// Write the baseline to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `benchsuite check --baseline baseline.toml REPORT...`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The baseline (`benchsuite baseline`), as written or edited
    #[arg(long, value_name = "FILE")]
    pub baseline: PathBuf,

    /// The node's report (`benchsuite run -o`), or a fleet report or a
    /// directory of reports: each node judged alone. Or none, with
    /// --measure
    #[arg(value_name = "REPORT", required_unless_present = "measure")]
    pub inputs: Vec<PathBuf>,

    /// Measure this node first (`benchsuite run RUN_ARGS`, `--profile
    /// health` when none are given after `--`), then measure again, --wait apart, the
    /// records of every band or rule that did not pass, up to --retries
    /// times: a result FAILs only when every measurement failed it, one
    /// that failed and then passed WARNs (intermittent)
    #[arg(long, conflicts_with = "inputs")]
    pub measure: bool,

    /// With --measure: how many times to measure again what did not pass
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: usize,

    /// With --measure: the pause before each measuring again (a state of
    /// the machine often outlasts a run)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = wait_arg)]
    pub wait: std::time::Duration,

    /// With --measure: the arguments of each `run` (after `--`), e.g.
    /// `-- cpu mem --profile health`; default `--profile health`. The
    /// baseline must have been built from runs of the same arguments
    #[arg(last = true, value_name = "RUN_ARGS", requires = "measure")]
    pub run_args: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Table)]
    pub format: CheckFormat,

    /// The longest --format npd line (NPD's max_output_length)
    #[arg(long, value_name = "CHARS", default_value_t = 80)]
    pub max_length: usize,

    /// Write to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}
