//! `disk.io`: the benchmark descriptor and its prepared case.

use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use benchsuite_core::team::{Placement, Team};
use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Meta, MetricSpec, Point, Value, Work,
};

use crate::settings::{EngineKind, Settings, declare};
use crate::sys;
use crate::target::{self, Kind, Refusal, Target};
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

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let s = Settings::from_point(point)?;
        match target::examine(ctx, &s) {
            Err(Refusal::Usage(e)) => Err(e),
            // A target that cannot be examined (a --scratch-dir that does
            // not exist) fails its record in `prepare`, as any I/O error.
            Ok(_) | Err(Refusal::Io(_)) => Ok(()),
        }
    }

    /// The mount and block device under the scratch directory (the
    /// default target); each record's notes name its own target's.
    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::device::facts(&ctx.scratch_dir))
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let s = Settings::from_point(point).map_err(|e| BenchError::Other(e.to_string()))?;
        prepare(ctx, &s)
    }
}

/// What holds the target: the mount and the block device under it; for a
/// paravirtual disk, what that means for the numbers.
fn storage_note(path: &std::path::Path) -> Option<String> {
    // A device node's mount is the one holding /dev, not the data's.
    let is_device = std::fs::metadata(path)
        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()));
    let mount = if is_device {
        None
    } else {
        crate::device::mount_of(path)
    };
    let dev = crate::device::block_device_of(path);
    let mut parts = Vec::new();
    if let Some(m) = &mount {
        parts.push(format!(
            "{} mounted on {} ({}, {})",
            m.source,
            m.mount_point.display(),
            m.fstype,
            m.options
        ));
    }
    match &dev {
        Some(d) => {
            parts.push(format!("block device {}", d.describe()));
            if d.paravirtual() {
                parts.push(
                    "a paravirtual disk: the numbers are the host's storage stack (image file, host cache, network storage) as this guest sees it, not a drive's".into(),
                );
            }
        }
        None if mount.is_some() => parts.push("no local block device under it".into()),
        None => {}
    }
    (!parts.is_empty()).then(|| format!("storage: {}", parts.join("; ")))
}

fn engine_name(e: EngineKind) -> &'static str {
    match e {
        EngineKind::Sync => "sync",
        EngineKind::IoUring => "io_uring",
    }
}

fn prepare(ctx: &Context, s: &Settings) -> Result<Box<dyn Case>, BenchError> {
    // `validate` refused the usage errors before the run; seeing one here
    // means the target changed since (or validate was bypassed).
    let (dir, in_place) = match target::examine(ctx, s) {
        Ok(Target::Dir(d)) => {
            target::check_dir(&d)?;
            (d, None)
        }
        Ok(Target::InPlace(t)) => (t.path.clone(), Some(t)),
        Err(Refusal::Usage(e)) => return Err(BenchError::Unsupported(e.to_string())),
        Err(Refusal::Io(e)) => return Err(e),
    };
    let shown = dir.display().to_string();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();

    // What holds the data: a file system (memory ones have no disk), or
    // the block device itself.
    let fs_name = if in_place
        .as_ref()
        .is_some_and(|t| t.kind == Kind::BlockDevice)
    {
        "block device".to_string()
    } else {
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
        fs.name
    };

    // Bytes each thread uses: its own scratch file, or its region of the
    // target (capped by the target's length).
    let file_len = in_place.as_ref().map_or(s.file_len(), |t| t.region);
    let nblocks = file_len / s.block;
    let total = file_len.saturating_mul(s.threads as u64);

    // Free space, before anything is written (scratch files only: in place
    // nothing grows).
    let check_space = ctx
        .options
        .get(SPACE_CHECK_OPTION)
        .is_none_or(|v| v != "off");
    if in_place.is_none() {
        if check_space {
            let margin = total / 100 + (1 << 20);
            let free =
                sys::free_bytes(&dir).map_err(|e| sys::io_error(format!("statvfs({shown})"), e))?;
            if total.saturating_add(margin) > free {
                return Err(BenchError::Unsupported(format!(
                    "not enough free space in {shown} ({fs_name}): {} file(s) of {} need {} plus a {} margin, {} is available; lower size or threads, or point dir= or --scratch-dir elsewhere. Nothing was written",
                    s.threads,
                    format_size(file_len),
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
    if qd as u64 > nblocks {
        warnings.push(format!(
            "qd={qd} is more than the {nblocks} blocks each thread has: ran with qd={nblocks}"
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

    // The target tested in place is opened once; the threads share it.
    let target_file = match &in_place {
        None => None,
        Some(t) => Some(
            sys::open_in_place(&t.path, t.writes, t.kind == Kind::BlockDevice).map_err(|e| {
                if t.kind == Kind::BlockDevice && e.raw_os_error() == Some(libc::EBUSY) {
                    BenchError::Unsupported(format!(
                        "{shown} is in use (mounted, or claimed by RAID, LVM or swap): the kernel refused an exclusive open (EBUSY), and writing under a file system would corrupt it; unmount it first, or test a file on it. Nothing was written"
                    ))
                } else {
                    sys::io_error(
                        format!(
                            "opening {shown} to test it in place ({})",
                            if t.writes { "read-write" } else { "read-only" }
                        ),
                        e,
                    )
                }
            })?,
        ),
    };

    // O_DIRECT: does the file system take it, and with which alignment?
    let page = sys::page_size();
    let mut align = page;
    let mut cache_mode = "buffered (page cache)".to_string();
    if s.direct {
        let probe = match &target_file {
            // The same open file description as the threads' descriptors:
            // O_DIRECT set here holds for all of them.
            Some(f) => f
                .try_clone()
                .map_err(|e| sys::io_error(format!("duplicating the descriptor of {shown}"), e))?,
            None => {
                sys::scratch_file(&dir)
                    .map_err(|e| sys::io_error(format!("creating a scratch file in {shown}"), e))?
                    .0
            }
        };
        match sys::set_direct(&probe) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Err(BenchError::Skip(format!(
                    "{shown} ({fs_name}) refuses O_DIRECT (EINVAL): direct=on cannot run here; use direct=off to measure through the page cache, or another dir"
                )));
            }
            Err(e) => return Err(sys::io_error("turning on O_DIRECT", e)),
        }
        let a = sys::dio_align(&probe)
            .map_err(|e| sys::io_error("finding the O_DIRECT alignment", e))?
            .ok_or_else(|| {
                BenchError::Skip(format!(
                    "{shown} ({fs_name}) reports no direct I/O support for regular files (statx STATX_DIOALIGN is 0): use direct=off"
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
                "direct=off and the {} tested ({} in total) fit in this machine's {} of RAM: reads are mostly served from memory once cached, and writes land in memory first",
                if in_place.is_some() { "regions" } else { "files" },
                format_size(total),
                format_size(mem)
            ));
        }
    }

    // Say what ran where the parameters alone do not (the values `auto`
    // and the preset chose are in the record's parameters: `resolved`).
    if let Some(p) = s.preset {
        notes.push(format!(
            "preset {p} applied: op, block, rwmix and fsync are the values it sets (sysbench fileio --file-test-mode=rndrw)"
        ));
    }
    if s.verify {
        warnings.push(
            "verify=on: every read is checked and written blocks are read back at teardown; the check's CPU time is inside the timing".into(),
        );
    }
    let engine_text = format!(
        "engine={}{}",
        match engine {
            EngineKind::Sync => "sync (pread/pwrite)",
            EngineKind::IoUring => "io_uring",
        },
        if engine == EngineKind::IoUring {
            format!(", qd={qd} per thread")
        } else {
            String::new()
        }
    );
    match &in_place {
        None => notes.push(format!(
            "measured {} file(s) of {} in {shown} ({fs_name}), one per thread, created unnamed and laid out with data before timing; {cache_mode}; {engine_text}",
            s.threads,
            format_size(file_len),
        )),
        Some(t) => {
            let span = t.span(s.threads);
            let regions = if s.threads == 1 {
                format!("one region of {}", format_size(t.region))
            } else {
                format!(
                    "{} disjoint regions of {}, thread i using [i × {}, (i + 1) × {})",
                    s.threads,
                    format_size(t.region),
                    t.region,
                    t.region
                )
            };
            let capped = if t.region < s.file_len() {
                format!(
                    "; size={} was capped to the target's length",
                    format_size(s.file_len())
                )
            } else {
                String::new()
            };
            let on = if t.kind == Kind::File {
                format!(" on {fs_name}")
            } else {
                String::new()
            };
            if t.writes {
                notes.push(format!(
                    "tested {shown} in place ({}{on}, {} bytes); its contents were overwritten in [0, {span}) ({regions}{capped}; {}); it was not truncated, extended or deleted; {cache_mode}; {engine_text}",
                    t.kind.label(),
                    t.len,
                    if s.verify {
                        "verify=on first wrote its pattern over all of it".to_string()
                    } else if s.op.random() {
                        format!("op={} wrote random blocks of it", s.op.name())
                    } else {
                        format!("op={} wrote it from the start, wrapping around", s.op.name())
                    }
                ));
            } else {
                notes.push(format!(
                    "tested {shown} in place ({}{on}, {} bytes), read-only: read its existing contents in [0, {span}) ({regions}{capped}) and wrote nothing; what it holds shapes the result (holes and unwritten extents read as zeros without device I/O{}); {cache_mode}; {engine_text}",
                    t.kind.label(),
                    t.len,
                    if s.direct {
                        ""
                    } else {
                        ", and with direct=off pages already cached are served from memory"
                    }
                ));
            }
            if t.sparse() {
                let allocated = t.allocated.unwrap_or(0);
                warnings.push(format!(
                    "{shown} is sparse: only {} of its {} are allocated on disk (st_blocks); reading a hole returns zeros without touching the device, and writing one first allocates space, so these numbers are not the disk's. Fill the file with data first (fio's layout, dd) or use a directory",
                    format_size(allocated),
                    format_size(t.len)
                ));
            }
        }
    }

    notes.extend(storage_note(&dir));

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
        target: target_file,
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
    let resolved = vec![
        ("op", Value::Str(s.op.name().into())),
        ("block", Value::Int(s.block)),
        ("rwmix", Value::Int(s.rwmix as u64)),
        ("fsync", Value::Str(s.fsync.label())),
        ("engine", Value::Str(engine_name(engine).into())),
        ("qd", Value::Int(qd as u64)),
        ("size", Value::Int(file_len)),
    ];
    Ok(Box::new(DiskCase {
        team: Some(team),
        sh,
        threads: s.threads as u64,
        about: About {
            warnings,
            notes,
            resolved,
            ..About::default()
        },
    }))
}

struct DiskCase {
    team: Option<Team>,
    sh: Arc<Shared>,
    threads: u64,
    /// Its resolved parameters are the values that ran, for the record's
    /// parameters; [`Case::notes`] adds what the workers noted while running.
    about: About,
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

    fn about(&self) -> Option<&About> {
        Some(&self.about)
    }

    fn notes(&self) -> Vec<String> {
        let mut n = self.about.notes.clone();
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
