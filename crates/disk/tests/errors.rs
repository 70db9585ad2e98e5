//! The error paths of `disk.io`: bad parameters are one-line errors naming
//! the parameter before anything runs; a full file system, a missing
//! O_DIRECT or an unwritable target become failed or skipped records with a
//! clear reason, leave nothing behind, and the run goes on. (Existing files
//! and block devices as targets: `in_place.rs`.)

mod common;

use benchsuite_core::Status;
use benchsuite_core::testing::{Capability, skip};
use benchsuite_disk::SPACE_CHECK_OPTION;
use common::{Tmpfs, config, entries, run, scratch};

fn config_error(sweep: &[(&str, &str)]) -> String {
    let dir = scratch();
    let e = run(&config(dir.path(), sweep))
        .expect_err("the plan must be refused")
        .to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert_eq!(entries(dir.path()), Vec::<String>::new());
    e
}

#[test]
fn bad_parameters_are_refused_naming_the_parameter() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("block", "1XB")], "`block`"),
        (&[("block", "100")], "`block`"),
        (&[("block", "200M")], "`block`"),
        (&[("block", "1000")], "`block`"),
        (&[("qd", "0")], "`qd`"),
        (&[("rwmix", "150")], "`rwmix`"),
        (&[("threads", "0")], "`threads`"),
        (&[("size", "8K"), ("block", "1M")], "`size`"),
        (&[("fsync", "every:x")], "`fsync`"),
        (&[("dir", "/nonexistent/benchsuite")], "`dir`"),
        (
            &[("preset", "sysbench-rndrw"), ("op", "read,write")],
            "`preset`",
        ),
    ];
    for (sweep, name) in cases {
        let e = config_error(sweep);
        assert!(e.contains(name), "{sweep:?}: {e}");
    }
}

#[test]
fn an_unwritable_dir_is_refused_naming_the_parameter() {
    // As root, permissions do not stop writes; a read-only mount does.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (_guard, path) = if root {
        match Tmpfs::mount("ro,size=1M") {
            Ok(t) => {
                let p = t.path();
                (Some(t), p)
            }
            Err(reason) => {
                skip(
                    Capability::Tmpfs,
                    &format!("the read-only dir case: {reason}"),
                );
                return;
            }
        }
    } else {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch().keep();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o500)).unwrap();
        (None, d)
    };
    let e = config_error(&[("dir", path.to_str().unwrap())]);
    assert!(e.contains("`dir`") && e.contains("not writable"), "{e}");
}

#[test]
fn too_little_free_space_fails_before_writing_anything() {
    // Far more than any test machine has: 128 files of 16 TiB.
    let dir = scratch();
    let report = run(&config(
        dir.path(),
        &[("size", "16T,1M"), ("threads", "128,1")],
    ))
    .unwrap();
    assert_eq!(report.records.len(), 4);
    let big = &report.records[0];
    assert_eq!(big.status, Status::Failed, "{big:?}");
    let reason = big.reason.as_deref().unwrap();
    assert!(
        reason.contains("not enough free space") && reason.contains("Nothing was written"),
        "{reason}"
    );
    // The run went on: the small points ran.
    assert_eq!(
        report.records[3].status,
        Status::Ok,
        "{:?}",
        report.records[3]
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

/// Fills a real, small file system: an 8 MiB tmpfs. Needs the right to
/// mount (root here and in CI); elsewhere the case is skipped with the
/// reason and the test above still covers the free-space check.
#[test]
fn a_full_file_system_fails_the_record_and_leaves_nothing_behind() {
    let fs = match Tmpfs::mount("size=8M") {
        Ok(t) => t,
        Err(reason) => {
            skip(Capability::Tmpfs, &reason);
            return;
        }
    };
    let path = fs.path();
    let p = path.to_str().unwrap();
    let free_before = fs.free();

    // tmpfs is memory: with O_DIRECT there is no disk to measure.
    let report = run(&config(&path, &[("dir", p)])).unwrap();
    let r = &report.records[0];
    assert_eq!(r.status, Status::Skipped);
    assert!(r.reason.as_deref().unwrap().contains("tmpfs"), "{r:?}");

    // The free-space check refuses 16 MiB on 8 MiB before writing.
    let report = run(&config(
        &path,
        &[("dir", p), ("direct", "off"), ("size", "16M")],
    ))
    .unwrap();
    let r = &report.records[0];
    assert_eq!(r.status, Status::Failed);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("not enough free space"),
        "{r:?}"
    );

    // Without the check the file system really fills: ENOSPC, a failed
    // record naming it, then the next point runs.
    let mut cfg = config(
        &path,
        &[
            ("dir", p),
            ("direct", "off"),
            ("size", "16M,1M"),
            ("op", "write"),
        ],
    );
    cfg = cfg
        .to_builder()
        .option(SPACE_CHECK_OPTION, "off")
        .build()
        .unwrap();
    let report = run(&cfg).unwrap();
    let full = &report.records[0];
    assert_eq!(full.status, Status::Failed, "{full:?}");
    let reason = full.reason.as_deref().unwrap();
    assert!(reason.contains("ENOSPC") && reason.contains(p), "{reason}");
    let next = &report.records[1];
    assert_eq!(next.status, Status::Ok, "{next:?}");

    assert_eq!(entries(&path), Vec::<String>::new());
    assert_eq!(fs.free(), free_before, "every byte was given back");
}
