use super::*;
use crate::bench::Direction;
use crate::host::Host;
use crate::param::Value;
use crate::report::{RunConfigRecord, SampleTails};
use crate::stats::Summary;

/// Ten samples around `center` with a ±1% spread (CV ≈ 0.6%).
fn steady(center: f64) -> Vec<f64> {
    (0..10)
        .map(|i| center * (1.0 + (i as f64 - 4.5) * 0.002))
        .collect()
}

fn metric(name: &str, unit: &str, direction: Direction, samples: &[f64]) -> Metric {
    Metric {
        name: name.into(),
        unit: unit.into(),
        direction,
        samples: samples.to_vec(),
        timestamps: None,
        rounds: None,
        tails: None,
        summary: Summary::new(samples).unwrap(),
        latency: None,
    }
}

fn record(id: &str, threads: u64, metrics: Vec<Metric>) -> Record {
    let mut params = Point::default();
    params.set("threads", Value::Int(threads));
    Record {
        id: id.into(),
        params,
        requested: None,
        status: Status::Ok,
        reason: None,
        iters_per_sample: Some(1000),
        metrics,
        peak: None,
        warnings: Vec::new(),
        notes: Vec::new(),
        reference: None,
    }
}

fn report(records: Vec<Record>) -> Report {
    Report {
        schema_version: "1.2".into(),
        tool_version: "0.1.0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        host: Host::default(),
        cluster: None,
        config: RunConfigRecord::default(),
        progress: None,
        records,
    }
}

/// A throughput record and a latency record, with the throughput scaled
/// by `bw` and the latency by `lat`.
fn pair(bw: f64, lat: f64) -> Report {
    let scale = |v: Vec<f64>, k: f64| v.into_iter().map(|x| x * k).collect::<Vec<_>>();
    report(vec![
        record(
            "mem.bandwidth",
            1,
            vec![metric(
                "bandwidth",
                "B/s",
                Direction::Higher,
                &scale(steady(10e9), bw),
            )],
        ),
        record(
            "os.syscall",
            1,
            vec![metric(
                "time_per_op",
                "s",
                Direction::Lower,
                &scale(steady(50e-9), lat),
            )],
        ),
    ])
}

fn verdicts(c: &Comparison) -> Vec<(&str, Verdict)> {
    c.metrics
        .iter()
        .map(|m| (m.metric.as_str(), m.verdict))
        .collect()
}

fn run(base: &Report, new: &Report) -> Comparison {
    compare(base, new, &CompareOptions::default()).unwrap()
}

fn kinds(c: &Comparison) -> Vec<(String, ProblemKind, bool)> {
    c.problems
        .iter()
        .map(|p| (p.key.clone(), p.kind, p.allowed))
        .collect()
}

#[test]
fn identical_reports_are_unchanged_and_pass() {
    let r = pair(1.0, 1.0);
    let c = run(&r, &r);
    assert!(c.passed() && !c.has_regression());
    assert_eq!(
        verdicts(&c),
        [
            ("bandwidth", Verdict::Unchanged),
            ("time_per_op", Verdict::Unchanged)
        ]
    );
    let m = &c.metrics[0];
    assert_eq!(m.change, Some(0.0));
    let [lo, hi] = m.interval.unwrap();
    assert!(lo < 0.0 && hi > 0.0 && (lo + hi).abs() < 1e-3, "{lo} {hi}");
    assert_eq!(m.key, "mem.bandwidth threads=1");
    assert!(c.problems.is_empty() && c.added.is_empty() && c.not_comparable.is_empty());
    assert!(
        c.summary().starts_with("gate passed: 2 unchanged"),
        "{}",
        c.summary()
    );
}

#[test]
fn thirty_percent_worse_regresses_in_both_directions() {
    let c = run(&pair(1.0, 1.0), &pair(0.7, 1.3));
    assert!(c.has_regression() && !c.passed());
    assert_eq!(
        verdicts(&c),
        [
            ("bandwidth", Verdict::Regressed),
            ("time_per_op", Verdict::Regressed)
        ]
    );
    let bw = &c.metrics[0];
    assert!((bw.change.unwrap() + 0.3).abs() < 1e-9, "{:?}", bw.change);
    let [lo, hi] = bw.interval.unwrap();
    assert!(lo < -0.3 && -0.3 < hi && hi < -0.05, "{lo} {hi}");
    assert!(bw.is_worse());
    assert!(
        bw.change_text().starts_with("-30.0% ["),
        "{}",
        bw.change_text()
    );
    assert!((c.metrics[1].change.unwrap() - 0.3).abs() < 1e-9);
    assert_eq!(c.count(Verdict::Regressed), 2);
}

#[test]
fn improvement_is_not_a_regression() {
    let c = run(&pair(1.0, 1.0), &pair(1.3, 0.7));
    assert!(c.passed());
    assert_eq!(
        verdicts(&c),
        [
            ("bandwidth", Verdict::Improved),
            ("time_per_op", Verdict::Improved)
        ]
    );
}

#[test]
fn a_small_certain_change_is_unchanged_until_the_threshold_is_below_it() {
    // 2% is far outside the 0.6% noise but inside the 5% threshold.
    let c = run(&pair(1.0, 1.0), &pair(0.98, 1.02));
    assert_eq!(c.count(Verdict::Unchanged), 2);
    let strict = CompareOptions {
        threshold: 0.01,
        ..CompareOptions::default()
    };
    let c = compare(&pair(1.0, 1.0), &pair(0.98, 1.02), &strict).unwrap();
    assert_eq!(c.count(Verdict::Regressed), 2);
}

#[test]
fn a_change_whose_interval_reaches_inside_the_threshold_is_noisy() {
    // CV 50%, n = 3, median 40% worse: the interval is far wider than 5%.
    let mk = |v: [f64; 3]| {
        report(vec![record(
            "disk.io",
            1,
            vec![metric("bw", "B/s", Direction::Higher, &v)],
        )])
    };
    let c = run(&mk([0.5, 1.0, 1.5]), &mk([0.3, 0.6, 0.9]));
    assert_eq!(verdicts(&c), [("bw", Verdict::Noisy)]);
    let [lo, hi] = c.metrics[0].interval.unwrap();
    assert!(lo < -0.4 && hi > -0.05, "{lo} {hi}");
    assert!(c.passed());
}

#[test]
fn one_stray_sample_does_not_hide_a_real_shift() {
    let base_s = [
        100.0, 101.0, 99.0, 100.5, 99.5, 300.0, 100.2, 99.8, 100.3, 99.7,
    ];
    let new_s: Vec<f64> = base_s.iter().map(|v| v * 1.3).collect();
    let mk = |s: &[f64]| {
        report(vec![record(
            "os.syscall",
            1,
            vec![metric("t", "s", Direction::Lower, s)],
        )])
    };
    let c = run(&mk(&base_s), &mk(&new_s));
    assert_eq!(verdicts(&c), [("t", Verdict::Regressed)]);
}

#[test]
fn too_few_samples_are_not_judged_and_fail_the_gate_unless_allowed() {
    let mk = |v: &[f64]| {
        report(vec![record(
            "cpu.flops",
            1,
            vec![metric("flops", "flop/s", Direction::Higher, v)],
        )])
    };
    let c = run(&mk(&[1.0, 1.0, 1.0]), &mk(&[0.5, 0.5]));
    let m = &c.metrics[0];
    assert_eq!(
        (m.verdict, m.change, m.interval),
        (Verdict::NotJudged, None, None)
    );
    assert!(
        m.note.as_deref().unwrap().contains("new has 2 sample"),
        "{:?}",
        m.note
    );
    assert!(!c.passed());
    assert_eq!(
        kinds(&c),
        [("cpu.flops threads=1".into(), ProblemKind::NotJudged, false)]
    );
    let lax = CompareOptions {
        allow: Allow {
            unjudged: true,
            ..Allow::default()
        },
        ..CompareOptions::default()
    };
    assert!(
        compare(&mk(&[1.0, 1.0, 1.0]), &mk(&[0.5, 0.5]), &lax)
            .unwrap()
            .passed()
    );
}

#[test]
fn no_spread_on_either_side_is_certain() {
    let mk = |v: f64| {
        report(vec![record(
            "cpu.flops",
            1,
            vec![metric("flops", "flop/s", Direction::Higher, &[v, v, v])],
        )])
    };
    let c = run(&mk(1.0), &mk(0.5));
    assert_eq!(c.metrics[0].interval, Some([-0.5, -0.5]));
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    assert_eq!(
        run(&mk(1.0), &mk(1.0)).metrics[0].verdict,
        Verdict::Unchanged
    );
}

#[test]
fn percent_metrics_use_an_absolute_threshold() {
    // UDP loss 0% → 0.2%: a relative change is infinite, but 0.2 points
    // is within the default 0.5pp; 0% → 3% is a regression.
    let mk = |v: [f64; 5]| {
        report(vec![record(
            "net.udp_throughput",
            1,
            vec![metric("loss", "%", Direction::Lower, &v)],
        )])
    };
    let zero = mk([0.0; 5]);
    let c = run(&zero, &mk([0.2, 0.2, 0.2, 0.2, 0.2]));
    assert_eq!(verdicts(&c), [("loss", Verdict::Unchanged)]);
    assert_eq!(c.metrics[0].change_text(), "+0.20pp [+0.20pp, +0.20pp]");
    let c = run(&zero, &mk([3.0, 3.1, 2.9, 3.0, 3.05]));
    assert_eq!(verdicts(&c), [("loss", Verdict::Regressed)]);
    // A relative threshold on a zero baseline cannot be judged.
    let rel = CompareOptions {
        rules: vec![ThresholdRule::parse("net:loss=5%").unwrap()],
        ..CompareOptions::default()
    };
    let c = compare(&zero, &mk([0.2; 5]), &rel).unwrap();
    assert_eq!(c.metrics[0].verdict, Verdict::NotJudged);
    assert!(
        c.metrics[0]
            .note
            .as_deref()
            .unwrap()
            .contains("absolute threshold")
    );
}

#[test]
fn per_metric_thresholds_override_the_default() {
    let lax = CompareOptions {
        rules: vec![ThresholdRule::parse("os.*:time_per_op=40%").unwrap()],
        ..CompareOptions::default()
    };
    let c = compare(&pair(1.0, 1.0), &pair(0.7, 1.3), &lax).unwrap();
    assert_eq!(
        verdicts(&c),
        [
            ("bandwidth", Verdict::Regressed),
            ("time_per_op", Verdict::Unchanged)
        ]
    );
    assert_eq!(c.metrics[1].tolerance, Tolerance::Relative(0.40));
    assert_eq!(c.rules, ["os.*:time_per_op=40%"]);
}

#[test]
fn a_rule_that_covers_nothing_or_the_wrong_unit_is_an_error() {
    let r = pair(1.0, 1.0);
    let with = |rule: &str| {
        compare(
            &r,
            &r,
            &CompareOptions {
                rules: vec![ThresholdRule::parse(rule).unwrap()],
                ..CompareOptions::default()
            },
        )
    };
    let e = with("os.syscall:latency=10%").unwrap_err().to_string();
    assert!(
        e.contains("no metric `latency`") && e.contains("time_per_op"),
        "{e}"
    );
    let e = with("gpu=10%").unwrap_err().to_string();
    assert!(
        e.contains("no record matches `gpu`") && e.contains("os.syscall"),
        "{e}"
    );
    let e = with("mem:bandwidth=1pp").unwrap_err().to_string();
    assert!(e.contains("measured in B/s"), "{e}");
    assert!(with("os.syscall:time_per_op=20us").is_ok());
}

#[test]
fn a_broken_record_fails_the_gate_with_its_reason() {
    let base = pair(1.0, 1.0);
    for (status, kind) in [
        (Status::Failed, ProblemKind::Failed),
        (Status::Skipped, ProblemKind::Skipped),
    ] {
        let mut new = pair(1.0, 1.0);
        let p = new.records[1].params.clone();
        new.records[1] = Record::failed("os.syscall", p, "EPERM: operation not permitted");
        new.records[1].status = status;
        let c = run(&base, &new);
        assert!(!c.passed(), "{status:?}");
        assert_eq!(c.problems.len(), 1);
        assert_eq!(c.problems[0].kind, kind);
        assert_eq!(c.problems[0].reason, "EPERM: operation not permitted");
        assert_eq!(c.metrics.len(), 1);
    }
    // Skipped passes with --allow-skipped; failed never does.
    let lax = CompareOptions {
        allow: Allow {
            skipped: true,
            missing: true,
            unjudged: true,
        },
        ..CompareOptions::default()
    };
    let mut new = pair(1.0, 1.0);
    let p = new.records[1].params.clone();
    new.records[1] = Record::skipped("os.syscall", p.clone(), "no permission");
    assert!(compare(&base, &new, &lax).unwrap().passed());
    new.records[1] = Record::failed("os.syscall", p, "boom");
    assert!(!compare(&base, &new, &lax).unwrap().passed());
}

#[test]
fn missing_records_and_metrics_fail_the_gate_added_ones_do_not() {
    let base = pair(1.0, 1.0);
    let mut new = pair(1.0, 1.0);
    new.records.remove(1);
    new.records.push(record(
        "mem.bandwidth",
        2,
        vec![metric("bandwidth", "B/s", Direction::Higher, &steady(1.0))],
    ));
    new.records[0]
        .metrics
        .push(metric("iops", "op/s", Direction::Higher, &steady(1.0)));
    let c = run(&base, &new);
    assert_eq!(
        kinds(&c),
        [("os.syscall threads=1".into(), ProblemKind::Missing, false)]
    );
    let added: Vec<_> = c
        .added
        .iter()
        .map(|u| (u.key.as_str(), u.metric.as_deref()))
        .collect();
    assert_eq!(
        added,
        [
            ("mem.bandwidth threads=1", Some("iops")),
            ("mem.bandwidth threads=2", None)
        ]
    );
    assert!(!c.passed());

    // A metric that vanished from a record that still ran.
    let mut new = pair(1.0, 1.0);
    new.records[1].metrics[0].name = "renamed".into();
    let c = run(&base, &new);
    assert_eq!(c.problems[0].kind, ProblemKind::MissingMetric);
    assert_eq!(c.problems[0].metric.as_deref(), Some("time_per_op"));
    assert!(!c.passed());
}

#[test]
fn an_empty_or_all_failed_new_report_fails() {
    let base = pair(1.0, 1.0);
    let c = run(&base, &report(Vec::new()));
    assert!(!c.passed());
    assert_eq!(c.problems[0].kind, ProblemKind::NoResults);
    assert!(c.problems[0].reason.contains("no records"));
    let lax = CompareOptions {
        allow: Allow {
            missing: true,
            skipped: true,
            unjudged: true,
        },
        ..CompareOptions::default()
    };
    assert!(!compare(&base, &report(Vec::new()), &lax).unwrap().passed());
    let mut broken = pair(1.0, 1.0);
    for r in &mut broken.records {
        *r = Record::failed(&r.id, r.params.clone(), "segfault");
    }
    let c = run(&base, &broken);
    assert!(!c.passed());
    assert!(
        c.problems[0]
            .reason
            .contains("none of the new report's 2 records ran")
    );
}

#[test]
fn reports_with_nothing_in_common_are_an_error() {
    let a = pair(1.0, 1.0);
    let b = report(vec![record(
        "disk.io",
        1,
        vec![metric("bw", "B/s", Direction::Higher, &steady(1.0))],
    )]);
    let e = compare(&a, &b, &CompareOptions::default()).unwrap_err();
    assert!(matches!(e, CompareError::NothingInCommon { .. }));
    assert!(e.to_string().contains("disk.io"), "{e}");
}

#[test]
fn a_record_that_did_not_run_in_base_is_not_the_new_reports_fault() {
    let mut base = pair(1.0, 1.0);
    let p = base.records[1].params.clone();
    base.records[1] = Record::skipped("os.syscall", p, "no permission");
    let c = run(&base, &pair(1.0, 1.0));
    assert!(c.passed());
    assert!(
        c.not_comparable[0]
            .reason
            .contains("skipped (no permission) in base")
    );
}

#[test]
fn records_pair_on_requested_parameters_and_say_what_resolved_differently() {
    let mut base = pair(1.0, 1.0);
    let mut new = pair(0.7, 1.0);
    for (r, bytes) in [
        (&mut base.records[0], 32u64 << 20),
        (&mut new.records[0], 48 << 20),
    ] {
        let mut req = r.params.clone();
        req.set("size", Value::Str("auto".into()));
        r.params.set("size", Value::Int(bytes));
        r.requested = Some(req);
    }
    let c = run(&base, &new);
    assert!(c.added.is_empty() && c.problems.is_empty(), "{c:?}");
    let bw = &c.metrics[0];
    assert_eq!(bw.verdict, Verdict::Regressed);
    assert_eq!(bw.key, "mem.bandwidth size=auto threads=1");
    let note = bw.note.as_deref().unwrap();
    assert!(
        note.contains("size ran as 33554432 in base, 50331648 in new"),
        "{note}"
    );
}

#[test]
fn latency_tails_are_judged_like_medians() {
    let mk = |p99: f64| {
        let mut m = metric("rtt", "s", Direction::Lower, &steady(20e-6));
        m.tails = Some(SampleTails {
            p99: Some(steady(p99)),
            p99_9: None,
        });
        report(vec![record("net.latency", 1, vec![m])])
    };
    let c = run(&mk(50e-6), &mk(80e-6));
    assert_eq!(
        verdicts(&c),
        [("rtt", Verdict::Unchanged), ("rtt.p99", Verdict::Regressed)]
    );
    // A rule for rtt covers its tail; one for the tail alone does too.
    let lax = CompareOptions {
        rules: vec![ThresholdRule::parse("net.latency:rtt.p99=100%").unwrap()],
        ..CompareOptions::default()
    };
    let c = compare(&mk(50e-6), &mk(80e-6), &lax).unwrap();
    assert!(c.passed());
}

#[test]
fn drift_between_rounds_widens_the_interval() {
    // Three rounds per side, tight inside, apart by ±6% between rounds;
    // the new median is 12% worse. Pooled as one round that would be a
    // certain regression; with the round as unit the interval is wide.
    let rounds = |scale: f64| {
        let mut v = Vec::new();
        for m in [1.0, 1.06, 0.94] {
            for k in 0..5 {
                v.push(scale * m * (1.0 + (k as f64 - 2.0) * 0.001));
            }
        }
        v
    };
    let mk = |scale: f64, with_rounds: bool| {
        let mut m = metric("time_per_op", "s", Direction::Lower, &rounds(scale));
        if with_rounds {
            m.rounds = Some(vec![5, 5, 5]);
        }
        report(vec![record("os.syscall", 1, vec![m])])
    };
    let pooled = run(&mk(1.0, false), &mk(1.12, false));
    assert_eq!(pooled.metrics[0].verdict, Verdict::Regressed);
    let by_round = run(&mk(1.0, true), &mk(1.12, true));
    let m = &by_round.metrics[0];
    assert!(m.drift);
    assert_eq!((m.base_rounds, m.new_rounds), (3, 3));
    assert_eq!(m.verdict, Verdict::Noisy, "{:?}", m.interval);
}

#[test]
fn quiet_threshold_is_the_smallest_that_raises_no_alarm() {
    let base = pair(1.0, 1.0);
    let new = pair(0.99, 1.02);
    let c = run(&base, &new);
    let (q, m) = c.noise_floor().unwrap();
    assert_eq!(m.metric, "time_per_op");
    let [lo, hi] = m.interval.unwrap();
    assert!(lo > 0.0 && q == lo, "{lo} {hi} {q}");
    assert!((m.noise.unwrap() - (hi - lo) / 2.0).abs() < 1e-15);
    let with = |t: f64| {
        let o = CompareOptions {
            threshold: t,
            ..CompareOptions::default()
        };
        compare(&base, &new, &o).unwrap().metrics[1].verdict
    };
    // At that threshold the pair raises no alarm; just below, it does.
    assert_ne!(with(q), Verdict::Regressed);
    assert_eq!(with(q * 0.99), Verdict::Regressed);
    // An interval that straddles zero raises no alarm at any threshold.
    let same = run(&base, &base);
    assert!(same.metrics.iter().all(|m| m.quiet_threshold == Some(0.0)));
}

#[test]
fn a_changed_unit_is_a_lost_metric() {
    let base = pair(1.0, 1.0);
    let mut new = pair(0.5, 1.0);
    new.records[0].metrics[0].unit = "op/s".into();
    let c = run(&base, &new);
    assert_eq!(c.problems.len(), 1);
    assert_eq!(c.problems[0].kind, ProblemKind::MissingMetric);
    assert!(
        c.problems[0].reason.contains("changed from B/s"),
        "{:?}",
        c.problems
    );
    assert!(!c.passed());
}

#[test]
fn a_baseline_without_requested_points_pairs_on_what_ran() {
    // A 1.1 baseline recorded the resolved size; the 1.2 report keeps
    // size=auto as requested and the same resolved value.
    let mut base = pair(1.0, 1.0);
    let mut new = pair(1.0, 1.0);
    base.records[0].params.set("size", Value::Int(32 << 20));
    new.records[0].params.set("size", Value::Int(32 << 20));
    let mut req = new.records[0].params.clone();
    req.set("size", Value::Str("auto".into()));
    new.records[0].requested = Some(req);
    let c = run(&base, &new);
    assert!(c.passed() && c.added.is_empty(), "{c:?}");
    assert_eq!(c.metrics.len(), 2);
}

#[test]
fn a_tail_that_vanished_is_a_lost_metric() {
    let mut with = metric("rtt", "s", Direction::Lower, &steady(20e-6));
    with.tails = Some(SampleTails {
        p99: Some(steady(50e-6)),
        p99_9: None,
    });
    let without = metric("rtt", "s", Direction::Lower, &steady(20e-6));
    let c = run(
        &report(vec![record("net.latency", 1, vec![with])]),
        &report(vec![record("net.latency", 1, vec![without])]),
    );
    assert_eq!(c.problems[0].kind, ProblemKind::MissingMetric);
    assert_eq!(c.problems[0].metric.as_deref(), Some("rtt.p99"));
    assert!(!c.passed());
}

#[test]
fn a_record_wide_relative_rule_leaves_percent_metrics_absolute() {
    let loss = |v: f64| {
        report(vec![record(
            "net.udp_throughput",
            1,
            vec![metric("loss", "%", Direction::Lower, &[v; 5])],
        )])
    };
    let o = CompareOptions {
        rules: vec![ThresholdRule::parse("net=10%").unwrap()],
        ..CompareOptions::default()
    };
    let c = compare(&loss(0.0), &loss(0.1), &o).unwrap();
    assert_eq!(c.metrics[0].verdict, Verdict::Unchanged);
    assert!(matches!(c.metrics[0].tolerance, Tolerance::Absolute { .. }));
}

#[test]
fn a_bad_threshold_is_an_error_not_a_pass() {
    let r = pair(1.0, 1.0);
    for t in [f64::NAN, -0.01, f64::INFINITY] {
        let o = CompareOptions {
            threshold: t,
            ..CompareOptions::default()
        };
        assert_eq!(compare(&r, &r, &o), Err(CompareError::Threshold));
    }
}

#[test]
fn schema_major_mismatch_is_an_error() {
    let base = pair(1.0, 1.0);
    let mut new = base.clone();
    new.schema_version = "2.0".into();
    assert!(matches!(
        compare(&base, &new, &CompareOptions::default()),
        Err(CompareError::SchemaMismatch { .. })
    ));
    new.schema_version = "1.0".into();
    assert!(compare(&base, &new, &CompareOptions::default()).is_ok());
}

#[test]
fn comparison_round_trips_through_json() {
    let c = run(&pair(1.0, 1.0), &pair(0.7, 1.3));
    let j = serde_json::to_string(&c).unwrap();
    assert!(j.contains(r#""verdict":"regressed""#), "{j}");
    assert!(j.contains(r#""passed":false"#), "{j}");
    let back: Comparison = serde_json::from_str(&j).unwrap();
    assert_eq!(back, c);
}

#[test]
fn context_differences_name_what_can_move_the_numbers() {
    let mut base = report(Vec::new());
    base.host.cpu.model = Some("Xeon 8480".into());
    base.host.memory_bytes = Some(64 << 30);
    base.host.build.profile = "release".into();
    base.records = pair(1.0, 1.0).records;
    let same = run(&base, &base.clone());
    assert!(
        same.context_differences.is_empty(),
        "{:?}",
        same.context_differences
    );

    let mut new = base.clone();
    new.host.cpu.model = Some("EPYC 9654".into());
    // 1% less memory is the same machine; unknown is not a difference.
    new.host.memory_bytes = Some((64u64 << 30) / 100 * 99);
    new.host.kernel = Some("6.1.0".into());
    new.host.build.profile = "debug".into();
    new.config.quick = true;
    let c = run(&base, &new);
    let d = c.context_differences.join("\n");
    assert!(d.contains("cpu.model: Xeon 8480 → EPYC 9654"), "{d}");
    assert!(
        d.contains("build.profile: release → debug (a debug build"),
        "{d}"
    );
    assert!(d.contains("--quick: false → true"), "{d}");
    assert!(!d.contains("memory") && !d.contains("kernel"), "{d}");
    assert_eq!(c.context_differences.len(), 3, "{d}");
    assert!(c.passed());
    new.host.memory_bytes = Some(32 << 30);
    let d = run(&base, &new).context_differences.join("\n");
    assert!(d.contains("memory: 64GiB → 32GiB"), "{d}");
}
