//! The local-vs-remote break-even model: for a job of `C` units of CPU work
//! (sysbench prime events) that reads and writes `D` bytes of storage, from
//! which size `n` of data shipped to a remote machine does running locally
//! win?
//!
//! ```text
//! local  = C / cpu_local + D / io_local
//! remote = n / net_throughput + connect + C / cpu_remote + D / io_remote
//! n*     = (local − connect − C / cpu_remote − D / io_remote) × net_throughput
//! ```
//!
//! Shipping fewer than `n*` bytes, the remote machine finishes first; more,
//! the local one. `n* ≤ 0`: the remote never wins, even shipping nothing.
//! Every rate comes from a record of a real report ([`Input`] says which).

use serde::Serialize;

use benchsuite_core::results::{Record, Report, Status};

/// One number of the model and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Input {
    /// What it is (`local CPU`, `network throughput`).
    pub what: &'static str,
    /// The value, in `unit`.
    pub value: f64,
    /// Its unit (`event/s`, `B/s`, `s`).
    pub unit: String,
    /// `FILE: RECORD KEY metric NAME (median of N samples)`.
    pub source: String,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakEven {
    /// CPU work, events.
    pub events: f64,
    /// Storage traffic, bytes.
    pub bytes: f64,
    /// Local time for the job, s.
    pub local_s: f64,
    /// Remote time for the job without the transfer (connection setup
    /// included), s.
    pub remote_fixed_s: f64,
    /// The break-even transfer size, bytes; `None` when the remote never
    /// wins.
    pub n_bytes: Option<f64>,
    /// The inputs: local CPU, local I/O, remote CPU, remote I/O, network
    /// throughput, connection setup.
    pub inputs: Vec<Input>,
}

/// Picks the record a model input comes from: the first `ok` record of
/// `id` whose parameters include every `key=value` of `want`.
pub fn find<'a>(report: &'a Report, id: &str, want: &[(String, String)]) -> Option<&'a Record> {
    report.records.iter().find(|r| {
        r.id == id
            && r.status == Status::Ok
            && want.iter().all(|(k, v)| {
                r.params.get(k).is_some_and(|x| {
                    x.to_string() == *v
                        || benchsuite_core::units::parse_size(v)
                            .ok()
                            .is_some_and(|n| x.as_u64() == Some(n))
                })
            })
    })
}

/// The median of `metric` in `record` as a model input.
pub fn input(
    what: &'static str,
    file: &str,
    record: &Record,
    metric: &str,
) -> Result<Input, benchsuite_core::ValueError> {
    input_text(what, file, record, metric).map_err(Into::into)
}

fn input_text(
    what: &'static str,
    file: &str,
    record: &Record,
    metric: &str,
) -> Result<Input, String> {
    let m = record.metric(metric).ok_or_else(|| {
        format!(
            "{file}: {} has no metric `{metric}` (for the {what})",
            record.key()
        )
    })?;
    let v = m.summary.median;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!(
            "{file}: {} {metric} is {v}: not a usable {what}",
            record.key()
        ));
    }
    Ok(Input {
        what,
        value: v,
        unit: m.unit.clone(),
        source: format!(
            "{file}: {} {metric} (median of {} samples)",
            record.key(),
            m.samples.len()
        ),
    })
}

/// Solves the model. `inputs` in the order of [`BreakEven::inputs`]:
/// local CPU (event/s), local I/O (B/s), remote CPU, remote I/O, network
/// throughput (B/s), connection setup (s).
pub fn solve(events: f64, bytes: f64, inputs: [Input; 6]) -> BreakEven {
    let [cl, il, cr, ir, net, conn] = &inputs;
    let local_s = events / cl.value + bytes / il.value;
    let remote_fixed_s = conn.value + events / cr.value + bytes / ir.value;
    let n = (local_s - remote_fixed_s) * net.value;
    BreakEven {
        events,
        bytes,
        local_s,
        remote_fixed_s,
        n_bytes: (n > 0.0).then_some(n),
        inputs: inputs.to_vec(),
    }
}

/// The solution as `benchsuite breakeven` prints it: the model, the
/// inputs with their sources, and n* (or why there is none).
pub fn render(b: &BreakEven) -> String {
    let mut s = String::new();
    s.push_str("local  = C / cpu_local + D / io_local\n");
    s.push_str("remote = n / net + connect + C / cpu_remote + D / io_remote\n");
    s.push_str("n*     = (local - connect - C / cpu_remote - D / io_remote) x net\n\n");
    s.push_str(&format!(
        "C = {} events, D = {} ({} B)\n",
        b.events,
        benchsuite_core::units::format_size(b.bytes as u64),
        b.bytes
    ));
    for i in &b.inputs {
        s.push_str(&format!(
            "{:<20} {:>14.6e} {:<8} {}\n",
            i.what, i.value, i.unit, i.source
        ));
    }
    s.push_str(&format!(
        "\nlocal: {:.3} s; remote without the transfer: {:.3} s\n",
        b.local_s, b.remote_fixed_s
    ));
    match b.n_bytes {
        Some(n) => s.push_str(&format!(
            "break-even: n* = {} ({n:.0} B): ship less and the remote machine finishes first, more and the local one does\n",
            benchsuite_core::units::format_size(n as u64)
        )),
        None => s.push_str(
            "no break-even: the remote machine is not faster even shipping nothing; run locally\n",
        ),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(what: &'static str, value: f64) -> Input {
        Input {
            what,
            value,
            unit: String::new(),
            source: String::new(),
        }
    }

    #[test]
    fn the_break_even_is_where_both_sides_take_as_long() {
        // Local: 1000 ev/s, 100 MB/s; remote: 4000 ev/s, 400 MB/s; net
        // 10 MB/s, 1 ms to connect. Job: 10 000 events, 1 GB.
        let b = solve(
            1e4,
            1e9,
            [
                i("local CPU", 1e3),
                i("local I/O", 1e8),
                i("remote CPU", 4e3),
                i("remote I/O", 4e8),
                i("network", 1e7),
                i("connect", 1e-3),
            ],
        );
        assert_eq!(b.local_s, 10.0 + 10.0);
        assert!((b.remote_fixed_s - (1e-3 + 2.5 + 2.5)).abs() < 1e-12);
        let n = b.n_bytes.unwrap();
        // At n* the two sides take the same time.
        let remote = n / 1e7 + b.remote_fixed_s;
        assert!(
            (remote - b.local_s).abs() < 1e-9,
            "{remote} vs {}",
            b.local_s
        );
        // A remote machine no faster than the local one never wins.
        let never = solve(
            1e4,
            1e9,
            [
                i("local CPU", 1e3),
                i("local I/O", 1e8),
                i("remote CPU", 1e3),
                i("remote I/O", 1e8),
                i("network", 1e7),
                i("connect", 1e-3),
            ],
        );
        assert_eq!(never.n_bytes, None);
    }

    #[test]
    fn record_filters_match_values_not_absent_sizes() {
        let mut rep = crate::export::fixtures::report();
        let rec = rep.records[0].clone();
        let mut a = rec.clone();
        a.params
            .set("preset", benchsuite_core::param::Value::Str("none".into()));
        a.params
            .set("block", benchsuite_core::param::Value::Int(4096));
        rep.records = vec![a];
        let want = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let id = rec.id.as_str();
        assert!(find(&rep, id, &want("preset", "sysbench-rndrw")).is_none());
        assert!(find(&rep, id, &want("preset", "none")).is_some());
        assert!(find(&rep, id, &want("block", "4K")).is_some());
        assert!(find(&rep, id, &want("block", "8K")).is_none());
    }
}
