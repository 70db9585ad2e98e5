//! The server and client against each other and against impostors: the
//! challenge-response (the token never on the wire), back-off after failed
//! authentications, per-address caps, versions, non-benchsuite peers,
//! unreachable peers, and the limits that keep a hostile client from
//! hanging or exhausting the server.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{Record, Registry, RunConfig, Status};
use benchsuite_net::proto::{
    self, ErrorCode, MAGIC, MAX_FRAME, MAX_HANDSHAKE_FRAME, Message, NONCE_LEN, PROTOCOL_VERSION,
    Role, TestSpec, UdpMode,
};
use benchsuite_net::test_support::connect_from;
use benchsuite_net::{DESCRIPTION, MODULE, Server, ServerConfig, benchmarks};

/// A token long enough for a server (16 characters at least).
const T: &str = "protocol-test-token-0001";

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks())
        .expect("the net module keeps the contract");
    r
}

/// Runs one benchmark at its smoke point with these options.
fn run_with(selector: &str, options: &[(&str, &str)]) -> Vec<Record> {
    let cfg = RunConfig::quick()
        .to_builder()
        .selectors([selector])
        .smoke(true)
        .runs(2)
        .min_sample_time(Duration::from_millis(1))
        .warmup(Duration::from_millis(1))
        .options(options.iter().copied())
        .build()
        .unwrap();
    runner::run(&registry(), &cfg, &mut Silent).unwrap().records
}

fn failure(selector: &str, options: &[(&str, &str)]) -> String {
    let r = run_with(selector, options);
    assert_eq!(r[0].status, Status::Failed, "{:?}", r[0]);
    r[0].reason.clone().unwrap_or_default()
}

fn server(token: Option<&str>) -> Server {
    server_with(token, |_| {})
}

fn server_with(token: Option<&str>, f: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), token.map(String::from));
    cfg.io_timeout = Duration::from_millis(500);
    cfg.data_idle = Duration::from_secs(2);
    f(&mut cfg);
    Server::start(cfg).unwrap()
}

/// 127.0.0.`n`: all of 127/8 is this machine, so a test can be several
/// client addresses.
fn lo(n: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, n])
}

/// A raw connection that has sent the magic and `msg`.
fn raw(addr: SocketAddr, msg: &Message) -> TcpStream {
    raw_from(lo(1), addr, msg)
}

/// [`raw`] from the local address `from`.
fn raw_from(from: IpAddr, addr: SocketAddr, msg: &Message) -> TcpStream {
    let mut s = connect_from(from, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut f = MAGIC.to_vec();
    f.extend(proto::encode(msg));
    s.write_all(&f).unwrap();
    s
}

/// A hello from `from`, and the answer to the challenge with `token`:
/// the server's verdict (welcome or error).
fn authenticate(from: IpAddr, addr: SocketAddr, token: &str) -> (TcpStream, Message) {
    let mut s = raw_from(from, addr, &hello());
    let Message::Challenge { nonce } = reply(&mut s, true) else {
        panic!("no challenge");
    };
    let auth = proto::answer_challenge(token, &nonce, &CLIENT_NONCE, "test").unwrap();
    proto::write_frame(&mut s, &auth).unwrap();
    let verdict = reply(&mut s, false);
    // A welcome proves that the server knows the token.
    if let Message::Welcome { proof, .. } = &verdict {
        let ns = proto::nonce_from_hex(&nonce).unwrap();
        assert!(
            proof.as_deref().is_some_and(|p| proto::proof_is_right(
                token,
                &ns,
                &CLIENT_NONCE,
                "test",
                p
            )),
            "a welcome without the right proof: {verdict:?}"
        );
    }
    (s, verdict)
}

fn auth_refusal(m: &Message) -> String {
    match m {
        Message::Error {
            code: ErrorCode::Auth,
            message,
            ..
        } => message.clone(),
        m => panic!("expected an auth refusal, got {m:?}"),
    }
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

/// The nonce of the raw clients' hellos.
const CLIENT_NONCE: [u8; NONCE_LEN] = [0x42; NONCE_LEN];

fn hello() -> Message {
    Message::Hello {
        version: PROTOCOL_VERSION,
        software: "test".into(),
        nonce: proto::to_hex(&CLIENT_NONCE),
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
    let srv = server(Some("s3cret-s3cret-s3cret"));
    let peer = srv.local_addr().to_string();
    let e = failure(
        "net.connect",
        &[("peer", &peer), ("token", "guess-guess-guess-guess")],
    );
    assert!(e.contains("refused") && e.contains("wrong token"), "{e}");
    // That failure backs 127.0.0.1 off for 100 ms.
    std::thread::sleep(Duration::from_millis(150));
    let e = failure("net.tcp_throughput", &[("peer", &peer)]);
    assert!(
        e.contains("requires a token") && e.contains("BENCHSUITE_TOKEN") && e.contains("--token"),
        "{e}"
    );
    let ok = run_with(
        "net.connect",
        &[("peer", &peer), ("token", "s3cret-s3cret-s3cret")],
    );
    assert_eq!(ok[0].status, Status::Ok, "{:?}", ok[0].reason);
    // The raw refusal carries the auth code, and the connection closes.
    let (mut s, verdict) = authenticate(lo(1), srv.local_addr(), "s3cre");
    assert!(auth_refusal(&verdict).contains("wrong token"));
    assert!(closed_within(&mut s, Duration::from_secs(2)));
    // A MAC that is not even hex is a failed authentication too.
    let mut s = raw_from(lo(9), srv.local_addr(), &hello());
    assert!(matches!(reply(&mut s, true), Message::Challenge { .. }));
    proto::write_frame(&mut s, &Message::Auth { mac: "zz".into() }).unwrap();
    assert!(auth_refusal(&reply(&mut s, false)).contains("wrong token"));
    // A hello whose nonce is not 32 bytes of hex gets no challenge.
    for nonce in ["", "abcd"] {
        let mut s = raw_from(
            lo(10),
            srv.local_addr(),
            &Message::Hello {
                version: PROTOCOL_VERSION,
                software: "test".into(),
                nonce: nonce.into(),
            },
        );
        match reply(&mut s, true) {
            Message::Error {
                code: ErrorCode::BadRequest,
                message,
                ..
            } => assert!(
                message.contains("nonce must be 32 random bytes"),
                "{message}"
            ),
            m => panic!("{m:?}"),
        }
    }
    srv.shutdown();
}

#[test]
fn the_token_never_travels_only_a_mac_of_a_fresh_nonce() {
    // A fake server that records every byte the client sends and checks
    // each answer against its own nonce.
    let token = "k9-the-real-token-7f3a";
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let nonces = Arc::new(Mutex::new(Vec::<String>::new()));
    let (seen2, nonces2) = (seen.clone(), nonces.clone());
    std::thread::spawn(move || {
        for (i, conn) in l.incoming().enumerate() {
            let Ok(mut s) = conn else { return };
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut magic = [0u8; 4];
            if proto::read_exact_by(&mut s, &mut magic, deadline).is_err() {
                continue;
            }
            let Ok(Message::Hello {
                software,
                nonce: client_nonce,
                ..
            }) = proto::read_frame_blocking(&mut s, deadline)
            else {
                continue;
            };
            let cn = proto::nonce_from_hex(&client_nonce).expect("a client nonce");
            let nonce = [i as u8; NONCE_LEN];
            let mut f = MAGIC.to_vec();
            f.extend(proto::encode(&Message::Challenge {
                nonce: proto::to_hex(&nonce),
            }));
            let _ = s.write_all(&f);
            nonces2.lock().unwrap().push(proto::to_hex(&nonce));
            let Ok(Message::Auth { mac }) = proto::read_frame_blocking(&mut s, deadline) else {
                continue;
            };
            let want = proto::client_mac(token.as_bytes(), &nonce, &cn, &software);
            let answer = if proto::from_hex(&mac).as_deref() == Some(&want[..]) {
                Message::Welcome {
                    version: PROTOCOL_VERSION,
                    software: "fake".into(),
                    max_streams: 1,
                    proof: Some(proto::to_hex(&proto::server_proof(
                        token.as_bytes(),
                        &nonce,
                        &cn,
                        &software,
                    ))),
                }
            } else {
                Message::Error {
                    code: ErrorCode::Auth,
                    message: "wrong token".into(),
                    version: PROTOCOL_VERSION,
                }
            };
            let _ = proto::write_frame(&mut s, &answer);
            let mut rest = Vec::new();
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.read_to_end(&mut rest);
            let mut all = magic.to_vec();
            all.extend(proto::encode(&Message::Hello {
                version: PROTOCOL_VERSION,
                software,
                nonce: client_nonce,
            }));
            all.extend(proto::encode(&Message::Auth { mac }));
            all.extend(rest);
            seen2.lock().unwrap().extend(all);
        }
    });
    let ok = run_with(
        "net.connect",
        &[("peer", &addr.to_string()), ("token", token)],
    );
    assert_eq!(ok[0].status, Status::Ok, "{:?}", ok[0].reason);
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    let text = String::from_utf8_lossy(&seen);
    assert!(!text.contains(token), "the token crossed the wire");
    assert!(
        !text.contains("k9-the"),
        "part of the token crossed the wire"
    );
    assert!(text.contains("\"type\":\"auth\""), "{text}");
    assert!(nonces.lock().unwrap().len() > 1);
}

#[test]
fn a_server_without_a_token_welcomes_the_hello_at_once() {
    let srv = server(None);
    let mut s = raw(srv.local_addr(), &hello());
    assert!(matches!(reply(&mut s, true), Message::Welcome { .. }));
    srv.shutdown();
}

#[test]
fn failed_authentications_back_off_per_source_address() {
    let token = "back-off-token-0123";
    let srv = server(Some(token));
    let addr = srv.local_addr();
    let bad = lo(23);
    let (_, v) = authenticate(bad, addr, "guess-1");
    assert!(auth_refusal(&v).contains("wrong token"));
    // At once again: refused before anything is read, naming the address
    // and the wait.
    let mut s = connect_from(bad, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let why = auth_refusal(&reply(&mut s, true));
    assert!(
        why.contains("too many failed authentications from 127.0.0.23")
            && why.contains("retry in 0.1 s"),
        "{why}"
    );
    // Even with the right token: nothing is read.
    let mut s = raw_from(bad, addr, &hello());
    assert!(auth_refusal(&reply(&mut s, true)).contains("too many failed"));
    // Another address is not affected.
    let (_, v) = authenticate(lo(24), addr, token);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    assert_eq!(srv.backoff_entries(), 1);
    // After the wait, a second failure doubles it.
    std::thread::sleep(Duration::from_millis(120));
    let (_, v) = authenticate(bad, addr, "guess-2");
    assert!(auth_refusal(&v).contains("wrong token"));
    let mut s = connect_from(bad, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let why = auth_refusal(&reply(&mut s, true));
    assert!(why.contains("retry in 0.2 s"), "{why}");
    // A success clears it.
    std::thread::sleep(Duration::from_millis(220));
    let (_, v) = authenticate(bad, addr, token);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    assert_eq!(srv.backoff_entries(), 0);
    let (_, v) = authenticate(bad, addr, "guess-3");
    assert!(auth_refusal(&v).contains("wrong token"));
    let mut s = connect_from(bad, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(auth_refusal(&reply(&mut s, true)).contains("retry in 0.1 s"));
    srv.shutdown();
}

#[test]
fn refusals_have_their_own_bound_and_take_no_real_slot() {
    let srv = server_with(Some(T), |c| {
        c.max_connections = 2;
        c.max_per_address = 1;
        c.io_timeout = Duration::from_secs(10);
    });
    let addr = srv.local_addr();
    let bad = lo(61);
    // One idle connection from `bad`: every further one is refused.
    let _idle = connect_from(bad, addr).unwrap();
    let t = Instant::now();
    while srv.pending_connections() < 1 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // A refused connection that stays open lingers (250 ms at most), and
    // while it does, the next refusal is a plain close (the bound is
    // max_connections, 2 here). Tried a few times: a slow machine may let
    // the first ones finish before the last arrives.
    let unanswered = (0..5).any(|_| {
        let mut open = Vec::new();
        for _ in 0..2 {
            let mut s = connect_from(bad, addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            match reply(&mut s, true) {
                Message::Error {
                    code: ErrorCode::Busy,
                    ..
                } => {}
                m => panic!("{m:?}"),
            }
            open.push(s);
        }
        let mut last = connect_from(bad, addr).unwrap();
        last.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 4];
        let n = last.read(&mut buf).unwrap_or(0);
        drop(open);
        std::thread::sleep(Duration::from_millis(300));
        n == 0
    });
    assert!(unanswered, "answered past the refusal bound");
    // The refusals took no real slot: a real client gets the one left.
    let (_c, v) = authenticate(lo(1), addr, T);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    srv.shutdown();
}

#[test]
fn connections_awaiting_authentication_are_capped_per_address() {
    let srv = server_with(Some(T), |c| {
        c.max_per_address = 3;
        c.io_timeout = Duration::from_secs(5);
    });
    let addr = srv.local_addr();
    let idle: Vec<TcpStream> = (0..3)
        .map(|_| connect_from(lo(31), addr).unwrap())
        .collect();
    let t = Instant::now();
    while srv.pending_connections() < 3 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut s = connect_from(lo(31), addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    match reply(&mut s, true) {
        Message::Error {
            code: ErrorCode::Busy,
            message,
            ..
        } => assert!(
            message.contains("too many connections from 127.0.0.31"),
            "{message}"
        ),
        m => panic!("{m:?}"),
    }
    // Other addresses get in; an authenticated connection no longer
    // counts against its address.
    let (_c1, v) = authenticate(lo(32), addr, T);
    assert!(matches!(v, Message::Welcome { .. }));
    let _held: Vec<(TcpStream, Message)> = (0..4).map(|_| authenticate(lo(33), addr, T)).collect();
    assert!(
        _held
            .iter()
            .all(|(_, v)| matches!(v, Message::Welcome { .. }))
    );
    // A slot freed is a slot to use.
    drop(idle);
    let t = Instant::now();
    while srv.pending_connections() > 0 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (_, v) = authenticate(lo(31), addr, T);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    srv.shutdown();
}

#[test]
fn a_full_server_evicts_the_oldest_unauthenticated_connection() {
    let srv = server_with(Some(T), |c| {
        c.max_connections = 4;
        c.io_timeout = Duration::from_secs(10);
    });
    let addr = srv.local_addr();
    // Four idle clients from four addresses fill the server...
    let mut idle: Vec<TcpStream> = (41..45)
        .map(|n| connect_from(lo(n), addr).unwrap())
        .collect();
    let t = Instant::now();
    while srv.pending_connections() < 4 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // ...but a client that authenticates still gets in, and the oldest
    // idle one is closed to make room.
    let (_c, v) = authenticate(lo(1), addr, T);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    assert!(
        closed_within(&mut idle[0], Duration::from_secs(2)),
        "oldest"
    );
    assert!(
        !closed_within(&mut idle[3], Duration::from_millis(100)),
        "newest"
    );
    srv.shutdown();
}

#[test]
fn handshake_frames_are_small() {
    let srv = server(Some(T));
    let mut s = raw(
        srv.local_addr(),
        &Message::Hello {
            version: PROTOCOL_VERSION,
            software: "x".repeat(MAX_HANDSHAKE_FRAME),
            nonce: proto::to_hex(&CLIENT_NONCE),
        },
    );
    match reply(&mut s, true) {
        Message::Error {
            code: ErrorCode::Limit,
            message,
            ..
        } => assert!(message.contains("4096"), "{message}"),
        m => panic!("{m:?}"),
    }
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
            software: "future".into(),
            nonce: String::new(),
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
    // A version-1 client: its hello still carried the token in clear.
    let mut s = TcpStream::connect(srv.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = br#"{"type":"hello","version":1,"token":"old","software":"benchsuite 0.0.9"}"#;
    let mut f = MAGIC.to_vec();
    f.extend((body.len() as u32).to_be_bytes());
    f.extend(body);
    s.write_all(&f).unwrap();
    match reply(&mut s, true) {
        Message::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::Version);
            assert!(
                message.contains("version 1,")
                    && message.contains(&format!("version {PROTOCOL_VERSION}")),
                "{message}"
            );
        }
        m => panic!("{m:?}"),
    }
    srv.shutdown();
    // A version-3 client (no nonce in its hello, authenticated one way
    // only), to a server with a token and to one without.
    for token in [Some(T), None] {
        let srv = server(token);
        let mut s = TcpStream::connect(srv.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let body = br#"{"type":"hello","version":3,"software":"benchsuite 0.1.0"}"#;
        let mut f = MAGIC.to_vec();
        f.extend((body.len() as u32).to_be_bytes());
        f.extend(body);
        s.write_all(&f).unwrap();
        match reply(&mut s, true) {
            Message::Error { code, message, .. } => {
                assert_eq!(code, ErrorCode::Version);
                assert!(
                    message.contains("version 3,") && message.contains("version 4"),
                    "{message}"
                );
            }
            m => panic!("{m:?}"),
        }
        srv.shutdown();
    }

    // The client side: a server of another version, an older one (3: it
    // refuses this client's hello naming its version) or a newer one.
    for (theirs, answer) in [
        (
            3,
            Message::Error {
                code: ErrorCode::Version,
                message: "the client speaks benchsuite-net protocol version 4, this server speaks version 3".into(),
                version: 3,
            },
        ),
        (
            9,
            Message::Error {
                code: ErrorCode::Version,
                message: "client speaks 1, server speaks 9".into(),
                version: 9,
            },
        ),
        (
            9,
            Message::Welcome {
                version: 9,
                software: "benchsuite 9".into(),
                max_streams: 1,
                proof: None,
            },
        ),
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
            e.contains(&format!("speaks benchsuite-net protocol version {theirs}"))
                && e.contains(&format!("this client speaks version {PROTOCOL_VERSION}"))
                && e.contains("run the same benchsuite version on both hosts"),
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

/// A hostile server's malformed frame: serde's error quotes the server's
/// text (`unknown variant ...`), which reaches the record's reason (and
/// from there progress lines, exports and stderr) escaped.
#[test]
fn a_servers_malformed_frame_cannot_steer_the_terminal() {
    let hostile = "\u{1b}]0;X\u{7}\u{9b}2J\u{202e}evil\n[x](u) @everyone";
    let fake = fake_server(move |mut s| {
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf);
        let body = serde_json::to_vec(&serde_json::json!({ "type": hostile })).unwrap();
        let mut f = MAGIC.to_vec();
        f.extend((body.len() as u32).to_be_bytes());
        f.extend(body);
        let _ = s.write_all(&f);
    });
    let e = failure("net.connect", &[("peer", &fake.to_string())]);
    assert!(
        !e.chars()
            .any(|c| c == '\n' || benchsuite_core::text::is_unsafe(c)),
        "{e:?}"
    );
    assert!(
        e.contains("unknown variant") && e.contains("\\u{1b}]0;X\\u{7}\\u{9b}2J\\u{202e}evil\\n"),
        "{e}"
    );
}

#[test]
fn a_servers_refusal_cannot_steer_the_terminal() {
    // A hostile server's refusal: escape sequences, a bidi override, a
    // newline, and 60 KiB of text.
    let hostile = format!(
        "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}evil\nline{}",
        "x".repeat(60 << 10)
    );
    let fake = fake_server(move |mut s| {
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf);
        let mut f = MAGIC.to_vec();
        f.extend(proto::encode(&Message::Error {
            code: ErrorCode::BadRequest,
            message: hostile,
            version: PROTOCOL_VERSION,
        }));
        let _ = s.write_all(&f);
    });
    let e = failure("net.connect", &[("peer", &fake.to_string())]);
    assert!(
        !e.chars()
            .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
        "{e:?}"
    );
    assert!(e.contains("\\u{1b}[2J") && e.contains("evil\\nline"), "{e}");
    assert!(
        e.chars().count() < 2_000,
        "{} characters",
        e.chars().count()
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
    let cfg = RunConfig::quick()
        .to_builder()
        .selectors(["net.connect"])
        .options(BTreeMap::from([(
            "connect-timeout".to_string(),
            "soon".to_string(),
        )]))
        .build()
        .unwrap();
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
    let mut s = raw(addr, &hello());
    assert!(matches!(reply(&mut s, true), Message::Welcome { .. }));
    assert!(
        closed_within(&mut s, Duration::from_secs(3)),
        "idle control"
    );

    // Requests above the limits are refused, and the connection stays usable.
    let mut s = raw(addr, &hello());
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
    // (A wrong id is a failed authentication: it backs its address off,
    // so it comes from another one here.)
    let mut d3 = raw_from(
        lo(2),
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
    let mut s = raw(srv.local_addr(), &hello());
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

/// Starts a test of `tcp` TCP streams on an authenticated control
/// connection: its session id.
fn start_tcp(s: &mut TcpStream, tcp: u32) -> u64 {
    let spec = TestSpec {
        block: 64,
        tcp_streams: tcp,
        udp_streams: 0,
        udp_mode: UdpMode::Sink,
        nodelay: false,
    };
    proto::write_frame(s, &Message::Start { spec }).unwrap();
    match reply(s, false) {
        Message::Ready { session, .. } => session,
        m => panic!("no ready: {m:?}"),
    }
}

fn attach(addr: SocketAddr, session: u64) -> (TcpStream, Message) {
    let mut d = raw(
        addr,
        &Message::Attach {
            session,
            role: Role::Echo,
        },
    );
    let m = reply(&mut d, true);
    (d, m)
}

#[test]
fn an_attach_refused_for_want_of_a_data_thread_gives_its_stream_back() {
    let token = "attach-slot-token-5e1d";
    let srv = server_with(Some(token), |c| c.max_data_threads = 1);
    let addr = srv.local_addr();
    // Test A takes the server's only data thread.
    let (mut a, v) = authenticate(lo(1), addr, token);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    let session_a = start_tcp(&mut a, 1);
    let (_da, m) = attach(addr, session_a);
    assert_eq!(m, Message::Attached);
    // Test B's one stream is refused: no data thread left.
    let (mut b, v) = authenticate(lo(1), addr, token);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    let session_b = start_tcp(&mut b, 1);
    match attach(addr, session_b).1 {
        Message::Error {
            code: ErrorCode::Busy,
            ..
        } => {}
        m => panic!("{m:?}"),
    }
    // Once A ends, B's retry gets the stream it was refused, not "all its
    // streams attached".
    proto::write_frame(&mut a, &Message::Stop).unwrap();
    assert!(matches!(reply(&mut a, false), Message::Stopped { .. }));
    let t = Instant::now();
    while srv.data_threads() > 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (_db, m) = attach(addr, session_b);
    assert_eq!(m, Message::Attached, "the refused attach kept its stream");
    srv.shutdown();
}

#[test]
fn an_attach_to_an_unknown_test_is_a_failed_authentication() {
    let token = "unknown-attach-token-77";
    let srv = server(Some(token));
    let addr = srv.local_addr();
    let bad = lo(71);
    let mut d = raw_from(
        bad,
        addr,
        &Message::Attach {
            session: 0x5eed,
            role: Role::Source,
        },
    );
    match reply(&mut d, true) {
        Message::Error {
            code: ErrorCode::BadRequest,
            message,
            ..
        } => assert!(message.contains("no such test"), "{message}"),
        m => panic!("{m:?}"),
    }
    assert_eq!(srv.backoff_entries(), 1, "no back-off earned");
    // At once again, from that address: refused before anything is read,
    // an attach as a hello.
    let mut s = connect_from(bad, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let why = auth_refusal(&reply(&mut s, true));
    assert!(
        why.contains("too many failed authentications from 127.0.0.71"),
        "{why}"
    );
    // Another address is not affected.
    let (_, v) = authenticate(lo(72), addr, token);
    assert!(matches!(v, Message::Welcome { .. }), "{v:?}");
    // Connections opened before a failure cannot each spend a guess: the
    // back-off is checked again when the attach arrives.
    let early: Vec<TcpStream> = (0..3)
        .map(|_| {
            let s = connect_from(lo(73), addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s
        })
        .collect();
    let t = Instant::now();
    while srv.pending_connections() < 3 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let guess = |mut s: TcpStream, id: u64| {
        let mut f = MAGIC.to_vec();
        f.extend(proto::encode(&Message::Attach {
            session: id,
            role: Role::Sink,
        }));
        s.write_all(&f).unwrap();
        reply(&mut s, true)
    };
    let mut early = early.into_iter();
    let first = guess(early.next().unwrap(), 1);
    assert!(
        matches!(
            first,
            Message::Error {
                code: ErrorCode::BadRequest,
                ..
            }
        ),
        "{first:?}"
    );
    for (i, s) in early.enumerate() {
        let why = auth_refusal(&guess(s, 2 + i as u64));
        assert!(why.contains("too many failed"), "{why}");
    }
    srv.shutdown();
}

#[test]
fn a_client_refuses_a_token_too_short_for_any_server() {
    // A listener that records whether anything reached it.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let e = failure(
        "net.connect",
        &[("peer", &addr.to_string()), ("token", "short-token")],
    );
    assert!(
        e.contains("11 characters") && e.contains("at least 16"),
        "{e}"
    );
    assert!(l.accept().is_err(), "the client connected with it");
}

/// A fake server that takes any answer to its challenge: it writes
/// `welcome` (raw JSON, with `"version"` set to ours) after the client's
/// answer, or at once when `challenge` is false. `proof` is what it puts
/// in the welcome's `proof`: nothing, a fixed value, or (`"echo"`) the
/// client's own MAC sent back. It serves every connection (a client that
/// believes it goes on to measure), each on a thread of its own.
fn impostor(challenge: bool, proof: Option<&'static str>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || impostor_answers(s, challenge, proof));
        }
    });
    addr
}

fn impostor_answers(mut s: TcpStream, challenge: bool, proof: Option<&'static str>) {
    {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut magic = [0u8; 4];
        if proto::read_exact_by(&mut s, &mut magic, deadline).is_err()
            || proto::read_frame_blocking(&mut s, deadline).is_err()
        {
            return;
        }
        let mut out = MAGIC.to_vec();
        let mut mac = String::new();
        if challenge {
            out.extend(proto::encode(&Message::Challenge {
                nonce: proto::to_hex(&[3u8; NONCE_LEN]),
            }));
            let _ = s.write_all(&out);
            out.clear();
            if let Ok(Message::Auth { mac: m }) = proto::read_frame_blocking(&mut s, deadline) {
                mac = m;
            }
        }
        let proof = match proof {
            None => String::new(),
            Some("echo") => format!(r#","proof":"{mac}""#),
            Some(p) => format!(r#","proof":"{p}""#),
        };
        let body = format!(
            r#"{{"type":"welcome","version":{PROTOCOL_VERSION},"software":"impostor","max_streams":128{proof}}}"#
        );
        out.extend((body.len() as u32).to_be_bytes());
        out.extend(body.as_bytes());
        let _ = s.write_all(&out);
        // Whatever the client sends next (a start, a bye) goes unanswered.
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.read_to_end(&mut Vec::new());
    }
}

#[test]
fn a_server_that_does_not_prove_the_token_is_refused_by_the_client() {
    let token = "the-clients-token-0123";
    let zeros: &'static str = Box::leak("0".repeat(64).into_boxed_str());
    for (challenge, proof) in [
        (true, None),
        (true, Some(zeros)),
        (true, Some("echo")),
        (false, None),
    ] {
        let fake = impostor(challenge, proof);
        let e = failure(
            "net.connect",
            &[("peer", &fake.to_string()), ("token", token)],
        );
        assert!(
            e.contains("did not prove that it knows the token"),
            "challenge {challenge}, proof {proof:?}: {e}"
        );
    }
}

mod replies {
    //! The client reading a hostile server's replies: whatever bytes follow
    //! the handshake's magic (garbage, a truncated frame, a huge length, a
    //! valid message out of order), the record fails with a reason that is
    //! one printable line, never a panic or a hang.

    use super::*;
    use proptest::prelude::*;

    fn hostile() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            // A length prefix and a body of another size.
            (any::<u32>(), proptest::collection::vec(any::<u8>(), 0..64)).prop_map(|(n, b)| {
                let mut v = n.to_be_bytes().to_vec();
                v.extend(b);
                v
            }),
            // A well-formed message the client did not ask for, cut anywhere.
            (any::<u64>(), any::<prop::sample::Index>()).prop_map(|(session, cut)| {
                let f = proto::encode(&Message::Ready {
                    session,
                    udp_ports: vec![1, 2],
                });
                f[..cut.index(f.len() + 1)].to_vec()
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn a_hostile_reply_fails_the_record_with_one_printable_line(bytes in hostile()) {
            let fake = fake_server(move |mut s| {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let mut f = MAGIC.to_vec();
                f.extend(&bytes);
                let _ = s.write_all(&f);
            });
            let start = Instant::now();
            let e = failure("net.connect", &[("peer", &fake.to_string()), ("connect-timeout", "2s")]);
            prop_assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
            prop_assert!(!e.is_empty());
            prop_assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
        }
    }
}
