//! Shared helpers for the integration tests: deterministic fake benchmarks
//! whose behaviour (work per iteration, failures, panics) is scripted, and
//! a counter of teardowns so tests can prove cleanup always happens.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Peak,
    Point, Probe, Report, RunConfig, Value, Work,
};

pub mod schema;

/// Panics unless `report`, serialised as this build writes it, validates
/// against the report schema (see [`schema::assert_valid_report`]).
pub fn assert_valid(report: &Report) {
    schema::assert_valid_report(&serde_json::to_value(report).expect("a report serialises"));
}

/// What a fake case does when run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Sleeps `ns_per_iter` per iteration (spinning), reports `iters` ops.
    Work,
    /// Returns an error on the first run.
    FailRun,
    /// Panics on the first run.
    PanicRun,
    /// Fails in prepare.
    FailPrepare,
    /// Prepare says this point cannot run here (a skip, not a failure).
    SkipPrepare,
    /// Probe says skip.
    Skip,
    /// Sets the shared cancel flag during its first run.
    CancelDuringRun,
}

/// A fake benchmark.
#[derive(Debug, Clone)]
pub struct Fake {
    /// Id (`fake.work`).
    pub id: &'static str,
    /// Behaviour.
    pub script: Script,
    /// Busy-wait per iteration.
    pub ns_per_iter: u64,
    /// Counts teardowns.
    pub teardowns: Arc<AtomicUsize>,
    /// Counts prepares.
    pub prepares: Arc<AtomicUsize>,
    /// A peak (in op/s) to report, if any.
    pub peak_ops: Option<f64>,
}

impl Fake {
    /// A well-behaved fake doing `ns_per_iter` ns of busy work per iteration.
    pub fn new(id: &'static str, script: Script, ns_per_iter: u64) -> Fake {
        Fake {
            id,
            script,
            ns_per_iter,
            teardowns: Arc::new(AtomicUsize::new(0)),
            prepares: Arc::new(AtomicUsize::new(0)),
            peak_ops: None,
        }
    }

    /// Teardowns so far.
    pub fn teardown_count(&self) -> usize {
        self.teardowns.load(Ordering::SeqCst)
    }

    /// Prepares so far.
    pub fn prepare_count(&self) -> usize {
        self.prepares.load(Ordering::SeqCst)
    }
}

struct FakeCase {
    fake: Fake,
    ctx: Context,
    factor: u64,
    /// Runs so far.
    runs: u64,
    /// `block` after `0` (auto) was resolved to 4 KiB.
    block: u64,
}

fn spin(d: Duration) {
    let t = std::time::Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

impl Case for FakeCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        match self.fake.script {
            Script::FailRun => return Err(BenchError::Other("scripted failure".into())),
            Script::PanicRun => panic!("scripted panic"),
            Script::CancelDuringRun => self.ctx.cancel.store(true, Ordering::SeqCst),
            _ => {}
        }
        self.runs += 1;
        spin(Duration::from_nanos(
            self.fake.ns_per_iter * self.factor * iters,
        ));
        Ok(Work::ops_bytes(iters, iters * 64))
    }

    fn finish(self: Box<Self>) -> Finished {
        self.fake.teardowns.fetch_add(1, Ordering::SeqCst);
        About {
            peak: self.fake.peak_ops.map(|v| Peak {
                metric: "rate".into(),
                value: v,
                unit: "op/s".into(),
                formula: "scripted".into(),
                inputs: Default::default(),
                efficiency: None,
            }),
            resolved: vec![("block".into(), Value::Int(self.block))],
            ..About::default()
        }
        .into()
    }
}

impl Benchmark for Fake {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        vec![benchsuite_core::OptionSpec::bool(
            "fake-flag",
            "an on/off option, to test option checks",
        )]
    }

    fn meta(&self) -> Meta {
        Meta {
            id: self.id.into(),
            description: "a scripted fake".into(),
            params: vec![
                ParamSpec::count("factor", "multiplies the work per iteration", 1, 16, 1),
                ParamSpec::size("block", "bytes per op; 0 = auto (4 KiB)", 0, 1 << 30, 4096)
                    .with_smoke(Value::Int(512)),
            ],
            metrics: vec![
                MetricSpec::time_per_op("time_per_op"),
                MetricSpec::ops_per_sec("rate", "op/s").derived(),
                MetricSpec::bytes_per_sec("bandwidth").derived(),
            ],
        }
    }

    fn probe(&self, _: &Context) -> Probe {
        if self.script == Script::Skip {
            Probe::Skip("scripted skip".into())
        } else {
            Probe::Ready
        }
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        self.prepares.fetch_add(1, Ordering::SeqCst);
        match self.script {
            Script::FailPrepare => {
                return Err(BenchError::Failed("scripted prepare failure".into()));
            }
            Script::SkipPrepare => return Err(BenchError::Skip("scripted point skip".into())),
            _ => {}
        }
        Ok(Box::new(FakeCase {
            fake: self.clone(),
            ctx: ctx.clone(),
            factor: point.u64("factor")?,
            runs: 0,
            block: match point.u64("block")? {
                0 => 4096,
                b => b,
            },
        }))
    }

    fn host_facts(&self, _: &Context) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "fake": self.id }))
    }
}

/// A fast configuration for tests: 3 runs of ≥ 1 ms, 1 ms warm-up.
pub fn fast_config() -> RunConfig {
    RunConfig::quick()
        .to_builder()
        .runs(3)
        .min_sample_time(Duration::from_millis(1))
        .warmup(Duration::from_millis(1))
        .build()
        .unwrap()
}
