//! The conformance harness every module's tests run (feature `testing`).
//!
//! A module's conformance test is a few lines: its benchmarks, the physical
//! bound of each metric, and which records may legitimately skip here.
//!
//! ```no_run
//! use benchsuite_core::testing::Conformance;
//! # fn benchmarks() -> Vec<Box<dyn benchsuite_core::Benchmark>> { vec![] }
//! fn harness() -> Conformance {
//!     Conformance::new("os", "OS primitives", benchmarks).bounds(|id, metric| match (id, metric) {
//!         ("os.syscall", _) => 0.0..1e-3,
//!         _ => panic!("no physical bound for {id} {metric}"),
//!     })
//! }
//! #[test]
//! fn meta() { harness().check_meta(); }
//! #[test]
//! fn smoke() { harness().check_smoke(); }
//! #[test]
//! fn choices() { harness().check_choices(); }
//! ```
//!
//! What it checks, through the real runner with [`RunConfig::smoke_test`]
//! (3 samples of ≥ 1 ms):
//! - [`Conformance::check_meta`]: what the registry refuses
//!   ([`Meta::check`](crate::Meta::check): a dotted id, one headline
//!   metric listed first, unique names), ids in the module and unique, every
//!   description, parameter help and option help is non-empty, every
//!   default and smoke value passes its own parameter's check, every metric
//!   has a unit.
//! - [`Conformance::check_smoke`]: every benchmark at its smoke point is
//!   `ok` (or a skip the module allows), and each record passes
//!   [`Conformance::check_record`].
//! - [`Conformance::check_choices`]: every value of every choice parameter
//!   (their product, or one parameter at a time where the product is
//!   large) runs or is a skip the module allows; never `failed`.
//!
//! A test that cannot run on this machine (no root, no tool, no device)
//! calls [`skip`] with the [`Capability`] it lacks: CI can then require
//! the capability (`BENCHSUITE_REQUIRE`) and list every skip
//! (`BENCHSUITE_SKIP_LOG`).

mod skip;

pub use skip::{Capability, skip};

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::bench::Benchmark;
use crate::config::RunConfig;
use crate::error::ConfigError;
use crate::host::Host;
use crate::param::ParamKind;
use crate::plan::plan_on;
use crate::registry::Registry;
use crate::results::{Record, Report, Status};
use crate::runner::{Silent, run_plan};

/// Above this many points, choice parameters are swept one at a time.
const MAX_PRODUCT: usize = 48;

/// What makes a module's benchmarks for [`Conformance`].
pub type MakeFn = dyn Fn() -> Vec<Box<dyn Benchmark>> + Send + Sync;

/// A module under test; see the module docs.
#[derive(Clone)]
pub struct Conformance {
    module: Cow<'static, str>,
    description: Cow<'static, str>,
    make: Arc<MakeFn>,
    bound: fn(&str, &str) -> Range<f64>,
    may_skip: fn(&Record) -> bool,
    extra: Option<fn(&Record)>,
    options: BTreeMap<String, String>,
    host: Option<Host>,
}

impl std::fmt::Debug for Conformance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conformance")
            .field("module", &self.module)
            .finish()
    }
}

impl Conformance {
    /// The module's name and description (as registered) and its
    /// benchmarks. Until [`Conformance::bounds`] is given, every median
    /// must be finite and positive.
    /// The names may be built at run time and `make` may capture what
    /// it needs (a benchmark per discovered device): a closure or a
    /// module's `benchmarks` function.
    pub fn new(
        module: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        make: impl Fn() -> Vec<Box<dyn Benchmark>> + Send + Sync + 'static,
    ) -> Self {
        Conformance {
            module: module.into(),
            description: description.into(),
            make: Arc::new(make),
            bound: |_, _| f64::MIN_POSITIVE..f64::INFINITY,
            may_skip: |_| false,
            extra: None,
            options: BTreeMap::new(),
            host: None,
        }
    }

    /// The physical bound of each metric's median, by benchmark id and
    /// metric name: e.g. a bandwidth below the memory bus's, a latency above
    /// zero. Panic for a pair without one, so a new metric needs a bound.
    pub fn bounds(mut self, bound: fn(&str, &str) -> Range<f64>) -> Self {
        self.bound = bound;
        self
    }

    /// Which skipped records are legitimate on this machine (an ISA the CPU
    /// lacks, no GPU). A skip must always give a reason.
    pub fn may_skip(mut self, allowed: fn(&Record) -> bool) -> Self {
        self.may_skip = allowed;
        self
    }

    /// A module-specific check run on every `ok` record.
    pub fn check_each(mut self, check: fn(&Record)) -> Self {
        self.extra = Some(check);
        self
    }

    /// A module option (`--opt KEY=VALUE`) for every run.
    pub fn option(mut self, key: &str, value: &str) -> Self {
        self.options.insert(key.to_string(), value.to_string());
        self
    }

    /// Runs on this host instead of the detected one.
    pub fn host(mut self, host: Host) -> Self {
        self.host = Some(host);
        self
    }

    /// The module's benchmarks in a registry of their own.
    pub fn registry(&self) -> Registry {
        let mut r = Registry::new();
        r.add_module(self.module.clone(), self.description.clone(), (self.make)())
            .unwrap_or_else(|e| panic!("{}: {e}", self.module));
        r
    }

    /// Runs `selector` with a smoke configuration and the given sweep.
    /// Panics when the plan is refused; see [`Conformance::try_run`].
    pub fn run(&self, selector: &str, sweep: &[(&str, &str)]) -> Report {
        self.try_run(selector, sweep)
            .unwrap_or_else(|e| panic!("{selector} {sweep:?}: the plan is invalid: {e}"))
    }

    /// [`Conformance::run`], returning the plan's refusal (a bad value,
    /// a size beyond memory) instead of panicking.
    pub fn try_run(&self, selector: &str, sweep: &[(&str, &str)]) -> Result<Report, ConfigError> {
        let cfg = RunConfig::smoke_test(selector, sweep)
            .to_builder()
            .options(self.options.clone())
            .build()?;
        let registry = self.registry();
        let host = self.host.clone().unwrap_or_else(Host::detect);
        let plan = plan_on(&registry, &cfg, host)?;
        Ok(run_plan(&plan, &cfg, &mut Silent))
    }

    /// Checks the declarations; see the module docs.
    pub fn check_meta(&self) {
        let benches = (self.make)();
        assert!(!benches.is_empty(), "{}: no benchmarks", self.module);
        let mut ids = Vec::new();
        for b in &benches {
            let m = b.meta();
            let prefix = format!("{}.", self.module);
            assert!(m.id.starts_with(&prefix), "{} is not in {prefix}*", m.id);
            // What the registry refuses (one headline, first; a dotted id;
            // unique names), with the registry's own message.
            m.check().unwrap_or_else(|e| panic!("{e}"));
            assert!(!m.description.is_empty(), "{}: no description", m.id);
            for metric in &m.metrics {
                // A reported ratio (a LINPACK residual) may be unitless.
                assert!(
                    !metric.unit.is_empty() || metric.source.reported_key().is_some(),
                    "{} {}: no unit",
                    m.id,
                    metric.name
                );
            }
            for p in &m.params {
                assert!(!p.help.is_empty(), "{} {}: no help", m.id, p.name);
                p.kind
                    .check(&p.name, &p.default)
                    .unwrap_or_else(|e| panic!("{} default of {}: {e}", m.id, p.name));
                p.kind
                    .check(&p.name, p.smoke_value())
                    .unwrap_or_else(|e| panic!("{} smoke value of {}: {e}", m.id, p.name));
            }
            for o in b.options() {
                assert!(!o.help.is_empty(), "{} option {}: no help", m.id, o.name);
            }
            ids.push(m.id);
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{}: duplicate benchmark ids", self.module);
    }

    /// Runs every benchmark at its smoke point; see the module docs.
    pub fn check_smoke(&self) -> Report {
        let report = self.run(&self.module, &[]);
        assert_eq!(
            report.records.len(),
            (self.make)().len(),
            "{}: one record per benchmark at its smoke point",
            self.module
        );
        for r in &report.records {
            self.check_record(r);
        }
        report
    }

    /// Runs every choice of every benchmark; see the module docs. Returns
    /// the reports, one per benchmark that has choices.
    pub fn check_choices(&self) -> Vec<Report> {
        let mut reports = Vec::new();
        for b in (self.make)() {
            let meta = b.meta();
            let choices: Vec<(&str, String, usize)> = meta
                .params
                .iter()
                .filter_map(|p| match p.kind {
                    ParamKind::Choice(names) => {
                        Some((p.name.as_ref(), names.join(","), names.len()))
                    }
                    _ => None,
                })
                .collect();
            if choices.is_empty() {
                continue;
            }
            let product: usize = choices.iter().map(|c| c.2).product();
            let sweeps: Vec<Vec<(&str, &str)>> = if product <= MAX_PRODUCT {
                vec![choices.iter().map(|(k, v, _)| (*k, v.as_str())).collect()]
            } else {
                choices
                    .iter()
                    .map(|(k, v, _)| vec![(*k, v.as_str())])
                    .collect()
            };
            for sweep in sweeps {
                let report = self.run(&meta.id, &sweep);
                let expected: usize = sweep.iter().map(|(_, v)| v.split(',').count()).product();
                assert_eq!(report.records.len(), expected, "{} {sweep:?}", meta.id);
                for r in &report.records {
                    self.check_record(r);
                }
                reports.push(report);
            }
        }
        reports
    }

    /// One record: `ok` or an allowed skip with a reason; never failed. An
    /// `ok` record has every declared metric with one sample per run, each
    /// median finite and within its bound, a sane peak and efficiency, and
    /// passes the module's own check.
    pub fn check_record(&self, r: &Record) {
        let what = format!("{} {}", r.id, r.params.label());
        match r.status {
            Status::Ok => {}
            Status::Skipped => {
                let reason = r.reason.as_deref().unwrap_or_default();
                assert!(reason.len() > 10, "{what}: skipped without a reason");
                assert!(
                    (self.may_skip)(r),
                    "{what}: skipped, which the module does not allow here: {reason}"
                );
                return;
            }
            Status::Failed => panic!(
                "{what}: failed: {}",
                r.reason.as_deref().unwrap_or("(no reason)")
            ),
        }
        assert!(!r.metrics.is_empty(), "{what}: no metrics");
        for m in &r.metrics {
            let med = m.summary.median;
            assert!(med.is_finite(), "{what} {}: median {med}", m.name);
            let b = (self.bound)(&r.id, &m.name);
            assert!(
                b.contains(&med),
                "{what} {}: median {med:e} {} is outside its physical bound {:e}..{:e}",
                m.name,
                m.unit,
                b.start,
                b.end
            );
            if m.timestamps.is_none() {
                assert_eq!(m.samples.len(), 3, "{what} {}: samples", m.name);
            }
        }
        if let Some(p) = &r.peak {
            assert!(p.value.is_finite() && p.value > 0.0, "{what}: peak {p:?}");
            assert!(!p.formula.is_empty(), "{what}: a peak without its formula");
            let eff = p.efficiency.expect("the runner fills the efficiency");
            assert!(eff > 0.0 && eff < 1.5, "{what}: efficiency {eff}");
        }
        if let Some(check) = self.extra {
            check(r);
        }
    }
}

// ---- A fixture report -------------------------------------------------------

use crate::bench::Direction;
use crate::param::{Point, Value};
use crate::results::{Metric, Peak, RunConfigRecord};
use crate::stats::LatencySummary;

fn metric(name: &str, unit: &str, direction: Direction, samples: &[f64]) -> Metric {
    Metric::from_samples(name, unit, direction, samples).expect("finite samples")
}

/// A small report shared by tests (here and in the report crate): three
/// records: `os.syscall call=getppid` (time per op, with a
/// warning), `mem.bandwidth block=4096 op=copy` (bandwidth with a peak,
/// latency with percentiles) and a skipped `gpu.flops precision=f16`.
pub fn fixture_report() -> Report {
    let mut syscall = Record {
        iters_per_sample: Some(65536),
        warnings: vec!["vDSO, not a real syscall".into()],
        ..Record::ok(
            "os.syscall",
            Point::default(),
            vec![metric(
                "time_per_op",
                "s",
                Direction::Lower,
                &[51e-9, 50e-9, 52e-9, 51e-9, 51.5e-9],
            )],
        )
    };
    syscall.params.set("call", Value::Str("getppid".into()));

    let mut params = Point::default();
    params.set("block", Value::Int(4096));
    params.set("op", Value::Str("copy".into()));
    let mut lat = metric("latency", "s", Direction::Lower, &[1.0e-6, 1.1e-6, 0.9e-6]);
    lat.latency = Some(LatencySummary {
        count: 3000,
        mean: 1.0e-6,
        min: 0.5e-6,
        p50: 1.0e-6,
        p90: 1.5e-6,
        p99: 2.5e-6,
        p99_9: 4.0e-6,
        p99_99: 8.0e-6,
        max: 9.0e-6,
    });
    let bw = Record {
        iters_per_sample: Some(16),
        peak: Some(Peak {
            metric: "bandwidth".into(),
            value: 5e9,
            unit: "B/s".into(),
            formula: "channels × MT/s × 8".into(),
            inputs: BTreeMap::new(),
            efficiency: Some(0.5),
        }),
        ..Record::ok(
            "mem.bandwidth",
            params,
            vec![
                metric(
                    "bandwidth",
                    "B/s",
                    Direction::Higher,
                    &[2.4e9, 2.5e9, 2.6e9],
                ),
                lat,
            ],
        )
    };

    let mut gp = Point::default();
    gp.set("precision", Value::Str("f16".into()));
    let gpu = Record::skipped("gpu.flops", gp, "no GPU, found none via NVML");

    Report {
        schema_version: crate::SCHEMA_VERSION.into(),
        tool_version: "0.1.0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        host: Host::default(),
        cluster: None,
        config: RunConfigRecord::default(),
        progress: None,
        records: vec![syscall, bw, gpu],
    }
}
