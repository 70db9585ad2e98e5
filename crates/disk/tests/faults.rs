//! Real faults, injected with device-mapper: a device whose second half
//! fails every I/O (an `error` target after a `linear` one, over a loop
//! device). A read test that reaches it fails its record naming the errno
//! and the offset; the run goes on with the next point; nothing is left
//! behind (no mapping, no loop device, no scratch file).
//!
//! Needs root, `dmsetup` and a kernel with device-mapper: it skips with the
//! reason otherwise (`.ci/run` installs `dmsetup`; some VM kernels lack
//! device-mapper entirely).

mod common;

use std::path::Path;
use std::process::Command;

use benchsuite_core::Status;
use benchsuite_core::testing::{Capability, skip};
use common::{Loop, config, entries, run, scratch};

/// A device-mapper device, removed on drop.
struct Mapped {
    name: String,
}

impl Mapped {
    /// `dev`'s first `good` sectors readable, the next `bad` failing.
    fn half_failing(dev: &Path, good: u64, bad: u64) -> Result<Mapped, String> {
        let name = format!("benchsuite-fault-{}", std::process::id());
        let table = format!("0 {good} linear {} 0\n{good} {bad} error\n", dev.display());
        let out = Command::new("dmsetup")
            .args(["create", &name, "--table", &table])
            .output()
            .map_err(|e| format!("cannot run dmsetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "dmsetup create failed (is device-mapper in this kernel?): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Mapped { name })
    }

    fn path(&self) -> std::path::PathBuf {
        Path::new("/dev/mapper").join(&self.name)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let _ = Command::new("dmsetup")
            .args(["remove", "--retry", &self.name])
            .status();
    }
}

fn mapped_exists(name: &str) -> bool {
    Path::new("/dev/mapper").join(name).exists()
}

#[test]
fn an_io_error_mid_run_fails_the_record_naming_errno_and_offset_and_the_run_goes_on() {
    if !Path::new("/dev/mapper/control").exists() {
        skip(
            Capability::Dm,
            "no /dev/mapper/control (this kernel has no device-mapper, or it is not exposed here)",
        );
        return;
    }
    let dir = scratch();
    let backing = dir.path().join("backing.img");
    let f = std::fs::File::create(&backing).unwrap();
    f.set_len(64 << 20).unwrap();
    drop(f);
    let lo = match Loop::attach(&backing) {
        Ok(l) => l,
        Err(reason) => {
            skip(Capability::Loop, &reason);
            return;
        }
    };
    // 64 MiB = 131072 sectors: the first 32 MiB read, the rest fail.
    let dm = match Mapped::half_failing(&lo.dev, 65536, 65536) {
        Ok(m) => m,
        Err(reason) => {
            skip(Capability::Dm, &reason);
            return;
        }
    };
    let dev = dm.path();
    let dev_text = dev.display().to_string();
    // Random reads over the whole device (they reach the failing half at
    // once), then a sequential read of the good first half only: the
    // second record must still run and succeed.
    let failing = config(
        dir.path(),
        &[
            ("op", "randread"),
            ("dir", &dev_text),
            ("size", "64M"),
            ("block", "4K"),
        ],
    );
    let report = run(&failing).expect("a read-only in-place plan is valid");
    let r = &report.records[0];
    assert_eq!(r.status, Status::Failed, "{r:?}");
    let reason = r.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("offset") && (reason.contains("EIO") || reason.contains("Input/output")),
        "the reason names the offset and the errno: {reason}"
    );
    let good = config(
        dir.path(),
        &[
            ("op", "read"),
            ("dir", &dev_text),
            ("size", "16M"),
            ("block", "128K"),
        ],
    );
    let report = run(&good).expect("valid");
    assert_eq!(
        report.records[0].status,
        Status::Ok,
        "{:?}",
        report.records[0]
    );

    let name = dm.name.clone();
    drop(dm);
    drop(lo);
    assert!(!mapped_exists(&name), "the mapping is removed");
    assert_eq!(entries(dir.path()), ["backing.img"], "no scratch file left");
}
