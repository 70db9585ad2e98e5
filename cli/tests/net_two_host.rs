//! Two hosts on one machine: network namespaces joined by a veth pair, the
//! real `benchsuite serve` in one, the client in the other. Checks that a
//! test across them gives a sane throughput, that the token is enforced
//! (both sides say so), that a public bind without a token is refused,
//! that an unreachable peer fails within the connect timeout, and that
//! SIGTERM stops the server cleanly.
//!
//! Needs root (CAP_NET_ADMIN) and `ip`; elsewhere it is skipped with the
//! reason printed. Namespaces are named with this process's id and always
//! deleted, also when an assertion fails.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use benchsuite_core::testing::{Capability, skip};

const BIN: &str = env!("CARGO_BIN_EXE_benchsuite");

/// Deletes the namespaces (and with them the veth pair) and stops the
/// server, whatever happened.
struct Netns {
    server_ns: String,
    client_ns: String,
    /// The client's end of the veth pair.
    client_veth: String,
    server: Option<Child>,
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.server_ns, &self.client_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Two namespaces joined by a veth pair: server 10.203.0.1, client
/// 10.203.0.2 (addresses that exist only inside these namespaces).
fn setup() -> Result<Netns, String> {
    let pid = std::process::id();
    let (a, b) = (format!("bsa{pid}"), format!("bsb{pid}"));
    let ns = Netns {
        server_ns: format!("bs-srv-{pid}"),
        client_ns: format!("bs-cli-{pid}"),
        client_veth: b.clone(),
        server: None,
    };
    ip(&["netns", "add", &ns.server_ns])?;
    ip(&["netns", "add", &ns.client_ns])?;
    ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
    ip(&["link", "set", &a, "netns", &ns.server_ns])?;
    ip(&["link", "set", &b, "netns", &ns.client_ns])?;
    ip(&[
        "-n",
        &ns.server_ns,
        "addr",
        "add",
        "10.203.0.1/24",
        "dev",
        &a,
    ])?;
    ip(&[
        "-n",
        &ns.client_ns,
        "addr",
        "add",
        "10.203.0.2/24",
        "dev",
        &b,
    ])?;
    for (n, dev) in [(&ns.server_ns, &a), (&ns.client_ns, &b)] {
        ip(&["-n", n, "link", "set", dev, "up"])?;
        ip(&["-n", n, "link", "set", "lo", "up"])?;
    }
    Ok(ns)
}

fn in_ns(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, BIN]).args(args);
    c
}

fn run_json(ns: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let out = in_ns(ns, args).output().expect("run the client");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: no JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

fn record(v: &serde_json::Value) -> &serde_json::Value {
    &v["records"][0]
}

fn median(rec: &serde_json::Value, metric: &str) -> f64 {
    rec["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("no metric {metric} in {rec}"))["summary"]["median"]
        .as_f64()
        .unwrap()
}

/// What a record across the veth says about its path: the notes name the
/// client's veth end as a virtual interface; with `throughput`, that its
/// reported speed is no physical link speed and no peak is claimed, and
/// the record carries no peak (so no efficiency).
fn check_veth_path(rec: &serde_json::Value, veth: &str, throughput: bool) {
    let notes: Vec<&str> = rec["notes"]
        .as_array()
        .unwrap_or_else(|| panic!("no notes in {rec}"))
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let path = notes
        .iter()
        .find(|n| n.starts_with("path to 10.203.0.1, by the kernel's routing decision: "))
        .unwrap_or_else(|| panic!("no path note in {notes:?}"));
    assert!(
        path.contains(&format!(": {veth}, a virtual interface (veth)")),
        "{path}"
    );
    if throughput {
        assert!(
            path.contains("is not a physical link speed")
                && path.contains("no link-speed peak is claimed"),
            "{path}"
        );
    }
    assert!(
        rec["peak"].is_null(),
        "a veth has no physical peak: {}",
        rec["peak"]
    );
    assert!(!rec.to_string().contains("efficiency"), "{rec}");
}

const FAST: &[&str] = &[
    "--runs",
    "3",
    "--min-sample-time",
    "5ms",
    "--warmup",
    "5ms",
    "--format",
    "json",
    "--no-progress",
];

#[test]
fn serve_and_run_across_two_network_namespaces() {
    let mut ns = match setup() {
        Ok(ns) => ns,
        Err(why) => {
            skip(
                Capability::Netns,
                &format!("cannot create network namespaces here (needs root and iproute2): {why}"),
            );
            return;
        }
    };

    // A public address without a token is refused before listening.
    let out = in_ns(&ns.server_ns, &["serve", "--bind", "10.203.0.1:5301"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--token") && err.contains("10.203.0.1:5301"),
        "{err}"
    );

    let mut server = in_ns(
        &ns.server_ns,
        &[
            "serve",
            "--bind",
            "10.203.0.1:5301",
            "--token",
            "two-hosts-token-0123",
        ],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stderr = server.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    ns.server = Some(server);
    let mut log = Vec::new();
    let t = Instant::now();
    while !log
        .iter()
        .any(|l: &String| l.contains("listening on 10.203.0.1:5301"))
    {
        match rx.recv_timeout(Duration::from_secs(10).saturating_sub(t.elapsed())) {
            Ok(l) => log.push(l),
            Err(_) => panic!("the server did not say it listens: {log:?}"),
        }
    }

    let peer = ["--peer", "10.203.0.1:5301"];
    // TCP across the veth: a sane throughput, counted by the receiver.
    let mut args = vec![
        "run",
        "net.tcp_throughput",
        "--token",
        "two-hosts-token-0123",
        "--block",
        "64K",
    ];
    args.extend(peer);
    args.extend(FAST);
    let (_, v) = run_json(&ns.client_ns, &args);
    let rec = record(&v);
    assert_eq!(rec["status"], "ok", "{rec}");
    let bw = median(rec, "throughput");
    // A veth is a memory copy: well above 1 MB/s, far below 1 TB/s.
    assert!(bw > 1e6 && bw < 1e12, "throughput {bw:e} B/s");
    // The path is the client's end of the veth, found by the kernel's
    // routing decision and named as what it is: a virtual interface whose
    // 10000 Mb/s (what a veth reports) is no link speed, so no peak and
    // no efficiency.
    check_veth_path(rec, &ns.client_veth, true);
    let facts = &v["host"]["extra"]["net"];
    assert_eq!(facts["server"], "10.203.0.1:5301", "{facts}");
    assert_eq!(facts["path"], "interface", "{facts}");
    assert_eq!(facts["interface"], ns.client_veth.as_str(), "{facts}");
    assert_eq!(facts["class"], "virtual", "{facts}");
    assert_eq!(facts["link_kind"], "veth", "{facts}");
    assert_eq!(facts["lookup"], "netlink", "{facts}");
    assert!(facts["line_rate_mbps"].is_null(), "{facts}");

    // UDP, latency and connect work across it too, and say the same.
    for (bench, extra) in [
        ("net.udp_throughput", vec!["--param", "rate=200M"]),
        ("net.latency", vec!["--param", "proto=tcp,udp"]),
        ("net.connect", vec![]),
    ] {
        let mut args = vec!["run", bench, "--token", "two-hosts-token-0123"];
        args.extend(peer);
        args.extend(extra);
        args.extend(FAST);
        let (_, v) = run_json(&ns.client_ns, &args);
        for rec in v["records"].as_array().unwrap() {
            assert_eq!(rec["status"], "ok", "{rec}");
            check_veth_path(rec, &ns.client_veth, bench == "net.udp_throughput");
        }
    }

    // Pinning the server's threads is not the client's business with --peer.
    let mut args = vec!["run", "net.latency", "--param", "cpus=same"];
    args.extend(peer);
    args.extend(FAST);
    let out = in_ns(&ns.client_ns, &args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cpus") && err.contains("--peer"), "{err}");

    // Without --peer, inside the namespace: loopback, whose limit is
    // memory bandwidth.
    let mut args = vec!["run", "net.tcp_throughput", "--block", "64K"];
    args.extend(FAST);
    let (_, v) = run_json(&ns.client_ns, &args);
    let rec = record(&v);
    assert_eq!(rec["status"], "ok", "{rec}");
    assert!(rec["peak"].is_null(), "{}", rec["peak"]);
    let notes = rec["notes"].to_string();
    assert!(
        notes.contains("path to 127.0.0.1: loopback") && notes.contains("memory bandwidth"),
        "{notes}"
    );
    assert_eq!(v["host"]["extra"]["net"]["path"], "loopback");

    // A wrong token: the client's record says so, and so does the server.
    let mut args = vec!["run", "net.connect", "--token", "guess-guess-guess-guess"];
    args.extend(peer);
    args.extend(FAST);
    let (_, v) = run_json(&ns.client_ns, &args);
    let rec = record(&v);
    assert_eq!(rec["status"], "failed");
    assert!(
        rec["reason"].as_str().unwrap().contains("wrong token"),
        "{rec}"
    );
    let t = Instant::now();
    while !log.iter().any(|l| l.contains("refused: wrong token"))
        && t.elapsed() < Duration::from_secs(5)
    {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            log.push(l);
        }
    }
    assert!(
        log.iter().any(|l| l.contains("refused: wrong token")),
        "server log: {log:?}"
    );

    // No host at .3: a clear error within the connect timeout.
    let t = Instant::now();
    let (_, v) = run_json(
        &ns.client_ns,
        &[
            &[
                "run",
                "net.connect",
                "--peer",
                "10.203.0.3:5301",
                "--opt",
                "connect-timeout=1s",
            ],
            FAST,
        ]
        .concat(),
    );
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    let rec = record(&v);
    assert_eq!(rec["status"], "failed");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("cannot connect to 10.203.0.3:5301"),
        "{rec}"
    );

    // SIGTERM: the server stops cleanly with exit status 0.
    let mut server = ns.server.take().unwrap();
    let pid = server.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the server ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}
