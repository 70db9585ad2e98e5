//! `dir` naming an existing file or block device: tested in place, as
//! fio's `--filename` does. Reading needs no flag and writes nothing; any
//! point that writes is refused before the run starts unless
//! `--allow-overwrite` is given, and then stays inside its region and never
//! truncates, extends or deletes the target.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use benchsuite_core::{Record, RunConfig, Status};
use benchsuite_disk::ALLOW_OVERWRITE_OPTION;
use common::{config, entries, run, scratch};

const MIB: usize = 1 << 20;

/// Deterministic, incompressible bytes (xorshift64*).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// An 8 MiB file of noise in a fresh scratch directory: twice the smoke
/// `size`, so one thread's region is its first half.
fn victim() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = scratch();
    let path = dir.path().join("target.dat");
    let data = noise(8 * MIB, 42);
    std::fs::write(&path, &data).unwrap();
    (dir, path, data)
}

fn on(path: &Path, scratch: &Path, sweep: &[(&str, &str)], allow: bool) -> RunConfig {
    let mut all = vec![("dir", path.to_str().unwrap())];
    all.extend_from_slice(sweep);
    let mut cfg = config(scratch, &all);
    if allow {
        cfg.options
            .insert(ALLOW_OVERWRITE_OPTION.into(), "true".into());
    }
    cfg
}

fn ok(r: &Record) {
    assert_eq!(
        r.status,
        Status::Ok,
        "{} {}: {}",
        r.id,
        r.params.label(),
        r.reason.as_deref().unwrap_or("")
    );
    for m in &r.metrics {
        assert!(
            m.summary.median.is_finite() && m.summary.median > 0.0,
            "{}",
            m.name
        );
    }
}

fn note<'r>(r: &'r Record, start: &str) -> &'r str {
    r.notes
        .iter()
        .find(|n| n.starts_with(start))
        .unwrap_or_else(|| panic!("no note starting {start:?}: {:?}", r.notes))
}

#[test]
fn writing_to_an_existing_file_is_refused_before_the_run_without_the_flag() {
    let (dir, path, data) = victim();
    for sweep in [
        &[("op", "randwrite")][..],
        &[("op", "write")],
        &[("op", "randrw")],
        &[("op", "read"), ("verify", "on")],
        &[("op", "read,randwrite")],
    ] {
        let e = run(&on(&path, dir.path(), sweep, false))
            .expect_err("the plan must be refused")
            .to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(
            e.contains("`dir`")
                && e.contains("--allow-overwrite")
                && e.contains(path.to_str().unwrap())
                && e.contains("an existing file"),
            "{sweep:?}: {e}"
        );
    }
    assert!(
        std::fs::read(&path).unwrap() == data,
        "not one byte changed"
    );
    assert_eq!(entries(dir.path()), ["target.dat"]);
}

#[test]
fn with_the_flag_an_existing_file_is_overwritten_in_its_region_only() {
    let (dir, path, data) = victim();
    for (sweep, what) in [
        (
            &[("op", "randwrite")][..],
            "op=randwrite wrote random blocks",
        ),
        (&[("op", "write"), ("engine", "sync")], "op=write wrote it"),
        (
            &[("op", "randrw"), ("verify", "on")],
            "verify=on first wrote",
        ),
    ] {
        std::fs::write(&path, &data).unwrap();
        let report = run(&on(&path, dir.path(), sweep, true)).unwrap();
        let r = &report.records[0];
        ok(r);
        let n = note(r, "tested ");
        assert!(
            n.contains(&format!(
                "tested {} in place (existing file",
                path.display()
            )) && n.contains(&format!("{} bytes", 8 * MIB))
                && n.contains(&format!("overwritten in [0, {})", 4 * MIB))
                && n.contains(what),
            "{sweep:?}: {n}"
        );
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after.len(), data.len(), "{sweep:?}: same length");
        assert!(
            after[4 * MIB..] == data[4 * MIB..],
            "{sweep:?}: nothing written past the region"
        );
        assert!(
            after[..4 * MIB] != data[..4 * MIB],
            "{sweep:?}: the region was written"
        );
    }
    assert_eq!(entries(dir.path()), ["target.dat"]);
}

#[test]
fn threads_get_disjoint_regions_or_a_clear_refusal() {
    let (dir, path, data) = victim();
    let report = run(&on(
        &path,
        dir.path(),
        &[
            ("op", "randrw"),
            ("threads", "2"),
            ("size", "2M"),
            ("verify", "on"),
            ("engine", "sync,io_uring"),
        ],
        true,
    ))
    .unwrap();
    // verify=on checks every read and reads every written block back at
    // teardown: a thread straying out of its region fails the check.
    assert_eq!(report.records.len(), 2);
    let r = &report.records[1];
    ok(&report.records[0]);
    ok(r);
    let n = note(r, "tested ");
    assert!(
        n.contains(&format!("overwritten in [0, {})", 4 * MIB)) && n.contains("2 disjoint regions"),
        "{n}"
    );
    let after = std::fs::read(&path).unwrap();
    assert!(after[4 * MIB..] == data[4 * MIB..]);

    // Three regions of 4 MiB do not fit in 8 MiB: refused, naming threads.
    let e = run(&on(
        &path,
        dir.path(),
        &[("op", "randread"), ("threads", "3")],
        false,
    ))
    .expect_err("three 4 MiB regions do not fit")
    .to_string();
    assert!(
        e.contains("`threads`") && e.contains("disjoint") && e.contains("lower size to at most"),
        "{e}"
    );
}

#[test]
fn reading_an_existing_file_needs_no_flag_and_writes_nothing() {
    let (dir, path, data) = victim();
    let report = run(&on(
        &path,
        dir.path(),
        &[("op", "read,randread"), ("engine", "io_uring,sync")],
        false,
    ))
    .unwrap();
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        ok(r);
        let n = note(r, "tested ");
        assert!(
            n.contains("read-only") && n.contains("wrote nothing"),
            "{n}"
        );
        assert!(
            !r.warnings.iter().any(|w| w.contains("sparse")),
            "{:?}",
            r.warnings
        );
    }
    assert!(std::fs::read(&path).unwrap() == data);
    assert_eq!(entries(dir.path()), ["target.dat"]);

    // Larger than the file: the region is capped by the file's length, and
    // the record's size says what ran.
    let report = run(&on(&path, dir.path(), &[("size", "64M")], false)).unwrap();
    let r = &report.records[0];
    ok(r);
    assert_eq!(
        r.params.get("size").and_then(|v| v.as_u64()),
        Some(8 * MIB as u64)
    );
    assert!(note(r, "tested ").contains("capped"), "{:?}", r.notes);
}

#[test]
fn a_sparse_file_is_read_with_a_warning() {
    let dir = scratch();
    let path = dir.path().join("holes.dat");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(8 * MIB as u64).unwrap();
    drop(f);
    let report = run(&on(&path, dir.path(), &[("op", "randread")], false)).unwrap();
    let r = &report.records[0];
    ok(r);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("sparse") && w.contains("zeros")),
        "{:?}",
        r.warnings
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 8 * MIB as u64);
}

#[test]
fn a_target_shorter_than_one_block_is_refused() {
    let dir = scratch();
    let path = dir.path().join("tiny.dat");
    std::fs::write(&path, b"keep me").unwrap();
    let e = run(&on(&path, dir.path(), &[("op", "read")], false))
        .expect_err("7 bytes hold no 1 MiB block")
        .to_string();
    assert!(
        e.contains("`dir`") && e.contains("shorter than one block"),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
}

/// A loop device over a file in a temp dir, detached on drop.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn attach(file: &Path) -> Result<Loop, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("loop devices need root".into());
        }
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(file)
            .output()
            .map_err(|e| format!("cannot run losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // Attached from here on: the guard detaches it whatever follows.
        let lo = Loop {
            dev: PathBuf::from(&name),
        };
        if !name.starts_with("/dev/loop") {
            return Err(format!("losetup printed {name:?}"));
        }
        Ok(lo)
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

#[test]
fn a_block_device_is_tested_in_place() {
    let (dir, path, data) = victim();
    let lo = match Loop::attach(&path) {
        Ok(l) => l,
        Err(reason) => {
            eprintln!("skipping the block device case: {reason}");
            return;
        }
    };
    let dev = lo.dev.clone();

    let report = run(&on(&dev, dir.path(), &[("op", "randread")], false)).unwrap();
    let r = &report.records[0];
    ok(r);
    let n = note(r, "tested ");
    assert!(
        n.contains("(block device, ") && n.contains("read-only"),
        "{n}"
    );

    let e = run(&on(&dev, dir.path(), &[("op", "randwrite")], false))
        .expect_err("writing needs the flag")
        .to_string();
    assert!(
        e.contains("`dir`") && e.contains("a block device") && e.contains("--allow-overwrite"),
        "{e}"
    );

    // Another exclusive holder (as a mount would be): refused, unwritten.
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _held = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&dev)
            .unwrap();
        let report = run(&on(&dev, dir.path(), &[("op", "randwrite")], true)).unwrap();
        let r = &report.records[0];
        assert_eq!(r.status, Status::Failed, "{r:?}");
        assert!(
            r.reason.as_deref().unwrap().contains("EBUSY"),
            "{:?}",
            r.reason
        );
    }
    drop(lo);
    assert!(std::fs::read(&path).unwrap() == data, "nothing written yet");

    let lo = Loop::attach(&path).unwrap();
    let report = run(&on(&lo.dev, dir.path(), &[("op", "randwrite")], true)).unwrap();
    let r = &report.records[0];
    ok(r);
    let n = note(r, "tested ");
    assert!(
        n.contains(&format!("(block device, {} bytes)", 8 * MIB))
            && n.contains(&format!("overwritten in [0, {})", 4 * MIB)),
        "{n}"
    );
    drop(lo);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after.len(), data.len());
    assert!(after[4 * MIB..] == data[4 * MIB..]);
    assert!(after[..4 * MIB] != data[..4 * MIB]);
}
