//! The runner's contract, exercised with scripted fakes.

use std::collections::BTreeMap;
use std::time::Duration;

use benchsuite_core::runner::{Silent, run};
use benchsuite_core::{Registry, Status};
use benchsuite_tests::{Fake, Script, fast_config};

fn registry(fakes: &[Fake]) -> Registry {
    let mut r = Registry::new();
    for f in fakes {
        r.register(Box::new(f.clone())).unwrap();
    }
    r
}

#[test]
fn samples_are_long_enough_and_rates_consistent() {
    let fake = Fake::new("fake.work", Script::Work, 200);
    let cfg = fast_config()
        .to_builder()
        .runs(4)
        .min_sample_time(Duration::from_millis(2))
        .build()
        .unwrap();
    let report = run(&registry(std::slice::from_ref(&fake)), &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let r = &report.records[0];
    assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
    let iters = r.iters_per_sample.unwrap();
    // 200 ns per iteration, samples ≥ 2 ms → at least 10 000 iterations.
    assert!(
        iters >= 10_000,
        "batch of {iters} iterations is shorter than the minimum sample time"
    );
    let t = r.metric("time_per_op").unwrap();
    assert_eq!(t.samples.len(), 4);
    assert_eq!(t.unit, "s");
    // Spinning 200 ns per iteration can't be faster than 200 ns.
    assert!(
        t.summary.median >= 200e-9 && t.summary.median < 200e-6,
        "{}",
        t.summary.median
    );
    let rate = r.metric("rate").unwrap();
    let bw = r.metric("bandwidth").unwrap();
    for i in 0..4 {
        assert!((rate.samples[i] * t.samples[i] - 1.0).abs() < 1e-9);
        assert!((bw.samples[i] - 64.0 * rate.samples[i]).abs() / bw.samples[i] < 1e-9);
    }
    assert_eq!(fake.prepare_count(), 1);
    assert_eq!(fake.teardown_count(), 1);
    assert!(report.config.timer_overhead_s > 0.0 && report.config.timer_overhead_s < 1e-5);
}

#[test]
fn failures_become_records_and_teardown_always_runs() {
    let fail = Fake::new("fake.fail", Script::FailRun, 10);
    let panic = Fake::new("fake.panic", Script::PanicRun, 10);
    let prep = Fake::new("fake.prep", Script::FailPrepare, 10);
    let skip = Fake::new("fake.skip", Script::Skip, 10);
    let skip_point = Fake::new("fake.skippoint", Script::SkipPrepare, 10);
    let ok = Fake::new("fake.ok", Script::Work, 10);
    let reg = registry(&[
        fail.clone(),
        panic.clone(),
        prep.clone(),
        skip.clone(),
        skip_point.clone(),
        ok.clone(),
    ]);
    let report = run(&reg, &fast_config(), &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let status: Vec<_> = report
        .records
        .iter()
        .map(|r| (r.id.as_str(), r.status))
        .collect();
    assert_eq!(
        status,
        [
            ("fake.fail", Status::Failed),
            ("fake.panic", Status::Failed),
            ("fake.prep", Status::Failed),
            ("fake.skip", Status::Skipped),
            ("fake.skippoint", Status::Skipped),
            ("fake.ok", Status::Ok),
        ]
    );
    assert!(
        report.records[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("scripted failure")
    );
    assert!(
        report.records[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("scripted panic")
    );
    assert!(
        report.records[2]
            .reason
            .as_deref()
            .unwrap()
            .contains("prepare")
    );
    assert_eq!(report.records[3].reason.as_deref(), Some("scripted skip"));
    assert_eq!(
        report.records[4].reason.as_deref(),
        Some("scripted point skip")
    );
    // Teardown ran after the error and after the panic; nothing was prepared
    // for the skipped benchmark; a failed prepare has nothing to tear down.
    assert_eq!(fail.teardown_count(), 1);
    assert_eq!(panic.teardown_count(), 1);
    assert_eq!(prep.teardown_count(), 0);
    assert_eq!(skip.prepare_count(), 0);
    assert_eq!(ok.teardown_count(), 1);
}

/// A failed and a skipped record, from the real runner, in every report
/// export: with status and reason where the format has a place for them,
/// as a 0 status sample in OpenMetrics, absent from BMF and GHA.
#[test]
fn failed_and_skipped_records_reach_every_export() {
    use benchsuite_report::export::{Format, GhaTool, write_gha, write_report};
    let reg = registry(&[
        Fake::new("fake.fail", Script::FailRun, 10),
        Fake::new("fake.skip", Script::Skip, 10),
        Fake::new("fake.ok", Script::Work, 10),
    ]);
    let report = run(&reg, &fast_config(), &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let text = |f: Format| {
        let mut out = Vec::new();
        write_report(f, &report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };

    let csv = text(Format::Csv);
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let not_ok: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .filter(|r| &r[col("status")] != "ok")
        .map(|r| {
            (
                &r[col("id")],
                &r[col("status")],
                &r[col("reason")],
                &r[col("median")],
            )
        })
        .collect();
    assert_eq!(
        not_ok,
        [
            (
                "fake.fail",
                "failed",
                report.records[0].reason.as_deref().unwrap(),
                ""
            ),
            ("fake.skip", "skipped", "scripted skip", ""),
        ]
    );
    assert!(
        report.records[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("scripted failure")
    );
    for f in [Format::Table, Format::Markdown] {
        let t = text(f);
        assert!(
            t.contains("failed: ") && t.contains("scripted failure"),
            "{f}: {t}"
        );
        assert!(t.contains("skipped: scripted skip"), "{f}: {t}");
    }
    let om = text(Format::OpenMetrics);
    for (id, ok) in [("fake.fail", 0), ("fake.skip", 0), ("fake.ok", 1)] {
        let line = om
            .lines()
            .find(|l| l.starts_with(&format!("benchsuite_record_ok{{id=\"{id}\"")))
            .unwrap_or_else(|| panic!("{id}: {om}"));
        assert!(line.ends_with(&format!("}} {ok}")), "{line}");
    }
    let bmf: serde_json::Value = serde_json::from_str(&text(Format::Bmf)).unwrap();
    let names: Vec<&String> = bmf.as_object().unwrap().keys().collect();
    assert_eq!(names.len(), 1);
    assert!(names[0].starts_with("fake.ok"), "{names:?}");
    for tool in GhaTool::BOTH {
        let mut out = Vec::new();
        write_gha(tool, &report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            !text.contains("fake.fail") && !text.contains("fake.skip"),
            "{text}"
        );
    }
}

#[test]
fn sweep_produces_one_record_per_point() {
    let fake = Fake::new("fake.work", Script::Work, 50);
    let cfg = fast_config()
        .to_builder()
        .param("factor", "1..4:x2")
        .param("block", "4K,8K")
        .build()
        .unwrap();
    let report = run(&registry(std::slice::from_ref(&fake)), &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let labels: Vec<String> = report.records.iter().map(|r| r.params.label()).collect();
    assert_eq!(
        labels,
        [
            "block=4096 factor=1",
            "block=8192 factor=1",
            "block=4096 factor=2",
            "block=8192 factor=2",
            "block=4096 factor=4",
            "block=8192 factor=4"
        ]
    );
    // Four times the work per iteration takes longer per operation.
    let t = |i: usize| {
        report.records[i]
            .metric("time_per_op")
            .unwrap()
            .summary
            .median
    };
    assert!(
        t(4) > t(0) * 2.0,
        "factor 4: {} vs factor 1: {}",
        t(4),
        t(0)
    );
    assert_eq!(fake.teardown_count(), 6);
}

#[test]
fn configuration_errors_come_before_anything_runs() {
    let fake = Fake::new("fake.work", Script::Work, 50);
    let reg = registry(std::slice::from_ref(&fake));
    let cfg = fast_config()
        .to_builder()
        .param("bogus", "1")
        .build()
        .unwrap();
    let e = run(&reg, &cfg, &mut Silent).unwrap_err().to_string();
    assert!(e.contains("bogus") && e.contains("block, factor"), "{e}");
    let cfg = fast_config()
        .to_builder()
        .param("factor", "1,99")
        .build()
        .unwrap();
    let e = run(&reg, &cfg, &mut Silent).unwrap_err().to_string();
    assert!(
        e.contains("factor") && e.contains("between 1 and 16"),
        "{e}"
    );
    let cfg = fast_config()
        .to_builder()
        .selectors(["nope"])
        .build()
        .unwrap();
    assert!(
        run(&reg, &cfg, &mut Silent)
            .unwrap_err()
            .to_string()
            .contains("nope")
    );
    // A setting that cannot run is refused before there is a config.
    let e = fast_config().to_builder().runs(0).build().unwrap_err();
    assert!(e.to_string().contains("`RunConfig::runs`"), "{e}");
    assert_eq!(
        fake.prepare_count(),
        0,
        "nothing may run on a configuration error"
    );
}

#[test]
fn cancel_finishes_the_current_record_and_stops() {
    let a = Fake::new("fake.a", Script::CancelDuringRun, 10);
    let b = Fake::new("fake.b", Script::Work, 10);
    let reg = registry(&[a.clone(), b.clone()]);
    let cfg = fast_config()
        .to_builder()
        .param("factor", "1,2")
        .build()
        .unwrap();
    let report = run(&reg, &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    assert!(cfg.is_cancelled());
    // The record in progress is finished and torn down; nothing after it
    // starts.
    assert_eq!(report.records.len(), 1);
    assert_eq!(
        report.records[0].status,
        Status::Ok,
        "{:?}",
        report.records[0].reason
    );
    assert_eq!(a.teardown_count(), 1);
    assert_eq!(b.prepare_count(), 0);
}

#[test]
fn time_series_gives_one_sample_per_interval() {
    let fake = Fake::new("fake.work", Script::Work, 100);
    let cfg = fast_config()
        .to_builder()
        .duration(Some(Duration::from_millis(300)))
        .interval(Some(Duration::from_millis(50)))
        .build()
        .unwrap();
    let report = run(&registry(&[fake]), &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let m = report.records[0].metric("rate").unwrap();
    let ts = m.timestamps.as_ref().expect("a time series has timestamps");
    assert_eq!(ts.len(), m.samples.len());
    assert!(
        (5..=8).contains(&m.samples.len()),
        "{} samples in 300 ms at 50 ms",
        m.samples.len()
    );
    assert!(ts.windows(2).all(|w| w[1] > w[0]));
    assert!(*ts.last().unwrap() >= 0.3);
    assert_eq!(report.config.interval_s, Some(0.05));
}

#[test]
fn peak_gives_efficiency_and_flags_the_impossible() {
    let mut fake = Fake::new("fake.work", Script::Work, 1000);
    // ~1e6 op/s measured against a 1e9 op/s peak → ~0.1%.
    fake.peak_ops = Some(1e9);
    let mut too_fast = Fake::new("fake.fast", Script::Work, 1000);
    too_fast.peak_ops = Some(1.0);
    let report = run(&registry(&[fake, too_fast]), &fast_config(), &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let eff = report.records[0].peak.as_ref().unwrap().efficiency.unwrap();
    assert!(eff > 0.0 && eff < 0.01, "{eff}");
    let r = &report.records[1];
    assert!(r.peak.as_ref().unwrap().efficiency.unwrap() > 1.0);
    assert!(
        r.warnings.iter().any(
            |w| matches!(w, benchsuite_core::Caveat::OverPeak { metric, .. } if metric == "rate")
        ),
        "{:?}",
        r.warnings
    );
}

#[test]
fn report_round_trips_through_json() {
    let fake = Fake::new("fake.work", Script::Work, 100);
    let skip = Fake::new("fake.skip", Script::Skip, 100);
    let cfg = fast_config()
        .to_builder()
        .options(BTreeMap::from([(
            "fake-flag".to_string(),
            "on".to_string(),
        )]))
        .build()
        .unwrap();
    let report = run(&registry(&[fake, skip]), &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let json = report.to_json();
    let back = benchsuite_core::Report::from_json(&json, "mem").unwrap();
    assert_eq!(back, report);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema_version"], benchsuite_core::SCHEMA_VERSION);
    assert_eq!(v["records"][1]["status"], "skipped");
    assert_eq!(v["records"][0]["params"]["block"], 4096);
}

#[test]
fn records_show_resolved_values_and_modules_add_host_facts() {
    let f = Fake::new("fake.auto", Script::Work, 100);
    let reg = registry(std::slice::from_ref(&f));
    let mut cfg = fast_config()
        .to_builder()
        .param("block", "0,512")
        .build()
        .unwrap();
    let report = run(&reg, &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let blocks: Vec<u64> = report
        .records
        .iter()
        .map(|r| r.params.get("block").and_then(|v| v.as_u64()).unwrap())
        .collect();
    assert_eq!(blocks, [4096, 512]);
    assert_eq!(report.host.extra["fake"]["fake"], "fake.auto");
    let repeats = |r: &benchsuite_core::Record| {
        r.warnings
            .iter()
            .any(|w| matches!(w, benchsuite_core::Caveat::SameParams { record: 1 }))
    };
    assert!(!report.records.iter().any(repeats));

    // 0 (auto) resolves to 4 KiB: the second point ran the same thing as
    // the first, and its record says so.
    cfg = cfg.to_builder().param("block", "0,4K,512").build().unwrap();
    let report = run(&reg, &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    let same: Vec<bool> = report.records.iter().map(repeats).collect();
    assert_eq!(same, [false, true, false]);
}

#[test]
fn rounds_repeat_the_plan_and_pool_the_samples() {
    let a = Fake::new("fake.a", Script::Work, 1_000);
    let b = Fake::new("fake.b", Script::Work, 1_000);
    let reg = registry(&[a.clone(), b.clone()]);
    let cfg = fast_config().to_builder().rounds(3).build().unwrap();
    let report = run(&reg, &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    assert_eq!(report.config.rounds, 3);
    assert_eq!(
        report.records.len(),
        2,
        "one record per point, not per round"
    );
    for r in &report.records {
        assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
        for m in &r.metrics {
            assert_eq!(m.samples.len(), 3 * cfg.runs(), "{}", m.name);
        }
        assert!(
            r.notes.iter().any(|n| n.contains("pooled from 3 rounds")),
            "{:?}",
            r.notes
        );
    }
    // Each round prepares and tears down every point again.
    assert_eq!((a.prepare_count(), a.teardown_count()), (3, 3));
    assert_eq!((b.prepare_count(), b.teardown_count()), (3, 3));
}

#[test]
fn options_must_be_declared_and_well_formed() {
    let reg = registry(&[Fake::new("fake.work", Script::Work, 100)]);
    let with = |key: &str, value: &str| {
        let cfg = fast_config()
            .to_builder()
            .option(key, value)
            .build()
            .unwrap();
        benchsuite_core::runner::plan(&reg, &cfg).map(|_| ())
    };
    assert!(with("fake-flag", "off").is_ok());
    let e = with("fake-flgg", "on").unwrap_err().to_string();
    assert!(
        e.contains("unknown option `fake-flgg`") && e.contains("fake-flag"),
        "{e}"
    );
    let e = with("fake-flag", "maybe").unwrap_err().to_string();
    assert!(
        e.contains("invalid value `maybe` for option `fake-flag`") && e.contains("on or off"),
        "{e}"
    );
}

#[test]
fn checkpoints_follow_every_record_and_mark_unfinished_reports() {
    #[derive(Default)]
    struct Keep(Vec<benchsuite_core::Report>);
    impl benchsuite_core::runner::Observer for Keep {
        fn wants_checkpoints(&self) -> bool {
            true
        }
        fn checkpoint(&mut self, report: &benchsuite_core::Report) {
            self.0.push(report.clone());
        }
    }
    let reg = registry(&[
        Fake::new("fake.a", Script::Work, 1_000),
        Fake::new("fake.b", Script::Work, 1_000),
    ]);
    let cfg = fast_config().to_builder().rounds(2).build().unwrap();
    let mut keep = Keep::default();
    let plan = benchsuite_core::runner::plan(&reg, &cfg).unwrap();
    let last = benchsuite_core::runner::run_plan(&plan, &cfg, &mut keep);
    // 2 records × 2 rounds = 4 steps: a checkpoint after each but the last.
    let done: Vec<_> = keep
        .0
        .iter()
        .map(|r| r.progress.map(|p| (p.done, p.planned)))
        .collect();
    assert_eq!(done, [Some((1, 4)), Some((2, 4)), Some((3, 4))]);
    assert_eq!(keep.0[0].records.len(), 1);
    assert_eq!(keep.0[2].records.len(), 2);
    assert!(
        keep.0[2].records[0]
            .notes
            .iter()
            .any(|n| n.contains("2 of 2 rounds")),
        "{:?}",
        keep.0[2].records[0].notes
    );
    assert_eq!(last.progress, None);
    assert!(
        last.records[1]
            .notes
            .iter()
            .any(|n| n.starts_with("samples pooled from 2 rounds"))
    );

    // Cut short by Ctrl-C: the final report says how far it got.
    let reg = registry(&[
        Fake::new("fake.cancel", Script::CancelDuringRun, 1_000),
        Fake::new("fake.b", Script::Work, 1_000),
    ]);
    let cfg = fast_config();
    let report = run(&reg, &cfg, &mut Silent).unwrap();
    assert_eq!(report.records.len(), 1);
    assert_eq!(report.progress.map(|p| (p.done, p.planned)), Some((1, 2)));
}
