use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::*;
use crate::client::DATA_TIMEOUT;
use crate::proto::{self, STREAM};

/// `Cpus_allowed_list` of this process's threads named
/// "benchsuite-net-…" (client stream and server data threads alike:
/// names are cut to 15 bytes).
fn net_thread_cpus() -> Vec<String> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let (true, Some(l)) = (
            comm.starts_with("benchsuite-net-"),
            status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:")),
        ) {
            out.push(l.trim().to_string());
        }
    }
    out
}

#[test]
fn cpus_split_pins_the_two_ends_apart() {
    let allowed = benchsuite_core::team::allowed_cpus();
    if allowed.len() < 2 {
        benchsuite_core::testing::skip(
            benchsuite_core::testing::Capability::TwoCpus,
            &format!("cpus=split needs two CPUs, this process has {allowed:?}"),
        );
        return;
    }
    let ctx = Context::new(Arc::new(benchsuite_core::Host::default()));
    let mut p = Point::default();
    p.set("block", Value::Int(64 << 10));
    p.set("threads", Value::Int(1));
    p.set("direction", Value::Str("up".into()));
    p.set("nodelay", Value::Bool(false));
    p.set("cpus", Value::Str("split".into()));
    let mut case = TcpThroughput.prepare(&ctx, &p).unwrap();
    // 16 blocks' worth per stream.
    let w = case.run(16).unwrap();
    assert!(w.bytes > 0, "{w:?}");
    let cpus = net_thread_cpus();
    for c in [allowed[0], allowed[1]] {
        assert!(cpus.contains(&c.to_string()), "CPU {c} in {cpus:?}");
    }
    let finished = case.finish();
    assert!(finished.error.is_none(), "{:?}", finished.error);
    let note = finished
        .about
        .notes
        .iter()
        .find(|n| n.starts_with("cpus=split"))
        .cloned()
        .unwrap_or_default();
    assert!(
        note.contains(&format!("CPU {}", allowed[0]))
            && note.contains(&format!("CPU {}", allowed[1])),
        "{note}"
    );
    // The caller's own thread was never pinned.
    assert_eq!(benchsuite_core::team::allowed_cpus(), allowed);
}

#[test]
fn cpus_split_one_stream_on_two_cpus_and_say_why_not() {
    use StreamCpus::{Any, Auto};
    assert_eq!(split_cpus(Auto, true, 1, &[3, 7, 9]), Ok(Some((3, 7))));
    assert_eq!(
        split_cpus(StreamCpus::Split, true, 1, &[0, 1]),
        Ok(Some((0, 1)))
    );
    // auto falls back to the scheduler; split says what is missing.
    for (threads, cpus) in [(2, &[0usize, 1][..]), (1, &[0][..])] {
        assert_eq!(split_cpus(Auto, true, threads, cpus), Ok(None));
    }
    assert_eq!(split_cpus(Auto, false, 1, &[0, 1]), Ok(None));
    assert_eq!(split_cpus(Any, true, 1, &[0, 1]), Ok(None));
    let why = |threads, cpus: &[usize], local| {
        split_cpus(StreamCpus::Split, local, threads, cpus).unwrap_err()
    };
    assert!(why(2, &[0, 1], true).contains("threads=2"));
    assert!(why(1, &[0], true).contains("two CPUs"));
    assert!(why(1, &[0, 1], false).contains("--peer"));
}
use std::net::TcpListener;

/// A connected pair on loopback: (this host's end, the fake server's).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    (c, s)
}

fn who() -> Who {
    Who {
        index: 3,
        server: "the server at test".into(),
    }
}

/// Reads the stream's start word.
fn started(s: &mut TcpStream) {
    let mut w = [0u8; 8];
    s.read_exact(&mut w).unwrap();
    assert_eq!(u64::from_be_bytes(w), STREAM);
}

/// A fake server on its own thread.
fn serve(mut s: TcpStream, f: impl FnOnce(&mut TcpStream) + Send + 'static) -> JoinHandle<()> {
    thread::spawn(move || {
        started(&mut s);
        f(&mut s);
    })
}

/// `down`: sends until the write fails; the stop byte is ignored.
fn flood(s: &mut TcpStream) {
    let buf = [0x5au8; 16 << 10];
    while s.write_all(&buf).is_ok() {}
}

/// `down`, well behaved: sends until the stop byte, then ends.
fn source(s: &mut TcpStream) {
    let mut r = s.try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let t = thread::spawn(move || {
        let _ = r.read(&mut [0u8; 1]);
        st.store(true, Ordering::SeqCst);
    });
    let buf = [0x5au8; 16 << 10];
    while !stop.load(Ordering::SeqCst) && s.write_all(&buf).is_ok() {}
    let _ = s.shutdown(Shutdown::Write);
    t.join().unwrap();
}

/// `up`, well behaved: counts, reports after every read, and at the
/// end of file reports the total and ends.
fn sink(s: &mut TcpStream) {
    let t0 = Instant::now();
    let (mut buf, mut total) = (vec![0u8; 64 << 10], 0u64);
    let mut ns = 0;
    loop {
        let n = s.read(&mut buf).unwrap();
        total += n as u64;
        ns = (t0.elapsed().as_nanos() as u64).max(ns + 1);
        s.write_all(&proto::encode_report(total, ns)).unwrap();
        if n == 0 {
            break;
        }
    }
    s.shutdown(Shutdown::Write).unwrap();
}

#[test]
fn reports_split_anywhere_are_reassembled_and_counted_once() {
    let (count, meter) = (Count::default(), Meter::new(DATA_TIMEOUT));
    let mut wire = Vec::new();
    for (bytes, ns) in [(10, 1_000), (25, 2_000), (25, 3_000), (90, 4_000)] {
        wire.extend(proto::encode_report(bytes, ns));
    }
    let mut r = Reports::new(who(), Instant::now());
    // Pieces of 1, 7, 20 and the rest: every boundary inside a report.
    let mut rest = &wire[..];
    for cut in [1, 7, 20] {
        r.feed(&rest[..cut], 100, &count, &meter).unwrap();
        rest = &rest[cut..];
    }
    r.feed(rest, 100, &count, &meter).unwrap();
    assert_eq!(*lock(&count.report), (90, 4_000));
    assert_eq!((r.last, r.filled), (90, 0));
    // A count that goes back is a verification failure.
    let e = r
        .feed(&proto::encode_report(89, 5_000), 100, &count, &meter)
        .unwrap_err();
    assert!(matches!(e, BenchError::Verify(_)), "{e}");
}

#[test]
fn reports_that_overcount_or_misstate_the_time_are_rejected() {
    let (count, meter) = (Count::default(), Meter::new(DATA_TIMEOUT));
    let fresh = || {
        let mut r = Reports::new(who(), Instant::now());
        r.feed(&proto::encode_report(10, 1_000), 10, &count, &meter)
            .unwrap();
        r
    };
    let bad = |r: &mut Reports, bytes: u64, ns: u64, sent: u64| {
        let e = r
            .feed(&proto::encode_report(bytes, ns), sent, &count, &meter)
            .unwrap_err();
        assert!(matches!(e, BenchError::Verify(_)), "{e}");
        e.to_string()
    };
    // More than was sent, a huge count among them (no wrap, no panic).
    let e = bad(&mut fresh(), 11, 2_000, 10);
    assert!(
        e.contains("the server at test reported 11 bytes for stream 3 but only 10 were sent"),
        "{e}"
    );
    bad(&mut fresh(), u64::MAX, 2_000, 10);
    // A time that does not advance, or runs ahead of this host's clock.
    bad(&mut fresh(), 10, 1_000, 10);
    bad(&mut fresh(), 10, 999, 10);
    let e = bad(&mut fresh(), 10, u64::MAX, 10);
    assert!(e.contains("since the stream began"), "{e}");
    bad(&mut fresh(), 10, 5_000_000_000, 10);
    // A report at 0 ns: no time passed since the stream began.
    let mut r = Reports::new(who(), Instant::now());
    bad(&mut r, 0, 0, 0);
    // Within the slack: fine.
    fresh()
        .feed(&proto::encode_report(10, 500_000_000), 10, &count, &meter)
        .unwrap();
}

#[test]
fn the_last_stream_to_reach_its_share_wakes_the_sampler_once() {
    let meter = Meter::new(DATA_TIMEOUT);
    *lock(&meter.waiter) = Some(thread::current());
    let (a, b) = (Count::default(), Count::default());
    meter.short.store(2, Ordering::SeqCst);
    a.target.store(100, Ordering::SeqCst);
    b.target.store(50, Ordering::SeqCst);
    a.reached(99, &meter);
    assert_eq!(meter.short.load(Ordering::SeqCst), 2);
    a.reached(100, &meter);
    a.reached(200, &meter);
    assert_eq!(meter.short.load(Ordering::SeqCst), 1);
    // Not armed: no effect, even at the largest count.
    Count::default().reached(u64::MAX, &meter);
    assert_eq!(meter.short.load(Ordering::SeqCst), 1);
    let waker = thread::scope(|s| s.spawn(|| b.reached(60, &meter)).join());
    waker.unwrap();
    assert_eq!(meter.short.load(Ordering::SeqCst), 0);
    // The unpark came: this returns at once, not after the timeout.
    let t = Instant::now();
    thread::park_timeout(Duration::from_secs(30));
    assert!(t.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_sample_with_no_time_is_an_error_not_a_nan() {
    let m = |bytes, ns| Mark { bytes, ns };
    let e = tally(&[m(0, 5)], &[m(0, 5)]).unwrap_err();
    assert!(e.to_string().contains("no time"), "{e}");
    let e = tally(&[m(0, 5)], &[m(7, 5)]).unwrap_err();
    assert!(e.to_string().contains("stream 0 counted 7 bytes"), "{e}");
    let (rates, time) = tally(&[m(0, 0), m(0, 0)], &[m(1000, 1_000_000), m(0, 0)]).unwrap();
    assert_eq!(time, 1e-3);
    assert_eq!(rates, vec![1e6, 0.0]);
}

/// Streams on fake servers: each `(role, server)` gets a connection.
#[allow(clippy::type_complexity)]
fn streams(
    block: usize,
    idle: Duration,
    servers: Vec<(Role, Box<dyn FnOnce(&mut TcpStream) + Send>)>,
) -> (Streams, Vec<JoinHandle<()>>) {
    let mut s = Streams::new(block, idle);
    let mut fakes = Vec::new();
    for (i, (role, f)) in servers.into_iter().enumerate() {
        let (c, srv) = pair();
        fakes.push(serve(srv, f));
        s.list
            .push(Stream::start(c, i, role, block, &s.meter, None).unwrap());
    }
    (s, fakes)
}

#[test]
fn well_behaved_servers_give_finite_samples_and_a_clean_stop() {
    let (mut s, fakes) = streams(
        4 << 10,
        Duration::from_secs(10),
        vec![
            (Role::Sink, Box::new(sink)),
            (Role::Source, Box::new(source)),
            (Role::Sink, Box::new(sink)),
        ],
    );
    for _ in 0..3 {
        let w = s.sample(8).unwrap();
        let t = w.elapsed.unwrap();
        assert!(t > Duration::ZERO);
        let min = w.values["stream_min"];
        assert!(min.is_finite() && min > 0.0, "{min}");
    }
    let (up, down) = s.stop().unwrap();
    assert!(up >= 2 * 3 * 8 * (4 << 10), "{up}");
    assert!(down >= 3 * 8 * (4 << 10), "{down}");
    for f in fakes {
        f.join().unwrap();
    }
}

#[test]
fn a_stream_that_stops_counting_fails_the_sample_naming_it() {
    // Stream 0 flows; stream 1's server takes the bytes but never
    // reports a count.
    let (mut s, fakes) = streams(
        1 << 10,
        Duration::from_secs(1),
        vec![
            (Role::Source, Box::new(flood)),
            (
                Role::Sink,
                Box::new(|s: &mut TcpStream| {
                    let mut buf = vec![0u8; 64 << 10];
                    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                }),
            ),
        ],
    );
    let e = s.sample(4).unwrap_err().to_string();
    assert!(e.contains("stream 1 (up"), "{e}");
    drop(s);
    for f in fakes {
        f.join().unwrap();
    }
}

#[test]
fn stop_ends_when_a_server_ignores_it() {
    // `down`: the server keeps sending after the stop byte; `up`: it
    // keeps reporting after our end of file and never ends its own.
    let (mut s, fakes) = streams(
        1 << 10,
        Duration::from_secs(1),
        vec![
            (Role::Source, Box::new(flood)),
            (
                Role::Sink,
                Box::new(|s: &mut TcpStream| {
                    s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
                    let (t0, mut total) = (Instant::now(), 0u64);
                    let mut buf = vec![0u8; 64 << 10];
                    loop {
                        match s.read(&mut buf) {
                            // Our end of file: reports go on regardless.
                            Ok(0) => thread::sleep(Duration::from_millis(1)),
                            Ok(n) => total += n as u64,
                            Err(e) if proto::is_timeout(&e) => {}
                            Err(_) => return,
                        }
                        let ns = t0.elapsed().as_nanos() as u64;
                        if s.write_all(&proto::encode_report(total, ns)).is_err() {
                            return;
                        }
                    }
                }),
            ),
        ],
    );
    s.sample(4).unwrap();
    let e = s.stop().unwrap_err().to_string();
    assert!(e.contains("did not end stream"), "{e}");
    for f in fakes {
        f.join().unwrap();
    }
}

#[test]
fn reports_are_read_while_a_block_is_still_being_written() {
    // A block far larger than the socket buffers: its write cannot
    // finish, as on a slow path. The server reads 1 MiB, reports it
    // and stops reading; the report must still be seen.
    let held = Arc::new(AtomicBool::new(true));
    let h = held.clone();
    let (s, fakes) = streams(
        64 << 20,
        Duration::from_secs(20),
        vec![(
            Role::Sink,
            Box::new(move |s: &mut TcpStream| {
                let mut buf = vec![0u8; 1 << 20];
                s.read_exact(&mut buf).unwrap();
                s.write_all(&proto::encode_report(1 << 20, 1_000)).unwrap();
                while h.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(5));
                }
            }),
        )],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.list[0].current() == 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*lock(&s.list[0].count.report), (1 << 20, 1_000));
    held.store(false, Ordering::SeqCst);
    drop(s);
    for f in fakes {
        f.join().unwrap();
    }
}
