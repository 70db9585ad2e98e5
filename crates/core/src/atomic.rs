//! Writing a file so that a reader sees the old one or the whole new one,
//! never a part: every output benchsuite writes (`-o`, `--output-dir`,
//! fleet and reference reports, rendezvous files) goes through
//! [`replace_file`].
//!
//! Only a regular file is replaced. What else an output path may name is
//! someone's, not ours to replace: a character device or a FIFO
//! (`/dev/null`, `/dev/stdout` on a pipe, a named pipe a collector reads)
//! is written in place; a symbolic link is followed, and what it points to
//! is treated by the same rules (the link stays); a link to nothing, a
//! directory, a block device or a socket is refused, naming the path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Writes `path` with what `write` writes.
///
/// A regular file (or a path where nothing is) is replaced atomically:
/// `write` fills a new temporary file beside it (a random name, created
/// with `O_CREAT | O_EXCL | O_NOFOLLOW`, so a name planted by another
/// user, link or file, is never followed or reused), which takes the old
/// file's permission mode (and, where this user may give it, its owner and
/// group), is synced to disk and renamed over `path`; then the directory is
/// synced, so that a crash of the machine leaves the old file or the new
/// one. On any error the temporary file is removed and `path` is untouched
/// (a full file system leaves the old file whole).
///
/// A character device or a FIFO is opened for writing (never created, and
/// never truncated) and written in place: renaming over it would put a
/// regular file where `/dev/null` was. A symbolic link is resolved and its
/// target written by these rules, the link left as it is; a link whose
/// target does not exist is refused ([`AtomicError::DanglingLink`]) rather
/// than a file created through it, and so is a directory, a block device
/// or a socket ([`AtomicError::NotAFile`]).
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), AtomicError> {
    match classify(path)? {
        Target::File { path: real, old } => replace(path, &real, old.as_ref(), write),
        Target::InPlace(through) => write_in_place(path, &through, write),
    }
}

/// Fails as [`replace_file`] would before it writes, leaving nothing behind
/// and changing nothing at `path`: whether `path` names a kind of file it
/// writes, whether an existing regular file opens for writing (no
/// `O_CREAT`, no `O_TRUNC`) and a temporary file can be made beside it
/// (made and removed at once: the one sure test of the directory's
/// permissions, a read-only mount, a full inode table), and whether a
/// device or FIFO may be written (not opened: a FIFO's open waits for its
/// reader). Commands call it before measuring, so that a run that then
/// fails (or is killed) leaves no empty file where there was none.
pub fn check_writable(path: &Path) -> Result<(), AtomicError> {
    match classify(path)? {
        Target::File { path: real, old } => {
            if old.is_some() {
                // Without O_CREAT or O_TRUNC: opening changes nothing.
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY)
                    .open(&real)
                    .map_err(|e| AtomicError::Open(path.into(), e))?;
            }
            let (tmp, file) =
                create_temporary(&real).map_err(|e| AtomicError::Create(path.into(), e))?;
            drop(file);
            std::fs::remove_file(&tmp).map_err(|e| AtomicError::Create(path.into(), e))
        }
        // Not opened: opening a FIFO waits for its reader.
        Target::InPlace(through) => {
            may_write(&through).map_err(|e| AtomicError::Open(path.into(), e))
        }
    }
}

/// What an output path names, as [`replace_file`] writes it.
enum Target {
    /// A regular file at `path` (the target of the links the given path
    /// went through), or nothing there yet (`old` is `None`): replaced.
    File {
        path: PathBuf,
        old: Option<Metadata>,
    },
    /// A character device or a FIFO, reached through this path (links
    /// and all): written in place.
    InPlace(PathBuf),
}

/// What `path` names; an error for what is never written.
fn classify(path: &Path) -> Result<Target, AtomicError> {
    let here = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Target::File {
                path: path.into(),
                old: None,
            });
        }
        Err(e) => return Err(AtomicError::Create(path.into(), e)),
    };
    let link = here.file_type().is_symlink();
    let meta = if link {
        match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let to = std::fs::read_link(path).unwrap_or_default();
                return Err(AtomicError::DanglingLink(path.into(), to));
            }
            Err(e) => return Err(AtomicError::Create(path.into(), e)),
        }
    } else {
        here
    };
    let kind = meta.file_type();
    if kind.is_file() {
        // Through links: the file they end at is the one replaced, beside
        // itself, and the links stay.
        let real = if link {
            std::fs::canonicalize(path).map_err(|e| AtomicError::Create(path.into(), e))?
        } else {
            path.to_path_buf()
        };
        Ok(Target::File {
            path: real,
            old: Some(meta),
        })
    } else if kind.is_char_device() || kind.is_fifo() {
        Ok(Target::InPlace(path.into()))
    } else {
        let what = if kind.is_dir() {
            NotAFile::Directory
        } else if kind.is_block_device() {
            NotAFile::BlockDevice
        } else if kind.is_socket() {
            NotAFile::Socket
        } else {
            NotAFile::Other
        };
        Err(AtomicError::NotAFile(path.into(), what))
    }
}

/// Replaces the regular file `real` (or creates it), atomically; errors
/// name `path`, as the user gave it.
fn replace(
    path: &Path,
    real: &Path,
    old: Option<&Metadata>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), AtomicError> {
    let (tmp, file) = create_temporary(real).map_err(|e| AtomicError::Create(path.into(), e))?;
    let result = (|| {
        if let Some(old) = old {
            keep_mode(&file, old).map_err(|e| AtomicError::Create(path.into(), e))?;
        }
        let mut w = BufWriter::new(file);
        write(&mut w)
            .and_then(|_| w.flush())
            // On the disk before the rename, so a crash of the machine
            // leaves the old file or the new one, and the next disk record
            // does not flush this one's pages while it measures.
            .and_then(|_| w.get_ref().sync_all())
            .map_err(|e| AtomicError::Write(path.into(), e))?;
        drop(w);
        std::fs::rename(&tmp, real).map_err(|e| AtomicError::Replace(path.into(), e))?;
        // The rename itself on the disk. A file system that cannot sync a
        // directory (some network file systems) says EINVAL: the rename
        // still happened.
        if let Some(dir) = real.parent() {
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

/// Gives the new file `file` the old one's permission bits, and its owner
/// and group where this user may (root, or a group of this user's): a
/// report replaced by `sudo benchsuite ... -o` stays its owner's, and a
/// file made private (0600) stays private. Where the owner cannot be given
/// (EPERM: another user's file in a directory this user may write), the
/// new file is this user's, as any editor's save makes it.
fn keep_mode(file: &File, old: &Metadata) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let new = file.metadata()?;
    if new.uid() != old.uid() || new.gid() != old.gid() {
        // SAFETY: the descriptor is open for the call; fchown reads no
        // memory of ours.
        let rc = unsafe { libc::fchown(file.as_raw_fd(), old.uid(), old.gid()) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EPERM) {
                return Err(e);
            }
        }
    }
    // The permission bits only: set-user-ID and the like are not a
    // report's to carry.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
        old.mode() & 0o777,
    ))
}

/// Writes into the character device or FIFO at `through`: opened for
/// writing without `O_CREAT` (nothing is ever made there), no `O_TRUNC`
/// (a regular file put in its place since it was looked at is truncated
/// first instead, the one case where the old bytes could remain). A FIFO
/// waits for its reader, as a shell's `>` would.
fn write_in_place(
    path: &Path,
    through: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), AtomicError> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(through)
        .map_err(|e| AtomicError::Open(path.into(), e))?;
    let kind = file
        .metadata()
        .map_err(|e| AtomicError::Open(path.into(), e))?
        .file_type();
    if kind.is_file() {
        file.set_len(0)
            .map_err(|e| AtomicError::Write(path.into(), e))?;
    } else if !(kind.is_char_device() || kind.is_fifo()) {
        return Err(AtomicError::NotAFile(path.into(), NotAFile::Other));
    }
    let mut w = BufWriter::new(file);
    write(&mut w)
        .and_then(|_| w.flush())
        .map_err(|e| AtomicError::Write(path.into(), e))?;
    if kind.is_file() {
        w.get_ref()
            .sync_all()
            .map_err(|e| AtomicError::Write(path.into(), e))?;
    }
    Ok(())
}

/// Whether this process may write `path` (its effective ids, as `open`
/// checks), without opening it.
fn may_write(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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
    // Within a file name's 255 bytes, whatever the name's length: the
    // temporary's only needs to be recognisable.
    let mut end = name.len().min(200);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let name = &name[..end];
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

/// Why [`replace_file`] (or [`check_writable`]) failed; each names the
/// file it was writing, as it was given.
#[derive(Debug, thiserror::Error)]
pub enum AtomicError {
    /// The temporary file beside it could not be created.
    #[error("{}: cannot create the file", .0.display())]
    Create(PathBuf, #[source] io::Error),
    /// An existing file, device or FIFO could not be opened for writing.
    #[error("{}: cannot open it for writing", .0.display())]
    Open(PathBuf, #[source] io::Error),
    /// Writing or syncing it failed (a full disk, an I/O error).
    #[error("{}: write failed", .0.display())]
    Write(PathBuf, #[source] io::Error),
    /// The rename over it (or the directory's sync) failed.
    #[error("{}: cannot replace the file", .0.display())]
    Replace(PathBuf, #[source] io::Error),
    /// A symbolic link to nothing: a file is not created through it (the
    /// link's target, `.1`, may be anywhere).
    #[error(
        "{}: is a symbolic link to {}, which does not exist; no file is created through a link (give the target's path, or remove the link)",
        .0.display(),
        .1.display()
    )]
    DanglingLink(PathBuf, PathBuf),
    /// Something that is neither a regular file nor a character device
    /// nor a FIFO.
    #[error("{}: {}", .0.display(), .1)]
    NotAFile(PathBuf, NotAFile),
}

/// What an output path names that is never written
/// ([`AtomicError::NotAFile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAFile {
    /// A directory.
    Directory,
    /// A block device: a report written over a disk would destroy what
    /// is on it.
    BlockDevice,
    /// A Unix socket, which cannot be opened for writing.
    Socket,
    /// Anything else a file system may hold.
    Other,
}

impl std::fmt::Display for NotAFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAFile::Directory => "is a directory; give a file's path",
            NotAFile::BlockDevice => {
                "is a block device; a report is not written over a disk (give a file's path)"
            }
            NotAFile::Socket => "is a socket, which cannot be written as a file",
            NotAFile::Other => {
                "is not a regular file, a character device or a FIFO; give a file's path"
            }
        })
    }
}

impl AtomicError {
    /// The system's error beneath, where there is one (none where the path
    /// was refused for what it names).
    pub fn into_source(self) -> Option<io::Error> {
        match self {
            AtomicError::Create(_, e)
            | AtomicError::Open(_, e)
            | AtomicError::Write(_, e)
            | AtomicError::Replace(_, e) => Some(e),
            AtomicError::DanglingLink(..) | AtomicError::NotAFile(..) => None,
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

    /// A fresh directory for one test, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new() -> Dir {
            let dir =
                std::env::temp_dir().join(format!("benchsuite-atomic-{}", random_hex().unwrap()));
            std::fs::create_dir(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn kind(path: &Path) -> std::fs::FileType {
        std::fs::symlink_metadata(path).unwrap().file_type()
    }

    /// Reads everything written into the FIFO at `path` by the next
    /// writer, on a thread (opening a FIFO for reading waits for a writer).
    fn read_fifo(path: &Path) -> std::sync::mpsc::Receiver<Vec<u8>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            use std::io::Read as _;
            let mut got = Vec::new();
            if let Ok(mut f) = File::open(&path) {
                let _ = f.read_to_end(&mut got);
            }
            let _ = tx.send(got);
        });
        rx
    }

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt as _;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0, "mkfifo: {}", io::Error::last_os_error());
    }

    #[test]
    fn a_fifo_gets_the_bytes_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = Dir::new();
        let fifo = dir.0.join("out.fifo");
        mkfifo(&fifo);
        let got = read_fifo(&fifo);
        replace_file(&fifo, |w| w.write_all(b"report")).unwrap();
        assert!(kind(&fifo).is_fifo(), "replaced by {:?}", kind(&fifo));
        let got = got
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert_eq!(got, b"report");
    }

    #[test]
    fn a_link_to_a_file_stays_a_link_and_its_target_gets_the_bytes() {
        let dir = Dir::new();
        let target = dir.0.join("target.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.0.join("link.json");
        std::os::unix::fs::symlink("target.json", &link).unwrap();
        replace_file(&link, |w| w.write_all(b"new")).unwrap();
        assert!(
            kind(&link).is_symlink(),
            "the link became {:?}",
            kind(&link)
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("target.json"));
        assert!(kind(&target).is_file());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn a_dangling_link_is_refused_naming_it_and_nothing_is_created() {
        let dir = Dir::new();
        let link = dir.0.join("link.json");
        std::os::unix::fs::symlink("missing.json", &link).unwrap();
        let err = replace_file(&link, |w| w.write_all(b"new")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&*link.to_string_lossy()), "{text}");
        assert!(text.contains("missing.json"), "{text}");
        assert!(kind(&link).is_symlink());
        assert!(!dir.0.join("missing.json").exists());
        let names: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = Dir::new();
        let out = dir.0.join("out.json");
        std::fs::write(&out, "old").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace_file(&out, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{mode:o}");
    }

    /// As root, a character device made for the test (the null device,
    /// c 1 3): `/dev/null` itself would be replaced where this fails. As
    /// anyone else, `/dev/null`.
    #[test]
    fn a_character_device_is_written_in_place() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = Dir::new();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let dev = if root {
            use std::os::unix::ffi::OsStrExt as _;
            let node = dir.0.join("null");
            let c = std::ffi::CString::new(node.as_os_str().as_bytes()).unwrap();
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
            // Where devices cannot be made (or used: a `nodev` mount), the
            // system's own null device.
            if rc == 0 && OpenOptions::new().write(true).open(&node).is_ok() {
                node
            } else {
                PathBuf::from("/dev/null")
            }
        } else {
            PathBuf::from("/dev/null")
        };
        replace_file(&dev, |w| w.write_all(b"report")).unwrap();
        assert!(
            kind(&dev).is_char_device(),
            "{} became {:?}",
            dev.display(),
            kind(&dev)
        );
    }

    #[test]
    fn a_link_to_a_fifo_writes_into_the_fifo() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = Dir::new();
        let fifo = dir.0.join("out.fifo");
        mkfifo(&fifo);
        let link = dir.0.join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let got = read_fifo(&fifo);
        replace_file(&link, |w| w.write_all(b"through")).unwrap();
        assert!(kind(&link).is_symlink() && kind(&fifo).is_fifo());
        let got = got
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert_eq!(got, b"through");
    }

    /// A directory, a socket and (as root) a block device are refused,
    /// each naming the path, and left as they are; so is a dangling link
    /// by the check before a run.
    #[test]
    fn what_is_never_written_is_refused_naming_the_path() {
        let dir = Dir::new();
        let sub = dir.0.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let sock = dir.0.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut refused = vec![(sub, NotAFile::Directory), (sock, NotAFile::Socket)];
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            use std::os::unix::ffi::OsStrExt as _;
            let node = dir.0.join("loop0");
            let c = std::ffi::CString::new(node.as_os_str().as_bytes()).unwrap();
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            if unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) } == 0 {
                refused.push((node, NotAFile::BlockDevice));
            }
        }
        for (path, what) in refused {
            let before = kind(&path);
            for err in [
                replace_file(&path, |w| w.write_all(b"x")).unwrap_err(),
                check_writable(&path).unwrap_err(),
            ] {
                assert!(
                    matches!(&err, AtomicError::NotAFile(p, w) if *p == path && *w == what),
                    "{err}"
                );
                assert!(
                    err.to_string().starts_with(&*path.to_string_lossy()),
                    "{err}"
                );
            }
            assert_eq!(kind(&path), before);
        }
        let link = dir.0.join("dangling");
        std::os::unix::fs::symlink("nowhere", &link).unwrap();
        let err = check_writable(&link).unwrap_err();
        assert!(matches!(err, AtomicError::DanglingLink(..)), "{err}");
        assert!(!dir.0.join("nowhere").exists());
    }

    /// The check before a run creates nothing where nothing was, changes
    /// nothing where a file was, and refuses a file this user may not
    /// write and a directory it may not create in.
    #[test]
    fn the_check_before_a_run_creates_and_changes_nothing() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = Dir::new();
        let new = dir.0.join("new.json");
        check_writable(&new).unwrap();
        let old = dir.0.join("old.json");
        std::fs::write(&old, "old").unwrap();
        check_writable(&old).unwrap();
        let names: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["old.json"]);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "old");
        check_writable(Path::new("/dev/null")).unwrap();
        let err = check_writable(&dir.0.join("no-such-dir/out.json")).unwrap_err();
        assert!(matches!(err, AtomicError::Create(..)), "{err}");
        // Permissions bind only a user other than root.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o444)).unwrap();
            let err = check_writable(&old).unwrap_err();
            assert!(matches!(err, AtomicError::Open(..)), "{err}");
        }
    }

    /// A name of 255 bytes, the most a file system takes: its temporary
    /// file's name fits too.
    #[test]
    fn a_name_of_255_bytes_is_replaced() {
        let dir = Dir::new();
        let out = dir.0.join("é".repeat(127) + "x");
        assert_eq!(out.file_name().unwrap().len(), 255);
        replace_file(&out, |w| w.write_all(b"one")).unwrap();
        replace_file(&out, |w| w.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
    }

    #[test]
    fn temporary_names_differ() {
        let a = random_hex().unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex().unwrap());
    }
}
