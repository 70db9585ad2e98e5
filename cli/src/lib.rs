//! # benchsuite
//!
//! Measure a machine's CPU, memory, disk, network, GPU and OS primitives
//! with sound statistics and one versioned result format.
//!
//! This crate is the embedding facade and the `benchsuite` binary. A Rust
//! program embeds it like this:
//!
//! ```no_run
//! let registry = benchsuite::registry();
//! let mut config = benchsuite::RunConfig::default();
//! config.selectors = vec!["os.syscall".into()];
//! let report = benchsuite::run(&registry, &config).expect("valid configuration");
//! for r in &report.records {
//!     println!("{} {:?}", r.key(), r.metrics.first().map(|m| m.summary.median));
//! }
//! ```
//!
//! Your own benchmarks implement [`Benchmark`] and join the registry with
//! [`Registry::register`], which refuses a declaration that breaks the
//! contract (a [`RegistryError`] naming the benchmark and the
//! [`ContractRule`]); they then run, sweep, export and compare exactly
//! like the built-in ones. Their tests can run the conformance harness the
//! built-in modules run, `benchsuite::testing::Conformance` (feature
//! `testing`).

mod registry;

pub use benchsuite_core::reference;
/// The conformance harness (feature `testing`): see
/// [`testing::Conformance`] and docs/embedding.md.
#[cfg(feature = "testing")]
pub use benchsuite_core::testing;
pub use benchsuite_core::{
    About, BenchError, Benchmark, Case, Caveat, Choice, ConfigError, Context, ContractRule,
    Direction, Finished, Host, LatencySummary, Meta, Metric, MetricRole, MetricSource, MetricSpec,
    Module, Observer, OptionSpec, ParamKind, ParamSpec, Peak, PeakInput, Point, Probe, Record,
    Registry, RegistryError, Report, ReportError, RunConfig, SCHEMA_VERSION, Status, Summary,
    TeamCase, Value, Work, choice_enum, error_chain,
};
pub use benchsuite_core::{
    atomic, bench, capacity, catalog, caveat, cluster, error, host, openloop, param, phase, report,
    runner, schema, scratch, stats, sweep, team, units,
};
pub use benchsuite_fleet::launcher;
pub use benchsuite_report::{CompareOptions, Comparison, Verdict};
pub use benchsuite_report::{breakeven, compare, export, fleet};
pub use registry::registry;

/// Plans and runs `config` over `registry` without progress output.
/// Configuration errors (unknown benchmark, bad parameter) are returned
/// before anything runs; a benchmark that fails becomes a `failed` record.
pub fn run(registry: &Registry, config: &RunConfig) -> Result<Report, ConfigError> {
    benchsuite_core::runner::run(registry, config, &mut benchsuite_core::runner::Silent)
}
