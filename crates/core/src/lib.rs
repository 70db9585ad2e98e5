//! # benchsuite-core
//!
//! The engine behind benchsuite: the [`Benchmark`] / [`Case`] plugin
//! contract, typed parameters and sweeps, the [`runner`], statistics, the
//! versioned result model ([`Report`]) and host detection. Exporters,
//! `compare` and the fleet view are in `benchsuite-report`.
//!
//! This crate knows no resource (CPU, disk, ...) and no command-line parser:
//! resource crates implement [`Benchmark`]; the `benchsuite` crate composes
//! them into a [`Registry`] and maps its flags onto a [`RunConfig`].
//!
//! ```
//! use benchsuite_core::{Benchmark, Case, Context, Finished, Meta, MetricSpec, Point, Registry, RunConfig, Work, BenchError};
//!
//! struct Add;
//! struct AddCase(u64);
//! impl Case for AddCase {
//!     fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
//!         for i in 0..iters {
//!             self.0 = std::hint::black_box(self.0.wrapping_add(i));
//!         }
//!         Ok(Work::ops(iters))
//!     }
//! }
//! impl Benchmark for Add {
//!     fn meta(&self) -> Meta {
//!         Meta { id: "demo.add".into(), description: "adds".into(), params: vec![],
//!                metrics: vec![MetricSpec::time_per_op("time_per_op")] }
//!     }
//!     fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
//!         Ok(Box::new(AddCase(0)))
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! registry.register(Box::new(Add)).expect("demo.add keeps the contract");
//! let config = RunConfig::quick().to_builder().runs(2).build().unwrap();
//! let report = benchsuite_core::runner::run(&registry, &config, &mut benchsuite_core::runner::Silent).unwrap();
//! assert_eq!(report.records[0].status, benchsuite_core::Status::Ok);
//! ```

pub mod atomic;
pub mod bench;
pub mod capacity;
pub mod catalog;
pub mod caveat;
pub mod cluster;
pub mod config;
pub mod error;
pub mod host;
pub mod metric;
pub mod openloop;
pub mod param;
pub mod phase;
pub mod plan;
pub mod reference;
pub mod registry;
pub mod results;
pub mod runner;
pub mod schema;
pub mod scratch;
pub mod stats;
pub mod sweep;
pub mod team;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod units;

pub use bench::{
    About, Benchmark, Case, Context, Direction, Finished, Meta, MetricSource, MetricSpec,
    OptionRole, OptionSpec, Probe, RedactedOptions, Work, is_secret_key,
};
pub use caveat::Caveat;
pub use cluster::Cluster;
pub use config::RunConfigBuilder;
pub use error::{
    BenchError, ConfigError, ContractRule, RegistryError, ReportError, ValueError, error_chain,
};
pub use host::Host;
pub use param::{Choice, CountUnit, ParamKind, ParamSpec, Point, Value};
pub use reference::{Reference, ReferenceResult};
pub use registry::{Module, Registry};
pub use results::{
    Metric, MetricRole, Peak, PeakInput, Record, Report, SCHEMA_VERSION, SampleTails, Status,
};
pub use runner::{Observer, RunConfig};
pub use stats::{LatencySummary, Summary};
pub use team::TeamCase;
