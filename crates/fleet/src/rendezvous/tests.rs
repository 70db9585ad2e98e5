use super::*;
use benchsuite_core::testing::{Capability, skip};

fn frame_of(body: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(1)
}

#[test]
fn a_frame_round_trips() {
    let m = Msg::Put {
        name: "r1.json".into(),
        text: "{\"a\":1}".into(),
    };
    let bytes = encode(&m);
    let got = read_frame(&mut bytes.as_slice(), MAX_FRAME, soon(), None).unwrap();
    assert_eq!(got, m);
}

#[test]
fn an_oversized_length_is_refused_before_anything_is_read() {
    // 4 GiB - 1 announced, nothing behind it: refused from the prefix.
    let bytes = [0xff, 0xff, 0xff, 0xff];
    match read_frame(&mut bytes.as_slice(), MAX_FRAME, soon(), None) {
        Err(FrameError::TooLarge { len, max }) => {
            assert_eq!((len, max), (u64::from(u32::MAX), MAX_FRAME));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        frame_len(
            (MAX_HANDSHAKE_FRAME as u32).to_be_bytes(),
            MAX_HANDSHAKE_FRAME
        )
        .is_ok()
    );
    assert!(matches!(
        frame_len(
            (MAX_HANDSHAKE_FRAME as u32 + 1).to_be_bytes(),
            MAX_HANDSHAKE_FRAME
        ),
        Err(FrameError::TooLarge { .. })
    ));
}

#[test]
fn garbage_and_truncated_frames_are_errors_not_panics() {
    let garbage = frame_of(b"\x00\x01not json");
    assert!(matches!(
        read_frame(&mut garbage.as_slice(), MAX_FRAME, soon(), None),
        Err(FrameError::Malformed(_))
    ));
    let unknown = frame_of(br#"{"op":"explode"}"#);
    assert!(matches!(
        read_frame(&mut unknown.as_slice(), MAX_FRAME, soon(), None),
        Err(FrameError::Malformed(_))
    ));
    let mut short = frame_of(br#"{"op":"list"}"#);
    short.truncate(8);
    assert!(matches!(
        read_frame(&mut short.as_slice(), MAX_FRAME, soon(), None),
        Err(FrameError::Io(_))
    ));
    assert!(matches!(
        read_frame(&mut [0u8, 0].as_slice(), MAX_FRAME, soon(), None),
        Err(FrameError::Io(_))
    ));
}

#[test]
fn the_store_refuses_bad_names_big_values_and_too_many_names() {
    let shared = Shared {
        table: Mutex::new(Table::new()),
        key: derive_key("t"),
        stop: AtomicBool::new(false),
        started: Instant::now(),
        refused: Mutex::new(None),
        pending: Mutex::new(std::collections::VecDeque::new()),
        given: "h:1".into(),
        job: job(2),
        instance: "i".into(),
    };
    let put = |name: &str, text: String| {
        shared.apply(Msg::Put {
            name: name.into(),
            text,
        })
    };
    assert_eq!(put("r0.json", "x".into()), Msg::Ok);
    for bad in ["", ".hidden", "a/b", "../x", &"n".repeat(MAX_NAME + 1)] {
        assert!(
            matches!(put(bad, String::new()), Msg::Error { .. }),
            "{bad:?}"
        );
    }
    assert!(valid_name(&"n".repeat(MAX_NAME)));
    assert!(matches!(
        put("big", "x".repeat(MAX_VALUE + 1)),
        Msg::Error { .. }
    ));
    assert_eq!(put("big", "x".repeat(MAX_VALUE)), Msg::Ok);
    {
        let t = &mut lock(&shared.table).map;
        for i in t.len()..MAX_ENTRIES {
            t.insert(
                format!("f{i}"),
                Entry {
                    text: String::new(),
                    at: Instant::now(),
                },
            );
        }
    }
    match put("one-more", String::new()) {
        Msg::Error { message } => assert!(message.contains("full"), "{message}"),
        other => panic!("{other:?}"),
    }
    // Rewriting a name already there still works.
    assert_eq!(put("r0.json", "y".into()), Msg::Ok);
    assert_eq!(
        shared.apply(Msg::Get {
            name: "r0.json".into()
        }),
        Msg::Value {
            text: Some("y".into())
        }
    );
    assert!(matches!(
        shared.apply(Msg::Welcome {
            proof: String::new(),
            instance: String::new()
        }),
        Msg::Error { .. }
    ));
}

#[test]
fn a_listing_is_sent_again_only_when_a_name_came_or_went() {
    let (mp, rdv) = local("t");
    let list = |since| mp.shared.apply(Msg::List { since });
    let Msg::Names { version: v0, .. } = list(None) else {
        panic!()
    };
    assert_eq!(
        list(Some(v0)),
        Msg::Names {
            version: v0,
            names: None
        }
    );
    let store = mp.store();
    store.put("r1.alive", "1", Put::Beat).unwrap();
    let Msg::Names { version: v1, names } = list(Some(v0)) else {
        panic!()
    };
    assert_ne!(v1, v0);
    assert_eq!(names, Some(vec!["r1.alive".to_string()]));
    // A heartbeat rewritten: the same names.
    store.put("r1.alive", "2", Put::Beat).unwrap();
    assert_eq!(
        list(Some(v1)),
        Msg::Names {
            version: v1,
            names: None
        }
    );
    store.remove("r1.alive").unwrap();
    assert!(matches!(list(Some(v1)), Msg::Names { names: Some(n), .. } if n.is_empty()));
    // A rank's cached listing follows.
    let r = remote(&rdv, "t", 3, Duration::from_secs(5));
    assert!(r.list().unwrap().is_empty());
    store.put("r0.json", "{}", Put::Durable).unwrap();
    assert!(r.list().unwrap().contains("r0.json"));
    assert!(r.list().unwrap().contains("r0.json"), "from the cache");
}

#[test]
fn rendezvous_addresses_parse_or_say_what_is_expected() {
    let r = Rendezvous::parse("benchsuite-0.benchsuite:29400").unwrap();
    assert_eq!(
        (r.host.as_str(), r.port),
        ("benchsuite-0.benchsuite", 29400)
    );
    let r = Rendezvous::parse("[::1]:7").unwrap();
    assert_eq!((r.host.as_str(), r.port), ("::1", 7));
    for bad in [
        "host",
        "host:",
        ":80",
        "host:0",
        "host:70000",
        "::1:80",
        "[::1:80",
        "a b:1",
    ] {
        let e = Rendezvous::parse(bad).unwrap_err();
        assert!(e.contains("--rendezvous"), "{e}");
    }
    for bad in ["0.0.0.0:1", "[::]:1", "224.0.0.1:1"] {
        let e = Rendezvous::parse(bad).unwrap_err();
        assert!(e.contains("unspecified or multicast"), "{e}");
    }
}

fn job(world: u64) -> Job {
    Job {
        id: "j1/run".into(),
        world,
    }
}

/// A meeting point of job `j1/run` with 3 ranks, on an ephemeral port.
fn local(token: &str) -> (MeetingPoint, Rendezvous) {
    let probe = Rendezvous::parse("127.0.0.1:1").unwrap();
    let mut rdv = probe.clone();
    // An ephemeral port: bind port 0 through the same path.
    rdv.port = 0;
    let mp = MeetingPoint::start(&rdv, token, &job(3), Duration::from_secs(1)).unwrap();
    let port = mp.local_addr().port();
    let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
    (mp, rdv)
}

/// A rank of job `j1/run` with `world` ranks.
fn remote(rdv: &Rendezvous, token: &str, world: u64, timeout: Duration) -> Remote {
    Remote::new(
        rdv.clone(),
        token,
        job(world),
        timeout,
        Arc::new(AtomicBool::new(false)),
    )
}

#[test]
fn ranks_with_the_token_share_the_store_and_others_are_refused() {
    let (mp, rdv) = local("secret");
    let a = remote(&rdv, "secret", 3, Duration::from_secs(5));
    a.put("r1.json", "hello", Put::Durable).unwrap();
    assert_eq!(mp.store().get("r1.json").unwrap(), "hello");
    mp.store().put("r0.json", "zero", Put::Durable).unwrap();
    assert_eq!(a.get("r0.json").unwrap(), "zero");
    assert!(a.list().unwrap().contains("r0.json"));
    assert!(
        a.put("t", "x", Put::Secret).is_err(),
        "no secret on the wire"
    );
    let wrong = remote(&rdv, "guess", 3, Duration::from_secs(5));
    let e = wrong.list().unwrap_err().to_string();
    assert!(e.contains("refused this rank: wrong token"), "{e}");
    assert!(e.contains("serves another job"), "{e}");
    let t = mp.store().trouble().unwrap_or_default();
    assert!(t.contains("wrong token"), "{t}");
    // The meeting point still serves the right one.
    assert_eq!(a.get("r1.json").unwrap(), "hello");
}

#[test]
fn hostile_clients_stall_nobody() {
    let (mp, rdv) = local("secret");
    let addr = mp.local_addr();
    // Silent connections (more than may await authentication),
    // garbage, an oversized frame.
    let silent: Vec<TcpStream> = (0..MAX_PENDING + 8)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let mut g = TcpStream::connect(addr).unwrap();
    g.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut big = TcpStream::connect(addr).unwrap();
    big.write_all(&MAGIC).unwrap();
    big.write_all(&u32::MAX.to_be_bytes()).unwrap();
    // Served well before the silent ones' handshakes time out.
    let a = remote(&rdv, "secret", 3, HANDSHAKE);
    a.put("r1.alive", "1", Put::Durable).unwrap();
    // The oversized frame got an error and was closed.
    big.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = Vec::new();
    let _ = big.read_to_end(&mut buf);
    assert!(
        String::from_utf8_lossy(&buf).contains("above the limit"),
        "{buf:?}"
    );
    drop(silent);
}

#[test]
fn a_meeting_point_that_never_comes_is_lost_after_the_timeout() {
    // A port nobody listens on: bind one and free it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
    let r = remote(&rdv, "t", 3, Duration::from_millis(300));
    assert!(r.list().unwrap().is_empty(), "not lost yet");
    let e = r.put("r1.json", "x", Put::Durable).unwrap_err().to_string();
    assert!(
        e.contains(&format!("lost the meeting point 127.0.0.1:{port}")),
        "{e}"
    );
    assert!(r.list().is_err());
}

#[test]
fn close_waits_for_every_rank_to_leave() {
    let (mp, _) = local("t");
    let store = mp.store();
    store
        .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
        .unwrap();
    // Another run's marker of rank 1: not this run's leaving.
    store.put("r1-zz.left", "", Put::Durable).unwrap();
    store
        .put("r2.alive", r#"{"nonce":"bb"}"#, Put::Beat)
        .unwrap();
    store.put("r2-bb.left", "", Put::Durable).unwrap();
    let t = Instant::now();
    // Rank 1 never leaves: given up once silent for the timeout.
    mp.close(
        0,
        Duration::from_millis(500),
        &AtomicBool::new(false),
        false,
    );
    assert!(
        t.elapsed() >= Duration::from_millis(450),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn close_returns_once_every_rank_left() {
    let (mp, _) = local("t");
    let store = mp.store();
    store
        .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
        .unwrap();
    store.put("r1-aa.left", "", Put::Durable).unwrap();
    store
        .put("r2.json", r#"{"nonce":"bb"}"#, Put::Durable)
        .unwrap();
    store.put("r2-bb.left", "", Put::Durable).unwrap();
    let t = Instant::now();
    let timeout = Duration::from_secs(20);
    mp.close(0, timeout, &AtomicBool::new(false), false);
    assert!(t.elapsed() < timeout / 2, "{:?}", t.elapsed());
}

#[test]
fn a_failed_rank_0_waits_only_for_ranks_that_did_not_learn_of_it() {
    let (mp, _) = local("t");
    let store = mp.store();
    store
        .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
        .unwrap();
    store.put("r1.failed", "{}", Put::Durable).unwrap();
    store
        .put("r2.alive", r#"{"nonce":"bb"}"#, Put::Beat)
        .unwrap();
    store.put("r2-bb.left", "", Put::Durable).unwrap();
    let t = Instant::now();
    mp.close(0, Duration::from_secs(600), &AtomicBool::new(false), true);
    assert!(t.elapsed() < LINGER / 2, "{:?}", t.elapsed());
}

#[test]
fn a_failed_rank_0_serves_a_beating_rank_past_the_linger_for_unseen_ones() {
    let (mp, _) = local("t");
    let store = mp.store();
    let done = Arc::new(AtomicBool::new(false));
    // Rank 1 beats (busy with its other benchmarks) for 4 s, then
    // learns of the failure; rank 2 is never seen.
    let beating = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            let t = Instant::now();
            let mut n = 0;
            while t.elapsed() < Duration::from_secs(4) {
                n += 1;
                let beat = format!(r#"{{"nonce":"aa","beat":{n}}}"#);
                store.put("r1.alive", &beat, Put::Beat).unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
            done.store(true, Ordering::SeqCst);
            store.put("r1.failed", "{}", Put::Durable).unwrap();
            store.put("r1-aa.left", "", Put::Durable).unwrap();
        })
    };
    let t = Instant::now();
    // A 1 s linger: rank 2 is given up on after it, rank 1 is not.
    mp.close_within(
        0,
        Duration::from_secs(600),
        &AtomicBool::new(false),
        true,
        Duration::from_secs(1),
    );
    assert!(done.load(Ordering::SeqCst), "served until rank 1 learnt");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    beating.join().unwrap();
}

#[test]
fn a_failed_rank_0_gives_up_on_a_rank_never_seen_after_the_linger() {
    let (mp, _) = local("t");
    let t = Instant::now();
    mp.close_within(
        0,
        Duration::from_secs(600),
        &AtomicBool::new(false),
        true,
        Duration::from_secs(1),
    );
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
}

/// Reads a frame as JSON, and the 4 bytes before it when `magic`.
fn raw_frame(s: &mut TcpStream, magic: bool) -> serde_json::Value {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if magic {
        let mut m = [0u8; 4];
        s.read_exact(&mut m).unwrap();
        assert_eq!(m, MAGIC);
    }
    let mut head = [0u8; 4];
    s.read_exact(&mut head).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(head) as usize];
    s.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn a_client_that_reaches_the_port_gets_nothing_to_guess_with() {
    let (mp, _) = local("secret-token-0123456789");
    let mut c = TcpStream::connect(mp.local_addr()).unwrap();
    let mut hello = MAGIC.to_vec();
    hello.extend(encode(&Msg::Hello {
        version: VERSION,
        nonce: to_hex(&[1u8; NONCE_LEN]),
        job: "j1/run".into(),
        world: 3,
    }));
    c.write_all(&hello).unwrap();
    let challenge = raw_frame(&mut c, true);
    assert_eq!(challenge["op"], "challenge");
    let keys: Vec<&String> = challenge.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["nonce", "op"], "no proof before the rank's");
    c.write_all(&encode(&Msg::Auth {
        mac: to_hex(&[0u8; 32]),
    }))
    .unwrap();
    let answer = raw_frame(&mut c, false);
    assert_eq!(answer["op"], "error");
    assert!(answer["message"].as_str().unwrap().contains("wrong token"));
    assert!(answer.get("proof").is_none());
}

#[test]
fn a_fake_meeting_point_reflecting_the_ranks_code_is_refused() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let hello = raw_frame(&mut s, true);
        assert_eq!(hello["op"], "hello");
        s.write_all(&MAGIC).unwrap();
        s.write_all(&encode(&Msg::Challenge {
            nonce: to_hex(&[2u8; NONCE_LEN]),
        }))
        .unwrap();
        let auth = raw_frame(&mut s, false);
        // The rank's own code sent back as the proof.
        let mac = auth["mac"].as_str().unwrap().to_string();
        s.write_all(&encode(&Msg::Welcome {
            proof: mac,
            instance: "x".into(),
        }))
        .unwrap();
        // Nothing else comes.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        rest
    });
    let rdv = Rendezvous::parse(&format!("127.0.0.1:{}", addr.port())).unwrap();
    let r = remote(&rdv, "secret-token-0123456789", 3, Duration::from_secs(5));
    let e = r.list().unwrap_err().to_string();
    assert!(e.contains("does not know this rank's token"), "{e}");
    drop(r);
    assert!(fake.join().unwrap().is_empty(), "nothing sent after");
}

#[test]
fn an_unauthenticated_refusal_is_shown_escaped_cut_and_unproven() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let said = format!("wrong token\n\u{1b}[2Jerror: all good{}", "x".repeat(900));
    let fake = {
        let said = said.clone();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            raw_frame(&mut s, true);
            s.write_all(&MAGIC).unwrap();
            s.write_all(&encode(&Msg::Error { message: said })).unwrap();
        })
    };
    let rdv = Rendezvous::parse(&format!("127.0.0.1:{}", addr.port())).unwrap();
    let r = remote(&rdv, "secret-token-0123456789", 3, Duration::from_secs(5));
    let e = r.list().unwrap_err().to_string();
    fake.join().unwrap();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!e.contains('\u{1b}'), "{e}");
    assert!(e.contains("wrong token\\n\\u{1b}[2J"), "{e}");
    assert!(e.contains("x…") && !e.contains(&"x".repeat(600)), "{e}");
    assert!(
        e.ends_with("(said before it proved that it knows the token)"),
        "{e}"
    );
    assert_eq!(untrusted("ok \u{202e}x"), "ok \\u{202e}x");
}

#[test]
fn a_rank_of_another_job_is_refused_naming_both() {
    let (mp, rdv) = local("t");
    let other = Remote::new(
        rdv.clone(),
        "t",
        Job {
            id: "j2/run".into(),
            world: 3,
        },
        Duration::from_secs(5),
        Arc::new(AtomicBool::new(false)),
    );
    let e = other
        .put("r1.json", "x", Put::Durable)
        .unwrap_err()
        .to_string();
    assert!(e.contains("job j2/run") && e.contains("job j1/run"), "{e}");
    assert!(mp.store().get("r1.json").is_err(), "nothing stored");
    let bigger = remote(&rdv, "t", 4, Duration::from_secs(5));
    let e = bigger.list().unwrap_err().to_string();
    assert!(e.contains("4 rank(s)") && e.contains("3 rank(s)"), "{e}");
    assert!(remote(&rdv, "t", 3, Duration::from_secs(5)).list().is_ok());
}

#[test]
fn another_service_behind_the_address_is_tried_again_not_final() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let http = std::thread::spawn(move || {
        // Answers every connection like a web server, then stops.
        l.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_millis(600);
        while Instant::now() < until {
            if let Ok((mut s, _)) = l.accept() {
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
    let r = remote(&rdv, "t", 3, Duration::from_millis(300));
    assert!(r.list().unwrap().is_empty(), "not final");
    assert!(lock(&r.refused).is_none());
    let e = r.put("r1.json", "x", Put::Durable).unwrap_err().to_string();
    assert!(
        e.contains("lost the meeting point") && e.contains("not a benchsuite meeting point"),
        "{e}"
    );
    http.join().unwrap();
}

#[test]
fn a_restarted_meeting_point_tells_a_rank_that_published_there() {
    let (mp, rdv) = local("t");
    let r = remote(&rdv, "t", 3, Duration::from_secs(5));
    r.put("r1.json", "x", Put::Durable).unwrap();
    assert!(r.list().unwrap().contains("r1.json"));
    drop(mp);
    let again = MeetingPoint::start(&rdv, "t", &job(3), Duration::from_secs(1)).unwrap();
    // The old connection is closed: the next request reconnects.
    let by = Instant::now() + Duration::from_secs(10);
    let e = loop {
        match r.list() {
            Err(e) => break e.to_string(),
            Ok(_) if Instant::now() < by => std::thread::sleep(Duration::from_millis(20)),
            Ok(n) => panic!("{n:?}"),
        }
    };
    assert!(e.contains("restarted"), "{e}");
    drop(again);
}

#[test]
fn one_source_cannot_crowd_out_the_others_handshakes() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut streams = Vec::new();
    let mut q = std::collections::VecDeque::new();
    let ip = |n: u8| IpAddr::from([10, 0, 0, n]);
    let mut id = 0;
    let mut add = |q: &mut std::collections::VecDeque<_>, from: IpAddr| {
        let s = TcpStream::connect(addr).unwrap();
        streams.push(l.accept().unwrap());
        id += 1;
        admit(q, id, from, s);
    };
    let from = |q: &std::collections::VecDeque<(u64, IpAddr, TcpStream)>, n| {
        q.iter().filter(|e| e.1 == ip(n)).count()
    };
    add(&mut q, ip(1));
    // Many ranks of one node at once: all let in while there is room.
    for _ in 1..MAX_PENDING {
        add(&mut q, ip(2));
    }
    assert_eq!(from(&q, 2), MAX_PENDING - 1, "none closed below the limit");
    let first_of_2 = q.iter().find(|e| e.1 == ip(2)).unwrap().0;
    for _ in 0..MAX_PENDING {
        add(&mut q, ip(2));
    }
    assert_eq!(q.len(), MAX_PENDING);
    assert_eq!(from(&q, 1), 1, "the other source's handshake stays");
    assert!(
        q.iter().all(|e| e.0 != first_of_2),
        "the oldest of the busiest address gave way"
    );
    // All taken by many sources: the one with the most gives way.
    for n in 3..30 {
        add(&mut q, ip(n));
    }
    assert_eq!(q.len(), MAX_PENDING);
    assert_eq!(from(&q, 1), 1);
    assert_eq!(from(&q, 2), MAX_PENDING - 1 - 27);
}

#[test]
fn a_world_beyond_the_open_file_limit_is_refused_up_front() {
    let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let Some(files) = limits.lines().find(|l| l.starts_with("Max open files")) else {
        skip(Capability::Linux, "no open-file limit in /proc/self/limits");
        return;
    };
    if files.split_whitespace().nth(3) == Some("unlimited") {
        skip(
            Capability::Linux,
            "no open-file limit (RLIMIT_NOFILE is unlimited)",
        );
        return;
    }
    assert!(check_fd_limit("h:1", 2).is_ok());
    // The soft limit was raised to the hard one.
    let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_default();
    let soft_hard: Vec<&str> = files.split_whitespace().skip(3).take(2).collect();
    assert_eq!(soft_hard.first(), soft_hard.get(1), "{files}");
    let e = check_fd_limit("h:1", u64::MAX / 2).unwrap_err();
    assert!(
        e.contains("--rendezvous h:1") && e.contains("ulimit -Hn"),
        "{e}"
    );
}

#[test]
fn a_world_beyond_what_the_store_holds_is_refused_up_front() {
    assert!(check_world("h:1", MAX_WORLD).is_ok());
    let e = check_world("h:1", MAX_WORLD + 1).unwrap_err();
    assert!(
        e.contains("--rendezvous h:1") && e.contains("--output-dir"),
        "{e}"
    );
    // Each rank's entries, as many as it keeps at once, fit.
    assert!(MAX_WORLD as usize * ENTRIES_PER_RANK <= MAX_ENTRIES);
    assert!(MAX_WORLD as usize * 16 * 1024 <= MAX_BYTES);
}

#[test]
fn the_token_file_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r0-abc.token");
    publish(&path, "secret", true, true).unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "secret");
    let names: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file left");
}

/// A directory store's errors are typed: absent, an I/O error with its
/// action and path; a secret never goes to a meeting point.
#[test]
fn a_store_says_which_error_it_met() {
    let tmp = tempfile::tempdir().unwrap();
    let store = DirStore::create(tmp.path().join("rdv")).unwrap();
    let e = store.get("r1.alive").unwrap_err();
    assert!(e.is_absent(), "{e:?}");
    assert!(e.to_string().starts_with("r1.alive absent in "), "{e}");
    store.put("r1.alive", "x", Put::Durable).unwrap();
    assert_eq!(store.get("r1.alive").unwrap(), "x");
    // A file where the directory should be: the write fails, named.
    let blocked = DirStore {
        dir: tmp.path().join("rdv/r1.alive"),
    };
    match blocked.put("r2.alive", "y", Put::Durable) {
        Err(StoreError::Io { action, path, .. }) => {
            assert_eq!(action, "write");
            assert!(path.ends_with("r1.alive/r2.alive"), "{}", path.display());
        }
        other => panic!("{other:?}"),
    }
    // Removing what is not there is no error.
    store.remove("r9.alive").unwrap();
    let e: String = StoreError::Secret {
        name: "r0.token".into(),
    }
    .into();
    assert_eq!(e, "r0.token: a secret is never sent to a meeting point");
}

/// Issue 37 L7: a file another user put in a shared rendezvous directory
/// is never followed (a link), waited on (a FIFO) or read whole (a huge
/// file): each is an error naming it, at once.
#[test]
fn a_store_file_is_a_regular_file_of_bounded_size_or_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = DirStore::create(tmp.path().join("rdv")).unwrap();
    let secret = tmp.path().join("secret");
    fs::write(&secret, "not yours").unwrap();
    std::os::unix::fs::symlink(&secret, store.dir.join("r1.json")).unwrap();
    let e = store.get("r1.json").unwrap_err();
    assert!(e.to_string().contains("symbolic link, not followed"), "{e}");
    // A FIFO nobody writes: an error at once, not a rank that hangs.
    let fifo = store.dir.join("r2.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t = Instant::now();
    let e = store.get("r2.json").unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2));
    // A (sparse) file over the limit: refused from its size.
    let big = fs::File::create(store.dir.join("r3.json")).unwrap();
    big.set_len(MAX_STORE_TEXT + 1).unwrap();
    let e = store.get("r3.json").unwrap_err();
    assert!(e.to_string().contains("a store file may hold"), "{e}");
    assert!(e.to_string().contains("r3.json"), "{e}");
}
