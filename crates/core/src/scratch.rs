//! Private scratch directories that go with the value that owns them —
//! and, when the process leaves without unwinding (a second signal, see
//! the CLI's `interrupt`), through [`remove_all`], which is why each one is
//! listed here while it lives.
//!
//! Used for a reference tool's files (fio's shared file: gigabytes) and
//! for `compare --interleave`'s rounds.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The scratch directories that exist now, each created by this process.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A private directory `PREFIX-PID-RANDOM` (mode 0700, created exclusively:
/// [`crate::atomic::private_dir`]), removed with everything in it when
/// dropped, or by [`remove_all`].
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates the directory in `parent`. It is listed for [`remove_all`]
    /// before anyone can see it: the list is held while it is created, so
    /// a [`remove_all`] on another thread either finds it or runs before
    /// it exists.
    pub fn new(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        let mut live = live();
        let dir = crate::atomic::private_dir(parent, prefix)?;
        live.push(dir.clone());
        Ok(ScratchDir(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let mut live = live();
        let _ = std::fs::remove_dir_all(&self.0);
        live.retain(|d| *d != self.0);
    }
}

/// Removes every [`ScratchDir`] that still exists, for a process about to
/// exit without unwinding. Stop whatever writes into them first
/// ([`crate::reference::kill_running_tools`]).
pub fn remove_all() {
    let mut live = live();
    for d in live.drain(..) {
        // A tool killed a moment ago may still have had a file open for
        // creation: a second pass finds it.
        if std::fs::remove_dir_all(&d).is_err() {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_goes_when_dropped_or_with_remove_all() {
        let parent = crate::atomic::private_dir(&std::env::temp_dir(), "benchsuite-t").unwrap();
        let a = ScratchDir::new(&parent, "t").unwrap();
        std::fs::write(a.path().join("f"), "x").unwrap();
        let a_path = a.path().to_path_buf();
        drop(a);
        assert!(!a_path.exists());

        let b = ScratchDir::new(&parent, "t").unwrap();
        std::fs::create_dir(b.path().join("sub")).unwrap();
        std::fs::write(b.path().join("sub/f"), "x").unwrap();
        remove_all();
        assert!(!b.path().exists());
        assert!(!live().contains(&b.path().to_path_buf()));
        drop(b); // removing it again is harmless
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);
        std::fs::remove_dir(&parent).unwrap();
    }
}
