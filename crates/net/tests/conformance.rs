//! Conformance: every `net` benchmark at its smoke point and at every value
//! of its choice parameters, through the real runner, against the
//! in-process loopback server.

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{
    ConfigError, Direction, ParamKind, Record, Registry, Report, RunConfig, Status,
};
use benchsuite_net::{DESCRIPTION, MODULE, benchmarks};

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

/// Loopback moves bytes with memcpy: no machine this runs on copies more
/// than 1 TB/s, and 10 s per round trip or connection is a hang, not a
/// slow box.
fn check(r: &Record) {
    assert_eq!(
        r.status,
        Status::Ok,
        "{}: {:?}",
        r.key(),
        r.reason.as_deref().unwrap_or("")
    );
    assert!(!r.metrics.is_empty(), "{}: no metrics", r.key());
    for m in &r.metrics {
        let med = m.summary.median;
        let what = format!("{} {}", r.key(), m.name);
        assert!(med.is_finite(), "{what}: median {med}");
        assert_eq!(m.samples.len(), 3, "{what}");
        match m.unit.as_str() {
            "B/s" => assert!(med > 0.0 && med < 1e12, "{what}: {med:e} B/s"),
            "bit/s" => assert!(med > 0.0 && med < 8e12, "{what}: {med:e} bit/s"),
            "datagram/s" => assert!(med > 0.0 && med < 1e9, "{what}: {med:e}/s"),
            // Loss and reordering are legitimately zero on loopback.
            "%" => assert!((0.0..=100.0).contains(&med), "{what}: {med}%"),
            "s" if m.name == "jitter" || m.name == "trial_stddev" => {
                assert!((0.0..10.0).contains(&med), "{what}: {med} s")
            }
            "s" => {
                assert!(med > 0.0 && med < 10.0, "{what}: {med} s");
                let lat = m
                    .latency
                    .as_ref()
                    .expect("a latency metric has percentiles");
                assert!(lat.count >= 3, "{what}: {} operations", lat.count);
                assert!(
                    lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max,
                    "{what}: {lat:?}"
                );
            }
            u => panic!("{what}: no bound for unit {u}: add one to this test"),
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

#[test]
fn metadata_is_well_formed() {
    let mut ids = Vec::new();
    for b in benchmarks() {
        let m = b.meta();
        assert_eq!(m.module(), MODULE, "{}", m.id);
        assert!(!m.description.is_empty());
        for p in &m.params {
            p.kind.check(p.name, &p.default).unwrap();
            p.kind.check(p.name, p.smoke_value()).unwrap();
            assert!(!p.help.is_empty(), "{} {}", m.id, p.name);
        }
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
fn every_benchmark_runs_at_its_smoke_point() {
    let report = run(MODULE, &[]);
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        check(r);
    }
}

#[test]
fn every_choice_runs() {
    for b in benchmarks() {
        let meta = b.meta();
        let choices: Vec<(&str, String)> = meta
            .params
            .iter()
            .filter_map(|p| match p.kind {
                ParamKind::Choice(names) => Some((p.name, names.join(","))),
                _ => None,
            })
            .collect();
        if choices.is_empty() {
            continue;
        }
        let sweep: Vec<(&str, &str)> = choices.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let report = run(meta.id, &sweep);
        for r in &report.records {
            // Two pinned CPUs need two CPUs; anything else must run.
            if r.status == Status::Skipped
                && r.params.get("cpus").and_then(|v| v.as_str()) == Some("different")
            {
                let why = r.reason.as_deref().unwrap_or("");
                assert!(why.contains("needs two CPUs"), "{}: {why}", r.key());
                continue;
            }
            check(r);
        }
    }
}

#[test]
fn pinned_latency_says_where_it_ran_and_unpins() {
    let cpus = benchsuite_core::team::allowed_cpus();
    let report = run(
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
        check(r);
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
    // Teardown gave the runner's thread its CPUs back.
    assert_eq!(benchsuite_core::team::allowed_cpus(), cpus);
}

#[test]
fn loopback_records_say_the_limit_is_memory_bandwidth() {
    let report = run("net.tcp_throughput", &[]);
    let r = &report.records[0];
    check(r);
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
    let report = run(
        "net.tcp_throughput",
        &[("threads", "2"), ("block", "1,1K"), ("nodelay", "on,off")],
    );
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        check(r);
    }
    let report = run(
        "net.udp_throughput",
        &[
            ("threads", "2"),
            ("block", "16,65507"),
            ("rate", "max,200M"),
        ],
    );
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        check(r);
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
    let report = run(
        "net.latency",
        &[("block", "1,1K,65507"), ("proto", "tcp,udp")],
    );
    for r in &report.records {
        check(r);
    }
}

fn plan_error(selector: &str, sweep: &[(&str, &str)]) -> String {
    let reg = registry();
    match runner::plan(&reg, &config(selector, sweep)) {
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
    let mut cfg = config("net.latency", &[("cpus", "same")]);
    cfg.options.insert("peer".into(), "127.0.0.1:9".into());
    match runner::plan(&registry(), &cfg) {
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
