//! Conformance: every `mem` benchmark at its smoke point and across its
//! choices, through the real runner; bad input rejected before anything
//! runs; notes, verification and peaks as documented.

use benchsuite_core::host::CacheInfo;
use benchsuite_core::runner::{self, Silent};
use benchsuite_core::testing::Conformance;
use benchsuite_core::{Host, MetricSource, Record, RunConfig, Status};
use benchsuite_mem::{DESCRIPTION, MODULE, benchmarks};

/// Most threads a `mem.bandwidth` point may have (its `threads` bound).
const MAX_THREADS: f64 = 1024.0;

/// Physical bounds for a median, generous for any current machine (debug
/// build or not): bandwidth below 2 TB/s per thread (an L1 moves at most a
/// few 64 B lines per cycle at ~5 GHz; the per-thread bound is checked in
/// [`check`]), one access or load at least 10 ps and at most 100 µs (so at
/// least 1 B per 100 µs: 10 kB/s). Skips: an ISA this CPU lacks, and
/// `nt=on` where the only kernels are the portable ones.
fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(|id, metric| match (id, metric) {
            ("mem.bandwidth", "bandwidth") => 1e4..2e12 * MAX_THREADS,
            ("mem.bandwidth", "time_per_access") | ("mem.latency", "latency") => 1e-11..1e-4,
            _ => panic!("no physical bound for {id} {metric}"),
        })
        .may_skip(|r| {
            let reason = r.reason.as_deref().unwrap_or_default();
            r.id == "mem.bandwidth"
                && (reason.contains("this CPU lacks it")
                    || reason.contains("kernels have no non-temporal stores"))
        })
        .check_each(check)
}

/// What every `ok` record must show beyond the harness's checks: the
/// bandwidth bound per thread, and which cache level the working set fits
/// in, as a note (a fact, not a caveat).
fn check(r: &Record) {
    let threads = r
        .params
        .get("threads")
        .and_then(|v| v.as_u64())
        .unwrap_or(1) as f64;
    for m in &r.metrics {
        let med = m.summary.median;
        if m.unit == "B/s" {
            assert!(
                med < 2e12 * threads,
                "{} {} {}: {med:e} B/s is beyond any memory",
                r.id,
                r.params.label(),
                m.name
            );
        }
    }
    assert!(
        r.notes
            .iter()
            .any(|w| w.contains("working set") && (w.contains("fits in L") || w.contains("DRAM"))),
        "{}: no cache-level note in {:?}",
        r.key(),
        r.notes
    );
}

/// Runs `selector` over `sweep` and checks every record (`ok`, or a skip
/// the module allows).
fn run_checked(selector: &str, sweep: &[(&str, &str)]) -> Vec<Record> {
    let h = harness();
    let report = h.run(selector, sweep);
    for r in &report.records {
        h.check_record(r);
    }
    report.records
}

/// A record's caveats (as sentences) and notes together.
fn texts(r: &Record) -> Vec<String> {
    r.warnings
        .iter()
        .map(|w| w.to_string())
        .chain(r.notes.iter().cloned())
        .collect()
}

/// A host with a 1 MiB last-level cache (to make small working sets count
/// as DRAM-bound without allocating gigabytes in a debug build).
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

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
    let mut ids = Vec::new();
    for b in benchmarks() {
        let m = b.meta();
        let head = &m.metrics[0];
        match m.id.as_ref() {
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
    harness().check_smoke();
}

#[test]
fn every_choice_runs() {
    harness().check_choices();
}

#[test]
fn every_kernel_pattern_and_store_mode_runs_and_verifies() {
    let records = run_checked(
        "mem.bandwidth",
        &[
            ("op", "read,write,copy,scale,add,triad"),
            ("pattern", "seq,random"),
            ("nt", "auto,on,off"),
            ("size", "64K"),
        ],
    );
    assert_eq!(records.len(), 36);
    for r in records.iter().filter(|r| r.status == Status::Ok) {
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
    let records = run_checked(
        "mem.bandwidth",
        &[
            ("isa", "avx512,avx2,scalar"),
            ("op", "copy,triad"),
            ("size", "64K"),
        ],
    );
    assert_eq!(records.len(), 6);
    for r in &records {
        if r.status == Status::Skipped {
            assert!(
                r.reason.as_deref().unwrap_or_default().contains("lacks"),
                "{:?}",
                r.reason
            );
        }
    }
}

#[test]
fn narrow_and_wide_blocks_run_sequentially_and_at_random() {
    let records = run_checked(
        "mem.bandwidth",
        &[
            ("op", "read,write,copy"),
            ("pattern", "seq,random"),
            ("block", "1,2,4,8,16,32,64,4K"),
            ("size", "64K"),
        ],
    );
    assert_eq!(records.len(), 48);
    run_checked(
        "mem.bandwidth",
        &[
            ("op", "scale,triad"),
            ("pattern", "random"),
            ("block", "8,16,32,1K"),
            ("size", "96K"),
        ],
    );
}

#[test]
fn random_one_byte_accesses_say_they_are_latency_bound() {
    let records = run_checked(
        "mem.bandwidth",
        &[("op", "read"), ("pattern", "random"), ("block", "1")],
    );
    let r = &records[0];
    assert_eq!(r.status, Status::Ok);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.to_string().contains("64x the counted bytes")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn threads_each_get_their_working_set() {
    run_checked("mem.bandwidth", &[("threads", "1,2"), ("op", "copy")]);
}

#[test]
fn latency_sweeps_patterns_strides_and_pages() {
    let records = run_checked(
        "mem.latency",
        &[
            ("pattern", "random,stride"),
            ("stride", "64,128"),
            ("hugepages", "on,off"),
            ("size", "4M"),
        ],
    );
    assert_eq!(records.len(), 8);
    for r in &records {
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
    let reg = harness().registry();
    runner::plan(&reg, &RunConfig::smoke_test(selector, sweep))
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
    let h = harness()
        .host(tiny_cache_host())
        .option("peak-mem-bw", "50GB/s");
    let report = h.run("mem.bandwidth", &[("size", "16K,4M"), ("op", "read")]);
    let (cached, dram) = (&report.records[0], &report.records[1]);
    h.check_record(cached);
    h.check_record(dram);
    assert_eq!(dram.status, Status::Ok);
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
    let h = harness().host(tiny_cache_host());
    let report = h.run("mem.bandwidth", &[("size", "4M"), ("op", "read")]);
    let r = &report.records[0];
    h.check_record(r);
    if r.peak.is_none() {
        assert!(
            r.notes.iter().any(|w| w.contains("DRAM bandwidth unknown")),
            "{:?}",
            r.notes
        );
    }
    // A malformed rate is a usage error before anything runs.
    let cfg = RunConfig::smoke_test("mem.bandwidth", &[("op", "read")])
        .to_builder()
        .option("peak-mem-bw", "fast")
        .build()
        .unwrap();
    let e = runner::plan_on(&harness().registry(), &cfg, tiny_cache_host())
        .expect_err("a malformed --peak-mem-bw is refused")
        .to_string();
    assert!(e.contains("peak-mem-bw") && e.contains("fast"), "{e}");
}

#[test]
fn automatic_size_follows_the_last_level_cache() {
    // Not a smoke run (the harness's runs are): the default size, resolved.
    let cfg = RunConfig::smoke_test("mem.bandwidth", &[("op", "read")])
        .to_builder()
        .smoke(false)
        .quick(true)
        .build()
        .unwrap();
    let h = harness();
    let reg = h.registry();
    let plan = runner::plan_on(&reg, &cfg, tiny_cache_host()).unwrap();
    let report = runner::run_plan(&plan, &cfg, &mut Silent);
    let r = &report.records[0];
    h.check_record(r);
    assert_eq!(r.status, Status::Ok);
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
        r.warnings
            .iter()
            .any(|w| w.to_string().contains("size=auto: 64MiB")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.notes.iter().any(|w| w.contains("DRAM-bound")),
        "{:?}",
        r.notes
    );
}
