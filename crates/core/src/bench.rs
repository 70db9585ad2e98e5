//! The plugin contract: a [`Benchmark`] is a stateless descriptor; a prepared
//! sweep point is a stateful [`Case`] whose one timed verb is [`Case::run`].
//!
//! The runner owns everything else: warm-up, batch sizing, repetitions, the
//! clock, statistics and turning [`Work`] into rates. A benchmark never times
//! itself with the wall clock (it may report device-side time, see
//! [`Work::elapsed`]) and never computes its own statistics.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::caveat::Caveat;
use crate::error::{BenchError, ConfigError, ContractRule, RegistryError};
use crate::host::Host;
use crate::metric::Peak;
pub use crate::metric::{Direction, MetricRole};
use crate::param::{ParamSpec, Point, Value};
use crate::reference::Reference;

/// How the runner derives a metric's per-sample value from a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricSource {
    /// Seconds per operation: `elapsed / ops`. Unit `s`.
    TimePerOp,
    /// Operations per second: `ops / elapsed`.
    OpsPerSec,
    /// Bytes per second: `bytes / elapsed`. Unit `B/s`.
    BytesPerSec,
    /// Latency in seconds from the batch's histogram ([`Work::latency`], in
    /// nanoseconds). The per-sample value is the batch's mean latency; the
    /// record also carries percentiles of all batches' merged histogram.
    Latency,
    /// A value the case reports itself in [`Work::values`] under this key
    /// (for example UDP loss in %). It is not scaled by time. In a time
    /// series (`--duration`), an interval's value is the mean of its
    /// batches' values weighted by their time, so it covers the whole
    /// interval: a rate (bits per second) comes out as the interval's total
    /// over its time, a percentage as its time-weighted average.
    Reported(Cow<'static, str>),
    /// A reported value that is the smallest over its batches (a slowest
    /// stream's rate, a best resolution): an interval keeps the minimum.
    ReportedMin(Cow<'static, str>),
    /// A reported value that is the largest over its batches (a worst
    /// residual, a fastest stream): an interval keeps the maximum.
    ReportedMax(Cow<'static, str>),
}

impl MetricSource {
    /// The [`Work::values`] key of a reported metric (any of the three
    /// `Reported` kinds).
    pub fn reported_key(&self) -> Option<&str> {
        match self {
            MetricSource::Reported(k)
            | MetricSource::ReportedMin(k)
            | MetricSource::ReportedMax(k) => Some(k),
            _ => None,
        }
    }
}

/// The declaration of one metric a benchmark produces.
#[derive(Debug, Clone)]
pub struct MetricSpec {
    /// Metric name in results (`time_per_op`, `bandwidth`, `iops`);
    /// borrowed for a literal, owned for a name made at run time.
    pub name: Cow<'static, str>,
    /// Unit of the stored value, in base units (`s`, `B/s`, `op/s`, `flop/s`, `%`).
    pub unit: Cow<'static, str>,
    /// Which way is better.
    pub direction: Direction,
    /// How it is computed from a batch.
    pub source: MetricSource,
    /// What it is to the gate: the constructors make a
    /// [`MetricRole::Headline`]; the first metric of a benchmark is its
    /// headline, and each later one says what it is with
    /// [`MetricSpec::secondary`], [`MetricSpec::derived`] or
    /// [`MetricSpec::spread`].
    pub role: MetricRole,
}

impl MetricSpec {
    /// This metric as a [`MetricRole::Secondary`] one.
    pub fn secondary(self) -> Self {
        MetricSpec {
            role: MetricRole::Secondary,
            ..self
        }
    }

    /// This metric as a [`MetricRole::Derived`] one.
    pub fn derived(self) -> Self {
        MetricSpec {
            role: MetricRole::Derived,
            ..self
        }
    }

    /// This metric as a [`MetricRole::Spread`] one.
    pub fn spread(self) -> Self {
        MetricSpec {
            role: MetricRole::Spread,
            ..self
        }
    }

    /// Seconds per operation (lower is better).
    pub fn time_per_op(name: impl Into<Cow<'static, str>>) -> Self {
        MetricSpec {
            name: name.into(),
            unit: Cow::Borrowed("s"),
            direction: Direction::Lower,
            source: MetricSource::TimePerOp,
            role: MetricRole::Headline,
        }
    }

    /// Operations per second (higher is better) in the given unit.
    pub fn ops_per_sec(
        name: impl Into<Cow<'static, str>>,
        unit: impl Into<Cow<'static, str>>,
    ) -> Self {
        MetricSpec {
            name: name.into(),
            unit: unit.into(),
            direction: Direction::Higher,
            source: MetricSource::OpsPerSec,
            role: MetricRole::Headline,
        }
    }

    /// Bytes per second (higher is better).
    pub fn bytes_per_sec(name: impl Into<Cow<'static, str>>) -> Self {
        MetricSpec {
            name: name.into(),
            unit: Cow::Borrowed("B/s"),
            direction: Direction::Higher,
            source: MetricSource::BytesPerSec,
            role: MetricRole::Headline,
        }
    }

    /// Latency percentiles from the case's histogram (lower is better).
    pub fn latency(name: impl Into<Cow<'static, str>>) -> Self {
        MetricSpec {
            name: name.into(),
            unit: Cow::Borrowed("s"),
            direction: Direction::Lower,
            source: MetricSource::Latency,
            role: MetricRole::Headline,
        }
    }
}

/// What a benchmark is: id, description, parameters and metrics.
///
/// Its strings (and those of [`MetricSpec`], [`ParamSpec`] and
/// [`OptionSpec`]) are `Cow<'static, str>`: a literal is borrowed
/// (`"disk.io".into()`), a name made at run time (one benchmark per
/// discovered device, per entry of a config file) is an owned `String`,
/// with nothing leaked.
#[derive(Debug, Clone)]
pub struct Meta {
    /// Dotted id, `module.name` (`os.syscall`, `disk.io`).
    pub id: Cow<'static, str>,
    /// One-line description for `benchsuite list`.
    pub description: Cow<'static, str>,
    /// Parameters it accepts; the sweep is validated against these.
    pub params: Vec<ParamSpec>,
    /// Metrics it produces; the first is the headline metric.
    pub metrics: Vec<MetricSpec>,
}

impl Meta {
    /// The module part of the id (`os` for `os.syscall`).
    pub fn module(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }

    /// The declaration of a parameter by name.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Checks the rules of the contract that hold for any declaration,
    /// wherever it is registered: the id is `module.name`; at least one
    /// metric; exactly one [`MetricRole::Headline`], listed first (what
    /// `compare` gates and what a report without roles assumes); metric
    /// and parameter names unique. [`Registry`](crate::Registry) runs it on
    /// every benchmark it is given, and adds the rules of a registry (the
    /// id's module, no duplicate id).
    pub fn check(&self) -> Result<(), RegistryError> {
        let refuse = |rule| {
            Err(RegistryError {
                benchmark: self.id.to_string(),
                rule,
            })
        };
        match self.id.split_once('.') {
            Some((module, name)) if !module.is_empty() && !name.is_empty() => {}
            _ => return refuse(ContractRule::IdNotDotted),
        }
        let Some(first) = self.metrics.first() else {
            return refuse(ContractRule::NoMetrics);
        };
        let headlines: Vec<String> = self
            .metrics
            .iter()
            .filter(|m| m.role == MetricRole::Headline)
            .map(|m| m.name.to_string())
            .collect();
        if headlines.len() > 1 {
            return refuse(ContractRule::ManyHeadlines { names: headlines });
        }
        if first.role != MetricRole::Headline {
            return refuse(ContractRule::HeadlineNotFirst {
                first: first.name.to_string(),
            });
        }
        if let Some(name) = first_repeated(self.metrics.iter().map(|m| m.name.as_ref())) {
            return refuse(ContractRule::DuplicateMetric { name });
        }
        if let Some(name) = first_repeated(self.params.iter().map(|p| p.name.as_ref())) {
            return refuse(ContractRule::DuplicateParam { name });
        }
        Ok(())
    }
}

/// The first name that occurs twice, in order.
fn first_repeated<'a>(mut names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    names.find(|n| !seen.insert(*n)).map(str::to_string)
}

/// A module option a benchmark reads from [`Context::options`] (`--opt
/// KEY=VALUE`, or a dedicated CLI flag such as `--peer`): declared so that
/// a typo or a malformed value is an error before anything runs, and so
/// `benchsuite list` can show it.
#[derive(Debug, Clone)]
pub struct OptionSpec {
    /// The key (`peer`, `cpu-ghz`, `disk.space-check`).
    pub name: Cow<'static, str>,
    /// One line for `benchsuite list`: what it does and what it takes.
    pub help: Cow<'static, str>,
    /// Checks a value; the error says what is accepted.
    pub check: fn(&str) -> Result<(), crate::error::ValueError>,
    /// A secret (a token): its value never reaches a report, an export or
    /// a log; reports show [`REDACTED`] instead.
    pub secret: bool,
    /// What the option is to the rest of the tool (a peer's address, its
    /// token), so that a launcher's pairing knows which benchmarks need a
    /// peer and what to fill in, whatever their module.
    pub role: OptionRole,
}

/// What an option is beyond its value: a declared capability of the
/// benchmark that takes it (as fio's engines declare theirs in
/// `ioengine_ops` flags), read by tools that compose benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptionRole {
    /// An ordinary option.
    #[default]
    Plain,
    /// The address of the server the benchmark measures: the benchmark
    /// needs a peer. Under a launcher, the pairing fills it with another
    /// rank's server.
    Peer,
    /// The token that peer takes; the pairing fills it with its own.
    Token,
}

/// The name of `bench`'s option with `role`, if it declares one.
pub fn option_with_role(bench: &dyn Benchmark, role: OptionRole) -> Option<Cow<'static, str>> {
    bench
        .options()
        .into_iter()
        .find(|o| o.role == role)
        .map(|o| o.name)
}

/// What a report shows in place of a secret option's value.
pub const REDACTED: &str = "<redacted>";

impl OptionSpec {
    /// An option taking any text.
    pub fn text(name: impl Into<Cow<'static, str>>, help: impl Into<Cow<'static, str>>) -> Self {
        OptionSpec {
            name: name.into(),
            help: help.into(),
            check: |_| Ok(()),
            secret: false,
            role: OptionRole::Plain,
        }
    }

    /// The same option with `role` (see [`OptionRole`]).
    pub fn role(self, role: OptionRole) -> Self {
        OptionSpec { role, ..self }
    }

    /// A secret taking any text (a token): redacted in every report.
    pub fn secret(name: impl Into<Cow<'static, str>>, help: impl Into<Cow<'static, str>>) -> Self {
        OptionSpec {
            secret: true,
            ..OptionSpec::text(name, help)
        }
    }

    /// An on/off option (`on`, `off`, `true`, `false`, `yes`, `no`, `1`, `0`).
    pub fn bool(name: impl Into<Cow<'static, str>>, help: impl Into<Cow<'static, str>>) -> Self {
        OptionSpec {
            name: name.into(),
            help: help.into(),
            check: |v| parse_bool(v).map(|_| ()),
            secret: false,
            role: OptionRole::Plain,
        }
    }

    /// A duration option (`500ms`, `5s`).
    pub fn duration(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
    ) -> Self {
        OptionSpec {
            name: name.into(),
            help: help.into(),
            check: |v| crate::units::parse_duration(v).map(|_| ()),
            secret: false,
            role: OptionRole::Plain,
        }
    }

    /// An option with its own check.
    pub fn with_check(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        check: fn(&str) -> Result<(), crate::error::ValueError>,
    ) -> Self {
        OptionSpec {
            name: name.into(),
            help: help.into(),
            check,
            secret: false,
            role: OptionRole::Plain,
        }
    }
}

/// Parses an on/off option value.
pub fn parse_bool(v: &str) -> Result<bool, crate::error::ValueError> {
    parse_bool_text(v).map_err(Into::into)
}

fn parse_bool_text(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("`{v}` is not on or off")),
    }
}

/// Whether a benchmark can run on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It can run.
    Ready,
    /// It cannot, for this reason (no GPU, no O_DIRECT, ...). Becomes a
    /// `skipped` record, never an error exit.
    Skip(String),
}

/// Whether an option key names a secret whatever declares it (`token`,
/// `*-token`, `*secret*`, `*password*`): such values never reach `Debug`
/// output, a report or a log.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "token" || k.ends_with("-token") || k.contains("secret") || k.contains("password")
}

/// `Debug` of a map of module options with secret values redacted.
pub struct RedactedOptions<'a>(pub &'a BTreeMap<String, String>);

impl std::fmt::Debug for RedactedOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if is_secret_key(k) {
                    REDACTED
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

/// What a benchmark may know about the run: the host, where it may write,
/// user options, and the cancellation flag. Its `Debug` redacts secret
/// options.
#[derive(Clone)]
pub struct Context {
    /// The machine, as detected once at the start of the run.
    pub host: Arc<Host>,
    /// Directory a benchmark may create files in (it removes them itself).
    pub scratch_dir: PathBuf,
    /// `--quick`: benchmarks may shrink their defaults.
    pub quick: bool,
    /// Free-form options a module understands (`peer`, `token`,
    /// `peak-mem-bw`), set from the CLI or by an embedding program.
    pub options: BTreeMap<String, String>,
    /// Set when the user pressed Ctrl-C; long cases should check it between
    /// operations via [`Context::cancelled`].
    pub cancel: Arc<AtomicBool>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("host", &self.host.hostname)
            .field("scratch_dir", &self.scratch_dir)
            .field("quick", &self.quick)
            .field("options", &RedactedOptions(&self.options))
            .field("cancelled", &self.cancelled())
            .finish()
    }
}

impl Context {
    /// A context for `host` with the scratch directory set to the system
    /// temporary directory.
    pub fn new(host: Arc<Host>) -> Self {
        Context {
            host,
            scratch_dir: std::env::temp_dir(),
            quick: false,
            options: BTreeMap::new(),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// True once the run was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// The work one batch did. Rates are computed by the runner.
#[derive(Debug, Default)]
pub struct Work {
    /// Operations completed (calls, I/Os, messages, flops...).
    pub ops: u64,
    /// Bytes moved, counted once per direction.
    pub bytes: u64,
    /// Per-operation latencies in nanoseconds, when the case records them.
    pub latency: Option<Histogram<u64>>,
    /// Time measured by the device itself (CUDA events), used instead of the
    /// runner's wall clock when present.
    pub elapsed: Option<Duration>,
    /// Values for [`MetricSource::Reported`] metrics, by their key (a
    /// literal `"loss".into()`, or a name made at run time).
    pub values: BTreeMap<Cow<'static, str>, f64>,
}

impl Work {
    /// Work of `ops` operations.
    pub fn ops(ops: u64) -> Self {
        Work {
            ops,
            ..Work::default()
        }
    }

    /// Work of `ops` operations moving `bytes` bytes.
    pub fn ops_bytes(ops: u64, bytes: u64) -> Self {
        Work {
            ops,
            bytes,
            ..Work::default()
        }
    }
}

/// What a case says about its record besides the work: the peak, caveats,
/// notes and resolved parameters. Usually all known once `prepare` is done;
/// a case keeps one and hands it back from [`Case::finish`].
#[derive(Debug, Clone, Default)]
pub struct About {
    /// The theoretical peak for the headline metric at this point, if one
    /// can be derived. The runner adds the efficiency.
    pub peak: Option<Peak>,
    /// Things that make the number mean less than it seems (page cache
    /// involved, f16 emulated...).
    pub caveats: Vec<Caveat>,
    /// Facts that help read the number but are not caveats (the clock
    /// source, a calibrated frequency, what exactly one operation includes).
    pub notes: Vec<String>,
    /// Parameters whose value was chosen in `prepare` (an `auto` default
    /// such as `size=0` resolved to four times the last-level cache, or a
    /// block size picked from the access pattern). The record shows these
    /// values instead of the placeholder, so a reader and `compare` see what
    /// actually ran.
    pub resolved: Vec<(Cow<'static, str>, Value)>,
}

impl About {
    /// Adds a module-specific caveat.
    pub fn caveat(&mut self, c: impl Into<Caveat>) {
        self.caveats.push(c.into());
    }

    /// Adds a note.
    pub fn note(&mut self, n: impl Into<String>) {
        self.notes.push(n.into());
    }
}

/// What a finished case leaves for its record: its [`About`] and, when
/// releasing its resources failed, that error (the record then fails).
#[derive(Debug, Default)]
pub struct Finished {
    /// Peak, caveats, notes and resolved parameters.
    pub about: About,
    /// The teardown error (a file that could not be removed, a thread that
    /// panicked), if any.
    pub error: Option<BenchError>,
}

impl From<About> for Finished {
    fn from(about: About) -> Self {
        Finished { about, error: None }
    }
}

impl Finished {
    /// `about`, and `result`'s error if it is one.
    pub fn with(about: About, result: Result<(), BenchError>) -> Self {
        Finished {
            about,
            error: result.err(),
        }
    }
}

/// A prepared sweep point: made by [`Benchmark::prepare`] (untimed), timed
/// through [`Case::run`], always consumed by [`Case::finish`].
///
/// The runner calls `prepare`, every `run` and `finish` of one case on the
/// same thread, one case at a time, so a case may change that thread's state
/// (CPU affinity, signal mask) in `prepare` and restore it in `finish`.
/// Because `finish` takes the case by value, nothing can run after it: a
/// case holds its resources directly, never as `Option`s. A case that
/// wraps a [`crate::team::Team`] is [`crate::team::TeamCase`].
pub trait Case: Send {
    /// The one timed verb: perform `iters` iterations and say what was done.
    /// The runner times this call (unless [`Work::elapsed`] is set).
    fn run(&mut self, iters: u64) -> Result<Work, BenchError>;

    /// Releases what `prepare` made (files removed, sockets closed, threads
    /// joined) and says what the record carries. Always called once, also
    /// after `run` failed, panicked or was interrupted. The default drops
    /// the case (its `Drop` releases what it holds) and adds nothing to
    /// the record.
    fn finish(self: Box<Self>) -> Finished {
        Finished::default()
    }
}

/// A benchmark: a stateless descriptor registered in a [`crate::Registry`].
pub trait Benchmark: Send + Sync {
    /// Id, description, parameters and metrics.
    fn meta(&self) -> Meta;

    /// The module options ([`Context::options`]) it reads. The default is
    /// none; a run whose options no selected benchmark declares is an
    /// error naming the key.
    fn options(&self) -> Vec<OptionSpec> {
        Vec::new()
    }

    /// Whether it can run here; the default is [`Probe::Ready`].
    fn probe(&self, ctx: &Context) -> Probe {
        let _ = ctx;
        Probe::Ready
    }

    /// Cross-parameter checks on a fully filled point, run before anything
    /// starts (for example `block` must not exceed `size`, or `size` must
    /// fit in the memory `ctx.host` has). An error here stops the whole run
    /// before it measures anything; the CLI prints it and exits 2.
    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let _ = (ctx, point);
        Ok(())
    }

    /// Facts about the hardware this benchmark measures that belong in the
    /// report's host section (GPU model and clocks, NIC speed, file system).
    /// Called once per run, after a `Ready` probe; the runner stores the
    /// value under [`Meta::module`] in [`Host::extra`](crate::Host), the
    /// first benchmark of a module to return one wins.
    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        let _ = ctx;
        None
    }

    /// Untimed setup of one sweep point.
    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError>;

    /// How the single-purpose tool this benchmark is measured against
    /// (fio, iperf3, sysbench...) measures the same thing at this point,
    /// with equivalent settings: `benchsuite reference` runs it beside us.
    /// Plain data, so a test can check the command line without the tool.
    /// The default is none (no reference, or none for this point).
    fn reference(&self, ctx: &Context, point: &Point) -> Option<Reference> {
        let _ = (ctx, point);
        None
    }
}

impl std::fmt::Debug for dyn Benchmark + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Benchmark")
            .field("id", &self.meta().id)
            .finish()
    }
}
