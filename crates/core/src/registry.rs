//! The list of benchmarks, grouped by module, and selector matching.

use std::borrow::Cow;

use crate::bench::{Benchmark, Meta};
use crate::error::{ConfigError, ContractRule, RegistryError};

/// A module: a named group of benchmarks (one resource crate).
#[derive(Debug)]
pub struct Module {
    /// Module name (`os`, `disk`); benchmark ids start with `name.`.
    pub name: Cow<'static, str>,
    /// One-line description.
    pub description: Cow<'static, str>,
    /// Its benchmarks, in the order they run.
    pub benchmarks: Vec<Box<dyn Benchmark>>,
}

/// All benchmarks known to a run.
///
/// Selectors: `all` (or none) selects everything; a module name (`os`) its
/// benchmarks; an id (`os.syscall`) one benchmark; a glob with `*`
/// (`mem.*`, `*.latency`) matching ids.
#[derive(Debug, Default)]
pub struct Registry {
    modules: Vec<Module>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a module with its benchmarks. A module may be empty (its crate
    /// exists but has no benchmark yet).
    ///
    /// Each benchmark must keep the contract ([`Meta::check`]), have an id
    /// in this module (`name.…`), and an id no benchmark already has;
    /// otherwise nothing is added and the error names the first benchmark
    /// that breaks a rule, and the rule.
    pub fn add_module(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        benchmarks: Vec<Box<dyn Benchmark>>,
    ) -> Result<(), RegistryError> {
        let name = name.into();
        let mut ids: Vec<Cow<'static, str>> = Vec::with_capacity(benchmarks.len());
        for b in &benchmarks {
            let meta = b.meta();
            self.check_new(&meta)?;
            if meta.module() != name {
                return Err(RegistryError {
                    benchmark: meta.id.to_string(),
                    rule: ContractRule::WrongModule {
                        module: name.to_string(),
                    },
                });
            }
            if ids.contains(&meta.id) {
                return Err(duplicate(&meta.id));
            }
            ids.push(meta.id);
        }
        self.modules.push(Module {
            name,
            description: description.into(),
            benchmarks,
        });
        Ok(())
    }

    /// Adds one benchmark; it joins the module named by its id's prefix,
    /// created on first use. This is how an embedding program adds its own.
    ///
    /// The benchmark must keep the contract ([`Meta::check`]: a dotted id,
    /// at least one metric, exactly one headline metric listed first,
    /// unique metric and parameter names) and have an id no benchmark
    /// already has; otherwise it is not added and the error names it and
    /// the rule it breaks.
    ///
    /// ```
    /// # use benchsuite_core::{Benchmark, Case, Context, Meta, MetricSpec, Point, Registry, BenchError, ContractRule};
    /// struct TwoHeadlines;
    /// impl Benchmark for TwoHeadlines {
    ///     fn meta(&self) -> Meta {
    ///         Meta { id: "myapp.copy".into(), description: "copies".into(), params: vec![],
    ///                metrics: vec![MetricSpec::bytes_per_sec("bandwidth"),
    ///                              MetricSpec::time_per_op("time_per_op")] } // not .secondary()
    ///     }
    ///     fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
    ///         // Never reached: the registry refuses it first.
    ///         Err(BenchError::Skip("refused at registration".into()))
    ///     }
    /// }
    /// let e = Registry::new().register(Box::new(TwoHeadlines)).unwrap_err();
    /// assert_eq!(e.benchmark, "myapp.copy");
    /// assert!(matches!(e.rule, ContractRule::ManyHeadlines { .. }));
    /// ```
    pub fn register(&mut self, bench: Box<dyn Benchmark>) -> Result<(), RegistryError> {
        let meta = bench.meta();
        self.check_new(&meta)?;
        let module = meta.module();
        match self.modules.iter_mut().find(|m| m.name == module) {
            Some(m) => m.benchmarks.push(bench),
            None => self.modules.push(Module {
                name: Cow::Owned(module.to_string()),
                description: Cow::Borrowed(""),
                benchmarks: vec![bench],
            }),
        }
        Ok(())
    }

    /// The contract's rules, and an id this registry does not hold yet.
    fn check_new(&self, meta: &Meta) -> Result<(), RegistryError> {
        meta.check()?;
        if self.benchmarks().any(|b| b.meta().id == meta.id) {
            return Err(duplicate(&meta.id));
        }
        Ok(())
    }

    /// The modules, in registration order.
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// Every benchmark, in registration order.
    pub fn benchmarks(&self) -> impl Iterator<Item = &dyn Benchmark> {
        self.modules
            .iter()
            .flat_map(|m| m.benchmarks.iter().map(|b| b.as_ref()))
    }

    /// Gives each metric of `report` that has no [`role`](crate::Metric::role)
    /// (a report older than schema 1.6) the role its benchmark declares;
    /// metrics of benchmarks or names this registry does not know keep
    /// none (`compare` then takes a record's first metric as its headline).
    pub fn fill_roles(&self, report: &mut crate::Report) {
        for rec in &mut report.records {
            let Some(b) = self.benchmarks().find(|b| b.meta().id == rec.id) else {
                continue;
            };
            let meta = b.meta();
            for m in rec.metrics.iter_mut().filter(|m| m.role.is_none()) {
                m.role = meta
                    .metrics
                    .iter()
                    .find(|s| s.name == m.name)
                    .map(|s| s.role);
            }
        }
    }

    /// The benchmarks matching any of `selectors` (all when empty), in
    /// registration order, each once. A selector matching nothing is an
    /// error naming it; so is a selection with no benchmark at all.
    pub fn select(&self, selectors: &[String]) -> Result<Vec<&dyn Benchmark>, ConfigError> {
        let all = selectors.is_empty() || selectors.iter().any(|s| s == "all");
        let mut chosen = vec![false; self.benchmarks().count()];
        let mut empty_modules = Vec::new();
        if all {
            chosen.iter_mut().for_each(|c| *c = true);
        } else {
            for sel in selectors {
                let mut matched = false;
                if let Some(m) = self.modules.iter().find(|m| m.name == sel.as_str())
                    && m.benchmarks.is_empty()
                {
                    empty_modules.push(m.name.as_ref());
                    matched = true;
                }
                for (i, b) in self.benchmarks().enumerate() {
                    let meta = b.meta();
                    if meta.module() == sel.as_str()
                        || meta.id == sel.as_str()
                        || glob(sel, &meta.id)
                    {
                        chosen[i] = true;
                        matched = true;
                    }
                }
                if !matched {
                    return Err(ConfigError::UnknownSelector {
                        selector: sel.clone(),
                        modules: self
                            .modules
                            .iter()
                            .map(|m| m.name.as_ref())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
        let out: Vec<&dyn Benchmark> = self
            .benchmarks()
            .zip(chosen)
            .filter_map(|(b, c)| c.then_some(b))
            .collect();
        if out.is_empty() {
            let why = if empty_modules.is_empty() {
                "no benchmarks are registered".to_string()
            } else {
                format!(
                    "module {} has no benchmarks in this version yet",
                    empty_modules.join(", ")
                )
            };
            return Err(ConfigError::Invalid(format!("nothing to run: {why}")));
        }
        Ok(out)
    }
}

fn duplicate(id: &str) -> RegistryError {
    RegistryError {
        benchmark: id.to_string(),
        rule: ContractRule::DuplicateId,
    }
}

/// Glob match where `*` matches any run of characters (only when the
/// pattern contains one).
pub fn glob(pattern: &str, text: &str) -> bool {
    if !pattern.contains('*') {
        return false;
    }
    fn rec(p: &[u8], t: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'*', rest)) => (0..=t.len()).any(|i| rec(rest, &t[i..])),
            Some((c, rest)) => t.first() == Some(c) && rec(rest, &t[1..]),
        }
    }
    rec(pattern.as_bytes(), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Case, Context, Meta, MetricSpec};
    use crate::error::BenchError;
    use crate::param::Point;

    struct Dummy(&'static str);
    impl Benchmark for Dummy {
        fn meta(&self) -> Meta {
            Meta {
                id: self.0.into(),
                description: "".into(),
                params: vec![],
                metrics: vec![MetricSpec::time_per_op("t")],
            }
        }
        fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
            Err(BenchError::Other("not runnable".into()))
        }
    }

    fn reg() -> Registry {
        let mut r = Registry::new();
        r.add_module(
            "os",
            "",
            vec![Box::new(Dummy("os.syscall")), Box::new(Dummy("os.timer"))],
        )
        .unwrap();
        r.add_module("mem", "", vec![Box::new(Dummy("mem.latency"))])
            .unwrap();
        r.add_module("disk", "", vec![]).unwrap();
        r
    }

    fn ids(r: &Registry, sel: &[&str]) -> Result<Vec<Cow<'static, str>>, ConfigError> {
        let s: Vec<String> = sel.iter().map(|s| s.to_string()).collect();
        Ok(r.select(&s)?.iter().map(|b| b.meta().id).collect())
    }

    #[test]
    fn selectors() {
        let r = reg();
        assert_eq!(
            ids(&r, &[]).unwrap(),
            ["os.syscall", "os.timer", "mem.latency"]
        );
        assert_eq!(ids(&r, &["all"]).unwrap().len(), 3);
        assert_eq!(ids(&r, &["os"]).unwrap(), ["os.syscall", "os.timer"]);
        assert_eq!(ids(&r, &["os.timer"]).unwrap(), ["os.timer"]);
        assert_eq!(
            ids(&r, &["*.latency", "os.timer"]).unwrap(),
            ["os.timer", "mem.latency"]
        );
        assert_eq!(ids(&r, &["mem.*"]).unwrap(), ["mem.latency"]);
        assert_eq!(ids(&r, &["disk", "os.timer"]).unwrap(), ["os.timer"]);
        let e = ids(&r, &["bogus"]).unwrap_err().to_string();
        assert!(e.contains("`bogus`") && e.contains("os, mem, disk"), "{e}");
        let e = ids(&r, &["disk"]).unwrap_err().to_string();
        assert!(e.contains("disk has no benchmarks"), "{e}");
    }

    #[test]
    fn register_joins_module_by_id_prefix() {
        let mut r = reg();
        r.register(Box::new(Dummy("os.extra"))).unwrap();
        r.register(Box::new(Dummy("custom.thing"))).unwrap();
        assert_eq!(ids(&r, &["os"]).unwrap().len(), 3);
        assert_eq!(ids(&r, &["custom"]).unwrap(), ["custom.thing"]);
    }

    /// A declaration built in the test: id, metrics, parameters.
    struct Declared(&'static str, Vec<MetricSpec>, Vec<crate::param::ParamSpec>);
    impl Benchmark for Declared {
        fn meta(&self) -> Meta {
            Meta {
                id: self.0.into(),
                description: "declared".into(),
                params: self.2.clone(),
                metrics: self.1.clone(),
            }
        }
        fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
            Err(BenchError::Other("not runnable".into()))
        }
    }

    fn refused(id: &'static str, metrics: Vec<MetricSpec>) -> RegistryError {
        Registry::new()
            .register(Box::new(Declared(id, metrics, vec![])))
            .unwrap_err()
    }

    #[test]
    fn register_refuses_what_breaks_the_contract() {
        let t = || MetricSpec::time_per_op("time_per_op");
        let bw = || MetricSpec::bytes_per_sec("bandwidth");
        for (id, rule) in [
            ("nodot", ContractRule::IdNotDotted),
            (".name", ContractRule::IdNotDotted),
            ("module.", ContractRule::IdNotDotted),
        ] {
            let e = refused(id, vec![t()]);
            assert_eq!((e.benchmark.as_str(), e.rule), (id, rule));
        }
        assert_eq!(refused("a.b", vec![]).rule, ContractRule::NoMetrics);
        // Two headlines: both would be gated; the message names them.
        let e = refused("myapp.hash", vec![bw(), t()]);
        assert_eq!(
            e.rule,
            ContractRule::ManyHeadlines {
                names: vec!["bandwidth".into(), "time_per_op".into()]
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("`myapp.hash`") && text.contains("bandwidth, time_per_op"),
            "{text}"
        );
        // The headline second, or none at all.
        for metrics in [vec![t().secondary(), bw()], vec![t().secondary()]] {
            assert_eq!(
                refused("myapp.hash", metrics).rule,
                ContractRule::HeadlineNotFirst {
                    first: "time_per_op".into()
                }
            );
        }
        assert_eq!(
            refused("a.b", vec![t(), t().secondary()]).rule,
            ContractRule::DuplicateMetric {
                name: "time_per_op".into()
            }
        );
        let size = || crate::param::ParamSpec::size("size", "bytes", 1, 1 << 20, 64);
        let e = Registry::new()
            .register(Box::new(Declared("a.b", vec![t()], vec![size(), size()])))
            .unwrap_err();
        assert_eq!(
            e.rule,
            ContractRule::DuplicateParam {
                name: "size".into()
            }
        );
        // What keeps the contract registers: one headline first, the rest
        // secondary.
        let mut r = Registry::new();
        r.register(Box::new(Declared(
            "a.b",
            vec![bw(), t().secondary()],
            vec![size()],
        )))
        .unwrap();
        // ...once.
        let e = r.register(Box::new(Dummy("a.b"))).unwrap_err();
        assert_eq!(e.rule, ContractRule::DuplicateId);
        assert_eq!(r.benchmarks().count(), 1);
    }

    #[test]
    fn add_module_refuses_a_foreign_id_and_adds_nothing() {
        let mut r = Registry::new();
        let e = r
            .add_module(
                "os",
                "",
                vec![
                    Box::new(Dummy("os.syscall")),
                    Box::new(Dummy("mem.latency")),
                ],
            )
            .unwrap_err();
        assert_eq!(e.benchmark, "mem.latency");
        assert_eq!(
            e.rule,
            ContractRule::WrongModule {
                module: "os".into()
            }
        );
        assert!(e.to_string().contains("must start with `os.`"), "{e}");
        assert!(r.modules().is_empty());
        let e = r
            .add_module(
                "os",
                "",
                vec![Box::new(Dummy("os.syscall")), Box::new(Dummy("os.syscall"))],
            )
            .unwrap_err();
        assert_eq!(e.rule, ContractRule::DuplicateId);
        let e = reg()
            .add_module("os2", "", vec![Box::new(Declared("os2.x", vec![], vec![]))])
            .unwrap_err();
        assert_eq!(
            (e.benchmark.as_str(), e.rule),
            ("os2.x", ContractRule::NoMetrics)
        );
    }
}
