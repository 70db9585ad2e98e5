//! The server and client against each other and against impostors: tokens,
//! versions, non-benchsuite peers, unreachable peers, and the limits that
//! keep a hostile client from hanging or exhausting the server.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{Record, Registry, RunConfig, Status};
use benchsuite_net::proto::{
    self, ErrorCode, MAGIC, MAX_FRAME, Message, PROTOCOL_VERSION, Role, TestSpec, UdpMode,
};
use benchsuite_net::{DESCRIPTION, MODULE, Server, ServerConfig, benchmarks};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks());
    r
}

/// Runs one benchmark at its smoke point with these options.
fn run_with(selector: &str, options: &[(&str, &str)]) -> Vec<Record> {
    let cfg = RunConfig {
        selectors: vec![selector.into()],
        smoke: true,
        runs: 2,
        min_sample_time: Duration::from_millis(1),
        warmup: Duration::from_millis(1),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..RunConfig::quick()
    };
    runner::run(&registry(), &cfg, &mut Silent).unwrap().records
}

fn failure(selector: &str, options: &[(&str, &str)]) -> String {
    let r = run_with(selector, options);
    assert_eq!(r[0].status, Status::Failed, "{:?}", r[0]);
    r[0].reason.clone().unwrap_or_default()
}

fn server(token: Option<&str>) -> Server {
    let mut cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), token.map(String::from));
    cfg.io_timeout = Duration::from_millis(500);
    cfg.data_idle = Duration::from_secs(2);
    Server::start(cfg).unwrap()
}

/// A raw connection that has sent the magic and `msg`.
fn raw(addr: SocketAddr, msg: &Message) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut f = MAGIC.to_vec();
    f.extend(proto::encode(msg));
    s.write_all(&f).unwrap();
    s
}

fn reply(s: &mut TcpStream, first: bool) -> Message {
    let deadline = Instant::now() + Duration::from_secs(5);
    if first {
        let mut m = [0u8; 4];
        proto::read_exact_by(s, &mut m, deadline).unwrap();
        assert_eq!(m, MAGIC);
    }
    proto::read_frame_blocking(s, deadline).unwrap()
}

fn hello(token: Option<&str>) -> Message {
    Message::Hello {
        version: PROTOCOL_VERSION,
        token: token.map(String::from),
        software: "test".into(),
    }
}

/// True once the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn the_token_is_enforced() {
    let srv = server(Some("s3cret"));
    let peer = srv.local_addr().to_string();
    let e = failure("net.connect", &[("peer", &peer), ("token", "guess")]);
    assert!(e.contains("refused") && e.contains("wrong token"), "{e}");
    let e = failure("net.tcp_throughput", &[("peer", &peer)]);
    assert!(
        e.contains("requires a token") && e.contains("--token"),
        "{e}"
    );
    let ok = run_with("net.connect", &[("peer", &peer), ("token", "s3cret")]);
    assert_eq!(ok[0].status, Status::Ok, "{:?}", ok[0].reason);
    // The raw refusal carries the auth code.
    let mut s = raw(srv.local_addr(), &hello(Some("s3cre")));
    match reply(&mut s, true) {
        Message::Error { code, .. } => assert_eq!(code, ErrorCode::Auth),
        m => panic!("{m:?}"),
    }
    assert!(closed_within(&mut s, Duration::from_secs(2)));
    srv.shutdown();
}

#[test]
fn a_version_mismatch_names_both_versions() {
    let srv = server(None);
    // A client of another version, with a hello this build knows...
    let mut s = raw(
        srv.local_addr(),
        &Message::Hello {
            version: 99,
            token: None,
            software: "future".into(),
        },
    );
    match reply(&mut s, true) {
        Message::Error {
            code,
            message,
            version,
        } => {
            assert_eq!(code, ErrorCode::Version);
            assert_eq!(version, PROTOCOL_VERSION);
            assert!(
                message.contains("version 99")
                    && message.contains(&format!("version {PROTOCOL_VERSION}")),
                "{message}"
            );
        }
        m => panic!("{m:?}"),
    }
    // ...or one it does not parse at all, as long as it has a version.
    let mut s = TcpStream::connect(srv.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = br#"{"type":"hello_v7","version":7,"shiny":true}"#;
    let mut f = MAGIC.to_vec();
    f.extend((body.len() as u32).to_be_bytes());
    f.extend(body);
    s.write_all(&f).unwrap();
    match reply(&mut s, true) {
        Message::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::Version);
            assert!(message.contains("version 7"), "{message}");
        }
        m => panic!("{m:?}"),
    }
    srv.shutdown();

    // The client side: a server of another version.
    for answer in [
        Message::Error {
            code: ErrorCode::Version,
            message: "client speaks 1, server speaks 9".into(),
            version: 9,
        },
        Message::Welcome {
            version: 9,
            software: "benchsuite 9".into(),
            max_streams: 1,
        },
    ] {
        let fake = fake_server(move |mut s| {
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let mut f = MAGIC.to_vec();
            f.extend(proto::encode(&answer));
            let _ = s.write_all(&f);
        });
        let e = failure("net.connect", &[("peer", &fake.to_string())]);
        assert!(
            e.contains("version 9") && e.contains(&format!("version {PROTOCOL_VERSION}")),
            "{e}"
        );
    }
}

/// A listener on loopback that runs `f` on its first connection.
fn fake_server(f: impl FnOnce(TcpStream) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            f(s);
            // Keep it open a moment so the client reads what was sent.
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    addr
}

#[test]
fn a_peer_that_is_not_a_benchsuite_server_is_named_as_such() {
    let http = fake_server(|mut s| {
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let e = failure("net.tcp_throughput", &[("peer", &http.to_string())]);
    assert!(
        e.contains("not a benchsuite server") && e.contains("HTTP/1.1 400 Bad Request"),
        "{e}"
    );
    let closer = fake_server(drop);
    let e = failure("net.latency", &[("peer", &closer.to_string())]);
    assert!(
        e.contains("not a benchsuite server") && e.contains("closed"),
        "{e}"
    );
    let binary = fake_server(|mut s| {
        let _ = s.write_all(&[0, 0, 0, 9, 1, 2, 3]);
    });
    let e = failure("net.connect", &[("peer", &binary.to_string())]);
    assert!(
        e.contains("not a benchsuite server") && e.contains("00 00 00 09"),
        "{e}"
    );
}

#[test]
fn an_unreachable_peer_fails_within_the_connect_timeout() {
    // A port nobody listens on: refused at once, and the message says what
    // to check.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let e = failure(
        "net.connect",
        &[
            ("peer", &format!("127.0.0.1:{port}")),
            ("connect-timeout", "1s"),
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        e.contains("cannot connect to 127.0.0.1") && e.contains("benchsuite serve"),
        "{e}"
    );
    let e = failure("net.connect", &[("peer", "host.invalid:1")]);
    assert!(e.contains("host.invalid"), "{e}");
    // A malformed option is refused when planning, before anything runs.
    let cfg = RunConfig {
        selectors: vec!["net.connect".into()],
        options: BTreeMap::from([("connect-timeout".to_string(), "soon".to_string())]),
        ..RunConfig::quick()
    };
    let e = runner::run(&registry(), &cfg, &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("connect-timeout") && e.contains("positive duration"),
        "{e}"
    );
}

#[test]
fn hostile_clients_are_cut_off_by_limits_and_deadlines() {
    let srv = server(None);
    let addr = srv.local_addr();
    // An oversized frame is refused from its length alone.
    let mut s = TcpStream::connect(addr).unwrap();
    let mut f = MAGIC.to_vec();
    f.extend(((MAX_FRAME + 1) as u32).to_be_bytes());
    s.write_all(&f).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(2)),
        "oversized frame"
    );
    // Garbage instead of the magic.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(2)), "garbage");
    // Silence, and a frame that trickles in: both hit the 0.5 s deadline.
    let mut s = TcpStream::connect(addr).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(3)),
        "silent client"
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&MAGIC).unwrap();
    s.write_all(&[0, 0, 1]).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(3)), "slow frame");
    // An authenticated client that goes quiet without a test.
    let mut s = raw(addr, &hello(None));
    assert!(matches!(reply(&mut s, true), Message::Welcome { .. }));
    assert!(
        closed_within(&mut s, Duration::from_secs(3)),
        "idle control"
    );

    // Requests above the limits are refused, and the connection stays usable.
    let mut s = raw(addr, &hello(None));
    let _ = reply(&mut s, true);
    let spec = |tcp, udp, block| TestSpec {
        block,
        tcp_streams: tcp,
        udp_streams: udp,
        udp_mode: UdpMode::Sink,
        nodelay: false,
    };
    for bad in [
        spec(129, 0, 1),
        spec(1, 0, 0),
        spec(1, 0, 2 << 20),
        spec(0, 1, 65_508),
    ] {
        proto::write_frame(&mut s, &Message::Start { spec: bad.clone() }).unwrap();
        match reply(&mut s, false) {
            Message::Error { code, .. } => assert_eq!(code, ErrorCode::Limit, "{bad:?}"),
            m => panic!("{bad:?}: {m:?}"),
        }
    }
    proto::write_frame(
        &mut s,
        &Message::Start {
            spec: spec(1, 0, 64),
        },
    )
    .unwrap();
    let Message::Ready { session, .. } = reply(&mut s, false) else {
        panic!("no ready");
    };
    // One data connection is allowed; a second, or a wrong id, is not.
    let mut d = raw(
        addr,
        &Message::Attach {
            session,
            role: Role::Sink,
        },
    );
    assert_eq!(reply(&mut d, true), Message::Attached);
    let mut d2 = raw(
        addr,
        &Message::Attach {
            session,
            role: Role::Sink,
        },
    );
    assert!(matches!(
        reply(&mut d2, true),
        Message::Error {
            code: ErrorCode::Limit,
            ..
        }
    ));
    let mut d3 = raw(
        addr,
        &Message::Attach {
            session: session ^ 1,
            role: Role::Sink,
        },
    );
    assert!(matches!(
        reply(&mut d3, true),
        Message::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    // A second test on the same connection must wait for stop.
    proto::write_frame(
        &mut s,
        &Message::Start {
            spec: spec(1, 0, 64),
        },
    )
    .unwrap();
    assert!(matches!(
        reply(&mut s, false),
        Message::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    // A batch through the sink, then stop: the server's count matches.
    d.write_all(&64u64.to_be_bytes()).unwrap();
    d.write_all(&[7u8; 64]).unwrap();
    let mut ack = [0u8; 8];
    d.read_exact(&mut ack).unwrap();
    assert_eq!(u64::from_be_bytes(ack), 64);
    drop(d);
    proto::write_frame(&mut s, &Message::Stop).unwrap();
    assert_eq!(
        reply(&mut s, false),
        Message::Stopped {
            tcp_received: 64,
            tcp_sent: 0
        }
    );
    assert_eq!(srv.active_tests(), 0);
    // A test left silent (no control message, no data) is dropped after
    // data_idle (2 s here) and its threads are joined.
    proto::write_frame(
        &mut s,
        &Message::Start {
            spec: spec(1, 0, 64),
        },
    )
    .unwrap();
    let Message::Ready { session, .. } = reply(&mut s, false) else {
        panic!("no ready");
    };
    let mut d = raw(
        addr,
        &Message::Attach {
            session,
            role: Role::Echo,
        },
    );
    assert_eq!(reply(&mut d, true), Message::Attached);
    assert!(closed_within(&mut s, Duration::from_secs(5)), "idle test");
    assert!(closed_within(&mut d, Duration::from_secs(5)), "idle data");
    let t = Instant::now();
    while (srv.active_tests() > 0 || srv.data_threads() > 0) && t.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!((srv.active_tests(), srv.data_threads()), (0, 0));
    srv.shutdown();
}

#[test]
fn udp_echo_answers_only_the_tests_own_host() {
    let srv = server(None);
    let mut s = raw(srv.local_addr(), &hello(None));
    let _ = reply(&mut s, true);
    let spec = TestSpec {
        block: 32,
        tcp_streams: 0,
        udp_streams: 1,
        udp_mode: UdpMode::Echo,
        nodelay: false,
    };
    proto::write_frame(&mut s, &Message::Start { spec }).unwrap();
    let Message::Ready { udp_ports, .. } = reply(&mut s, false) else {
        panic!("no ready");
    };
    let to: SocketAddr = format!("127.0.0.1:{}", udp_ports[0]).parse().unwrap();
    let own = UdpSocket::bind("127.0.0.1:0").unwrap();
    own.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    own.send_to(b"ping", to).unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = own.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"ping");
    // Another source address (all of 127/8 is this machine): no answer,
    // so the server cannot be used to reflect traffic at a third party.
    if let Ok(other) = UdpSocket::bind("127.0.0.2:0") {
        other
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        other.send_to(b"ping", to).unwrap();
        assert!(other.recv_from(&mut buf).is_err(), "answered a stranger");
    }
    srv.shutdown();
}
