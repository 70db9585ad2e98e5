//! Helpers shared by the disk integration tests: the module's conformance
//! harness, a fast run configuration, scratch directories on the project's
//! own disk, and a tmpfs mount that unmounts itself.

#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::testing::Conformance;
use benchsuite_core::{ConfigError, Record, Report, RunConfig, Value};
use benchsuite_disk::{DESCRIPTION, MODULE, benchmarks};

/// The module under the shared conformance harness: generous physical
/// bounds for a median (no storage reaches 100 GB/s or 50 M IOPS through
/// one file system, and no single I/O of a smoke point takes 10 s), the
/// skips `direct=on` may meet, and the per-record check.
pub fn harness() -> Conformance {
    Conformance::new(MODULE, DESCRIPTION, benchmarks)
        .bounds(|id, metric| match (id, metric) {
            ("disk.io", "bandwidth") => f64::MIN_POSITIVE..100e9,
            ("disk.io", "iops") => f64::MIN_POSITIVE..50e6,
            ("disk.io", "latency") => f64::MIN_POSITIVE..10.0,
            _ => panic!("no physical bound for {id} {metric}: add one to this test"),
        })
        .may_skip(|r| {
            // The harness runs in the system temp dir: a memory file system
            // (no disk under it) or one that refuses O_DIRECT skips direct=on.
            let reason = r.reason.as_deref().unwrap_or_default();
            r.params.get("direct") == Some(&Value::Bool(true))
                && (reason.contains("(memory): there is no disk under it")
                    || reason.contains("O_DIRECT"))
        })
        .check_each(check)
}

/// What every `ok` disk.io record must say: three metrics, the block that
/// ran, bandwidth = iops × block, and latency percentiles.
pub fn check(r: &Record) {
    let what = format!("{} {}", r.id, r.params.label());
    assert_eq!(r.metrics.len(), 3, "{what}");
    let bw = &r.metrics[0];
    let iops = &r.metrics[1];
    // The record shows the block that ran, never `0` (auto).
    let block = r.params.get("block").and_then(|v| v.as_u64()).unwrap();
    assert!(block >= 512, "{what}");
    // bandwidth = iops × block, sample by sample.
    for (b, i) in bw.samples.iter().zip(&iops.samples) {
        let ratio = b / (i * block as f64);
        assert!((ratio - 1.0).abs() < 1e-9, "{what}: {b} vs {i} × {block}");
    }
    let lat = r.metrics[2].latency.as_ref().expect("latency percentiles");
    assert!(lat.count > 0, "{what}");
    assert!(
        lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max,
        "{what}"
    );
}

/// The conformance configuration (smoke values, 3 runs of ≥ 1 ms) with its
/// scratch files in `scratch`.
pub fn config(scratch: &Path, sweep: &[(&str, &str)]) -> RunConfig {
    RunConfig::smoke_test("disk.io", sweep)
        .to_builder()
        .scratch_dir(Some(scratch.to_path_buf()))
        .build()
        .unwrap()
}

/// Plans and runs `cfg`; a refused plan is the `Err`.
pub fn run(cfg: &RunConfig) -> Result<Report, ConfigError> {
    runner::run(&harness().registry(), cfg, &mut Silent)
}

/// A fresh directory under the target dir (on the project's disk, not a
/// tmpfs `/tmp`), removed on drop.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("disk-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a scratch dir in the target dir")
}

/// Names of the entries in a directory (hidden ones included).
pub fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("readable dir")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A tmpfs mounted on a fresh directory, unmounted on drop.
pub struct Tmpfs {
    pub dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs with these options (`size=8M`, `ro,size=1M`); `Err`
    /// with the reason when this process may not mount (not root, or no
    /// CAP_SYS_ADMIN in this namespace).
    pub fn mount(options: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let target = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let fstype = CString::new("tmpfs").unwrap();
        let mut flags: libc::c_ulong = 0;
        let mut data = Vec::new();
        for o in options.split(',') {
            if o == "ro" {
                flags |= libc::MS_RDONLY;
            } else {
                data.push(o);
            }
        }
        let data = CString::new(data.join(",")).unwrap();
        // SAFETY: all pointers are valid NUL-terminated strings that live
        // across the call.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                flags,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(format!(
                "mount -t tmpfs is not permitted here: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Tmpfs { dir })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Bytes available on the mount.
    pub fn free(&self) -> u64 {
        let c = CString::new(self.dir.path().as_os_str().as_bytes()).unwrap();
        // SAFETY: statvfs is plain data; zeroed is valid.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid path and out pointer.
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
        st.f_bavail * st.f_frsize
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let c = CString::new(self.dir.path().as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path; MNT_DETACH never blocks.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

/// A loop device over a file in a temp dir, detached on drop.
pub struct Loop {
    /// `/dev/loopN`.
    pub dev: PathBuf,
}

impl Loop {
    /// Attaches `file`; `Err` with the reason where this process may not.
    pub fn attach(file: &Path) -> Result<Loop, String> {
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
