//! Raw arguments → a validated [`RunConfig`] plus output settings.
//!
//! Every value is checked here or in the core's planner before anything
//! runs; errors name the flag the user typed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result, anyhow, bail};
use benchsuite::export::Format;
use benchsuite::sweep::parse_values;
use benchsuite::units::parse_duration;
use benchsuite::{ConfigError, ParamSpec, RunConfig};

use crate::args::{CompareArgs, RunArgs};

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
    fn flag(&self, param: &str) -> String {
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
        "peer" | "token" | "peak-mem-bw" | "allow-overwrite" => format!("--{key}"),
        _ => format!("--opt {key}"),
    }
}

/// A format flag value, checked.
pub fn parse_format(flag: &str, text: &str) -> Result<Format> {
    text.parse::<Format>().map_err(|e| anyhow!("{flag}: {e}"))
}

/// Builds the run configuration from `benchsuite run` arguments.
pub fn run_config(args: &RunArgs, stdout_tty: bool) -> Result<(RunConfig, Output, FlagNames)> {
    // With no selector, `benchsuite run` is the safe quick pass over every module.
    let quick = args.quick || args.selectors.is_empty();
    let mut cfg = if quick {
        RunConfig::quick()
    } else {
        RunConfig::default()
    };
    cfg.selectors = args.selectors.clone();
    let mut flags = FlagNames::default();

    // First-class flags are syntax-checked here so `--block 1XB` names
    // `--block` whatever the selected benchmarks are.
    if let Some(b) = &args.block {
        let spec = ParamSpec::size("block", "", 1, u64::MAX, 1);
        parse_values(&spec, b).map_err(|e| flags_for("block", "--block").explain(e))?;
        cfg.sweep.insert("block".into(), b.clone());
        flags.0.insert("block".into(), "--block".into());
    }
    if let Some(t) = &args.threads {
        let spec = ParamSpec::count("threads", "", 1, u64::MAX, 1);
        parse_values(&spec, t).map_err(|e| flags_for("threads", "--threads").explain(e))?;
        cfg.sweep.insert("threads".into(), t.clone());
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
        if cfg
            .sweep
            .insert(name.to_string(), value.to_string())
            .is_some()
        {
            bail!("--param {name} is given twice; use one list, e.g. --param {name}=a,b");
        }
    }
    if let Some(preset) = &args.preset {
        if cfg.sweep.contains_key("preset") {
            bail!("--preset and --param preset= are both given; use one");
        }
        cfg.sweep.insert("preset".into(), preset.clone());
        flags.0.insert("preset".into(), "--preset".into());
    }
    for o in &args.options {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid value `{o}` for --opt: expected KEY=VALUE"))?;
        cfg.options.insert(k.trim().to_string(), v.to_string());
    }
    let named = [
        ("peer", &args.peer),
        ("token", &args.token),
        ("peak-mem-bw", &args.peak_mem_bw),
    ];
    for (key, value) in named {
        if let Some(v) = value {
            cfg.options.insert(key.to_string(), v.clone());
        }
    }
    if args.allow_overwrite {
        cfg.options.insert("allow-overwrite".into(), "true".into());
    }
    if let Some(r) = args.runs {
        cfg.runs = r;
    }
    if let Some(r) = args.rounds {
        cfg.rounds = r;
    }
    let dur = |flag: &str, v: &Option<String>| -> Result<Option<std::time::Duration>> {
        v.as_deref()
            .map(|t| parse_duration(t).map_err(|e| anyhow!("invalid value `{t}` for {flag}: {e}")))
            .transpose()
    };
    if let Some(d) = dur("--min-sample-time", &args.min_sample_time)? {
        cfg.min_sample_time = d;
    }
    if let Some(d) = dur("--warmup", &args.warmup)? {
        cfg.warmup = d;
    }
    cfg.duration = dur("--duration", &args.duration)?;
    cfg.interval = dur("--interval", &args.interval)?;
    if let Some(dir) = &args.scratch_dir {
        let meta = std::fs::metadata(dir)
            .with_context(|| format!("--scratch-dir {}: cannot use it", dir.display()))?;
        if !meta.is_dir() {
            bail!("--scratch-dir {}: not a directory", dir.display());
        }
        cfg.scratch_dir = Some(dir.clone());
    }
    cfg.validate().map_err(|e| flags.explain(e))?;

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
    use benchsuite::compare::{Allow, ThresholdRule, Tolerance};
    let mut threshold = 0.05;
    let mut rules = Vec::new();
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
    Ok(benchsuite::compare::CompareOptions {
        threshold,
        rules,
        alpha: args.alpha,
        allow: Allow {
            missing: args.allow_missing,
            skipped: args.allow_skipped,
            unjudged: args.allow_unjudged,
        },
    })
}
