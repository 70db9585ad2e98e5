//! Writing a file so that a reader sees the old one or the whole new one,
//! never a part: every output benchsuite writes (`-o`, `--output-dir`,
//! fleet and reference reports, rendezvous files) goes through
//! [`replace_file`].

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// Writes `path` atomically: `write` fills a new temporary file beside it
/// (a random name, created with `O_CREAT | O_EXCL | O_NOFOLLOW`, so a
/// name planted by another user, link or file, is never followed or
/// reused), which is synced to disk and renamed over `path`; then the
/// directory is synced, so that a crash of the machine leaves the old file
/// or the new one. On any error the temporary file is removed and `path`
/// is untouched (a full file system leaves the old file whole).
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), AtomicError> {
    let (tmp, file) = create_temporary(path).map_err(|e| AtomicError::Create(path.into(), e))?;
    let result = (|| {
        let mut w = BufWriter::new(file);
        write(&mut w)
            .and_then(|_| w.flush())
            // On the disk before the rename, so a crash of the machine
            // leaves the old file or the new one, and the next disk record
            // does not flush this one's pages while it measures.
            .and_then(|_| w.get_ref().sync_all())
            .map_err(|e| AtomicError::Write(path.into(), e))?;
        drop(w);
        std::fs::rename(&tmp, path).map_err(|e| AtomicError::Replace(path.into(), e))?;
        // The rename itself on the disk. A file system that cannot sync a
        // directory (some network file systems) says EINVAL: the rename
        // still happened.
        if let Some(dir) = path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            match File::open(dir).and_then(|d| d.sync_all()) {
                Err(e) if e.raw_os_error() != Some(libc::EINVAL) => {
                    return Err(AtomicError::Replace(path.into(), e));
                }
                _ => {}
            }
        }
        Ok(())
    })();
    if result.is_err() {
        // Only the file this call created (its name is random and it was
        // created exclusively), and only if the rename did not take it.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A new file `.NAME.RANDOM.tmp` beside `path`, created exclusively and
/// never through a link.
pub fn create_temporary(path: &Path) -> io::Result<(PathBuf, File)> {
    create_temporary_mode(path, 0o666)
}

/// [`create_temporary`] with the file's mode (`0o600` for a secret; the
/// umask applies as to any new file).
pub fn create_temporary_mode(path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut last = None;
    for _ in 0..8 {
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", random_hex()?));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// A new private directory `PREFIX-PID-RANDOM` in `parent`: created
/// exclusively (an existing name, link or not, is never used) with mode
/// 0700, so nobody else can put a name in it.
pub fn private_dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt as _;
    let dir = parent.join(format!("{prefix}-{}-{}", std::process::id(), random_hex()?));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// 16 random hex digits from the kernel (`getrandom(2)`).
pub fn random_hex() -> io::Result<String> {
    let mut b = [0u8; 8];
    let mut filled = 0;
    while filled < b.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `b`,
        // which lives for the call; getrandom writes at most that many bytes.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), b.len() - filled, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n as usize;
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Why [`replace_file`] failed; each names the file it was writing.
#[derive(Debug, thiserror::Error)]
pub enum AtomicError {
    /// The temporary file beside it could not be created.
    #[error("{}: cannot create the file", .0.display())]
    Create(PathBuf, #[source] io::Error),
    /// Writing or syncing it failed (a full disk, an I/O error).
    #[error("{}: write failed", .0.display())]
    Write(PathBuf, #[source] io::Error),
    /// The rename over it (or the directory's sync) failed.
    #[error("{}: cannot replace the file", .0.display())]
    Replace(PathBuf, #[source] io::Error),
}

impl AtomicError {
    /// The system's error beneath.
    pub fn into_io(self) -> io::Error {
        match self {
            AtomicError::Create(_, e) | AtomicError::Write(_, e) | AtomicError::Replace(_, e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_never_followed_and_nothing_is_left_behind() {
        let dir = std::env::temp_dir().join(format!("benchsuite-atomic-{}", random_hex().unwrap()));
        std::fs::create_dir(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = dir.join("out.json");
        // Whatever the temporary names, a link in their place is not used:
        // plant links at the old predictable name too.
        std::os::unix::fs::symlink(
            &victim,
            dir.join(format!(".out.json.{}.tmp", std::process::id())),
        )
        .unwrap();
        replace_file(&out, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A failing writer leaves the old file and no temporary.
        let err = replace_file(&out, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(matches!(err, AtomicError::Write(..)), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp") && !n.contains(&std::process::id().to_string()))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_names_differ() {
        let a = random_hex().unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex().unwrap());
    }
}
