//! Soak: 200 clients that connect and vanish at random points of the
//! protocol (mid-magic, mid-frame, after hello, mid-test, mid-batch...)
//! against one server. Afterwards it must still run a normal test, and its
//! file descriptors and threads must return to where they started.
//!
//! Its own test binary, so no other test's sockets disturb the counts.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{Registry, RunConfig, Status};
use benchsuite_net::proto::{self, MAGIC, Message, PROTOCOL_VERSION, Role, TestSpec, UdpMode};
use benchsuite_net::{DESCRIPTION, MODULE, Server, ServerConfig, benchmarks};

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// xorshift64*: deterministic, so a failure replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn framed(msg: &Message) -> Vec<u8> {
    let mut f = MAGIC.to_vec();
    f.extend(proto::encode(msg));
    f
}

fn hello() -> Vec<u8> {
    framed(&Message::Hello {
        version: PROTOCOL_VERSION,
        software: "soak".into(),
        nonce: proto::to_hex(&[7u8; proto::NONCE_LEN]),
    })
}

/// Reads whatever the server sends first (magic + frame), bounded.
fn read_some(s: &mut TcpStream) -> Option<Message> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut m = [0u8; 4];
    proto::read_exact_by(s, &mut m, deadline).ok()?;
    proto::read_frame_blocking(s, deadline).ok()
}

fn start(s: &mut TcpStream, spec: TestSpec) -> Option<(u64, Vec<u16>)> {
    proto::write_frame(s, &Message::Start { spec }).ok()?;
    match proto::read_frame_blocking(s, Instant::now() + Duration::from_secs(5)).ok()? {
        Message::Ready { session, udp_ports } => Some((session, udp_ports)),
        _ => None,
    }
}

fn spec(tcp: u32, udp: u32) -> TestSpec {
    TestSpec {
        block: 1024,
        tcp_streams: tcp,
        udp_streams: udp,
        udp_mode: UdpMode::Sink,
        nodelay: false,
    }
}

/// One client that gives up at point `how`. Errors are expected (the
/// server may close first); only the server's health afterwards matters.
fn client(addr: SocketAddr, how: u64, rng: &mut Rng) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let h = hello();
    match how {
        0 => {}
        1 => {
            let _ = s.write_all(&MAGIC[..rng.below(4) as usize]);
        }
        2 => {
            let cut = 4 + rng.below(h.len() as u64 - 4) as usize;
            let _ = s.write_all(&h[..cut]);
        }
        3 => {
            let _ = s.write_all(&h);
        }
        4 => {
            let _ = s.write_all(&h);
            let _ = read_some(&mut s);
        }
        5 => {
            let _ = s.write_all(&h);
            let _ = read_some(&mut s);
            let _ = start(&mut s, spec(2, 0));
        }
        6 | 11 => {
            let _ = s.write_all(&h);
            let _ = read_some(&mut s);
            let role = if how == 6 { Role::Sink } else { Role::Echo };
            if let Some((session, _)) = start(&mut s, spec(1, 0))
                && let Ok(mut d) = TcpStream::connect(addr)
            {
                let _ = d.write_all(&framed(&Message::Attach { session, role }));
                let _ = read_some(&mut d);
                if how == 6 {
                    let _ = d.write_all(&(1u64 << 20).to_be_bytes());
                }
                let _ = d.write_all(&vec![1u8; rng.below(5000) as usize]);
                if rng.below(2) == 0 {
                    drop(d);
                    return; // control dropped too, at function end
                }
                drop(s);
                std::thread::sleep(Duration::from_millis(rng.below(20)));
                drop(d);
                return;
            }
        }
        7 => {
            let _ = s.write_all(&h);
            let _ = read_some(&mut s);
            if let Some((_, ports)) = start(&mut s, spec(0, 2)) {
                if let Ok(u) = UdpSocket::bind("127.0.0.1:0") {
                    for (i, p) in ports.iter().enumerate() {
                        let mut d = vec![0u8; 1024];
                        d[..8].copy_from_slice(&(i as u64).to_be_bytes());
                        let _ = u.send_to(&d, ("127.0.0.1", *p));
                    }
                }
                if rng.below(2) == 0 {
                    let _ = proto::write_frame(
                        &mut s,
                        &Message::UdpBatch {
                            end_seq: vec![1, 1],
                        },
                    );
                }
            }
        }
        8 => {
            let mut junk = vec![0u8; rng.below(300) as usize + 1];
            for b in &mut junk {
                *b = rng.next() as u8;
            }
            let _ = s.write_all(&junk);
        }
        9 => {
            let mut f = MAGIC.to_vec();
            f.extend(u32::MAX.to_be_bytes());
            let _ = s.write_all(&f);
        }
        _ => {
            // An attach naming no test is a failed authentication: it
            // backs its address off, so it comes from 127.0.0.2, not from
            // the address the final benchmark runs from.
            drop(s);
            let from = std::net::IpAddr::from([127, 0, 0, 2]);
            let Ok(mut s) = benchsuite_net::test_support::connect_from(from, addr) else {
                return;
            };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.write_all(&framed(&Message::Attach {
                session: rng.next(),
                role: Role::Source,
            }));
            let _ = read_some(&mut s);
        }
    }
    if rng.below(2) == 0 {
        std::thread::sleep(Duration::from_millis(rng.below(10)));
    }
}

#[test]
fn two_hundred_vanishing_clients_leave_no_trace() {
    let mut cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), None);
    cfg.io_timeout = Duration::from_secs(1);
    cfg.data_idle = Duration::from_secs(2);
    let server = Server::start(cfg).unwrap();
    let addr = server.local_addr();
    let (fds0, threads0) = (count("/proc/self/fd"), count("/proc/self/task"));

    let workers: Vec<_> = (0..8u64)
        .map(|w| {
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w + 1));
                for _ in 0..25 {
                    let how = rng.below(12);
                    client(addr, how, &mut rng);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }

    // The server still serves a whole benchmark.
    let mut registry = Registry::new();
    registry
        .add_module(MODULE, DESCRIPTION, benchmarks())
        .expect("the net module keeps the contract");
    let cfg = RunConfig::quick()
        .to_builder()
        .selectors(["net.tcp_throughput", "net.latency"])
        .smoke(true)
        .runs(2)
        .min_sample_time(Duration::from_millis(1))
        .warmup(Duration::from_millis(1))
        .options(BTreeMap::from([("peer".to_string(), addr.to_string())]))
        .build()
        .unwrap();
    let report = runner::run(&registry, &cfg, &mut Silent).unwrap();
    for r in &report.records {
        assert_eq!(r.status, Status::Ok, "{}: {:?}", r.key(), r.reason);
    }

    // Everything the clients left behind is cleaned up: tests ended, data
    // threads joined, sockets closed.
    let t = Instant::now();
    let settled = || {
        server.active_tests() == 0
            && server.data_threads() == 0
            && server.open_connections() == 0
            && count("/proc/self/fd") <= fds0
            && count("/proc/self/task") <= threads0
    };
    while !settled() && t.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.active_tests(), 0, "tests left running");
    assert_eq!(server.data_threads(), 0, "data threads left running");
    assert_eq!(server.open_connections(), 0, "connections left open");
    assert_eq!(
        count("/proc/self/fd"),
        fds0,
        "file descriptors: {fds0} at the start"
    );
    assert_eq!(
        count("/proc/self/task"),
        threads0,
        "threads: {threads0} at the start"
    );

    // Every benchmark with its own in-process server (no peer): each
    // record's finish stops that server, so nothing accumulates either.
    let cfg = RunConfig::quick()
        .to_builder()
        .selectors([MODULE])
        .smoke(true)
        .runs(2)
        .min_sample_time(Duration::from_millis(1))
        .warmup(Duration::from_millis(1))
        .build()
        .unwrap();
    let report = runner::run(&registry, &cfg, &mut Silent).unwrap();
    assert_eq!(report.records.len(), benchmarks().len());
    for r in &report.records {
        assert_eq!(r.status, Status::Ok, "{}: {:?}", r.key(), r.reason);
    }
    let t = Instant::now();
    while (count("/proc/self/fd") > fds0 || count("/proc/self/task") > threads0)
        && t.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        count("/proc/self/fd"),
        fds0,
        "descriptors left by in-process servers"
    );
    assert_eq!(
        count("/proc/self/task"),
        threads0,
        "threads left by in-process servers"
    );
    server.shutdown();
}
