//! `net.latency` in an open loop (`rate=N`) against the in-process
//! loopback server: the runner's load accounting, the notes, one batch
//! through the case directly, and the usage errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{
    Benchmark, ConfigError, Context, Host, Point, Record, Registry, RunConfig, Status, Value,
};
use benchsuite_net::{DESCRIPTION, Latency, MODULE, benchmarks};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks())
        .expect("the net module keeps the contract");
    r
}

/// Three samples of at least 300 ms each (about 1500 requests at
/// 5000/s), so a batch's drain and a scheduler hiccup of a few ms stay
/// well inside the 5% the saturation check allows.
fn run(sweep: &[(&str, &str)]) -> Record {
    let cfg = RunConfig::smoke_test("net.latency", sweep)
        .to_builder()
        .runs(3)
        .min_sample_time(Duration::from_millis(300))
        .warmup(Duration::from_millis(100))
        .build()
        .unwrap();
    let report = runner::run(&registry(), &cfg, &mut Silent).unwrap();
    assert_eq!(report.records.len(), 1);
    report.records.into_iter().next().unwrap()
}

fn check_open(r: &Record, rate: f64) {
    assert_eq!(r.status, Status::Ok, "{}: {:?}", r.key(), r.reason);
    let load = r.load.expect("an open-loop record has its load");
    assert_eq!(load.offered, rate);
    assert!(
        (load.achieved - rate).abs() <= 0.05 * rate,
        "{}: achieved {} of {rate}",
        r.key(),
        load.achieved
    );
    assert!(!load.saturated, "{}: {load:?}", r.key());
    let rtt = r.metric("rtt").unwrap();
    let lat = rtt.latency.as_ref().expect("percentiles");
    // Every answered request is one latency: the batch's operations.
    let iters = r.iters_per_sample.unwrap();
    assert_eq!(lat.count, iters * rtt.samples.len() as u64, "{}", r.key());
    assert!(lat.min > 0.0 && lat.p50 <= lat.p99 && lat.p99 <= lat.max);
    let notes = r.notes.join(" | ");
    assert!(
        notes.contains(&format!("open loop at {rate} requests/s on 1 connection"))
            && notes.contains("intended start")
            && notes.contains("outstanding"),
        "{notes}"
    );
}

#[test]
fn tcp_open_loop_keeps_its_rate_and_records_every_request() {
    let r = run(&[("rate", "5000")]);
    check_open(&r, 5000.0);
}

#[test]
fn udp_open_loop_keeps_its_rate_and_records_every_request() {
    let r = run(&[("rate", "5k"), ("proto", "udp"), ("block", "64")]);
    // Loopback loses nothing at this rate; a loss would show as a caveat
    // and as a count below the operations asked for.
    check_open(&r, 5000.0);
}

#[test]
fn closed_loop_is_the_default_and_has_no_load() {
    let r = run(&[]);
    assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
    assert!(r.load.is_none());
    assert_eq!(r.params.get("rate"), Some(&Value::Str("off".into())));
}

fn point(over: &[(&str, Value)]) -> Point {
    let mut p = Point::default();
    for s in Latency.meta().params {
        p.set(&s.name, s.default.clone());
    }
    for (k, v) in over {
        p.set(k, v.clone());
    }
    p
}

fn ctx() -> Context {
    Context::new(Arc::new(Host::default()))
}

/// One batch through the case: the schedule spaces the requests (the batch
/// lasts about `iters / rate`), and each gets one latency.
#[test]
fn one_batch_sends_on_schedule_and_drains() {
    for proto in ["tcp", "udp"] {
        let p = point(&[
            ("rate", Value::Int(2000)),
            ("proto", Value::Str(proto.into())),
            ("block", Value::Int(16)),
        ]);
        let mut case = Latency.prepare(&ctx(), &p).unwrap();
        let t0 = Instant::now();
        let w = case.run(400).unwrap();
        let took = t0.elapsed();
        assert_eq!(w.ops, 400, "{proto}");
        assert_eq!(w.latency.as_ref().unwrap().len(), 400, "{proto}");
        // 399 periods of 0.5 ms: 199.5 ms, plus the last answer.
        assert!(
            took >= Duration::from_micros(199_500) && took < Duration::from_secs(5),
            "{proto}: {took:?}"
        );
        // A second batch starts its schedule afresh.
        let w = case.run(10).unwrap();
        assert_eq!(w.ops, 10);
        let f = case.finish();
        assert!(f.error.is_none(), "{proto}: {:?}", f.error);
        assert!(
            f.about
                .notes
                .iter()
                .any(|n| n.contains("open loop at 2000")),
            "{:?}",
            f.about.notes
        );
    }
}

fn plan_error(sweep: &[(&str, &str)]) -> String {
    match runner::plan(&registry(), &RunConfig::smoke_test("net.latency", sweep)) {
        Ok(_) => panic!("{sweep:?} was accepted"),
        Err(e @ ConfigError::InvalidValue { .. }) => e.to_string(),
        Err(e) => panic!("{sweep:?}: unexpected error {e}"),
    }
}

#[test]
fn bad_rates_are_usage_errors_naming_the_parameter() {
    let e = plan_error(&[("rate", "0")]);
    assert!(e.contains("`rate`"), "{e}");
    let e = plan_error(&[("rate", "fast")]);
    assert!(e.contains("`rate`"), "{e}");
    // UDP answers are matched by an 8-byte sequence number.
    let e = plan_error(&[("rate", "1000"), ("proto", "udp"), ("block", "4")]);
    assert!(e.contains("`block`") && e.contains("at least 8"), "{e}");
    // The closed loop and TCP take any block.
    for ok in [
        &[("proto", "udp"), ("block", "4")][..],
        &[("rate", "1000"), ("block", "1")],
        &[("rate", "1000"), ("load", "tcp"), ("cpus", "same")],
    ] {
        runner::plan(&registry(), &RunConfig::smoke_test("net.latency", ok))
            .unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
}

/// `rate=auto` is the capacity search's to resolve; reaching the case it
/// is an error that says so, not a panic.
#[test]
fn an_unresolved_auto_rate_is_an_error() {
    let p = point(&[("rate", Value::Str("auto".into()))]);
    let e = Latency.prepare(&ctx(), &p).err().expect("refused");
    let e = e.to_string();
    assert!(e.contains("rate=auto") && e.contains("capacity"), "{e}");
}

/// Far above what the server keeps up with, requests pile up on the
/// connection: the server's echo answers every byte of the pipelined
/// stream, in order, and each request gets its latency.
#[test]
fn pipelined_requests_are_all_answered() {
    for block in [1, 100, 65536] {
        let p = point(&[
            ("rate", Value::Int(1_000_000)),
            ("block", Value::Int(block)),
        ]);
        let mut case = Latency.prepare(&ctx(), &p).unwrap();
        let n = if block == 65536 { 200 } else { 5000 };
        let w = case.run(n).unwrap();
        assert_eq!(w.ops, n);
        assert_eq!(w.latency.unwrap().len(), n);
        let f = case.finish();
        assert!(f.error.is_none(), "{:?}", f.error);
        let note = f.about.notes.join(" | ");
        assert!(!note.contains("up to 1 request was"), "{block}: {note}");
    }
}
