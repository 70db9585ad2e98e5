//! One thread's side of `disk.io`: its scratch file (created and laid out
//! in `prepare`, untimed), its buffers, its engine, and the timed loop.
//!
//! Batches and the shared budget: the runner asks for `iters` iterations
//! per thread; [`crate::case`] turns that into a budget of `iters × threads`
//! completed I/Os shared by all threads. Each thread takes I/Os from the
//! budget until it is spent, so all threads stop within one I/O of each
//! other and none idles at the barrier while a slower one finishes its own
//! share (a fixed per-thread count would leave the device under-loaded at
//! the end of every batch).
//!
//! With io_uring the queue stays full across batches: a batch ends after
//! its last counted completion, and the I/Os still in flight complete (and
//! are counted) in the next batch, as in fio's steady state. They are
//! drained before an fsync, before teardown verification, and before the
//! buffers are freed.
//!
//! Open loop (`rate=N`, [`OpenLoop`]): the budget counts the batch's I/Os
//! not yet claimed; a thread that claims one also takes the next ticket
//! `k`, intended to start at `k / rate` after the batch started, issues it
//! then (or at once when late) and records its latency from that intended
//! start. Each thread completes its I/Os before the batch ends.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use benchsuite_core::openloop::{Schedule, latency_ns, pace_until};
use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::units::format_size;
use benchsuite_core::{BenchError, Work};
use hdrhistogram::Histogram;

use crate::pattern::{Rng, check_block, fill_block, scramble};
use crate::picker::Picker;
use crate::settings::{EngineKind, Fsync};
use crate::shared::{FINISH, OpenLoop, Shared, Tally, what};
use crate::sys::{AlignedBuf, drop_cache, io_error, preallocate, scratch_file, set_direct};

/// Bytes per layout write: large enough to stream at device speed.
const LAYOUT_CHUNK: usize = 1 << 20;

/// One thread's state.
pub struct Worker {
    id: usize,
    sh: Arc<Shared>,
    picker: Picker,
    hist: Histogram<u64>,
    /// Open loop, engine=sync: submission lateness (see [`Shared::lag`]).
    lag: Histogram<u64>,
    writes_since_sync: u64,
    /// Writes issued so far (the scramble stamp).
    writes: u64,
    /// Offset of block 0 in `file` ([`Shared::base`]).
    base: u64,
    // Field order matters: the engine (whose Drop drains in-flight I/O into
    // its buffers) is dropped before the file is closed.
    io: Io,
    file: File,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).finish()
    }
}

enum Io {
    Sync(AlignedBuf),
    #[cfg(target_os = "linux")]
    Uring(Box<crate::uring::Uring>),
}

impl Worker {
    /// Creates thread `id`'s scratch file and lays it out with real data
    /// (untimed), or takes its region of the target tested in place, and
    /// sets up its engine.
    pub fn new(id: usize, sh: Arc<Shared>) -> Result<Worker, BenchError> {
        let dir = sh.dir.display().to_string();
        let file = match &sh.target {
            // Shares the open file description, O_DIRECT included.
            Some(t) => t
                .try_clone()
                .map_err(|e| io_error(format!("duplicating the descriptor of {dir}"), e))?,
            None => {
                let (file, unnamed) = scratch_file(&sh.dir)
                    .map_err(|e| io_error(format!("creating a scratch file in {dir}"), e))?;
                if !unnamed {
                    sh.note(format!(
                        "{dir} has no O_TMPFILE: the scratch files were created as .benchsuite-scratch-<pid>-<n>.dat and unlinked at once"
                    ));
                }
                if sh.direct {
                    set_direct(&file).map_err(|e| {
                        io_error(
                            format!("turning on O_DIRECT for a scratch file in {dir}"),
                            e,
                        )
                    })?;
                }
                file
            }
        };
        let base = sh.base(id);
        let gens = if sh.verify {
            vec![0u32; sh.nblocks as usize]
        } else {
            Vec::new()
        };
        let mut picker = Picker {
            rng: Rng::new(0x5eed_0000 + id as u64),
            cursor: 0,
            nblocks: sh.nblocks,
            op: sh.op,
            rwmix: sh.rwmix,
            gens,
            pending: None,
        };
        layout(&file, &sh, id, base, &mut picker.rng)?;
        let io = match sh.engine {
            EngineKind::Sync => {
                let mut b = AlignedBuf::new(sh.block, sh.align)?;
                picker.rng.fill(b.as_mut_slice());
                Io::Sync(b)
            }
            #[cfg(target_os = "linux")]
            EngineKind::IoUring => {
                let (u, note) = crate::uring::Uring::new(&sh, base, &mut picker.rng)?;
                sh.note(note);
                Io::Uring(Box::new(u))
            }
            #[cfg(not(target_os = "linux"))]
            EngineKind::IoUring => {
                return Err(BenchError::Failed("io_uring exists on Linux only".into()));
            }
        };
        Ok(Worker {
            id,
            sh,
            picker,
            hist: new_latency_histogram(),
            lag: new_latency_histogram(),
            writes_since_sync: 0,
            writes: 0,
            base,
            io,
            file,
        })
    }

    /// One timed batch (or, with [`FINISH`], the teardown drain and
    /// verification). On an error the other threads are told to stop.
    pub fn batch(&mut self, iters: u64) -> Result<Work, BenchError> {
        let r = if iters == FINISH {
            self.finish().map(|_| Work::default())
        } else {
            self.timed()
        };
        if r.is_err() {
            self.sh.budget.store(i64::MIN / 2, Ordering::SeqCst);
        }
        r
    }

    fn timed(&mut self) -> Result<Work, BenchError> {
        let mut t = Tally::default();
        let schedule = self.sh.open.as_ref().map(OpenLoop::schedule);
        match (&self.io, schedule) {
            (Io::Sync(_), _) => self.run_sync(&mut t, schedule)?,
            #[cfg(target_os = "linux")]
            (Io::Uring(_), None) => self.run_uring(&mut t)?,
            #[cfg(target_os = "linux")]
            (Io::Uring(_), Some(s)) => self.run_uring_open(&mut t, s)?,
        }
        if self.sh.fsync == Fsync::End && self.sh.op.writes() {
            self.drain(&mut t)?;
            self.sync()?;
        }
        let hist = std::mem::replace(&mut self.hist, new_latency_histogram());
        if self.sh.open.is_some() {
            let mut all = self.sh.lag.lock().unwrap_or_else(|p| p.into_inner());
            // Both histograms auto-resize: adding cannot fail on range.
            let _ = all.add(&self.lag);
            self.lag.reset();
            #[cfg(target_os = "linux")]
            if let Io::Uring(u) = &mut self.io {
                let _ = all.add(&u.lag);
                u.lag.reset();
            }
        }
        Ok(Work {
            ops: t.ops,
            bytes: t.ops * self.sh.block as u64,
            latency: (!hist.is_empty()).then_some(hist),
            ..Work::default()
        })
    }

    fn sync(&mut self) -> Result<(), BenchError> {
        self.file
            .sync_all()
            .map_err(|e| io_error(format!("fsync of {}", self.sh.file_name(self.id)), e))?;
        self.writes_since_sync = 0;
        Ok(())
    }

    fn sync_due(&self) -> bool {
        matches!(self.sh.fsync, Fsync::Every(n) if self.writes_since_sync >= n)
    }

    /// The sync loop: one I/O at a time. Closed loop (no `schedule`): the
    /// next starts when one completes, latency is the call's duration. Open
    /// loop: each claimed I/O waits for its intended start (at once when
    /// it is late) and its latency counts from there.
    fn run_sync(&mut self, t: &mut Tally, schedule: Option<Schedule>) -> Result<(), BenchError> {
        let block = self.sh.block;
        loop {
            let intended = match (&self.sh.open, &schedule) {
                (Some(open), Some(s)) => match self.sh.claim(open, s) {
                    Some(at) => Some(at),
                    None => return Ok(()),
                },
                _ => {
                    if self.sh.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
                        return Ok(());
                    }
                    None
                }
            };
            if self.sync_due() {
                self.sync()?;
            }
            if let Some(at) = intended {
                pace_until(at);
                self.lag.saturating_record(latency_ns(at, Instant::now()));
            }
            let (blk, write) = self.picker.draw();
            let off = self.base + blk * block as u64;
            let Io::Sync(buf) = &mut self.io else {
                return Err(BenchError::Other("sync loop without a sync buffer".into()));
            };
            let b = &mut buf.as_mut_slice()[..block];
            let generation = if write {
                self.writes_since_sync += 1;
                self.writes += 1;
                if self.sh.verify {
                    let g = self.picker.bump(blk);
                    fill_block(b, off, g);
                    g
                } else {
                    scramble(b, off, self.writes);
                    0
                }
            } else {
                self.picker.generation(blk)
            };
            let t0 = Instant::now();
            let r = if write {
                self.file.write_all_at(b, off)
            } else {
                self.file.read_exact_at(b, off)
            };
            let ns = latency_ns(intended.unwrap_or(t0), Instant::now());
            r.map_err(|e| io_error(what(&self.sh, write, off, self.id), e))?;
            self.hist.saturating_record(ns);
            if !write && self.sh.verify {
                check_block(b, off, generation, &self.sh.file_name(self.id))?;
            }
            t.ops += 1;
        }
    }

    #[cfg(target_os = "linux")]
    fn run_uring(&mut self, t: &mut Tally) -> Result<(), BenchError> {
        let Io::Uring(u) = &mut self.io else {
            return Err(BenchError::Other("io_uring loop without a ring".into()));
        };
        let sh = &*self.sh;
        let fd = self.file.as_raw_fd();
        let mut done = false;
        loop {
            if done || sh.budget.load(Ordering::Relaxed) <= 0 {
                return Ok(());
            }
            let sync_due = matches!(sh.fsync, Fsync::Every(n) if self.writes_since_sync >= n);
            if !sync_due {
                u.fill(
                    fd,
                    sh,
                    &mut self.picker,
                    &mut self.writes_since_sync,
                    &mut self.writes,
                )?;
            }
            if u.inflight() == 0 {
                if sync_due {
                    self.file
                        .sync_all()
                        .map_err(|e| io_error(format!("fsync of {}", sh.file_name(self.id)), e))?;
                    self.writes_since_sync = 0;
                    continue;
                }
                return Err(BenchError::Other(
                    "io_uring loop: nothing in flight and nothing could be issued".into(),
                ));
            }
            u.reap(sh, &mut self.hist, t, self.id, Some(&mut done))?;
        }
    }

    /// The io_uring open loop: claims I/Os one after another and issues
    /// each at its intended start (see [`crate::uring::Uring::issue_at`]),
    /// then completes them all before the batch ends (nothing carries into
    /// the next batch, whose schedule continues this one's). An fsync due after
    /// `every:N` writes first completes the I/Os in flight.
    #[cfg(target_os = "linux")]
    fn run_uring_open(&mut self, t: &mut Tally, schedule: Schedule) -> Result<(), BenchError> {
        let Io::Uring(u) = &mut self.io else {
            return Err(BenchError::Other("io_uring loop without a ring".into()));
        };
        let sh = &*self.sh;
        let Some(open) = &sh.open else {
            return Err(BenchError::Other("open loop without a schedule".into()));
        };
        let fd = self.file.as_raw_fd();
        while let Some(at) = sh.claim(open, &schedule) {
            if matches!(sh.fsync, Fsync::Every(n) if self.writes_since_sync >= n) {
                while u.inflight() > 0 {
                    u.reap(sh, &mut self.hist, t, self.id, None)?;
                }
                self.file
                    .sync_all()
                    .map_err(|e| io_error(format!("fsync of {}", sh.file_name(self.id)), e))?;
                self.writes_since_sync = 0;
            }
            u.issue_at(
                at,
                fd,
                sh,
                &mut self.picker,
                &mut self.writes_since_sync,
                &mut self.writes,
                &mut self.hist,
                t,
                self.id,
            )?;
        }
        while u.inflight() > 0 {
            u.reap(sh, &mut self.hist, t, self.id, None)?;
        }
        Ok(())
    }

    /// Completes every in-flight I/O, counting it in `t`. Keeps draining
    /// after a failed completion (the kernel may still write into the other
    /// buffers) and returns the first error.
    fn drain(&mut self, t: &mut Tally) -> Result<(), BenchError> {
        #[cfg(target_os = "linux")]
        if let Io::Uring(u) = &mut self.io {
            let mut first: Option<BenchError> = None;
            while u.inflight() > 0 && !u.broken() {
                if let Err(e) = u.reap(&self.sh, &mut self.hist, t, self.id, None) {
                    first.get_or_insert(e);
                    if u.broken() {
                        break;
                    }
                }
            }
            if let Some(e) = first {
                return Err(e);
            }
        }
        let _ = t;
        Ok(())
    }

    /// Teardown: drain in-flight I/O, then read back every block this run
    /// wrote (verify=on) and check it.
    fn finish(&mut self) -> Result<(), BenchError> {
        let mut t = Tally::default();
        self.drain(&mut t)?;
        if !self.sh.verify || !self.sh.op.writes() {
            return Ok(());
        }
        let block = self.sh.block;
        let mut buf = AlignedBuf::new(block, self.sh.align)?;
        let desc = format!("{} (read back at teardown)", self.sh.file_name(self.id));
        for blk in 0..self.sh.nblocks {
            if self.sh.cancel.load(Ordering::Relaxed) {
                return Err(BenchError::Interrupted);
            }
            let g = self.picker.generation(blk);
            if g == 0 {
                continue;
            }
            let off = self.base + blk * block as u64;
            let b = buf.as_mut_slice();
            self.file
                .read_exact_at(b, off)
                .map_err(|e| io_error(what(&self.sh, false, off, self.id), e))?;
            check_block(b, off, g, &desc)?;
        }
        Ok(())
    }
}

/// Prepares thread `id`'s bytes `[base, base + len)` before timing.
///
/// A scratch file is written once, sequentially, with real data (never
/// holes: a hole reads back as zeros without touching the device), then
/// made durable. A target tested in place already holds its data and is
/// written only with `verify=on` (the pattern the reads are checked
/// against), never reserved, extended or truncated. With `direct=off` the
/// range's pages are then dropped from the page cache so the timed phase
/// starts cold (fio's `invalidate=1`).
fn layout(file: &File, sh: &Shared, id: usize, base: u64, rng: &mut Rng) -> Result<(), BenchError> {
    let len = sh.len();
    let name = sh.file_name(id);
    let in_place = sh.target.is_some();
    if !in_place {
        preallocate(file, len).map_err(|e| {
            io_error(
                format!(
                    "reserving {} for thread {id}'s file in {}",
                    format_size(len),
                    sh.dir.display()
                ),
                e,
            )
        })?;
    }
    if !in_place || sh.verify {
        let per = (LAYOUT_CHUNK / sh.block).max(1);
        let chunk = per * sh.block;
        let mut buf = AlignedBuf::new(chunk, sh.align)?;
        if !sh.verify {
            rng.fill(buf.as_mut_slice());
        }
        let mut off = base;
        let end = base + len;
        while off < end {
            if sh.cancel.load(Ordering::Relaxed) {
                return Err(BenchError::Interrupted);
            }
            let n = chunk.min((end - off) as usize);
            let b = &mut buf.as_mut_slice()[..n];
            if sh.verify {
                for (i, blk) in b.chunks_exact_mut(sh.block).enumerate() {
                    fill_block(blk, off + (i * sh.block) as u64, 0);
                }
            } else {
                // Every 512 B sector unique: deduplicating storage cannot
                // store the file as one repeated chunk.
                scramble(b, off, 0);
            }
            file.write_all_at(b, off).map_err(|e| {
                io_error(
                    format!(
                        "laying out {name}: write of {} at offset {off}",
                        format_size(n as u64)
                    ),
                    e,
                )
            })?;
            off += n as u64;
        }
        file.sync_all()
            .map_err(|e| io_error(format!("fsync after laying out {name}"), e))?;
    }
    if !sh.direct {
        drop_cache(file, base, len)
            .map_err(|e| io_error(format!("posix_fadvise(DONTNEED) on {name}"), e))?;
    }
    Ok(())
}
