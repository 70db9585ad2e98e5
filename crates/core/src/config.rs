//! The validated run configuration: what to run, how to sample it, where.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::bench::Context;
use crate::error::ConfigError;
use crate::host::Host;

/// A validated run configuration. Build it with [`RunConfig::default`] and
/// set fields; [`RunConfig::validate`] is called by [`run`](crate::runner::run).
#[derive(Clone)]
pub struct RunConfig {
    /// Which benchmarks (`all`, `os`, `os.syscall`, `mem.*`). Empty = all.
    pub selectors: Vec<String>,
    /// Parameter sweeps as typed (`threads` → `1,2,4`, `block` → `4K..1M:x2`).
    pub sweep: BTreeMap<String, String>,
    /// Samples per record (`--runs`). Default 5.
    pub runs: usize,
    /// Rounds (`--rounds`): the whole plan is run this many times, one
    /// benchmark point after the other in each round, and each record pools
    /// the samples of every round. Default 1.
    pub rounds: usize,
    /// Minimum duration of one sample (`--min-sample-time`). Default 10 ms.
    pub min_sample_time: Duration,
    /// Warm-up before the first sample (`--warmup`). Default 100 ms.
    pub warmup: Duration,
    /// Time-series mode (`--duration`): sample for this long.
    pub duration: Option<Duration>,
    /// Time-series interval (`--interval`). Default 1 s with `--duration`.
    pub interval: Option<Duration>,
    /// `--quick`: fewer runs, shorter samples and warm-up, and benchmarks
    /// may shrink their defaults.
    pub quick: bool,
    /// Use each parameter's smoke value instead of its default (tests).
    pub smoke: bool,
    /// Where benchmarks may create files. Default: the system temp dir.
    pub scratch_dir: Option<PathBuf>,
    /// Module options (`peer`, `token`, `peak-mem-bw`).
    pub options: BTreeMap<String, String>,
    /// Set to stop after the current record (Ctrl-C).
    pub cancel: Arc<AtomicBool>,
    /// The launched task this run is (see `benchsuite_fleet::launcher::detect`),
    /// recorded in the report. `None`: not launched, or not recorded.
    pub cluster: Option<crate::cluster::Cluster>,
    /// A latency target (`--slo 'p99<=1ms'`): every selected benchmark
    /// runs a capacity search for the highest rate that meets it (see
    /// [`crate::capacity`]). `None`: points run as given.
    pub slo: Option<crate::capacity::Slo>,
}

impl std::fmt::Debug for RunConfig {
    /// Every field, with secret options redacted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("selectors", &self.selectors)
            .field("sweep", &self.sweep)
            .field("runs", &self.runs)
            .field("rounds", &self.rounds)
            .field("min_sample_time", &self.min_sample_time)
            .field("warmup", &self.warmup)
            .field("duration", &self.duration)
            .field("interval", &self.interval)
            .field("quick", &self.quick)
            .field("smoke", &self.smoke)
            .field("scratch_dir", &self.scratch_dir)
            .field("options", &crate::bench::RedactedOptions(&self.options))
            .field("cluster", &self.cluster)
            .field("slo", &self.slo)
            .finish_non_exhaustive()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            selectors: Vec::new(),
            sweep: BTreeMap::new(),
            runs: 5,
            rounds: 1,
            min_sample_time: Duration::from_millis(10),
            warmup: Duration::from_millis(100),
            duration: None,
            interval: None,
            quick: false,
            smoke: false,
            scratch_dir: None,
            options: BTreeMap::new(),
            cancel: Arc::new(AtomicBool::new(false)),
            cluster: None,
            slo: None,
        }
    }
}

impl RunConfig {
    /// The configuration `--quick` gives: 3 runs, 5 ms samples, 20 ms warm-up.
    pub fn quick() -> Self {
        RunConfig {
            quick: true,
            runs: 3,
            min_sample_time: Duration::from_millis(5),
            warmup: Duration::from_millis(20),
            ..RunConfig::default()
        }
    }

    /// The configuration module conformance tests use: `selector` at the
    /// smoke point of every parameter not in `sweep`, 3 runs of ≥ 1 ms
    /// after a 1 ms warm-up.
    pub fn smoke_test(selector: &str, sweep: &[(&str, &str)]) -> Self {
        RunConfig {
            selectors: vec![selector.to_string()],
            sweep: sweep
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            smoke: true,
            runs: 3,
            min_sample_time: Duration::from_millis(1),
            warmup: Duration::from_millis(1),
            ..RunConfig::quick()
        }
    }

    /// Checks values that do not depend on a benchmark.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.runs == 0 {
            return Err(ConfigError::Invalid(
                "`RunConfig::runs` must be at least 1".into(),
            ));
        }
        if self.runs > 100_000 {
            return Err(ConfigError::Invalid(
                "`RunConfig::runs` must be at most 100000".into(),
            ));
        }
        if self.rounds == 0 || self.rounds > 1000 {
            return Err(ConfigError::Invalid(
                "`RunConfig::rounds` must be between 1 and 1000".into(),
            ));
        }
        if self.rounds > 1 && self.duration.is_some() {
            return Err(ConfigError::Invalid(
                "`RunConfig::rounds` cannot be combined with `RunConfig::duration` (a time series is one continuous run)"
                    .into(),
            ));
        }
        if self.min_sample_time.is_zero() {
            return Err(ConfigError::Invalid(
                "`RunConfig::min_sample_time` must be positive".into(),
            ));
        }
        if self.interval.is_some() && self.duration.is_none() {
            return Err(ConfigError::Invalid(
                "`RunConfig::interval` needs `RunConfig::duration`".into(),
            ));
        }
        if let Some(d) = self.duration {
            let i = self.interval();
            if d.is_zero() || i.is_zero() {
                return Err(ConfigError::Invalid(
                    "`RunConfig::duration` and `RunConfig::interval` must be positive".into(),
                ));
            }
            if i > d {
                return Err(ConfigError::Invalid(format!(
                    "`RunConfig::interval` ({i:?}) is longer than `RunConfig::duration` ({d:?})"
                )));
            }
        }
        Ok(())
    }

    /// The time-series interval: `--interval`, 1 s by default.
    pub fn interval(&self) -> Duration {
        self.interval.unwrap_or(Duration::from_secs(1))
    }

    /// The context benchmarks see under this configuration on `host`.
    pub fn context(&self, host: Arc<Host>) -> Context {
        Context {
            host,
            scratch_dir: self.scratch_dir.clone().unwrap_or_else(std::env::temp_dir),
            quick: self.quick,
            options: self.options.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret() {
        let mut cfg = RunConfig::quick();
        cfg.options.insert("token".into(), "hunter2-secret".into());
        cfg.options.insert("peer-token".into(), "hunter3".into());
        cfg.options.insert("peer".into(), "h:1".into());
        let ctx = cfg.context(std::sync::Arc::new(crate::Host::detect()));
        for text in [format!("{cfg:?}"), format!("{ctx:?}"), format!("{cfg:#?}")] {
            assert!(!text.contains("hunter"), "{text}");
            assert!(
                text.contains("<redacted>") && text.contains("h:1"),
                "{text}"
            );
        }
    }
}
