//! OpenMetrics: the [OpenMetrics 1.0] text exposition, for Prometheus,
//! node_exporter's textfile collector and GitLab's metrics reports.
//!
//! ```text
//! # TYPE benchsuite_os_syscall_time_per_op_seconds gauge
//! # UNIT benchsuite_os_syscall_time_per_op_seconds seconds
//! # HELP benchsuite_os_syscall_time_per_op_seconds os.syscall time_per_op: median of the samples, in seconds (lower is better)
//! benchsuite_os_syscall_time_per_op_seconds{call="getppid",host="vm",cpu="Intel(R) Xeon(R)"} 5.1e-8
//! # TYPE benchsuite_record_ok gauge
//! # HELP benchsuite_record_ok 1 when the benchmark ran (status ok), 0 when it was skipped or failed
//! benchsuite_record_ok{id="os.syscall",call="getppid",host="vm",cpu="Intel(R) Xeon(R)"} 1
//! # EOF
//! ```
//!
//! - One gauge family per benchmark id × metric, named
//!   `benchsuite_<id>_<metric>_<unit>` with every character outside
//!   `[a-zA-Z0-9_:]` turned into `_`. The value is the median in base units:
//!   `seconds`, `bytes_per_second`, `<thing>s_per_second` for other rates,
//!   `ratio` for a percentage (divided by 100, as Prometheus names it).
//! - Labels: each requested parameter (the point as asked for, stable across
//!   machines; a parameter named `id`, `host` or `cpu` becomes `param_<name>`),
//!   then `host` (the hostname) and `cpu` (the model), empty when unknown.
//!   Values are escaped as the spec says: `\\`, `\"`, `\n`.
//! - `benchsuite_record_ok` has one sample per record, `ok` or not, with an
//!   `id` label: 1 when it ran, 0 when it was skipped or failed, so a
//!   dashboard sees a benchmark that stopped working. Skipped and failed
//!   records have no metric samples.
//!
//! # Which flavour, and who reads it
//!
//! OpenMetrics (`# UNIT`, the closing `# EOF`) that is also valid Prometheus
//! text 0.0.4, which reads those two lines as comments: HELP texts hold no
//! `"` (0.0.4 cannot escape it there), no timestamps, no blank lines.
//!
//! - node_exporter's textfile collector parses 0.0.4 and reads only files
//!   named `*.prom`, so `-o FILE.prom` picks this format (and, like every
//!   `-o`, replaces the file whole, by a rename).
//! - GitLab's metrics report (`artifacts:reports:metrics`) drops everything
//!   from a `#` to the end of a line, splits the rest like a shell, and keys
//!   each metric by the name with its labels. So a label value holding `#`
//!   would cut its line short; and since `host` and `cpu` are part of the
//!   key, a merge request's metrics pair with the target branch's only when
//!   both ran on the same host and CPU.
//!
//! [OpenMetrics 1.0]: https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md

use std::io::{self, Write};

use benchsuite_core::bench::Direction;
use benchsuite_core::results::{Metric, Record, Report, Status};

/// One gauge family: its name, unit, help text, the factor from the
/// stored unit into its unit, and its samples (labels, value).
struct Family {
    name: String,
    unit: String,
    help: String,
    scale: f64,
    samples: Vec<(String, String)>,
}

impl Family {
    /// The (empty) family of metric `m` of `r`'s benchmark.
    fn of(r: &Record, m: &Metric) -> Family {
        let (unit, scale) = base_unit(&m.unit);
        let (name, within) = match unit.as_str() {
            "" => (format!("benchsuite_{}_{}", r.id, m.name), String::new()),
            u => (
                format!("benchsuite_{}_{}_{u}", r.id, m.name),
                format!(", in {}", u.replace('_', " ")),
            ),
        };
        let better = match m.direction {
            Direction::Higher => "higher",
            Direction::Lower => "lower",
        };
        let help = format!(
            "{} {}: median of the samples{within} ({better} is better)",
            r.id, m.name
        );
        let (name, samples) = (sanitise(&name), Vec::new());
        Family {
            name,
            unit,
            help,
            scale,
            samples,
        }
    }
}

/// Writes the report as an OpenMetrics exposition ending in `# EOF`.
pub(super) fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let host = report.host.hostname.as_deref().unwrap_or("");
    let cpu = report.host.cpu.model.as_deref().unwrap_or("");
    let tail = [("host", host), ("cpu", cpu)];
    let mut families: Vec<Family> = Vec::new();
    for r in report.records.iter().filter(|r| r.status == Status::Ok) {
        let labels = labels(r, None, &tail);
        for m in &r.metrics {
            let family = Family::of(r, m);
            let i = match families.iter().position(|f| f.name == family.name) {
                Some(i) => i,
                None => {
                    families.push(family);
                    families.len() - 1
                }
            };
            let value = number(m.summary.median * families[i].scale);
            families[i].samples.push((labels.clone(), value));
        }
    }
    families.push(Family {
        name: "benchsuite_record_ok".into(),
        unit: String::new(),
        help: "1 when the benchmark ran (status ok), 0 when it was skipped or failed".into(),
        scale: 1.0,
        samples: report
            .records
            .iter()
            .map(|r| {
                let ok = if r.status == Status::Ok { "1" } else { "0" };
                (labels(r, Some(&r.id), &tail), ok.to_string())
            })
            .collect(),
    });
    for f in &families {
        writeln!(out, "# TYPE {} gauge", f.name)?;
        if !f.unit.is_empty() {
            writeln!(out, "# UNIT {} {}", f.name, f.unit)?;
        }
        writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help))?;
        for (labels, value) in &f.samples {
            writeln!(out, "{}{{{labels}}} {value}", f.name)?;
        }
    }
    writeln!(out, "# EOF")
}

/// `id` (when given), the requested parameters, then `host` and `cpu`, as
/// `name="value"` pairs joined by commas.
fn labels(r: &Record, id: Option<&str>, tail: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(id) = id {
        pairs.push(("id".into(), id.to_string()));
    }
    for (k, v) in &r.requested_params().0 {
        let mut name = sanitise(k).replace(':', "_");
        if ["id", "host", "cpu"].contains(&name.as_str()) || name.starts_with("__") {
            name = format!("param_{name}");
        }
        pairs.push((name, v.to_string()));
    }
    pairs.extend(tail.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The Prometheus base unit for a stored unit, and the factor into it.
fn base_unit(unit: &str) -> (String, f64) {
    let plural = |thing: &str| match thing {
        "B" => "bytes".to_string(),
        t if t.to_ascii_lowercase().ends_with('s') => t.to_ascii_lowercase(),
        t => format!("{}s", t.to_ascii_lowercase()),
    };
    match unit {
        "" => (String::new(), 1.0),
        "s" => ("seconds".into(), 1.0),
        "%" => ("ratio".into(), 0.01),
        "B" => ("bytes".into(), 1.0),
        u => match u.strip_suffix("/s") {
            Some(thing) => (sanitise(&format!("{}_per_second", plural(thing))), 1.0),
            None => (sanitise(&u.to_ascii_lowercase()), 1.0),
        },
    }
}

/// A metric or label name: characters outside `[a-zA-Z0-9_:]` become `_`,
/// and a leading digit gets a `_` before it.
fn sanitise(name: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut s: String = name
        .chars()
        .map(|c| if keep(c) { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        s.insert(0, '_');
    }
    s
}

/// Escapes a label value: backslash, double quote, newline.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Escapes a HELP text for both OpenMetrics and text format 0.0.4: `\\` and
/// `\n`; a double quote (which 0.0.4 cannot escape there) becomes `'`.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "'")
}

/// A sample value: the shortest form that reads back exactly.
fn number(v: f64) -> String {
    match serde_json::Number::from_f64(v) {
        Some(n) => n.to_string(),
        None if v.is_nan() => "NaN".into(),
        None if v > 0.0 => "+Inf".into(),
        None => "-Inf".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use benchsuite_core::param::Value;

    fn text(report: &Report) -> String {
        let mut out = Vec::new();
        write_report(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn families_units_labels_status_and_eof() {
        let mut r = fixtures::report();
        r.host.hostname = Some("vm".into());
        r.host.cpu.model = Some("Xeon".into());
        let t = text(&r);
        let name = "benchsuite_os_syscall_time_per_op_seconds";
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[..4],
            [
                format!("# TYPE {name} gauge"),
                format!("# UNIT {name} seconds"),
                format!(
                    "# HELP {name} os.syscall time_per_op: median of the samples, in seconds (lower is better)"
                ),
                format!(r#"{name}{{call="getppid",host="vm",cpu="Xeon"}} 5.1e-8"#),
            ]
        );
        for line in [
            r#"benchsuite_mem_bandwidth_bandwidth_bytes_per_second{block="4096",op="copy",host="vm",cpu="Xeon"} 2500000000.0"#,
            r#"benchsuite_record_ok{id="os.syscall",call="getppid",host="vm",cpu="Xeon"} 1"#,
            r#"benchsuite_record_ok{id="gpu.flops",precision="f16",host="vm",cpu="Xeon"} 0"#,
        ] {
            assert!(lines.contains(&line), "{line}\n{t}");
        }
        // The skipped record has no metric sample; the file ends in # EOF.
        assert_eq!(t.matches("precision=").count(), 1, "{t}");
        assert!(t.ends_with("\n# EOF\n") && !t.contains("\n\n"), "{t}");
    }

    #[test]
    fn label_values_are_escaped_and_names_sanitised() {
        let mut r = fixtures::report();
        r.records.truncate(1);
        r.host.cpu.model = Some("a\\b \"c\"\nd".into());
        let rec = &mut r.records[0];
        rec.params.set("host", Value::Str("x".into()));
        rec.params.set("queue-depth", Value::Int(4));
        rec.id = "my-app.9x".into();
        let t = text(&r);
        let sample = t.lines().find(|l| l.starts_with("benchsuite_my")).unwrap();
        assert_eq!(
            sample,
            r#"benchsuite_my_app_9x_time_per_op_seconds{call="getppid",param_host="x",queue_depth="4",host="",cpu="a\\b \"c\"\nd"} 5.1e-8"#
        );
        assert_eq!(escape_help("say \"hi\"\\\n"), r"say 'hi'\\\n");
    }

    #[test]
    fn failed_records_have_no_samples_and_units_are_base_units() {
        let mut r = fixtures::report();
        r.records[1].status = Status::Failed;
        r.records[0].metrics[0].unit = "%".into();
        r.records[0].metrics[0].summary.median = 2.5;
        let t = text(&r);
        assert!(!t.contains("benchsuite_mem_bandwidth_"), "{t}");
        assert!(t.contains(r#"{id="mem.bandwidth",block="4096",op="copy",host="",cpu=""} 0"#));
        assert!(t.contains(r#"time_per_op_ratio{call="getppid",host="",cpu=""} 0.025"#));
        let units = ["B/s", "bit/s", "FLOP/s", "IO/s", "op/s", "s", ""].map(|u| base_unit(u).0);
        let want = "bytes_per_second bits_per_second flops_per_second ios_per_second ops_per_second seconds ";
        assert_eq!(units.join(" "), want);
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
