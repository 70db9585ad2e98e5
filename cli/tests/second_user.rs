//! Another user of the machine (uid 65534 through `setpriv`, when the
//! tests run as root) against what benchsuite opens to this machine
//! (issue 37, deliverable 7): a `serve` with a token, the in-process
//! server of `run net`, and a secret published in a rendezvous directory.
//! None of them is of use to that user.

mod common;

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use benchsuite_core::testing::{Capability, skip};

/// The binary, copied where uid 65534 can run it.
fn shared_binary(dir: &Path) -> PathBuf {
    let exe = dir.join("benchsuite");
    std::fs::copy(env!("CARGO_BIN_EXE_benchsuite"), &exe).unwrap();
    exe
}

/// `program` to be run as uid/gid 65534 without supplementary groups.
fn nobody(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program);
    for v in common::LAUNCHER_VARS {
        c.env_remove(v);
    }
    c
}

/// `args` of the benchsuite at `exe`, run as uid 65534.
fn as_nobody(exe: &Path, args: &[&str]) -> Output {
    nobody(exe).args(args).output().unwrap()
}

/// A strict one-record `run net.latency` against `peer`, as JSON, with
/// `extra` arguments.
fn measure_args<'a>(peer: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "net.latency",
        "--runs",
        "2",
        "--strict",
        "--format",
        "json",
        "--peer",
        peer,
    ];
    a.extend(extra);
    a
}

/// Whether this test can act as a second user; says why not.
fn second_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !root || !setpriv {
        skip(
            Capability::SecondUser,
            "another user against serve, the in-process server and the rendezvous directory: needs root and setpriv (util-linux)",
        );
    }
    root && setpriv
}

/// A `run --strict --format json` whose one record the server refused,
/// its reason holding `why`.
fn refused(o: &Output, why: &str) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "another user measured: {e}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{e}"));
    let rec = &v["records"][0];
    assert_eq!(rec["status"], "failed", "{rec}");
    let reason = rec["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(why), "{reason}");
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn private_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

#[test]
fn another_user_cannot_use_a_serve_without_its_token() {
    if !second_user() {
        return;
    }
    let dir = private_dir();
    let exe = shared_binary(dir.path());
    let token = dir.path().join("token");
    std::fs::write(&token, "a-token-of-at-least-16-characters\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut c = common::benchsuite(&[]);
    c.args(["serve", "--bind", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .stderr(Stdio::piped());
    let mut server = Killed(c.spawn().unwrap());
    let mut lines = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let addr = lines
        .next()
        .unwrap()
        .unwrap()
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split(' ').next().map(str::to_string))
        .expect("serve says where it listens");
    std::thread::spawn(move || for _ in lines {});
    let run = measure_args(&addr, &[]);

    // Without the token: refused by the server.
    let o = as_nobody(&exe, &run);
    refused(&o, "requires a token");
    // The token file is the owner's only.
    let mut with_file = run.to_vec();
    let t = token.display().to_string();
    with_file.extend(["--token-file", &t]);
    let o = as_nobody(&exe, &with_file);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("Permission denied") && e.contains("token"),
        "{e}"
    );
    // The owner, with it, measures.
    let o = common::benchsuite(&[]).args(&with_file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The TCP ports process `pid` listens on (from /proc: its socket inodes
/// matched with /proc/net/tcp's listening sockets).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    l.strip_prefix("socket:[")
                        .and_then(|r| r.strip_suffix(']'))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address, state 0A = LISTEN, inode.
            (f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]))
                .then(|| u16::from_str_radix(f[1].rsplit(':').next()?, 16).ok())
                .flatten()
        })
        .collect()
}

#[test]
fn another_user_cannot_use_the_in_process_server() {
    if !second_user() {
        return;
    }
    let dir = private_dir();
    let exe = shared_binary(dir.path());
    // A run whose in-process server stays up for a while.
    let mut c = common::benchsuite(&[]);
    c.args([
        "run",
        "net.tcp_throughput",
        "--duration",
        "20s",
        "--format",
        "json",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let owner = Killed(c.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let port = loop {
        if let Some(p) = listening_ports(owner.0.id()).first() {
            break *p;
        }
        assert!(
            Instant::now() < deadline,
            "the run's in-process server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let peer = format!("127.0.0.1:{port}");
    let run = |extra: &[&str]| as_nobody(&exe, &measure_args(&peer, extra));
    refused(&run(&[]), "requires a token");
    // Nor with a token of its own.
    let tok = dir.path().join("guess");
    std::fs::write(&tok, "a-guessed-token-of-32-characters\n").unwrap();
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o644)).unwrap();
    let t = tok.display().to_string();
    refused(&run(&["--token-file", &t]), "refused");
}

#[test]
fn a_secret_in_a_rendezvous_directory_is_the_owners_only() {
    use benchsuite_fleet::rendezvous::{DirStore, Put, Store as _};
    if !second_user() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A shared directory anyone may list and write (as /tmp is).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let store = DirStore::create(dir.path().to_path_buf()).unwrap();
    store
        .put("token-r1", "a-secret-of-32-characters-long!!", Put::Secret)
        .unwrap();
    store.put("addr-r1", "10.0.0.1:5301", Put::Durable).unwrap();
    let cat = |name: &str| nobody("cat").arg(dir.path().join(name)).output().unwrap();
    let o = cat("token-r1");
    assert!(!o.status.success() && o.stdout.is_empty(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
        "{o:?}"
    );
    // What is not secret may be read: the addresses of the ranks.
    assert_eq!(cat("addr-r1").stdout, b"10.0.0.1:5301");
    // Another user's link planted in the sticky directory is not followed.
    let o = nobody("ln")
        .args(["-s", "/etc/shadow"])
        .arg(dir.path().join("planted"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let e = store.get("planted").unwrap_err().to_string();
    assert!(e.contains("planted"), "{e}");
}
