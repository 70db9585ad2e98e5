//! `disk.io`'s untimed set-up of one sweep point, as named steps: find the
//! target and what holds it, check free space, choose the engine and queue
//! depth, check buffer memory, open an in-place target, probe `O_DIRECT`,
//! say in the record what ran, then start the threads.
//!
//! [`prepare`] runs the steps in that order; each step may end the point
//! with an error or a skip, and adds its caveats and notes in the order
//! the record shows them. The steps are the seams of what was one long
//! function in `io.rs`, which keeps the descriptor (the timed case is in
//! `case.rs`). The option that skips the free-space check and the page
//! cache caveat live here, with the steps that read and add them.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use benchsuite_core::team::{Placement, Team};
use benchsuite_core::units::format_size;
use benchsuite_core::{About, BenchError, Case, Caveat, Choice, Context, Value};

use crate::case::DiskCase;
use crate::settings::{EngineKind, MAX_BUFFER_BYTES, Preset, Settings};
use crate::shared::{OpenLoop, Shared};
use crate::sys;
use crate::target::{self, InPlace, Kind, Phase, Refusal, Target};
use crate::worker::Worker;

/// `ctx.options` key (`--opt disk.space-check=off`) that skips the free
/// space check, for file systems whose `statvfs` is wrong (some FUSE and
/// network file systems) and for tests that need a real ENOSPC.
pub const SPACE_CHECK_OPTION: &str = "disk.space-check";

/// The caveat every `direct=off` record carries: its I/O went through the
/// page cache. It reads "direct=off: I/O goes through the page cache, so
/// these numbers mix cache hits and deferred writeback with device work;
/// use direct=on to measure the device".
pub fn page_cache_caveat() -> Caveat {
    Caveat::PageCache {
        why: "direct=off".into(),
    }
}

/// Open loop with io_uring: the most I/Os one thread keeps in flight (its
/// ring's slots), unless buffer memory lowers it ([`OPEN_LOOP_THREAD_BYTES`]).
/// When all are in flight the next I/O waits for a completion, its latency
/// counting from its intended start all the same.
pub const OPEN_LOOP_SLOTS: u64 = 256;

/// Open loop with io_uring: the most buffer memory one thread's slots may
/// take (and all threads' together at most [`MAX_BUFFER_BYTES`]).
pub const OPEN_LOOP_THREAD_BYTES: u64 = 64 << 20;

/// Sets up one point: the steps below in order, then the case over its
/// started threads.
pub fn prepare(ctx: &Context, s: &Settings) -> Result<Box<dyn Case>, BenchError> {
    if s.rate_auto {
        return Err(BenchError::Failed(
            "rate=auto reached disk.io unexpanded: it names a ladder of rates up to saturation, which the capacity search (--slo) runs one numeric rate at a time; give rate=N or rate=off".into(),
        ));
    }
    let mut setup = Setup {
        ctx,
        s,
        caveats: Vec::new(),
        notes: Vec::new(),
    };
    let place = setup.locate()?;
    let sizes = Sizes::of(s, &place);
    setup.check_space(&place, &sizes)?;
    let engine = setup.engine();
    let qd = setup.queue_depth(engine, sizes.nblocks);
    // In open loop the ring's slots are the in-flight cap, not `qd`.
    let slots = match (s.rate, engine) {
        (Some(_), EngineKind::IoUring) => open_loop_slots(s, sizes.nblocks),
        _ => qd,
    };
    setup.check_buffer_memory(slots)?;
    let target_file = open_target(&place)?;
    let cache = setup.cache_mode(&place, target_file.as_ref(), sizes.total)?;
    setup.describe(&place, &sizes, engine, qd, &cache.mode);
    if let Some(rate) = s.rate {
        setup.notes.push(open_loop_note(s, rate, engine, slots));
    }
    let Setup { caveats, notes, .. } = setup;

    let sh = Arc::new(Shared {
        op: s.op,
        block: s.block as usize,
        nblocks: sizes.nblocks,
        qd: slots,
        rwmix: s.rwmix,
        fsync: s.fsync,
        verify: s.verify,
        direct: s.direct,
        engine,
        align: cache.align,
        dir: place.dir.clone(),
        target: target_file,
        cancel: ctx.cancel.clone(),
        budget: AtomicI64::new(0),
        open: s.rate.map(OpenLoop::new),
        notes: Mutex::new(Vec::new()),
        lag: Mutex::new(benchsuite_core::runner::new_latency_histogram()),
    });
    let init_sh = sh.clone();
    let team = Team::new(
        s.threads,
        Placement::Unpinned,
        move |i| Worker::new(i, init_sh.clone()),
        |w: &mut Worker, iters| w.batch(iters),
    )?;
    let resolved = vec![
        ("op".into(), Value::Str(s.op.name().into())),
        ("block".into(), Value::Int(s.block)),
        ("rwmix".into(), Value::Int(s.rwmix as u64)),
        ("fsync".into(), Value::Str(s.fsync.label())),
        ("engine".into(), Value::Str(engine.name().into())),
        ("qd".into(), Value::Int(qd as u64)),
        ("size".into(), Value::Int(sizes.file_len)),
    ];
    Ok(Box::new(DiskCase::new(
        team,
        sh,
        s.threads,
        About {
            caveats,
            notes,
            resolved,
            ..About::default()
        },
    )))
}

/// The in-flight cap per thread of an open loop with io_uring:
/// [`OPEN_LOOP_SLOTS`], lowered so that the buffers fit
/// [`OPEN_LOOP_THREAD_BYTES`] per thread and [`MAX_BUFFER_BYTES`] in all,
/// and never more than the blocks a thread has; at least 1.
pub fn open_loop_slots(s: &Settings, nblocks: u64) -> usize {
    let per_thread = OPEN_LOOP_THREAD_BYTES.min(MAX_BUFFER_BYTES / s.threads.max(1) as u64);
    OPEN_LOOP_SLOTS
        .min(per_thread / s.block.max(1))
        .min(nblocks)
        .max(1) as usize
}

/// The record's note on an open-loop point: the rate, where latency
/// starts, and how many I/Os may be in flight.
fn open_loop_note(s: &Settings, rate: f64, engine: EngineKind, slots: usize) -> String {
    let cap = match engine {
        EngineKind::IoUring => format!(
            "io_uring keeps up to {slots} I/Os in flight per thread ({} in all); at that cap the next I/O waits for a completion",
            slots * s.threads
        ),
        EngineKind::Sync => format!(
            "engine=sync has one I/O in flight per thread ({} in all): while all threads are busy, the next I/Os wait",
            s.threads
        ),
    };
    format!(
        "open loop at {rate} I/O/s across all {} thread(s): I/O k is intended to start at k/rate on one schedule that runs on across the point's batches, whenever the earlier ones complete, and its latency counts from that intended start (so it includes queueing behind a stall, and the submission), not from the actual submission; {cap}; each batch's I/Os all complete before it ends, and a batch whose end a stall held up leaves the next one's first I/Os late",
        s.threads
    )
}

/// One point's set-up: its context and settings, and the caveats and
/// notes the steps have added so far, in order.
struct Setup<'a> {
    ctx: &'a Context,
    s: &'a Settings,
    caveats: Vec<Caveat>,
    notes: Vec<String>,
}

/// Where the point's I/O goes.
struct Place {
    /// The scratch directory, or the file or block device tested in place.
    dir: PathBuf,
    /// The target tested in place; `None` for scratch files.
    in_place: Option<InPlace>,
    /// `dir` as messages show it.
    shown: String,
    /// What holds the data: a file system's name, or "block device".
    fs_name: String,
}

/// How much each thread and all of them touch.
struct Sizes {
    /// Bytes each thread uses: its own scratch file, or its region of the
    /// target (capped by the target's length).
    file_len: u64,
    /// Blocks in `file_len`.
    nblocks: u64,
    /// Bytes of all threads together.
    total: u64,
}

impl Sizes {
    fn of(s: &Settings, place: &Place) -> Sizes {
        let file_len = place.in_place.as_ref().map_or(s.file_len(), |t| t.region);
        let nblocks = file_len / s.block;
        let total = file_len.saturating_mul(s.threads as u64);
        Sizes {
            file_len,
            nblocks,
            total,
        }
    }
}

/// The buffer alignment and the cache mode's words for the record.
struct Cache {
    /// Buffer alignment (at least a page).
    align: usize,
    /// `O_DIRECT` with its alignments, or buffered.
    mode: String,
}

impl Setup<'_> {
    /// The target (a scratch directory or a target tested in place) and
    /// what holds its data: a file system (memory ones have no disk), or
    /// the block device itself.
    fn locate(&mut self) -> Result<Place, BenchError> {
        let s = self.s;
        // `validate` refused the usage errors before the run; seeing one here
        // means the target changed since (or validate was bypassed).
        let (dir, in_place) = match target::examine(self.ctx, s, Phase::Run) {
            Ok(Target::Dir(d)) => {
                target::check_dir(&d)?;
                (d, None)
            }
            Ok(Target::InPlace(t)) => (t.path.clone(), Some(t)),
            Err(Refusal::Usage(e)) => {
                return Err(BenchError::caused(
                    "the target changed since the run was planned",
                    e,
                ));
            }
            Err(Refusal::Changed(why)) => return Err(BenchError::Failed(why)),
            Err(Refusal::Io(e)) => return Err(e),
        };
        let shown = match &in_place {
            Some(t) => t.shown(),
            None => dir.display().to_string(),
        };

        // What holds the data: a file system (memory ones have no disk), or
        // the block device itself.
        let fs_name = if in_place
            .as_ref()
            .is_some_and(|t| t.kind == Kind::BlockDevice)
        {
            "block device".to_string()
        } else {
            let fs =
                sys::fs_info(&dir).map_err(|e| sys::io_error(format!("statfs({shown})"), e))?;
            if fs.is_memory() {
                if s.direct {
                    return Err(BenchError::Skip(format!(
                        "{shown} is on {} (memory): there is no disk under it to measure; point --scratch-dir or dir= at a disk, or use direct=off to measure the page cache",
                        fs.name
                    )));
                }
                self.caveats.push(Caveat::text(format!(
                    "{shown} is on {} (memory): this measures RAM and the kernel's file code, not a disk",
                    fs.name
                )));
            }
            fs.name
        };
        Ok(Place {
            dir,
            in_place,
            shown,
            fs_name,
        })
    }

    /// Free space, before anything is written (scratch files only: in place
    /// nothing grows). `--opt disk.space-check=off` skips it, with a caveat.
    fn check_space(&mut self, place: &Place, sizes: &Sizes) -> Result<(), BenchError> {
        let (s, shown, fs_name) = (self.s, &place.shown, &place.fs_name);
        let check_space = self
            .ctx
            .options
            .get(SPACE_CHECK_OPTION)
            .is_none_or(|v| benchsuite_core::bench::parse_bool(v).unwrap_or(true));
        if place.in_place.is_none() {
            if check_space {
                let total = sizes.total;
                let margin = total / 100 + (1 << 20);
                let free = sys::free_bytes(&place.dir)
                    .map_err(|e| sys::io_error(format!("statvfs({shown})"), e))?;
                if total.saturating_add(margin) > free {
                    return Err(BenchError::Failed(format!(
                        "not enough free space in {shown} ({fs_name}): {} file(s) of {} need {} plus a {} margin, {} is available; lower size or threads, or point dir= or --scratch-dir elsewhere. Nothing was written",
                        s.threads,
                        format_size(sizes.file_len),
                        format_size(total),
                        format_size(margin),
                        format_size(free)
                    )));
                }
            } else {
                self.caveats.push(Caveat::text(format!(
                    "the free-space check was skipped ({SPACE_CHECK_OPTION}=off)"
                )));
            }
        }
        Ok(())
    }

    /// The engine that runs: the one asked for, or sync where io_uring is
    /// not available (with a caveat).
    fn engine(&mut self) -> EngineKind {
        let mut engine = self.s.engine;
        if engine == EngineKind::IoUring {
            #[cfg(target_os = "linux")]
            if let Err(reason) = crate::uring::probe() {
                self.caveats.push(Caveat::text(format!(
                    "engine=io_uring is not available here ({reason}); ran engine=sync instead"
                )));
                engine = EngineKind::Sync;
            }
            #[cfg(not(target_os = "linux"))]
            {
                self.caveats
                    .push("engine=io_uring exists on Linux only; ran engine=sync instead".into());
                engine = EngineKind::Sync;
            }
        }
        engine
    }

    /// The queue depth that runs: 1 for sync, and never more than the
    /// blocks a thread has (each lowering with a caveat).
    fn queue_depth(&mut self, engine: EngineKind, nblocks: u64) -> usize {
        let mut qd = self.s.qd;
        if engine == EngineKind::Sync && qd > 1 {
            self.caveats.push(Caveat::text(format!(
                "engine=sync does one I/O at a time per thread (like fio's psync, which ignores iodepth): qd={qd} was not applied; use engine=io_uring for a deeper queue, or more threads"
            )));
            qd = 1;
        }
        if qd as u64 > nblocks {
            self.caveats.push(Caveat::text(format!(
                "qd={qd} is more than the {nblocks} blocks each thread has: ran with qd={nblocks}"
            )));
            qd = nblocks as usize;
        }
        qd
    }

    /// Memory for buffers: refuses more than half of the machine's.
    /// `slots` is the queue depth, or in open loop the in-flight cap.
    fn check_buffer_memory(&self, slots: usize) -> Result<(), BenchError> {
        let s = self.s;
        let buffers = (s.block as u128) * (slots as u128) * (s.threads as u128);
        if let Some(mem) = self.ctx.host.memory_bytes
            && buffers > mem as u128 / 2
        {
            let (what, lower) = if s.rate.is_some() {
                ("block × in-flight cap × threads", "block or threads")
            } else {
                ("block × qd × threads", "block, qd or threads")
            };
            return Err(BenchError::Failed(format!(
                "{what} = {} of I/O buffers is more than half of this machine's {} of memory; lower {lower}",
                format_size(buffers.min(u64::MAX as u128) as u64),
                format_size(mem)
            )));
        }
        Ok(())
    }

    /// With `direct=on`, whether the file system takes `O_DIRECT` and with
    /// which alignment; with `direct=off`, the page-cache caveats.
    fn cache_mode(
        &mut self,
        place: &Place,
        target_file: Option<&File>,
        total: u64,
    ) -> Result<Cache, BenchError> {
        if self.s.direct {
            return self.probe_direct(place, target_file);
        }
        self.caveats.push(page_cache_caveat());
        if let Some(mem) = self.ctx.host.memory_bytes
            && total <= mem
        {
            self.caveats.push(Caveat::text(format!(
                "direct=off and the {} tested ({} in total) fit in this machine's {} of RAM: reads are mostly served from memory once cached, and writes land in memory first",
                if place.in_place.is_some() { "regions" } else { "files" },
                format_size(total),
                format_size(mem)
            )));
        }
        Ok(Cache {
            align: sys::page_size(),
            mode: "buffered (page cache)".to_string(),
        })
    }

    /// O_DIRECT: does the file system take it, and with which alignment?
    /// Probed on the in-place target's descriptor, or on a scratch file.
    fn probe_direct(&self, place: &Place, target_file: Option<&File>) -> Result<Cache, BenchError> {
        let (s, shown, fs_name) = (self.s, &place.shown, &place.fs_name);
        let page = sys::page_size();
        let probe = match target_file {
            // The same open file description as the threads' descriptors:
            // O_DIRECT set here holds for all of them.
            Some(f) => f
                .try_clone()
                .map_err(|e| sys::io_error(format!("duplicating the descriptor of {shown}"), e))?,
            None => {
                sys::scratch_file(&place.dir)
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
        let align = page.max(a.mem);
        Ok(Cache {
            align,
            mode: format!(
                "O_DIRECT, offsets and lengths aligned to {} B and buffers to {} B (from {})",
                a.offset, align, a.source
            ),
        })
    }

    /// Says what ran where the parameters alone do not (the values `auto`
    /// and the preset chose are in the record's parameters: `resolved`):
    /// the preset, verify, the files or the region tested in place with the
    /// cache mode and engine, a sparse target, and the storage under it.
    fn describe(
        &mut self,
        place: &Place,
        sizes: &Sizes,
        engine: EngineKind,
        qd: usize,
        cache_mode: &str,
    ) {
        let (s, shown, fs_name) = (self.s, &place.shown, &place.fs_name);
        let (caveats, notes) = (&mut self.caveats, &mut self.notes);
        if s.preset != Preset::None {
            notes.push(format!(
                "preset {} applied: op, block, rwmix and fsync are the values it sets (sysbench fileio --file-test-mode=rndrw)",
                s.preset
            ));
        }
        if s.verify {
            caveats.push(
                "verify=on: every read is checked and written blocks are read back at teardown; the check's CPU time is inside the timing".into(),
            );
        }
        let engine_text = format!(
            "engine={}{}",
            match engine {
                EngineKind::Sync => "sync (pread/pwrite)",
                EngineKind::IoUring => "io_uring",
            },
            if engine == EngineKind::IoUring && s.rate.is_none() {
                format!(", qd={qd} per thread")
            } else if engine == EngineKind::IoUring {
                ", open loop".to_string()
            } else {
                String::new()
            }
        );
        match &place.in_place {
            None => notes.push(format!(
                "measured {} file(s) of {} in {shown} ({fs_name}), one per thread, created unnamed and laid out with data before timing; {cache_mode}; {engine_text}",
                s.threads,
                format_size(sizes.file_len),
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
                            format!("op={} wrote random blocks of it", s.op)
                        } else {
                            format!("op={} wrote it from the start, wrapping around", s.op)
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
                    caveats.push(Caveat::text(format!(
                        "{shown} is sparse: only {} of its {} are allocated on disk (st_blocks); reading a hole returns zeros without touching the device, and writing one first allocates space, so these numbers are not the disk's. Fill the file with data first (fio's layout, dd) or use a directory",
                        format_size(allocated),
                        format_size(t.len)
                    )));
                }
            }
        }

        notes.extend(storage_note(&place.dir));
    }
}

/// The target tested in place is opened once; the threads share it.
fn open_target(place: &Place) -> Result<Option<File>, BenchError> {
    place.in_place.as_ref().map(target::open).transpose()
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

#[cfg(test)]
mod tests {
    use benchsuite_core::{Point, Value};

    use super::*;
    use crate::settings::declare;

    fn settings(block: u64, threads: u64) -> Settings {
        let mut p = Point::default();
        for s in declare() {
            p.set(&s.name, s.default.clone());
        }
        p.set("block", Value::Int(block));
        p.set("threads", Value::Int(threads));
        p.set("rate", Value::Int(1000));
        Settings::from_point(&p).unwrap()
    }

    #[test]
    fn the_open_loop_cap_fits_buffer_memory_and_the_file() {
        let big = u64::MAX;
        assert_eq!(open_loop_slots(&settings(4 << 10, 1), big), 256);
        assert_eq!(open_loop_slots(&settings(1 << 20, 1), big), 64);
        assert_eq!(open_loop_slots(&settings(100 << 20, 1), big), 1);
        assert_eq!(open_loop_slots(&settings(4 << 10, 1), 10), 10);
        // 8 GiB over 128 threads is 64 MiB each, the per-thread limit.
        assert_eq!(open_loop_slots(&settings(1 << 20, 128), big), 64);
        assert_eq!(open_loop_slots(&settings(16 << 20, 128), big), 4);
    }
}
