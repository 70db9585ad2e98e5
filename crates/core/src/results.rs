//! The result model: plain, versioned data, serialised as JSON.
//!
//! # Wire format (schema 1.9)
//!
//! ```text
//! {
//!   "schema_version": "1.9",          // "MAJOR.MINOR"; MAJOR bumps on breaking change
//!   "tool_version": "0.1.0",           // benchsuite version that wrote the file
//!   "started_at": "2026-11-21T21:00:00Z",   // RFC 3339, UTC
//!   "host": { ... },                   // see `Host`; unknown fields are null
//!   "cluster": null,                   // absent unless run under a launcher: see `Cluster`
//!   "progress": null,                  // absent unless the run did not finish: {"done", "planned"}
//!   "config": {                        // how the run was made (see `RunConfigRecord`)
//!     "selectors": ["os"], "params": {"threads": "1,2"}, "runs": 5,
//!     "min_sample_time_s": 0.01, "warmup_time_s": 0.05, "duration_s": null,
//!     "interval_s": null, "quick": false, "timer_overhead_s": 2.1e-8,
//!     "options": {}
//!   },
//!   "records": [{
//!     "id": "os.syscall",             // benchmark id
//!     "params": {"call": "getppid"},   // the sweep point as it ran: numbers (bytes, counts), strings, booleans
//!     "requested": null,               // the point as asked for, where `auto` or a fallback changed it
//!     "status": "ok",                  // "ok" | "skipped" | "failed"
//!     "reason": null,                  // why skipped / the error when failed
//!     "iters_per_sample": 65536,       // batch size chosen by the runner
//!     "metrics": [{
//!       "name": "time_per_op",
//!       "unit": "s",                   // base units: s, B/s, op/s, flop/s, %
//!       "direction": "lower",          // "higher" or "lower" is better
//!       "samples": [5.1e-8, ...],      // one value per sample (per interval with --duration)
//!       "timestamps": null,            // seconds since the record started, for time series
//!       "rounds": [5, 5, 5],           // with --rounds: samples per round, in order (absent: one round)
//!       "tails": null,                 // latency metrics: each sample's own {"p99": [...], "p99_9": [...]}, s
//!       "role": "headline",            // headline | secondary | derived | spread (see `MetricRole`)
//!       "summary": {"n":5, "mean":..., "median":..., "stddev":..., "cv":...,
//!                   "min":..., "max":..., "p5":..., "p95":..., "trimmed_mean":...,
//!                   "ci95": [low, high]},
//!       "latency": null                // or {"count","mean","min","p50","p90","p99","p99_9","p99_99","max"} in s
//!     }],
//!     "peak": null,                    // or {"metric","value","unit","formula","inputs":{name:{value,unit,source}},"efficiency"}
//!     "warnings": [],                  // caveats: {"kind": "noisy", "metric", "cv", "n", "message"}, ... (see `Caveat`)
//!     "notes": []                      // facts that help read it (clock source, what one op includes)
//!   }]
//! }
//! ```
//!
//! Readers must ignore fields they do not know (minor versions add fields).
//! 1.1 added `config.rounds`, `host.memory_available_bytes`, and
//! `host.cpu.{family, model_id, stepping, microcode, microarchitecture}`;
//! a 1.0 report reads with those absent (`rounds` = 1, the others null).
//! 1.2 added `record.requested` and `metric.{rounds, tails}`: `compare`
//! pairs records on the requested point, treats each round as one unit of
//! evidence, and judges latency tails; older reports compare with one round
//! and no tails. 1.3 added `progress` (`{"done", "planned"}`), present only
//! on the report of a run that did not finish. 1.4 made each of a
//! record's `warnings` an object with a `kind`, the kind's fields and the
//! `message` sentence (they were strings: older reports read them as kind
//! `text`). 1.5 added `cluster` (`{"launcher", "job", "step", "rank",
//! "world_size", "node", "local_rank"}`), present only on a report of a
//! task started by a launcher (Slurm, MPI, a Kubernetes Indexed Job).
//! 1.5 also added `record.reference` (only in reports of `benchsuite
//! reference`): `{tool, version, command, metric, median, unit, ratio,
//! rounds, note}`, a reference tool run beside the record (see
//! [`ReferenceResult`]); absent elsewhere. 1.5 also added `record.phase`,
//! the plan-file phase (`run -f plan.toml`) the record was measured in;
//! absent outside plan files.
//!
//! 1.6 added `metric.role` (`headline`, `secondary`, `derived`, `spread`:
//! what `compare` gates by default, see [`MetricRole`]); reports before 1.6
//! have none, and readers take the benchmark's declaration (or, for an
//! unknown benchmark, the first metric as the headline and the others as
//! secondary).
//!
//! 1.7 added `host.build.features` (the Cargo features the binary was built
//! with, e.g. `["wgpu"]`) and `host.build.commit` (its source revision),
//! each absent when unknown or empty.
//!
//! 1.8 added `record.load` (`{"offered", "achieved", "saturated"}`,
//! operations per second, on open-loop records: `rate=N`, see
//! [`crate::openloop`]), `record.capacity` (the answer of a capacity
//! search, on its summary record: see [`crate::capacity::Capacity`]), the
//! caveat kind `saturated`, and the parameter kind `rate`. Absent
//! elsewhere. It also added `host.cpu.idle` (the cpuidle driver and
//! governor, haltpoll's poll time and cpu0's idle states),
//! `reference.our_rounds` (our value of a latency percentile in each
//! round) and `reference.round_ratios` (each round's own ratio, ours
//! against the tool's round beside it).
//!
//! 1.9 added `capacity.searches`: with `--rounds N` a capacity search runs
//! N times, each answer listed in order (`null`: never met), `rate` their
//! median and the summary record's `capacity` metric one sample per
//! search (its headline then); absent for one search.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::caveat::Caveat;
use crate::cluster::Cluster;
use crate::error::ReportError;
use crate::host::Host;
use crate::metric::Direction;
use crate::param::Point;
use crate::reference::ReferenceResult;
use crate::stats::{LatencySummary, Summary};

pub use crate::metric::{MetricRole, Peak, PeakInput};

/// Current schema version, `MAJOR.MINOR`.
pub const SCHEMA_VERSION: &str = "1.9";
/// Major schema version this build reads.
pub const SCHEMA_MAJOR: u32 = 1;

/// The outcome of one benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Schema version of this document.
    pub schema_version: String,
    /// Version of the benchsuite that produced it.
    pub tool_version: String,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// The machine.
    pub host: Host,
    /// The task of a launched job that measured (Slurm, MPI, a Kubernetes
    /// Indexed Job), read from the launcher's environment; absent for a
    /// run that no launcher started (and with `--no-cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Cluster>,
    /// How the run was configured.
    pub config: RunConfigRecord,
    /// Present only on a report of a run that did not finish: written
    /// while it ran (`-o FILE` is rewritten after every record), or cut
    /// short by Ctrl-C. A report without it is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<RunProgress>,
    /// One record per benchmark × sweep point.
    pub records: Vec<Record>,
}

/// How far an unfinished run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunProgress {
    /// Record steps finished (each round of each record counts once).
    pub done: usize,
    /// Record steps planned (records × rounds).
    pub planned: usize,
}

/// The run configuration as recorded in the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunConfigRecord {
    /// Selectors given (`os`, `mem.*`).
    pub selectors: Vec<String>,
    /// Parameter sweeps given, as typed.
    pub params: BTreeMap<String, String>,
    /// Samples per record per round.
    pub runs: usize,
    /// Rounds: the plan ran this many times and each record pools the
    /// samples of all of them (absent in older reports: 1).
    #[serde(default = "one")]
    pub rounds: usize,
    /// Minimum duration of one sample, seconds.
    pub min_sample_time_s: f64,
    /// Warm-up time before sampling, seconds.
    pub warmup_time_s: f64,
    /// Time-series mode: total duration, seconds.
    pub duration_s: Option<f64>,
    /// Time-series mode: interval between samples, seconds.
    pub interval_s: Option<f64>,
    /// Whether `--quick` was given.
    pub quick: bool,
    /// Measured cost of one clock read (`Instant::now`), seconds.
    pub timer_overhead_s: f64,
    /// Module options (`peer`, `peak-mem-bw`...).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// The latency target of a capacity search (`--slo`), as given.
    /// Schema 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
}

fn one() -> usize {
    1
}

/// Whether a record ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured.
    Ok,
    /// Not run here; `reason` says why.
    Skipped,
    /// Started but failed; `reason` holds the error.
    Failed,
}

/// One benchmark at one sweep point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    /// Benchmark id.
    pub id: String,
    /// Parameter values of this point, as they ran: where a benchmark
    /// resolved an `auto` value (`size=0`, a preset), the resolved value
    /// (see `Case::resolved`); a skipped record keeps the requested values.
    pub params: Point,
    /// The point as the user asked for it, where that differs from
    /// `params` (an `auto` size, an engine fallback, `isa=auto`); absent
    /// when they are the same. `compare` pairs records on this, so the same
    /// plan run on two machines pairs up even where `auto` resolved
    /// differently. See [`Record::requested_params`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<Point>,
    /// Outcome.
    pub status: Status,
    /// Why it was skipped, or the error it failed with.
    pub reason: Option<String>,
    /// Iterations in one timed batch (chosen by the runner).
    pub iters_per_sample: Option<u64>,
    /// Measured metrics (empty unless `ok`).
    pub metrics: Vec<Metric>,
    /// Theoretical peak of the headline metric, with its efficiency.
    pub peak: Option<Peak>,
    /// Caveats about this number, typed (see [`Caveat`]); JSON objects with
    /// a `kind` and a `message` since schema 1.4, plain strings before.
    #[serde(with = "crate::caveat::wire")]
    #[schemars(with = "Vec<crate::caveat::CaveatJson>")]
    pub warnings: Vec<Caveat>,
    /// Facts that help read it (clock source, what one operation includes).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The plan-file phase it was measured in (`run -f plan.toml`); the
    /// HTML report draws each phase's sweeps apart. Absent outside plans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The reference tool run beside this record by `benchsuite reference`
    /// (fio, iperf3...): its command, median and the ratio to ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceResult>,
    /// The offered and achieved rates of an open-loop point (`rate=N`);
    /// absent for closed-loop records. Schema 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::openloop::OpenLoad>,
    /// The answer of a capacity search (`rate=auto`, `--slo`): on the
    /// summary record after its steps. Schema 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::capacity::Capacity>,
}

impl Record {
    /// A record of a benchmark that measured `metrics` at `params`
    /// (nothing else set: add `iters_per_sample`, a peak, warnings or
    /// notes to the value it returns).
    pub fn ok(id: &str, params: Point, metrics: Vec<Metric>) -> Record {
        Record {
            status: Status::Ok,
            reason: None,
            metrics,
            ..Record::skipped(id, params, String::new())
        }
    }

    /// A record for a benchmark that did not run.
    pub fn skipped(id: &str, params: Point, reason: impl Into<String>) -> Record {
        Record {
            id: id.to_string(),
            params,
            requested: None,
            status: Status::Skipped,
            reason: Some(reason.into()),
            iters_per_sample: None,
            metrics: Vec::new(),
            peak: None,
            warnings: Vec::new(),
            notes: Vec::new(),
            phase: None,
            reference: None,
            load: None,
            capacity: None,
        }
    }

    /// A record for a benchmark that failed.
    pub fn failed(id: &str, params: Point, error: impl Into<String>) -> Record {
        Record {
            status: Status::Failed,
            ..Record::skipped(id, params, error)
        }
    }

    /// The metric with this name.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// `id` followed by its parameters as they ran, for display.
    pub fn key(&self) -> String {
        join_key(&self.id, &self.params)
    }

    /// The point as the user asked for it: `requested` where it was
    /// recorded, `params` otherwise.
    pub fn requested_params(&self) -> &Point {
        self.requested.as_ref().unwrap_or(&self.params)
    }

    /// `id` followed by the requested parameters: stable across machines
    /// (an `auto` value keeps its name), so it is the name exporters and
    /// `compare` use for a record.
    pub fn requested_key(&self) -> String {
        join_key(&self.id, self.requested_params())
    }
}

fn join_key(id: &str, params: &Point) -> String {
    let p = params.label();
    if p.is_empty() {
        id.to_string()
    } else {
        format!("{id} {p}")
    }
}

/// One measured quantity of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metric {
    /// Name (`time_per_op`, `bandwidth`).
    pub name: String,
    /// Base unit (`s`, `B/s`, `op/s`).
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// Raw samples.
    pub samples: Vec<f64>,
    /// For time series: seconds since the record started, one per sample.
    pub timestamps: Option<Vec<f64>>,
    /// With `--rounds`: how many of `samples` each round contributed, in
    /// order (they sum to `samples.len()`). Absent for a single round.
    /// `compare` treats each round as one unit of evidence, so drift between
    /// rounds counts as noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<Vec<usize>>,
    /// Latency metrics: each sample's own tail percentiles, so `compare`
    /// can judge tails with an interval as it judges medians.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tails: Option<SampleTails>,
    /// What the metric is to a reader and to the gate (schema 1.6; absent
    /// in older reports, see [`MetricRole`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<MetricRole>,
    /// Statistics of `samples`.
    pub summary: Summary,
    /// Latency percentiles from the merged histogram, for latency metrics.
    pub latency: Option<LatencySummary>,
}

impl Metric {
    /// A metric of `samples` with their summary (no time stamps, rounds,
    /// tails, role or latency percentiles: set them on the value it
    /// returns); an error for no samples or a non-finite one.
    pub fn from_samples(
        name: &str,
        unit: &str,
        direction: Direction,
        samples: &[f64],
    ) -> Result<Metric, crate::stats::StatsError> {
        Ok(Metric {
            name: name.to_string(),
            unit: unit.to_string(),
            direction,
            samples: samples.to_vec(),
            timestamps: None,
            rounds: None,
            tails: None,
            role: None,
            summary: crate::stats::Summary::new(samples)?,
            latency: None,
        })
    }
}
/// Each sample's own latency tail percentiles, in seconds, one value per
/// sample (in `samples` order). A percentile is recorded only where every
/// sample's histogram held enough operations for it to be more than the
/// sample's maximum: 100 for p99, 1000 for p99.9.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SampleTails {
    /// Each sample's 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Vec<f64>>,
    /// Each sample's 99.9th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_9: Option<Vec<f64>>,
}
impl Report {
    /// Serialises as pretty JSON, every string's terminal-steering
    /// characters escaped ([`crate::text::to_json_pretty`]).
    pub fn to_json(&self) -> String {
        crate::text::to_json_pretty(self).expect("a report always serialises")
    }

    /// Parses a report and checks its schema major version: one pass
    /// over the text (a document that does not parse is read again for
    /// its version only, so a future major gets a clear message rather
    /// than a field-level parse error).
    pub fn from_json(text: &str, path: &str) -> Result<Report, ReportError> {
        match serde_json::from_str::<Report>(text) {
            Ok(r) => {
                check_major(&r.schema_version, path)?;
                Ok(r)
            }
            Err(source) => {
                if let Some(v) = schema_version_of(text) {
                    check_major(&v, path)?;
                }
                Err(ReportError::Parse {
                    path: path.to_string(),
                    source,
                })
            }
        }
    }

    /// Reads and parses a report file ([`read_report_text`]: at most
    /// [`MAX_REPORT_BYTES`]).
    pub fn read(path: &std::path::Path) -> Result<Report, ReportError> {
        let text = read_report_text(path)?;
        Report::from_json(&text, &path.display().to_string())
    }
}

/// The largest report file benchsuite reads: 256 MiB (a report of 100k
/// records with ten samples each is about 150 MiB). Parsing holds the
/// text and the report at once, a few times the file's size in memory;
/// a larger file is refused before it is read ([`ReportError::TooLarge`]).
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// The text of a report file (a report, a fleet report), read once and
/// at most [`MAX_REPORT_BYTES`]: a regular file larger than that is
/// refused before reading, anything else (a FIFO, `/dev/stdin`) once that
/// much has been read. Errors name the file.
pub fn read_report_text(path: &std::path::Path) -> Result<String, ReportError> {
    read_text_capped(path, MAX_REPORT_BYTES)
}

fn read_text_capped(path: &std::path::Path, limit: u64) -> Result<String, ReportError> {
    use std::io::Read;
    let p = || path.display().to_string();
    let read_error = |source| ReportError::Read { path: p(), source };
    let too_large = |size: String| ReportError::TooLarge {
        path: p(),
        size,
        limit: crate::units::format_size(limit),
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(crate::units::format_size(meta.len())));
    }
    let mut bytes = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(format!(
            "over {}",
            crate::units::format_size(limit)
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        read_error(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e.utf8_error(),
        ))
    })
}

/// The `schema_version` of a JSON document, if it has one.
fn schema_version_of(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct VersionOnly {
        schema_version: String,
    }
    serde_json::from_str::<VersionOnly>(text)
        .ok()
        .map(|v| v.schema_version)
}

/// `found` is of the major version this build reads.
fn check_major(found: &str, path: &str) -> Result<(), ReportError> {
    if schema_major(found) == Some(SCHEMA_MAJOR) {
        Ok(())
    } else {
        Err(ReportError::UnsupportedSchema {
            path: path.to_string(),
            found: found.to_string(),
            supported: SCHEMA_MAJOR,
        })
    }
}

/// The major part of a `MAJOR.MINOR` version.
pub fn schema_major(v: &str) -> Option<u32> {
    v.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report written by schema 1.0 (before `rounds` and the CPUID and
    /// available-memory host fields) still reads, with those absent.
    #[test]
    fn a_1_0_report_reads_with_the_new_fields_absent() {
        let text = include_str!("../tests/fixtures/report-1.0.json");
        let r = Report::from_json(text, "report-1.0.json").unwrap();
        assert_eq!(r.schema_version, "1.0");
        assert_eq!(r.config.rounds, 1);
        assert_eq!(r.host.memory_available_bytes, None);
        assert_eq!(r.host.cpu.family, None);
        assert_eq!(r.host.cpu.microarchitecture, None);
        assert_eq!(r.records.len(), 1);
        assert!(r.records[0].metrics[0].summary.median > 0.0);
        // And what this version writes reads back the same.
        let again = Report::from_json(&r.to_json(), "again").unwrap();
        assert_eq!(again.to_json(), r.to_json());
    }

    /// Issue 37 L4: a report file of any size was read whole (and parsed
    /// three times); now one read, at most MAX_REPORT_BYTES.
    #[test]
    fn a_report_file_over_the_limit_is_refused_naming_it_and_the_limit() {
        struct Dir(std::path::PathBuf);
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        impl Dir {
            fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        let dir = Dir(std::env::temp_dir().join(format!(
            "benchsuite-report-read-{}",
            crate::atomic::random_hex().unwrap()
        )));
        std::fs::create_dir(dir.path()).unwrap();
        // Sparse: 1 GiB on no disk; refused from its size, unread.
        let big = dir.path().join("big.json");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let e = Report::read(&big).unwrap_err();
        assert!(matches!(e, ReportError::TooLarge { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("big.json") && msg.contains("1GiB") && msg.contains("256MiB"),
            "{msg}"
        );
        // At the limit it is read (and is no report); one byte over is not.
        let text = include_str!("../tests/fixtures/report-1.0.json");
        let at = dir.path().join("at.json");
        std::fs::write(&at, text).unwrap();
        let limit = text.len() as u64;
        assert_eq!(read_text_capped(&at, limit).unwrap(), text);
        let e = read_text_capped(&at, limit - 1).unwrap_err();
        assert!(e.to_string().contains("at.json"), "{e}");
        // What has no size to check (a FIFO) is cut at the limit.
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                // The reader stops at the limit and closes: a broken pipe.
                let _ = f.write_all(&vec![b' '; 1 << 20]);
            })
        };
        let e = read_text_capped(&fifo, 4096).unwrap_err();
        assert!(
            matches!(&e, ReportError::TooLarge { size, .. } if size == "over 4KiB"),
            "{e:?}"
        );
        writer.join().unwrap();
        // Bytes that are not UTF-8: an error naming the file.
        let bin = dir.path().join("bin.json");
        std::fs::write(&bin, [0xff, 0xfe, b'{']).unwrap();
        let e = Report::read(&bin).unwrap_err();
        assert!(matches!(e, ReportError::Read { .. }) && e.to_string().contains("bin.json"));
    }

    #[test]
    fn a_report_of_another_major_says_so_whether_or_not_it_parses() {
        let text = include_str!("../tests/fixtures/report-1.0.json");
        let parses = text.replacen("\"1.0\"", "\"2.0\"", 1);
        let e = Report::from_json(&parses, "two.json").unwrap_err();
        assert!(matches!(e, ReportError::UnsupportedSchema { .. }), "{e:?}");
        let other = r#"{"schema_version": "2.1", "runs": []}"#;
        let e = Report::from_json(other, "two.json").unwrap_err();
        assert!(matches!(e, ReportError::UnsupportedSchema { .. }), "{e:?}");
        let e = Report::from_json(r#"{"schema_version": "1.3"}"#, "one.json").unwrap_err();
        assert!(matches!(e, ReportError::Parse { .. }), "{e:?}");
        // A number beyond f64 (a sample of 1e400) is refused at read time.
        let huge = text.replacen("1.173898e-07", "1e400", 1);
        let e = Report::from_json(&huge, "huge.json").unwrap_err();
        let msg = format!("{e}: {}", std::error::Error::source(&e).unwrap());
        assert!(
            msg.contains("huge.json") && msg.contains("out of range"),
            "{msg}"
        );
    }
}
