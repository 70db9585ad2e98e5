//! SIGTERM (CI's cancel, `timeout`, the end of a Slurm job), SIGHUP and
//! SIGINT at each phase of `reference`, `run`, `compare --interleave`,
//! `serve` and a fleet rank: the tools benchsuite started (stand-ins on
//! PATH) are gone, their scratch directories removed, the records
//! finished before the signal kept, and the exit status is 128 + the
//! signal (`serve`: 0, its clean stop). A second signal still leaves no
//! tool and no scratch behind. And `compare --interleave` stops a build
//! whose round hangs, naming it.
//!
//! Every process a test started is stopped by its PID.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod common;

/// Two rounds of short samples, no progress lines.
const QUICK: [&str; 9] = [
    "--rounds",
    "2",
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

/// A benchsuite this test started: on drop, SIGKILL by its PID if it
/// still runs, and always waited for.
struct Started(Child);

impl Started {
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    /// Waits up to `secs` for it to exit.
    fn exit_within(&mut self, secs: u64) -> ExitStatus {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(s) = self.0.try_wait().unwrap() {
                return s;
            }
            assert!(
                Instant::now() < until,
                "benchsuite {} still runs {secs} s after the signal",
                self.pid()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its stderr, once it exited.
    fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut s = String::new();
        if let Some(mut e) = self.0.stderr.take() {
            e.read_to_string(&mut s).unwrap();
        }
        s
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Sends `sig` to `pid` (one this test started).
fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) only sends a signal, to a process this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid}");
}

/// Whether `pid` is gone: no /proc entry, or a zombie (dead, left for
/// whoever reaps orphans in this PID namespace).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// A stand-in's PIDs, from the files it wrote in `dir`; each asserted
/// gone (within a second), and killed (by that PID) if it was not, so a
/// failed test leaves nothing running.
fn assert_gone(dir: &Path, names: &[&str]) {
    let mut alive = Vec::new();
    for name in names {
        let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
            continue;
        };
        let pid: i32 = text.trim().parse().unwrap();
        let until = Instant::now() + Duration::from_secs(1);
        while !gone(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !gone(pid) {
            // SAFETY: kill(2) only sends a signal, to a stand-in this test
            // made benchsuite start.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            alive.push(format!("{name} ({pid})"));
        }
    }
    assert!(alive.is_empty(), "still running: {alive:?}");
}

/// Waits up to 60 s for `file` to exist.
fn wait_for(file: &Path, started: &mut Started) {
    let until = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        if let Some(s) = started.0.try_wait().unwrap() {
            panic!(
                "benchsuite exited ({s}) before {} appeared: {}",
                file.display(),
                started.stderr()
            );
        }
        assert!(Instant::now() < until, "{} never appeared", file.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What is left in `dir` whose name starts with `prefix`.
fn left_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A stand-in sockperf in `dir`: its server (`sr`) and client each write
/// their PID (and the client that of a `sleep` it forked) and run until
/// stopped, as a hung tool would.
fn hanging_sockperf(dir: &Path) {
    script(
        &dir.join("sockperf"),
        "#!/bin/sh\nd=\"${0%/*}\"\n\
         if [ \"$1\" = --version ]; then echo 'sockperf: version 9.9'; exit 0; fi\n\
         if [ \"$1\" = sr ]; then echo $$ > \"$d/server.tmp\"; mv \"$d/server.tmp\" \"$d/server.pid\"; exec sleep 300; fi\n\
         sleep 300 &\necho $! > \"$d/forked.pid\"\n\
         echo $$ > \"$d/client.tmp\"; mv \"$d/client.tmp\" \"$d/client.pid\"\nwait\n",
    );
}

/// A stand-in sockperf in `dir` whose `--version` hangs (its PID in
/// `version.pid`), as a tool waiting on a licence server or a dead NFS
/// mount might.
fn sockperf_hanging_on_version(dir: &Path) {
    script(
        &dir.join("sockperf"),
        "#!/bin/sh\nd=\"${0%/*}\"\n\
         if [ \"$1\" = --version ]; then echo $$ > \"$d/version.tmp\"; mv \"$d/version.tmp\" \"$d/version.pid\"; exec sleep 300; fi\n\
         exit 1\n",
    );
}

/// `benchsuite reference net.latency` against the stand-in sockperf in
/// `dir` (on PATH), its scratch in `dir/tmp`, its report to `dir/ref.json`.
fn reference_net_latency(dir: &Path) -> Started {
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    Started(
        common::benchsuite(&[])
            .args(["reference", "net.latency", "--param", "cpus=any"])
            .args(QUICK)
            .arg("-o")
            .arg(dir.join("ref.json"))
            .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
            .env("TMPDIR", dir.join("tmp"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

const SIGNALS: [(libc::c_int, &str); 3] = [
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "Ctrl-C"),
];

/// Before: SIGTERM and SIGHUP killed benchsuite only: the sockperf server
/// and client (process groups of their own) were reparented to PID 1 and
/// ran on, and the tool's scratch directory stayed.
#[test]
fn reference_a_signal_stops_its_tools_removes_their_scratch_and_keeps_the_record() {
    for (sig, name) in SIGNALS {
        let dir = tempfile::tempdir().unwrap();
        hanging_sockperf(dir.path());
        let mut bs = reference_net_latency(dir.path());
        // Our first round ran; the tool's client is running (hung).
        wait_for(&dir.path().join("client.pid"), &mut bs);
        signal(bs.pid(), sig);
        let status = bs.exit_within(30);
        let err = bs.stderr();
        assert_gone(dir.path(), &["server.pid", "client.pid", "forked.pid"]);
        assert_eq!(status.code(), Some(128 + sig), "{name}: {status}: {err}");
        assert!(
            err.contains(&format!("records finished before {name}")),
            "{name}: {err}"
        );
        let left = left_in(&dir.path().join("tmp"), "benchsuite-");
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
        // The record (our round and the tool's stopped one) is kept.
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("ref.json")).unwrap())
                .unwrap();
        let rec = &v["records"][0];
        assert_eq!(rec["id"], "net.latency", "{v}");
        let note = rec["reference"]["note"].as_str().unwrap_or_default();
        assert!(note.contains("sockperf stopped: interrupted"), "{rec}");
    }
}

/// A second signal leaves at once, but not before the tools' groups are
/// stopped and their scratch removed. Here it comes while the stand-in
/// server starts (benchsuite gives it half a second before the client).
/// Before: the second signal (SIGTERM) killed benchsuite and the server ran
/// on; a second Ctrl-C left the scratch directory.
#[test]
fn reference_a_second_signal_leaves_no_tool_and_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    hanging_sockperf(dir.path());
    let mut bs = reference_net_latency(dir.path());
    wait_for(&dir.path().join("server.pid"), &mut bs);
    signal(bs.pid(), libc::SIGINT);
    signal(bs.pid(), libc::SIGTERM);
    let status = bs.exit_within(30);
    let err = bs.stderr();
    assert_gone(dir.path(), &["server.pid", "client.pid", "forked.pid"]);
    // 143: the second signal left at once; 130: the first one ended the
    // round before the second was read. Either way nothing is left.
    assert!(matches!(status.code(), Some(130 | 143)), "{status}: {err}");
    let left = left_in(&dir.path().join("tmp"), "benchsuite-");
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `run`: the record in flight finishes, the report holds what finished,
/// exit 128 + the signal. Before: SIGTERM and SIGHUP killed it (no exit
/// code, no report).
#[test]
fn run_a_signal_writes_the_finished_records_and_exits_128_plus_it() {
    for (sig, name) in SIGNALS {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        // Each record ~2 s, three of them; `-o` is rewritten after each.
        let mut bs = Started(
            common::benchsuite(&[])
                .args(["run", "os.call", "--param", "args=0,1,2"])
                .args([
                    "--runs",
                    "100",
                    "--min-sample-time",
                    "20ms",
                    "--warmup",
                    "1ms",
                ])
                .arg("--no-progress")
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        wait_for(&out, &mut bs);
        signal(bs.pid(), sig);
        let status = bs.exit_within(30);
        let err = bs.stderr();
        assert_eq!(status.code(), Some(128 + sig), "{name}: {status}: {err}");
        assert!(
            err.contains(&format!("records finished before {name}")),
            "{name}: {err}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let recs = v["records"].as_array().unwrap();
        assert!(!recs.is_empty(), "{name}: {v}");
        assert!(recs.iter().all(|r| r["status"] == "ok"), "{name}: {v}");
    }
}

/// SIGHUP from a terminal that is gone (the SSH session closed): `run`
/// writes its report and exits 129. Before: the closing summary's write to
/// the dead terminal failed with EIO and `eprintln!` panicked (exit 101).
#[test]
fn run_after_its_terminal_hung_up_still_writes_the_report_and_exits_129() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into valid out-pointers.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // The child must not inherit the master: the terminal would outlive
    // our close of it.
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: both descriptors are fresh and owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = common::benchsuite(&[])
        .args(["run", "os.call", "--param", "args=0,1,2"])
        .args([
            "--runs",
            "100",
            "--min-sample-time",
            "20ms",
            "--warmup",
            "1ms",
        ])
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut started = Instant::now();
    while !out.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no report yet");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The terminal goes away, then the hang-up.
    drop(master);
    signal(child.id() as i32, libc::SIGHUP);
    started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "still runs");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + libc::SIGHUP), "{status}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(!v["records"].as_array().unwrap().is_empty(), "{v}");
}

/// A fleet rank (rank 0 of 2, meeting in `--output-dir`) waiting for a
/// rank that never comes: a signal ends the wait, and its report holds the
/// benchmark it finished. Before: SIGTERM killed it with no report.
#[test]
fn a_fleet_rank_waiting_for_its_peer_ends_on_a_signal_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut bs = Started(
        common::benchsuite(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("TORCHELASTIC_RUN_ID", "sig"),
        ])
        .args(["run", "net.connect", "os.syscall"])
        .args(["--runs", "3", "--min-sample-time", "1ms", "--warmup", "1ms"])
        .args(["--no-progress", "--net-bind", "127.0.0.1"])
        .args(["--rendezvous-timeout", "120s", "--output-dir"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
    );
    // r0.json: rank 0 reached its network phase (os.syscall is done).
    wait_for(&out.join("sig/.rendezvous/run/r0.json"), &mut bs);
    let t = Instant::now();
    signal(bs.pid(), libc::SIGTERM);
    let status = bs.exit_within(30);
    let err = bs.stderr();
    assert_eq!(status.code(), Some(143), "{status}: {err}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let r = common::report_of_rank(&out.join("sig"), 0);
    let syscall = r["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "os.syscall")
        .unwrap_or_else(|| panic!("no os.syscall record: {r}"));
    assert_eq!(syscall["status"], "ok", "{r}");
}

/// `serve` stops cleanly (exit 0, as on Ctrl-C) on SIGTERM and SIGHUP too.
/// Before: SIGHUP killed it.
#[test]
fn serve_stops_cleanly_on_each_signal() {
    for (sig, name) in SIGNALS {
        let mut bs = Started(
            common::benchsuite(&[])
                .args(["serve", "--no-auth", "--bind", "127.0.0.1:0"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // Listening: it said so on stderr.
        let mut err = bs.0.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("clients run") {
            use std::io::Read;
            let n = err.read(&mut buf).unwrap();
            assert!(n > 0, "serve ended: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        bs.0.stderr = Some(err);
        signal(bs.pid(), sig);
        let status = bs.exit_within(15);
        let rest = bs.stderr();
        assert_eq!(status.code(), Some(0), "{name}: {status}: {rest}");
        assert!(rest.contains("benchsuite serve: stopped"), "{name}: {rest}");
    }
}

/// Stand-in builds for `compare --interleave` in `dir`: `base` copies a
/// real report (made here) to its `-o`; `hang` says something on stderr,
/// forks a `sleep` (its PID in `hang.pid`) and waits for it, forever.
fn builds(dir: &Path) -> (PathBuf, PathBuf) {
    let report = dir.join("report.json");
    let o = common::benchsuite(&[])
        .args(["run", "os.call", "--runs", "3", "--min-sample-time", "1ms"])
        .args(["--warmup", "1ms", "--no-progress", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let base = dir.join("base");
    script(
        &base,
        &format!(
            "#!/bin/sh\nfor a; do out=\"$a\"; done\ncp '{}' \"$out\"\n",
            report.display()
        ),
    );
    let hang = dir.join("hang");
    script(
        &hang,
        "#!/bin/sh\nd=\"${0%/*}\"\n\
         i=0; while [ $i -lt 2000 ]; do echo \"noise line $i of a chatty build\" >&2; i=$((i+1)); done\n\
         echo 'warning: the new build is stuck' >&2\n\
         sleep 300 &\necho $! > \"$d/hang.tmp\"; mv \"$d/hang.tmp\" \"$d/hang.pid\"\nwait\n",
    );
    (base, hang)
}

/// `compare --interleave BASE NEW` with its scratch in `dir/tmp`.
fn interleave(dir: &Path, base: &Path, new: &Path, extra: &[&str]) -> Started {
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    Started(
        common::benchsuite(&[])
            .arg("compare")
            .arg("--interleave")
            .args([base, new])
            .args(["--rounds", "3", "--interleave-dir"])
            .arg(dir)
            .args(extra)
            .args(["--", "os.call"])
            .env("TMPDIR", dir.join("tmp"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Before: no round timeout (a hung build hung `compare`) and every byte
/// of the build's stderr was kept in memory.
#[test]
fn interleave_a_hung_build_is_stopped_at_the_round_timeout_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (base, hang) = builds(dir.path());
    let t = Instant::now();
    let mut bs = interleave(dir.path(), &base, &hang, &["--round-timeout", "2"]);
    let status = bs.exit_within(60);
    let took = t.elapsed();
    let err = bs.stderr();
    assert_gone(dir.path(), &["hang.pid"]);
    assert_eq!(status.code(), Some(2), "{status}: {err}");
    let hang_s = hang.display().to_string();
    assert!(
        err.contains(&format!(
            "--interleave {hang_s}: the new build's round 1 did not finish in 2 s"
        )),
        "{err}"
    );
    assert!(err.contains("(--round-timeout)"), "{err}");
    // The end of its stderr, not the whole of it.
    assert!(err.contains("warning: the new build is stuck"), "{err}");
    assert!(!err.contains("noise line 0 "), "{err}");
    // 2 s, the round of base and the start: well under the 5 s grace more.
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(left_in(&dir.path().join("tmp"), "benchsuite-").is_empty());
    assert!(left_in(dir.path(), "interleave-").is_empty());
}

/// A signal to `compare --interleave` stops the build's round (its own
/// process group) and exits 128 + the signal, judging nothing, its scratch
/// removed. Before: the build (and its `sleep`) ran on after `kill PID`,
/// and the scratch directory stayed.
#[test]
fn interleave_a_signal_stops_the_running_build_and_removes_the_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let (base, hang) = builds(dir.path());
    for (sig, name) in SIGNALS {
        let _ = std::fs::remove_file(dir.path().join("hang.pid"));
        let mut bs = interleave(dir.path(), &base, &hang, &[]);
        wait_for(&dir.path().join("hang.pid"), &mut bs);
        signal(bs.pid(), sig);
        let status = bs.exit_within(30);
        let err = bs.stderr();
        assert_gone(dir.path(), &["hang.pid"]);
        assert_eq!(status.code(), Some(128 + sig), "{name}: {status}: {err}");
        assert!(err.contains("nothing compared"), "{name}: {err}");
        let left = left_in(&dir.path().join("tmp"), "benchsuite-");
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
        assert!(left_in(dir.path(), "interleave-").is_empty());
    }
}

/// A signal during `compare --confirm` stops the round, writes the
/// verdicts of the last look and exits 128 + the signal. Before: the exit
/// code was the screen's verdict (a CI job cancelled mid-confirmation
/// reported 0 or 1 as if judged).
#[test]
fn confirm_a_signal_writes_the_comparison_and_exits_128_plus_it() {
    let dir = tempfile::tempdir().unwrap();
    let (base, hang) = builds(dir.path());
    let report = dir.path().join("report.json");
    // The new report: os.call twice as slow, so the screen calls it
    // regressed and the confirmation measures it again.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for rec in v["records"].as_array_mut().unwrap() {
        for m in rec["metrics"].as_array_mut().unwrap() {
            for x in m["samples"].as_array_mut().unwrap() {
                *x = serde_json::Value::from(x.as_f64().unwrap() * 2.0);
            }
            let sum = m["summary"].as_object_mut().unwrap();
            for (k, x) in sum.iter_mut() {
                if k != "n" && k != "cv" {
                    if let Some(f) = x.as_f64() {
                        *x = serde_json::Value::from(f * 2.0);
                    } else if let Some(a) = x.as_array_mut() {
                        for y in a {
                            *y = serde_json::Value::from(y.as_f64().unwrap() * 2.0);
                        }
                    }
                }
            }
        }
    }
    let slow = dir.path().join("slow.json");
    std::fs::write(&slow, v.to_string()).unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    for (sig, name) in SIGNALS {
        let _ = std::fs::remove_file(dir.path().join("hang.pid"));
        let out = dir.path().join("cmp.json");
        let _ = std::fs::remove_file(&out);
        let mut bs = Started(
            common::benchsuite(&[])
                .arg("compare")
                .args([&report, &slow])
                .arg("--confirm")
                .args([&base, &hang])
                .args(["--format", "json", "-o"])
                .arg(&out)
                .args(["--", "os.call"])
                .env("TMPDIR", dir.path().join("tmp"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        wait_for(&dir.path().join("hang.pid"), &mut bs);
        signal(bs.pid(), sig);
        let status = bs.exit_within(30);
        let err = bs.stderr();
        assert_gone(dir.path(), &["hang.pid"]);
        assert_eq!(status.code(), Some(128 + sig), "{name}: {status}: {err}");
        assert!(err.contains("the confirmation stopped"), "{name}: {err}");
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert!(
            c["confirmation"]["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("interrupted")),
            "{name}: {}",
            c["confirmation"]
        );
        let left = left_in(&dir.path().join("tmp"), "benchsuite-");
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
    }
}

/// A signal while the tool's version probe hangs ends `reference` at once,
/// the probe stopped. Before: the probe ignored it and ran to its 5 s
/// timeout first.
#[test]
fn reference_a_signal_during_a_hung_version_probe_ends_it_at_once() {
    let dir = tempfile::tempdir().unwrap();
    sockperf_hanging_on_version(dir.path());
    let mut bs = reference_net_latency(dir.path());
    wait_for(&dir.path().join("version.pid"), &mut bs);
    let t = Instant::now();
    signal(bs.pid(), libc::SIGTERM);
    let status = bs.exit_within(30);
    let took = t.elapsed();
    let err = bs.stderr();
    assert_gone(dir.path(), &["version.pid"]);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}: {err}");
    // Well under the probe's 5 s timeout (the record in flight is ours,
    // a few quick samples).
    assert!(took < Duration::from_secs(3), "{took:?}: {err}");
    assert!(left_in(&dir.path().join("tmp"), "benchsuite-").is_empty());
}

/// `check --measure` stopped by a signal while it waits to measure again:
/// exit 128 + the signal at once, no verdict, its scratch directory gone.
/// Before: SIGTERM killed it with its measurements left in TMPDIR.
#[test]
fn check_measure_a_signal_while_waiting_exits_128_plus_it_leaving_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let run_args = [
        "os.syscall",
        "--quick",
        "--min-sample-time",
        "2ms",
        "--warmup",
        "1ms",
    ];
    let report = dir.path().join("r.json");
    let o = common::benchsuite(&[])
        .arg("run")
        .args(run_args)
        .args(["--no-progress", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A band nothing meets, so the check measures again after --wait.
    let base = dir.path().join("b.toml");
    let o = common::benchsuite(&[])
        .args(["baseline", "-o"])
        .arg(&base)
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&base).unwrap();
    let at = text.find("max = \"").unwrap() + "max = \"".len();
    let end = at + text[at..].find('"').unwrap();
    let mut impossible = text.clone();
    impossible.replace_range(at..end, "1 ns");
    std::fs::write(&base, impossible).unwrap();
    for (sig, name) in SIGNALS {
        let mut bs = Started(
            common::benchsuite(&[])
                .args(["check", "--baseline"])
                .arg(&base)
                .args(["--measure", "--wait", "60s", "--"])
                .args(run_args)
                .env("TMPDIR", &tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // The first measurement is in its scratch directory: the check now
        // judges it and waits.
        let until = Instant::now() + Duration::from_secs(60);
        while !left_in(&tmp, "benchsuite-check")
            .iter()
            .any(|d| d.join("m0.json").exists())
        {
            assert!(Instant::now() < until, "{name}: no first measurement");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        signal(bs.pid(), sig);
        let status = bs.exit_within(30);
        let err = bs.stderr();
        assert_eq!(status.code(), Some(128 + sig), "{name}: {status}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{name}: {:?}",
            t.elapsed()
        );
        assert!(err.contains("no verdict"), "{name}: {err}");
        let left = left_in(&tmp, "benchsuite-");
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
    }
}

/// `--round-timeout` names itself when it is not a positive duration or
/// has no rounds to limit.
#[test]
fn round_timeout_errors_name_the_flag() {
    for (args, needle) in [
        (
            &["compare", "--interleave", "a", "b", "--round-timeout", "0"][..],
            "--round-timeout",
        ),
        (
            &[
                "compare",
                "--interleave",
                "a",
                "b",
                "--round-timeout",
                "soon",
            ][..],
            "--round-timeout",
        ),
        (
            &["compare", "x.json", "y.json", "--round-timeout", "5"][..],
            "--round-timeout 5 s: limits the rounds of --interleave or --confirm",
        ),
    ] {
        let o = common::benchsuite(&[]).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
