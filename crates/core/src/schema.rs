//! The JSON Schema of a report, generated from the result types.
//!
//! `benchsuite schema` prints it. It describes what a reader of this build
//! accepts (schemars' deserialisation contract): a field that a newer minor
//! version added and an older report lacks (`config.rounds`,
//! `record.requested`...) is optional, and unknown fields are allowed, since
//! readers must ignore fields they do not know. So every report of the
//! current major version validates, the oldest minor included.

use schemars::generate::SchemaSettings;

use crate::results::{Report, SCHEMA_VERSION};

/// The JSON Schema (draft 2020-12) of [`Report`], as `benchsuite schema`
/// prints it.
pub fn json_schema() -> serde_json::Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<Report>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "title".into(),
            format!("benchsuite report, schema {SCHEMA_VERSION}").into(),
        );
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::param::Point;
    use crate::results::{Record, SampleTails};
    use crate::testing as fixtures;

    fn errors(schema: &Value, report: &Value) -> Vec<String> {
        let v = jsonschema::validator_for(schema).expect("the schema compiles");
        v.iter_errors(report)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }

    /// The schema with `additionalProperties: false` on every object that
    /// lists its properties: a report this build writes must then use no
    /// field the schema does not describe. An object made of a composition
    /// (a caveat: its kind's fields plus `message`) is closed with
    /// `unevaluatedProperties`, which sees the fields of its parts, and its
    /// parts are left open.
    fn closed(schema: &Value) -> Value {
        closed_in(schema, false)
    }

    fn closed_in(schema: &Value, part: bool) -> Value {
        match schema {
            Value::Object(o) => {
                let composed = ["oneOf", "anyOf", "allOf"]
                    .iter()
                    .any(|k| o.contains_key(*k));
                let mut o: serde_json::Map<String, Value> = o
                    .iter()
                    .map(|(k, v)| {
                        let is_part = composed && ["oneOf", "anyOf", "allOf"].contains(&k.as_str());
                        (k.clone(), closed_in(v, is_part))
                    })
                    .collect();
                if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                    if composed {
                        o.insert("unevaluatedProperties".into(), false.into());
                    } else if !part {
                        o.insert("additionalProperties".into(), false.into());
                    }
                }
                Value::Object(o)
            }
            Value::Array(a) => Value::Array(a.iter().map(|v| closed_in(v, part)).collect()),
            v => v.clone(),
        }
    }

    /// The exporters' fixture plus what 1.2 added: a requested point,
    /// rounds, tails, and a failed record; and 1.5's cluster section.
    fn full_report() -> Value {
        let mut r = fixtures::fixture_report();
        let m = &mut r.records[1].metrics[1];
        m.rounds = Some(vec![2, 1]);
        m.tails = Some(SampleTails {
            p99: Some(vec![2e-6; 3]),
            p99_9: None,
        });
        r.records[1].warnings.push(crate::caveat::Caveat::Noisy {
            metric: "bandwidth".into(),
            cv: 0.2,
            n: 3,
        });
        let mut failed = Record::failed("os.syscall", Point::default(), "prepare: boom");
        failed.requested = Some(Point::default());
        r.records.push(failed);
        r.cluster = Some(crate::cluster::Cluster {
            launcher: crate::cluster::Launcher::Slurm,
            job: Some("4242".into()),
            step: Some("0".into()),
            rank: 1,
            world_size: 2,
            node: Some("node2".into()),
            local_rank: Some(0),
        });
        serde_json::to_value(&r).unwrap()
    }

    #[test]
    fn what_this_build_writes_validates_and_uses_only_described_fields() {
        let report = full_report();
        assert_eq!(errors(&json_schema(), &report), Vec::<String>::new());
        assert_eq!(
            errors(&closed(&json_schema()), &report),
            Vec::<String>::new()
        );
        // The closed schema does catch an undescribed field in a caveat.
        let mut bad = report.clone();
        bad["records"][1]["warnings"][0]["bogus"] = json!(1);
        assert_ne!(errors(&closed(&json_schema()), &bad), Vec::<String>::new());
    }

    #[test]
    fn a_1_0_report_validates() {
        let text = include_str!("../tests/fixtures/report-1.0.json");
        let report: Value = serde_json::from_str(text).unwrap();
        assert_eq!(report["schema_version"], "1.0");
        assert_eq!(errors(&json_schema(), &report), Vec::<String>::new());
    }

    #[test]
    fn the_schema_rejects_what_a_reader_would() {
        let schema = json_schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert!(schema["title"].as_str().unwrap().contains(SCHEMA_VERSION));
        let cases = [
            ("/records/0/status", json!("maybe")),
            ("/records/0/metrics/0/direction", json!("up")),
            ("/records/0/metrics/0/summary/median", json!("51ns")),
            ("/records/0/params/call", json!(["getppid"])),
            ("/host/memory_bytes", json!(-1)),
        ];
        for (path, wrong) in cases {
            let mut r = full_report();
            *r.pointer_mut(path).unwrap() = wrong;
            let e = errors(&schema, &r);
            assert!(
                e.iter().any(|e| e.starts_with(&format!("{path}:"))),
                "{path}: {e:?}"
            );
        }
        let mut r = full_report();
        r.as_object_mut().unwrap().remove("records");
        let e = errors(&schema, &r);
        assert!(e.iter().any(|e| e.contains("\"records\"")), "{e:?}");
        // Every kind of parameter value a point holds is accepted.
        let mut r = full_report();
        r["records"][0]["params"] = json!({"a": true, "b": 4096, "c": 0.5, "d": "x"});
        assert_eq!(errors(&schema, &r), Vec::<String>::new());
    }
}
