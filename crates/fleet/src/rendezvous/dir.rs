//! A shared directory as the store (`--output-dir`).

use super::*;

/// The rendezvous directory of `--output-dir`.
#[derive(Debug)]
pub struct DirStore {
    pub(crate) dir: PathBuf,
}

impl DirStore {
    /// The store in `dir`, created.
    pub fn create(dir: PathBuf) -> io::Result<DirStore> {
        fs::create_dir_all(&dir)?;
        Ok(DirStore { dir })
    }
}

impl Store for DirStore {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), StoreError> {
        publish(
            &self.dir.join(name),
            text,
            how == Put::Secret,
            how != Put::Beat,
        )
    }

    fn get(&self, name: &str) -> Result<String, StoreError> {
        let path = self.dir.join(name);
        read_text(&path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                StoreError::Absent {
                    name: name.to_string(),
                    place: self.place(),
                }
            } else {
                StoreError::Io {
                    action: "read",
                    path,
                    source,
                }
            }
        })
    }

    fn remove(&self, name: &str) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Err(source) if source.kind() != io::ErrorKind::NotFound => Err(StoreError::Io {
                action: "remove",
                path,
                source,
            }),
            _ => Ok(()),
        }
    }

    /// A listing, not a look-up per file: on NFS a failed look-up may be
    /// cached for many seconds, while a listing is revalidated when the
    /// directory changed. An unreadable directory lists nothing.
    fn list(&self) -> Result<HashSet<String>, StoreError> {
        Ok(fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn place(&self) -> String {
        format!("in {}", self.dir.display())
    }

    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn flag(&self) -> &'static str {
        "--output-dir"
    }
}

/// The most a store file may hold: a rank's report is the largest text
/// (the limit of a report file).
pub const MAX_STORE_TEXT: u64 = benchsuite_core::results::MAX_REPORT_BYTES;

/// Reads a file of the store: a regular file only, at most
/// [`MAX_STORE_TEXT`]. Another user able to write in a shared directory
/// cannot make a rank follow a link, wait on a FIFO or read a device, nor
/// exhaust its memory with a huge file: each is an error naming the file.
fn read_text(path: &Path) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a symbolic link, not followed (a store file is a regular file)",
                )
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file (a FIFO, a socket or a device is never read)",
        ));
    }
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "over the {} a store file may hold",
                benchsuite_core::units::format_size(MAX_STORE_TEXT)
            ),
        )
    };
    if meta.len() > MAX_STORE_TEXT {
        return Err(too_big());
    }
    let mut text = String::new();
    file.take(MAX_STORE_TEXT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_STORE_TEXT {
        return Err(too_big());
    }
    Ok(text)
}

/// Writes `path` atomically (a temporary file renamed over it); a
/// `private` file is readable by this user only; `sync`ed to disk before
/// the rename.
pub fn publish(path: &Path, text: &str, private: bool, sync: bool) -> Result<(), StoreError> {
    // A random name created exclusively, never through a link: another
    // user of a group-writable directory cannot make this write land
    // elsewhere.
    let mode = if private { 0o600 } else { 0o666 };
    let cannot = |source: io::Error| StoreError::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    };
    let (tmp, mut f) =
        benchsuite_core::atomic::create_temporary_mode(path, mode).map_err(cannot)?;
    let mut write = || -> io::Result<()> {
        f.write_all(text.as_bytes())?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        cannot(e)
    })
}
