//! One thread's side of `disk.io`: its scratch file (created and laid out
//! in `prepare`, untimed), its buffers, its engine, and the timed loop.
//!
//! Batches and the shared budget: the runner asks for `iters` iterations
//! per thread; [`crate::io`] turns that into a budget of `iters × threads`
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
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use benchsuite_core::openloop::{Schedule, Timeline, latency_ns, pace_until};
use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::units::format_size;
use benchsuite_core::{BenchError, Work};
use hdrhistogram::Histogram;

use crate::pattern::{Rng, check_block, fill_block, scramble};
use crate::settings::{EngineKind, Fsync, Op};
use crate::sys::{AlignedBuf, drop_cache, io_error, preallocate, scratch_file, set_direct};

/// The `iters` value that tells a worker to drain and verify (teardown).
/// The runner never asks for this many iterations (its batches stop at 2^40).
pub const FINISH: u64 = u64::MAX;

/// Bytes per layout write: large enough to stream at device speed.
const LAYOUT_CHUNK: usize = 1 << 20;

/// What every thread of one point shares.
#[derive(Debug)]
pub struct Shared {
    /// I/O pattern.
    pub op: Op,
    /// Bytes per I/O.
    pub block: usize,
    /// Blocks per file.
    pub nblocks: u64,
    /// I/Os in flight per thread (1 for sync); in open loop with
    /// io_uring, the most in flight per thread (the ring's slots).
    pub qd: usize,
    /// Percent reads (randrw).
    pub rwmix: u32,
    /// Flush policy.
    pub fsync: Fsync,
    /// Verify data.
    pub verify: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// Engine actually used.
    pub engine: EngineKind,
    /// Buffer alignment (at least a page).
    pub align: usize,
    /// Directory of the scratch files, or the file or block device tested
    /// in place.
    pub dir: PathBuf,
    /// The existing file or block device tested in place (opened once in
    /// `prepare`; each thread uses a duplicate of the descriptor and its
    /// own region `[id × len, (id + 1) × len)`). `None`: each thread
    /// creates its own scratch file in `dir`.
    pub target: Option<File>,
    /// Ctrl-C.
    pub cancel: Arc<AtomicBool>,
    /// Completions left in the current batch, all threads together; in
    /// open loop, I/Os not yet claimed.
    pub budget: AtomicI64,
    /// Open loop (`rate=N`): the batch's schedule and its tickets. `None`:
    /// closed loop.
    pub open: Option<OpenLoop>,
    /// Facts found by workers (how the ring was set up, whether buffers
    /// were registered, whether O_TMPFILE worked), deduplicated.
    pub notes: Mutex<Vec<String>>,
    /// Open loop: how late the I/Os of every batch were submitted after
    /// their intended start (ns), all threads together.
    pub lag: Mutex<Histogram<u64>>,
}

/// One open-loop point's shared schedule: the I/Os of a batch are tickets
/// `0, 1, 2, ...` claimed by the threads in turn, ticket `k` intended to
/// start at `schedule.at(k)`; each batch's schedule continues the point's
/// [`Timeline`], so a stall that holds up one batch's end makes the next
/// batch's first I/Os late, and they count it.
#[derive(Debug)]
pub struct OpenLoop {
    /// The current batch's schedule, and the I/Os of a batch announced by
    /// [`OpenLoop::start_batch`] whose schedule the first worker to start
    /// it sets (so waking the workers is not counted as lateness).
    schedule: Mutex<(Schedule, Option<u64>)>,
    /// The point's schedule across its batches.
    timeline: Mutex<Timeline>,
    /// The next ticket.
    next: AtomicU64,
}

impl OpenLoop {
    /// An open loop at `rate` I/Os per second.
    pub fn new(rate: f64) -> OpenLoop {
        OpenLoop {
            schedule: Mutex::new((Schedule::new(rate), None)),
            timeline: Mutex::new(Timeline::new(rate)),
            next: AtomicU64::new(0),
        }
    }

    /// Announces the next batch of `n` I/Os, at ticket 0; its schedule
    /// (the timeline's continuation) is set when the first worker starts.
    pub fn start_batch(&self, n: u64) {
        self.schedule.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(n);
        self.next.store(0, Ordering::SeqCst);
    }

    /// The batch's I/Os are all done: the timeline pauses until the next.
    pub fn end_batch(&self) {
        self.timeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .end();
    }

    fn schedule(&self) -> Schedule {
        let mut s = self.schedule.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = s.1.take() {
            s.0 = self
                .timeline
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .batch(n);
        }
        s.0
    }
}

impl Shared {
    /// Open loop: claims the batch's next I/O and returns its intended
    /// start, or `None` once every I/O of the batch is claimed (or a
    /// thread failed and stopped the batch).
    fn claim(&self, open: &OpenLoop, schedule: &Schedule) -> Option<Instant> {
        if self.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
            return None;
        }
        Some(schedule.at(open.next.fetch_add(1, Ordering::Relaxed)))
    }

    fn note(&self, msg: String) {
        let mut n = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        if !n.contains(&msg) {
            n.push(msg);
        }
    }

    fn len(&self) -> u64 {
        self.nblocks * self.block as u64
    }

    /// Thread `id`'s first byte: 0 in its own scratch file, `id × len` in
    /// a target tested in place.
    pub(crate) fn base(&self, id: usize) -> u64 {
        if self.target.is_some() {
            id as u64 * self.len()
        } else {
            0
        }
    }

    /// What thread `id` does I/O to, for messages.
    pub(crate) fn file_name(&self, id: usize) -> String {
        if self.target.is_some() {
            format!("{} (thread {id}'s region)", self.dir.display())
        } else {
            format!("thread {id}'s file")
        }
    }
}

/// Chooses the next block and direction.
#[derive(Debug)]
pub(crate) struct Picker {
    rng: Rng,
    cursor: u64,
    nblocks: u64,
    op: Op,
    rwmix: u32,
    /// Per-block generation (verify=on only): the number of times this run
    /// rewrote the block.
    gens: Vec<u32>,
    /// A candidate that collided with an in-flight I/O, retried first.
    pending: Option<(u64, bool)>,
}

impl Picker {
    fn draw(&mut self) -> (u64, bool) {
        let write = match self.op {
            Op::Read | Op::RandRead => false,
            Op::Write | Op::RandWrite => true,
            Op::RandRw => self.rng.below(100) >= self.rwmix as u64,
        };
        let blk = if self.op.random() {
            self.rng.below(self.nblocks)
        } else {
            let b = self.cursor;
            self.cursor = (self.cursor + 1) % self.nblocks;
            b
        };
        (blk, write)
    }

    /// The next I/O whose block is not `busy`; `None` when the candidates
    /// collide (retry after a completion).
    pub(crate) fn next(&mut self, busy: impl Fn(u64) -> bool) -> Option<(u64, bool)> {
        let mut cand = self.pending.take().unwrap_or_else(|| self.draw());
        if !busy(cand.0) {
            return Some(cand);
        }
        if self.op.random() {
            for _ in 0..8 {
                cand = self.draw();
                if !busy(cand.0) {
                    return Some(cand);
                }
            }
        }
        self.pending = Some(cand);
        None
    }

    pub(crate) fn generation(&self, blk: u64) -> u64 {
        self.gens.get(blk as usize).copied().unwrap_or(0) as u64
    }

    /// Marks a rewrite of `blk` and returns its new generation.
    pub(crate) fn bump(&mut self, blk: u64) -> u64 {
        match self.gens.get_mut(blk as usize) {
            Some(g) => {
                *g = g.wrapping_add(1);
                *g as u64
            }
            None => 0,
        }
    }
}

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

/// Counters of one batch.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub ops: u64,
}

fn what(sh: &Shared, write: bool, off: u64, id: usize) -> String {
    format!(
        "{} of {} at offset {off} in {}",
        if write { "write" } else { "read" },
        format_size(sh.block as u64),
        sh.file_name(id)
    )
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

/// Used by the io_uring engine to describe an I/O in errors.
pub(crate) fn describe(sh: &Shared, write: bool, off: u64, id: usize) -> String {
    what(sh, write, off, id)
}

/// The error for a failed I/O completion (`res` is `-errno`).
pub(crate) fn completion_error(
    sh: &Shared,
    write: bool,
    off: u64,
    id: usize,
    res: i32,
) -> BenchError {
    if res < 0 {
        io_error(
            describe(sh, write, off, id),
            io::Error::from_raw_os_error(-res),
        )
    } else {
        BenchError::Other(format!(
            "{}: short transfer, {res} of {} bytes",
            describe(sh, write, off, id),
            sh.block
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picker(op: Op, nblocks: u64) -> Picker {
        Picker {
            rng: Rng::new(7),
            cursor: 0,
            nblocks,
            op,
            rwmix: 70,
            gens: vec![0; nblocks as usize],
            pending: None,
        }
    }

    #[test]
    fn sequential_wraps_and_random_stays_in_range() {
        let mut p = picker(Op::Read, 3);
        let v: Vec<_> = (0..7).map(|_| p.draw()).collect();
        assert_eq!(
            v.iter().map(|x| x.0).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert!(v.iter().all(|x| !x.1));
        let mut p = picker(Op::RandWrite, 1000);
        assert!((0..10_000).all(|_| {
            let (b, w) = p.draw();
            b < 1000 && w
        }));
    }

    #[test]
    fn randrw_follows_rwmix() {
        let mut p = picker(Op::RandRw, 1 << 20);
        let n = 100_000;
        let reads = (0..n).filter(|_| !p.draw().1).count();
        let share = reads as f64 / n as f64;
        assert!((share - 0.70).abs() < 0.01, "read share {share}");
    }

    #[test]
    fn busy_blocks_are_avoided_or_deferred() {
        let mut p = picker(Op::Read, 4);
        assert_eq!(p.next(|b| b == 0), None);
        assert_eq!(p.next(|_| false), Some((0, false)));
        let mut p = picker(Op::RandRead, 2);
        for _ in 0..100 {
            if let Some((b, _)) = p.next(|b| b == 0) {
                assert_eq!(b, 1);
            }
        }
    }
}
