//! `dir` naming an existing file or block device: tested in place, as
//! fio's `--filename` does. Reading needs no flag and writes nothing; any
//! point that writes is refused before the run starts unless
//! `--allow-overwrite` names that target, and then stays inside its region
//! and never truncates, extends or deletes the target. What the path named
//! when the run was planned is what the run opens: a path swapped since
//! (for a symbolic link, another file, a device) is refused and nothing is
//! written.

mod common;

use std::path::{Path, PathBuf};

use benchsuite_core::testing::{Capability, skip};
use benchsuite_core::{Record, RunConfig, Status};
use benchsuite_disk::ALLOW_OVERWRITE_OPTION;
use common::{Loop, config, entries, run, scratch};

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

/// `dir=path` with `sweep`; `allow` gives `--allow-overwrite=path`.
fn on(path: &Path, scratch: &Path, sweep: &[(&str, &str)], allow: bool) -> RunConfig {
    let cfg = dirs(path.to_str().unwrap(), scratch, sweep);
    if allow {
        allowing(cfg, path.to_str().unwrap())
    } else {
        cfg
    }
}

/// `dir=list` (comma-separated) with `sweep`.
fn dirs(list: &str, scratch: &Path, sweep: &[(&str, &str)]) -> RunConfig {
    let mut all = vec![("dir", list)];
    all.extend_from_slice(sweep);
    config(scratch, &all)
}

/// `cfg` with `--allow-overwrite=value`.
fn allowing(cfg: RunConfig, value: &str) -> RunConfig {
    cfg.to_builder()
        .option(ALLOW_OVERWRITE_OPTION, value)
        .build()
        .unwrap()
}

/// Plans `cfg`, runs `between`, then runs the plan: the window in which
/// a path may be swapped after it was checked.
fn plan_then_run(cfg: &RunConfig, between: impl FnOnce()) -> benchsuite_core::Report {
    let registry = common::harness().registry();
    let plan = benchsuite_core::plan::plan(&registry, cfg).expect("the plan is accepted");
    between();
    benchsuite_core::runner::run_plan(&plan, cfg, &mut benchsuite_core::runner::Silent)
}

fn failed_with<'r>(r: &'r Record, words: &[&str]) -> &'r str {
    assert_eq!(r.status, Status::Failed, "{r:?}");
    let reason = r.reason.as_deref().unwrap_or_default();
    for w in words {
        assert!(reason.contains(w), "{w:?} not in {reason:?}");
    }
    reason
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
            !r.warnings.iter().any(|w| w.to_string().contains("sparse")),
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
        r.warnings.iter().any(|w| {
            let w = w.to_string();
            w.contains("sparse") && w.contains("zeros")
        }),
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

/// Two 8 MiB noise files, `a.dat` and `b.dat`, in one scratch directory.
fn two_victims() -> (tempfile::TempDir, [(PathBuf, Vec<u8>); 2]) {
    let dir = scratch();
    let make = |name: &str, seed: u64| {
        let path = dir.path().join(name);
        let data = noise(8 * MIB, seed);
        std::fs::write(&path, &data).unwrap();
        (path, data)
    };
    let pair = [make("a.dat", 1), make("b.dat", 2)];
    (dir, pair)
}

fn unchanged(path: &Path, data: &[u8]) {
    assert!(
        std::fs::read(path).unwrap() == data,
        "{} was written",
        path.display()
    );
}

fn written(path: &Path, data: &[u8]) {
    let after = std::fs::read(path).unwrap();
    assert_eq!(after.len(), data.len());
    assert!(after[..4 * MIB] != data[..4 * MIB], "{}", path.display());
    assert!(after[4 * MIB..] == data[4 * MIB..], "{}", path.display());
}

#[test]
fn allow_overwrite_authorises_only_the_targets_it_names() {
    let (dir, [(a, a_data), (b, b_data)]) = two_victims();
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());

    // Naming A does not authorise B.
    let e = run(&allowing(
        on(&b, dir.path(), &[("op", "randwrite")], false),
        a_s,
    ))
    .expect_err("A's authorisation is not B's")
    .to_string();
    assert!(
        e.contains("`dir`")
            && e.contains(b_s)
            && e.contains(&format!("--allow-overwrite={a_s} does not name it"))
            && e.contains(&format!("--allow-overwrite={a_s},{b_s}"))
            && !e.contains('\n'),
        "{e}"
    );

    // A sweep over both with only A named: the plan is refused before
    // anything runs, so A is not written either.
    let both = format!("{a_s},{b_s}");
    let e = run(&allowing(
        dirs(&both, dir.path(), &[("op", "randwrite")]),
        a_s,
    ))
    .expect_err("B is not named")
    .to_string();
    assert!(e.contains(b_s) && e.contains("--allow-overwrite"), "{e}");
    unchanged(&a, &a_data);
    unchanged(&b, &b_data);

    // Both named: both written, each in its region only.
    let report = run(&allowing(
        dirs(&both, dir.path(), &[("op", "randwrite")]),
        &both,
    ))
    .unwrap();
    assert_eq!(report.records.len(), 2);
    report.records.iter().for_each(ok);
    written(&a, &a_data);
    written(&b, &b_data);

    // A name is matched by what it names: a symbolic link to B authorises B.
    std::fs::write(&b, &b_data).unwrap();
    let link = dir.path().join("b-link");
    std::os::unix::fs::symlink(&b, &link).unwrap();
    let report = run(&allowing(
        on(&b, dir.path(), &[("op", "randwrite")], false),
        link.to_str().unwrap(),
    ))
    .unwrap();
    ok(&report.records[0]);
    written(&b, &b_data);
    let mut left = entries(dir.path());
    left.sort();
    assert_eq!(left, ["a.dat", "b-link", "b.dat"]);
}

#[test]
fn the_bare_flag_authorises_a_single_target() {
    let (dir, [(a, a_data), (b, b_data)]) = two_victims();
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    for bare in ["on", "true"] {
        let both = format!("{a_s},{b_s}");
        let e = run(&allowing(
            dirs(&both, dir.path(), &[("op", "randwrite")]),
            bare,
        ))
        .expect_err("two targets need naming")
        .to_string();
        assert!(
            e.contains("the bare --allow-overwrite authorises a single target")
                && e.contains(&format!("--allow-overwrite={a_s},{b_s}"))
                && e.contains("nothing was written"),
            "{e}"
        );
        unchanged(&a, &a_data);
        unchanged(&b, &b_data);
    }
    // One target, even named twice (by its path and through a symbolic
    // link): authorised.
    let link = dir.path().join("a-link");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let report = run(&allowing(
        dirs(
            &format!("{a_s},{}", link.display()),
            dir.path(),
            &[("op", "randwrite")],
        ),
        "on",
    ))
    .unwrap();
    assert_eq!(report.records.len(), 2);
    report.records.iter().for_each(ok);
    written(&a, &a_data);
    unchanged(&b, &b_data);
}

#[test]
fn an_allow_overwrite_value_must_name_existing_targets() {
    let (dir, path, data) = victim();
    let missing = dir.path().join("missing.dat");
    for (value, words) in [
        (
            missing.to_str().unwrap(),
            &["allow-overwrite", "missing.dat", "cannot use it"][..],
        ),
        (
            dir.path().to_str().unwrap(),
            &["allow-overwrite", "is a directory"],
        ),
        (" , ", &["allow-overwrite", "give the path"]),
    ] {
        let e = run(&allowing(
            on(&path, dir.path(), &[("op", "randwrite")], false),
            value,
        ))
        .expect_err("refused")
        .to_string();
        for w in words {
            assert!(e.contains(w), "{value:?}: {w:?} not in {e}");
        }
    }
    unchanged(&path, &data);
}

#[test]
fn a_symbolic_link_named_by_the_user_is_resolved_once_and_shown() {
    let (dir, path, data) = victim();
    let link = dir.path().join("link.dat");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let canonical = std::fs::canonicalize(&path).unwrap();
    let report = run(&on(&link, dir.path(), &[("op", "randwrite")], true)).unwrap();
    let r = &report.records[0];
    ok(r);
    let n = note(r, "tested ");
    assert!(
        n.contains(&format!(
            "tested {} (given as {}) in place (existing file",
            canonical.display(),
            link.display()
        )),
        "{n}"
    );
    written(&path, &data);
}

#[test]
fn a_path_swapped_for_a_symbolic_link_after_the_plan_is_not_followed() {
    // `a.dat` is checked as a regular file; before the run, it becomes a
    // symbolic link to `b.dat` (standing in for a block device): the run
    // refuses it and writes to neither.
    let (dir, [(a, a_data), (b, b_data)]) = two_victims();
    let moved = dir.path().join("a.orig");
    let cfg = on(&a, dir.path(), &[("op", "randwrite")], true);
    let report = plan_then_run(&cfg, || {
        std::fs::rename(&a, &moved).unwrap();
        std::os::unix::fs::symlink(&b, &a).unwrap();
    });
    let why = failed_with(
        &report.records[0],
        &[
            "changed after it was checked",
            "a regular file",
            "nothing was written",
        ],
    );
    assert!(why.contains("symbolic link"), "{why}");
    unchanged(&moved, &a_data);
    unchanged(&b, &b_data);

    // Read-only points too: the run reads what was checked or nothing.
    std::fs::remove_file(&a).unwrap();
    std::fs::rename(&moved, &a).unwrap();
    let cfg = on(&a, dir.path(), &[("op", "randread")], false);
    let report = plan_then_run(&cfg, || {
        std::fs::rename(&a, &moved).unwrap();
        std::os::unix::fs::symlink(&b, &a).unwrap();
    });
    failed_with(
        &report.records[0],
        &["symbolic link", "refusing to follow it"],
    );
}

#[test]
fn a_path_swapped_for_another_file_after_the_plan_is_refused() {
    // `a.dat` is checked; before the run another file is renamed over it
    // (same path, another inode): refused by the fstat comparison.
    let (dir, [(a, _), (b, b_data)]) = two_victims();
    let cfg = on(&a, dir.path(), &[("op", "randwrite")], true);
    let report = plan_then_run(&cfg, || std::fs::rename(&b, &a).unwrap());
    failed_with(
        &report.records[0],
        &[
            "changed after it was checked",
            "inode",
            "nothing was written",
        ],
    );
    unchanged(&a, &b_data);
    assert_eq!(entries(dir.path()), ["a.dat"]);
}

#[test]
fn a_block_device_is_tested_in_place() {
    let (dir, path, data) = victim();
    let lo = match Loop::attach(&path) {
        Ok(l) => l,
        Err(reason) => {
            skip(
                Capability::Loop,
                &format!("the block device case: {reason}"),
            );
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

#[test]
fn a_file_swapped_for_a_link_to_a_block_device_after_the_plan_is_not_written() {
    // The attack the checks are for: a regular file the user authorised is
    // replaced, between the plan and the run, by a symbolic link to a
    // block device (or by the device node itself).
    let (dir, [(a, a_data), (b, b_data)]) = two_victims();
    let lo = match Loop::attach(&b) {
        Ok(l) => l,
        Err(reason) => {
            skip(
                Capability::Loop,
                &format!("the block device swap case: {reason}"),
            );
            return;
        }
    };
    let moved = dir.path().join("a.orig");
    let cfg = on(&a, dir.path(), &[("op", "randwrite")], true);
    let report = plan_then_run(&cfg, || {
        std::fs::rename(&a, &moved).unwrap();
        std::os::unix::fs::symlink(&lo.dev, &a).unwrap();
    });
    failed_with(
        &report.records[0],
        &[
            "changed after it was checked",
            "symbolic link",
            "nothing was written",
        ],
    );

    // The device node itself renamed over the checked path (no symbolic
    // link to refuse): the writable open is O_EXCL, and fstat on its
    // descriptor is compared with what was checked.
    std::fs::remove_file(&a).unwrap();
    std::fs::copy(&moved, &a).unwrap();
    let node = dir.path().join("node");
    let report = plan_then_run(&cfg, || {
        use std::os::unix::fs::FileTypeExt;
        let rdev = std::os::unix::fs::MetadataExt::rdev(&std::fs::metadata(&lo.dev).unwrap());
        assert!(
            std::fs::metadata(&lo.dev)
                .unwrap()
                .file_type()
                .is_block_device()
        );
        let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
        // SAFETY: c is a valid NUL-terminated path.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, rdev) };
        assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
        std::fs::rename(&node, &a).unwrap();
    });
    failed_with(
        &report.records[0],
        &[
            "changed after it was checked",
            "a regular file",
            "block device",
            "nothing was written",
        ],
    );
    std::fs::remove_file(&a).unwrap();

    // The device named by its path but authorised for another target.
    let e = run(&allowing(
        on(&lo.dev, dir.path(), &[("op", "randwrite")], false),
        moved.to_str().unwrap(),
    ))
    .expect_err("the device is not named")
    .to_string();
    assert!(
        e.contains(lo.dev.to_str().unwrap()) && e.contains("does not name it"),
        "{e}"
    );
    drop(lo);
    unchanged(&moved, &a_data);
    unchanged(&b, &b_data);
}
