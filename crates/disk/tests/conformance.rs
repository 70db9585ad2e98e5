//! Conformance: every `disk` benchmark at its smoke point and every choice
//! through the shared harness (in the system temp dir), and `disk.io` on
//! the project's own disk across its ops, engines, queue depths, cache
//! modes, fsync policies and verification. Every run must leave its scratch
//! directory empty.

mod common;

use std::time::Duration;

use benchsuite_core::{Caveat, MetricSource, ParamKind, Record, Report, Status};
use benchsuite_disk::{DiskIo, page_cache_caveat};
use common::{config, entries, harness, run, scratch};

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
    let m = benchsuite_core::Benchmark::meta(&DiskIo);
    assert_eq!(m.metrics[0].source, MetricSource::BytesPerSec);
    for name in ["block", "threads", "preset"] {
        assert!(m.param(name).is_some(), "the CLI maps a flag to `{name}`");
    }
}

/// No `.benchsuite-scratch-<pid>-*` file of this process is left in `dir`
/// (a shared directory: other entries are not this test's).
fn none_of_ours_in(dir: &std::path::Path) {
    let ours = format!(".benchsuite-scratch-{}-", std::process::id());
    let left: Vec<String> = entries(dir)
        .into_iter()
        .filter(|e| e.starts_with(&ours))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let report = harness().check_smoke();
    // The host section names what holds the scratch directory, and each
    // record that ran says the same in its notes.
    let tmp = std::env::temp_dir();
    let facts = &report.host.extra["disk"];
    assert_eq!(facts["path"], tmp.display().to_string());
    if std::fs::read_to_string("/proc/self/mountinfo").is_ok() {
        let fstype = facts["mount"]["fstype"].as_str().expect("a mount");
        assert!(!fstype.is_empty());
        for r in report.records.iter().filter(|r| r.status == Status::Ok) {
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.starts_with("storage: ") && n.contains(fstype)),
                "{:?}",
                r.notes
            );
        }
    }
    none_of_ours_in(&tmp);
}

/// Every value of every choice parameter runs (or is a skip the harness
/// allows). Not `check_choices`: it would sweep the product of `op`,
/// `engine` and `preset`, and the preset sets `op` itself, refusing the
/// plan for any other op. So `op` × `engine`, then `preset` on its own.
#[test]
fn every_choice_runs() {
    let h = harness();
    let meta = benchsuite_core::Benchmark::meta(&DiskIo);
    let names = |param: &str| match meta.param(param).map(|p| &p.kind) {
        Some(ParamKind::Choice(names)) => names.join(","),
        other => panic!("{param} is not a choice: {other:?}"),
    };
    let (ops, engines, presets) = (names("op"), names("engine"), names("preset"));
    for sweep in [
        vec![("op", ops.as_str()), ("engine", engines.as_str())],
        vec![("preset", presets.as_str())],
    ] {
        let report = h.run("disk.io", &sweep);
        let expected: usize = sweep.iter().map(|(_, v)| v.split(',').count()).product();
        assert_eq!(report.records.len(), expected, "{sweep:?}");
        for r in &report.records {
            h.check_record(r);
        }
    }
    let choices: Vec<&str> = meta
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Choice(_)))
        .map(|p| p.name.as_ref())
        .collect();
    assert_eq!(
        choices,
        ["op", "engine", "preset"],
        "a new choice needs a sweep here"
    );
    none_of_ours_in(&std::env::temp_dir());
}

/// `disk.io` with `sweep` on a scratch directory on the project's own
/// disk, where `direct=on` can run: every record must be `ok`.
fn on_disk(dir: &std::path::Path, sweep: &[(&str, &str)]) -> Report {
    let mut all = vec![("dir", dir.to_str().unwrap())];
    all.extend_from_slice(sweep);
    let h = harness();
    let report = h.run("disk.io", &all);
    for r in &report.records {
        assert_eq!(
            r.status,
            Status::Ok,
            "{} {}: {}",
            r.id,
            r.params.label(),
            r.reason.as_deref().unwrap_or("(no reason)")
        );
        h.check_record(r);
    }
    report
}

fn says(r: &Record, text: &str) -> bool {
    r.warnings.iter().any(|w| w.to_string().contains(text))
}

#[test]
fn every_op_and_engine_runs_verified() {
    let dir = scratch();
    let report = on_disk(
        dir.path(),
        &[
            ("op", "read,write,randread,randwrite,randrw"),
            ("engine", "io_uring,sync"),
            ("qd", "1,8"),
            ("threads", "1,2"),
            ("verify", "on"),
            ("block", "0,4K"),
        ],
    );
    assert_eq!(report.records.len(), 5 * 2 * 2 * 2 * 2);
    let mut clamped = 0;
    for r in &report.records {
        // The record's parameters are what ran: sync ran qd=1, and no
        // queue is deeper than the blocks of a 4 MiB file.
        let engine = r.params.get("engine").unwrap().as_str().unwrap();
        let qd = r.params.get("qd").unwrap().as_u64().unwrap();
        let block = r.params.get("block").unwrap().as_u64().unwrap();
        let op = r.params.get("op").unwrap().as_str().unwrap();
        let auto = if op.starts_with("rand") {
            4 << 10
        } else {
            1 << 20
        };
        assert!(block == 4 << 10 || block == auto, "{op} block={block}");
        assert!(qd == 1 || qd == 8 || qd == (4 << 20) / block, "qd={qd}");
        if says(r, "qd=8 was not applied") {
            assert_eq!((engine, qd), ("sync", 1), "{:?}", r.warnings);
            clamped += 1;
        } else if engine == "sync" {
            assert_eq!(qd, 1);
        }
        assert!(says(r, "verify=on"), "{:?}", r.warnings);
        // The record says what was measured, and how the engine ran.
        assert!(
            r.notes.iter().any(|n| n.starts_with("measured ")),
            "{:?}",
            r.notes
        );
        if engine == "io_uring" {
            assert!(
                r.notes.iter().any(|n| n.starts_with("io_uring ring: ")),
                "{:?}",
                r.notes
            );
        }
    }
    // Half of the sync points asked for qd=8.
    assert_eq!(clamped, 5 * 2 * 2 * 2 / 2);
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

#[test]
fn buffered_fsync_and_preset_points_run_and_say_what_they_measured() {
    let dir = scratch();
    let report = on_disk(
        dir.path(),
        &[
            ("op", "randrw"),
            ("direct", "on,off"),
            ("fsync", "none,end,every:3"),
        ],
    );
    assert_eq!(report.records.len(), 6);
    for r in &report.records {
        let buffered = r.params.get("direct").unwrap().as_bool() == Some(false);
        let cached: Vec<&Caveat> = r
            .warnings
            .iter()
            .filter(|w| matches!(w, Caveat::PageCache { .. }))
            .collect();
        if buffered {
            assert_eq!(cached, [&page_cache_caveat()], "{:?}", r.warnings);
            // The sentence the record shows is the one it always showed.
            assert_eq!(
                cached[0].to_string(),
                "direct=off: I/O goes through the page cache, so these numbers mix cache hits and deferred writeback with device work; use direct=on to measure the device"
            );
            // The smoke files (4 MiB) fit in any machine's RAM.
            assert!(says(r, "fit in this machine's"), "{:?}", r.warnings);
        } else {
            assert!(cached.is_empty(), "{:?}", r.warnings);
        }
    }
    let report = on_disk(dir.path(), &[("preset", "sysbench-rndrw")]);
    let r = &report.records[0];
    // The record's parameters are the preset's recipe, and a note says
    // the preset set them.
    let p = &r.params;
    assert_eq!(p.get("op").unwrap().as_str(), Some("randrw"));
    assert_eq!(p.get("block").unwrap().as_u64(), Some(16 << 10));
    assert_eq!(p.get("rwmix").unwrap().as_u64(), Some(60));
    assert_eq!(p.get("fsync").unwrap().as_str(), Some("every:40"));
    assert_eq!(p.get("preset").unwrap().as_str(), Some("sysbench-rndrw"));
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("preset sysbench-rndrw applied")),
        "{:?}",
        r.notes
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

/// A time series needs `--duration` and `--interval`, which the harness's
/// `run` does not take: its own configuration, the harness's registry.
#[test]
fn a_time_series_has_one_sample_per_interval() {
    let dir = scratch();
    let cfg = config(dir.path(), &[("op", "randread"), ("threads", "2")])
        .to_builder()
        .duration(Some(Duration::from_millis(300)))
        .interval(Some(Duration::from_millis(100)))
        .build()
        .unwrap();
    let report = run(&cfg).unwrap();
    let r = &report.records[0];
    assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
    harness().check_record(r);
    let m = &r.metrics[1];
    let ts = m.timestamps.as_ref().expect("timestamps");
    assert_eq!(ts.len(), m.samples.len());
    assert!((2..=4).contains(&ts.len()), "{ts:?}");
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}
