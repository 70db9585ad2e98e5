//! Planning: select benchmarks and expand and validate every sweep point
//! before anything runs.

use std::borrow::Cow;
use std::sync::Arc;

use crate::bench::{Benchmark, Context, OptionSpec};
use crate::config::RunConfig;
use crate::error::ConfigError;
use crate::host::Host;
use crate::param::Point;
use crate::registry::Registry;
use crate::sweep::{Defaults, expand};

/// One benchmark with the points it will run.
#[derive(Debug)]
pub struct PlannedBench<'r> {
    /// The benchmark.
    pub bench: &'r dyn Benchmark,
    /// Its sweep points, in order.
    pub points: Vec<Point>,
}

/// Everything that will run, fully validated.
#[derive(Debug)]
pub struct Plan<'r> {
    /// Benchmarks and their points.
    pub benches: Vec<PlannedBench<'r>>,
    /// The context every benchmark was validated against and will run in.
    pub ctx: Context,
}

impl Plan<'_> {
    /// The machine the plan was made for.
    pub fn host(&self) -> &Host {
        &self.ctx.host
    }

    /// Total number of records the run will produce.
    pub fn len(&self) -> usize {
        self.benches.iter().map(|b| b.points.len()).sum()
    }

    /// True if nothing will run.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Selects benchmarks and expands and validates every sweep point, before
/// anything runs. A parameter no selected benchmark accepts is an error
/// listing the valid ones.
pub fn plan<'r>(registry: &'r Registry, config: &RunConfig) -> Result<Plan<'r>, ConfigError> {
    plan_on(registry, config, Host::detect())
}

/// [`plan`] for a given host (an embedding program that knows better, or a
/// test that fakes one): benchmarks validate their points against it, and
/// [`run_plan`](crate::runner::run_plan) records it.
pub fn plan_on<'r>(
    registry: &'r Registry,
    config: &RunConfig,
    host: Host,
) -> Result<Plan<'r>, ConfigError> {
    config.debug_assert_valid();
    let ctx = config.context(Arc::new(host));
    let selected = registry.select(config.selectors())?;
    let metas: Vec<_> = selected.iter().map(|b| b.meta()).collect();
    for name in config.sweep().keys() {
        if !metas.iter().any(|m| crate::sweep::key_applies(name, m)) {
            let (sel, _) = crate::sweep::scope_of(name);
            let mut valid: Vec<&str> = metas
                .iter()
                .filter(|m| sel.is_none_or(|s| crate::sweep::selects(s, &m.id)))
                .flat_map(|m| m.params.iter().map(|p| p.name.as_ref()))
                .collect();
            valid.sort_unstable();
            valid.dedup();
            return Err(ConfigError::UnknownParam {
                param: name.clone(),
                valid: if valid.is_empty() {
                    "(none)".into()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    check_options(registry, &selected, config)?;
    let defaults = if config.is_smoke() {
        Defaults::Smoke
    } else {
        Defaults::Default
    };
    let mut benches = Vec::new();
    for (bench, meta) in selected.into_iter().zip(&metas) {
        let mut points = expand(
            meta,
            &crate::sweep::sweep_for(config.sweep(), meta),
            defaults,
        )?;
        crate::capacity::plan_points(meta, &mut points, config)?;
        for p in &points {
            bench.validate(&ctx, p)?;
        }
        benches.push(PlannedBench { bench, points });
    }
    Ok(Plan { benches, ctx })
}

/// Every option must be declared by a selected benchmark, and its value
/// must pass that declaration's check.
fn check_options(
    registry: &Registry,
    selected: &[&dyn Benchmark],
    config: &RunConfig,
) -> Result<(), ConfigError> {
    let specs: Vec<OptionSpec> = selected.iter().flat_map(|b| b.options()).collect();
    for (key, value) in config.options() {
        match specs.iter().find(|s| s.name == key.as_str()) {
            Some(spec) => (spec.check)(value).map_err(|reason| ConfigError::InvalidOption {
                key: key.clone(),
                value: if spec.secret {
                    crate::bench::REDACTED.to_string()
                } else {
                    value.clone()
                },
                reason: reason.into(),
            })?,
            None => {
                let mut valid: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
                valid.sort_unstable();
                valid.dedup();
                let readers: Vec<Cow<'static, str>> = registry
                    .benchmarks()
                    .filter(|b| b.options().iter().any(|o| o.name == key.as_str()))
                    .map(|b| b.meta().id)
                    .collect();
                return Err(ConfigError::UnknownOption {
                    key: key.clone(),
                    valid: if valid.is_empty() {
                        "none".into()
                    } else {
                        valid.join(", ")
                    },
                    hint: if readers.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; `{key}` is read by {}, which {} not selected",
                            readers.join(", "),
                            if readers.len() == 1 { "is" } else { "are" }
                        )
                    },
                });
            }
        }
    }
    Ok(())
}
