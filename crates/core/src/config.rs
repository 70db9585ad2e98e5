//! The validated run configuration: what to run, how to sample it, where.
//!
//! A [`RunConfig`] is valid by construction: its fields are private, it
//! comes from a preset ([`RunConfig::default`], [`RunConfig::quick`],
//! [`RunConfig::smoke_test`]) or from [`RunConfigBuilder::build`], which
//! checks every setting that does not depend on a benchmark, and it is read
//! through getters. What depends on the selected benchmarks (parameters,
//! options, a capacity search) is checked when the run is planned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::bench::Context;
use crate::capacity::Slo;
use crate::cluster::Cluster;
use crate::error::ConfigError;
use crate::host::Host;

/// The time-series interval when `--duration` is given without `--interval`.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// A validated run configuration: a preset ([`RunConfig::default`],
/// [`RunConfig::quick`], [`RunConfig::smoke_test`]), or one built with
/// [`RunConfig::builder`] (or a preset's [`RunConfig::to_builder`]), whose
/// [`build`](RunConfigBuilder::build) refuses what cannot run. Every
/// value of this type can be run as it is.
///
/// ```
/// use std::time::Duration;
/// use benchsuite_core::RunConfig;
///
/// let cfg = RunConfig::quick()
///     .to_builder()
///     .selectors(["os.syscall"])
///     .runs(7)
///     .min_sample_time(Duration::from_millis(20))
///     .build()?;
/// assert_eq!((cfg.runs(), cfg.rounds()), (7, 1));
/// assert!(RunConfig::builder().runs(0).build().is_err());
/// # Ok::<(), benchsuite_core::ConfigError>(())
/// ```
///
/// Its fields cannot be set from outside, so an unchecked one cannot be
/// written:
///
/// ```compile_fail,E0451
/// use benchsuite_core::RunConfig;
///
/// let cfg = RunConfig { runs: 0, ..RunConfig::default() };
/// ```
#[derive(Clone)]
pub struct RunConfig {
    selectors: Vec<String>,
    sweep: BTreeMap<String, String>,
    runs: usize,
    rounds: usize,
    min_sample_time: Duration,
    warmup: Duration,
    duration: Option<Duration>,
    interval: Option<Duration>,
    quick: bool,
    smoke: bool,
    scratch_dir: Option<PathBuf>,
    options: BTreeMap<String, String>,
    cancel: Arc<AtomicBool>,
    cluster: Option<Cluster>,
    slo: Option<Slo>,
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
    /// Every selected benchmark at its default point: 5 runs of samples of
    /// at least 10 ms after a 100 ms warm-up, one round, no time series.
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
    /// A builder from [`RunConfig::default`]'s settings.
    pub fn builder() -> RunConfigBuilder {
        RunConfig::default().to_builder()
    }

    /// A builder from this configuration's settings (and its cancel flag):
    /// `RunConfig::quick().to_builder().runs(10).build()`.
    pub fn to_builder(&self) -> RunConfigBuilder {
        RunConfigBuilder(self.clone())
    }

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

    /// Which benchmarks (`all`, `os`, `os.syscall`, `mem.*`). Empty = all.
    pub fn selectors(&self) -> &[String] {
        &self.selectors
    }

    /// Parameter sweeps as typed (`threads` → `1,2,4`, `block` →
    /// `4K..1M:x2`), checked against the selected benchmarks when the run
    /// is planned.
    pub fn sweep(&self) -> &BTreeMap<String, String> {
        &self.sweep
    }

    /// Samples per record (`--runs`): 1 to 100 000. Default 5.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// Rounds (`--rounds`): the whole plan is run this many times, one
    /// benchmark point after the other in each round, and each record pools
    /// the samples of every round. 1 to 1000, default 1.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Minimum duration of one sample (`--min-sample-time`), positive.
    /// Default 10 ms.
    pub fn min_sample_time(&self) -> Duration {
        self.min_sample_time
    }

    /// Warm-up before the first sample (`--warmup`). Default 100 ms.
    pub fn warmup(&self) -> Duration {
        self.warmup
    }

    /// Time-series mode (`--duration`): sample for this long. Default none.
    pub fn duration(&self) -> Option<Duration> {
        self.duration
    }

    /// The time-series interval (`--interval`): 1 s unless given; it only
    /// applies with a [`duration`](Self::duration).
    pub fn interval(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_INTERVAL)
    }

    /// `--quick`: fewer runs, shorter samples and warm-up, and benchmarks
    /// may shrink their defaults.
    pub fn is_quick(&self) -> bool {
        self.quick
    }

    /// Each parameter's smoke value is used instead of its default (tests).
    pub fn is_smoke(&self) -> bool {
        self.smoke
    }

    /// Where benchmarks may create files (`--scratch-dir`). `None`: the
    /// system temporary directory.
    pub fn scratch_dir(&self) -> Option<&Path> {
        self.scratch_dir.as_deref()
    }

    /// Module options (`peer`, `token`, `peak-mem-bw`), checked against
    /// the selected benchmarks when the run is planned.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    /// The flag that stops the run after the current record: a Ctrl-C
    /// handler sets it (see [`crate::runner::cancel`]). Clones of this
    /// configuration, and configurations built from it, share it.
    pub fn cancel_flag(&self) -> &Arc<AtomicBool> {
        &self.cancel
    }

    /// Whether the cancel flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// The launched task this run is (see `benchsuite_fleet::launcher::detect`),
    /// recorded in the report. `None`: not launched, or not recorded.
    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }

    /// A latency target (`--slo 'p99<=1ms'`): every selected benchmark
    /// runs a capacity search for the highest rate that meets it (see
    /// [`crate::capacity`]). `None`: points run as given.
    pub fn slo(&self) -> Option<&Slo> {
        self.slo.as_ref()
    }

    /// This configuration with samples of at least `t` (the longer of `t`
    /// and [`min_sample_time`](Self::min_sample_time)): always valid.
    pub fn with_min_sample_time_at_least(&self, t: Duration) -> RunConfig {
        RunConfig {
            min_sample_time: self.min_sample_time.max(t),
            ..self.clone()
        }
    }

    /// This configuration recording `cluster` in its report (the settings
    /// it has nothing to do with stay valid).
    pub fn with_cluster(&self, cluster: Option<Cluster>) -> RunConfig {
        RunConfig {
            cluster,
            ..self.clone()
        }
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

    /// Checks the values that do not depend on a benchmark; every error
    /// names the setting as `` `RunConfig::runs` `` (the CLI renames those
    /// to its flags, see [`crate::text::rename_settings`]).
    fn check(&self) -> Result<(), ConfigError> {
        let invalid = |s: &str| Err(ConfigError::Invalid(s.into()));
        if self.runs == 0 {
            return invalid("`RunConfig::runs` must be at least 1");
        }
        if self.runs > 100_000 {
            return invalid("`RunConfig::runs` must be at most 100000");
        }
        if self.rounds == 0 || self.rounds > 1000 {
            return invalid("`RunConfig::rounds` must be between 1 and 1000");
        }
        if self.rounds > 1 && self.duration.is_some() {
            return invalid(
                "`RunConfig::rounds` cannot be combined with `RunConfig::duration` (a time series is one continuous run)",
            );
        }
        if self.min_sample_time.is_zero() {
            return invalid("`RunConfig::min_sample_time` must be positive");
        }
        if self.interval.is_some() && self.duration.is_none() {
            return invalid("`RunConfig::interval` needs `RunConfig::duration`");
        }
        if let Some(d) = self.duration {
            let i = self.interval();
            if d.is_zero() || i.is_zero() {
                return invalid("`RunConfig::duration` and `RunConfig::interval` must be positive");
            }
            if i > d {
                return Err(ConfigError::Invalid(format!(
                    "`RunConfig::interval` ({i:?}) is longer than `RunConfig::duration` ({d:?})"
                )));
            }
        }
        Ok(())
    }

    /// Debug builds only: panics if this configuration is not valid, which
    /// construction rules out (the runner's assertion).
    pub(crate) fn debug_assert_valid(&self) {
        if cfg!(debug_assertions)
            && let Err(e) = self.check()
        {
            panic!("a RunConfig that does not hold: {e}");
        }
    }
}

/// The settings of a [`RunConfig`], before they are checked: from
/// [`RunConfig::builder`] (the defaults) or a preset's
/// [`RunConfig::to_builder`]. Setters chain like
/// [`std::fs::OpenOptions`]'; [`build`](Self::build) checks and returns the
/// configuration, and a builder can build many.
///
/// ```
/// use std::time::Duration;
/// use benchsuite_core::RunConfig;
///
/// let mut b = RunConfig::builder();
/// b.selectors(["disk.io"]).param("block", "4K,1M").option("allow-overwrite", "no");
/// b.duration(Duration::from_secs(10)).interval(Duration::from_secs(2));
/// let cfg = b.build()?;
/// assert_eq!(cfg.interval(), Duration::from_secs(2));
/// # Ok::<(), benchsuite_core::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RunConfigBuilder(RunConfig);

impl Default for RunConfigBuilder {
    /// [`RunConfig::builder`].
    fn default() -> Self {
        RunConfig::builder()
    }
}

impl From<RunConfig> for RunConfigBuilder {
    fn from(config: RunConfig) -> Self {
        RunConfigBuilder(config)
    }
}

impl RunConfigBuilder {
    /// The configuration, if its settings hold together: `runs` 1 to
    /// 100 000, `rounds` 1 to 1000 and 1 with a `duration`, a positive
    /// `min_sample_time`, an `interval` only with a `duration`, both
    /// positive and the interval no longer. The error names the setting
    /// (`` `RunConfig::runs` must be at least 1 ``).
    pub fn build(&self) -> Result<RunConfig, ConfigError> {
        self.0.check()?;
        Ok(self.0.clone())
    }

    /// Which benchmarks (`all`, `os`, `os.syscall`, `mem.*`), replacing
    /// those set before. Empty (the default): all.
    pub fn selectors<S: Into<String>>(
        &mut self,
        selectors: impl IntoIterator<Item = S>,
    ) -> &mut Self {
        self.0.selectors = selectors.into_iter().map(Into::into).collect();
        self
    }

    /// The parameter sweeps (`threads` → `1,2,4`), replacing those set
    /// before. Default: none (each parameter at its default).
    pub fn sweep<K: Into<String>, V: Into<String>>(
        &mut self,
        sweep: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Self {
        self.0.sweep = sweep
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self
    }

    /// One parameter's values (`--param threads=1,2,4`), replacing that
    /// parameter's.
    pub fn param(&mut self, name: impl Into<String>, values: impl Into<String>) -> &mut Self {
        self.0.sweep.insert(name.into(), values.into());
        self
    }

    /// Samples per record (`--runs`): 1 to 100 000. Default 5 (3 with `quick`).
    pub fn runs(&mut self, runs: usize) -> &mut Self {
        self.0.runs = runs;
        self
    }

    /// Rounds (`--rounds`): 1 to 1000, and 1 with a duration. Default 1.
    pub fn rounds(&mut self, rounds: usize) -> &mut Self {
        self.0.rounds = rounds;
        self
    }

    /// Minimum duration of one sample (`--min-sample-time`), positive.
    /// Default 10 ms (5 ms with `quick`).
    pub fn min_sample_time(&mut self, t: Duration) -> &mut Self {
        self.0.min_sample_time = t;
        self
    }

    /// Warm-up before the first sample (`--warmup`). Default 100 ms (20 ms
    /// with `quick`).
    pub fn warmup(&mut self, t: Duration) -> &mut Self {
        self.0.warmup = t;
        self
    }

    /// Time-series mode (`--duration`): sample for this long; `None` (the
    /// default) for samples of `runs`.
    pub fn duration(&mut self, d: impl Into<Option<Duration>>) -> &mut Self {
        self.0.duration = d.into();
        self
    }

    /// The time-series interval (`--interval`), needs a duration. `None`
    /// (the default): 1 s.
    pub fn interval(&mut self, i: impl Into<Option<Duration>>) -> &mut Self {
        self.0.interval = i.into();
        self
    }

    /// `--quick`: benchmarks may shrink their defaults. This sets only the
    /// flag; [`RunConfig::quick`] also has fewer, shorter samples.
    pub fn quick(&mut self, quick: bool) -> &mut Self {
        self.0.quick = quick;
        self
    }

    /// Each parameter's smoke value instead of its default (tests).
    pub fn smoke(&mut self, smoke: bool) -> &mut Self {
        self.0.smoke = smoke;
        self
    }

    /// Where benchmarks may create files (`--scratch-dir`). `None` (the
    /// default): the system temporary directory.
    pub fn scratch_dir(&mut self, dir: impl Into<Option<PathBuf>>) -> &mut Self {
        self.0.scratch_dir = dir.into();
        self
    }

    /// The module options (`peer`, `token`), replacing those set before.
    pub fn options<K: Into<String>, V: Into<String>>(
        &mut self,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Self {
        self.0.options = options
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self
    }

    /// One module option (`--opt KEY=VALUE`), replacing that key's.
    pub fn option(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.options.insert(key.into(), value.into());
        self
    }

    /// The flag that stops the run (share one between configurations, and
    /// with a Ctrl-C handler). Default: a fresh one, unset.
    pub fn cancel_flag(&mut self, flag: Arc<AtomicBool>) -> &mut Self {
        self.0.cancel = flag;
        self
    }

    /// The launched task to record in the report. Default none.
    pub fn cluster(&mut self, cluster: impl Into<Option<Cluster>>) -> &mut Self {
        self.0.cluster = cluster.into();
        self
    }

    /// A latency target (`--slo`): a capacity search for every selected
    /// benchmark. Default none.
    pub fn slo(&mut self, slo: impl Into<Option<Slo>>) -> &mut Self {
        self.0.slo = slo.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message `build` refuses `b` with.
    fn refused(b: &RunConfigBuilder) -> String {
        match b.build() {
            Err(ConfigError::Invalid(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn presets_are_valid() {
        for cfg in [
            RunConfig::default(),
            RunConfig::quick(),
            RunConfig::smoke_test("os.syscall", &[("n", "1")]),
        ] {
            cfg.check().unwrap();
            let rebuilt = cfg.to_builder().build().unwrap();
            assert_eq!(format!("{cfg:?}"), format!("{rebuilt:?}"));
            assert!(Arc::ptr_eq(cfg.cancel_flag(), rebuilt.cancel_flag()));
        }
    }

    #[test]
    fn build_refuses_zero_runs() {
        let m = refused(RunConfig::builder().runs(0));
        assert_eq!(m, "`RunConfig::runs` must be at least 1");
        let m = refused(RunConfig::builder().runs(100_001));
        assert_eq!(m, "`RunConfig::runs` must be at most 100000");
        RunConfig::builder().runs(100_000).build().unwrap();
    }

    #[test]
    fn build_refuses_zero_rounds() {
        for r in [0, 1001] {
            let m = refused(RunConfig::builder().rounds(r));
            assert_eq!(m, "`RunConfig::rounds` must be between 1 and 1000");
        }
        RunConfig::builder().rounds(1000).build().unwrap();
    }

    #[test]
    fn build_refuses_rounds_with_a_duration() {
        let mut b = RunConfig::builder();
        b.rounds(2).duration(Duration::from_secs(5));
        let m = refused(&b);
        assert!(
            m.starts_with("`RunConfig::rounds` cannot be combined with `RunConfig::duration`"),
            "{m}"
        );
        b.rounds(1).build().unwrap();
    }

    #[test]
    fn build_refuses_a_zero_min_sample_time() {
        let m = refused(RunConfig::builder().min_sample_time(Duration::ZERO));
        assert_eq!(m, "`RunConfig::min_sample_time` must be positive");
    }

    #[test]
    fn build_refuses_an_interval_without_a_duration() {
        let m = refused(RunConfig::builder().interval(Duration::from_secs(1)));
        assert_eq!(m, "`RunConfig::interval` needs `RunConfig::duration`");
    }

    #[test]
    fn build_refuses_an_interval_longer_than_the_duration() {
        let mut b = RunConfig::builder();
        b.duration(Duration::from_secs(2))
            .interval(Duration::from_secs(3));
        let m = refused(&b);
        assert_eq!(
            m,
            "`RunConfig::interval` (3s) is longer than `RunConfig::duration` (2s)"
        );
        // Without an interval, the default 1 s is longer than 500 ms.
        let m = refused(
            RunConfig::builder()
                .duration(Duration::from_millis(500))
                .interval(None),
        );
        assert!(m.starts_with("`RunConfig::interval` (1s) is longer"), "{m}");
        let m = refused(RunConfig::builder().duration(Duration::ZERO));
        assert_eq!(
            m,
            "`RunConfig::duration` and `RunConfig::interval` must be positive"
        );
        let cfg = b.interval(Duration::from_secs(2)).build().unwrap();
        assert_eq!(cfg.duration(), Some(Duration::from_secs(2)));
        assert_eq!(cfg.interval(), Duration::from_secs(2));
    }

    #[test]
    fn every_refusal_names_a_setting_the_cli_renames() {
        let names = |s: &str| match s {
            "RunConfig::runs" => Some("--runs"),
            "RunConfig::rounds" => Some("--rounds"),
            "RunConfig::min_sample_time" => Some("--min-sample-time"),
            "RunConfig::duration" => Some("--duration"),
            "RunConfig::interval" => Some("--interval"),
            _ => None,
        };
        let mut b = RunConfig::builder();
        b.rounds(0);
        let m = refused(&b);
        assert_eq!(
            crate::text::rename_settings(&m, &names),
            "--rounds must be between 1 and 1000"
        );
    }

    #[test]
    fn builder_setters_reach_the_getters() {
        let flag = Arc::new(AtomicBool::new(false));
        let cfg = RunConfig::quick()
            .to_builder()
            .selectors(["os", "mem.*"])
            .sweep([("threads", "1,2")])
            .param("block", "4K")
            .runs(4)
            .rounds(3)
            .min_sample_time(Duration::from_millis(2))
            .warmup(Duration::ZERO)
            .smoke(true)
            .scratch_dir(PathBuf::from("/tmp/x"))
            .options([("peer", "h:1")])
            .option("token", "t")
            .cancel_flag(flag.clone())
            .build()
            .unwrap();
        assert_eq!(cfg.selectors(), ["os", "mem.*"]);
        assert_eq!(cfg.sweep().len(), 2);
        assert_eq!((cfg.runs(), cfg.rounds()), (4, 3));
        assert_eq!(cfg.min_sample_time(), Duration::from_millis(2));
        assert_eq!(cfg.warmup(), Duration::ZERO);
        assert!(cfg.is_quick() && cfg.is_smoke());
        assert_eq!(cfg.scratch_dir(), Some(Path::new("/tmp/x")));
        assert_eq!(cfg.options().len(), 2);
        assert!(!cfg.is_cancelled());
        crate::runner::cancel(&flag);
        assert!(cfg.is_cancelled());
        let longer = cfg.with_min_sample_time_at_least(Duration::from_millis(50));
        assert_eq!(longer.min_sample_time(), Duration::from_millis(50));
        longer.check().unwrap();
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let cfg = RunConfig::quick()
            .to_builder()
            .option("token", "hunter2-secret")
            .option("peer-token", "hunter3")
            .option("peer", "h:1")
            .build()
            .unwrap();
        let ctx = cfg.context(std::sync::Arc::new(crate::Host::detect()));
        let builder = cfg.to_builder();
        for text in [
            format!("{cfg:?}"),
            format!("{ctx:?}"),
            format!("{cfg:#?}"),
            format!("{builder:?}"),
        ] {
            assert!(!text.contains("hunter"), "{text}");
            assert!(
                text.contains("<redacted>") && text.contains("h:1"),
                "{text}"
            );
        }
    }
}
