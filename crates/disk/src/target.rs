//! What `dir` names, and testing an existing file or block device in place.
//!
//! A directory (the usual case) gets unnamed scratch files. An existing
//! regular file or block device is tested in place, as fio's `--filename`
//! does: read-only points (`op=read|randread`, `verify=off`) read it as it
//! is; a point that writes needs `--allow-overwrite=PATH` naming it. Without
//! that such a point is a usage error found by `validate`, before anything
//! runs, so nothing is ever written. In place the target is never created,
//! truncated, extended or deleted: each thread uses its own region
//! `[i × size, (i + 1) × size)` of it.
//!
//! ## Opened first, then classified
//!
//! A path is resolved once, when the run is planned (`validate`): a
//! symbolic link the user named is followed there (`canonicalize`) and the
//! canonical path is what the record shows and what is opened from then on.
//! Every open after that follows no symbolic link at all
//! ([`sys::open_in_place`]: `openat2(RESOLVE_NO_SYMLINKS)`, else
//! `O_NOFOLLOW`), and what it opened is classified by `fstat` on the
//! descriptor, never by a `stat` of the path before. The type, device and
//! inode seen when the run was planned are kept for the run (`checked`),
//! and each later open compares them: a path swapped for a symbolic link,
//! another file or a block device in between is refused, naming what it was
//! and what it is now, and nothing is written. A writable open adds
//! `O_EXCL`, so a block device that is mounted or otherwise claimed is
//! refused (`EBUSY`).
//!
//! ## `--allow-overwrite`
//!
//! The option's value names what it authorises: `--allow-overwrite=PATH` (a
//! comma-separated list for several), compared by canonical path or by
//! device and inode, so a symbolic link to the target, or the target named
//! through one, matches. A write test on any other in-place target is
//! refused, naming the flag and the path. The bare flag (`on`, `true`)
//! authorises a single target: the first written one the plan meets; a
//! second distinct one is refused, naming both.
//!
//! Examining only looks: an `O_PATH` descriptor, and for a block device an
//! open without write access and `ioctl(BLKGETSIZE64)`; nothing writes.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use benchsuite_core::units::format_size;
use benchsuite_core::{BenchError, ConfigError, Context};

use crate::settings::{DirChoice, Settings};
use crate::sys::{self, Access};

/// `ctx.options` key the CLI sets from `--allow-overwrite`: the path(s) of
/// the targets it authorises, comma-separated, or `on` for the bare flag.
pub const ALLOW_OVERWRITE_OPTION: &str = "allow-overwrite";

/// What kind of existing object is tested in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A block device node (`/dev/sdb`, `/dev/loop0`).
    BlockDevice,
}

impl Kind {
    /// `existing file` / `block device`, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Kind::File => "existing file",
            Kind::BlockDevice => "block device",
        }
    }

    /// `an existing file` / `a block device`.
    pub fn with_article(self) -> &'static str {
        match self {
            Kind::File => "an existing file",
            Kind::BlockDevice => "a block device",
        }
    }
}

/// What `fstat` on a descriptor says it is: the file type and which object
/// (the device holding it, its inode, and a device node's device number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// `st_mode & S_IFMT`.
    fmt: u32,
    dev: u64,
    ino: u64,
    rdev: u64,
}

impl Identity {
    /// The identity in `meta`, which must come from a descriptor
    /// (`File::metadata`).
    pub fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            fmt: meta.mode() & libc::S_IFMT,
            dev: meta.dev(),
            ino: meta.ino(),
            rdev: meta.rdev(),
        }
    }

    fn is(&self, fmt: u32) -> bool {
        self.fmt == fmt
    }

    /// The same object: type, device, inode and device number.
    pub fn same_object(&self, other: &Identity) -> bool {
        self == other
    }

    /// Still usable as checked: the same object, or for a directory any
    /// directory (scratch files in a directory overwrite nothing, so one
    /// re-created in between is harmless).
    fn still(&self, checked: &Identity) -> bool {
        if checked.is(libc::S_IFDIR) {
            self.is(libc::S_IFDIR)
        } else {
            self.same_object(checked)
        }
    }

    /// `a regular file (inode 12 on device 259:1)`, `block device 7:0`...
    pub fn describe(&self) -> String {
        let dev = |d: u64| format!("{}:{}", libc::major(d), libc::minor(d));
        match self.fmt {
            libc::S_IFREG => format!(
                "a regular file (inode {} on device {})",
                self.ino,
                dev(self.dev)
            ),
            libc::S_IFBLK => format!("block device {}", dev(self.rdev)),
            libc::S_IFDIR => "a directory".into(),
            libc::S_IFLNK => "a symbolic link".into(),
            libc::S_IFCHR => format!("character device {}", dev(self.rdev)),
            libc::S_IFIFO => "a FIFO".into(),
            libc::S_IFSOCK => "a socket".into(),
            _ => "a file of unknown type".into(),
        }
    }
}

/// An existing file or block device to test in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InPlace {
    /// The canonical path, resolved once when the run was planned: what is
    /// opened (following no symbolic link) and shown.
    pub path: PathBuf,
    /// The path as given (`dir`, or with `dir=auto` the scratch directory).
    pub given: PathBuf,
    /// File or device.
    pub kind: Kind,
    /// What `fstat` said when the run was planned; every open compares.
    pub id: Identity,
    /// Its length: the file's size, or the device's (`BLKGETSIZE64`).
    pub len: u64,
    /// Bytes each thread uses, whole blocks: `size` rounded down to
    /// blocks, capped by the target's length. Thread `i` uses
    /// `[i × region, (i + 1) × region)`.
    pub region: u64,
    /// Bytes the file has allocated on disk (`st_blocks × 512`); regular
    /// files only.
    pub allocated: Option<u64>,
    /// True when the point writes to it (a writing op, or `verify=on`,
    /// which writes its pattern first).
    pub writes: bool,
}

impl InPlace {
    /// The bytes the threads use together: `[0, span)`.
    pub fn span(&self, threads: usize) -> u64 {
        self.region * threads as u64
    }

    /// A regular file shorter on disk than its length has holes (or
    /// compressed extents): reading a hole returns zeros without touching
    /// the device.
    pub fn sparse(&self) -> bool {
        self.allocated.is_some_and(|a| a < self.len)
    }

    /// The canonical path, and the path given where it differs:
    /// `/dev/sdb (given as /dev/disk/by-id/ata-X)`.
    pub fn shown(&self) -> String {
        if self.path == self.given {
            self.path.display().to_string()
        } else {
            format!(
                "{} (given as {})",
                self.path.display(),
                self.given.display()
            )
        }
    }
}

/// What `dir` (or, with `dir=auto`, the run's scratch directory) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A directory: scratch files are created in it.
    Dir(PathBuf),
    /// An existing file or block device, tested in place.
    InPlace(InPlace),
}

/// Why a target cannot be used.
#[derive(Debug)]
pub enum Refusal {
    /// The parameters do not fit the target (a writing op that
    /// `--allow-overwrite` does not authorise, a target shorter than one
    /// block, threads that cannot have disjoint regions): a usage error,
    /// reported before the run starts.
    Usage(ConfigError),
    /// The path names another object than when it was checked (swapped for
    /// a symbolic link, another file, a device): nothing was written.
    Changed(String),
    /// The target could not be examined (it vanished, `stat` failed): the
    /// record fails with this error.
    Io(BenchError),
}

/// When a target is examined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// While the run is planned (`validate`): the path is resolved, and
    /// what it names is kept for the run.
    Plan,
    /// When the point is set up (`prepare`): the path resolved while
    /// planning is used, and what it names now must be what it named then.
    Run,
}

/// What `--allow-overwrite` authorises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    /// Not given (or `off`): no target is overwritten.
    Nothing,
    /// The bare flag (`on`): one target, the first written one met.
    Single,
    /// `--allow-overwrite=PATH[,PATH...]`: these and no other.
    Paths(Vec<PathBuf>),
}

impl Allowance {
    /// Reads the option's value: on/off, or comma-separated paths.
    pub fn parse(value: &str) -> Result<Allowance, benchsuite_core::ValueError> {
        Self::parse_text(value).map_err(Into::into)
    }

    fn parse_text(value: &str) -> Result<Allowance, String> {
        if let Ok(on) = benchsuite_core::bench::parse_bool(value) {
            return Ok(if on {
                Allowance::Single
            } else {
                Allowance::Nothing
            });
        }
        let paths: Vec<PathBuf> = value
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect();
        if paths.is_empty() {
            return Err(
                "give the path of each existing file or block device it may overwrite, comma-separated (e.g. --allow-overwrite=/dev/sdb)"
                    .into(),
            );
        }
        Ok(Allowance::Paths(paths))
    }

    /// The run's: absent or unreadable means nothing (an unreadable value
    /// was refused with the plan).
    fn of(ctx: &Context) -> Allowance {
        ctx.options
            .get(ALLOW_OVERWRITE_OPTION)
            .and_then(|v| Allowance::parse(v).ok())
            .unwrap_or(Allowance::Nothing)
    }
}

/// Checks an `--allow-overwrite` value when the run is planned: `on`/`off`,
/// or paths of existing files or block devices (not directories, which are
/// never overwritten).
pub fn check_allow_overwrite(value: &str) -> Result<(), benchsuite_core::ValueError> {
    check_allow_overwrite_text(value).map_err(Into::into)
}

fn check_allow_overwrite_text(value: &str) -> Result<(), String> {
    if let Allowance::Paths(paths) = Allowance::parse(value)? {
        for p in &paths {
            let meta = std::fs::metadata(p).map_err(|e| {
                format!(
                    "{}: cannot use it ({e}); name each existing file or block device it may overwrite",
                    p.display()
                )
            })?;
            if meta.is_dir() {
                return Err(format!(
                    "{} is a directory: scratch files in a directory overwrite nothing and need no flag; --allow-overwrite names existing files or block devices tested in place",
                    p.display()
                ));
            }
        }
    }
    Ok(())
}

/// True when `allowed` (a path the user named) names the target: the same
/// canonical path, or the same object (a hard link, a bind mount).
fn names(allowed: &Path, canonical: &Path, id: &Identity) -> bool {
    std::fs::canonicalize(allowed).is_ok_and(|c| c == canonical)
        || std::fs::metadata(allowed).is_ok_and(|m| Identity::of(&m).same_object(id))
}

/// The path the point uses: `dir`, or with `dir=auto` the run's scratch
/// directory.
pub fn path(ctx: &Context, s: &Settings) -> PathBuf {
    match &s.dir {
        DirChoice::Auto => ctx.scratch_dir.clone(),
        DirChoice::Path(p) => p.clone(),
    }
}

fn usage(param: &str, value: impl ToString, reason: String) -> Refusal {
    Refusal::Usage(ConfigError::InvalidValue {
        param: param.to_string(),
        value: value.to_string(),
        reason,
    })
}

/// The words for a path that names another object than when it was
/// checked.
fn changed(shown: &str, was: &Identity, now: &str) -> String {
    let refusal = if now == "a symbolic link" {
        "refusing to follow it"
    } else {
        "refusing to use it"
    };
    format!(
        "{shown} changed after it was checked: it was {} and is now {now}; {refusal}, nothing was written",
        was.describe()
    )
}

/// Examines the target of a point without writing anything, and decides
/// whether and how the point may use it. See the module docs for what
/// [`Phase::Plan`] keeps and [`Phase::Run`] compares.
pub fn examine(ctx: &Context, s: &Settings, phase: Phase) -> Result<Target, Refusal> {
    let given = path(ctx, s);
    let given_shown = given.display().to_string();
    let auto = matches!(s.dir, DirChoice::Auto);
    let checked = match phase {
        Phase::Plan => None,
        Phase::Run => checked::lookup(ctx, &given),
    };
    // Resolved once, while planning; at run time never again: a path
    // swapped for a symbolic link since then is not followed.
    let canonical = match &checked {
        Some((canonical, _)) => canonical.clone(),
        None => std::fs::canonicalize(&given).map_err(|e| {
            Refusal::Io(sys::io_error(
                format!(
                    "using {given_shown}{}",
                    if auto {
                        " (dir=auto: the --scratch-dir)"
                    } else {
                        ""
                    }
                ),
                e,
            ))
        })?,
    };
    let mut via = String::new();
    if auto {
        via.push_str(" (dir=auto: the --scratch-dir)");
    }
    if canonical != given {
        via.push_str(&format!(" (resolved to {})", canonical.display()));
    }
    let shown = if canonical == given {
        given_shown.clone()
    } else {
        format!("{} (given as {given_shown})", canonical.display())
    };

    // Open first (O_PATH: the object itself is not opened), then ask the
    // descriptor what it is.
    let look = sys::open_in_place(&canonical, Access::Look).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            Refusal::Changed(format!(
                "{shown}: a symbolic link appeared in its path after it was resolved; refusing to follow it (nothing was written)"
            ))
        } else {
            Refusal::Io(sys::io_error(format!("opening {shown}{via}"), e))
        }
    })?;
    let meta = look
        .metadata()
        .map_err(|e| Refusal::Io(sys::io_error(format!("fstat of {shown}"), e)))?;
    let id = Identity::of(&meta);
    match &checked {
        Some((_, was)) if !id.still(was) => {
            return Err(Refusal::Changed(changed(&shown, was, &id.describe())));
        }
        Some(_) => {}
        None => checked::record(ctx, &given, &canonical, id),
    }

    let kind = match id.fmt {
        libc::S_IFDIR => return Ok(Target::Dir(given)),
        libc::S_IFBLK => Kind::BlockDevice,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => {
            // Only a path swapped since it was resolved: canonical paths
            // hold no symbolic link.
            return Err(Refusal::Changed(format!(
                "{shown} became a symbolic link after it was resolved; refusing to follow it (nothing was written)"
            )));
        }
        _ => {
            return Err(usage(
                "dir",
                &given_shown,
                format!(
                    "is{via} {}: neither a directory, a regular file nor a block device; give a directory for scratch files",
                    id.describe()
                ),
            ));
        }
    };
    let writes = s.op.writes() || s.verify;
    if writes {
        let why = if s.op.writes() {
            format!("op={} writes", s.op)
        } else {
            "verify=on writes its pattern first".to_string()
        };
        let c = canonical.display();
        let refusal = match Allowance::of(ctx) {
            Allowance::Nothing => Some(format!(
                "refusing without --allow-overwrite (nothing was written). Give --allow-overwrite={c} to test it in place, a read-only op (read, randread) to read it without writing, or a directory for scratch files"
            )),
            Allowance::Paths(list) => {
                if list.iter().any(|a| names(a, &canonical, &id)) {
                    None
                } else {
                    let list = list
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(",");
                    Some(format!(
                        "--allow-overwrite={list} does not name it: refusing (nothing was written). To overwrite it too, name it: --allow-overwrite={list},{c}"
                    ))
                }
            }
            Allowance::Single => checked::claim(ctx, &given, &id).err().map(|other| {
                let other = other.display();
                format!(
                    "the bare --allow-overwrite authorises a single target, and this run also writes {other}: refusing (nothing was written). Name each target it may overwrite: --allow-overwrite={other},{c}"
                )
            }),
        };
        if let Some(tail) = refusal {
            return Err(usage(
                "dir",
                &given_shown,
                format!(
                    "is{via} {}: {why}, which would overwrite its contents; {tail}",
                    kind.with_article()
                ),
            ));
        }
    }
    let len = match kind {
        Kind::File => meta.len(),
        Kind::BlockDevice => {
            let f = sys::open_in_place(&canonical, Access::Read).map_err(|e| {
                usage(
                    "dir",
                    &given_shown,
                    format!("is{via} a block device whose size cannot be read: {e}"),
                )
            })?;
            let now = f
                .metadata()
                .map_err(|e| Refusal::Io(sys::io_error(format!("fstat of {shown}"), e)))?;
            let now = Identity::of(&now);
            if !now.same_object(&id) {
                return Err(Refusal::Changed(changed(&shown, &id, &now.describe())));
            }
            sys::block_device_size(&f).map_err(|e| {
                usage(
                    "dir",
                    &given_shown,
                    format!("is{via} a block device whose size cannot be read: {e}"),
                )
            })?
        }
    };
    let block = s.block;
    if len < block {
        return Err(usage(
            "dir",
            &given_shown,
            format!(
                "is{via} {} of {len} B, shorter than one block ({}): nothing to test; use a smaller block or a larger target",
                kind.with_article(),
                format_size(block)
            ),
        ));
    }
    let whole = len / block * block;
    let region = if s.threads == 1 {
        s.file_len().min(whole)
    } else {
        let need = s.file_len().saturating_mul(s.threads as u64);
        if need > len {
            let fits = len / s.threads as u64 / block * block;
            return Err(usage(
                "threads",
                s.threads,
                format!(
                    "{} threads need disjoint regions of size={} each ({} in all), but {shown} ({}) holds {}; {}",
                    s.threads,
                    format_size(s.file_len()),
                    format_size(need),
                    kind.label(),
                    format_size(len),
                    if fits >= block {
                        format!("lower size to at most {fits} (bytes), or threads")
                    } else {
                        "lower threads".to_string()
                    }
                ),
            ));
        }
        s.file_len()
    };
    Ok(Target::InPlace(InPlace {
        path: canonical,
        given,
        kind,
        id,
        len,
        region,
        allocated: (kind == Kind::File).then(|| meta.blocks().saturating_mul(512)),
        writes,
    }))
}

/// Opens the target for the point's threads, read-write (`O_EXCL`) when it
/// writes, following no symbolic link, and checks with `fstat` that the
/// descriptor is the object examined. A mismatch, or a busy device, fails
/// the record with nothing written.
pub fn open(t: &InPlace) -> Result<File, BenchError> {
    let shown = t.shown();
    let access = if t.writes {
        Access::Write
    } else {
        Access::Read
    };
    let f = sys::open_in_place(&t.path, access).map_err(|e| match e.raw_os_error() {
        Some(libc::EBUSY) => BenchError::Failed(format!(
            "{shown} is in use (mounted, or claimed by RAID, LVM or swap): the kernel refused an exclusive open (EBUSY), and writing under a file system would corrupt it; unmount it first, or test a file on it. Nothing was written"
        )),
        Some(libc::ELOOP) => BenchError::Failed(changed(&shown, &t.id, "a symbolic link")),
        _ => sys::io_error(
            format!(
                "opening {shown} to test it in place ({})",
                if t.writes { "read-write" } else { "read-only" }
            ),
            e,
        ),
    })?;
    let now = f
        .metadata()
        .map_err(|e| sys::io_error(format!("fstat of {shown}"), e))?;
    let now = Identity::of(&now);
    if !now.same_object(&t.id) {
        return Err(BenchError::Failed(changed(&shown, &t.id, &now.describe())));
    }
    Ok(f)
}

/// A directory target must be writable: scratch files are created in it.
pub fn check_dir(dir: &Path) -> Result<(), BenchError> {
    if !sys::dir_writable(dir) {
        return Err(BenchError::Failed(format!(
            "scratch directory {} is not writable by this user (or is on a read-only file system)",
            dir.display()
        )));
    }
    Ok(())
}

/// What each plan's `validate` saw, kept for its run: per path given, the
/// canonical path and the identity `fstat` reported, and which targets the
/// bare `--allow-overwrite` already authorised.
///
/// `validate` and `prepare` get the same [`Context`], whose host is an
/// `Arc` made for that plan: entries are keyed by it. An entry holds a
/// `Weak` to it, which keeps the allocation (not the host) alive, so its
/// address cannot be reused by a later plan; entries of finished plans are
/// dropped on the next access.
mod checked {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex, MutexGuard, Weak};

    use benchsuite_core::{Context, Host};

    use crate::target::Identity;

    struct Entry {
        plan: Weak<Host>,
        given: PathBuf,
        canonical: PathBuf,
        id: Identity,
        /// The bare flag authorised writing to it.
        written: bool,
    }

    static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

    fn entries() -> MutexGuard<'static, Vec<Entry>> {
        let mut g = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|e| e.plan.strong_count() > 0);
        g
    }

    fn of(e: &Entry, ctx: &Context) -> bool {
        std::ptr::eq(e.plan.as_ptr(), Arc::as_ptr(&ctx.host))
    }

    /// The canonical path and identity `validate` saw for `given`.
    pub fn lookup(ctx: &Context, given: &Path) -> Option<(PathBuf, Identity)> {
        entries()
            .iter()
            .find(|e| of(e, ctx) && e.given == given)
            .map(|e| (e.canonical.clone(), e.id))
    }

    /// Keeps what `validate` saw for `given`; the latest check wins.
    pub fn record(ctx: &Context, given: &Path, canonical: &Path, id: Identity) {
        let mut g = entries();
        match g.iter_mut().find(|e| of(e, ctx) && e.given == given) {
            Some(e) => {
                if e.id != id || e.canonical != canonical {
                    e.canonical = canonical.to_path_buf();
                    e.id = id;
                    e.written = false;
                }
            }
            None => g.push(Entry {
                plan: Arc::downgrade(&ctx.host),
                given: given.to_path_buf(),
                canonical: canonical.to_path_buf(),
                id,
                written: false,
            }),
        }
    }

    /// The bare `--allow-overwrite`: authorises writing to `given` unless
    /// the plan already writes to another object, whose canonical path is
    /// the `Err`.
    pub fn claim(ctx: &Context, given: &Path, id: &Identity) -> Result<(), PathBuf> {
        let mut g = entries();
        if let Some(other) = g
            .iter()
            .find(|e| of(e, ctx) && e.written && !e.id.same_object(id))
        {
            return Err(other.canonical.clone());
        }
        if let Some(e) = g.iter_mut().find(|e| of(e, ctx) && e.given == given) {
            e.written = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::{Host, Point, Value};
    use std::sync::Arc;

    fn ctx(allow: Option<&str>) -> Context {
        let mut ctx = Context::new(Arc::new(Host::default()));
        if let Some(a) = allow {
            ctx.options.insert(ALLOW_OVERWRITE_OPTION.into(), a.into());
        }
        ctx
    }

    fn settings(dir: &Path, op: &str) -> Settings {
        let mut p = Point::default();
        for s in crate::settings::declare() {
            p.set(&s.name, s.default.clone());
        }
        p.set("dir", Value::Str(dir.to_str().unwrap().into()));
        p.set("op", Value::Str(op.into()));
        p.set("size", Value::Int(1 << 20));
        Settings::from_point(&p).unwrap()
    }

    fn in_place(t: Result<Target, Refusal>) -> InPlace {
        match t {
            Ok(Target::InPlace(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn allowance_values() {
        assert_eq!(Allowance::parse("on"), Ok(Allowance::Single));
        assert_eq!(Allowance::parse("true"), Ok(Allowance::Single));
        assert_eq!(Allowance::parse("off"), Ok(Allowance::Nothing));
        assert_eq!(
            Allowance::parse(" /a , /dev/b,"),
            Ok(Allowance::Paths(vec!["/a".into(), "/dev/b".into()]))
        );
        assert!(Allowance::parse(" , ").is_err());
    }

    /// The last open, just before the threads start: a path swapped after
    /// it was examined is refused by the descriptor's fstat (or, for a
    /// symbolic link, not followed at all), and nothing is written.
    #[test]
    fn the_open_for_the_run_refuses_a_path_swapped_after_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let other = dir.path().join("other");
        std::fs::write(&a, vec![1u8; 2 << 20]).unwrap();
        std::fs::write(&other, vec![2u8; 2 << 20]).unwrap();
        let ctx = ctx(Some(a.to_str().unwrap()));
        let s = settings(&a, "randwrite");
        let t = in_place(examine(&ctx, &s, Phase::Plan));
        assert!(t.writes && t.kind == Kind::File);
        let t = in_place(examine(&ctx, &s, Phase::Run));
        assert!(open(&t).is_ok(), "unchanged: opens");

        // Swapped for a symbolic link to another file.
        std::fs::rename(&a, dir.path().join("a.orig")).unwrap();
        std::os::unix::fs::symlink(&other, &a).unwrap();
        let e = open(&t).unwrap_err().to_string();
        assert!(
            e.contains("is now a symbolic link") && e.contains("refusing to follow it"),
            "{e}"
        );
        let e = match examine(&ctx, &s, Phase::Run) {
            Err(Refusal::Changed(e)) => e,
            other => panic!("{other:?}"),
        };
        assert!(e.contains("symbolic link"), "{e}");

        // Swapped for another regular file.
        std::fs::remove_file(&a).unwrap();
        std::fs::copy(&other, &a).unwrap();
        let e = open(&t).unwrap_err().to_string();
        assert!(
            e.contains("changed after it was checked")
                && e.contains("is now a regular file (inode")
                && e.contains("nothing was written"),
            "{e}"
        );
        assert!(std::fs::read(&other).unwrap().iter().all(|&b| b == 2));
        assert!(std::fs::read(&a).unwrap().iter().all(|&b| b == 2));
    }

    #[test]
    fn a_directory_re_created_between_plan_and_run_is_still_a_directory() {
        let top = tempfile::tempdir().unwrap();
        let d = top.path().join("d");
        std::fs::create_dir(&d).unwrap();
        let ctx = ctx(None);
        let s = settings(&d, "randwrite");
        assert!(matches!(examine(&ctx, &s, Phase::Plan), Ok(Target::Dir(_))));
        std::fs::remove_dir(&d).unwrap();
        std::fs::create_dir(&d).unwrap();
        assert!(matches!(examine(&ctx, &s, Phase::Run), Ok(Target::Dir(_))));
        // ... but not a directory swapped for a file.
        std::fs::remove_dir(&d).unwrap();
        std::fs::write(&d, vec![0u8; 2 << 20]).unwrap();
        match examine(&ctx, &s, Phase::Run) {
            Err(Refusal::Changed(e)) => assert!(e.contains("it was a directory"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_one_plan_checked_is_not_another_plans() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, vec![1u8; 2 << 20]).unwrap();
        std::fs::write(&b, vec![2u8; 2 << 20]).unwrap();
        // The bare flag in one plan claims A; another plan may write B.
        let one = ctx(Some("on"));
        in_place(examine(&one, &settings(&a, "write"), Phase::Plan));
        match examine(&one, &settings(&b, "write"), Phase::Plan) {
            Err(Refusal::Usage(e)) => {
                assert!(e.to_string().contains("bare --allow-overwrite"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        let two = ctx(Some("on"));
        in_place(examine(&two, &settings(&b, "write"), Phase::Plan));
        drop(one);
        drop(two);
        assert!(
            checked::lookup(&ctx(None), &a).is_none(),
            "a new plan starts empty"
        );
    }
}
