//! Raw command-line arguments (clap). Converted to a validated
//! [`benchsuite::RunConfig`] in `config.rs`; the library never sees clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A token given on the command line. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

fn secret(text: &str) -> Result<Secret, String> {
    Ok(Secret(text.to_string()))
}

/// Measure a machine's CPU, memory, disk, network, GPU and OS primitives.
///
/// Results carry full statistics (median, CV, 95% CI), the host they were
/// measured on, and the theoretical peak where one can be derived.
/// `benchsuite compare` is a CI gate: it exits 1 on a regression whose
/// whole confidence interval lies beyond the threshold, and on a benchmark
/// that ran in the baseline but failed, was skipped or vanished.
/// `benchsuite --version`: the version, then what the binary was built
/// with (`-V` gives the first line alone).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nfeatures: ",
    env!("BENCHSUITE_FEATURES_SHOWN"),
    "\nprofile:  ",
    env!("BENCHSUITE_PROFILE"),
    "\ncommit:   ",
    env!("BENCHSUITE_COMMIT_SHOWN")
);

#[derive(Debug, Parser)]
#[command(name = "benchsuite", version, long_version = LONG_VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run benchmarks (all modules' quick defaults when no selector is given).
    Run(Box<RunArgs>),
    /// Run each selected point interleaved with its reference tool (fio,
    /// iperf3, sockperf, sysbench, likwid-bench, hpcc, perf bench): ours,
    /// the tool, ours, the
    /// tool... for --rounds N (default 3), and attach the tool's command,
    /// median and the ratio (> 1: benchsuite better) to each record.
    /// Takes `run`'s flags; a missing tool is named with its package.
    Reference(Box<ReferenceArgs>),
    /// Judge a new report against one or more baselines as a CI gate: exit
    /// 1 if NEW regressed or broke a benchmark that ran in the newest
    /// baseline, 0 if it passes (also with stdout closed early). Several
    /// baselines are a history whose own noise between runs NEW is judged
    /// by; `--interleave` measures two builds itself. Two fleet reports
    /// (`benchsuite merge`) compare host by host: exit 1 if any host fails
    /// or a host of BASE is missing from NEW (--allow-missing lets it
    /// pass).
    Compare(CompareArgs),
    /// List modules, benchmarks, their parameters and defaults.
    List(ListArgs),
    /// Show what benchsuite detects about this machine (and what it cannot).
    Info(InfoArgs),
    /// Serve network benchmarks to clients (`benchsuite run net --peer
    /// HOST:PORT`) until Ctrl-C, SIGTERM or SIGHUP (exit 0).
    ///
    /// The server requires a token, also on loopback (another user of this
    /// machine could use it otherwise): set BENCHSUITE_TOKEN, or give
    /// --token-file FILE; clients give the same token the same ways. Only
    /// a loopback address may go without one, with --no-auth. The token
    /// authenticates clients (an HMAC of a fresh nonce; it never crosses
    /// the network) but encrypts nothing: across an untrusted network, run
    /// it in a VPN or an SSH tunnel. See docs/security.md.
    Serve(ServeArgs),
    /// Write a JSON report in another format (csv, md, bmf, gha,
    /// openmetrics...) without measuring again, e.g. for a dashboard.
    Convert(ConvertArgs),
    /// Print the JSON Schema (draft 2020-12) of the JSON report, generated
    /// from the result types; every report of this major version validates.
    Schema,
    /// Merge hosts' JSON reports (`run --output-dir`) into one fleet
    /// report, and print the fleet view: per record the median, spread
    /// (scaled MAD), min and max across hosts, and the outlier (slow)
    /// hosts, with hosts of different hardware or kernel grouped apart.
    Merge(MergeArgs),
    /// The local-vs-remote break-even: from which transferred data size a
    /// job (CPU events plus storage bytes) runs faster locally than shipped
    /// to a remote machine, from measured reports.
    Breakeven(crate::command_args::BreakevenArgs),
    /// Write one self-contained HTML page (inline SVG charts, no
    /// JavaScript, the reports embedded as JSON) from JSON reports: a chart
    /// per sweep, latency percentiles, time series, the host, warnings and
    /// notes; with two or more reports, base vs new and the change verdicts.
    Report(crate::command_args::ReportArgs),
    /// After the merge: find change points in a main branch's history of
    /// reports (one testbed), each with the run and commit where it starts,
    /// the step with its interval and whether it is a regression; exit 1
    /// when an unacknowledged regression starts in the last --since runs
    /// (a scheduled job's alarm).
    History(crate::command_args::HistoryArgs),
    /// Fit per-metric thresholds this machine can judge at from A/A jobs
    /// (`compare --interleave` of two copies of one build): for each
    /// metric, the smallest change a confirmation with --budget pairs can
    /// tell from no change, never below --threshold. Writes the TOML file
    /// `compare --thresholds` reads.
    Calibrate(crate::command_args::CalibrateArgs),
    /// Build a node acceptance baseline from healthy nodes' runs: per
    /// machine type (CPU model, CPUs, memory, GPUs), each gated metric's
    /// band (the runs' median, a bound at 3 scaled MADs of their spread or
    /// --margin, whichever is wider), as TOML a person edits and adds
    /// rules to. See docs/fleet.md.
    Baseline(crate::command_args::BaselineArgs),
    /// Judge one node's report (or each node of a fleet report) by a
    /// baseline: PASS, WARN or FAIL per band and rule, with the value, the
    /// bound, the reason and the next step. Exit 0 when no node FAILs
    /// (WARN too), 1 when one does, 2 when the baseline cannot judge the
    /// report: a Slurm prolog drains on non-zero, a Node Problem Detector
    /// plugin reads 0 OK, 1 NonOK, 2 Unknown.
    Check(crate::command_args::CheckArgs),
    /// Print a shell completion script: `benchsuite completions bash >
    /// ~/.local/share/bash-completion/completions/benchsuite` (zsh: a file
    /// `_benchsuite` on $fpath; fish: ~/.config/fish/completions/).
    Completions(CompletionsArgs),
    /// Write the man pages (benchsuite.1 and one per subcommand,
    /// benchsuite-run.1 ...) into DIR; read one with `man -l DIR/benchsuite-run.1`.
    Man(ManArgs),
}

/// `run --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// The quick pass with samples of at least 50 ms: a node health check.
    Health,
}

/// The least sample time of `--profile health`.
pub const HEALTH_MIN_SAMPLE: std::time::Duration = std::time::Duration::from_millis(50);

/// `benchsuite completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `benchsuite man --out-dir DIR`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where to write the pages (created if missing), e.g.
    /// ~/.local/share/man/man1.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// `benchsuite reference`: `run`'s flags, and how long to go on.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Go on past --rounds until the 95% interval of a point's round
    /// ratios (their geometric mean, Student's t) is this narrow, e.g.
    /// `3%` (or `±3%`), at most --max-rounds rounds; the record's note says
    /// how narrow it got. Loopback and disk points move ±20% between rounds
    /// on a busy VM: three rounds leave them anywhere in that.
    #[arg(long, value_name = "PERCENT")]
    pub until: Option<String>,

    /// With --until: the most rounds a point runs.
    #[arg(long, value_name = "N", default_value_t = 30, requires = "until")]
    pub max_rounds: usize,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to run: `all`, a module (`os`), a benchmark (`os.syscall`) or a
    /// glob (`mem.*`). Without one, every module runs its quick defaults.
    #[arg(value_name = "SELECTOR")]
    pub selectors: Vec<String>,

    /// A plan file (TOML): named phases, each with its selectors,
    /// parameters and runs/rounds/duration, run one after the other into one
    /// report. Flags on the command line override the file's settings.
    /// `plans/` holds ready ones (`plans/os.toml`, `plans/sysbench.toml`...).
    #[arg(short = 'f', long = "plan", value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// Block size(s) for benchmarks with a `block` parameter: `4K`, `1MB`,
    /// lists `4K,64K` and ranges `1K..1M:x2`. Sizes are binary (1K = 1024).
    #[arg(long, value_name = "SIZES")]
    pub block: Option<String>,

    /// Thread count(s) for benchmarks with a `threads` parameter: `8`,
    /// `1,2,4,8`, `1..8`.
    #[arg(long, value_name = "COUNTS")]
    pub threads: Option<String>,

    /// Any parameter as NAME=VALUES (repeatable), e.g. `--param args=0..7`,
    /// for every selected benchmark that has it; `SELECTOR:NAME=VALUES`
    /// for the benchmarks a selector names only (an id, a module or a
    /// glob: `--param os.context_switch:mode=thread`), which wins over a
    /// plain NAME. `benchsuite list` shows each benchmark's parameters.
    #[arg(long = "param", short = 'p', value_name = "[SELECTOR:]NAME=VALUES")]
    pub params: Vec<String>,

    /// A named parameter preset for benchmarks with a `preset` parameter
    /// (e.g. `sysbench-rndrw` for disk.io).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,

    /// Network benchmarks: a `benchsuite serve` to measure against
    /// (HOST:PORT). Without it an in-process server on loopback is used.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: Option<String>,

    /// Network benchmarks: the --peer server's token. Prefer the
    /// environment variable BENCHSUITE_TOKEN or --token-file: a --token is
    /// visible to every user of this machine (`ps`) and kept in shell
    /// history. --token and --token-file exclude each other; either one
    /// overrides BENCHSUITE_TOKEN. The token is never sent (the server
    /// checks an HMAC of a fresh nonce) nor written to a report.
    #[arg(long, value_name = "TOKEN", value_parser = secret, conflicts_with = "token_file")]
    pub token: Option<Secret>,

    /// Network benchmarks: read the --peer server's token from the first
    /// line of FILE (its trailing newline removed).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Theoretical memory bandwidth when it cannot be detected (e.g.
    /// `68.3GB/s`); memory records then carry an efficiency.
    #[arg(long, value_name = "RATE")]
    pub peak_mem_bw: Option<String>,

    /// Disk benchmarks: lets write tests overwrite the existing files or
    /// block devices named (`--allow-overwrite=/dev/sdb`, comma-separated
    /// for several) when `--param dir=PATH` names them (tested in place,
    /// like fio's --filename; their contents are overwritten). The bare
    /// flag authorises a single target; a run that would write to two is
    /// refused. Reading in place needs no flag.
    #[arg(
        long,
        value_name = "PATH[,PATH...]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on"
    )]
    pub allow_overwrite: Option<String>,

    /// A module option as KEY=VALUE (repeatable), passed to benchmarks.
    #[arg(long = "opt", value_name = "KEY=VALUE")]
    pub options: Vec<String>,

    /// Samples per record. The default is 5 (3 with --quick).
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,

    /// Run the whole plan N times, one point after the other in each round,
    /// and pool each record's samples (N × --runs of them), so the machine's
    /// drift over minutes shows up as noise that `compare` takes into
    /// account, instead of as a difference between two reports. A capacity
    /// search (`--slo`, rate=auto) searches N times: its answer is the
    /// median, with each search's answer in the note. Default 1.
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,

    /// Minimum length of one timed sample; batches grow until a sample lasts
    /// this long. The default is 10ms (5ms with --quick).
    #[arg(long, value_name = "DURATION")]
    pub min_sample_time: Option<String>,

    /// Warm-up time before the first sample. The default is 100ms (20ms with --quick).
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,

    /// Time-series mode: sample continuously for this long (e.g. `10m`),
    /// one rate per --interval.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,

    /// Interval between time-series samples with --duration. The default is 1s.
    #[arg(long, value_name = "DURATION", requires = "duration")]
    pub interval: Option<String>,

    /// Capacity under a latency target, e.g. `p99<=1ms` (also `p99.9<=250us`,
    /// `rtt.p99<=2ms`): each selected benchmark with an open-loop mode
    /// (disk.io, net.latency) searches for the highest rate (operations per
    /// second) whose percentile stays under the bound at 95% confidence: a
    /// ladder from 1k/s doubling until the target breaks, then bisection to
    /// 5%. The report gives every step (the latency–throughput curve) and
    /// the answer; `rate=auto` alone climbs by 1.5x until saturation.
    #[arg(long, value_name = "TARGET")]
    pub slo: Option<String>,

    /// A fast pass: 3 runs, short samples, smaller default sizes.
    #[arg(long)]
    pub quick: bool,

    /// A ready profile. health: the quick pass (every module, or the
    /// selectors given) with samples of at least 50 ms, so that a
    /// neighbour time-sharing a CPU shows in them (the median of shorter
    /// samples runs between its time slices), a few seconds in all; what
    /// `check --measure` runs. Explicit flags win over it
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub profile: Option<Profile>,

    /// Output format: table (default on a terminal), json (default otherwise
    /// and for -o FILE.json), csv, md, and for CI dashboards: bmf (Bencher
    /// Metric Format), gha (github-action-benchmark's custom tools; needs -o
    /// PREFIX) and openmetrics (Prometheus/OpenMetrics text; the default for
    /// -o FILE.prom); html (charts, the default for -o FILE.html). bmf and
    /// gha carry ok records only; compare is the gate.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Write the report to FILE (format from --format or the extension:
    /// .json, .csv, .md, .prom, .html; JSON otherwise). With --format gha, FILE is
    /// a prefix: PREFIX-bigger.json (tool customBiggerIsBetter) and
    /// PREFIX-smaller.json (customSmallerIsBetter), a .json extension
    /// removed first.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Directory where disk benchmarks may create (and always remove) their
    /// files. The default is the system temporary directory.
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,

    /// Run only the record with this key, as reports and `compare` name
    /// records (`os.call args=0`); repeat for several. Each must be a
    /// record the rest of the command line plans. How `compare --confirm`
    /// measures just the records it could not decide.
    #[arg(long, value_name = "KEY")]
    pub only: Vec<String>,

    /// Exit 1 if any benchmark failed.
    #[arg(long)]
    pub strict: bool,

    /// No progress bar on stderr.
    #[arg(long)]
    pub no_progress: bool,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Table output: list the records' notes (what each number includes,
    /// the clock, the storage) instead of counting them.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// BASE.json... NEW.json: the baseline report(s), then the new report,
    /// last (JSON written by `benchsuite run -o`). Several baselines are a history of the same
    /// testbed (`compare history/*.json new.json`): each metric's noise
    /// between runs is measured from them and the new run is judged
    /// against what they predict for one more run. Two fleet reports
    /// (`benchsuite merge`) compare host by host.
    #[arg(
        value_name = "REPORT",
        num_args = 1..,
        required_unless_present = "interleave"
    )]
    pub reports: Vec<PathBuf>,

    /// Measure two builds on this machine and judge them: runs `BASE_BIN
    /// run RUN_ARGS` and `NEW_BIN run RUN_ARGS` alternately, one round
    /// each (A B A B ... for --rounds), pools each build's rounds into a
    /// report and judges the paired differences of adjacent rounds, which
    /// cancels drift slower than a round. How a pull request's build is
    /// checked against main's in one CI job.
    #[arg(long, num_args = 2, value_names = ["BASE_BIN", "NEW_BIN"], conflicts_with_all = ["reports", "baseline_dir"])]
    pub interleave: Option<Vec<PathBuf>>,

    /// Confirm by pairing: after judging NEW against the history (the
    /// screen), measure the records of every metric it left undecided or
    /// called regressed with BASE_BIN (main's build) and NEW_BIN (the build NEW came from;
    /// default: this benchsuite) alternately, A B A B, adding pairs until
    /// each is decided or --budget is spent. RUN_ARGS after `--` are the
    /// new run's selectors and parameters (each round adds `--only KEY`).
    #[arg(
        long,
        num_args = 1..=2,
        value_names = ["BASE_BIN", "NEW_BIN"],
        conflicts_with = "interleave"
    )]
    pub confirm: Option<Vec<PathBuf>>,

    /// With --confirm: the most A B pairs it may run (3 or more; it judges
    /// after 5, 10, 20 ... pairs and at the budget, each look at its share
    /// of --alpha). Each pair runs only
    /// the undecided metrics' records, about 0.2-1 s each on the quick pass.
    #[arg(long, value_name = "PAIRS", default_value_t = benchsuite::compare::confirm::DEFAULT_BUDGET, requires = "confirm")]
    pub budget: usize,

    /// With --interleave: how many A B rounds (at least 3).
    #[arg(long, value_name = "N", default_value_t = 5, requires = "interleave")]
    pub rounds: usize,

    /// With --interleave: the directory the two builds' pooled reports are
    /// written to, as interleave-base.json and interleave-new.json.
    #[arg(long, value_name = "DIR", default_value = ".", requires = "interleave")]
    pub interleave_dir: PathBuf,

    /// With --interleave or --confirm: the longest one build's round may
    /// run (SECS, or 90s, 10m, 1h). A round past it is stopped with every
    /// process it started (SIGTERM, then SIGKILL 5 s later) and compare
    /// exits 2 naming the build that hung, with the end of its stderr. The
    /// default: no limit on the first round, and max(10 × the first
    /// round's time, 10m) on every later one.
    #[arg(long, value_name = "SECS", value_parser = round_timeout)]
    pub round_timeout: Option<std::time::Duration>,

    /// With --interleave or --confirm: the arguments of each `run` (after
    /// `--`), e.g. `-- cpu mem --runs 5`; -o, --format and --rounds are set
    /// by compare.
    #[arg(last = true, value_name = "RUN_ARGS")]
    pub run_args: Vec<String>,

    /// Also take every `*.json` report in DIR as a baseline (the last N
    /// runs of the main branch, kept as a CI artifact or cache).
    #[arg(long, value_name = "DIR")]
    pub baseline_dir: Option<PathBuf>,

    /// Per-metric thresholds from a file written by `benchsuite
    /// calibrate` (the smallest change this machine's noise lets a
    /// confirmation decide, per metric): applied before --threshold's
    /// rules, which win where both name a metric.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,

    /// The noise between runs to assume where the baselines cannot show it,
    /// as a CV (`3%`): against one baseline, every metric's prior; in a
    /// history, a floor under the spread of its runs. `0%`: against one
    /// baseline, only the noise inside the two runs counts. Default: a
    /// prior per module measured on 2-vCPU VMs (cpu 2%, os 5%, mem 8%, disk
    /// 18%, net 20%, tails 30%), none in a history.
    #[arg(long, value_name = "CV")]
    pub between_run_cv: Option<String>,

    /// The default threshold of latency tails (NAME.p99, NAME.p99_9):
    /// tails move far more between runs than medians.
    #[arg(long, value_name = "PCT", default_value = "25%")]
    pub tail_threshold: String,

    /// How a change becomes a regression: `interval` (the whole interval
    /// beyond the threshold), `band` (outside the band the baselines
    /// predict for an unchanged run, beyond the threshold in most of the
    /// new run's rounds), `paired` (interleaved rounds), or `auto`: band
    /// with several baselines, interval with one, paired for
    /// --interleave. Under every rule a metric is unchanged only when its
    /// change's worse-side bound is within the threshold, else undecided.
    #[arg(long, value_name = "RULE", default_value = "auto")]
    pub rule: String,

    /// Keep baselines of another testbed (CPU model, microarchitecture,
    /// CPU count, sockets) in a history; without it they are left out
    /// with a warning.
    #[arg(long)]
    pub allow_mixed_hosts: bool,

    /// How large a change must be to count: `5%` (relative to the base
    /// median, the default), or an absolute amount in the metric's unit:
    /// `0.5pp` for metrics in % (they default to 0.5pp), `20us` for times.
    /// Repeat with SELECTOR[:METRIC]=VALUE to override it for some records
    /// or metrics, e.g. `--threshold 5% --threshold 'net.*:rtt=10%'
    /// --threshold 'net.latency:rtt.p99=20%'`; the last matching one wins.
    /// A regression is called only when the change is confirmed beyond
    /// it (see --rule).
    #[arg(
        long,
        value_name = "VALUE",
        default_value = "5%",
        allow_hyphen_values = true
    )]
    pub threshold: Vec<String>,

    /// The job's one-sided error level: the chance that any gated metric
    /// of an unchanged run is called regressed (Holm's step-down shares it
    /// among them; each metric's interval is the two-sided 1 − 2·level one
    /// at the level it is left; with --confirm only the pairs call a
    /// regression, so it is theirs).
    #[arg(long, value_name = "ALPHA", default_value_t = benchsuite::compare::DEFAULT_ALPHA)]
    pub alpha: f64,

    /// Pass although records or metrics of BASE are absent from NEW (a plan
    /// narrowed on purpose). Without it, each one fails the gate.
    #[arg(long)]
    pub allow_missing: bool,

    /// Pass although records that ran in BASE were skipped in NEW (e.g. a
    /// runner without a GPU). A failed record always fails the gate.
    #[arg(long)]
    pub allow_skipped: bool,

    /// Pass although some metrics could not be judged (a side with fewer
    /// than 3 samples, or a zero baseline under a relative threshold).
    /// Without it, each one fails the gate.
    #[arg(long)]
    pub allow_unjudged: bool,

    /// Output format: table (default), json, csv, md (a CI job summary).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Write the comparison to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Table output: also list the metrics that cannot fail the gate
    /// (derived and spread: throughput in bits, a per-access time) instead
    /// of counting them. JSON, CSV and Markdown always have every metric.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only these modules or benchmarks (same selectors as `run`).
    #[arg(value_name = "SELECTOR")]
    pub selectors: Vec<String>,

    /// Output format: table (default) or json (every benchmark's
    /// parameters, metrics and options, for wrappers and plan authors).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Also say whether each benchmark can run on this machine, and why
    /// not (no GPU, no O_DIRECT...).
    #[arg(long)]
    pub probe: bool,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The report (JSON written by `benchsuite run -o`).
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,

    /// Output format: table, json, csv, md, bmf, gha, openmetrics, html
    /// (default from the -o extension; a table on a terminal, JSON
    /// otherwise).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Write to FILE instead of stdout (with gha, FILE is a prefix:
    /// FILE-bigger.json and FILE-smaller.json).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Table output: list the records' notes instead of counting them.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Output format: table (default) or json.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Describe the file system and block device holding this directory
    /// (the one `run --scratch-dir` would use). Default: the system
    /// temporary directory.
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on. UDP tests use ephemeral ports on the
    /// same address.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:5301")]
    pub bind: String,

    /// The token clients must prove they know. Prefer BENCHSUITE_TOKEN or
    /// --token-file: a --token is visible to every user of this machine
    /// (`ps`). --token and --token-file exclude each other; either one
    /// overrides BENCHSUITE_TOKEN.
    #[arg(long, value_name = "TOKEN", value_parser = secret, conflicts_with_all = ["token_file", "no_auth"])]
    pub token: Option<Secret>,

    /// Read the token from the first line of FILE (its trailing newline
    /// removed).
    #[arg(long, value_name = "FILE", conflicts_with = "no_auth")]
    pub token_file: Option<PathBuf>,

    /// Accept clients without a token: anyone who can reach the address
    /// may use this machine's network through the server. Refused unless
    /// --bind is a loopback address; BENCHSUITE_TOKEN is then ignored.
    #[arg(long)]
    pub no_auth: bool,

    /// Pin the threads that answer latency tests (TCP and UDP echo) to this
    /// CPU, as `taskset -c N sockperf server` would; with the client pinned
    /// (`taskset -c M benchsuite run net.latency --peer ...`) both ends'
    /// placement is then known. Default: not pinned.
    #[arg(long, value_name = "CPU")]
    pub echo_cpu: Option<usize>,
}

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
    #[arg(long, value_name = "MODE", value_enum, default_value_t = NetPairsArg::Auto)]
    pub net_pairs: NetPairsArg,

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

    /// Also judge every host by this acceptance baseline (`benchsuite
    /// baseline`), as `check` does, and print the defective nodes with
    /// their drain reasons after the fleet view; exit 1 if one FAILs
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

/// `--net-pairs MODE` (see [`benchsuite_fleet::NetPairs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NetPairsArg {
    /// `pairwise` under a launcher with `--output-dir` (or `--rendezvous`),
    /// a world size of 2 or more and a net benchmark selected; `off`
    /// otherwise.
    Auto,
    /// Each rank measures its own loopback (an in-process server).
    Off,
    /// Rank pairs i <-> i + N/2 (bisection), each way in turn.
    Pairwise,
    /// All ranks measure the first one at once.
    FanIn,
}

/// `--round-timeout`: a positive duration (a bare number is seconds).
fn round_timeout(text: &str) -> Result<std::time::Duration, String> {
    match benchsuite::units::parse_duration(text)? {
        d if d.is_zero() => Err("the limit must be more than 0 s".into()),
        d => Ok(d),
    }
}
