//! Coordinated omission, shown on a real server: `net.latency` against a
//! `benchsuite serve` process that is stopped (SIGSTOP) for 100 ms in the
//! middle of a batch, once in a closed loop (ping-pong) and once in an
//! open loop at 2000 requests/s.
//!
//! The closed loop waits out the stall in a single round trip: one slow
//! sample among thousands, so its p99 does not move (its maximum shows the
//! stall). The open loop keeps its schedule: the ~200 requests that should
//! have started during the stall queue behind it, and each counts the
//! wait from its intended start, so its p99 is most of the stall.
//!
//! Linux (signals to a child process, loopback); elsewhere skipped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::testing::{Capability, skip};
use benchsuite_core::{Benchmark, Case, Context, Host, Point, Value};

const BIN: &str = env!("CARGO_BIN_EXE_benchsuite");
const TOKEN: &str = "openloop-stall-3b9e1f07c5d2a846";

/// How long the server is stopped.
const STALL: Duration = Duration::from_millis(100);

/// The open loop's rate: 200 requests fall in the stall.
const RATE: u64 = 2000;

/// A `benchsuite serve` on 127.0.0.1; dropping it resumes (SIGCONT, in
/// case it is stopped) and kills it.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("BENCHSUITE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("benchsuite serve starts");
        // Drained all along: a full pipe would block the server's logging.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("listening on") {
                    let _ = tx.send(line);
                }
            }
        });
        let mut serve = Serve {
            child,
            addr: "127.0.0.1:9".parse().unwrap(),
        };
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("benchsuite serve says it listens");
        serve.addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        serve
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        signal(self.pid(), libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill takes plain integers; `pid` is our own child, not yet
    // reaped (Serve waits for it only when dropped, after every Stall).
    unsafe { libc::kill(pid, sig) };
}

/// Stops the server `after` from now for [`STALL`], on a thread of its
/// own. Joined when dropped (declared after the [`Serve`], it is dropped
/// first), so no signal can reach a reaped PID; the server is resumed
/// whatever happens.
struct Stall(Option<JoinHandle<Duration>>);

impl Stall {
    fn start(pid: libc::pid_t, after: Duration) -> Stall {
        Stall(Some(std::thread::spawn(move || {
            std::thread::sleep(after);
            let t = Instant::now();
            signal(pid, libc::SIGSTOP);
            std::thread::sleep(STALL);
            signal(pid, libc::SIGCONT);
            t.elapsed()
        })))
    }

    /// Waits for the stall to end; its length.
    fn join(&mut self) -> Duration {
        self.0.take().map_or(Duration::ZERO, |h| h.join().unwrap())
    }

    fn finished(&self) -> bool {
        self.0.as_ref().is_none_or(|h| h.is_finished())
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

fn case(addr: SocketAddr, rate: Value) -> Box<dyn Case> {
    let bench = benchsuite_net::Latency;
    let mut ctx = Context::new(Arc::new(Host::default()));
    ctx.options.insert("peer".into(), addr.to_string());
    ctx.options.insert("token".into(), TOKEN.into());
    let mut p = Point::default();
    for s in bench.meta().params {
        p.set(&s.name, s.default.clone());
    }
    p.set("block", Value::Int(64));
    p.set("rate", rate);
    bench.validate(&ctx, &p).unwrap();
    bench.prepare(&ctx, &p).unwrap()
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn a_stall_shows_in_the_open_loops_p99_and_hides_in_the_closed_loops() {
    if !cfg!(target_os = "linux") {
        skip(Capability::Linux, "stops a child process with SIGSTOP");
        return;
    }
    let serve = Serve::start();

    // Closed loop: batches of 100 round trips until the stall (300 ms in)
    // is over and 200 ms more have passed.
    let mut closed = case(serve.addr, Value::Str("off".into()));
    closed.run(200).unwrap(); // warm
    let mut hist = new_latency_histogram();
    let mut stall = Stall::start(serve.pid(), Duration::from_millis(300));
    let mut after: Option<Instant> = None;
    while after.is_none_or(|t| t.elapsed() < Duration::from_millis(200)) {
        let w = closed.run(100).unwrap();
        assert_eq!(w.ops, 100);
        hist.add(w.latency.unwrap()).unwrap();
        if after.is_none() && stall.finished() {
            after = Some(Instant::now());
        }
    }
    let closed_stall = stall.join();
    let f = closed.finish();
    assert!(f.error.is_none(), "{:?}", f.error);
    let (c_p99, c_max, c_n) = (hist.value_at_quantile(0.99), hist.max(), hist.len());
    eprintln!(
        "closed loop: {c_n} round trips, p50 {:.3} ms, p99 {:.3} ms, max {:.1} ms (stall {closed_stall:?})",
        ms(hist.value_at_quantile(0.5)),
        ms(c_p99),
        ms(c_max)
    );

    // Open loop: one batch of 2000 requests at 2000/s (1 s), the stall
    // 400 ms in.
    let mut open = case(serve.addr, Value::Int(RATE));
    open.run(100).unwrap(); // warm
    let mut stall = Stall::start(serve.pid(), Duration::from_millis(400));
    let t0 = Instant::now();
    let w = open.run(RATE).unwrap();
    let took = t0.elapsed();
    let open_stall = stall.join();
    let f = open.finish();
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(w.ops, RATE);
    let h = w.latency.unwrap();
    assert_eq!(h.len(), RATE);
    let (o_p99, o_max) = (h.value_at_quantile(0.99), h.max());
    let over_50ms = h.count_between(50_000_000, u64::MAX);
    eprintln!(
        "open loop at {RATE}/s: batch {took:?}, p50 {:.3} ms, p99 {:.1} ms, max {:.1} ms, {over_50ms} requests over 50 ms (stall {open_stall:?})",
        ms(h.value_at_quantile(0.5)),
        ms(o_p99),
        ms(o_max)
    );
    drop(stall);
    drop(serve);

    // Both loops saw the stall: its wait is in their maximum (a stall of
    // at least 100 ms; 80 ms leaves room for the signal's delivery).
    assert!(c_max >= 80_000_000, "closed loop max {:.1} ms", ms(c_max));
    assert!(o_max >= 80_000_000, "open loop max {:.1} ms", ms(o_max));
    // The closed loop made hundreds of round trips at least (thousands on
    // any machine: ~50 µs each), so its one stalled round trip lies above
    // its p99, which stays at scheduler noise: 25 ms is a quarter of the
    // stall and far above any round trip of a loaded 2-vCPU guest.
    assert!(c_n >= 500, "closed loop: only {c_n} round trips");
    assert!(
        c_p99 < 25_000_000,
        "closed loop p99 {:.1} ms: the stall should be one sample",
        ms(c_p99)
    );
    // The open loop's requests intended during the stall waited from
    // their intended start to its end: uniformly 0..100 ms for 10% of
    // the batch, so the top 1% (p99) waited ~90 ms, and ~100 requests
    // (those of the stall's first half) over 50 ms. 50 ms and 50
    // requests leave room for a stall cut short by scheduling.
    assert!(
        o_p99 >= 50_000_000,
        "open loop p99 {:.1} ms: the stall should count for every request behind it",
        ms(o_p99)
    );
    assert!(
        over_50ms >= 50,
        "open loop: {over_50ms} requests over 50 ms"
    );
}
