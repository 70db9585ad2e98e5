//! GHA: input for [github-action-benchmark]'s custom tools.
//!
//! The action reads a JSON array of `{name, unit, value, range?, extra?}`
//! and learns from the tool name, not the file, which way is better:
//! `customBiggerIsBetter` or `customSmallerIsBetter`. A report mixes both
//! (bandwidth next to latency), so it becomes two files, one per tool
//! ([`GhaTool`]), split by each metric's direction:
//!
//! ```text
//! benchsuite run ... --format gha -o bench      # or -o bench.json
//!   → bench-bigger.json   (tool: customBiggerIsBetter)
//!   → bench-smaller.json  (tool: customSmallerIsBetter)
//! ```
//!
//! Point one action step at each file, each with its own `name:` (the
//! action keys its history by that name). Both files are always written; one
//! with no metric of its direction holds `[]`, which the action rejects
//! ("No benchmark result was found"), so only add the step you have metrics
//! for. There is no stdout form: one stream cannot hold two files.
//!
//! Each entry:
//!
//! - `name`: `"<requested key> — <metric>"`, e.g. `os.syscall call=getppid —
//!   time_per_op`; the requested key is the same on every machine, and the
//!   action pairs entries across commits by name;
//! - `unit`, `value`: the median in one fixed human unit per base unit
//!   (`s` → `ns`, `B/s` → `MB/s`, `bit/s` → `Mbit/s`, `flop/s` → `GFLOP/s`,
//!   others as stored). The unit never depends on the value, so a series
//!   keeps its scale when a median crosses 1 µs;
//! - `range`: `± 1.2%`, half the 95% confidence interval of the mean as a
//!   share of the mean (the table's `±95% CI` column); absent without one;
//! - `extra`: lines for the tooltip: samples and CV, the CPU model, the
//!   efficiency against the peak, and the parameters as they ran where
//!   `auto` or a fallback changed them.
//!
//! Like BMF, only `ok` records are written (the action has no status);
//! `benchsuite compare` is the gate that fails on a failed record.
//!
//! [github-action-benchmark]: https://github.com/benchmark-action/github-action-benchmark

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use benchsuite_core::bench::Direction;
use benchsuite_core::results::{Metric, Record, Report, Status};

/// Why the gha format cannot be written to one stream.
pub(super) const NEEDS_FILES: &str = "the gha format writes two files, one per github-action-benchmark tool: \
     give -o PREFIX to write PREFIX-bigger.json and PREFIX-smaller.json";

/// One of github-action-benchmark's custom tools, each fed its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GhaTool {
    /// `customBiggerIsBetter`: metrics whose direction is `higher`.
    BiggerIsBetter,
    /// `customSmallerIsBetter`: metrics whose direction is `lower`.
    SmallerIsBetter,
}

impl GhaTool {
    /// Both tools, in the order their files are written.
    pub const BOTH: [GhaTool; 2] = [GhaTool::BiggerIsBetter, GhaTool::SmallerIsBetter];

    /// The action's `tool:` input for this file.
    pub fn tool_name(self) -> &'static str {
        match self {
            GhaTool::BiggerIsBetter => "customBiggerIsBetter",
            GhaTool::SmallerIsBetter => "customSmallerIsBetter",
        }
    }

    /// The metrics this tool takes.
    pub fn direction(self) -> Direction {
        match self {
            GhaTool::BiggerIsBetter => Direction::Higher,
            GhaTool::SmallerIsBetter => Direction::Lower,
        }
    }

    /// The file for this tool under `-o PREFIX`: `PREFIX-bigger.json` or
    /// `PREFIX-smaller.json`, a `.json` extension on `PREFIX` removed first.
    pub fn path(self, prefix: &Path) -> PathBuf {
        let stem = match prefix.extension() {
            Some(e) if e.eq_ignore_ascii_case("json") => prefix.with_extension(""),
            _ => prefix.to_path_buf(),
        };
        let mut name = stem.into_os_string();
        name.push(match self {
            GhaTool::BiggerIsBetter => "-bigger.json",
            GhaTool::SmallerIsBetter => "-smaller.json",
        });
        PathBuf::from(name)
    }

    /// How many entries this tool's file gets from `report`.
    pub fn count(self, report: &Report) -> usize {
        entries(report, self).count()
    }
}

/// Writes the array of entries for `tool`.
pub(super) fn write_report(report: &Report, tool: GhaTool, out: &mut dyn Write) -> io::Result<()> {
    let list: Vec<Value> = entries(report, tool)
        .map(|(r, m)| entry(report, r, m))
        .collect();
    benchsuite_core::text::write_json_pretty(&mut *out, &list)?;
    out.write_all(b"\n")
}

fn entries(report: &Report, tool: GhaTool) -> impl Iterator<Item = (&Record, &Metric)> {
    report
        .records
        .iter()
        .filter(|r| r.status == Status::Ok)
        .flat_map(|r| r.metrics.iter().map(move |m| (r, m)))
        .filter(move |(_, m)| m.direction == tool.direction())
}

/// The fixed display unit for a base unit and the factor into it.
fn human_unit(base: &str) -> (&str, f64) {
    match base {
        "s" => ("ns", 1e9),
        "B/s" => ("MB/s", 1e-6),
        "bit/s" => ("Mbit/s", 1e-6),
        "flop/s" | "FLOP/s" => ("GFLOP/s", 1e-9),
        other => (other, 1.0),
    }
}

fn entry(report: &Report, r: &Record, m: &Metric) -> Value {
    let s = &m.summary;
    let (unit, factor) = human_unit(&m.unit);
    let mut extra = vec![format!("samples: {}, CV {:.2}%", s.n, s.cv.abs() * 100.0)];
    if let Some(cpu) = &report.host.cpu.model {
        extra.push(format!("cpu: {cpu}"));
    }
    if let Some(eff) = r
        .peak
        .as_ref()
        .filter(|p| p.metric == m.name)
        .and_then(|p| p.efficiency)
    {
        extra.push(format!("of peak: {:.1}%", eff * 100.0));
    }
    if r.requested.is_some() {
        extra.push(format!("ran with: {}", r.params.label()));
    }
    let mut e = json!({
        "name": format!("{} — {}", r.requested_key(), m.name),
        "unit": unit,
        "value": significant(s.median * factor),
        "extra": extra.join("\n"),
    });
    if let Some([lo, hi]) = s.ci95.filter(|_| s.mean != 0.0) {
        e["range"] = json!(format!("± {:.1}%", (hi - lo) / 2.0 / s.mean.abs() * 100.0));
    }
    e
}

/// `v` to 7 significant digits, so `1.0621828e-7 s` reads `106.2183 ns`
/// rather than `106.21828000000001`: far below any benchmark's noise.
fn significant(v: f64) -> f64 {
    format!("{v:.6e}").parse().unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use benchsuite_core::param::Value as Param;

    fn gha(report: &Report, tool: GhaTool) -> Vec<Value> {
        let mut out = Vec::new();
        write_report(report, tool, &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn metrics_split_by_direction_in_fixed_units() {
        let mut r = fixtures::report();
        r.host.cpu.model = Some("Xeon \"Gold\"".into());
        let bigger = gha(&r, GhaTool::BiggerIsBetter);
        let smaller = gha(&r, GhaTool::SmallerIsBetter);
        assert_eq!(bigger.len(), 1);
        assert_eq!(smaller.len(), 2);
        assert_eq!(GhaTool::SmallerIsBetter.count(&r), 2);
        let bw = &bigger[0];
        assert_eq!(bw["name"], "mem.bandwidth block=4096 op=copy — bandwidth");
        assert_eq!(
            (bw["unit"].as_str(), bw["value"].as_f64()),
            (Some("MB/s"), Some(2500.0))
        );
        let extra = bw["extra"].as_str().unwrap();
        assert!(
            extra.contains("samples: 3") && extra.contains("of peak: 50.0%"),
            "{extra}"
        );
        assert!(extra.contains("cpu: Xeon \"Gold\""), "{extra}");
        let sys = &smaller[0];
        assert_eq!(sys["name"], "os.syscall call=getppid — time_per_op");
        assert_eq!(sys["unit"], "ns");
        assert_eq!(sys["value"], 51.0);
        assert_eq!(significant(1.0621828e-7 * 1e9), 106.2183);
        let range = sys["range"].as_str().unwrap();
        assert!(range.starts_with("± ") && range.ends_with('%'), "{range}");
    }

    #[test]
    fn requested_names_resolved_params_in_extra_and_no_failed_records() {
        let mut r = fixtures::report();
        let rec = &mut r.records[0];
        rec.requested = Some(rec.params.clone());
        rec.params.set("call", Param::Str("getpid".into()));
        r.records[1].status = Status::Failed;
        let smaller = gha(&r, GhaTool::SmallerIsBetter);
        assert_eq!(smaller.len(), 1, "{smaller:?}");
        assert_eq!(smaller[0]["name"], "os.syscall call=getppid — time_per_op");
        let extra = smaller[0]["extra"].as_str().unwrap();
        assert!(extra.ends_with("ran with: call=getpid"), "{extra}");
        assert_eq!(gha(&r, GhaTool::BiggerIsBetter), Vec::<Value>::new());
    }

    #[test]
    fn a_single_sample_has_no_range() {
        let mut r = fixtures::report();
        let m = &mut r.records[0].metrics[0];
        m.samples.truncate(1);
        m.summary = benchsuite_core::stats::Summary::new(&m.samples).unwrap();
        let smaller = gha(&r, GhaTool::SmallerIsBetter);
        assert!(smaller[0].get("range").is_none(), "{smaller:?}");
    }

    #[test]
    fn paths_come_from_the_prefix() {
        let p = |s: &str, t: GhaTool| t.path(Path::new(s)).display().to_string();
        assert_eq!(
            p("out/bench", GhaTool::BiggerIsBetter),
            "out/bench-bigger.json"
        );
        assert_eq!(
            p("out/bench.json", GhaTool::SmallerIsBetter),
            "out/bench-smaller.json"
        );
        assert_eq!(
            p("bench.v1", GhaTool::BiggerIsBetter),
            "bench.v1-bigger.json"
        );
        assert_eq!(GhaTool::BiggerIsBetter.tool_name(), "customBiggerIsBetter");
    }
}
