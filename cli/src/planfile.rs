//! Plan files: `benchsuite run -f plan.toml`.
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
//! ```
//!
//! Command-line flags override the file: `--param`/`--block`/`--threads`
//! replace a phase's parameter of that name, `--runs`, `--rounds`,
//! `--duration`, `--interval`, `--min-sample-time`, `--warmup` its
//! setting. Selectors come from the file only. An unknown key, a bad value
//! or a parameter no selected benchmark takes is an error naming the file
//! and line, before anything runs (exit 2). Each record carries its
//! phase's name (`record.phase`); the HTML report draws phases apart.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use anyhow::{Result, anyhow};
use benchsuite::units::parse_duration;
use benchsuite::{ConfigError, RunConfig};
use serde::Deserialize;
use toml::Spanned;

use crate::args::RunArgs;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    /// What the plan is for (shown nowhere; for readers of the file).
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    phase: Vec<Spanned<Phase>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Phase {
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
}

/// One phase, ready to plan: its name, configuration, and where its
/// parameters are in the file (for errors).
#[derive(Clone)]
pub struct PlannedPhase {
    /// The phase's name.
    pub name: String,
    /// The run configuration: the command line's, with the phase applied.
    pub config: RunConfig,
    file: String,
    line: usize,
    param_lines: BTreeMap<String, usize>,
}

impl PlannedPhase {
    /// A planning error of this phase, with the file and line it comes
    /// from (the parameter's line when the error names one).
    pub fn explain(&self, e: ConfigError) -> anyhow::Error {
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
        anyhow!("{}:{line}: phase `{}`: {e}", self.file, self.name)
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
/// command line's configuration) and `args` (to know which settings the
/// command line gave, which win).
pub fn phases(path: &Path, args: &RunArgs, base: &RunConfig) -> Result<Vec<PlannedPhase>> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("-f {file}: cannot read it: {e}"))?;
    let plan: PlanFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(&text, s));
        anyhow!("{file}:{line}: {}", e.message())
    })?;
    if !args.selectors.is_empty() {
        anyhow::bail!(
            "-f {file}: the plan names what to run; give no selectors on the command line (they were: {})",
            args.selectors.join(" ")
        );
    }
    if plan.phase.is_empty() {
        anyhow::bail!("{file}:1: the plan has no [[phase]]");
    }
    let mut out: Vec<PlannedPhase> = Vec::new();
    for sp in plan.phase {
        let line = line_of(&text, sp.span());
        let p = sp.into_inner();
        let at = |span: Range<usize>| line_of(&text, span);
        if out.iter().any(|o| o.name == p.name) {
            anyhow::bail!("{file}:{line}: a second phase named `{}`", p.name);
        }
        if p.select.get_ref().is_empty() {
            anyhow::bail!(
                "{file}:{}: phase `{}`: `select` is empty",
                at(p.select.span()),
                p.name
            );
        }
        let mut cfg = base.clone();
        cfg.selectors = p.select.get_ref().clone();
        let mut param_lines = BTreeMap::new();
        let mut params: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let quick = args.quick;
        for (table, active) in [(&p.params, true), (&p.quick_params, quick)] {
            for (k, v) in table {
                let l = at(v.span());
                let value = param_text(v.get_ref()).ok_or_else(|| {
                    anyhow!(
                        "{file}:{l}: phase `{}`: parameter `{k}`: expected a value as on the command line (\"1,2,4\", 4096, \"4K..1M:x2\")",
                        p.name
                    )
                })?;
                if active {
                    params.insert(k.clone(), (value, l));
                }
            }
        }
        for (k, (value, l)) in params {
            param_lines.insert(k.clone(), l);
            // The command line's value of the same parameter wins.
            cfg.sweep.entry(k).or_insert(value);
        }
        if args.runs.is_none()
            && let Some(r) = &p.runs
        {
            cfg.runs = *r.get_ref();
        }
        if args.rounds.is_none()
            && let Some(r) = &p.rounds
        {
            cfg.rounds = *r.get_ref();
        }
        let dur = |v: &Option<Spanned<String>>, key: &str| -> Result<Option<std::time::Duration>> {
            v.as_ref()
                .map(|s| {
                    parse_duration(s.get_ref()).map_err(|e| {
                        anyhow!("{file}:{}: phase `{}`: `{key}`: {e}", at(s.span()), p.name)
                    })
                })
                .transpose()
        };
        if args.duration.is_none()
            && let Some(d) = dur(&p.duration, "duration")?
        {
            cfg.duration = Some(d);
        }
        if args.duration.is_none()
            && quick
            && let Some(d) = dur(&p.quick_duration, "quick_duration")?
        {
            cfg.duration = Some(d);
        }
        if args.interval.is_none()
            && let Some(d) = dur(&p.interval, "interval")?
        {
            cfg.interval = Some(d);
        }
        if args.min_sample_time.is_none()
            && let Some(d) = dur(&p.min_sample_time, "min_sample_time")?
        {
            cfg.min_sample_time = d;
        }
        if args.warmup.is_none()
            && let Some(d) = dur(&p.warmup, "warmup")?
        {
            cfg.warmup = d;
        }
        cfg.validate()
            .map_err(|e| anyhow!("{file}:{line}: phase `{}`: {e}", p.name))?;
        out.push(PlannedPhase {
            name: p.name,
            config: cfg,
            file: file.clone(),
            line,
            param_lines,
        });
    }
    Ok(out)
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

    use proptest::prelude::*;

    /// The shipped plans, the seeds the fuzzer mutates.
    const SEEDS: [&str; 8] = [
        include_str!("../../plans/os.toml"),
        include_str!("../../plans/cpu.toml"),
        include_str!("../../plans/cpu-trace.toml"),
        include_str!("../../plans/memory.toml"),
        include_str!("../../plans/disk.toml"),
        include_str!("../../plans/network.toml"),
        include_str!("../../plans/gpu.toml"),
        include_str!("../../plans/sysbench.toml"),
    ];

    /// Fragments a mutation inserts: TOML syntax, plan keys, parameter
    /// values good and bad, multi-byte text.
    const BITS: [&str; 24] = [
        "[[phase]]\n",
        "name = \"x\"\n",
        "select = [\"os.syscall\"]\n",
        "select = []\n",
        "params = { threads = \"1..1G:x2\" }\n",
        "params = { nope = 1 }\n",
        "quick_params = { block = [1, 2.5, true] }\n",
        "runs = -1\n",
        "runs = 99999999999999999999\n",
        "rounds = 0\n",
        "duration = \"-3s\"\n",
        "interval = \"0s\"\n",
        "min_sample_time = \"1e400s\"\n",
        "=",
        "\"",
        "{",
        "}",
        "[",
        "\n",
        "#",
        "é",
        "💥",
        "\u{0}",
        "x = { y = { z = [[[]]] } }\n",
    ];

    fn mutated() -> impl Strategy<Value = String> {
        (
            0..SEEDS.len(),
            prop::collection::vec((any::<prop::sample::Index>(), 0..BITS.len(), 0..3u8), 1..6),
        )
            .prop_map(|(seed, edits)| {
                let mut s = SEEDS[seed].to_string();
                for (at, bit, kind) in edits {
                    let mut i = at.index(s.len() + 1);
                    while !s.is_char_boundary(i) {
                        i -= 1;
                    }
                    match kind {
                        // Delete up to 12 bytes.
                        0 => {
                            let mut j = (i + 12).min(s.len());
                            while !s.is_char_boundary(j) {
                                j -= 1;
                            }
                            s.replace_range(i..j, "");
                        }
                        _ => s.insert_str(i, BITS[bit]),
                    }
                }
                s
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A mangled plan never panics the parser or the planner: it plans,
        /// or the error names the file (and a line).
        #[test]
        fn mangled_plans_plan_or_name_the_file(text in mutated()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("plan.toml");
            std::fs::write(&path, &text).unwrap();
            let file = path.display().to_string();
            let cli = <crate::args::Cli as clap::Parser>::try_parse_from([
                "benchsuite", "run", "-f", &file, "--quick",
            ])
            .unwrap();
            let crate::args::Command::Run(args) = cli.command else {
                unreachable!()
            };
            let base = RunConfig::default();
            match phases(&path, &args, &base) {
                Err(e) => {
                    let m = format!("{e:#}");
                    prop_assert!(
                        m.starts_with(&format!("{file}:")) || m.starts_with(&format!("-f {file}")),
                        "{m}"
                    );
                }
                Ok(planned) => {
                    let registry = benchsuite::registry();
                    for p in planned {
                        if let Err(e) = benchsuite::runner::plan(&registry, &p.config) {
                            let m = format!("{:#}", p.explain(e));
                            prop_assert!(m.starts_with(&format!("{file}:")), "{m}");
                        }
                    }
                }
            }
        }
    }
}
