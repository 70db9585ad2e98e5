//! BMF: the [Bencher Metric Format], the JSON that `bencher run --adapter
//! json` reads.
//!
//! ```text
//! {
//!   "os.syscall call=getppid": {
//!     "time_per_op (s)": { "value": 5.1e-8, "lower_value": 5.0e-8, "upper_value": 5.2e-8 }
//!   }
//! }
//! ```
//!
//! - The benchmark name is [`Record::requested_key`]: the id and the
//!   parameters as asked for, the same on every machine (an `auto` size
//!   keeps its name), so Bencher tracks one benchmark across hosts.
//! - The measure is the metric name with its base unit in parentheses.
//!   BMF carries no unit, and a bare name that is a slug of one of
//!   Bencher's built-in measures (`latency` in nanoseconds, `throughput` in
//!   operations per second) would be filed under it, in the wrong unit; the
//!   unit makes the key a measure name of its own, created on first upload.
//! - `value` is the median in base units (seconds, B/s); `lower_value` and
//!   `upper_value` are the 95% confidence interval of the mean
//!   (`summary.ci95`), left out when there is none (fewer than two samples).
//!
//! Only `ok` records are written: BMF has no place for a status, so a
//! skipped or failed record is absent rather than a misleading number.
//! Bencher therefore cannot tell a benchmark that failed from one that was
//! not asked for; `benchsuite compare`, which fails the gate on a record
//! that failed or vanished, is the gate, and BMF is for the dashboard.
//!
//! [Bencher Metric Format]: https://bencher.dev/docs/reference/bencher-metric-format/

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use benchsuite_core::results::{Record, Report, Status};

/// Writes the report's `ok` records as one BMF object.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut benchmarks = Map::new();
    for r in report.records.iter().filter(|r| r.status == Status::Ok) {
        if r.metrics.is_empty() {
            continue;
        }
        benchmarks.insert(r.requested_key(), Value::Object(measures(r)));
    }
    benchsuite_core::text::write_json_pretty(&mut *out, &Value::Object(benchmarks))?;
    out.write_all(b"\n")
}

/// The name BMF files a metric under: `time_per_op (s)`, or the bare
/// name for a unitless metric.
pub(super) fn measure_name(metric: &str, unit: &str) -> String {
    if unit.is_empty() {
        metric.to_string()
    } else {
        format!("{metric} ({unit})")
    }
}

fn measures(r: &Record) -> Map<String, Value> {
    r.metrics
        .iter()
        .map(|m| {
            let s = &m.summary;
            let mut metric = json!({ "value": s.median });
            if let Some([lo, hi]) = s.ci95 {
                metric["lower_value"] = json!(lo);
                metric["upper_value"] = json!(hi);
            }
            (measure_name(&m.name, &m.unit), metric)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use benchsuite_core::param::{Point, Value as Param};

    fn bmf(report: &Report) -> Value {
        let mut out = Vec::new();
        write_report(report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn medians_and_intervals_under_the_requested_key() {
        let r = fixtures::report();
        let v = bmf(&r);
        let syscall = &v["os.syscall call=getppid"]["time_per_op (s)"];
        assert_eq!(syscall["value"], 5.1e-8);
        let [lo, hi] = r.records[0].metrics[0].summary.ci95.unwrap();
        assert_eq!(syscall["lower_value"], lo);
        assert_eq!(syscall["upper_value"], hi);
        let bw = &v["mem.bandwidth block=4096 op=copy"];
        assert_eq!(bw["bandwidth (B/s)"]["value"], 2.5e9);
        assert_eq!(bw["latency (s)"]["value"], 1.0e-6);
        // The skipped record is left out: BMF has no status.
        assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
    }

    #[test]
    fn the_name_is_the_requested_point_and_no_interval_is_no_bounds() {
        let mut r = fixtures::report();
        r.records.truncate(1);
        let rec = &mut r.records[0];
        let mut asked = rec.params.clone();
        asked.set("size", Param::Str("auto".into()));
        rec.params.set("size", Param::Int(1 << 20));
        rec.requested = Some(asked);
        let m = &mut rec.metrics[0];
        m.samples.truncate(1);
        m.summary = benchsuite_core::stats::Summary::new(&m.samples).unwrap();
        assert_eq!(m.summary.ci95, None);
        let v = bmf(&r);
        let metric = &v["os.syscall call=getppid size=auto"]["time_per_op (s)"];
        assert_eq!(metric, &json!({ "value": 51e-9 }), "{v}");
    }

    #[test]
    fn failed_records_are_left_out_even_with_metrics() {
        let mut r = fixtures::report();
        r.records[1].status = Status::Failed;
        r.records[1].reason = Some("teardown: boom".into());
        r.records
            .push(Record::failed("x.y", Point::default(), "boom"));
        let v = bmf(&r);
        let names: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(names, ["os.syscall call=getppid"]);
    }
}
