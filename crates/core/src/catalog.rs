//! What a registry offers, as data: every benchmark's parameters (kind,
//! default, allowed values or range, smoke value), metrics (unit,
//! direction) and module options, and optionally whether it can run here.
//! `benchsuite list --format json` prints it, so wrappers and plan authors
//! need not scrape `--help`.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;

use crate::bench::{Benchmark, Context, Direction, Probe};
use crate::param::{ParamKind, ParamSpec, Value};
use crate::registry::Registry;

/// The whole catalog: the modules, then every benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Catalog {
    /// The version of benchsuite that describes itself.
    pub tool_version: &'static str,
    /// The modules, in the order `benchsuite run` runs them.
    pub modules: Vec<ModuleInfo>,
    /// The benchmarks, in the order `benchsuite run` runs them.
    pub benchmarks: Vec<BenchmarkInfo>,
}

/// One module.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleInfo {
    /// Name (`os`, `disk`), the prefix of its benchmarks' ids.
    pub name: Cow<'static, str>,
    /// One-line description.
    pub description: Cow<'static, str>,
}

/// One benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct BenchmarkInfo {
    /// Id (`disk.io`).
    pub id: Cow<'static, str>,
    /// Its module (`disk`).
    pub module: Cow<'static, str>,
    /// One-line description.
    pub description: Cow<'static, str>,
    /// Its parameters.
    pub params: Vec<ParamInfo>,
    /// Its metrics.
    pub metrics: Vec<MetricInfo>,
    /// The module options (`--opt NAME=VALUE`) it reads.
    pub options: Vec<OptionInfo>,
    /// Whether it can run here; present only when probed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeInfo>,
}

/// One parameter.
#[derive(Debug, Clone, Serialize)]
pub struct ParamInfo {
    /// Name (`--param NAME=...`).
    pub name: Cow<'static, str>,
    /// `count`, `size` (bytes), `choice`, `bool` or `text`.
    pub kind: &'static str,
    /// The default, as stored in a report (`1048576`, `"read"`, `true`).
    pub default: Value,
    /// The default as a user would type it (`1MiB`, `read`, `on`).
    pub default_text: String,
    /// The value `--quick` and the conformance tests use.
    pub smoke: Value,
    /// The allowed range of a count or size, as text (`512B..100MiB`), or
    /// the choices (`read|write`), or what a text may be.
    pub accepts: String,
    /// Smallest accepted value of a count or size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// Largest accepted value of a count or size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// The names a choice accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<&'static str>>,
    /// The unit of a size (`B`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    /// One-line description.
    pub help: Cow<'static, str>,
}

/// One metric.
#[derive(Debug, Clone, Serialize)]
pub struct MetricInfo {
    /// Name (`bandwidth`).
    pub name: Cow<'static, str>,
    /// Base unit (`B/s`, `s`).
    pub unit: Cow<'static, str>,
    /// Which way is better.
    pub direction: Direction,
}

/// One module option.
#[derive(Debug, Clone, Serialize)]
pub struct OptionInfo {
    /// Key (`--opt NAME=VALUE`).
    pub name: Cow<'static, str>,
    /// One-line description.
    pub help: Cow<'static, str>,
    /// Whether its value is a secret (never written to a report).
    pub secret: bool,
}

/// Whether a benchmark can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeInfo {
    /// True when it can run.
    pub ready: bool,
    /// Why it cannot (its records would be skipped with this reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Describes the benchmarks of `registry` whose ids are in `ids` (all when
/// `None`), with the modules that hold them; with `probe`, asks each one
/// whether it can run in that context (a panicking probe is a skip).
pub fn catalog(registry: &Registry, ids: Option<&[&str]>, probe: Option<&Context>) -> Catalog {
    let wanted = |b: &dyn Benchmark| ids.is_none_or(|ids| ids.contains(&b.meta().id.as_ref()));
    let modules = registry
        .modules()
        .iter()
        .filter(|m| ids.is_none() || m.benchmarks.iter().any(|b| wanted(b.as_ref())))
        .map(|m| ModuleInfo {
            name: m.name.clone(),
            description: m.description.clone(),
        })
        .collect();
    let benchmarks = registry
        .benchmarks()
        .filter(|b| wanted(*b))
        .map(|b| describe(b, probe))
        .collect();
    Catalog {
        tool_version: env!("CARGO_PKG_VERSION"),
        modules,
        benchmarks,
    }
}

/// One benchmark's entry.
pub fn describe(bench: &dyn Benchmark, probe: Option<&Context>) -> BenchmarkInfo {
    let meta = bench.meta();
    let probe = probe.map(
        |ctx| match catch_unwind(AssertUnwindSafe(|| bench.probe(ctx))) {
            Ok(Probe::Ready) => ProbeInfo {
                ready: true,
                reason: None,
            },
            Ok(Probe::Skip(why)) => ProbeInfo {
                ready: false,
                reason: Some(why),
            },
            Err(_) => ProbeInfo {
                ready: false,
                reason: Some("probe panicked".into()),
            },
        },
    );
    BenchmarkInfo {
        module: Cow::Owned(meta.module().to_string()),
        id: meta.id,
        description: meta.description,
        params: meta.params.iter().map(param).collect(),
        metrics: meta
            .metrics
            .into_iter()
            .map(|m| MetricInfo {
                name: m.name,
                unit: m.unit,
                direction: m.direction,
            })
            .collect(),
        options: bench
            .options()
            .into_iter()
            .map(|o| OptionInfo {
                name: o.name,
                help: o.help,
                secret: o.secret,
            })
            .collect(),
        probe,
    }
}

fn param(p: &ParamSpec) -> ParamInfo {
    let (kind, min, max, values, unit) = match &p.kind {
        ParamKind::Count { min, max } => ("count", Some(*min), Some(*max), None, None),
        ParamKind::Size { min, max } => ("size", Some(*min), Some(*max), None, Some("B")),
        ParamKind::Choice(names) => ("choice", None, None, Some(names.to_vec()), None),
        ParamKind::Bool => ("bool", None, None, None, None),
        ParamKind::Text { .. } => ("text", None, None, None, None),
        ParamKind::Rate { max } => ("rate", Some(1), Some(*max), None, Some("/s")),
    };
    ParamInfo {
        name: p.name.clone(),
        kind,
        default: p.default.clone(),
        default_text: p.kind.display(&p.default),
        smoke: p.smoke_value().clone(),
        accepts: p.kind.describe(),
        min,
        max,
        values,
        unit,
        help: p.help.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Meta, MetricSpec, OptionSpec};

    struct Fake;

    impl Benchmark for Fake {
        fn meta(&self) -> Meta {
            Meta {
                id: "fake.io".into(),
                description: "a fake".into(),
                params: vec![
                    ParamSpec::size("block", "I/O size", 512, 1 << 20, 4096)
                        .with_smoke(Value::Int(512)),
                    ParamSpec::choice("op", "what", &["read", "write"], "read"),
                ],
                metrics: vec![MetricSpec::time_per_op("time_per_op")],
            }
        }

        fn options(&self) -> Vec<OptionSpec> {
            vec![OptionSpec::secret("token", "the token")]
        }

        fn probe(&self, _: &Context) -> Probe {
            Probe::Skip("no fake device".into())
        }

        fn prepare(
            &self,
            _: &Context,
            _: &crate::Point,
        ) -> Result<Box<dyn crate::Case>, crate::BenchError> {
            Err(crate::BenchError::Other("fake".into()))
        }
    }

    #[test]
    fn describes_params_metrics_options_and_the_probe() {
        let mut r = Registry::new();
        r.register(Box::new(Fake)).unwrap();
        let c = catalog(&r, None, None);
        let v = serde_json::to_value(&c).unwrap();
        let b = &v["benchmarks"][0];
        assert_eq!(b["id"], "fake.io");
        assert_eq!(v["modules"][0]["name"], "fake");
        assert_eq!(b["params"][0]["kind"], "size");
        assert_eq!(b["params"][0]["default"], 4096);
        assert_eq!(b["params"][0]["default_text"], "4KiB");
        assert_eq!(b["params"][0]["smoke"], 512);
        assert_eq!(b["params"][0]["min"], 512);
        assert_eq!(b["params"][0]["unit"], "B");
        assert_eq!(b["params"][1]["values"][1], "write");
        assert_eq!(b["params"][1]["smoke"], "read");
        assert_eq!(b["metrics"][0]["direction"], "lower");
        assert_eq!(b["options"][0]["secret"], true);
        assert!(b.get("probe").is_none(), "{b}");
        let ctx = Context::new(std::sync::Arc::new(crate::Host::default()));
        let c = catalog(&r, Some(&["fake.io"]), Some(&ctx));
        assert_eq!(
            c.benchmarks[0].probe,
            Some(ProbeInfo {
                ready: false,
                reason: Some("no fake device".into())
            })
        );
        assert!(catalog(&r, Some(&[]), None).benchmarks.is_empty());
    }
}
