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
//! let config = benchsuite::RunConfig::builder()
//!     .selectors(["os.syscall"])
//!     .build()
//!     .expect("settings that hold together");
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

// The command line (feature `cli`): the ready `main` and its subcommands.
// Its files name the library `benchsuite::`, as they did in the binary.
#[cfg(feature = "cli")]
extern crate self as benchsuite;
#[cfg(feature = "cli")]
mod acceptance_cmd;
#[cfg(feature = "cli")]
mod app;
#[cfg(feature = "cli")]
mod args;
#[cfg(feature = "cli")]
mod breakeven_cmd;
#[cfg(feature = "cli")]
mod calibrate_cmd;
#[cfg(feature = "cli")]
mod command_args;
#[cfg(feature = "cli")]
mod config;
#[cfg(feature = "cli")]
mod fleet_cmd;
#[cfg(feature = "cli")]
mod history_cmd;
#[cfg(feature = "cli")]
mod interleave;
#[cfg(feature = "cli")]
mod interrupt;
#[cfg(feature = "cli")]
mod output;
#[cfg(feature = "cli")]
mod planfile;
#[cfg(feature = "cli")]
mod progress;
#[cfg(feature = "cli")]
mod ready_main;
#[cfg(feature = "cli")]
mod reference_cmd;
#[cfg(feature = "cli")]
mod report_cmd;
#[cfg(feature = "cli")]
mod run;
#[cfg(feature = "cli")]
pub use ready_main::{main_with, main_with_args};

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
    Registry, RegistryError, Report, ReportError, RunConfig, RunConfigBuilder, SCHEMA_VERSION,
    Status, Summary, TeamCase, Value, Work, choice_enum, error_chain,
};
pub use benchsuite_core::{
    atomic, bench, capacity, catalog, caveat, cluster, error, host, openloop, param, phase,
    results, runner, schema, scratch, stats, sweep, team, text, units,
};
#[cfg(feature = "fleet")]
pub use benchsuite_fleet::launcher;
pub use benchsuite_report::{CompareOptions, Comparison, Verdict};
pub use benchsuite_report::{acceptance, breakeven, compare, export, fleet, trend};
pub use registry::registry;

/// Plans and runs `config` over `registry` without progress output.
/// Configuration errors (unknown benchmark, bad parameter) are returned
/// before anything runs; a benchmark that fails becomes a `failed` record.
pub fn run(registry: &Registry, config: &RunConfig) -> Result<Report, ConfigError> {
    benchsuite_core::runner::run(registry, config, &mut benchsuite_core::runner::Silent)
}
