use super::*;
use benchsuite_core::stats::Summary;

/// The quick pass, as run number `i` of a nightly job at commit `c{i}…`,
/// with `mem.bandwidth`'s samples scaled by `by` and every other metric
/// wobbling by a deterministic ±1%.
fn run(i: usize, by: f64) -> (String, Report) {
    let mut r = Report::from_json(
        include_str!("../export/testdata/quick-pass.json"),
        "quick-pass.json",
    )
    .unwrap();
    r.started_at = format!("2026-11-{:02}T03:00:00Z", i + 1);
    r.host.build.commit = Some(format!("c{i:02}aaaaaaaaa"));
    let wobble = 1.0 + 0.01 * (((i * 7) % 5) as f64 - 2.0) / 2.0;
    for rec in &mut r.records {
        for m in &mut rec.metrics {
            // As the registry fills them in for a report before roles.
            if m.name == "time_per_access" {
                m.role = Some(MetricRole::Derived);
            }
            let f = if rec.id == "mem.bandwidth" {
                by
            } else {
                wobble
            };
            for s in &mut m.samples {
                *s *= f;
            }
            if let Ok(s) = Summary::new(&m.samples) {
                m.summary = s;
            }
        }
    }
    (format!("r{i:02}.json"), r)
}

/// 24 runs, mem.bandwidth 30% lower from run 18 on (with a little noise
/// of its own before and after).
fn history() -> Vec<(String, Report)> {
    (0..24)
        .map(|i| {
            let noise = 1.0 + 0.004 * ((i * 5 % 7) as f64 - 3.0);
            run(i, if i >= 18 { 0.7 * noise } else { noise })
        })
        .collect()
}

fn bandwidth(t: &Trend) -> &Series {
    t.series
        .iter()
        .find(|s| s.id == "mem.bandwidth" && s.metric == "bandwidth")
        .unwrap()
}

#[test]
fn a_step_is_found_at_its_run_and_commit_with_its_size_and_alarms() {
    // r18 is the 6th newest of 24.
    let t = trend(
        &history(),
        &TrendOptions {
            since: 6,
            ..Default::default()
        },
    )
    .unwrap();
    let s = bandwidth(&t);
    assert_eq!(s.change_points.len(), 1, "{:?}", s.change_points);
    let c = &s.change_points[0];
    assert_eq!((c.at, c.run.as_str()), (18, "r18.json"));
    assert_eq!(c.commit.as_deref(), Some("c18aaaaaaaaa"));
    assert!((c.step + 0.3).abs() < 0.01, "{}", c.step);
    assert!((c.after / c.before - 0.7).abs() < 0.01, "{c:?}");
    assert!(c.interval[0] <= c.step && c.step <= c.interval[1]);
    assert!(
        c.interval[0] > -0.32 && c.interval[1] < -0.28,
        "{:?}",
        c.interval
    );
    assert!(c.regression && c.alarm, "{c:?}");
    assert_eq!(t.exit_code(), 1);
    // A ±1% wobble is no change point: every other series is flat.
    let others: usize = t
        .series
        .iter()
        .filter(|x| x.id != "mem.bandwidth")
        .map(|x| x.change_points.len())
        .sum();
    assert_eq!(others, 0);
    // Only gated metrics: the derived time_per_access is not a series.
    assert!(!t.series.iter().any(|x| x.metric == "time_per_access"));
}

#[test]
fn an_old_regression_does_not_alarm_and_an_acknowledged_one_never_does() {
    // The step is 6 runs old: outside the last 5, a regression listed but
    // no alarm.
    let t = trend(&history(), &TrendOptions::default()).unwrap();
    assert!(bandwidth(&t).change_points[0].regression);
    assert!(!bandwidth(&t).change_points[0].alarm);
    assert_eq!(t.exit_code(), 0);
    // Acknowledged: listed with its reason, no alarm; a second ack that
    // names nothing is stale.
    let acks = vec![
        Ack {
            record: "mem.bandwidth".into(),
            metric: Some("bandwidth".into()),
            commit: "c18aaaa".into(),
            reason: "hugepages off by default".into(),
        },
        Ack {
            record: "cpu.flops".into(),
            metric: None,
            commit: "c03aaaa".into(),
            reason: "expected".into(),
        },
    ];
    let t = trend(
        &history(),
        &TrendOptions {
            acks,
            since: 10,
            ..Default::default()
        },
    )
    .unwrap();
    let c = &bandwidth(&t).change_points[0];
    assert_eq!(c.acknowledged.as_deref(), Some("hugepages off by default"));
    assert!(c.regression && !c.alarm);
    assert_eq!(t.exit_code(), 0);
    assert_eq!(t.stale.len(), 1);
    assert_eq!(t.stale[0].record, "cpu.flops");
}

#[test]
fn an_improvement_is_a_change_point_but_no_regression() {
    let runs: Vec<_> = (0..20)
        .map(|i| {
            run(
                i,
                if i >= 14 {
                    1.4
                } else {
                    1.0 + 0.003 * (i % 3) as f64
                },
            )
        })
        .collect();
    let t = trend(&runs, &TrendOptions::default()).unwrap();
    let c = &bandwidth(&t).change_points[0];
    assert!(c.step > 0.35 && !c.regression && !c.alarm, "{c:?}");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn runs_are_ordered_by_start_other_testbeds_left_out_and_too_few_refused() {
    let mut runs = history();
    runs.reverse();
    // A tie: ordered by name, said.
    runs[0].1.started_at = runs[1].1.started_at.clone();
    // Another machine's report is left out, named.
    let (_, mut other) = run(30, 1.0);
    other.host.cpu.model = Some("Another CPU".into());
    other.started_at = "2026-11-10T12:00:00Z".into();
    runs.push(("other.json".into(), other));
    let t = trend(&runs, &TrendOptions::default()).unwrap();
    let names: Vec<&str> = t.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 24);
    assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    assert!(
        t.excluded[0].starts_with("other.json: cpu.model"),
        "{:?}",
        t.excluded
    );
    assert!(
        t.notes.iter().any(|n| n.contains("same time")),
        "{:?}",
        t.notes
    );
    let e = trend(&history()[..5], &TrendOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "history needs at least 6 runs of one testbed to find a change point, got 5"
    );
    assert!(
        trend(
            &history(),
            &TrendOptions {
                alpha: 0.7,
                ..Default::default()
            }
        )
        .is_err()
    );
}

#[test]
fn every_format_says_it_table_fits_and_csv_has_one_row_per_change_point() {
    use crate::export::{Format, write_trend};
    let t = trend(
        &history(),
        &TrendOptions {
            since: 6,
            ..Default::default()
        },
    )
    .unwrap();
    let text = |f: Format| {
        let mut out = Vec::new();
        write_trend(f, &t, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let table = text(Format::Table);
    let line = table
        .lines()
        .find(|l| l.starts_with("mem.bandwidth "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("r18.json (c18aaaaaaa): -29.9% ["), "{line}");
    assert!(line.contains("regression, ALARM"), "{line}");
    // The sparkline: high, then low from run 18.
    let spark: String = line.chars().filter(|c| ('▁'..='█').contains(c)).collect();
    assert_eq!(spark.chars().count(), 24, "{line}");
    assert!(spark.chars().skip(18).all(|c| c == '▁'), "{spark}");
    assert!(
        table.contains("history ALARM: 1 unacknowledged regression in the last 6 runs"),
        "{table}"
    );
    let csv = text(Format::Csv);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .contains(",r18.json,c18aaaaaaaaa,18,"),
        "{csv}"
    );
    let md = text(Format::Markdown);
    assert!(md.starts_with("**❌ history ALARM"), "{md}");
    // Only what changed is in the summary's table.
    assert_eq!(md.matches("\n| mem.bandwidth").count(), 1, "{md}");
    assert!(!md.contains("| os.timer"), "{md}");
    let json: Trend = serde_json::from_str(&text(Format::Json)).unwrap();
    assert_eq!(json, t);
}

#[test]
fn a_per_metric_threshold_decides_what_step_is_a_regression() {
    let options = |rule: &str| TrendOptions {
        since: 6,
        rules: vec![ThresholdRule::parse(rule).unwrap()],
        ..Default::default()
    };
    // The 30% drop is below a 35% threshold for the metric: a change
    // point, not a regression, no alarm.
    let t = trend(&history(), &options("mem.bandwidth:bandwidth=35%")).unwrap();
    let c = &bandwidth(&t).change_points[0];
    assert!(!c.regression && !c.alarm && t.exit_code() == 0, "{c:?}");
    assert_eq!(t.rules, vec!["mem.bandwidth:bandwidth=35%".to_string()]);
    // At 25% it is one; a rule for another metric leaves the default.
    for rule in ["mem.bandwidth:bandwidth=25%", "cpu.*=50%"] {
        let t = trend(&history(), &options(rule)).unwrap();
        let c = &bandwidth(&t).change_points[0];
        assert!(
            c.regression && c.alarm && t.exit_code() == 1,
            "{rule}: {c:?}"
        );
    }
}

#[test]
fn a_metric_with_two_change_points_is_one_markdown_row() {
    let runs: Vec<(String, Report)> = (0..30)
        .map(|i| {
            let noise = 1.0 + 0.004 * ((i * 5 % 7) as f64 - 3.0);
            // Two steps down. (A dip that comes back, 10 low runs in the
            // middle of 30, is not found: one split at a time sees half of
            // it; see the CHANGELOG.)
            let level = match i {
                0..10 => 1.0,
                10..20 => 0.8,
                _ => 0.6,
            };
            run(i, level * noise)
        })
        .collect();
    let t = trend(&runs, &TrendOptions::default()).unwrap();
    let at: Vec<usize> = bandwidth(&t).change_points.iter().map(|c| c.at).collect();
    assert_eq!(at, [10, 20], "{:?}", bandwidth(&t).medians);
    let mut out = Vec::new();
    crate::export::write_trend(crate::export::Format::Markdown, &t, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| mem.bandwidth"))
        .collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert_eq!(rows[0].matches("<br>").count(), 1, "{}", rows[0]);
    assert!(
        rows[0].contains("r10.json") && rows[0].contains("r20.json"),
        "{}",
        rows[0]
    );
}
