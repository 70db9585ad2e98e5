//! Helpers shared by the disk integration tests: a registry of this
//! module, a fast run configuration, scratch directories on the project's
//! own disk, and a tmpfs mount that unmounts itself.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchsuite_core::runner::{self, Silent};
use benchsuite_core::{ConfigError, Registry, Report, RunConfig};
use benchsuite_disk::{DESCRIPTION, MODULE, benchmarks};

pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_module(MODULE, DESCRIPTION, benchmarks());
    r
}

/// The conformance configuration: smoke values, 3 runs of ≥ 1 ms.
pub fn config(scratch: &Path, sweep: &[(&str, &str)]) -> RunConfig {
    RunConfig {
        selectors: vec!["disk.io".into()],
        sweep: sweep
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        smoke: true,
        runs: 3,
        min_sample_time: Duration::from_millis(1),
        warmup: Duration::from_millis(1),
        scratch_dir: Some(scratch.to_path_buf()),
        ..RunConfig::quick()
    }
}

pub fn run(cfg: &RunConfig) -> Result<Report, ConfigError> {
    runner::run(&registry(), cfg, &mut Silent)
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
