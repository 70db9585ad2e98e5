//! Conformance: every `disk` benchmark at its smoke point, and `disk.io`
//! across its ops, engines, queue depths, cache modes, fsync policies and
//! verification, through the real runner. Every run must leave its scratch
//! directory empty.

mod common;

use std::time::Duration;

use benchsuite_core::{MetricSource, Record, Status};
use benchsuite_disk::{MODULE, PAGE_CACHE_WARNING, benchmarks};
use common::{config, entries, run, scratch};

/// Generous physical bounds for a median: no storage reaches 100 GB/s or
/// 50 M IOPS through one file system, and no single I/O of a smoke point
/// takes 10 s.
fn bound(metric: &str) -> f64 {
    match metric {
        "bandwidth" => 100e9,
        "iops" => 50e6,
        "latency" => 10.0,
        m => panic!("no physical bound for metric {m}: add one to this test"),
    }
}

fn check(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    assert_eq!(
        r.status,
        Status::Ok,
        "{what}: {}",
        r.reason.as_deref().unwrap_or("(no reason)")
    );
    assert_eq!(r.metrics.len(), 3, "{what}");
    for m in &r.metrics {
        let med = m.summary.median;
        assert!(
            med.is_finite() && med > 0.0,
            "{what} {}: median {med}",
            m.name
        );
        assert!(med < bound(&m.name), "{what} {}: median {med:e}", m.name);
    }
    let bw = &r.metrics[0];
    let iops = &r.metrics[1];
    // The record shows the block that ran, never `0` (auto).
    let block = r.params.get("block").and_then(|v| v.as_u64()).unwrap();
    assert!(block >= 512, "{what}");
    // bandwidth = iops × block, sample by sample.
    for (b, i) in bw.samples.iter().zip(&iops.samples) {
        let ratio = b / (i * block as f64);
        assert!((ratio - 1.0).abs() < 1e-9, "{what}: {b} vs {i} × {block}");
    }
    let lat = r.metrics[2].latency.as_ref().expect("latency percentiles");
    assert!(lat.count > 0, "{what}");
    assert!(
        lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max,
        "{what}"
    );
}

#[test]
fn meta_is_well_formed() {
    let benches = benchmarks();
    assert!(!benches.is_empty());
    for b in &benches {
        let m = b.meta();
        assert!(m.id.starts_with("disk."), "{}", m.id);
        assert_eq!(m.module(), MODULE);
        assert_eq!(m.metrics[0].source, MetricSource::BytesPerSec);
        for p in &m.params {
            p.kind.check(p.name, &p.default).unwrap();
            p.kind.check(p.name, p.smoke_value()).unwrap();
            assert!(!p.help.is_empty(), "{}", p.name);
        }
        for name in ["block", "threads", "preset"] {
            assert!(m.param(name).is_some(), "the CLI maps a flag to `{name}`");
        }
    }
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let dir = scratch();
    let mut cfg = config(dir.path(), &[]);
    cfg.selectors = vec![MODULE.into()];
    let report = run(&cfg).unwrap();
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        check(r);
    }
    // The host section names what holds the scratch directory, and each
    // record's notes say the same.
    let facts = &report.host.extra["disk"];
    assert_eq!(facts["path"], dir.path().display().to_string());
    if std::fs::read_to_string("/proc/self/mountinfo").is_ok() {
        let fstype = facts["mount"]["fstype"].as_str().expect("a mount");
        assert!(!fstype.is_empty());
        for r in &report.records {
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.starts_with("storage: ") && n.contains(fstype)),
                "{:?}",
                r.notes
            );
        }
    }
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

#[test]
fn every_op_and_engine_runs_verified() {
    let dir = scratch();
    let report = run(&config(
        dir.path(),
        &[
            ("op", "read,write,randread,randwrite,randrw"),
            ("engine", "io_uring,sync"),
            ("qd", "1,8"),
            ("threads", "1,2"),
            ("verify", "on"),
            ("block", "0,4K"),
        ],
    ))
    .unwrap();
    assert_eq!(report.records.len(), 5 * 2 * 2 * 2 * 2);
    let mut clamped = 0;
    for r in &report.records {
        check(r);
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
        let said = r
            .warnings
            .iter()
            .any(|w| w.contains("qd=8 was not applied"));
        if said {
            assert_eq!((engine, qd), ("sync", 1), "{:?}", r.warnings);
            clamped += 1;
        } else if engine == "sync" {
            assert_eq!(qd, 1);
        }
        assert!(r.warnings.iter().any(|w| w.contains("verify=on")));
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
    let report = run(&config(
        dir.path(),
        &[
            ("op", "randrw"),
            ("direct", "on,off"),
            ("fsync", "none,end,every:3"),
        ],
    ))
    .unwrap();
    assert_eq!(report.records.len(), 6);
    for r in &report.records {
        check(r);
        let buffered = r.params.get("direct").unwrap().as_bool() == Some(false);
        let warned = r.warnings.iter().any(|w| w == PAGE_CACHE_WARNING);
        assert_eq!(warned, buffered, "{:?}", r.warnings);
        if buffered {
            // The smoke files (4 MiB) fit in any machine's RAM.
            assert!(
                r.warnings
                    .iter()
                    .any(|w| w.contains("fit in this machine's")),
                "{:?}",
                r.warnings
            );
        }
    }
    let report = run(&config(dir.path(), &[("preset", "sysbench-rndrw")])).unwrap();
    let r = &report.records[0];
    check(r);
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

#[test]
fn a_time_series_has_one_sample_per_interval() {
    let dir = scratch();
    let mut cfg = config(dir.path(), &[("op", "randread"), ("threads", "2")]);
    cfg.duration = Some(Duration::from_millis(300));
    cfg.interval = Some(Duration::from_millis(100));
    let report = run(&cfg).unwrap();
    let r = &report.records[0];
    check(r);
    let m = &r.metrics[1];
    let ts = m.timestamps.as_ref().expect("timestamps");
    assert_eq!(ts.len(), m.samples.len());
    assert!((2..=4).contains(&ts.len()), "{ts:?}");
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}
