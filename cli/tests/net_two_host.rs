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

const BIN: &str = env!("CARGO_BIN_EXE_benchsuite");

/// Deletes the namespaces (and with them the veth pair) and stops the
/// server, whatever happened.
struct Netns {
    server_ns: String,
    client_ns: String,
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
    let ns = Netns {
        server_ns: format!("bs-srv-{pid}"),
        client_ns: format!("bs-cli-{pid}"),
        server: None,
    };
    let (a, b) = (format!("bsa{pid}"), format!("bsb{pid}"));
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
            eprintln!(
                "skipped: cannot create network namespaces here (needs root and iproute2): {why}"
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
        &["serve", "--bind", "10.203.0.1:5301", "--token", "two-hosts"],
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
        "two-hosts",
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
    let warnings = rec["warnings"].to_string();
    assert!(warnings.contains("virtual interface"), "{warnings}");
    assert!(
        rec["peak"].is_null(),
        "a veth has no physical peak: {}",
        rec["peak"]
    );

    // UDP, latency and connect work across it too.
    for (bench, extra) in [
        ("net.udp_throughput", vec!["--param", "rate=200M"]),
        ("net.latency", vec!["--param", "proto=tcp,udp"]),
        ("net.connect", vec![]),
    ] {
        let mut args = vec!["run", bench, "--token", "two-hosts"];
        args.extend(peer);
        args.extend(extra);
        args.extend(FAST);
        let (_, v) = run_json(&ns.client_ns, &args);
        for rec in v["records"].as_array().unwrap() {
            assert_eq!(rec["status"], "ok", "{rec}");
        }
    }

    // A wrong token: the client's record says so, and so does the server.
    let mut args = vec!["run", "net.connect", "--token", "guess"];
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
