use std::fs;

use super::*;
use crate::rendezvous::{Rendezvous, StoreError};

#[test]
fn pairwise_is_a_bisection_each_way() {
    let (r, odd) = schedule(Mode::Pairwise, &[0, 1, 2, 3]);
    assert_eq!(r[0].pairs, [(2, 0), (3, 1)]);
    assert_eq!(r[1].pairs, [(0, 2), (1, 3)]);
    assert_eq!(odd, None);
    let (r, odd) = schedule(Mode::Pairwise, &[0, 2, 4]);
    assert_eq!(r[0].pairs, [(2, 0)]);
    assert_eq!(r[1].pairs, [(0, 2)]);
    assert_eq!(odd, Some(4));
    assert_eq!(schedule(Mode::Pairwise, &[5]), (Vec::new(), None));
}

#[test]
fn fan_in_has_every_other_rank_measure_the_first() {
    let (r, odd) = schedule(Mode::FanIn, &[1, 3, 4]);
    assert_eq!(
        r,
        [Round {
            pairs: vec![(3, 1), (4, 1)]
        }]
    );
    assert_eq!(odd, None);
}

/// A pairing of rank 0 in a world of 2 meeting in `dir`, started now.
fn pairing(dir: &std::path::Path) -> Pairing {
    Pairing {
        mode: Mode::Pairwise,
        auto: false,
        rank: 0,
        world: 2,
        host: "h0".into(),
        store: Arc::new(DirStore::create(dir.to_path_buf()).unwrap()),
        shared_token: None,
        meeting: None,
        nonce: "00000000000000aa".into(),
        bind: Ipv4Addr::LOCALHOST.into(),
        bind_from: "--net-bind",
        timeout: Duration::from_secs(60),
        started_ms: now_ms(),
        cancel: Arc::new(AtomicBool::new(false)),
        completed: Cell::new(true),
        failed_early: Cell::new(false),
        heartbeat: None,
        beats: RefCell::new(BTreeMap::new()),
        met: RefCell::new(BTreeMap::new()),
        facts: RefCell::new(Value::Null),
        filled: RefCell::new(BTreeSet::new()),
    }
}

#[test]
fn at_a_meeting_point_rr_json_lists_no_met_and_counts_without_a_heartbeat() {
    let tmp = tempfile::tempdir().unwrap();
    let rdv = Rendezvous {
        host: "127.0.0.1".into(),
        port: 0,
        given: "127.0.0.1:0".into(),
    };
    let job = Job {
        id: "j/run".into(),
        world: 2,
    };
    let mp = MeetingPoint::start(&rdv, "t", &job, Duration::from_secs(1)).unwrap();
    let mut p = pairing(tmp.path());
    p.store = mp.store();
    p.timeout = Duration::from_secs(5);
    p.met.borrow_mut().insert(1, "00000000000000bb".into());
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    p.publish_join(Some(addr), "h").unwrap();
    let mine: Value = serde_json::from_str(&p.store.get("r0.json").unwrap()).unwrap();
    assert_eq!(mine["met"], json!({}), "{mine}");
    // Rank 1 met the others and left (no heartbeat): still this run's.
    let theirs = json!({"rank": 1, "host": "h1", "address": "127.0.0.1:10",
        "nonce": "00000000000000bb", "mode": "pairwise", "schedule": "h"});
    p.store
        .put("r1.json", &theirs.to_string(), Put::Durable)
        .unwrap();
    let peers = p.join_all(Some(addr), "h").unwrap();
    assert_eq!(peers[&1].nonce, "00000000000000bb");
    mp.close(0, Duration::from_millis(1), &AtomicBool::new(false), false);
}

#[test]
fn an_earlier_runs_failure_marker_does_not_count() {
    let tmp = tempfile::tempdir().unwrap();
    let p = pairing(tmp.path());
    let failed = |nonce: &str, at: u128| {
        let v = json!({"rank": 1, "host": "h1", "nonce": nonce, "reason": "boom", "written_at_ms": at as u64});
        fs::write(tmp.path().join("r1.failed"), v.to_string()).unwrap();
    };
    // Written before this rank started, by a nonce never met.
    failed("00000000000000bb", p.started_ms - 1);
    assert_eq!(p.failed(1), None);
    // The same marker, by the nonce met at the barrier.
    p.met.borrow_mut().insert(1, "00000000000000bb".into());
    assert_eq!(
        p.failed(1).as_deref(),
        Some("rank 1 (host h1) failed: boom")
    );
    // Written after this rank started.
    p.met.borrow_mut().clear();
    failed("00000000000000cc", now_ms() + 1);
    assert!(p.failed(1).is_some());
}

#[test]
fn a_heartbeat_counts_once_it_changes_and_is_gone_once_it_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = pairing(tmp.path());
    p.timeout = Duration::from_millis(300);
    let beat = |n: u64| {
        let v = json!({"nonce": "00000000000000bb", "beat": n});
        fs::write(tmp.path().join("r1.alive"), v.to_string()).unwrap();
    };
    beat(1);
    p.look(1, &p.listing().unwrap());
    assert_eq!(p.beats.borrow()[&1].live, None, "maybe an earlier run's");
    beat(2);
    p.look(1, &p.listing().unwrap());
    assert_eq!(
        p.beats.borrow()[&1].live.as_deref(),
        Some("00000000000000bb")
    );
    assert_eq!(p.gone(1), None);
    std::thread::sleep(Duration::from_millis(350));
    p.look(1, &p.listing().unwrap());
    let why = p.gone(1).unwrap();
    assert!(why.contains("heartbeat r1.alive stopped"), "{why}");
}

#[test]
fn the_schedule_hash_tells_modes_and_steps_apart() {
    let mut registry = Registry::new();
    for b in benchsuite_net::benchmarks() {
        registry.register(b).expect("net keeps the contract");
    }
    let bench = |id: &str| registry.benchmarks().find(|b| b.meta().id == id).unwrap();
    let tcp = bench("net.tcp_throughput");
    let step = |point: Point, rounds: usize| Step {
        bench: tcp,
        point,
        part: 0,
        rounds,
    };
    let h = schedule_hash(Mode::Pairwise, &[step(Point::default(), 1)]);
    assert_eq!(
        h,
        schedule_hash(Mode::Pairwise, &[step(Point::default(), 1)])
    );
    assert_ne!(h, schedule_hash(Mode::FanIn, &[step(Point::default(), 1)]));
    assert_ne!(
        h,
        schedule_hash(Mode::Pairwise, &[step(Point::default(), 2)])
    );
    let mut point = Point::default();
    point
        .0
        .insert("block".into(), benchsuite_core::param::Value::Int(1024));
    assert_ne!(h, schedule_hash(Mode::Pairwise, &[step(point, 1)]));
}

fn peer(rank: u64, nonce: &str) -> Peer {
    Peer {
        rank,
        host: format!("h{rank}"),
        address: None,
        nonce: nonce.into(),
    }
}

#[test]
fn a_rank_whose_heartbeat_shows_another_run_than_the_one_met_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let p = pairing(tmp.path());
    p.met.borrow_mut().insert(1, "00000000000000bb".into());
    let beat = |nonce: &str, n: u64| {
        let v = json!({"nonce": nonce, "beat": n});
        fs::write(tmp.path().join("r1.alive"), v.to_string()).unwrap();
        p.look(1, &p.listing().unwrap());
    };
    beat("00000000000000bb", 1);
    beat("00000000000000bb", 2);
    assert_eq!(p.restarted(1), None, "the run met");
    // Restarted: a new nonce beating; it never writes the old run's
    // markers, and is not silent either.
    beat("00000000000000cc", 3);
    let peers = BTreeMap::from([
        (0, peer(0, "00000000000000aa")),
        (1, peer(1, "00000000000000bb")),
    ]);
    let t = Instant::now();
    let e = p
        .wait_markers(&[0, 1], &[], &peers, "done-1", "to finish round 1")
        .unwrap_err();
    assert!(e.contains("rank 1 restarted"), "{e}");
    assert!(t.elapsed() < p.timeout / 2, "not after the timeout");
}

/// A directory that does not answer until `up`.
struct Outage {
    dir: DirStore,
    up: Instant,
}

impl Store for Outage {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), StoreError> {
        self.dir.put(name, text, how)
    }
    fn get(&self, name: &str) -> Result<String, StoreError> {
        self.dir.get(name)
    }
    fn remove(&self, name: &str) -> Result<(), StoreError> {
        self.dir.remove(name)
    }
    fn list(&self) -> Result<HashSet<String>, StoreError> {
        self.dir.list()
    }
    fn place(&self) -> String {
        self.dir.place()
    }
    fn location(&self) -> String {
        self.dir.location()
    }
    fn flag(&self) -> &'static str {
        "--rendezvous"
    }
    fn answering(&self) -> bool {
        Instant::now() >= self.up
    }
}

#[test]
fn heartbeats_are_judged_anew_once_the_store_answers_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = pairing(tmp.path());
    p.timeout = Duration::from_secs(2);
    let outage = Duration::from_millis(300);
    p.store = Arc::new(Outage {
        dir: DirStore::create(tmp.path().to_path_buf()).unwrap(),
        up: Instant::now() + outage,
    });
    // Rank 1 last seen beating long ago, by this rank's clock, while
    // the store did not answer.
    p.beats.borrow_mut().insert(
        1,
        Beat {
            text: Some("x".into()),
            since: Instant::now() - Duration::from_secs(60),
            live: None,
        },
    );
    let peers = BTreeMap::from([(1, peer(1, "00000000000000bb"))]);
    let t = Instant::now();
    let e = p
        .wait_markers(&[0, 1], &[], &peers, "done-1", "to finish round 1")
        .unwrap_err();
    assert!(e.contains("gave up waiting for rank 1"), "{e}");
    // Given up only a whole timeout after the answers resumed.
    assert!(t.elapsed() >= outage + p.timeout, "{:?}", t.elapsed());
}

#[test]
fn the_bind_address_is_the_flag_else_never_unspecified() {
    let ip: IpAddr = "10.1.2.3".parse().unwrap();
    assert_eq!(bind_address(Some(ip), Some("x")), (ip, "--net-bind"));
    let (ip, _) = bind_address(None, Some("localhost"));
    assert!(!ip.is_unspecified());
}
