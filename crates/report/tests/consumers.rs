//! The dashboard formats as their consumers read them: BMF against
//! Bencher's published JSON Schema, GHA against the result shape
//! github-action-benchmark's custom tools parse, OpenMetrics through the
//! reference parser (`prometheus_client`, OpenMetrics and Prometheus text)
//! and through GitLab's metrics-report line rule.
//!
//! The Python check skips, saying why, without python3 or
//! `prometheus_client` (Debian: `python3-prometheus-client`; `.ci/run`
//! installs it).

use std::io::Write as _;
use std::process::{Command, Stdio};

use benchsuite_core::param::{Point, Value as Param};
use benchsuite_core::testing::{Capability, skip};
use benchsuite_core::{Record, Report};
use benchsuite_report::export::{Format, GhaTool, write_gha, write_report};
use serde_json::{Value, json};

/// The 1.0 fixture (one ok `os.syscall` record, with an interval) plus a
/// throughput record whose parameters and CPU model need escaping, a skipped
/// and a failed record.
fn report() -> Report {
    let text = include_str!("fixtures/report-1.0.json");
    let mut r = Report::from_json(text, "report-1.0.json").unwrap();
    r.host.cpu.model = Some("Xeon(R) \"Gold\" 6\\7 (rev\n2)".into());
    let mut bw = r.records[0].clone();
    bw.id = "mem.bandwidth".into();
    bw.params = Point::default();
    bw.params.set("block", Param::Int(4096));
    bw.params.set("path", Param::Str("/tmp/a \"b\"".into()));
    let m = &mut bw.metrics[0];
    m.name = "bandwidth".into();
    m.unit = "B/s".into();
    m.direction = benchsuite_core::Direction::Higher;
    m.summary.median = 2.5e9;
    m.summary.mean = 2.5e9;
    m.summary.ci95 = Some([2.4e9, 2.6e9]);
    r.records.push(bw);
    let mut gp = Point::default();
    gp.set("precision", Param::Str("f16".into()));
    r.records.push(Record::skipped(
        "gpu.flops",
        gp,
        "no GPU, found none via NVML",
    ));
    r.records.push(Record::failed(
        "disk.io",
        Point::default(),
        "prepare: no space left on device",
    ));
    r
}

fn write(format: Format, r: &Report) -> String {
    let mut out = Vec::new();
    write_report(format, r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn errors(schema: &Value, doc: &Value) -> Vec<String> {
    let v = jsonschema::validator_for(schema).expect("the schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Bencher's BMF schema as published on its reference page
/// (https://bencher.dev/docs/reference/bencher-metric-format/), with the
/// name lengths the page gives: benchmark names up to 1024 characters,
/// measure names up to 64.
fn bencher_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "object",
        "patternProperties": {
            ".+": {
                "type": "object",
                "patternProperties": {
                    ".+": {
                        "type": "object",
                        "properties": {
                            "value": { "type": "number" },
                            "lower_value": { "type": "number" },
                            "upper_value": { "type": "number" }
                        },
                        "required": ["value"]
                    }
                },
                "propertyNames": { "maxLength": 64 }
            }
        },
        "propertyNames": { "maxLength": 1024 }
    })
}

#[test]
fn bmf_matches_bencher_schema() {
    let r = report();
    let bmf: Value = serde_json::from_str(&write(Format::Bmf, &r)).unwrap();
    assert_eq!(errors(&bencher_schema(), &bmf), Vec::<String>::new());
    let names: Vec<&String> = bmf.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        [
            "mem.bandwidth block=4096 path=/tmp/a \"b\"",
            "os.syscall call=getppid"
        ]
    );
    let m = &bmf["os.syscall call=getppid"]["time_per_op (s)"];
    let [lo, hi] = r.records[0].metrics[0].summary.ci95.unwrap();
    assert_eq!(m["value"], r.records[0].metrics[0].summary.median);
    assert!(m["lower_value"] == lo && m["upper_value"] == hi, "{m}");
    // The schema is not vacuous: a metric without a value fails it.
    let broken = json!({ "a": { "b": { "lower_value": 1.0 } } });
    assert!(!errors(&bencher_schema(), &broken).is_empty());
}

/// `BenchmarkResult[]` as github-action-benchmark's `extract.ts` declares
/// it for the custom tools: `JSON.parse` of the file must give an array of
/// `{name: string, value: number, unit: string, range?: string, extra?:
/// string}`.
fn gha_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1 },
                "value": { "type": "number" },
                "unit": { "type": "string" },
                "range": { "type": "string" },
                "extra": { "type": "string" }
            },
            "required": ["name", "value", "unit"]
        }
    })
}

#[test]
fn gha_files_are_what_the_custom_tools_parse() {
    let r = report();
    let mut seen = Vec::new();
    for tool in GhaTool::BOTH {
        let mut out = Vec::new();
        write_gha(tool, &r, &mut out).unwrap();
        let list: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(errors(&gha_schema(), &list), Vec::<String>::new());
        let list = list.as_array().unwrap();
        // The action rejects an empty file; this report has both kinds.
        assert_eq!(list.len(), 1, "{tool:?}: {list:?}");
        // It pairs entries across commits by name: names are unique.
        for e in list {
            let name = e["name"].as_str().unwrap().to_string();
            assert!(!seen.contains(&name), "{name} twice");
            seen.push(name);
        }
    }
    assert_eq!(
        seen,
        [
            "mem.bandwidth block=4096 path=/tmp/a \"b\" — bandwidth",
            "os.syscall call=getppid — time_per_op"
        ]
    );
    assert!(!gha_schema_accepts(
        json!([{ "name": "x", "value": "1", "unit": "ns" }])
    ));
}

fn gha_schema_accepts(doc: Value) -> bool {
    errors(&gha_schema(), &doc).is_empty()
}

/// Parses stdin with `prometheus_client`'s OpenMetrics parser and its
/// Prometheus text parser, and splits each line as GitLab's metrics report
/// does (`line.gsub(/#.*$/, '').shellsplit`); prints what each saw as JSON.
const PARSE: &str = r##"
import json, re, shlex, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as prom
text = sys.stdin.read()
def families(parse):
    return [{"name": f.name, "type": f.type, "unit": getattr(f, "unit", ""),
             "help": f.documentation,
             "samples": [{"name": s.name, "labels": s.labels, "value": s.value}
                         for s in f.samples]} for f in parse(text)]
gitlab = []
for line in text.splitlines():
    words = shlex.split(re.sub(r"#.*$", "", line))
    if words:
        gitlab.append(words)
print(json.dumps({"om": families(om), "prom": families(prom), "gitlab": gitlab}))
"##;

/// A python3 with `prometheus_client`: `python3` on the PATH, else
/// Debian's own (`/usr/bin/python3`, where the apt package installs it when
/// another python3 comes first on the PATH).
fn python_with_prometheus_client() -> Option<String> {
    ["python3", "/usr/bin/python3"].into_iter().find_map(|py| {
        let ok = Command::new(py)
            .args(["-c", "import prometheus_client"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| py.to_string())
    })
}

#[test]
fn openmetrics_reads_in_prometheus_client_and_gitlab() {
    let Some(py) = python_with_prometheus_client() else {
        skip(
            Capability::PrometheusClient,
            "no python3 with prometheus_client (apt-get install python3-prometheus-client)",
        );
        return;
    };
    let r = report();
    let text = write(Format::OpenMetrics, &r);
    let mut child = Command::new(&py)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{py} could not parse it: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = r.host.cpu.model.clone().unwrap();

    for parser in ["om", "prom"] {
        let fams = seen[parser].as_array().unwrap();
        let names: Vec<&str> = fams.iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "benchsuite_os_syscall_time_per_op_seconds",
                "benchsuite_mem_bandwidth_bandwidth_bytes_per_second",
                "benchsuite_record_ok"
            ],
            "{parser}"
        );
        assert!(fams.iter().all(|f| f["type"] == "gauge"), "{parser}");
        let sys = &fams[0]["samples"][0];
        assert_eq!(sys["value"], r.records[0].metrics[0].summary.median);
        assert_eq!(
            sys["labels"],
            json!({"call": "getppid", "host": "vm", "cpu": cpu})
        );
        // Label values come back exactly, quotes, backslash and newline too.
        let bw = &fams[1]["samples"][0];
        assert_eq!(bw["value"], 2.5e9);
        assert_eq!(
            bw["labels"],
            json!({"block": "4096", "path": "/tmp/a \"b\"", "host": "vm", "cpu": cpu})
        );
        let status: Vec<(String, f64)> = fams[2]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["labels"]["id"].as_str().unwrap().to_string(),
                    s["value"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            status,
            [
                ("os.syscall".into(), 1.0),
                ("mem.bandwidth".into(), 1.0),
                ("gpu.flops".into(), 0.0),
                ("disk.io".into(), 0.0)
            ],
            "{parser}"
        );
    }
    let om = &seen["om"].as_array().unwrap()[0];
    assert_eq!(om["unit"], "seconds");
    assert!(
        om["help"].as_str().unwrap().contains("lower is better"),
        "{om}"
    );

    // GitLab: every sample line is one key and a number, keys unique.
    let lines = seen["gitlab"].as_array().unwrap();
    assert_eq!(lines.len(), 6, "{lines:?}");
    let mut keys = Vec::new();
    for words in lines {
        let words = words.as_array().unwrap();
        assert_eq!(words.len(), 2, "{words:?}");
        words[1].as_str().unwrap().parse::<f64>().unwrap();
        let key = words[0].as_str().unwrap();
        assert!(!keys.contains(&key), "{key} twice");
        keys.push(key);
    }
}
