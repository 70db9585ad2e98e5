//! Every output flag against every kind of target (issue 37, deliverable
//! 1), as this user and, when the tests run as root, as an unprivileged
//! one (uid 65534 through `setpriv`): a regular file is replaced (its mode
//! kept), a character device and a FIFO are written in place, a socket and
//! a dangling link are refused naming the flag and the path, a read-only
//! directory refuses an unprivileged writer, a 255-byte name is written;
//! a refused write leaves the directory as it was.

mod common;

use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use benchsuite_core::testing::{Capability, skip};
use serde_json::{Value, json};

/// Who runs the binary.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Me,
    /// uid/gid 65534 with no supplementary groups.
    Nobody,
}

/// The binary, copied where every user can run it (the build directory
/// may sit under a private home).
struct Bin(PathBuf);

impl Bin {
    fn command(&self, who: Who, args: &[String]) -> Command {
        let mut c = match who {
            Who::Me => Command::new(&self.0),
            Who::Nobody => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                    .arg(&self.0);
                c
            }
        };
        for v in common::LAUNCHER_VARS {
            c.env_remove(v);
        }
        c.args(args);
        c
    }

    fn run(&self, who: Who, args: &[String]) -> Output {
        self.command(who, args).output().unwrap()
    }
}

fn null_dev() -> PathBuf {
    PathBuf::from("/dev/null")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o666) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

fn chown(path: &Path, uid: u32) {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::lchown(c.as_ptr(), uid, uid) };
    assert_eq!(rc, 0, "lchown: {}", std::io::Error::last_os_error());
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A command that writes one file, and the flag that names it.
struct Writer {
    name: &'static str,
    flag: &'static str,
    /// Refuses any existing target (`baseline`: `--merge` rebuilds one).
    keeps_existing: bool,
    args: ArgsOf,
}

/// A writer's command line for a target path.
type ArgsOf = Box<dyn Fn(&str) -> Vec<String>>;

/// Every command that writes a file, each with inputs in `inputs`.
fn writers(inputs: &Path) -> Vec<Writer> {
    let base = inputs.join("base.json").display().to_string();
    let hist = inputs.join("hist").display().to_string();
    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }
    let (b1, b2, b3, b4, b5, h) = (
        base.clone(),
        base.clone(),
        base.clone(),
        base.clone(),
        base.clone(),
        hist,
    );
    vec![
        Writer {
            name: "run",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(|t| {
                s(&[
                    "run", "os.timer", "--runs", "2", "--format", "json", "-o", t,
                ])
            }),
        },
        Writer {
            name: "compare",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(move |t| {
                s(&[
                    "compare",
                    &b1,
                    &b1,
                    "--between-run-cv",
                    "0%",
                    "--threshold",
                    "50%",
                    "--format",
                    "json",
                    "-o",
                    t,
                ])
            }),
        },
        Writer {
            name: "convert",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(move |t| s(&["convert", &b2, "--format", "csv", "-o", t])),
        },
        Writer {
            name: "report",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(move |t| s(&["report", &b3, "-o", t])),
        },
        Writer {
            name: "merge",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(move |t| s(&["merge", &b4, "-o", t])),
        },
        Writer {
            name: "baseline",
            flag: "-o",
            keeps_existing: true,
            args: Box::new(move |t| s(&["baseline", &b5, "-o", t])),
        },
        Writer {
            name: "history",
            flag: "-o",
            keeps_existing: false,
            args: Box::new(move |t| s(&["history", &h, "--format", "json", "-o", t])),
        },
    ]
}

/// The inputs every writer reads: a quick report and a history of six.
fn inputs(bin: &Bin, dir: &Path) {
    let base = dir.join("base.json");
    let o = bin.run(
        Who::Me,
        &[
            "run".into(),
            "os.timer".into(),
            "--runs".into(),
            "3".into(),
            "--format".into(),
            "json".into(),
            "-o".into(),
            base.display().to_string(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let hist = dir.join("hist");
    std::fs::create_dir(&hist).unwrap();
    for i in 0..6 {
        let mut r = r.clone();
        r["started_at"] = json!(format!("2026-11-{:02}T03:00:00Z", i + 1));
        std::fs::write(hist.join(format!("r{i}.json")), r.to_string()).unwrap();
    }
}

fn check_file_targets(bin: &Bin, who: Who, root: &Path) {
    let inputs_dir = root.join("in");
    let writers = writers(&inputs_dir);
    let uid = if who == Who::Nobody { 65534 } else { 0 };
    for w in &writers {
        let what = format!("{} {} as {who:?}", w.name, w.flag);
        let dir = root.join(format!("{}-{who:?}", w.name));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let run = |t: &Path| bin.run(who, &(w.args)(&t.display().to_string()));
        let err = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

        // A regular file: replaced, its mode kept.
        let file = dir.join("out.txt");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        if who == Who::Nobody {
            chown(&file, uid);
        }
        let o = run(&file);
        if w.keeps_existing {
            // Refused, naming the way to rebuild it; nothing touched.
            let e = err(&o);
            assert_eq!(o.status.code(), Some(2), "{what}, a file: {e}");
            assert!(
                e.contains("--merge") && e.contains("out.txt"),
                "{what}: {e}"
            );
            assert_eq!(std::fs::read(&file).unwrap(), b"old", "{what}");
            std::fs::remove_file(&file).unwrap();
            let o = run(&file);
            assert_eq!(o.status.code(), Some(0), "{what}, new: {}", err(&o));
            let o = run(&null_dev());
            assert!(!o.status.success(), "{what}");
            assert!(
                std::fs::symlink_metadata(null_dev())
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
            let fifo = dir.join("out.fifo");
            mkfifo(&fifo);
            let o = run(&fifo);
            assert_eq!(o.status.code(), Some(2), "{what}, a FIFO: {}", err(&o));
            assert!(
                std::fs::symlink_metadata(&fifo)
                    .unwrap()
                    .file_type()
                    .is_fifo()
            );
            std::fs::remove_file(&fifo).unwrap();
        } else {
            assert_eq!(o.status.code(), Some(0), "{what}, a file: {}", err(&o));
            let m = std::fs::symlink_metadata(&file).unwrap();
            assert!(m.file_type().is_file(), "{what}");
            assert_eq!(m.mode() & 0o777, 0o640, "{what}: the mode was not kept");
            assert_ne!(std::fs::read(&file).unwrap(), b"old", "{what}");

            // A character device: written in place, still the device.
            let null = null_dev();
            let null = null.as_path();
            let before = std::fs::metadata(null).unwrap();
            let o = run(null);
            assert_eq!(o.status.code(), Some(0), "{what}, /dev/null: {}", err(&o));
            let after = std::fs::symlink_metadata(null).unwrap();
            assert!(
                after.file_type().is_char_device(),
                "{what} replaced /dev/null"
            );
            assert_eq!(after.rdev(), before.rdev(), "{what}");

            // A FIFO: its reader gets the bytes, it stays a FIFO.
            let fifo = dir.join("out.fifo");
            mkfifo(&fifo);
            if who == Who::Nobody {
                chown(&fifo, uid);
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let reader = fifo.clone();
            std::thread::spawn(move || {
                let _ = tx.send(std::fs::read(&reader).unwrap_or_default());
            });
            let o = run(&fifo);
            assert_eq!(o.status.code(), Some(0), "{what}, a FIFO: {}", err(&o));
            assert!(
                std::fs::symlink_metadata(&fifo)
                    .unwrap()
                    .file_type()
                    .is_fifo(),
                "{what} replaced a FIFO"
            );
            let got = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the FIFO's reader");
            assert!(!got.is_empty(), "{what}: the FIFO's reader got nothing");
            std::fs::remove_file(&fifo).unwrap();
        }

        // What is refused, naming the flag and the path, and leaving the
        // directory as it was: a socket, a dangling link.
        let sock = dir.join("out.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let dangling = dir.join("out.link");
        std::os::unix::fs::symlink(dir.join("nowhere/x.json"), &dangling).unwrap();
        for t in [&sock, &dangling] {
            let before = listing(&dir);
            let o = run(t);
            let e = err(&o);
            assert_eq!(o.status.code(), Some(2), "{what}, {}: {e}", t.display());
            assert!(
                e.contains(w.flag) && e.contains(&*t.file_name().unwrap().to_string_lossy()),
                "{what}: the error names neither the flag nor {}: {e}",
                t.display()
            );
            assert_eq!(listing(&dir), before, "{what}: left behind");
        }
        assert!(
            std::fs::symlink_metadata(&sock)
                .unwrap()
                .file_type()
                .is_socket()
        );
        assert!(!dir.join("nowhere").exists(), "{what}");
        std::fs::remove_file(&sock).unwrap();
        std::fs::remove_file(&dangling).unwrap();

        // A read-only directory: refused for an unprivileged writer (root
        // may write there, as the kernel lets it).
        let ro = dir.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let o = run(&ro.join("out.json"));
        if who == Who::Nobody || !is_root() {
            let e = err(&o);
            assert_eq!(o.status.code(), Some(2), "{what}, a read-only dir: {e}");
            assert!(
                e.contains(w.flag) && e.contains("ro/out.json"),
                "{what}: {e}"
            );
            assert!(listing(&ro).is_empty(), "{what}: left {:?}", listing(&ro));
        } else {
            assert_eq!(o.status.code(), Some(0), "{what}: {}", err(&o));
        }

        // A 255-byte name.
        let long = dir.join("x".repeat(250) + ".json");
        let o = run(&long);
        assert_eq!(o.status.code(), Some(0), "{what}, 255 bytes: {}", err(&o));
        assert!(long.is_file(), "{what}");
    }
}

/// The directory flags: a missing directory is made, a file or a dangling
/// link in its place and (unprivileged) a read-only parent are refused
/// naming the flag, and nothing is left behind.
fn check_dir_targets(bin: &Bin, who: Who, root: &Path) {
    type Args = fn(&str) -> Vec<String>;
    let dirs: [(&str, &str, Args); 2] = [
        ("man", "--out-dir", |d| {
            vec!["man".into(), "--out-dir".into(), d.into()]
        }),
        ("run", "--output-dir", |d| {
            ["run", "os.timer", "--runs", "2", "--output-dir", d]
                .iter()
                .map(|s| s.to_string())
                .collect()
        }),
    ];
    for (name, flag, args) in dirs {
        let what = format!("{name} {flag} as {who:?}");
        let dir = root.join(format!("{name}-dir-{who:?}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let run = |t: &Path| bin.run(who, &args(&t.display().to_string()));

        let made = dir.join("made");
        let o = run(&made);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(made.is_dir() && !listing(&made).is_empty(), "{what}");

        let file = dir.join("a-file");
        std::fs::write(&file, "keep").unwrap();
        let dangling = dir.join("a-link");
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        let ro = dir.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let mut refused = vec![file.clone(), dangling.clone()];
        if who == Who::Nobody || !is_root() {
            refused.push(ro.join("sub"));
        }
        for t in &refused {
            let before = listing(&dir);
            let o = run(t);
            let e = String::from_utf8_lossy(&o.stderr);
            assert_ne!(o.status.code(), Some(0), "{what}, {}: {e}", t.display());
            assert!(
                e.contains(&*t.file_name().unwrap().to_string_lossy()),
                "{what}: the error does not name {}: {e}",
                t.display()
            );
            assert_eq!(listing(&dir), before, "{what}: left behind");
            assert!(listing(&ro).is_empty(), "{what}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"keep", "{what}");
        assert!(!dir.join("nowhere").exists(), "{what}: followed the link");
    }
}

#[test]
fn every_output_flag_against_every_kind_of_target() {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = root.path().join("benchsuite");
    std::fs::copy(env!("CARGO_BIN_EXE_benchsuite"), &exe).unwrap();
    let bin = Bin(exe);
    let inputs_dir = root.path().join("in");
    std::fs::create_dir(&inputs_dir).unwrap();
    inputs(&bin, &inputs_dir);
    check_file_targets(&bin, Who::Me, root.path());
    check_dir_targets(&bin, Who::Me, root.path());

    let setpriv = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !is_root() || !setpriv {
        skip(
            Capability::SecondUser,
            "the targets as an unprivileged user: needs root and setpriv (util-linux) to run the binary as uid 65534",
        );
        return;
    }
    check_file_targets(&bin, Who::Nobody, root.path());
    check_dir_targets(&bin, Who::Nobody, root.path());
}
