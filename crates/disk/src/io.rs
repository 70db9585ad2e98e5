//! `disk.io`: the benchmark descriptor and its prepared case.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use benchsuite_core::team::{Placement, Team};
use benchsuite_core::units::format_size;
use benchsuite_core::{
    BenchError, Benchmark, Case, ConfigError, Context, Meta, MetricSpec, Point, Work,
};

use crate::settings::{DirChoice, EngineKind, Settings, declare};
use crate::sys;
use crate::worker::{FINISH, Shared, Worker};

/// `ctx.options` key (`--opt disk.space-check=off`) that skips the free
/// space check, for file systems whose `statvfs` is wrong (some FUSE and
/// network file systems) and for tests that need a real ENOSPC.
pub const SPACE_CHECK_OPTION: &str = "disk.space-check";

/// The warning every `direct=off` record carries.
pub const PAGE_CACHE_WARNING: &str = "direct=off: I/O goes through the page cache, so these numbers mix cache hits and deferred writeback with device work; use direct=on to measure the device";

/// Sequential or random reads and writes with a chosen block, queue depth,
/// thread count, engine and cache mode. See the crate docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskIo;

impl Benchmark for DiskIo {
    fn meta(&self) -> Meta {
        Meta {
            id: "disk.io",
            description: "file I/O like fio: seq/random read/write, MB/s, IOPS and completion-latency percentiles (O_DIRECT by default)",
            params: declare(),
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::ops_per_sec("iops", "IO/s"),
                MetricSpec::latency("latency"),
            ],
        }
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        Settings::from_point(point).map(|_| ())
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let s = Settings::from_point(point).map_err(|e| BenchError::Other(e.to_string()))?;
        prepare(ctx, &s)
    }
}

fn prepare(ctx: &Context, s: &Settings) -> Result<Box<dyn Case>, BenchError> {
    let dir: PathBuf = match &s.dir {
        DirChoice::Auto => ctx.scratch_dir.clone(),
        DirChoice::Path(p) => p.clone(),
    };
    let shown = dir.display().to_string();
    check_target(ctx, &dir)?;
    let mut warnings = Vec::new();
    let mut notes = Vec::new();

    let fs = sys::fs_info(&dir).map_err(|e| sys::io_error(format!("statfs({shown})"), e))?;
    if fs.is_memory() {
        if s.direct {
            return Err(BenchError::Skip(format!(
                "{shown} is on {} (memory): there is no disk under it to measure; point --scratch-dir or dir= at a disk, or use direct=off to measure the page cache",
                fs.name
            )));
        }
        warnings.push(format!(
            "{shown} is on {} (memory): this measures RAM and the kernel's file code, not a disk",
            fs.name
        ));
    }

    // Free space, before anything is written.
    let total = s.file_len().saturating_mul(s.threads as u64);
    let margin = total / 100 + (1 << 20);
    let check_space = ctx
        .options
        .get(SPACE_CHECK_OPTION)
        .is_none_or(|v| v != "off");
    if check_space {
        let free =
            sys::free_bytes(&dir).map_err(|e| sys::io_error(format!("statvfs({shown})"), e))?;
        if total.saturating_add(margin) > free {
            return Err(BenchError::Unsupported(format!(
                "not enough free space in {shown} ({}): {} file(s) of {} need {} plus a {} margin, {} is available; lower size or threads, or point dir= or --scratch-dir elsewhere. Nothing was written",
                fs.name,
                s.threads,
                format_size(s.file_len()),
                format_size(total),
                format_size(margin),
                format_size(free)
            )));
        }
    } else {
        warnings.push(format!(
            "the free-space check was skipped ({SPACE_CHECK_OPTION}=off)"
        ));
    }

    // Engine.
    let mut engine = s.engine;
    if engine == EngineKind::IoUring {
        #[cfg(target_os = "linux")]
        if let Err(reason) = crate::uring::probe() {
            warnings.push(format!(
                "engine=io_uring is not available here ({reason}); ran engine=sync instead"
            ));
            engine = EngineKind::Sync;
        }
        #[cfg(not(target_os = "linux"))]
        {
            warnings.push("engine=io_uring exists on Linux only; ran engine=sync instead".into());
            engine = EngineKind::Sync;
        }
    }
    let mut qd = s.qd;
    if engine == EngineKind::Sync && qd > 1 {
        warnings.push(format!(
            "engine=sync does one I/O at a time per thread (like fio's psync, which ignores iodepth): qd={qd} was not applied; use engine=io_uring for a deeper queue, or more threads"
        ));
        qd = 1;
    }
    let nblocks = s.blocks_per_file();
    if qd as u64 > nblocks {
        warnings.push(format!(
            "qd={qd} is more than the {nblocks} blocks in each file: ran with qd={nblocks}"
        ));
        qd = nblocks as usize;
    }

    // Memory for buffers.
    let buffers = (s.block as u128) * (qd as u128) * (s.threads as u128);
    if let Some(mem) = ctx.host.memory_bytes
        && buffers > mem as u128 / 2
    {
        return Err(BenchError::Unsupported(format!(
            "block × qd × threads = {} of I/O buffers is more than half of this machine's {} of memory; lower block, qd or threads",
            format_size(buffers.min(u64::MAX as u128) as u64),
            format_size(mem)
        )));
    }

    // O_DIRECT: does the file system take it, and with which alignment?
    let page = sys::page_size();
    let mut align = page;
    let mut cache_mode = "buffered (page cache)".to_string();
    if s.direct {
        let (probe, _) = sys::scratch_file(&dir)
            .map_err(|e| sys::io_error(format!("creating a scratch file in {shown}"), e))?;
        match sys::set_direct(&probe) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Err(BenchError::Skip(format!(
                    "{shown} ({}) refuses O_DIRECT (EINVAL): direct=on cannot run here; use direct=off to measure through the page cache, or another dir",
                    fs.name
                )));
            }
            Err(e) => return Err(sys::io_error("turning on O_DIRECT", e)),
        }
        let a = sys::dio_align(&probe)
            .map_err(|e| sys::io_error("finding the O_DIRECT alignment", e))?
            .ok_or_else(|| {
                BenchError::Skip(format!(
                    "{shown} ({}) reports no direct I/O support for regular files (statx STATX_DIOALIGN is 0): use direct=off",
                    fs.name
                ))
            })?;
        if !s.block.is_multiple_of(a.offset as u64) {
            return Err(BenchError::Skip(format!(
                "block={} is not a multiple of the {} B that O_DIRECT needs on {shown} (from {}); use a multiple of it or direct=off",
                format_size(s.block),
                a.offset,
                a.source
            )));
        }
        align = align.max(a.mem);
        cache_mode = format!(
            "O_DIRECT, offsets and lengths aligned to {} B and buffers to {} B (from {})",
            a.offset, align, a.source
        );
    } else {
        warnings.push(PAGE_CACHE_WARNING.into());
        if let Some(mem) = ctx.host.memory_bytes
            && total <= mem
        {
            warnings.push(format!(
                "direct=off and the files ({} in total) fit in this machine's {} of RAM: reads are mostly served from memory once cached, and writes land in memory first",
                format_size(total),
                format_size(mem)
            ));
        }
    }

    // Say what ran where the parameters alone do not.
    if s.block_auto {
        notes.push(format!(
            "block=0 (auto): ran with block={} ({} for {} ops)",
            format_size(s.block),
            format_size(s.block),
            if s.op.random() {
                "random"
            } else {
                "sequential"
            }
        ));
    }
    if let Some(p) = s.preset {
        notes.push(format!(
            "preset {p}: ran op={} block={} rwmix={} fsync={}; the op, block, rwmix and fsync values in the parameters are the ones it replaced",
            s.op.name(),
            format_size(s.block),
            s.rwmix,
            s.fsync.label()
        ));
    }
    if s.verify {
        warnings.push(
            "verify=on: every read is checked and written blocks are read back at teardown; the check's CPU time is inside the timing".into(),
        );
    }

    notes.push(format!(
        "measured {} file(s) of {} in {shown} ({}), one per thread, created unnamed and laid out with data before timing; {cache_mode}; engine={}{}",
        s.threads,
        format_size(s.file_len()),
        fs.name,
        match engine {
            EngineKind::Sync => "sync (pread/pwrite)",
            EngineKind::IoUring => "io_uring",
        },
        if engine == EngineKind::IoUring {
            format!(", qd={qd} per thread")
        } else {
            String::new()
        }
    ));

    let sh = Arc::new(Shared {
        op: s.op,
        block: s.block as usize,
        nblocks,
        qd,
        rwmix: s.rwmix,
        fsync: s.fsync,
        verify: s.verify,
        direct: s.direct,
        engine,
        align,
        dir: dir.clone(),
        cancel: ctx.cancel.clone(),
        budget: AtomicI64::new(0),
        notes: Mutex::new(Vec::new()),
    });
    let init_sh = sh.clone();
    let team = Team::new(
        s.threads,
        Placement::Unpinned,
        move |i| Worker::new(i, init_sh.clone()),
        |w: &mut Worker, iters| w.batch(iters),
    )?;
    Ok(Box::new(DiskCase {
        team: Some(team),
        sh,
        threads: s.threads as u64,
        warnings,
        notes,
    }))
}

/// The scratch location must be a directory. A block device or an existing
/// file is refused: disk.io writes only into files it creates itself.
fn check_target(ctx: &Context, dir: &Path) -> Result<(), BenchError> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir)
        .map_err(|e| sys::io_error(format!("using scratch directory {shown}"), e))?;
    if meta.is_dir() {
        if !sys::dir_writable(dir) {
            return Err(BenchError::Unsupported(format!(
                "scratch directory {shown} is not writable by this user (or is on a read-only file system)"
            )));
        }
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    let kind = if meta.file_type().is_block_device() {
        "a block device"
    } else if meta.is_file() {
        "an existing file"
    } else {
        "not a directory"
    };
    let allowed = ctx
        .options
        .get("allow-overwrite")
        .is_some_and(|v| v == "true");
    Err(BenchError::Unsupported(if allowed {
        format!(
            "{shown} is {kind}: disk.io creates its own files inside a scratch directory; testing an existing file or device in place is not implemented, even with --allow-overwrite (nothing was written)"
        )
    } else {
        format!(
            "{shown} is {kind}: refusing to write to it (disk.io writes only into files it creates inside a scratch directory; nothing was written)"
        )
    }))
}

struct DiskCase {
    team: Option<Team>,
    sh: Arc<Shared>,
    threads: u64,
    warnings: Vec<String>,
    notes: Vec<String>,
}

impl Case for DiskCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let team = self
            .team
            .as_ref()
            .ok_or_else(|| BenchError::Other("disk.io case used after teardown".into()))?;
        let iters = iters.min(FINISH - 1);
        let budget = iters.saturating_mul(self.threads).min(i64::MAX as u64) as i64;
        self.sh
            .budget
            .store(budget, std::sync::atomic::Ordering::SeqCst);
        team.run(iters)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        let Some(team) = self.team.take() else {
            return Ok(());
        };
        // Drain in-flight I/O and verify written blocks, then join the
        // workers: dropping each worker closes its unnamed file, which the
        // kernel then frees.
        let r = team.run(FINISH);
        team.shutdown();
        r.map(|_| ())
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn notes(&self) -> Vec<String> {
        let mut n = self.notes.clone();
        n.extend(
            self.sh
                .notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        n
    }
}

impl Drop for DiskCase {
    fn drop(&mut self) {
        if let Some(team) = self.team.take() {
            let _ = team.run(FINISH);
            team.shutdown();
        }
    }
}
