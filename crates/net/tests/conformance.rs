//! Conformance: every `net` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner, against the
//! in-process loopback server.

use benchsuite_core::runner;
use benchsuite_core::testing::Conformance;
use benchsuite_core::{ConfigError, Direction, Record, RunConfig, Status};
use benchsuite_net::{DESCRIPTION, MODULE, benchmarks};

/// Loopback moves bytes with memcpy: no machine this runs on copies more
/// than 1 TB/s, and 10 s per round trip or connection is a hang, not a
/// slow box. Loss, reordering, jitter and the spread of connection trials
/// are legitimately zero on loopback.
fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(|id, metric| match (id, metric) {
            ("net.tcp_throughput", "throughput" | "stream_min" | "stream_max")
            | ("net.udp_throughput", "received" | "offered") => f64::MIN_POSITIVE..1e12,
            ("net.tcp_throughput", "throughput_bits") => f64::MIN_POSITIVE..8e12,
            ("net.udp_throughput", "datagrams") => f64::MIN_POSITIVE..1e9,
            // 0..=100 %.
            ("net.udp_throughput", "loss" | "out_of_order") => 0.0..100f64.next_up(),
            ("net.udp_throughput", "jitter") | ("net.connect", "trial_stddev") => 0.0..10.0,
            ("net.latency", "rtt") | ("net.connect", "connect") => f64::MIN_POSITIVE..10.0,
            _ => panic!("no physical bound for {id} {metric}"),
        })
        // Two pinned CPUs need two CPUs; anything else must run.
        .may_skip(|r| {
            let cpus = r.params.get("cpus").and_then(|v| v.as_str());
            matches!(
                (r.id.as_str(), cpus),
                ("net.latency", Some("different")) | ("net.tcp_throughput", Some("split"))
            ) && r
                .reason
                .as_deref()
                .is_some_and(|why| why.contains("needs two CPUs"))
        })
        .check_each(check_each)
}

/// Latency metrics carry sane percentiles; TCP's bit rate is its byte
/// rate × 8.
fn check_each(r: &Record) {
    for m in &r.metrics {
        if let Some(lat) = &m.latency {
            let what = format!("{} {}", r.key(), m.name);
            assert!(lat.count >= 3, "{what}: {} operations", lat.count);
            assert!(
                lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max,
                "{what}: {lat:?}"
            );
        }
    }
    for name in ["rtt", "connect"] {
        if let Some(m) = r.metric(name) {
            assert!(m.latency.is_some(), "{} {name}: no percentiles", r.key());
        }
    }
    if r.id == "net.tcp_throughput" {
        let total = r.metric("throughput").unwrap().summary.median;
        let bits = r.metric("throughput_bits").unwrap().summary.median;
        // Same bytes over (to within two clock reads) the same interval.
        let ratio = bits / (8.0 * total);
        assert!(
            (0.5..2.0).contains(&ratio),
            "{}: bits/bytes ratio {ratio}",
            r.key()
        );
    }
}

/// A record that must have run (no skip allowed), checked by the harness.
fn check_ok(r: &Record) {
    assert_eq!(
        r.status,
        Status::Ok,
        "{}: {:?}",
        r.key(),
        r.reason.as_deref().unwrap_or("")
    );
    harness().check_record(r);
}

#[test]
fn meta_is_well_formed() {
    harness().check_meta();
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
fn benchmarks_run_in_order_and_loss_and_time_are_lower_is_better() {
    let mut ids = Vec::new();
    for b in benchmarks() {
        let m = b.meta();
        for s in &m.metrics {
            if s.unit == "%" || s.unit == "s" {
                assert_eq!(s.direction, Direction::Lower, "{} {}", m.id, s.name);
            }
        }
        ids.push(m.id);
    }
    assert_eq!(
        ids,
        [
            "net.tcp_throughput",
            "net.udp_throughput",
            "net.latency",
            "net.connect"
        ]
    );
}

#[test]
fn pinned_latency_says_where_it_ran_and_unpins() {
    let cpus = benchsuite_core::team::allowed_cpus();
    let report = harness().run(
        "net.latency",
        &[("cpus", "same,different"), ("proto", "tcp,udp")],
    );
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        let mode = r.params.get("cpus").and_then(|v| v.as_str()).unwrap();
        if mode == "different" && cpus.len() < 2 {
            assert_eq!(r.status, Status::Skipped, "{}", r.key());
            continue;
        }
        check_ok(r);
        let notes = r.notes.join(" | ");
        let (client, server) = match mode {
            "same" => (cpus[0], cpus[0]),
            _ => (cpus[0], cpus[1]),
        };
        assert!(
            notes.contains(&format!(
                "cpus={mode}: this client thread ran on CPU {client}, the server's echo thread on CPU {server}"
            )),
            "{}: {notes}",
            r.key()
        );
        assert!(notes.contains("path to 127.0.0.1: loopback"), "{notes}");
    }
    // Finishing each case gave the runner's thread its CPUs back.
    assert_eq!(benchsuite_core::team::allowed_cpus(), cpus);
}

#[test]
fn loopback_records_say_the_limit_is_memory_bandwidth() {
    let report = harness().run("net.tcp_throughput", &[]);
    let r = &report.records[0];
    check_ok(r);
    assert!(r.peak.is_none(), "{:?}", r.peak);
    let notes = r.notes.join(" | ");
    assert!(
        notes.contains("loopback") && notes.contains("memory bandwidth"),
        "{notes}"
    );
    let facts = &report.host.extra["net"];
    assert_eq!(facts["server"], "in-process", "{facts}");
    assert_eq!(facts["path"], "loopback", "{facts}");
}

#[test]
fn streams_block_sizes_and_rates_sweep() {
    let h = harness();
    let report = h.run(
        "net.tcp_throughput",
        &[("threads", "2"), ("block", "1,1K"), ("nodelay", "on,off")],
    );
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        check_ok(r);
    }
    let report = h.run(
        "net.udp_throughput",
        &[
            ("threads", "2"),
            ("block", "16,65507"),
            ("rate", "max,200M"),
        ],
    );
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        check_ok(r);
        let offered = r.metric("offered").unwrap().summary.median;
        if r.params.get("rate").and_then(|v| v.as_str()) == Some("200M") {
            // Paced: the offered rate is the asked one (a little below
            // when the pacer sleeps late, never far above).
            assert!(
                offered * 8.0 < 200e6 * 1.2,
                "{}: offered {offered:e}",
                r.key()
            );
        }
    }
    let report = h.run(
        "net.latency",
        &[("block", "1,1K,65507"), ("proto", "tcp,udp")],
    );
    for r in &report.records {
        check_ok(r);
    }
}

fn plan_error(selector: &str, sweep: &[(&str, &str)]) -> String {
    let reg = harness().registry();
    match runner::plan(&reg, &RunConfig::smoke_test(selector, sweep)) {
        Ok(_) => panic!("{selector} {sweep:?} was accepted"),
        Err(e @ ConfigError::InvalidValue { .. }) => e.to_string(),
        Err(e) => panic!("{selector} {sweep:?}: unexpected error {e}"),
    }
}

#[test]
fn bad_parameters_are_usage_errors_naming_the_parameter() {
    let e = plan_error("net.tcp_throughput", &[("block", "0")]);
    assert!(e.contains("`block`") && e.contains("between"), "{e}");
    let e = plan_error("net.tcp_throughput", &[("block", "2M")]);
    assert!(e.contains("`block`"), "{e}");
    let e = plan_error("net.udp_throughput", &[("block", "65508")]);
    assert!(e.contains("`block`") && e.contains("65507"), "{e}");
    let e = plan_error("net.udp_throughput", &[("block", "8")]);
    assert!(e.contains("`block`"), "{e}");
    let e = plan_error("net.udp_throughput", &[("rate", "fast")]);
    assert!(e.contains("`rate`") && e.contains("max"), "{e}");
    let e = plan_error("net.latency", &[("block", "0")]);
    assert!(e.contains("`block`"), "{e}");
    let e = plan_error("net.tcp_throughput", &[("threads", "0")]);
    assert!(e.contains("`threads`"), "{e}");
    let e = plan_error("net.latency", &[("cpus", "1")]);
    assert!(e.contains("`cpus`"), "{e}");
    // Pinning needs the server in this process.
    let cfg = RunConfig::smoke_test("net.latency", &[("cpus", "same")])
        .to_builder()
        .option("peer", "127.0.0.1:9")
        .build()
        .unwrap();
    match runner::plan(&harness().registry(), &cfg) {
        Err(e @ ConfigError::InvalidValue { .. }) => {
            let e = e.to_string();
            assert!(
                e.contains("`cpus`") && e.contains("--peer") && e.contains("taskset"),
                "{e}"
            );
        }
        other => panic!("cpus=same with --peer: {:?}", other.map(|_| ())),
    }
}

/// `--duration`: each interval's reported metrics cover the whole interval,
/// not its last batch. The bit rate is the interval's bytes over its time
/// (so it matches the byte-rate metric), and the slowest and fastest
/// stream bracket the interval's rate.
#[test]
fn time_series_intervals_report_over_the_whole_interval() {
    let cfg = RunConfig::smoke_test("net.tcp_throughput", &[("threads", "1")])
        .to_builder()
        .duration(Some(std::time::Duration::from_millis(1500)))
        .interval(Some(std::time::Duration::from_millis(300)))
        .build()
        .unwrap();
    let report = runner::run(&harness().registry(), &cfg, &mut runner::Silent).unwrap();
    let r = &report.records[0];
    assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
    let series = |name: &str| {
        r.metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .samples
            .clone()
    };
    let (bytes, bits) = (series("throughput"), series("throughput_bits"));
    let (lo, hi) = (series("stream_min"), series("stream_max"));
    assert!(bytes.len() >= 3, "{} intervals", bytes.len());
    for i in 0..bytes.len() {
        let rate = bytes[i];
        // Bytes over the runner's clock vs over the case's: two clock
        // reads apart per batch.
        let ratio = bits[i] / (8.0 * rate);
        assert!(
            (0.97..1.03).contains(&ratio),
            "interval {i}: {} bit/s vs 8 × {rate} B/s",
            bits[i]
        );
        assert!(
            lo[i] <= rate * 1.03 && hi[i] >= rate * 0.97 && lo[i] <= hi[i],
            "interval {i}: slowest {} fastest {} around {rate}",
            lo[i],
            hi[i]
        );
    }
}
