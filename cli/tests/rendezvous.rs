//! `run --rendezvous HOST:PORT`: network benchmarks between a launcher's
//! ranks with no shared file system. Each rank is a process of its own
//! (RANK and WORLD_SIZE, as torchrun sets them) with its OWN
//! `--output-dir`; they meet at rank 0's meeting point on loopback.

use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

mod common;
use common::{benchsuite as bin, records};

/// A quick network run: TCP throughput and connection setup, then
/// `os.syscall` (which runs first: net benchmarks go last when paired).
const NET_FAST: &[&str] = &[
    "run",
    "net.tcp_throughput",
    "net.connect",
    "os.syscall",
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

const TOKEN: &str = "0123456789abcdef0123456789abcdef-rendezvous-test";
const JOB: &str = "rdv";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A loopback port nobody listens on now, below Linux's ephemeral range
/// (32768-60999), so that no socket another test opens meanwhile (a
/// rank's server, a client) is given it before rank 0 binds it.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let seed = (std::process::id() as u16).wrapping_mul(7919);
    loop {
        let port = 20_000 + seed.wrapping_add(NEXT.fetch_add(97, Ordering::SeqCst)) % 12_000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// One rank to start: its rank, token and extra flags.
struct Rank<'a> {
    rank: usize,
    job: &'a str,
    token: Option<&'a str>,
    local_rank: Option<&'a str>,
    extra: &'a [&'a str],
}

impl<'a> Rank<'a> {
    fn new(rank: usize) -> Rank<'a> {
        Rank {
            rank,
            job: JOB,
            token: Some(TOKEN),
            local_rank: None,
            extra: &[],
        }
    }
}

/// The processes a test started: each killed (by its PID) when the test
/// ends, if still alive.
struct Ranks(Vec<Option<Child>>);

impl Ranks {
    /// Starts `ranks` of a world of `world`, each with `--output-dir
    /// out/rankR` (no directory shared), meeting at `rdv`.
    fn start(world: usize, rdv: &str, out: &Path, ranks: &[Rank<'_>]) -> Ranks {
        let world_s = world.to_string();
        let children = ranks
            .iter()
            .map(|r| {
                let rank = r.rank.to_string();
                let mut env = vec![
                    ("RANK", rank.as_str()),
                    ("WORLD_SIZE", world_s.as_str()),
                    ("TORCHELASTIC_RUN_ID", r.job),
                ];
                if let Some(t) = r.token {
                    env.push(("BENCHSUITE_TOKEN", t));
                }
                if let Some(l) = r.local_rank {
                    env.push(("LOCAL_RANK", l));
                }
                let dir = rank_dir(out, r.rank);
                Some(
                    bin(&env)
                        .args(NET_FAST)
                        .args(["--output-dir", dir.to_str().unwrap()])
                        .args(["--net-bind", "127.0.0.1", "--rendezvous", rdv])
                        .args(r.extra)
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("the binary starts"),
                )
            })
            .collect();
        Ranks(children)
    }

    /// Waits for all (killed past 120 s), in the order started.
    fn wait(mut self) -> Vec<Output> {
        let deadline = Instant::now() + Duration::from_secs(120);
        self.0
            .iter_mut()
            .map(|c| {
                let mut c = c.take().unwrap();
                while c.try_wait().unwrap().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
                c.wait_with_output().unwrap()
            })
            .collect()
    }
}

impl Ranks {
    /// Kills the `i`-th process started (SIGKILL, by its PID).
    fn kill(&mut self, i: usize) {
        if let Some(c) = self.0[i].as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        for c in self.0.iter_mut().flatten() {
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

fn rank_dir(out: &Path, rank: usize) -> PathBuf {
    out.join(format!("rank{rank}"))
}

/// Rank `rank`'s report, in its own `--output-dir`.
fn rank_report(out: &Path, rank: usize) -> Value {
    let r = common::report_of_rank(&rank_dir(out, rank).join(JOB), rank);
    assert_valid_report(&r);
    r
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(d) = std::fs::read_dir(dir) {
        for e in d.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Asserts that no rendezvous directory and no token file was written.
fn assert_nothing_shared(out: &Path) {
    let files = files_under(out);
    assert!(
        files.iter().all(|f| {
            let s = f.to_string_lossy();
            !s.contains(".rendezvous") && !s.ends_with(".token")
        }),
        "{files:?}"
    );
}

/// Asserts that both ranks' net records are ok, cross-host (pairwise).
fn assert_pairwise(out: &Path, ranks: [usize; 2], rdv: &str) {
    for (rank, other) in [(ranks[0], ranks[1]), (ranks[1], ranks[0])] {
        let r = rank_report(out, rank);
        let net = records(&r, "net.");
        assert_eq!(net.len(), 2, "rank {rank}: {r}");
        for rec in net {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
            let notes = rec["notes"].to_string();
            assert!(
                notes.contains(&format!(
                    "cross-host (--net-pairs pairwise): measured against the server of rank {other} (host "
                )),
                "rank {rank}: {notes}"
            );
        }
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert_eq!(p["mode"], "pairwise", "{p}");
        assert_eq!(p["rank"], rank);
        assert_eq!(p["rendezvous"], rdv, "{p}");
        assert_eq!(p["measured_against"]["rank"], other, "{p}");
        let addr = p["measured_against"]["address"].as_str().unwrap();
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        assert!(
            !r.to_string().contains(TOKEN),
            "the token never reaches a report"
        );
    }
}

#[test]
fn two_ranks_pair_at_the_meeting_point_without_a_shared_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    // `auto` turns pairwise with --rendezvous.
    let outs = Ranks::start(2, &rdv, &out, &[Rank::new(0), Rank::new(1)]).wait();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert!(
        stderr(&outs[0]).contains(&format!("serving the meeting point on {rdv}")),
        "{}",
        stderr(&outs[0])
    );
    assert_pairwise(&out, [0, 1], &rdv);
    for rank in 0..2 {
        let r = rank_report(&out, rank);
        let ids: Vec<&str> = r["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["os.syscall", "net.tcp_throughput", "net.connect"]);
    }
    assert_nothing_shared(&out);
}

#[test]
fn three_ranks_fan_in_at_the_meeting_point() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let fan: &[&str] = &["--net-pairs", "fan-in"];
    let ranks: Vec<Rank<'_>> = (0..3)
        .map(|r| Rank {
            extra: fan,
            ..Rank::new(r)
        })
        .collect();
    let outs = Ranks::start(3, &rdv, &out, &ranks).wait();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    let r0 = rank_report(&out, 0);
    for rec in records(&r0, "net.") {
        assert_eq!(rec["status"], "skipped", "{rec}");
        assert!(
            rec["reason"]
                .as_str()
                .unwrap()
                .contains("served the fan-in (2 clients at once)"),
            "{rec}"
        );
    }
    let served: Vec<u64> = r0["host"]["extra"]["net"]["pairing"]["served"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(served, [1, 2]);
    for rank in 1..3 {
        let r = rank_report(&out, rank);
        let net = records(&r, "net.");
        assert_eq!(net.len(), 2, "{r}");
        for rec in net {
            assert_eq!(rec["status"], "ok", "rank {rank}: {rec}");
            assert!(
                rec["notes"].to_string().contains(
                    "cross-host (--net-pairs fan-in): one of 2 clients measuring the server of rank 0 (host "
                ),
                "{rec}"
            );
        }
        let p = &r["host"]["extra"]["net"]["pairing"];
        assert_eq!(p["measured_against"]["rank"], 0, "{p}");
        assert!(
            p["measured_against"]["address"]
                .as_str()
                .unwrap()
                .starts_with("127.0.0.1:"),
            "{p}"
        );
    }
    assert_nothing_shared(&out);
}

#[test]
fn an_idle_rank_0_still_serves_the_meeting_point() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    // Rank 0 shares rank 1's node (local rank 1): idle; 1 and 2 pair.
    let ranks = [
        Rank {
            local_rank: Some("1"),
            ..Rank::new(0)
        },
        Rank {
            local_rank: Some("0"),
            ..Rank::new(1)
        },
        Rank {
            local_rank: Some("0"),
            ..Rank::new(2)
        },
    ];
    let outs = Ranks::start(3, &rdv, &out, &ranks).wait();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert_eq!(
        stderr(&outs[0]).matches("idle on purpose").count(),
        1,
        "said once: {}",
        stderr(&outs[0])
    );
    assert_pairwise(&out, [1, 2], &rdv);
}

/// Asserts exit 2 with a one-line message naming each of `needles`.
fn assert_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "should name {n}: {err}");
    }
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("records:"), "measured: {err}");
}

#[test]
fn bad_rendezvous_flags_exit_2_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        bin(env)
            .args(NET_FAST)
            .args(["--output-dir", out_s, "--net-bind", "127.0.0.1"])
            .args(extra)
            .output()
            .unwrap()
    };
    let two = [("RANK", "0"), ("WORLD_SIZE", "2")];
    let two_tok = [
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("TORCHELASTIC_RUN_ID", JOB),
        ("BENCHSUITE_TOKEN", TOKEN),
    ];
    let port = free_port().to_string();
    let rdv = format!("127.0.0.1:{port}");
    // No token.
    let o = run(&["--rendezvous", &rdv], &two);
    assert_error(
        &o,
        &[
            "--rendezvous needs a token",
            "BENCHSUITE_TOKEN",
            "--token-file",
        ],
    );
    // Not HOST:PORT.
    for bad in ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:http", "[::1:5"] {
        let o = run(&["--rendezvous", bad], &two_tok);
        assert_error(&o, &[&format!("invalid value `{bad}` for --rendezvous")]);
    }
    // An address nobody can connect to.
    let o = run(&["--rendezvous", &format!("0.0.0.0:{port}")], &two_tok);
    assert_error(&o, &["--rendezvous 0.0.0.0:", "unspecified or multicast"]);
    // Rank 0 must serve an address of its own (TEST-NET-1 is nobody's).
    let o = run(&["--rendezvous", &format!("192.0.2.1:{port}")], &two_tok);
    assert_error(
        &o,
        &[
            &format!("--rendezvous 192.0.2.1:{port}"),
            "192.0.2.1 is not an address of this host",
        ],
    );
    // With --net-pairs off; without a launcher.
    let o = run(&["--rendezvous", &rdv, "--net-pairs", "off"], &two_tok);
    assert_error(&o, &["--rendezvous", "--net-pairs off"]);
    let o = run(&["--rendezvous", &rdv], &[("BENCHSUITE_TOKEN", TOKEN)]);
    assert_error(
        &o,
        &["--rendezvous: needs a launcher's rank and world size"],
    );
    let o = run(
        &["--rendezvous", &rdv],
        &[
            ("RANK", "0"),
            ("WORLD_SIZE", "1"),
            ("BENCHSUITE_TOKEN", TOKEN),
        ],
    );
    assert_error(&o, &["--rendezvous: needs a world size of 2 or more"]);
}

#[test]
fn a_rendezvous_without_a_job_id_is_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let port = free_port().to_string();
    let rdv = format!("127.0.0.1:{port}");
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        bin(env)
            .args(NET_FAST)
            .args(["--output-dir", out_s, "--net-bind", "127.0.0.1"])
            .args(["--rendezvous", &rdv])
            .args(extra)
            .output()
            .unwrap()
    };
    // RANK and WORLD_SIZE without a torchrun run id (or with `none`), on
    // rank 0 and on another rank: two such jobs could not be told apart.
    for (rank, id) in [("0", None), ("1", None), ("0", Some("none"))] {
        let mut env = vec![
            ("RANK", rank),
            ("WORLD_SIZE", "2"),
            ("BENCHSUITE_TOKEN", TOKEN),
        ];
        if let Some(id) = id {
            env.push(("TORCHELASTIC_RUN_ID", id));
        }
        let o = run(&[], &env);
        assert_error(
            &o,
            &[
                &format!(
                    "--rendezvous needs the job's id, so that only this job's ranks meet at {rdv}"
                ),
                "TORCHELASTIC_RUN_ID",
                "--job-id",
            ],
        );
        assert!(TcpStream::connect(&rdv).is_err(), "nothing served");
    }
    // A Kubernetes Indexed Job gives none: the Job's uid is named.
    let o = run(
        &["--world-size", "2"],
        &[("JOB_COMPLETION_INDEX", "0"), ("BENCHSUITE_TOKEN", TOKEN)],
    );
    assert_error(&o, &["--job-id", "controller-uid"]);
    // With --job-id the job id is there: the next check speaks (rank 0
    // must serve an address of its own).
    let o = bin(&[
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("BENCHSUITE_TOKEN", TOKEN),
    ])
    .args(NET_FAST)
    .args(["--output-dir", out_s, "--net-bind", "127.0.0.1"])
    .args([
        "--rendezvous",
        &format!("192.0.2.1:{port}"),
        "--job-id",
        "j7",
    ])
    .output()
    .unwrap();
    assert_error(&o, &["192.0.2.1 is not an address of this host"]);
}

#[test]
fn a_rank_with_a_wrong_token_fails_clearly_and_rank_0_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let quick: &[&str] = &["--rendezvous-timeout", "3s"];
    let started = Instant::now();
    let rank0 = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: quick,
            ..Rank::new(0)
        }],
    );
    drop(connect_when_up(&rdv));
    // Rank 1 with another token: it proves its token first, the meeting
    // point refuses it, and rank 1 stops at once, before measuring.
    let rank1 = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            token: Some("another-token-entirely-0123"),
            extra: quick,
            ..Rank::new(1)
        }],
    );
    let o1 = rank1.wait().remove(0);
    assert_error(
        &o1,
        &[&format!(
            "--rendezvous: the meeting point {rdv} refused this rank: wrong token"
        )],
    );
    // Rank 0: not crashed; gave up on rank 1 after --rendezvous-timeout,
    // naming the refusal.
    let o0 = rank0.wait().remove(0);
    assert!(started.elapsed() < Duration::from_secs(100), "no hang");
    assert_eq!(o0.status.code(), Some(0), "{}", stderr(&o0));
    let r0 = rank_report(&out, 0);
    assert_eq!(records(&r0, "os.")[0]["status"], "ok");
    let net = records(&r0, "net.");
    assert_eq!(net.len(), 2);
    for rec in net {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("gave up waiting for rank 1") && why.contains("wrong token"),
            "{why}"
        );
    }
}

#[test]
fn a_rank_whose_meeting_point_never_comes_fails_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let quick: &[&str] = &["--rendezvous-timeout", "2s"];
    let started = Instant::now();
    let outs = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: quick,
            ..Rank::new(1)
        }],
    )
    .wait();
    assert!(started.elapsed() < Duration::from_secs(60), "no hang");
    assert_eq!(outs[0].status.code(), Some(0), "{}", stderr(&outs[0]));
    let r1 = rank_report(&out, 1);
    let net = records(&r1, "net.");
    assert_eq!(net.len(), 2);
    for rec in net {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains(&format!("lost the meeting point {rdv}")),
            "{why}"
        );
    }
}

/// Connects to `addr` until it listens (rank 0 starting), for 60 s.
fn connect_when_up(addr: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return s,
            Err(e) if Instant::now() > deadline => panic!("{addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn hostile_clients_do_not_stop_the_ranks_from_pairing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let ranks = Ranks::start(2, &rdv, &out, &[Rank::new(0), Rank::new(1)]);
    // A connection that sends nothing, held for the whole run.
    let silent = connect_when_up(&rdv);
    // Garbage bytes.
    let mut garbage = connect_when_up(&rdv);
    let _ = garbage.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff\xfe");
    // The meeting point's magic, then a frame of 4 GiB - 1 announced.
    let mut big = connect_when_up(&rdv);
    let _ = big.write_all(b"BSRV\xff\xff\xff\xff");
    // A few more silent ones, below and around the limit of those
    // awaiting authentication.
    let more: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(&rdv).ok())
        .collect();
    let outs = ranks.wait();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert_pairwise(&out, [0, 1], &rdv);
    drop((silent, garbage, big, more));
}

#[test]
fn a_meeting_point_that_vanishes_mid_run_fails_the_rest_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let quick: &[&str] = &["--rendezvous-timeout", "4s"];
    // A world of 3 whose rank 2 never comes: ranks 0 and 1 wait at the
    // barrier, and rank 0 is killed (-9) while they do.
    let mut rank0 = Ranks::start(
        3,
        &rdv,
        &out,
        &[Rank {
            extra: quick,
            ..Rank::new(0)
        }],
    );
    drop(connect_when_up(&rdv));
    let started = Instant::now();
    let rank1 = Ranks::start(
        3,
        &rdv,
        &out,
        &[Rank {
            extra: quick,
            ..Rank::new(1)
        }],
    );
    std::thread::sleep(Duration::from_millis(1500));
    rank0.kill(0);
    let o1 = rank1.wait().remove(0);
    assert!(started.elapsed() < Duration::from_secs(60), "no hang");
    assert_eq!(o1.status.code(), Some(0), "{}", stderr(&o1));
    let r1 = rank_report(&out, 1);
    let net = records(&r1, "net.");
    assert_eq!(net.len(), 2);
    for rec in net {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains(&format!("lost the meeting point {rdv}")),
            "{why}"
        );
    }
}

#[test]
fn a_token_with_whitespace_around_it_pairs_as_the_trimmed_token() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    // A secret file's last newline (kubectl create secret --from-file),
    // on one rank only: the same token still.
    let padded = format!("{TOKEN}\n");
    let ranks = [
        Rank {
            token: Some(&padded),
            ..Rank::new(0)
        },
        Rank {
            token: Some(" \t0123456789abcdef0123456789abcdef-rendezvous-test"),
            ..Rank::new(1)
        },
    ];
    let outs = Ranks::start(2, &rdv, &out, &ranks).wait();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert_pairwise(&out, [0, 1], &rdv);
}

#[test]
fn a_short_token_is_refused_before_anything_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let ranks = [Rank {
        token: Some("password1\n"),
        ..Rank::new(0)
    }];
    let o = Ranks::start(2, &rdv, &out, &ranks).wait().remove(0);
    assert_error(
        &o,
        &[
            "--rendezvous needs a token of at least 16 characters (this one has 9)",
            "openssl rand -hex 32",
        ],
    );
    assert!(TcpStream::connect(&rdv).is_err(), "nothing served");
}

#[test]
fn a_rank_of_another_job_is_refused_naming_both_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let out_a = tmp.path().join("a");
    let out_b = tmp.path().join("b");
    let rdv = format!("127.0.0.1:{}", free_port());
    // Job A's rank 0 serves; job B's rank 1 comes with the same token
    // and port (B's rank 0 would find the port in use).
    let a0 = Ranks::start(2, &rdv, &out_a, &[Rank::new(0)]);
    drop(connect_when_up(&rdv));
    let b1 = Ranks::start(
        2,
        &rdv,
        &out_b,
        &[Rank {
            job: "other-job",
            ..Rank::new(1)
        }],
    );
    let o = b1.wait().remove(0);
    assert_error(
        &o,
        &[
            &format!("the meeting point {rdv} refused this rank: another job's meeting point"),
            "this rank is of job other-job/run with 2 rank(s)",
            &format!("serves job {JOB}/run with 2 rank(s)"),
        ],
    );
    // Job A's own rank 1 still pairs with its rank 0.
    let a1 = Ranks::start(2, &rdv, &out_a, &[Rank::new(1)]);
    let outs: Vec<Output> = a0.wait().into_iter().chain(a1.wait()).collect();
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(0), "rank {rank}: {}", stderr(o));
    }
    assert_pairwise(&out_a, [0, 1], &rdv);
}

#[test]
fn rank_0_says_its_error_at_once_and_the_others_learn_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    // Unwritable -o: refused before the meeting point starts.
    let o = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: &["-o", "/proc/nope/x.json"],
            ..Rank::new(0)
        }],
    )
    .wait()
    .remove(0);
    assert_error(&o, &["-o /proc/nope/x.json: cannot create the file"]);
    // An error after it started (a parameter no benchmark takes): said
    // at once; rank 0 serves on until rank 1, which starts after rank 0
    // failed, learnt of it.
    let started = Instant::now();
    let rank0 = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: &["--rendezvous-timeout", "10m", "--param", "nope=1"],
            ..Rank::new(0)
        }],
    );
    drop(connect_when_up(&rdv));
    std::thread::sleep(Duration::from_millis(500));
    let rank1 = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: &["--rendezvous-timeout", "10m"],
            ..Rank::new(1)
        }],
    );
    let outs: Vec<Output> = rank0.wait().into_iter().chain(rank1.wait()).collect();
    assert!(
        started.elapsed() < Duration::from_secs(100),
        "well before --rendezvous-timeout: {}\n{}",
        stderr(&outs[0]),
        stderr(&outs[1])
    );
    let err0 = stderr(&outs[0]);
    assert_eq!(outs[0].status.code(), Some(2), "{err0}");
    let lines: Vec<&str> = err0
        .lines()
        .filter(|l| !l.starts_with("warning:"))
        .collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("error: --param nope"))
        .unwrap_or_else(|| panic!("{err0}"));
    assert!(
        lines[at + 1..]
            .iter()
            .all(|l| l.contains("keeping the meeting point")),
        "only the lingering said after the error: {err0}"
    );
    assert_eq!(outs[1].status.code(), Some(0), "{}", stderr(&outs[1]));
    for rec in records(&rank_report(&out, 1), "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("rank 0 (host") && why.contains("failed"),
            "{why}"
        );
    }
}

#[test]
fn a_failed_rank_0_serves_a_rank_that_starts_late_until_it_learnt_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rdv = format!("127.0.0.1:{}", free_port());
    let started = Instant::now();
    // Rank 0 fails before measuring (a parameter no benchmark takes).
    let rank0 = Ranks::start(
        2,
        &rdv,
        &out,
        &[Rank {
            extra: &["--param", "nope=1"],
            ..Rank::new(0)
        }],
    );
    drop(connect_when_up(&rdv));
    // Rank 1 starts well after that, beats while it runs its other
    // benchmarks, and learns of the failure at its network phase.
    std::thread::sleep(Duration::from_secs(3));
    let rank1 = Ranks::start(2, &rdv, &out, &[Rank::new(1)]);
    let outs: Vec<Output> = rank0.wait().into_iter().chain(rank1.wait()).collect();
    assert!(
        started.elapsed() < Duration::from_secs(100),
        "well before --rendezvous-timeout (10m): {}\n{}",
        stderr(&outs[0]),
        stderr(&outs[1])
    );
    let err0 = stderr(&outs[0]);
    assert_eq!(outs[0].status.code(), Some(2), "{err0}");
    let kept: Vec<&str> = err0
        .lines()
        .filter(|l| l.contains("keeping the meeting point"))
        .collect();
    assert_eq!(kept.len(), 1, "one line: {err0}");
    assert!(
        kept[0]
            .contains("so that rank(s) 1 learn of this failure: while a rank's heartbeat goes on"),
        "{err0}"
    );
    let err1 = stderr(&outs[1]);
    assert_eq!(outs[1].status.code(), Some(0), "{err1}");
    assert!(!err1.contains("lost the meeting point"), "{err1}");
    let r1 = rank_report(&out, 1);
    assert_eq!(records(&r1, "os.")[0]["status"], "ok", "{r1}");
    for rec in records(&r1, "net.") {
        assert_eq!(rec["status"], "failed", "{rec}");
        let why = rec["reason"].as_str().unwrap();
        assert!(
            why.contains("rank 0 (host") && why.contains("failed"),
            "{why}"
        );
    }
}
