//! Phases and plan files (`benchsuite run -f plan.toml`): a run in named
//! phases, one after the other into one report ([`run_phases`]).
//!
//! ```toml
//! # A plan: named phases run one after the other into one report.
//! [[phase]]
//! name = "flops"                          # required, unique
//! select = ["cpu.flops", "cpu.iops"]      # selectors, as on the command line
//! params = { threads = "1,2,4,8", precision = "f64,f32" }   # as --param
//! quick_params = { threads = "1,2" }      # replaces params of the same name with --quick
//! runs = 5                                # also rounds, duration, interval,
//! rounds = 3                              # min_sample_time, warmup,
//! quick_duration = "20s"                  # and duration with --quick
//! slo = "p99<=1ms"                        # a capacity search (see `capacity`)
//! ```
//!
//! What the command line gave wins over the file ([`Given`], filled by the
//! caller): a parameter of the base configuration replaces a phase's
//! parameter of that name, and a setting the command line gave (runs,
//! rounds, duration, interval, min_sample_time, warmup, slo) the phase's.
//! Selectors come from the file only. An unknown key, a bad value
//! or a parameter no selected benchmark takes is an error naming the file
//! and line, before anything runs (exit 2). Each record carries its
//! phase's name (`record.phase`); the HTML report draws phases apart.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::config::RunConfig;
use crate::error::ConfigError;
use crate::plan::{Plan, plan};
use crate::registry::Registry;
use crate::results::Report;
use crate::runner::{Observer, run_plan};
use crate::units::parse_duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    /// What the plan is for (shown nowhere; for readers of the file).
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    phase: Vec<Spanned<PhaseTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseTable {
    name: String,
    select: Spanned<Vec<String>>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    quick_params: BTreeMap<String, Spanned<toml::Value>>,
    runs: Option<Spanned<usize>>,
    rounds: Option<Spanned<usize>>,
    duration: Option<Spanned<String>>,
    /// Replaces `duration` with `--quick`.
    quick_duration: Option<Spanned<String>>,
    interval: Option<Spanned<String>>,
    min_sample_time: Option<Spanned<String>>,
    warmup: Option<Spanned<String>>,
    /// A latency target (`"p99<=1ms"`): the phase is a capacity search.
    slo: Option<Spanned<String>>,
}

/// One phase, ready to plan: its name, configuration, and (from a plan
/// file) where its parameters are in the file, for errors.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The phase's name.
    pub name: String,
    /// The run configuration: the command line's, with the phase applied.
    pub config: RunConfig,
    file: String,
    line: usize,
    param_lines: BTreeMap<String, usize>,
}

/// What the command line gave, which wins over a plan file's phases.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `--quick`: a phase's `quick_params` and `quick_duration` apply.
    pub quick: bool,
    /// Selectors given besides the file (an error: the file names them).
    pub selectors: Vec<String>,
    /// `--runs` was given.
    pub runs: bool,
    /// `--rounds` was given.
    pub rounds: bool,
    /// `--duration` was given.
    pub duration: bool,
    /// `--interval` was given.
    pub interval: bool,
    /// `--min-sample-time` was given.
    pub min_sample_time: bool,
    /// `--warmup` was given.
    pub warmup: bool,
    /// `--slo` was given.
    pub slo: bool,
}

/// A plan file that cannot be read, or a phase that cannot be planned: the
/// message names the file and, where it can, the line (`plan.toml:12:
/// phase `disk`: ...`), or the phase.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PhaseError(pub String);

macro_rules! fail {
    ($($t:tt)*) => { return Err(PhaseError(format!($($t)*))) };
}

impl Phase {
    /// A phase not from a file (an embedder's, or the command line's one).
    pub fn new(name: impl Into<String>, config: RunConfig) -> Phase {
        Phase {
            name: name.into(),
            config,
            file: String::new(),
            line: 0,
            param_lines: BTreeMap::new(),
        }
    }

    /// A planning error of this phase, with the file and line it comes
    /// from (the parameter's line when the error names one).
    pub fn explain(&self, e: ConfigError) -> PhaseError {
        if self.file.is_empty() {
            return PhaseError(format!("phase `{}`: {e}", self.name));
        }
        let param = match &e {
            ConfigError::InvalidValue { param, .. } | ConfigError::UnknownParam { param, .. } => {
                Some(param.as_str())
            }
            _ => None,
        };
        let line = param
            .and_then(|p| self.param_lines.get(p))
            .copied()
            .unwrap_or(self.line);
        PhaseError(format!("{}:{line}: phase `{}`: {e}", self.file, self.name))
    }
}

fn line_of(text: &str, span: Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

/// The value of a parameter as the command line would type it.
fn param_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "on" } else { "off" }.into()),
        toml::Value::Array(a) => a
            .iter()
            .map(param_text)
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(",")),
        _ => None,
    }
}

/// Reads `path` and builds one configuration per phase from `base` (the
/// command line's configuration) and `args` (which settings the command
/// line gave, which win).
pub fn read_plan(path: &Path, args: &Given, base: &RunConfig) -> Result<Vec<Phase>, PhaseError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PhaseError(format!("-f {file}: cannot read it: {e}")))?;
    let plan: PlanFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(&text, s));
        PhaseError(format!("{file}:{line}: {}", e.message()))
    })?;
    if !args.selectors.is_empty() {
        fail!(
            "-f {file}: the plan names what to run; give no selectors on the command line (they were: {})",
            args.selectors.join(" ")
        );
    }
    if plan.phase.is_empty() {
        fail!("{file}:1: the plan has no [[phase]]");
    }
    let mut out: Vec<Phase> = Vec::new();
    for sp in plan.phase {
        let line = line_of(&text, sp.span());
        let p = sp.into_inner();
        let at = |span: Range<usize>| line_of(&text, span);
        if out.iter().any(|o| o.name == p.name) {
            fail!("{file}:{line}: a second phase named `{}`", p.name);
        }
        if p.select.get_ref().is_empty() {
            fail!(
                "{file}:{}: phase `{}`: `select` is empty",
                at(p.select.span()),
                p.name
            );
        }
        let mut cfg = base.to_builder();
        cfg.selectors(p.select.get_ref().clone());
        let mut sweep = base.sweep().clone();
        let mut param_lines = BTreeMap::new();
        let mut params: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let quick = args.quick;
        for (table, active) in [(&p.params, true), (&p.quick_params, quick)] {
            for (k, v) in table {
                let l = at(v.span());
                let value = param_text(v.get_ref()).ok_or_else(|| {
                    PhaseError(format!(
                        "{file}:{l}: phase `{}`: parameter `{k}`: expected a value as on the command line (\"1,2,4\", 4096, \"4K..1M:x2\")",
                        p.name
                    ))
                })?;
                if active {
                    params.insert(k.clone(), (value, l));
                }
            }
        }
        for (k, (value, l)) in params {
            param_lines.insert(k.clone(), l);
            // The command line's value of the same parameter wins.
            sweep.entry(k).or_insert(value);
        }
        cfg.sweep(sweep);
        if !args.runs
            && let Some(r) = &p.runs
        {
            cfg.runs(*r.get_ref());
        }
        if !args.rounds
            && let Some(r) = &p.rounds
        {
            cfg.rounds(*r.get_ref());
        }
        let dur = |v: &Option<Spanned<String>>,
                   key: &str|
         -> Result<Option<std::time::Duration>, PhaseError> {
            v.as_ref()
                .map(|s| {
                    parse_duration(s.get_ref()).map_err(|e| {
                        PhaseError(format!(
                            "{file}:{}: phase `{}`: `{key}`: {e}",
                            at(s.span()),
                            p.name
                        ))
                    })
                })
                .transpose()
        };
        if !args.duration
            && let Some(d) = dur(&p.duration, "duration")?
        {
            cfg.duration(d);
        }
        if !args.duration
            && quick
            && let Some(d) = dur(&p.quick_duration, "quick_duration")?
        {
            cfg.duration(d);
        }
        if !args.interval
            && let Some(d) = dur(&p.interval, "interval")?
        {
            cfg.interval(d);
        }
        if !args.min_sample_time
            && let Some(d) = dur(&p.min_sample_time, "min_sample_time")?
        {
            cfg.min_sample_time(d);
        }
        if !args.warmup
            && let Some(d) = dur(&p.warmup, "warmup")?
        {
            cfg.warmup(d);
        }
        if !args.slo
            && let Some(t) = &p.slo
        {
            cfg.slo(crate::capacity::Slo::parse(t.get_ref()).map_err(|e| {
                PhaseError(format!(
                    "{file}:{}: phase `{}`: `slo`: {e}",
                    at(t.span()),
                    p.name
                ))
            })?);
        }
        let cfg = cfg
            .build()
            .map_err(|e| PhaseError(format!("{file}:{line}: phase `{}`: {e}", p.name)))?;
        out.push(Phase {
            name: p.name,
            config: cfg,
            file: file.clone(),
            line,
            param_lines,
        });
    }
    Ok(out)
}

/// Plans every phase (all of them before anything runs, so a bad point of
/// the last phase is an error before the first measures), then runs them
/// one after the other into one report: each record carries its phase's
/// name (`record.phase`), and the report's configuration is the first
/// phase's with every phase's selectors. Stops after the phase during
/// which a phase's `cancel` flag was set.
pub fn run_phases(
    registry: &Registry,
    phases: &[Phase],
    observer: &mut dyn Observer,
) -> Result<Report, PhaseError> {
    let plans = phases
        .iter()
        .map(|p| plan(registry, &p.config).map_err(|e| p.explain(e)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut report: Option<Report> = None;
    for (phase, plan) in phases.iter().zip(&plans) {
        let r = run_phase(plan, phase, observer);
        report = Some(merge_phase(report, r));
        if phase.config.is_cancelled() {
            break;
        }
    }
    report.ok_or_else(|| PhaseError("no phase to run".into()))
}

/// Runs one planned phase; its records carry the phase's name.
pub fn run_phase(plan: &Plan<'_>, phase: &Phase, observer: &mut dyn Observer) -> Report {
    let mut r = run_plan(plan, &phase.config, observer);
    for rec in &mut r.records {
        rec.phase = Some(phase.name.clone());
    }
    r
}

/// Adds the report of a later phase to those before (`acc`): its records
/// after theirs, its selectors to theirs, and the module facts it found
/// (the disk under its files, a NIC) to the host section.
pub fn merge_phase(acc: Option<Report>, r: Report) -> Report {
    let Some(mut acc) = acc else {
        return r;
    };
    for s in &r.config.selectors {
        if !acc.config.selectors.contains(s) {
            acc.config.selectors.push(s.clone());
        }
    }
    acc.records.extend(r.records);
    for (k, v) in r.host.extra {
        acc.host.extra.entry(k).or_insert(v);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_typed_on_the_command_line() {
        let v: toml::Value =
            toml::from_str("a = [1, 2, 4]\nb = \"4K..1M:x2\"\nc = true\nd = 8").unwrap();
        assert_eq!(param_text(&v["a"]).unwrap(), "1,2,4");
        assert_eq!(param_text(&v["b"]).unwrap(), "4K..1M:x2");
        assert_eq!(param_text(&v["c"]).unwrap(), "on");
        assert_eq!(param_text(&v["d"]).unwrap(), "8");
        assert_eq!(line_of("x\ny\nz", 4..5), 3);
    }
}
