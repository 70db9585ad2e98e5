//! What `dir` names, and testing an existing file or block device in place.
//!
//! A directory (the usual case) gets unnamed scratch files. An existing
//! regular file or block device is tested in place, as fio's `--filename`
//! does: read-only points (`op=read|randread`, `verify=off`) read it as it
//! is; a point that writes needs `--allow-overwrite`. Without the flag such
//! a point is a usage error found by `validate`, before anything runs, so
//! nothing is ever written. In place the target is never created,
//! truncated, extended or deleted: each thread uses its own region
//! `[i × size, (i + 1) × size)` of it.
//!
//! Everything here only looks (`stat`, and for a block device an open
//! without write access and `ioctl(BLKGETSIZE64)`); nothing writes.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use benchsuite_core::units::format_size;
use benchsuite_core::{BenchError, ConfigError, Context};

use crate::settings::{DirChoice, Settings};
use crate::sys;

/// `ctx.options` key the CLI sets to `true` for `--allow-overwrite`.
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

/// An existing file or block device to test in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InPlace {
    /// The path as given.
    pub path: PathBuf,
    /// File or device.
    pub kind: Kind,
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
    /// The parameters do not fit the target (a writing op without
    /// `--allow-overwrite`, a target shorter than one block, threads that
    /// cannot have disjoint regions): a usage error, reported before the
    /// run starts.
    Usage(ConfigError),
    /// The target could not be examined (it vanished, `stat` failed): the
    /// record fails with this error.
    Io(BenchError),
}

/// True when the run was given `--allow-overwrite`.
pub fn overwrite_allowed(ctx: &Context) -> bool {
    ctx.options
        .get(ALLOW_OVERWRITE_OPTION)
        .is_some_and(|v| benchsuite_core::bench::parse_bool(v).unwrap_or(false))
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

/// Examines the target of a point without writing anything, and decides
/// whether and how the point may use it.
pub fn examine(ctx: &Context, s: &Settings) -> Result<Target, Refusal> {
    let path = path(ctx, s);
    let shown = path.display().to_string();
    let via = match s.dir {
        DirChoice::Auto => " (dir=auto: the --scratch-dir)",
        DirChoice::Path(_) => "",
    };
    let meta = std::fs::metadata(&path)
        .map_err(|e| Refusal::Io(sys::io_error(format!("using {shown}{via}"), e)))?;
    if meta.is_dir() {
        return Ok(Target::Dir(path));
    }
    let kind = if meta.file_type().is_block_device() {
        Kind::BlockDevice
    } else if meta.is_file() {
        Kind::File
    } else {
        return Err(usage(
            "dir",
            &shown,
            format!(
                "is{via} neither a directory, a regular file nor a block device; give a directory for scratch files"
            ),
        ));
    };
    let writes = s.op.writes() || s.verify;
    if writes && !overwrite_allowed(ctx) {
        let why = if s.op.writes() {
            format!("op={} writes", s.op.name())
        } else {
            "verify=on writes its pattern first".to_string()
        };
        return Err(usage(
            "dir",
            &shown,
            format!(
                "is{via} {}: {why}, which would overwrite its contents; refusing without --allow-overwrite (nothing was written). Give --allow-overwrite to test it in place, a read-only op (read, randread) to read it without writing, or a directory for scratch files",
                kind.with_article()
            ),
        ));
    }
    let len = match kind {
        Kind::File => meta.len(),
        Kind::BlockDevice => sys::open_in_place(&path, false, true)
            .and_then(|f| sys::block_device_size(&f))
            .map_err(|e| {
                usage(
                    "dir",
                    &shown,
                    format!("is{via} a block device whose size cannot be read: {e}"),
                )
            })?,
    };
    let block = s.block;
    if len < block {
        return Err(usage(
            "dir",
            &shown,
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
        path,
        kind,
        len,
        region,
        allocated: (kind == Kind::File).then(|| meta.blocks().saturating_mul(512)),
        writes,
    }))
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
