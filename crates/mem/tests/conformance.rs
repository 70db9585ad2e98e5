//! Conformance: every `mem` benchmark at its smoke point and across its
//! choices, through the real runner; bad input rejected before anything
//! runs; notes, verification and peaks as documented.

use benchsuite_core::host::CacheInfo;
use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{Host, MetricSource, Record, Registry, Report, RunConfig, Status};
use benchsuite_mem::{DESCRIPTION, MODULE, benchmarks};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks());
    r
}

fn config(selector: &str, sweep: &[(&str, &str)]) -> RunConfig {
    RunConfig::smoke_test(selector, sweep)
}

fn run(selector: &str, sweep: &[(&str, &str)]) -> Report {
    runner::run(&registry(), &config(selector, sweep), &mut Silent).expect("the plan is valid")
}

/// Runs on a host with the given caches (to make small working sets count
/// as DRAM-bound without allocating gigabytes in a debug build).
fn run_on(host: Host, selector: &str, sweep: &[(&str, &str)], options: &[(&str, &str)]) -> Report {
    let mut cfg = config(selector, sweep);
    cfg.options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let reg = registry();
    let plan = runner::plan_on(&reg, &cfg, host).expect("the plan is valid");
    runner::run_plan(&plan, &cfg, &mut Silent)
}

fn tiny_cache_host() -> Host {
    let mut h = Host::detect();
    h.cpu.caches = vec![
        CacheInfo {
            level: 1,
            kind: "Data".into(),
            size_bytes: 32 << 10,
            shared_by: Some(1),
        },
        CacheInfo {
            level: 2,
            kind: "Unified".into(),
            size_bytes: 256 << 10,
            shared_by: Some(1),
        },
        CacheInfo {
            level: 3,
            kind: "Unified".into(),
            size_bytes: 1 << 20,
            shared_by: Some(64),
        },
    ];
    h
}

/// Physical upper bounds for a median, generous for any current machine
/// (debug build or not): bandwidth below 2 TB/s per thread (an L1 moves at
/// most a few 64 B lines per cycle at ~5 GHz), one access or load at least
/// 10 ps and at most 100 µs.
fn check(r: &Record) {
    assert_eq!(
        r.status,
        Status::Ok,
        "{} {}: {}",
        r.id,
        r.params.label(),
        r.reason.as_deref().unwrap_or("(no reason)")
    );
    let threads = r
        .params
        .get("threads")
        .and_then(|v| v.as_u64())
        .unwrap_or(1) as f64;
    for m in &r.metrics {
        let med = m.summary.median;
        let what = format!("{} {} {}", r.id, r.params.label(), m.name);
        assert!(med.is_finite() && med > 0.0, "{what}: median {med}");
        assert_eq!(m.samples.len(), 3, "{what}");
        match m.unit.as_str() {
            "B/s" => assert!(
                med < 2e12 * threads,
                "{what}: {med:e} B/s is beyond any memory"
            ),
            "s" => assert!((1e-11..1e-4).contains(&med), "{what}: {med:e} s per access"),
            u => panic!("{what}: unexpected unit {u}"),
        }
    }
    // Which cache level the working set fits in is a fact: a note.
    assert!(
        r.notes
            .iter()
            .any(|w| w.contains("working set") && (w.contains("fits in L") || w.contains("DRAM"))),
        "{}: no cache-level note in {:?}",
        r.key(),
        r.notes
    );
}

/// A record's warnings and notes together.
fn texts(r: &Record) -> Vec<&String> {
    r.warnings.iter().chain(&r.notes).collect()
}

#[test]
fn meta_is_well_formed() {
    let mut ids = Vec::new();
    for b in benchmarks() {
        let m = b.meta();
        assert_eq!(m.module(), MODULE, "{}", m.id);
        assert!(!m.description.is_empty());
        for p in &m.params {
            p.kind
                .check(p.name, &p.default)
                .unwrap_or_else(|e| panic!("{} default: {e}", m.id));
            p.kind
                .check(p.name, p.smoke_value())
                .unwrap_or_else(|e| panic!("{} smoke: {e}", m.id));
            assert!(!p.help.is_empty(), "{} {}", m.id, p.name);
        }
        let head = &m.metrics[0];
        match m.id {
            "mem.bandwidth" => assert_eq!(head.source, MetricSource::BytesPerSec),
            "mem.latency" => assert_eq!(head.source, MetricSource::TimePerOp),
            other => panic!("unexpected benchmark {other}"),
        }
        ids.push(m.id);
    }
    assert_eq!(ids, ["mem.bandwidth", "mem.latency"]);
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let report = run(MODULE, &[]);
    assert_eq!(report.records.len(), 2);
    for r in &report.records {
        check(r);
    }
}

#[test]
fn every_kernel_pattern_and_store_mode_runs_and_verifies() {
    let report = run(
        "mem.bandwidth",
        &[
            ("op", "read,write,copy,scale,add,triad"),
            ("pattern", "seq,random"),
            ("nt", "auto,on,off"),
            ("size", "64K"),
        ],
    );
    assert_eq!(report.records.len(), 36);
    for r in &report.records {
        check(r);
        let nt = r
            .params
            .get("nt")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let op = r
            .params
            .get("op")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        if nt == "on" && op != "read" {
            assert!(
                r.notes.iter().any(|w| w.contains("non-temporal")),
                "{}: {:?}",
                r.key(),
                r.notes
            );
        }
        if nt == "off" && op == "triad" {
            assert!(
                r.notes.iter().any(|w| w.contains("1.33x")),
                "{}: {:?}",
                r.key(),
                r.notes
            );
        }
    }
}

#[test]
fn every_isa_runs_or_is_skipped_with_a_reason() {
    let report = run(
        "mem.bandwidth",
        &[
            ("isa", "avx512,avx2,scalar"),
            ("op", "copy,triad"),
            ("size", "64K"),
        ],
    );
    assert_eq!(report.records.len(), 6);
    for r in &report.records {
        if r.status == Status::Skipped {
            assert!(
                r.reason.as_deref().unwrap_or_default().contains("lacks"),
                "{:?}",
                r.reason
            );
        } else {
            check(r);
        }
    }
}

#[test]
fn narrow_and_wide_blocks_run_sequentially_and_at_random() {
    let report = run(
        "mem.bandwidth",
        &[
            ("op", "read,write,copy"),
            ("pattern", "seq,random"),
            ("block", "1,2,4,8,16,32,64,4K"),
            ("size", "64K"),
        ],
    );
    assert_eq!(report.records.len(), 48);
    for r in &report.records {
        check(r);
    }
    let report = run(
        "mem.bandwidth",
        &[
            ("op", "scale,triad"),
            ("pattern", "random"),
            ("block", "8,16,32,1K"),
            ("size", "96K"),
        ],
    );
    for r in &report.records {
        check(r);
    }
}

#[test]
fn random_one_byte_accesses_say_they_are_latency_bound() {
    let report = run(
        "mem.bandwidth",
        &[("op", "read"), ("pattern", "random"), ("block", "1")],
    );
    let r = &report.records[0];
    check(r);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("64x the counted bytes")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn threads_each_get_their_working_set() {
    let report = run("mem.bandwidth", &[("threads", "1,2"), ("op", "copy")]);
    for r in &report.records {
        check(r);
    }
}

#[test]
fn latency_sweeps_patterns_strides_and_pages() {
    let report = run(
        "mem.latency",
        &[
            ("pattern", "random,stride"),
            ("stride", "64,128"),
            ("hugepages", "on,off"),
            ("size", "4M"),
        ],
    );
    assert_eq!(report.records.len(), 8);
    for r in &report.records {
        check(r);
        assert!(
            texts(r).iter().any(|w| w.contains("hugepages=")),
            "{:?}",
            texts(r)
        );
    }
}

/// A power-of-two size of at least twice `MemAvailable` (and at most the
/// parameters' 1 TiB bound), or `None` where that cannot be read or made.
fn beyond_free_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let size = (kib * 1024 * 2).next_power_of_two().max(1 << 30);
    (size <= 1 << 40).then_some(size)
}

/// The message of a planning error for this sweep.
fn plan_error(selector: &str, sweep: &[(&str, &str)]) -> String {
    let reg = registry();
    runner::plan(&reg, &config(selector, sweep))
        .expect_err("must be rejected")
        .to_string()
}

#[test]
fn bad_input_is_rejected_before_anything_runs() {
    let e = plan_error("mem.bandwidth", &[("threads", "0")]);
    assert!(e.contains("threads") && e.contains("between 1"), "{e}");

    let e = plan_error("mem.bandwidth", &[("block", "1M"), ("size", "64K")]);
    assert!(
        e.contains("block") && e.contains("1MiB") && e.contains("64KiB"),
        "{e}"
    );

    // Beyond this machine's free memory: refused by reading MemAvailable,
    // never by allocating (an allocation this size would end in the OOM
    // killer or fail on first touch).
    if let Some(size) = beyond_free_memory() {
        let size = format!("{}G", size >> 30);
        let e = plan_error("mem.bandwidth", &[("size", &size), ("threads", "2")]);
        assert!(e.contains("size") && e.contains("MemAvailable"), "{e}");
        let e = plan_error("mem.latency", &[("size", &size), ("stride", "1M")]);
        assert!(e.contains("size") && e.contains("MemAvailable"), "{e}");
    }

    let e = plan_error("mem.bandwidth", &[("block", "100")]);
    assert!(e.contains("block") && e.contains("multiple of 64"), "{e}");
    let e = plan_error("mem.bandwidth", &[("op", "triad"), ("block", "4")]);
    assert!(e.contains("block") && e.contains("at least 8"), "{e}");
    let e = plan_error(
        "mem.bandwidth",
        &[("nt", "on"), ("block", "8"), ("op", "write")],
    );
    assert!(e.contains("nt") && e.contains("64 B"), "{e}");
    let e = plan_error("mem.bandwidth", &[("nt", "on"), ("isa", "scalar")]);
    assert!(e.contains("nt") && e.contains("scalar"), "{e}");
    let e = plan_error("mem.latency", &[("stride", "12")]);
    assert!(e.contains("stride") && e.contains("multiple of 8"), "{e}");
    let e = plan_error("mem.latency", &[("pattern", "pages"), ("stride", "8K")]);
    assert!(e.contains("stride") && e.contains("4096"), "{e}");
    let e = plan_error("mem.latency", &[("stride", "1M"), ("size", "64K")]);
    assert!(e.contains("stride") && e.contains("size"), "{e}");
}

#[test]
fn dram_bound_records_carry_the_users_peak_and_cache_ones_do_not() {
    let report = run_on(
        tiny_cache_host(),
        "mem.bandwidth",
        &[("size", "16K,4M"), ("op", "read")],
        &[("peak-mem-bw", "50GB/s")],
    );
    let (cached, dram) = (&report.records[0], &report.records[1]);
    check(cached);
    check(dram);
    assert!(cached.peak.is_none(), "a 16 KiB working set fits in L1");
    assert!(
        cached.notes.iter().any(|w| w.contains("fits in L1")),
        "{:?}",
        cached.notes
    );
    assert!(
        cached.notes.iter().any(|w| w.contains("does not apply")),
        "{:?}",
        cached.notes
    );
    let pk = dram
        .peak
        .as_ref()
        .expect("a DRAM-bound record has the peak");
    assert_eq!(pk.value, 50e9);
    assert_eq!(pk.inputs["peak_mem_bw"].source, "user (--peak-mem-bw)");
    let eff = pk.efficiency.expect("the runner fills the efficiency");
    let median = dram.metrics[0].summary.median;
    assert!(
        (eff - median / 50e9).abs() < 1e-9 * eff.max(1.0),
        "{eff} vs {median}"
    );
}

#[test]
fn without_a_peak_the_record_says_so_and_garbage_fails_naming_the_flag() {
    let report = run_on(
        tiny_cache_host(),
        "mem.bandwidth",
        &[("size", "4M"), ("op", "read")],
        &[],
    );
    let r = &report.records[0];
    check(r);
    if r.peak.is_none() {
        assert!(
            r.notes.iter().any(|w| w.contains("DRAM bandwidth unknown")),
            "{:?}",
            r.notes
        );
    }
    // A malformed rate is a usage error before anything runs.
    let mut cfg = config("mem.bandwidth", &[("op", "read")]);
    cfg.options.insert("peak-mem-bw".into(), "fast".into());
    let e = runner::plan_on(&registry(), &cfg, tiny_cache_host())
        .expect_err("a malformed --peak-mem-bw is refused")
        .to_string();
    assert!(e.contains("peak-mem-bw") && e.contains("fast"), "{e}");
}

#[test]
fn automatic_size_follows_the_last_level_cache() {
    let mut cfg = config("mem.bandwidth", &[("op", "read")]);
    cfg.smoke = false;
    cfg.quick = true;
    let reg = registry();
    let plan = runner::plan_on(&reg, &cfg, tiny_cache_host()).unwrap();
    let report = runner::run_plan(&plan, &cfg, &mut Silent);
    let r = &report.records[0];
    check(r);
    // The record shows the size that ran, not the `0` placeholder.
    assert_eq!(
        r.params.get("size").and_then(|v| v.as_u64()),
        Some(64 << 20),
        "{:?}",
        r.params
    );
    // --quick: 2x the 1 MiB LLC, at least 64 MiB; smaller than the full
    // default, so a caveat (warning) rather than a note.
    assert!(
        r.warnings.iter().any(|w| w.contains("size=auto: 64MiB")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.notes.iter().any(|w| w.contains("DRAM-bound")),
        "{:?}",
        r.notes
    );
}
