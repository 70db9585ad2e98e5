//! Raw arguments → a validated [`RunConfig`] (built in one step through
//! its builder) plus output settings.
//!
//! Every value is checked here or in the core's planner before anything
//! runs; errors name the flag the user typed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result, anyhow, bail};
use benchsuite::export::Format;
use benchsuite::sweep::parse_values;
use benchsuite::units::parse_duration;
use benchsuite::{ConfigError, ParamSpec, Registry, RunConfig};

use crate::args::{ClusterArgs, CompareArgs, NetPairsArg, RunArgs, Secret};

/// The environment variable holding the network token.
pub use benchsuite_net::token::TOKEN_ENV;

/// The token from `--token`, `--token-file` or the environment (see
/// [`benchsuite_net::token::resolve`]).
pub fn resolve_token(
    flag: Option<&Secret>,
    file: Option<&std::path::Path>,
    use_env: bool,
) -> Result<Option<(String, benchsuite_net::token::Source)>> {
    Ok(benchsuite_net::token::resolve(
        flag.map(|Secret(t)| t.as_str()),
        file,
        use_env,
    )?)
}

/// `run`'s flags turned into what the run needs, in one step: the run
/// itself (`run.rs`) never reads [`RunArgs`].
pub struct RunSettings {
    pub cfg: RunConfig,
    pub output: Output,
    pub flags: FlagNames,
    pub placement: benchsuite_fleet::PlacementConfig,
    pub pairing: benchsuite_fleet::PairingConfig,
    /// `--rendezvous` given: rank 0 checks `-o` before it serves.
    pub rendezvous: bool,
    /// `-f FILE`, and which of its settings the command line gave (they
    /// win over the file's).
    pub plan: Option<(PathBuf, benchsuite::phase::Given)>,
    /// `--only`'s record keys.
    pub only: Vec<String>,
    pub strict: bool,
    pub verbose: bool,
    /// Progress on stderr (a terminal, and no `--no-progress`).
    pub progress: bool,
    /// `--format` given: under a launcher, the report goes to stdout too.
    pub format_given: bool,
    pub stdout_tty: bool,
}

/// [`RunSettings`] from `run`'s flags; every error names its flag.
pub fn run_settings(
    args: &RunArgs,
    registry: &Registry,
    stdout_tty: bool,
    stderr_tty: bool,
) -> Result<RunSettings> {
    let (cfg, output, flags) = run_config(args, registry, stdout_tty)?;
    Ok(RunSettings {
        cfg,
        output,
        flags,
        placement: placement(&args.cluster),
        pairing: pairing(&args.cluster),
        rendezvous: args.cluster.rendezvous.is_some(),
        plan: args.plan.clone().map(|f| (f, crate::planfile::given(args))),
        only: args.only.clone(),
        strict: args.strict,
        verbose: args.verbose,
        progress: stderr_tty && !args.no_progress,
        format_given: args.format.is_some(),
        stdout_tty,
    })
}

/// Where and how to write the run's report.
#[derive(Debug)]
pub struct Output {
    pub format: Format,
    pub file: Option<PathBuf>,
}

/// The flag a parameter came from, for error messages.
#[derive(Debug, Default)]
pub struct FlagNames(BTreeMap<String, String>);

impl FlagNames {
    pub(crate) fn flag(&self, param: &str) -> String {
        self.0
            .get(param)
            .cloned()
            .unwrap_or_else(|| format!("--param {param}"))
    }

    /// Rewrites a core configuration error so it names the flag.
    pub fn explain(&self, e: ConfigError) -> anyhow::Error {
        match e {
            ConfigError::InvalidValue {
                param,
                value,
                reason,
            } => anyhow!(
                "invalid value `{value}` for {}: {reason}",
                self.flag(&param)
            ),
            ConfigError::UnknownParam { param, valid } => anyhow!(
                "{}: no selected benchmark has a `{param}` parameter; the selected benchmarks accept: {valid}",
                self.flag(&param)
            ),
            ConfigError::UnknownOption { key, valid, hint } => anyhow!(
                "{}: no selected benchmark reads the option `{key}`; they take: {valid} (see `benchsuite list`){hint}",
                option_flag(&key)
            ),
            ConfigError::InvalidOption { key, value, reason } => anyhow!(
                "invalid value `{value}` for {}: {reason}",
                option_flag(&key)
            ),
            other => anyhow::Error::new(other),
        }
    }
}

/// The flag that sets a module option: a dedicated one, or `--opt KEY`.
fn option_flag(key: &str) -> String {
    match key {
        "token" => "--token (or --token-file)".into(),
        "peer" | "peak-mem-bw" | "allow-overwrite" => format!("--{key}"),
        _ => format!("--opt {key}"),
    }
}

/// A format flag value, checked.
pub fn parse_format(flag: &str, text: &str) -> Result<Format> {
    text.parse::<Format>().map_err(|e| anyhow!("{flag}: {e}"))
}

/// Builds the run configuration from `benchsuite run` arguments: every
/// value is parsed here (an error names its flag), then the base
/// (`--quick`'s preset or the defaults) takes them in one [`RunConfig::to_builder`]
/// step whose refusal is told with the flags' names.
pub fn run_config(
    args: &RunArgs,
    registry: &Registry,
    stdout_tty: bool,
) -> Result<(RunConfig, Output, FlagNames)> {
    // With no selector, `benchsuite run` is the safe quick pass over every module.
    let quick =
        args.quick || args.profile.is_some() || (args.selectors.is_empty() && args.plan.is_none());
    let base = if quick {
        RunConfig::quick()
    } else {
        RunConfig::default()
    };
    let mut flags = FlagNames::default();
    let mut sweep = BTreeMap::new();

    // First-class flags are syntax-checked here so `--block 1XB` names
    // `--block` whatever the selected benchmarks are.
    if let Some(b) = &args.block {
        let spec = ParamSpec::size("block", "", 1, u64::MAX, 1);
        parse_values(&spec, b).map_err(|e| flags_for("block", "--block").explain(e))?;
        sweep.insert("block".to_string(), b.clone());
        flags.0.insert("block".into(), "--block".into());
    }
    if let Some(t) = &args.threads {
        let spec = ParamSpec::count("threads", "", 1, u64::MAX, 1);
        parse_values(&spec, t).map_err(|e| flags_for("threads", "--threads").explain(e))?;
        sweep.insert("threads".to_string(), t.clone());
        flags.0.insert("threads".into(), "--threads".into());
    }
    for p in &args.params {
        let (name, value) = p.split_once('=').ok_or_else(|| {
            anyhow!("invalid value `{p}` for --param: expected NAME=VALUES, e.g. --param args=0..7")
        })?;
        let name = name.trim();
        if name.is_empty() {
            bail!("invalid value `{p}` for --param: the parameter name is empty");
        }
        if let Some(flag) = flags.0.get(name) {
            bail!("--param {name} repeats {flag}; give each parameter once");
        }
        if sweep.insert(name.to_string(), value.to_string()).is_some() {
            bail!("--param {name} is given twice; use one list, e.g. --param {name}=a,b");
        }
    }
    if let Some(preset) = &args.preset {
        if sweep.contains_key("preset") {
            bail!("--preset and --param preset= are both given; use one");
        }
        sweep.insert("preset".to_string(), preset.clone());
        flags.0.insert("preset".into(), "--preset".into());
    }
    let mut options = BTreeMap::new();
    for o in &args.options {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid value `{o}` for --opt: expected KEY=VALUE"))?;
        options.insert(k.trim().to_string(), v.to_string());
    }
    let named = [("peer", &args.peer), ("peak-mem-bw", &args.peak_mem_bw)];
    for (key, value) in named {
        if let Some(v) = value {
            options.insert(key.to_string(), v.clone());
        }
    }
    // `--opt token=T` is `--token T` by another name (warned about alike).
    let opt_token = options.remove("token").map(Secret);
    if opt_token.is_some() && (args.token.is_some() || args.token_file.is_some()) {
        bail!("--opt token= and --token or --token-file are both given; give the token once");
    }
    let flag = args.token.clone().or(opt_token);
    // BENCHSUITE_TOKEN is read only for a run with a benchmark that takes
    // a token: set in the environment, it must not break `run os`.
    let use_env = registry.select(&args.selectors).is_ok_and(|b| {
        b.iter()
            .any(|b| b.options().iter().any(|o| o.name == "token"))
    });
    if let Some((token, _)) = resolve_token(flag.as_ref(), args.token_file.as_deref(), use_env)? {
        options.insert("token".to_string(), token);
    }
    if let Some(v) = &args.allow_overwrite {
        options.insert("allow-overwrite".to_string(), v.clone());
    }
    let dur = |flag: &str, v: &Option<String>| -> Result<Option<std::time::Duration>> {
        v.as_deref()
            .map(|t| parse_duration(t).map_err(|e| anyhow!("invalid value `{t}` for {flag}: {e}")))
            .transpose()
    };
    let min_sample_time = match dur("--min-sample-time", &args.min_sample_time)? {
        Some(d) => d,
        None if args.profile == Some(crate::args::Profile::Health) => {
            base.min_sample_time().max(crate::args::HEALTH_MIN_SAMPLE)
        }
        None => base.min_sample_time(),
    };
    let warmup = dur("--warmup", &args.warmup)?.unwrap_or(base.warmup());
    let duration = dur("--duration", &args.duration)?;
    let slo = args
        .slo
        .as_deref()
        .map(|t| {
            benchsuite::capacity::Slo::parse(t)
                .map_err(|e| anyhow!("invalid value `{t}` for --slo: {e}"))
        })
        .transpose()?;
    let interval = dur("--interval", &args.interval)?;
    if let Some(dir) = &args.scratch_dir {
        let meta = std::fs::metadata(dir)
            .with_context(|| format!("--scratch-dir {}: cannot use it", dir.display()))?;
        if !meta.is_dir() {
            bail!("--scratch-dir {}: not a directory", dir.display());
        }
    }
    let cfg = base
        .to_builder()
        .selectors(args.selectors.iter().cloned())
        .sweep(sweep)
        .options(options)
        .runs(args.runs.unwrap_or(base.runs()))
        .rounds(args.rounds.unwrap_or(base.rounds()))
        .min_sample_time(min_sample_time)
        .warmup(warmup)
        .duration(duration)
        .interval(interval)
        .slo(slo)
        .scratch_dir(args.scratch_dir.clone())
        .build()
        .map_err(|e| flags.explain(e))?;

    let format = output_format(args.format.as_deref(), args.output.as_deref(), stdout_tty)?;
    Ok((
        cfg,
        Output {
            format,
            file: args.output.clone(),
        },
        flags,
    ))
}

/// The format of a report written to `output` (or stdout): `--format`,
/// else the file's extension, else a table on a terminal and JSON
/// otherwise.
pub fn output_format(
    format: Option<&str>,
    output: Option<&std::path::Path>,
    stdout_tty: bool,
) -> Result<Format> {
    let format = match (format, output) {
        (Some(f), _) => parse_format("--format", f)?,
        (None, Some(file)) => file
            .extension()
            .and_then(|e| e.to_str())
            .and_then(Format::from_extension)
            .unwrap_or(Format::Json),
        (None, None) if stdout_tty => Format::Table,
        (None, None) => Format::Json,
    };
    if !format.writes_one_stream() && output.is_none() {
        bail!(
            "--format {format} writes two files, one per github-action-benchmark tool: give -o PREFIX to write PREFIX-bigger.json and PREFIX-smaller.json"
        );
    }
    Ok(format)
}

fn flags_for(param: &str, flag: &str) -> FlagNames {
    let mut f = FlagNames::default();
    f.0.insert(param.into(), flag.into());
    f
}

/// Parsed `compare` options.
pub fn compare_options(args: &CompareArgs) -> Result<benchsuite::compare::CompareOptions> {
    use benchsuite::compare::{Allow, BetweenRun, GateRule, ThresholdRule, Tolerance};
    let mut threshold = 0.05;
    // A thresholds file's rules first: --threshold's later ones win.
    let mut rules = match &args.thresholds {
        Some(path) => {
            crate::calibrate_cmd::read_thresholds(path)?.rules(&path.display().to_string())?
        }
        None => Vec::new(),
    };
    for t in &args.threshold {
        if t.contains('=') {
            rules.push(ThresholdRule::parse(t).map_err(|e| anyhow!("--threshold {e}"))?);
            continue;
        }
        match Tolerance::parse(t).map_err(|e| anyhow!("--threshold {e}"))? {
            Tolerance::Relative(v) => threshold = v,
            Tolerance::Absolute { .. } => bail!(
                "--threshold `{t}`: an absolute threshold applies to one unit; name the metrics it is for, e.g. --threshold 'net.udp_throughput:loss={t}'"
            ),
        }
    }
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        bail!(
            "invalid value `{}` for --alpha: must be between 0 and 0.5 (0.05 gives 90% intervals)",
            args.alpha
        );
    }
    let percent = |flag: &str, v: &str| -> Result<f64> {
        match Tolerance::parse(v) {
            Ok(Tolerance::Relative(x)) => Ok(x),
            Ok(_) => bail!("{flag} `{v}`: give a percentage (`3%`)"),
            Err(e) => bail!("{flag} {e}"),
        }
    };
    let between_run = match &args.between_run_cv {
        Some(v) => BetweenRun::Cv(percent("--between-run-cv", v)?),
        None => BetweenRun::Prior,
    };
    let rule = match args.rule.as_str() {
        "auto" => None,
        "interval" => Some(GateRule::Interval),
        "band" => Some(GateRule::Band),
        "paired" => Some(GateRule::Paired),
        other => bail!("--rule `{other}`: expected auto, interval, band or paired"),
    };
    Ok(benchsuite::compare::CompareOptions {
        threshold,
        rules,
        alpha: args.alpha,
        allow: Allow {
            missing: args.allow_missing,
            skipped: args.allow_skipped,
            unjudged: args.allow_unjudged,
            mixed_hosts: args.allow_mixed_hosts,
        },
        tail_threshold: percent("--tail-threshold", &args.tail_threshold)?,
        between_run,
        rule,
        paired: false,
        beta: benchsuite::compare::DEFAULT_BETA,
    })
}

/// `run`'s launcher flags as the fleet crate takes them.
pub fn placement(args: &ClusterArgs) -> benchsuite_fleet::PlacementConfig {
    benchsuite_fleet::PlacementConfig {
        output_dir: args.output_dir.clone(),
        per_task: args.per_task,
        no_cluster: args.no_cluster,
        world_size: args.world_size,
        job_id: args.job_id.clone(),
    }
}

/// `run`'s pairing flags as the fleet crate takes them (it checks their
/// values once a failed check can be told to the other ranks).
pub fn pairing(args: &ClusterArgs) -> benchsuite_fleet::PairingConfig {
    use benchsuite_fleet::NetPairs;
    benchsuite_fleet::PairingConfig {
        net_pairs: match args.net_pairs {
            NetPairsArg::Auto => NetPairs::Auto,
            NetPairsArg::Off => NetPairs::Off,
            NetPairsArg::Pairwise => NetPairs::Pairwise,
            NetPairsArg::FanIn => NetPairs::FanIn,
        },
        net_bind: args.net_bind,
        rendezvous_timeout: args.rendezvous_timeout.clone(),
        rendezvous: args.rendezvous.clone(),
    }
}
