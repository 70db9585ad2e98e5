//! What every thread of one `disk.io` point shares ([`Shared`], with the
//! open loop's schedule, [`OpenLoop`]), a batch's counters and the text of
//! a failed I/O: the data that both engines act on, the sync loop in
//! `worker.rs` and io_uring in `uring.rs`, and that the prepared case
//! (`case.rs`) drives.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use benchsuite_core::BenchError;
use benchsuite_core::openloop::{Schedule, Timeline};
use benchsuite_core::units::format_size;
use hdrhistogram::Histogram;

use crate::settings::{EngineKind, Fsync, Op};
use crate::sys::io_error;

/// The `iters` value that tells a worker to drain and verify (teardown).
/// The runner never asks for this many iterations (its batches stop at 2^40).
pub const FINISH: u64 = u64::MAX;

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

    pub(crate) fn schedule(&self) -> Schedule {
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
    pub(crate) fn claim(&self, open: &OpenLoop, schedule: &Schedule) -> Option<Instant> {
        if self.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
            return None;
        }
        Some(schedule.at(open.next.fetch_add(1, Ordering::Relaxed)))
    }

    pub(crate) fn note(&self, msg: String) {
        let mut n = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        if !n.contains(&msg) {
            n.push(msg);
        }
    }

    pub(crate) fn len(&self) -> u64 {
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

/// Counters of one batch.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub ops: u64,
}

pub(crate) fn what(sh: &Shared, write: bool, off: u64, id: usize) -> String {
    format!(
        "{} of {} at offset {off} in {}",
        if write { "write" } else { "read" },
        format_size(sh.block as u64),
        sh.file_name(id)
    )
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
