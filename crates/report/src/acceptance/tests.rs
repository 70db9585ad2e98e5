use benchsuite_core::bench::Direction;
use benchsuite_core::host::Host;
use benchsuite_core::param::{Point, Value};
use benchsuite_core::results::{Metric, Record, Report, RunConfigRecord, Status};

use super::*;

/// Ten samples around `center`, ±`spread` (relative) at the ends.
fn samples(center: f64, spread: f64) -> Vec<f64> {
    (0..10)
        .map(|i| center * (1.0 + (i as f64 - 4.5) / 4.5 * spread))
        .collect()
}

fn metric(name: &str, unit: &str, direction: Direction, samples: &[f64]) -> Metric {
    Metric::from_samples(name, unit, direction, samples).unwrap()
}

fn record(id: &str, op: &str, metrics: Vec<Metric>) -> Record {
    let mut params = Point::default();
    params.set("op", Value::Str(op.into()));
    Record {
        iters_per_sample: Some(1000),
        ..Record::ok(id, params, metrics)
    }
}

/// A node's run: triad bandwidth `bw` B/s (±`spread` within the run) and
/// a latency of `lat` seconds.
fn node(host: &str, bw: f64, lat: f64, spread: f64) -> Report {
    let mut h = Host {
        hostname: Some(host.into()),
        memory_bytes: Some(8 << 30),
        ..Host::default()
    };
    h.cpu.model = Some("AMD EPYC 9B45".into());
    h.cpu.logical_cpus = Some(2);
    Report {
        schema_version: benchsuite_core::SCHEMA_VERSION.into(),
        tool_version: "0.1.0".into(),
        started_at: "2026-11-29T00:00:00Z".into(),
        host: h,
        cluster: None,
        config: RunConfigRecord::default(),
        progress: None,
        records: vec![
            record(
                "mem.bandwidth",
                "triad",
                vec![metric(
                    "bandwidth",
                    "B/s",
                    Direction::Higher,
                    &samples(bw, spread),
                )],
            ),
            record(
                "mem.latency",
                "chase",
                vec![metric(
                    "latency",
                    "s",
                    Direction::Lower,
                    &samples(lat, spread),
                )],
            ),
        ],
    }
}

fn fleet() -> Vec<Report> {
    // Five healthy nodes within ±1%.
    [1.0, 0.995, 1.01, 0.99, 1.005]
        .iter()
        .enumerate()
        .map(|(i, f)| node(&format!("n{i}"), 50e9 * f, 80e-9 / f, 0.002))
        .collect()
}

fn band<'a>(b: &'a Baseline, record: &str) -> &'a Band {
    b.machines[0]
        .bands
        .iter()
        .find(|x| x.record == record)
        .unwrap()
}

#[test]
fn bands_sit_at_the_margin_when_the_fleet_is_tight_and_at_three_mads_when_it_is_not() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    assert_eq!(b.machines.len(), 1);
    let m = &b.machines[0];
    assert_eq!(m.runs, 5);
    assert_eq!(m.hosts.len(), 5);
    let bw = band(&b, "mem.bandwidth op=triad").values().unwrap();
    assert!((bw.expected - 50e9).abs() < 0.01 * 50e9, "{bw:?}");
    // ±1% hosts: 3 scaled MADs is ~2.2%, under the 5% margin.
    let min = bw.min.unwrap();
    assert!((min / bw.expected - 0.95).abs() < 0.001, "{bw:?}");
    assert!(bw.max.is_none());
    let lat = band(&b, "mem.latency op=chase").values().unwrap();
    assert!(lat.min.is_none() && (lat.max.unwrap() / lat.expected - 1.05).abs() < 0.001);

    // A fleet spread ±8%: the band widens to 3 scaled MADs.
    let wide: Vec<Report> = [1.0, 0.92, 1.08, 0.96, 1.04]
        .iter()
        .enumerate()
        .map(|(i, f)| node(&format!("n{i}"), 50e9 * f, 80e-9, 0.002))
        .collect();
    let b = Baseline::build(&wide, &BuildOptions::default()).unwrap();
    let bw = band(&b, "mem.bandwidth op=triad");
    let v = bw.values().unwrap();
    // MAD of {0, 8, 8, 4, 4}% is 4%: 3 × 1.4826 × 4% = 17.8%.
    assert!(
        (v.min.unwrap() / v.expected - (1.0 - 3.0 * 1.4826 * 0.04)).abs() < 0.002,
        "{v:?}"
    );
    assert!(
        bw.source.as_deref().unwrap().contains("scaled MAD"),
        "{bw:?}"
    );

    // Two runs: the spread is unknown and the margin alone sets the band.
    let b = Baseline::build(&wide[..2], &BuildOptions::default()).unwrap();
    let bw = band(&b, "mem.bandwidth op=triad");
    assert!(
        bw.source.as_deref().unwrap().contains("fewer than 3 runs"),
        "{bw:?}"
    );
}

#[test]
fn a_healthy_node_passes_a_slow_one_fails_naming_the_metric_and_a_borderline_one_warns() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let ok = check(&b, &node("new", 49.5e9, 81e-9, 0.002)).unwrap();
    assert_eq!(ok.grade, Grade::Pass, "{ok:#?}");
    assert_eq!(ok.counts(), [2, 0, 0]);
    assert_eq!(ok.drain_reason(), None);

    let slow = check(&b, &node("slow", 35e9, 81e-9, 0.002)).unwrap();
    assert_eq!(slow.grade, Grade::Fail);
    let r = &slow.results[0];
    assert_eq!(
        (r.grade, r.metric.as_deref()),
        (Grade::Fail, Some("bandwidth"))
    );
    assert!(r.reason.contains("below 47.50 GB/s"), "{}", r.reason);
    assert!(r.next.as_deref().unwrap().contains("dmidecode"), "{r:?}");
    let reason = slow.drain_reason().unwrap();
    assert_eq!(
        reason,
        "benchsuite: mem.bandwidth op=triad bandwidth 70% of baseline"
    );

    // A median just under the bound whose interval reaches back over it:
    // WARN (borderline), exit 0; the same median, measured tightly: FAIL.
    // A median just inside passes however wide its interval: the band is
    // where healthy runs' medians fall.
    let n = check(&b, &node("edge", 50e9 * 0.945, 80e-9, 0.05)).unwrap();
    assert_eq!(n.results[0].grade, Grade::Warn, "{:#?}", n.results[0]);
    assert!(n.results[0].reason.contains("borderline"));
    assert_eq!(n.grade.exit_code(), 0);
    let n = check(&b, &node("edge", 50e9 * 0.945, 80e-9, 0.001)).unwrap();
    assert_eq!(n.results[0].grade, Grade::Fail);
    for spread in [0.001, 0.05] {
        let n = check(&b, &node("edge", 50e9 * 0.955, 80e-9, spread)).unwrap();
        assert_eq!(n.results[0].grade, Grade::Pass);
    }
    // A node drifting past the bound goes PASS, WARN, FAIL, never from
    // PASS straight to FAIL.
    let grades: Vec<Grade> = (0..200)
        .map(|i| {
            let f = 0.97 - 0.0005 * i as f64;
            check(&b, &node("drift", 50e9 * f, 80e-9, 0.03))
                .unwrap()
                .results[0]
                .grade
        })
        .collect();
    let first_fail = grades.iter().position(|g| *g == Grade::Fail).unwrap();
    let last_pass = grades.iter().rposition(|g| *g == Grade::Pass).unwrap();
    assert!(last_pass + 5 < first_fail, "{grades:?}");
    assert!(
        grades[last_pass + 1..first_fail]
            .iter()
            .all(|g| *g == Grade::Warn)
    );
}

#[test]
fn a_missing_failed_or_skipped_record_fails_its_band() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let mut r = node("gone", 50e9, 80e-9, 0.002);
    r.records.remove(1);
    let c = check(&b, &r).unwrap();
    assert_eq!(c.grade, Grade::Fail);
    assert!(
        c.results[1].reason.contains("missing measurement"),
        "{:?}",
        c.results[1]
    );
    let mut r = node("broke", 50e9, 80e-9, 0.002);
    r.records[0].status = Status::Failed;
    r.records[0].reason = Some("mmap failed".into());
    let c = check(&b, &r).unwrap();
    assert_eq!(c.results[0].grade, Grade::Fail);
    assert!(c.results[0].reason.contains("failed: mmap failed"));
    r.records[0].status = Status::Skipped;
    assert_eq!(check(&b, &r).unwrap().results[0].grade, Grade::Fail);
}

#[test]
fn rules_judge_absolute_values_shares_of_the_baseline_and_status_with_their_severity() {
    let mut b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let rule = |require: &str, severity: Option<Severity>| Rule {
        record: "mem.bandwidth op=triad".into(),
        metric: None,
        require: require.into(),
        severity,
        next: Some("reseat the DIMMs".into()),
        machine: None,
    };
    b.rules = vec![
        rule(">= 45 GB/s", None),
        rule(">= 90% of baseline", Some(Severity::Warn)),
        rule("ok", None),
    ];
    // 44 GB/s: inside no band (5% margin), under the absolute rule, 88% of
    // the baseline (a warn rule), measured.
    let c = check(&b, &node("n", 44e9, 80e-9, 0.002)).unwrap();
    let grades: Vec<(&str, Grade)> = c.results.iter().map(|r| (r.kind, r.grade)).collect();
    assert_eq!(
        grades,
        [
            ("band", Grade::Fail),
            ("band", Grade::Pass),
            ("rule", Grade::Fail),
            ("rule", Grade::Warn),
            ("rule", Grade::Pass)
        ]
    );
    assert_eq!(c.results[2].next.as_deref(), Some("reseat the DIMMs"));
    let of = c.results[3].of_baseline.unwrap();
    assert!((of - 0.88).abs() < 0.01, "{of}");

    // A rule the unit does not fit is a problem of the file, not a FAIL.
    b.rules = vec![rule(">= 45 Gflop/s", None)];
    let e = check(&b, &node("n", 44e9, 80e-9, 0.002)).unwrap_err();
    assert!(e.to_string().contains("not B/s"), "{e}");
    // A rule whose records the report lacks fails.
    b.rules = vec![Rule {
        record: "gpu.bandwidth op=d2d".into(),
        ..rule(">= 3.8 TB/s", None)
    }];
    let c = check(&b, &node("n", 50e9, 80e-9, 0.002)).unwrap();
    assert_eq!(c.results.last().unwrap().grade, Grade::Fail);
    assert!(c.results.last().unwrap().reason.contains("no record"));
    for bad in ["> 3", ">= ", ">= x% of baseline", "fast"] {
        assert!(rule(bad, None).requirement().is_err(), "{bad}");
    }
}

#[test]
fn another_machine_type_or_format_is_refused_naming_the_difference() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let mut r = node("big", 50e9, 80e-9, 0.002);
    r.host.memory_bytes = Some(16 << 30);
    let e = check(&b, &r).unwrap_err().to_string();
    assert!(e.contains("memory 16 GiB vs 8 GiB"), "{e}");
    let mut old = b.clone();
    old.format = 0;
    assert!(matches!(
        check(&old, &node("n", 50e9, 80e-9, 0.002)),
        Err(AcceptanceError::Format { found: 0 })
    ));
    let mut r = node("n", 50e9, 80e-9, 0.002);
    r.schema_version = "9.0".into();
    assert!(matches!(check(&b, &r), Err(AcceptanceError::Schema { .. })));
}

#[test]
fn the_written_file_reads_back_as_the_same_baseline() {
    let mut b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    b.rules.push(Rule {
        record: "mem.*".into(),
        metric: Some("bandwidth".into()),
        require: ">= 90% of baseline".into(),
        severity: Some(Severity::Warn),
        next: Some("say \"hi\"\nthen go".into()),
        machine: Some(b.machines[0].name.clone()),
    });
    let text = b.to_toml();
    let back: Baseline = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, b);
    // A row per band.
    assert_eq!(text.matches("{ record = ").count(), 2, "{text}");
}

#[test]
fn a_merge_keeps_edits_other_machine_types_and_rules() {
    let mut old = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    old.machines[0].bands[0].severity = Some(Severity::Warn);
    old.machines[0].bands[0].next = Some("call Bob".into());
    let mut other = old.machines[0].clone();
    other.memory_gib = Some(64);
    other.name = other.machine_type().name();
    old.machines.push(other);
    old.rules.push(Rule {
        record: "mem".into(),
        metric: None,
        require: "ok".into(),
        severity: None,
        next: None,
        machine: None,
    });
    let new = Baseline::build(&fleet()[..3], &BuildOptions::default()).unwrap();
    let (merged, replaced, kept) = new.merge_into(old.clone());
    assert_eq!(replaced, vec![old.machines[0].name.clone()]);
    assert_eq!(kept, vec![old.machines[1].name.clone()]);
    assert_eq!(merged.rules, old.rules);
    let m = merged
        .machines
        .iter()
        .find(|m| m.machine_type() == old.machines[0].machine_type())
        .unwrap();
    assert_eq!(m.runs, 3);
    assert_eq!(m.bands[0].severity, Some(Severity::Warn));
    assert_eq!(m.bands[0].next.as_deref(), Some("call Bob"));
}

#[test]
fn rules_naming_unknown_benchmarks_or_metrics_are_refused_with_close_names() {
    let known = vec![
        ("mem.bandwidth".to_string(), vec!["bandwidth".to_string()]),
        ("mem.latency".to_string(), vec!["latency".to_string()]),
        ("gpu.bandwidth".to_string(), vec!["bandwidth".to_string()]),
    ];
    let mut b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let rule = |record: &str, metric: Option<&str>| Rule {
        record: record.into(),
        metric: metric.map(str::to_string),
        require: "ok".into(),
        severity: None,
        next: None,
        machine: None,
    };
    b.rules = vec![rule("mem.bandwith", None)];
    let e = check_names(&b, &known).unwrap_err().to_string();
    assert!(e.contains("did you mean mem.bandwidth"), "{e}");
    b.rules = vec![rule("mem.bandwidth op=triad", Some("bw"))];
    let e = check_names(&b, &known).unwrap_err().to_string();
    assert!(
        e.contains("no metric `bw`") && e.contains("bandwidth"),
        "{e}"
    );
    b.rules = vec![rule("mem.*", Some("latency")), rule("gpu", None)];
    check_names(&b, &known).unwrap();
}

#[test]
fn the_npd_message_fits_its_length_and_names_the_worst_problem() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let ok = check(&b, &node("a", 50e9, 80e-9, 0.002)).unwrap();
    let bad = check(&b, &node("b", 20e9, 200e-9, 0.002)).unwrap();
    assert_eq!(
        npd_message(std::slice::from_ref(&ok), 80),
        "benchsuite: every check passed"
    );
    let m = npd_message(&[ok.clone(), bad.clone()], 80);
    assert!(
        m.starts_with("benchsuite FAIL: mem.bandwidth op=triad bandwidth 40% of baseline"),
        "{m}"
    );
    assert!(m.chars().count() <= 80);
    assert!(npd_message(&[bad], 30).chars().count() <= 30);
    let checks = [ok, check(&b, &node("c", 20e9, 80e-9, 0.002)).unwrap()];
    let d: Vec<&str> = defective_nodes(&checks)
        .iter()
        .map(|c| c.host.as_str())
        .collect();
    assert_eq!(d, ["c"]);
}

#[test]
fn a_result_fails_only_when_every_measurement_fails_it_and_a_flip_warns() {
    let b = Baseline::build(&fleet(), &BuildOptions::default()).unwrap();
    let slow = node("n", 35e9, 80e-9, 0.002);
    let first = check(&b, &slow).unwrap();
    assert_eq!(first.grade, Grade::Fail);
    assert_eq!(
        records_to_remeasure(&first, &slow),
        ["mem.bandwidth op=triad"]
    );
    // Measured again, only that record.
    let again = |bw: f64| {
        let mut r = node("n", bw, 80e-9, 0.002);
        r.records.truncate(1);
        check(&b, &r).unwrap()
    };
    let still = remeasured(&first, &[again(36e9), again(34e9)]);
    assert_eq!(still.grade, Grade::Fail);
    assert!(
        still.results[0]
            .reason
            .contains("FAIL → FAIL → FAIL; failed every time"),
        "{:?}",
        still.results[0]
    );
    // Failed, then passed: intermittent, WARN (a node is not drained for a
    // state that went away, nor called healthy).
    let flip = remeasured(&first, &[again(50e9)]);
    assert_eq!(flip.grade, Grade::Warn);
    assert!(
        flip.results[0].reason.contains("intermittent"),
        "{:?}",
        flip.results[0]
    );
    assert_eq!(flip.results[0].value, Some(50e9));
    // A borderline that passes when measured again passes.
    let edge = node("n", 50e9 * 0.945, 80e-9, 0.05);
    let first = check(&b, &edge).unwrap();
    assert_eq!(first.grade, Grade::Warn);
    let ok = remeasured(&first, &[again(50e9)]);
    assert_eq!(ok.grade, Grade::Pass);
    assert_eq!(ok.results[0].next, None);
    // The latency band passed the first time: not measured again, kept.
    assert_eq!(ok.results[1], first.results[1]);
    // A later check holding only the bandwidth record's results (as
    // `check --measure` keeps them) leaves the latency result alone.
    let mut only_bw = again(50e9);
    only_bw
        .results
        .retain(|r| r.record == "mem.bandwidth op=triad");
    let ok = remeasured(&first, &[only_bw]);
    assert_eq!(ok.results[1], first.results[1]);
}
