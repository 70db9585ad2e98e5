//! Thin, checked wrappers over the Linux calls the disk module needs:
//! aligned buffers, unnamed scratch files, `O_DIRECT`, `statx` alignment,
//! `statfs`/`statvfs`, `fallocate`, `posix_fadvise`. Every `unsafe` block of
//! the crate outside the io_uring engine lives here.

use std::alloc::Layout;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use benchsuite_core::BenchError;

/// A zero-initialised heap buffer whose start is aligned to `align` bytes,
/// as `O_DIRECT` requires.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer owns its allocation exclusively (like a Vec<u8>); no
// other handle to it exists, so moving it to another thread is sound.
unsafe impl Send for AlignedBuf {}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.layout.size())
            .field("align", &self.layout.align())
            .finish()
    }
}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<AlignedBuf, BenchError> {
        let layout = Layout::from_size_align(len.max(1), align.max(1)).map_err(|e| {
            BenchError::caused(format!("buffer of {len} B aligned to {align} B"), e)
        })?;
        // SAFETY: the layout has a nonzero size (len.max(1)).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            BenchError::Other(format!("out of memory allocating a {len} B I/O buffer"))
        })?;
        Ok(AlignedBuf { ptr, layout })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to layout.size() initialised (zeroed at
        // allocation) bytes owned by self; the shared borrow of self keeps
        // them alive and unaliased by &mut.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice; the exclusive borrow of self makes this the
        // only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// Raw pointer to the first byte, for the kernel (io_uring).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was returned by alloc_zeroed with exactly this layout
        // and is freed once, here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The symbolic name of an errno (`ENOSPC`), for messages.
pub fn errno_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::ENOSPC => "ENOSPC",
        libc::EIO => "EIO",
        libc::EDQUOT => "EDQUOT",
        libc::EROFS => "EROFS",
        libc::EINVAL => "EINVAL",
        libc::EFBIG => "EFBIG",
        libc::ENOMEM => "ENOMEM",
        libc::EAGAIN => "EAGAIN",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSYS => "ENOSYS",
        libc::ENOENT => "ENOENT",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EBUSY => "EBUSY",
        libc::EINTR => "EINTR",
        libc::ELOOP => "ELOOP",
        libc::ENXIO => "ENXIO",
        _ => return None,
    })
}

/// A [`BenchError::Io`] whose context names the errno (`... failed with
/// ENOSPC`), so the record says which error happened even where the OS
/// message is translated.
pub fn io_error(what: impl Into<String>, e: io::Error) -> BenchError {
    let what = what.into();
    let context = match e.raw_os_error().and_then(errno_name) {
        Some(name) => format!("{what} failed with {name}"),
        None => format!("{what} failed"),
    };
    BenchError::io(context, e)
}

static FILE_SEQ: AtomicU64 = AtomicU64::new(0);

/// Creates an unnamed scratch file in `dir`, open for reading and writing.
///
/// The file has no name from the start (`O_TMPFILE`) where the file system
/// supports it, or is created with a unique name and unlinked at once.
/// Either way nothing can be left behind: the kernel frees the file when
/// its last descriptor closes, even if the process is killed. Returns the
/// file and whether `O_TMPFILE` was used.
pub fn scratch_file(dir: &Path) -> io::Result<(File, bool)> {
    let tmp = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match tmp {
        Ok(f) => return Ok((f, true)),
        // Not supported by this file system (or, on old kernels, by the
        // kernel, which then reports EISDIR): fall back to a named file.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) => {}
        Err(e) => return Err(e),
    }
    let n = FILE_SEQ.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(
        ".benchsuite-scratch-{}-{n}.dat",
        std::process::id()
    ));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok((f, false))
}

/// Turns on `O_DIRECT` for an open file. `EINVAL` means the file system
/// does not support direct I/O.
pub fn set_direct(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor we own; no pointers involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with an int argument on a descriptor we own.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Memory and file-offset alignment that `O_DIRECT` needs, and where the
/// numbers came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DioAlign {
    /// Alignment of the buffer's address.
    pub mem: usize,
    /// Alignment of file offsets and lengths.
    pub offset: usize,
    /// How it was found (`statx(STATX_DIOALIGN)`, the device's sysfs
    /// `logical_block_size`, or the 4096 B default).
    pub source: String,
}

/// The safe alignment when neither the file system nor the device says:
/// 4096 B covers 512 B and 4 KiB logical-sector devices alike.
pub const DEFAULT_DIO_ALIGN: usize = 4096;

/// Finds the `O_DIRECT` alignment for `file`: `statx(STATX_DIOALIGN)`
/// (Linux 6.1+, the file system's own answer), else the logical block size
/// of the device holding it (`/sys/dev/block/MAJ:MIN`), else 4096 B.
/// `Ok(None)` means the file system reports that it does not support direct
/// I/O on this file.
pub fn dio_align(file: &File) -> io::Result<Option<DioAlign>> {
    // SAFETY: statx is plain data; zeroed is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let empty = c"";
    // SAFETY: the path is a valid NUL-terminated string, AT_EMPTY_PATH makes
    // statx describe the descriptor itself, and stx is a valid out pointer.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc == 0 && stx.stx_mask & libc::STATX_DIOALIGN != 0 {
        if stx.stx_dio_offset_align == 0 {
            return Ok(None);
        }
        return Ok(Some(DioAlign {
            mem: stx.stx_dio_mem_align as usize,
            offset: stx.stx_dio_offset_align as usize,
            source: "statx(STATX_DIOALIGN)".into(),
        }));
    }
    let meta = file.metadata()?;
    if std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        // A device node's st_dev is the file system holding /dev, not the
        // device: ask the device itself.
        let n = logical_block_size(file)?;
        return Ok(Some(DioAlign {
            mem: n,
            offset: n,
            source: "the block device's logical block size (ioctl BLKSSZGET)".into(),
        }));
    }
    let dev = std::os::unix::fs::MetadataExt::dev(&meta);
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let base = format!("/sys/dev/block/{maj}:{min}");
    // A partition's directory has no queue/; its parent device's has.
    for q in ["queue/logical_block_size", "../queue/logical_block_size"] {
        let p = format!("{base}/{q}");
        if let Some(n) = std::fs::read_to_string(&p)
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .filter(|n| n.is_power_of_two())
        {
            return Ok(Some(DioAlign {
                mem: n,
                offset: n,
                source: format!("logical_block_size of block device {maj}:{min} (sysfs)"),
            }));
        }
    }
    Ok(Some(DioAlign {
        mem: DEFAULT_DIO_ALIGN,
        offset: DEFAULT_DIO_ALIGN,
        source: format!(
            "default {DEFAULT_DIO_ALIGN} B (neither statx nor sysfs gave the device's logical block size)"
        ),
    }))
}

/// What `statfs` says about the file system holding a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsInfo {
    /// Magic number (`f_type`).
    pub magic: i64,
    /// A readable name for the common ones (`ext4`, `xfs`, `tmpfs`...).
    pub name: String,
}

impl FsInfo {
    /// True for file systems that live in memory: there is no disk under them.
    pub fn is_memory(&self) -> bool {
        const RAMFS_MAGIC: i64 = 0x8584_58f6;
        #[allow(clippy::unnecessary_cast)] // TMPFS_MAGIC's type differs across targets
        let tmpfs = libc::TMPFS_MAGIC as i64;
        self.magic == tmpfs || self.magic == RAMFS_MAGIC
    }
}

/// Identifies the file system holding `path`.
pub fn fs_info(path: &Path) -> io::Result<FsInfo> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: statfs is plain data; zeroed is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a valid out pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // f_type's type differs across targets
    let magic = st.f_type as i64;
    let name = match magic {
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0x6969 => "nfs",
        0x794c_7630 => "overlayfs",
        0x2fc1_2fc1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        0x4d44 => "vfat",
        0x5346_544e => "ntfs",
        0x2011_BAB0 => "exfat",
        0xFF53_4D42 => "cifs",
        _ => "",
    };
    Ok(FsInfo {
        magic,
        name: if name.is_empty() {
            format!("file system 0x{magic:x}")
        } else {
            name.to_string()
        },
    })
}

/// Bytes available to this user on the file system holding `path`
/// (`f_bavail × f_frsize`: the root-reserved blocks are not counted).
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: statvfs is plain data; zeroed is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // field widths differ across targets
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// True if the current user may create files in `dir` (`access(W_OK|X_OK)`;
/// also false on a read-only file system).
pub fn dir_writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Reserves `len` bytes for `file` (`fallocate` mode 0), so a full file
/// system is found at once rather than after gigabytes of writes, and the
/// file gets contiguous extents. `Ok(false)` when the file system cannot
/// preallocate (the layout then just writes).
pub fn preallocate(file: &File, len: u64) -> io::Result<bool> {
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
    // SAFETY: fallocate on a descriptor we own with plain integer arguments.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP | libc::ENOSYS) => Ok(false),
        _ => Err(e),
    }
}

/// Drops the pages of bytes `[offset, offset + len)` of the file from the
/// page cache (`POSIX_FADV_DONTNEED`), so a buffered run starts cold, as
/// fio's `invalidate=1` does. Dirty pages must have been written back first
/// (`sync_all`); clean pages of other users of the file are only evicted,
/// never changed.
pub fn drop_cache(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "range too large",
        ));
    };
    // SAFETY: posix_fadvise on a descriptor we own with integer arguments.
    let rc =
        unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// `BLKGETSIZE64` from `<linux/fs.h>`: `_IOR(0x12, 114, size_t)`.
const BLKGETSIZE64: libc::Ioctl = libc::_IOR::<u64>(0x12, 114);

/// Size in bytes of the block device open as `file` (`ioctl BLKGETSIZE64`).
pub fn block_device_size(file: &File) -> io::Result<u64> {
    let mut bytes: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points
    // to a live local; the descriptor is ours.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut bytes as *mut u64) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(bytes)
}

/// Logical block size of the block device open as `file` (`ioctl
/// BLKSSZGET`): the unit `O_DIRECT` offsets, lengths and buffers must be
/// aligned to on it.
pub fn logical_block_size(file: &File) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer, which points to
    // a live local; the descriptor is ours.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            libc::BLKSSZGET,
            &mut n as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    match usize::try_from(n) {
        Ok(n) if n.is_power_of_two() => Ok(n),
        _ => Err(io::Error::other(format!(
            "the device reports a logical block size of {n} B"
        ))),
    }
}

/// How [`open_in_place`] opens a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `O_PATH`: only to learn what the path names (`fstat` on the
    /// descriptor) without opening the object itself, so a FIFO cannot
    /// block, a tape cannot rewind and no driver's open runs. A symbolic
    /// link is not followed: the descriptor then refers to the link.
    Look,
    /// Read-only: to read a block device's size, or to test a target in
    /// place without writing.
    Read,
    /// Read-write and `O_EXCL`: for a point that writes to it.
    Write,
}

/// Opens an existing path to test it in place: never created, truncated
/// or extended here. The caller classifies what was opened by `fstat` on
/// the descriptor (`File::metadata`), never by a `stat` of the path before.
///
/// No symbolic link is followed: `path` must be canonical (a symbolic link
/// the user named was resolved once, up front). The open uses
/// `openat2(RESOLVE_NO_SYMLINKS)`, which refuses a symbolic link in any
/// component, where the kernel has it (Linux 5.6+, not filtered by a
/// seccomp policy), else `O_NOFOLLOW` (the last component). A path swapped
/// for a symbolic link fails with `ELOOP` ([`Access::Look`]: returns the
/// link itself, which `fstat` shows as one).
///
/// [`Access::Write`] adds `O_EXCL` whatever the path turns out to be: on a
/// block device the kernel then refuses with `EBUSY` while it is mounted or
/// claimed by another exclusive user (a RAID or LVM member, swap), since
/// writing under a mounted file system would corrupt it; on a regular file
/// Linux ignores `O_EXCL` without `O_CREAT`. Reads and writes open
/// non-blocking (a FIFO swapped in cannot hang the open; the flag is
/// cleared afterwards) and never make a terminal the controlling one.
pub fn open_in_place(path: &Path, access: Access) -> io::Result<File> {
    use std::os::fd::{FromRawFd, OwnedFd};

    let flags = libc::O_CLOEXEC
        | libc::O_NOFOLLOW
        | match access {
            // openat2 refuses O_PATH with any flag but these.
            Access::Look => libc::O_PATH,
            Access::Read => libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
            Access::Write => libc::O_RDWR | libc::O_EXCL | libc::O_NONBLOCK | libc::O_NOCTTY,
        };
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: open_how is plain data; zeroed is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: c is a valid NUL-terminated path and how a valid open_how of
    // the size passed; openat2 only reads them.
    let mut fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    } as libc::c_int;
    if fd < 0 {
        let e = io::Error::last_os_error();
        // Without openat2 (an old kernel, or a seccomp filter that answers
        // ENOSYS or EPERM for calls it does not know): O_NOFOLLOW alone.
        if !matches!(
            e.raw_os_error(),
            Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
        ) {
            return Err(e);
        }
        // SAFETY: c is a valid NUL-terminated path; no mode without O_CREAT.
        fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: fd is a descriptor just returned by the kernel, owned by no
    // one else; OwnedFd closes it on every path from here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if access != Access::Look {
        // Back to blocking I/O for the benchmark's reads and writes.
        // SAFETY: F_GETFL on a descriptor we own; no pointers involved.
        let cur = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if cur < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: F_SETFL with an int argument on a descriptor we own.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, cur & !libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(File::from(fd))
}

/// Whether this process may pin `bytes` of memory for io_uring's
/// registered buffers: as root (the kernel does not account it to a
/// process with CAP_IPC_LOCK) or within
/// RLIMIT_MEMLOCK. fio's `--fixedbufs` fails outright where it may not.
pub fn may_lock(bytes: u64) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 {
        return false;
    }
    // rlim_t is narrower than u64 on some targets.
    #[allow(clippy::unnecessary_cast)]
    let cur = lim.rlim_cur as u64;
    lim.rlim_cur == libc::RLIM_INFINITY || cur >= bytes
}

/// The system's page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn aligned_buffers_are_aligned_and_zeroed() {
        for align in [512, 4096, 65536] {
            let mut b = AlignedBuf::new(3 * align, align).unwrap();
            assert_eq!(b.as_mut_ptr() as usize % align, 0);
            assert_eq!(b.len(), 3 * align);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice()[align] = 7;
            assert_eq!(b.as_slice()[align], 7);
        }
    }

    #[test]
    fn scratch_files_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = scratch_file(dir.path()).unwrap();
        f.write_all_at(b"hello", 0).unwrap();
        let mut back = [0u8; 5];
        f.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back, b"hello");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn errno_names_appear_in_messages() {
        let e = io_error(
            "write at offset 0",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let s = e.to_string();
        assert!(s.contains("ENOSPC") && s.contains("offset 0"), "{s}");
    }

    /// What a path swapped for a symbolic link meets at the open itself:
    /// `ELOOP`, nothing opened, nothing written.
    #[test]
    fn opens_in_place_follow_no_symbolic_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"keep me").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for access in [Access::Read, Access::Write] {
            let e = open_in_place(&link, access).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{access:?}: {e}");
        }
        // O_PATH hands back the link itself, which fstat shows as one.
        let look = open_in_place(&link, Access::Look).unwrap();
        assert!(look.metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"keep me");

        // A regular file opens for writing (O_EXCL is ignored there), and
        // the descriptor is blocking.
        let f = open_in_place(&real, Access::Write).unwrap();
        assert!(f.metadata().unwrap().is_file());
        // SAFETY: F_GETFL on a descriptor we own.
        let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);

        // A symbolic link in a parent component: refused too where the
        // kernel has openat2 (else O_NOFOLLOW guards the last one only).
        let linked_dir = dir.path().join("linked-dir");
        std::os::unix::fs::symlink(dir.path(), &linked_dir).unwrap();
        match open_in_place(&linked_dir.join("real"), Access::Write) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}"),
            Ok(_) => benchsuite_core::testing::skip(
                benchsuite_core::testing::Capability::Openat2,
                "openat2(RESOLVE_NO_SYMLINKS) is not available here: a parent symbolic link is followed",
            ),
        }
        assert_eq!(std::fs::read(&real).unwrap(), b"keep me");
    }

    #[test]
    fn a_fifo_is_looked_at_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let look = open_in_place(&fifo, Access::Look).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &look.metadata().unwrap().file_type()
        ));
        // Read-only would block on a FIFO without a writer: it does not.
        let f = open_in_place(&fifo, Access::Read).unwrap();
        assert!(!f.metadata().unwrap().is_file());
    }

    #[test]
    fn free_space_and_fs_type_are_known_for_the_temp_dir() {
        let t = std::env::temp_dir();
        assert!(free_bytes(&t).is_ok());
        assert!(!fs_info(&t).unwrap().name.is_empty());
        assert!(dir_writable(&t));
        assert!(!dir_writable(Path::new("/nonexistent/benchsuite")));
    }
}
