use super::*;
use benchsuite_core::bench::Direction;
use benchsuite_core::host::Host;
use benchsuite_core::param::Value;
use benchsuite_core::results::{RunConfigRecord, SampleTails};

/// Options judging the noise inside the runs alone (no prior between-run
/// CV): what these tests check is that machinery; the history and the
/// prior have their own tests below.
fn within_only() -> CompareOptions {
    CompareOptions {
        between_run: BetweenRun::Cv(0.0),
        ..CompareOptions::default()
    }
}

/// Ten samples around `center` with a ±1% spread (CV ≈ 0.6%).
fn steady(center: f64) -> Vec<f64> {
    (0..10)
        .map(|i| center * (1.0 + (i as f64 - 4.5) * 0.002))
        .collect()
}

fn metric(name: &str, unit: &str, direction: Direction, samples: &[f64]) -> Metric {
    Metric::from_samples(name, unit, direction, samples).unwrap()
}

fn record(id: &str, threads: u64, metrics: Vec<Metric>) -> Record {
    let mut params = Point::default();
    params.set("threads", Value::Int(threads));
    Record {
        iters_per_sample: Some(1000),
        ..Record::ok(id, params, metrics)
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
    compare(base, new, &within_only()).unwrap()
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
        ..within_only()
    };
    let c = compare(&pair(1.0, 1.0), &pair(0.98, 1.02), &strict).unwrap();
    assert_eq!(c.count(Verdict::Regressed), 2);
}

#[test]
fn a_change_whose_interval_reaches_inside_the_threshold_is_undecided() {
    // CV 50%, n = 3, median 40% worse: the interval is far wider than 5%.
    let mk = |v: [f64; 3]| {
        report(vec![record(
            "disk.io",
            1,
            vec![metric("bw", "B/s", Direction::Higher, &v)],
        )])
    };
    let c = run(&mk([0.5, 1.0, 1.5]), &mk([0.3, 0.6, 0.9]));
    assert_eq!(verdicts(&c), [("bw", Verdict::Undecided)]);
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
        ..within_only()
    };
    assert!(
        compare(&mk(&[1.0, 1.0, 1.0]), &mk(&[0.5, 0.5]), &lax)
            .unwrap()
            .passed()
    );
}

#[test]
fn a_quantised_metric_is_not_certain_of_one_step() {
    // The same value in every sample on both sides (a timer's resolution
    // at one tick): half the step is the least standard deviation it is
    // judged with, so one step is undecided, not a certain regression.
    let mk = |v: f64| {
        report(vec![record(
            "os.timer",
            1,
            vec![metric("resolution", "s", Direction::Lower, &[v, v, v])],
        )])
    };
    let c = run(&mk(20e-9), &mk(40e-9));
    assert_eq!(c.metrics[0].verdict, Verdict::Undecided);
    assert_eq!(c.outcome(), Outcome::Undecided);
    assert_eq!(
        run(&mk(20e-9), &mk(20e-9)).metrics[0].verdict,
        Verdict::Unchanged
    );
    // Real spread, however small, is judged as spread: a halving of a
    // metric that moved by 0.1% is a regression.
    let mk3 = |v: f64| {
        report(vec![record(
            "cpu.flops",
            1,
            vec![metric(
                "flops",
                "flop/s",
                Direction::Higher,
                &[v, v * 1.001, v * 0.999],
            )],
        )])
    };
    assert_eq!(
        run(&mk3(1.0), &mk3(0.5)).metrics[0].verdict,
        Verdict::Regressed
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
    assert!(c.metrics[0].change_text().starts_with("+0.20pp ["));
    let c = run(&zero, &mk([3.0, 3.1, 2.9, 3.0, 3.05]));
    assert_eq!(verdicts(&c), [("loss", Verdict::Regressed)]);
    // A relative threshold on a zero baseline cannot be judged.
    let rel = CompareOptions {
        rules: vec![ThresholdRule::parse("net:loss=5%").unwrap()],
        ..within_only()
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
        ..within_only()
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
                ..within_only()
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
            ..Allow::default()
        },
        ..within_only()
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
            ..Allow::default()
        },
        ..within_only()
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
    let e = compare(&a, &b, &within_only()).unwrap_err();
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
        ..within_only()
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
    assert_eq!(m.verdict, Verdict::Undecided, "{:?}", m.interval);
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
            ..within_only()
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
        ..within_only()
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
            ..within_only()
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
        compare(&base, &new, &within_only()),
        Err(CompareError::SchemaMismatch { .. })
    ));
    new.schema_version = "1.0".into();
    assert!(compare(&base, &new, &within_only()).is_ok());
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
    assert!(d.contains("quick: false → true"), "{d}");
    assert!(!d.contains("memory") && !d.contains("kernel"), "{d}");
    assert_eq!(c.context_differences.len(), 3, "{d}");
    assert!(c.passed());
    new.host.memory_bytes = Some(32 << 30);
    let d = run(&base, &new).context_differences.join("\n");
    assert!(d.contains("memory: 64GiB → 32GiB"), "{d}");

    // A guest whose idle vCPUs poll before halting and one whose halt at
    // once differ; a report without the field (older) does not.
    let guest = |ns| benchsuite_core::host::IdleInfo {
        driver: Some("haltpoll".into()),
        governor: Some("haltpoll".into()),
        halt_poll_ns: Some(ns),
        states: vec!["POLL".into(), "haltpoll idle".into()],
    };
    let (mut a, mut b) = (base.clone(), base.clone());
    a.host.cpu.idle = Some(guest(200_000));
    b.host.cpu.idle = Some(guest(0));
    let d = run(&a, &b).context_differences.join("\n");
    assert!(
        d.contains("cpu.idle: haltpoll driver, haltpoll governor, polls 200000 ns before halting → haltpoll driver, haltpoll governor, polls 0 ns before halting (what waking"),
        "{d}"
    );
    assert!(run(&base, &b).context_differences.is_empty());
}

// ---------------------------------------------------------------------------
// Fleets: host by host.

/// A host's report: `pair(bw, lat)` on `name`, at `rank` under a launcher.
fn host(name: &str, rank: Option<u64>, bw: f64, lat: f64) -> Report {
    let mut r = pair(bw, lat);
    r.host.hostname = Some(name.into());
    r.cluster = rank.map(|rank| benchsuite_core::cluster::Cluster {
        launcher: benchsuite_core::cluster::Launcher::Slurm,
        job: Some("7".into()),
        step: None,
        rank,
        world_size: 2,
        node: Some(name.into()),
        local_rank: Some(0),
    });
    r
}

fn fleet_of(hosts: &[(&str, f64)]) -> Vec<Report> {
    hosts
        .iter()
        .map(|(n, bw)| host(n, None, *bw, 1.0))
        .collect()
}

#[test]
fn fleets_compare_host_by_host_and_fail_where_one_host_regressed() {
    let base = fleet_of(&[("node1", 1.0), ("node2", 1.0), ("node3", 1.0)]);
    let same = compare_fleets(&base, &base, &within_only()).unwrap();
    assert!(same.passed(), "{}", same.summary());
    assert_eq!(same.summary(), "fleet gate passed: 3 hosts compared");
    // node2 loses 30% of its bandwidth: that host, and only it, fails.
    let new = fleet_of(&[("node1", 1.0), ("node2", 0.7), ("node3", 1.0)]);
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    assert!(!c.passed());
    let failed: Vec<&str> = c.failed_hosts().map(|h| h.host.as_str()).collect();
    assert_eq!(failed, ["node2"]);
    let node2 = &c.hosts[1].comparison;
    assert_eq!(
        verdicts(node2),
        [
            ("bandwidth", Verdict::Regressed),
            ("time_per_op", Verdict::Unchanged)
        ]
    );
    assert_eq!(
        c.summary(),
        "fleet gate FAILED: 3 hosts compared, 1 failed (node2)"
    );
    assert!(
        c.gate_lines()[0].starts_with("FAIL node2: gate FAILED: 1 regressed"),
        "{:?}",
        c.gate_lines()
    );
    // The host order of the new fleet does not matter.
    let mut shuffled = new.clone();
    shuffled.reverse();
    let c2 = compare_fleets(&base, &shuffled, &within_only()).unwrap();
    assert_eq!(c2, c);
}

#[test]
fn a_missing_host_fails_the_fleet_gate_unless_allowed_an_added_one_is_listed() {
    let base = fleet_of(&[("node1", 1.0), ("node2", 1.0)]);
    let new = fleet_of(&[("node1", 1.0), ("node9", 1.0)]);
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    assert!(!c.passed());
    assert_eq!(
        (c.missing.clone(), c.added.clone()),
        (vec!["node2".to_string()], vec!["node9".to_string()])
    );
    assert_eq!(
        c.gate_lines(),
        ["FAIL node2: missing in new: in the base fleet, absent from the new one"]
    );
    let mut options = within_only();
    options.allow.missing = true;
    let c = compare_fleets(&base, &new, &options).unwrap();
    assert!(c.passed(), "{}", c.summary());
    assert_eq!(
        c.summary(),
        "fleet gate passed: 1 host compared, 1 missing in new (node2), allowed, 1 added in new (node9)"
    );
    // No host in common at all: an error naming both sides' hosts.
    let other = fleet_of(&[("node7", 1.0)]);
    let e = compare_fleets(&base, &other, &within_only()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the two fleets have no host in common (base: node1, node2; new: node7): compare fleets of the same hosts"
    );
    // An empty fleet on either side is an error, never a passed gate.
    for (b, n, side) in [(&[][..], &base[..], "base"), (&base[..], &[][..], "new")] {
        let e = compare_fleets(b, n, &within_only()).unwrap_err();
        assert!(
            matches!(e, CompareError::EmptyFleet { side: s } if s == side),
            "{e}"
        );
    }
}

#[test]
fn hosts_pair_by_label_then_by_name_when_the_launcher_renumbered_them() {
    // Same node names, ranks swapped between the two jobs.
    let base = vec![host("a", Some(0), 1.0, 1.0), host("b", Some(1), 1.0, 1.0)];
    let new = vec![host("b", Some(0), 1.0, 1.0), host("a", Some(1), 0.7, 1.0)];
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    let names: Vec<String> = c.hosts.iter().map(HostComparison::name).collect();
    assert_eq!(names, ["a-r0 (new: a-r1)", "b-r1 (new: b-r0)"]);
    // The slow one is a, wherever its rank went.
    let failed: Vec<&str> = c.failed_hosts().map(|h| h.host.as_str()).collect();
    assert_eq!(failed, ["a-r0"]);
    // Two tasks of one node on a side: labels only, no guessing.
    let base = vec![host("a", Some(0), 1.0, 1.0), host("a", Some(1), 1.0, 1.0)];
    let new = vec![host("a", Some(2), 1.0, 1.0), host("a", Some(1), 1.0, 1.0)];
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    assert_eq!((c.hosts.len(), c.missing.len(), c.added.len()), (1, 1, 1));
}

#[test]
fn a_host_pair_that_cannot_be_compared_fails_the_gate_naming_the_host() {
    let base = fleet_of(&[("node1", 1.0), ("node2", 1.0)]);
    let mut new = base.clone();
    new[1].schema_version = "2.0".into();
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    assert!(!c.passed());
    assert_eq!(c.hosts.len(), 1);
    assert_eq!(c.incomparable.len(), 1);
    assert_eq!(c.incomparable[0].host, "node2");
    assert!(
        c.incomparable[0]
            .why
            .starts_with("cannot compare schema version 1.2 with 2.0"),
        "{:?}",
        c.incomparable
    );
    assert!(
        c.summary()
            .ends_with("1 host compared, 1 not comparable (node2)")
    );
    // No host pair comparable at all: an error naming the first host.
    new[0].schema_version = "2.0".into();
    let e = compare_fleets(&base, &new, &within_only()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("host node1: cannot compare schema version 1.2 with 2.0"),
        "{e}"
    );
    // A rule is checked against every host: one that covers what only one
    // host ran is fine.
    let mut new = base.clone();
    new[0].records[1].id = "os.fork".into();
    let mut options = CompareOptions {
        rules: vec![ThresholdRule::parse("os.fork=10%").unwrap()],
        ..within_only()
    };
    assert!(compare_fleets(&base, &new, &options).is_ok());
    options.rules = vec![ThresholdRule::parse("disk.*=10%").unwrap()];
    assert!(compare_fleets(&base, &new, &options).is_err());
}

#[test]
fn a_fleet_comparison_is_written_as_table_json_and_markdown() {
    let base = fleet_of(&[("node1", 1.0), ("node2", 1.0)]);
    let new = fleet_of(&[("node1", 1.0), ("node2", 0.7)]);
    let c = compare_fleets(&base, &new, &within_only()).unwrap();
    let text = |f| {
        let mut out = Vec::new();
        write_fleet_comparison(f, &c, &mut out).map(|_| String::from_utf8(out).unwrap())
    };
    let t = text(crate::export::Format::Table).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("FAIL node2: gate FAILED"), "{t}");
    let h1 = t.find("== host node1 ==").unwrap();
    let h2 = t.find("== host node2 ==").unwrap();
    assert!(h1 < h2, "{t}");
    // Each host's own table, its regression under its own name.
    assert!(t[h2..].contains("]  regressed"), "{t}");
    assert!(!t[h1..h2].contains("]  regressed"), "{t}");
    assert_eq!(
        *lines.last().unwrap(),
        "fleet gate FAILED: 2 hosts compared, 1 failed (node2)"
    );
    let j = text(crate::export::Format::Json).unwrap();
    let back: FleetComparison = serde_json::from_str(&j).unwrap();
    assert_eq!(back, c);
    let m = text(crate::export::Format::Markdown).unwrap();
    assert!(
        m.starts_with("**❌ fleet gate FAILED") && m.contains("\n### node2\n"),
        "{m}"
    );
    let e = text(crate::export::Format::Csv).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

// The history gate: several baselines of one testbed.

/// One run of a `cpu.flops` record: three rounds of three samples, each
/// round at its own `rounds[i]` × 100 GFLOP/s with a ±0.5% spread.
fn run_of(rounds: [f64; 3]) -> Report {
    let mut samples = Vec::new();
    for r in rounds {
        samples.extend([r * 0.995e11, r * 1e11, r * 1.005e11]);
    }
    let mut m = metric("flops", "flop/s", Direction::Higher, &samples);
    m.rounds = Some(vec![3, 3, 3]);
    m.role = Some(MetricRole::Headline);
    report(vec![record("cpu.flops", 2, vec![m])])
}

fn history(runs: &[Report]) -> Vec<Baseline<'_>> {
    runs.iter()
        .map(|r| Baseline {
            name: "h",
            report: r,
        })
        .collect()
}

/// Runs whose medians wander by about ±1% between runs.
fn wandering(n: usize) -> Vec<Report> {
    (0..n)
        .map(|i| {
            let w = 1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0) / 2.0;
            run_of([w, w * 1.002, w * 0.998])
        })
        .collect()
}

#[test]
fn a_history_predicts_one_more_run_and_catches_a_real_change() {
    let runs = wandering(6);
    let h = history(&runs);
    let opts = CompareOptions::default();
    // Another run like them: unchanged, judged with their spread.
    let same = run_of([1.004, 1.0, 1.002]);
    let c = compare_history(&h, &same, &opts).unwrap();
    assert!(c.passed(), "{}", c.summary());
    let m = &c.metrics[0];
    assert_eq!((m.history_runs, c.rule), (6, GateRule::Band));
    assert_eq!(m.between_source, Some(BetweenSource::History));
    let cv = m.between_cv.unwrap();
    assert!(cv > 0.003 && cv < 0.02, "{cv}");
    // 12% slower in every round: beyond the band, the threshold and the
    // reach of every level the history was seen at.
    let slow = run_of([0.88, 0.88, 0.881]);
    let c = compare_history(&h, &slow, &opts).unwrap();
    assert!(!c.passed());
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    assert_eq!(c.family, 1);
    // The newest baseline is the centre's neighbour, not the only one: the
    // base shown is the history's centre.
    assert!((c.metrics[0].base_median / 1e11 - 1.0).abs() < 0.01);
}

#[test]
fn a_state_the_history_holds_is_undecided_and_most_rounds_decide() {
    // A VM's two states: rounds at 100 or at 75 GFLOP/s, for minutes.
    let mut runs = wandering(5);
    runs.push(run_of([0.75, 0.75, 1.0]));
    runs.push(run_of([1.0, 0.75, 0.75]));
    let h = history(&runs);
    // A run at the slow level in every round: the history holds that
    // state, so the run alone cannot tell a regression into it from a
    // visit: undecided (never unchanged), for the pairs to decide.
    let slow = run_of([0.75, 0.752, 0.749]);
    let c = compare_history(&h, &slow, &CompareOptions::default()).unwrap();
    assert_eq!(c.metrics[0].verdict, Verdict::Undecided, "{}", c.summary());
    assert_eq!(c.outcome(), Outcome::Undecided);
    assert!(c.passed());
    assert!(
        c.metrics[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("3 of new's 3 rounds sit at a level"),
        "{:?}",
        c.metrics[0].note
    );
    // Without the slow runs in the history, the same run is a regression.
    let fast = wandering(5);
    let c = compare_history(&history(&fast), &slow, &CompareOptions::default()).unwrap();
    assert_eq!(c.outcome(), Outcome::Failed);
    // A slowdown in two of three rounds is not excused by the third.
    let mixed = run_of([0.75, 1.0, 0.75]);
    let c = compare_history(&history(&fast), &mixed, &CompareOptions::default()).unwrap();
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed, "{}", c.summary());
    // One slow round of three moves nothing.
    let glitch = run_of([1.0, 0.75, 1.001]);
    let c = compare_history(&history(&fast), &glitch, &CompareOptions::default()).unwrap();
    assert_eq!(c.outcome(), Outcome::Passed, "{}", c.summary());
}

#[test]
fn the_history_says_when_its_runs_hold_two_states() {
    let mut runs = wandering(3);
    runs.push(run_of([0.6, 0.6, 0.6]));
    runs.push(run_of([0.6, 0.61, 0.6]));
    let c = compare_history(
        &history(&runs),
        &run_of([1.0; 3]),
        &CompareOptions::default(),
    )
    .unwrap();
    let note = c.metrics[0].note.as_deref().unwrap_or_default();
    assert!(
        note.contains("hold two states") && note.contains("Gflop/s"),
        "{note}"
    );
}

#[test]
fn one_baseline_uses_the_prior_and_says_so() {
    let base = run_of([1.0, 1.0, 1.0]);
    // 8% slower: against one baseline and cpu's 5% prior between runs,
    // not a certain regression; with the prior switched off, it is.
    let new = run_of([0.92, 0.92, 0.92]);
    let c = compare(&base, &new, &CompareOptions::default()).unwrap();
    let m = &c.metrics[0];
    assert_eq!(m.between_source, Some(BetweenSource::Prior));
    assert!(
        (m.between_cv.unwrap() - super::prior::prior_between_cv("cpu.flops", false)).abs() < 1e-9
    );
    assert!(c.passed(), "{}", c.summary());
    assert_eq!(c.rule, GateRule::Interval);
    let c = compare(&base, &new, &within_only()).unwrap();
    assert!(!c.passed(), "{}", c.summary());
}

#[test]
fn holm_shares_alpha_over_the_family() {
    // Four tests: the smallest p against alpha/4, the next alpha/3 ...
    // until one fails; the rest keep the level of the first failure.
    let l = holm_levels(&[0.001, 0.5, 0.012, 0.02], 0.05);
    assert_eq!(l[0], 0.05 / 4.0);
    assert_eq!(l[2], 0.05 / 3.0);
    assert_eq!(l[3], 0.05 / 2.0);
    assert_eq!(l[1], 0.05);
    // Once one fails, the rest keep its level: 0.03 > 0.05/2 stops the
    // step-down, and 0.04 keeps 0.05/2 although 0.04 < 0.05/1.
    let l = holm_levels(&[0.001, 0.03, 0.04], 0.05);
    assert_eq!(l, [0.05 / 3.0, 0.05 / 2.0, 0.05 / 2.0]);
    assert!(holm_levels(&[], 0.05).is_empty());
    assert_eq!(holm_levels(&[0.9], 0.05), [0.05]);
}

#[test]
fn derived_and_spread_metrics_are_shown_but_do_not_fail_the_gate() {
    let mk = |scale: f64| {
        let mut head = metric("throughput", "B/s", Direction::Higher, &steady(1e9));
        head.role = Some(MetricRole::Headline);
        let mut bits = metric(
            "throughput_bits",
            "bit/s",
            Direction::Higher,
            &steady(8e9 * scale),
        );
        bits.role = Some(MetricRole::Derived);
        let mut sd = metric("trial_stddev", "s", Direction::Lower, &steady(1e-6 / scale));
        sd.role = Some(MetricRole::Spread);
        report(vec![record("net.tcp_throughput", 1, vec![head, bits, sd])])
    };
    let (base, new) = (mk(1.0), mk(0.5));
    let c = compare(&base, &new, &within_only()).unwrap();
    assert!(c.passed(), "{}", c.summary());
    assert_eq!(c.family, 1);
    let bits = c
        .metrics
        .iter()
        .find(|m| m.metric == "throughput_bits")
        .unwrap();
    assert!(!bits.gated && bits.verdict == Verdict::Regressed);
    assert!(c.summary().contains("2 not gated"), "{}", c.summary());
    // A rule naming a metric gates it.
    let named = CompareOptions {
        rules: vec![ThresholdRule::parse("net.tcp_throughput:trial_stddev=10%").unwrap()],
        ..within_only()
    };
    let c = compare(&base, &new, &named).unwrap();
    assert!(!c.passed());
    assert_eq!(c.family, 2);
}

#[test]
fn a_metric_that_repeats_another_is_judged_once() {
    // stream_min with one stream is throughput: the same samples.
    let mk = |k: f64| {
        let s: Vec<f64> = steady(1e9).iter().map(|x| x * k).collect();
        let mut a = metric("throughput", "B/s", Direction::Higher, &s);
        a.role = Some(MetricRole::Headline);
        let mut b = metric("stream_min", "B/s", Direction::Higher, &s);
        b.role = Some(MetricRole::Secondary);
        report(vec![record("net.tcp_throughput", 1, vec![a, b])])
    };
    let c = compare(&mk(1.0), &mk(0.7), &within_only()).unwrap();
    let twin = &c.metrics[1];
    assert_eq!(twin.role, Some(MetricRole::Derived));
    assert!(!twin.gated);
    assert!(
        twin.note
            .as_deref()
            .unwrap()
            .contains("the same samples as throughput")
    );
    assert_eq!(c.family, 1);
}

#[test]
fn a_report_without_roles_takes_its_first_metric_as_the_headline() {
    let c = run(&pair(1.0, 1.0), &pair(1.0, 1.0));
    assert!(
        c.metrics
            .iter()
            .all(|m| m.role == Some(MetricRole::Headline) && m.gated)
    );
}

#[test]
fn tails_use_their_own_threshold() {
    let mk = |tail: f64| {
        let mut m = metric("rtt", "s", Direction::Lower, &steady(10e-6));
        m.tails = Some(SampleTails {
            p99: Some(steady(20e-6 * tail)),
            p99_9: None,
        });
        report(vec![record("net.latency", 1, vec![m])])
    };
    // A p99 15% worse with a certain interval: beyond 5%, within the
    // tails' 25%.
    let c = compare(&mk(1.0), &mk(1.15), &within_only()).unwrap();
    let p99 = c.metrics.iter().find(|m| m.metric == "rtt.p99").unwrap();
    assert_eq!(p99.tolerance, Tolerance::Relative(TAIL_THRESHOLD));
    assert_eq!(p99.verdict, Verdict::Unchanged);
    let c = compare(&mk(1.0), &mk(1.4), &within_only()).unwrap();
    assert!(!c.passed());
}

#[test]
fn baselines_of_another_testbed_are_left_out_unless_allowed() {
    let mut runs = wandering(4);
    runs[1].host.cpu.model = Some("Other CPU".into());
    let mut new = run_of([1.0; 3]);
    new.host.cpu.model = Some("AMD EPYC".into());
    for r in runs.iter_mut().filter(|r| r.host.cpu.model.is_none()) {
        r.host.cpu.model = Some("AMD EPYC".into());
    }
    let c = compare_history(&history(&runs), &new, &CompareOptions::default()).unwrap();
    assert_eq!(c.excluded.len(), 1, "{:?}", c.excluded);
    assert!(
        c.excluded[0].contains("cpu.model Other CPU"),
        "{:?}",
        c.excluded
    );
    assert_eq!(c.metrics[0].history_runs, 3);
    let mixed = CompareOptions {
        allow: Allow {
            mixed_hosts: true,
            ..Allow::default()
        },
        ..CompareOptions::default()
    };
    let c = compare_history(&history(&runs), &new, &mixed).unwrap();
    assert_eq!((c.excluded.len(), c.metrics[0].history_runs), (0, 4));
    // None of this testbed: an error that says what to do.
    for r in &mut runs {
        r.host.cpu.model = Some("Other CPU".into());
    }
    let e = compare_history(&history(&runs), &new, &CompareOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("`CompareOptions::allow.mixed_hosts`"),
        "{e}"
    );
    assert_eq!(
        compare_history(&[], &new, &CompareOptions::default()).unwrap_err(),
        CompareError::NoBaseline
    );
    // A baseline of another schema major is named.
    let mut old = run_of([1.0; 3]);
    old.schema_version = "0.9".into();
    let runs = [run_of([1.0; 3]), old];
    let h = [
        Baseline {
            name: "a.json",
            report: &runs[0],
        },
        Baseline {
            name: "old.json",
            report: &runs[1],
        },
    ];
    let e = compare_history(&h, &new, &CompareOptions::default()).unwrap_err();
    assert!(
        e.to_string().starts_with("old.json: cannot compare schema"),
        "{e}"
    );
}

#[test]
fn a_capacity_search_step_the_new_search_did_not_try_is_not_missing() {
    let base = crate::export::fixtures::capacity_report();
    let mut new = base.clone();
    // The new search bisected elsewhere: its last step is at another rate.
    let last = new.records.len() - 2;
    new.records[last].params.set("rate", Value::Int(3300));
    let c = compare(&base, &new, &CompareOptions::default()).unwrap();
    assert!(c.passed, "{:?}", c.problems);
    assert!(
        c.not_comparable
            .iter()
            .any(|n| n.reason.contains("capacity search") && n.key.contains("rate=3464")),
        "{:?}",
        c.not_comparable
    );
    // A plain record that went missing still fails the gate.
    let mut plain = base.clone();
    for r in &mut plain.records {
        if let Some(l) = &mut r.load {
            l.step = None;
        }
    }
    let mut gone = plain.clone();
    gone.records.remove(last);
    let c = compare(&plain, &gone, &CompareOptions::default()).unwrap();
    assert!(!c.passed);
}

#[test]
fn a_parameter_only_one_build_has_still_pairs_the_one_record_that_agrees() {
    // The base predates a parameter (`rate`); the new report has it at
    // its default on every record.
    let base = crate::export::fixtures::report();
    let mut new = base.clone();
    for r in &mut new.records {
        r.params.set("rate", Value::Str("off".into()));
        r.requested = None;
    }
    let c = compare(&base, &new, &CompareOptions::default()).unwrap();
    assert!(c.passed, "{:?}", c.problems);
    assert!(c.problems.is_empty());
    // Two new records agree with one base record once the parameter is set
    // aside: ambiguous, so nothing pairs on it and the base record is missing.
    let mut two = new.clone();
    let mut extra = two.records[1].clone();
    extra.params.set("rate", Value::Int(5000));
    two.records.push(extra);
    let c = compare(&base, &two, &CompareOptions::default()).unwrap();
    assert!(!c.passed);
}

/// `n` interleaved rounds of `cpu.flops` pooled, each round's three
/// samples around `level(i)` (a wandering machine: the rounds move by
/// ±4% together on both sides).
fn pooled_rounds(n: usize, level: impl Fn(usize) -> f64) -> Report {
    let mut samples = Vec::new();
    for i in 0..n {
        let r = level(i) * (1.0 + 0.04 * ((i * 7 % 5) as f64 - 2.0) / 2.0);
        samples.extend([r * 0.997e11, r * 1e11, r * 1.003e11]);
    }
    let mut m = metric("flops", "flop/s", Direction::Higher, &samples);
    m.rounds = Some(vec![3; n]);
    m.role = Some(MetricRole::Headline);
    let mut r = report(vec![record("cpu.flops", 2, vec![m])]);
    r.config.rounds = n;
    r
}

#[test]
fn a_confirmation_decides_what_the_screen_left_open_and_flags_each_problem_once() {
    // The screen: one baseline with a 5% prior between runs leaves a
    // steady metric open.
    let prior = CompareOptions {
        between_run: BetweenRun::Cv(0.05),
        ..CompareOptions::default()
    };
    let screen = compare(&run_of([1.0, 1.0, 1.0]), &run_of([1.0, 1.0, 1.0]), &prior).unwrap();
    assert_eq!(confirm::open(&screen).len(), 1, "{}", screen.summary());
    let o = CompareOptions::default();
    // Two copies of one build: the pairs cancel the wandering; unchanged.
    let same = confirm::judge_look(
        &screen,
        &pooled_rounds(10, |_| 1.0),
        &pooled_rounds(10, |_| 1.0),
        &o,
        2,
        false,
    )
    .unwrap();
    let m = &same.metrics[0];
    assert_eq!(
        (m.verdict, m.stage, m.pairs),
        (Verdict::Unchanged, Some(Stage::Confirm), Some(10))
    );
    assert_eq!(same.outcome(), Outcome::Passed);
    assert!(confirm::open(&same).is_empty());
    // 12% slower in every pair: regressed, although the machine wandered
    // by more than the threshold between rounds.
    let slow = confirm::judge_look(
        &screen,
        &pooled_rounds(10, |_| 1.0),
        &pooled_rounds(10, |_| 0.88),
        &o,
        2,
        false,
    )
    .unwrap();
    assert_eq!(slow.metrics[0].verdict, Verdict::Regressed);
    assert_eq!(slow.outcome(), Outcome::Failed);
    // Too few pairs to tell at an intermediate look: still open, the
    // screen's verdict kept; at the last look, undecided and closed.
    let mixed = |i: usize| if i.is_multiple_of(2) { 0.96 } else { 1.04 };
    let early = confirm::judge_look(
        &screen,
        &pooled_rounds(3, |_| 1.0),
        &pooled_rounds(3, mixed),
        &o,
        3,
        false,
    )
    .unwrap();
    assert_eq!(early.metrics[0].stage, None);
    let last = confirm::judge_look(
        &screen,
        &pooled_rounds(3, |_| 1.0),
        &pooled_rounds(3, mixed),
        &o,
        3,
        true,
    )
    .unwrap();
    assert_eq!(
        (last.metrics[0].verdict, last.metrics[0].stage),
        (Verdict::Undecided, Some(Stage::Confirm))
    );
    // A record that failed in the rounds is the new build's problem, once,
    // however many looks see it.
    let mut failed = pooled_rounds(5, |_| 1.0);
    failed.records[0].status = Status::Failed;
    failed.records[0].reason = Some("prepare: EPERM".into());
    failed.records[0].metrics.clear();
    let one =
        confirm::judge_look(&screen, &pooled_rounds(5, |_| 1.0), &failed, &o, 2, false).unwrap();
    let two = confirm::judge_look(&one, &pooled_rounds(5, |_| 1.0), &failed, &o, 2, true).unwrap();
    assert_eq!(two.problems.len(), 1, "{:?}", two.problems);
    assert!(
        two.problems[0]
            .reason
            .starts_with("in the interleaved rounds: ")
    );
    assert_eq!(two.outcome(), Outcome::Failed);
    // The looks: 5, 10, ... and the budget.
    assert_eq!(confirm::looks(15), [5, 10, 15]);
    assert_eq!(confirm::looks(20), [5, 10, 20]);
    assert_eq!(confirm::looks(3), [3]);
}

/// Sample sets at the ends of `f64` (issue 37, L3): ±1e308 and ±MAX (their
/// sums, spreads and differences overflow), subnormals (their variances
/// underflow, their quotients overflow), zero variance, and ordinary data
/// beside each of them.
fn extreme_sample_sets() -> Vec<Vec<f64>> {
    vec![
        vec![1e308, -1e308, 1e308, -1e308, 1e308],
        vec![f64::MAX; 5],
        vec![f64::MAX, f64::MIN, f64::MAX],
        vec![-1e308, -1e308, -1e308, 1e308],
        vec![1e308, 1e-308, 1e308, 1e-308],
        vec![f64::MIN_POSITIVE, 1e308, 1.0],
        vec![5e-324, 1e-320, 2.5e-322, 5e-324],
        vec![-5e-324, 5e-324, 0.0, -0.0],
        vec![0.0; 6],
        vec![1.0; 6],
        vec![-1.0; 4],
        steady(10e9),
        steady(-3.0),
    ]
}

/// Every judged metric shows finite numbers; one that cannot be judged
/// says why, and a gated one is a problem of the gate.
fn assert_sound(c: &Comparison, what: &str) {
    for m in &c.metrics {
        if m.verdict == Verdict::NotJudged {
            assert!(
                m.note.is_some(),
                "{what}: {} not judged without a reason",
                m.metric
            );
            if m.gated {
                assert!(
                    c.problems.iter().any(|p| p.kind == ProblemKind::NotJudged
                        && p.metric.as_ref() == Some(&m.metric)),
                    "{what}: {} not judged is no problem: {:?}",
                    m.metric,
                    c.problems
                );
            }
            continue;
        }
        let mut numbers = vec![m.base_median, m.new_median];
        numbers.extend(m.change);
        numbers.extend(m.interval.into_iter().flatten());
        numbers.extend(m.noise);
        numbers.extend(m.quiet_threshold);
        numbers.extend(m.unchanged_above);
        assert!(
            numbers.iter().all(|x| x.is_finite()),
            "{what}: {} {:?} shows {numbers:?}",
            m.metric,
            m.verdict
        );
    }
    // The comparison's JSON reads back (a NaN or an infinity would be
    // written as null).
    let text = serde_json::to_string(c).unwrap();
    let back: Comparison = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what}: the JSON does not read back: {e}"));
    assert_eq!(back.metrics.len(), c.metrics.len());
}

#[test]
fn samples_at_the_ends_of_f64_are_judged_or_not_judged_never_a_panic() {
    let sets = extreme_sample_sets();
    let one = |samples: &[f64], rounds: bool| {
        let mut m = metric("time_per_op", "s", Direction::Lower, samples);
        if rounds {
            m.rounds = Some(vec![1; samples.len()]);
            m.tails = Some(SampleTails {
                p99: Some(samples.iter().map(|x| x * 0.5).collect()),
                p99_9: None,
            });
        }
        report(vec![record("os.syscall", 1, vec![m])])
    };
    let absolute = CompareOptions {
        rules: vec![ThresholdRule::parse("os.syscall:time_per_op=1s").unwrap()],
        ..within_only()
    };
    let paired = CompareOptions {
        paired: true,
        ..CompareOptions::default()
    };
    for b in &sets {
        for n in &sets {
            let what = format!("{b:?} → {n:?}");
            for rounds in [false, true] {
                let (base, new) = (one(b, rounds), one(n, rounds));
                for options in [
                    &within_only(),
                    &CompareOptions::default(),
                    &absolute,
                    &paired,
                ] {
                    let c = compare(&base, &new, options).unwrap();
                    assert_sound(&c, &what);
                }
                let mut older = one(&steady(1.0), rounds);
                older.started_at = "2025-01-01T00:00:00Z".into();
                let history = [
                    Baseline {
                        name: "older",
                        report: &older,
                    },
                    Baseline {
                        name: "b",
                        report: &new,
                    },
                    Baseline {
                        name: "a",
                        report: &base,
                    },
                ];
                for options in [&CompareOptions::default(), &absolute] {
                    let c = compare_history(&history, &new, options).unwrap();
                    assert_sound(&c, &format!("history {what}"));
                }
            }
        }
    }
}

/// A side without samples has no median: NaN in memory, `null` in JSON,
/// and the comparison's JSON reads back (it did not: `null` is no f64).
#[test]
fn a_comparison_with_a_side_without_samples_reads_back_from_its_json() {
    let base = report(vec![record(
        "mem.bandwidth",
        1,
        vec![metric("bandwidth", "B/s", Direction::Higher, &steady(1e9))],
    )]);
    let mut new = base.clone();
    new.records[0].metrics[0].samples.clear();
    let c = compare(&base, &new, &within_only()).unwrap();
    let m = &c.metrics[0];
    assert!(
        m.new_median.is_nan() && m.verdict == Verdict::NotJudged,
        "{m:?}"
    );
    let text = serde_json::to_string(&c).unwrap();
    assert!(text.contains("\"new_median\":null"), "{text}");
    let back: Comparison = serde_json::from_str(&text).unwrap();
    assert!(back.metrics[0].new_median.is_nan());
    assert_eq!(back.metrics[0].base_median, m.base_median);
}
