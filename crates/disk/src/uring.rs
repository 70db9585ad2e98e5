//! The io_uring engine: one ring per thread, `qd` slots each with its own
//! aligned buffer (registered with the kernel when it allows), reads and
//! writes at explicit offsets.
//!
//! Latency is fio's completion latency (`clat`): from the moment the
//! submitting `io_uring_enter` returns to the moment the completion is
//! reaped. As in fio, submission and waiting are separate calls, the
//! completion time is read once per reaped batch, and the issue time once
//! per submitted batch. The ring is set up like fio 3.33's: single issuer
//! with deferred task work where the kernel has it, else cooperative task
//! running, else plain.

use std::collections::HashSet;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use benchsuite_core::BenchError;
use benchsuite_core::openloop::{latency_ns, pace_until};
use hdrhistogram::Histogram;
use io_uring::{IoUring, opcode, types};

use crate::pattern::{Rng, check_block, fill_block, scramble};
use crate::picker::Picker;
use crate::shared::{Shared, Tally, completion_error};
use crate::sys::AlignedBuf;

/// `IORING_ENTER_GETEVENTS` from `<linux/io_uring.h>`.
const IORING_ENTER_GETEVENTS: u32 = 1;

/// Open loop: how long before an I/O's intended start the thread stops
/// blocking in the kernel for completions and spins (polling them), so
/// that a late wake-up (timer slack, scheduling) does not delay the
/// submission. The same margin as the core's `pace_until`.
const SPIN: Duration = benchsuite_core::openloop::SPIN;

/// Open loop without `IORING_ENTER_EXT_ARG` (Linux < 5.11): the longest
/// sleep between two polls of the completions, and so about the most a
/// completion's reaping (its latency) can be late.
const POLL_SLEEP: Duration = Duration::from_micros(20);

#[derive(Debug, Clone, Copy)]
struct Slot {
    blk: u64,
    write: bool,
    generation: u64,
    /// Where its latency starts: when the submitting call returned
    /// (closed loop), or its intended start (open loop).
    start: Instant,
}

/// One thread's ring and buffers.
pub struct Uring {
    // Field order matters: the ring is dropped (after `Drop::drop` drained
    // it) before the buffers it points into are freed.
    ring: IoUring,
    slots: Vec<Slot>,
    free: Vec<usize>,
    inflight: usize,
    registered: bool,
    /// The kernel takes a wait timeout (`IORING_FEAT_EXT_ARG`).
    ext_arg: bool,
    broken: bool,
    /// Offset of block 0 in the file ([`Shared::base`]).
    base: u64,
    /// Blocks with an I/O in flight (verify=on only, so a read never races
    /// a write of the same block).
    busy: HashSet<u64>,
    /// Slots pushed since the last submit, to stamp their issue time.
    fresh: Vec<usize>,
    /// Completions collected from the ring, reused between calls.
    cqes: Vec<(u64, i32)>,
    /// Open loop: how late each I/O was submitted after its intended
    /// start, in nanoseconds (taken by the worker after each batch).
    pub lag: Histogram<u64>,
    bufs: Vec<AlignedBuf>,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring")
            .field("slots", &self.slots.len())
            .field("inflight", &self.inflight)
            .field("registered", &self.registered)
            .finish()
    }
}

/// How each ring was set up, for the record's notes.
const SETUPS: [&str; 3] = [
    "single issuer + deferred task work + cooperative task running",
    "cooperative task running",
    "default flags",
];

fn build_ring(entries: u32) -> io::Result<(IoUring, &'static str)> {
    let mut last = None;
    for (flags, setup) in SETUPS.iter().enumerate() {
        let mut b = IoUring::builder();
        if flags == 0 {
            b.setup_single_issuer().setup_defer_taskrun();
        }
        if flags <= 1 {
            b.setup_coop_taskrun();
        }
        match b.build(entries) {
            Ok(r) => return Ok((r, setup)),
            // Older kernels reject the newer setup flags with EINVAL.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("io_uring setup failed")))
}

/// Whether io_uring can be used here, checked once in `prepare` so a kernel
/// that forbids it (`kernel.io_uring_disabled`, a seccomp filter) or lacks
/// an opcode leads to the sync engine with a warning instead of a failure.
pub fn probe() -> Result<(), benchsuite_core::ValueError> {
    probe_text().map_err(Into::into)
}

fn probe_text() -> Result<(), String> {
    let ring = IoUring::new(2).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no io_uring (ENOSYS)".to_string(),
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!("io_uring_setup is not permitted ({e}){}", disabled_hint())
        }
        _ => format!("io_uring_setup failed: {e}"),
    })?;
    let mut p = io_uring::Probe::new();
    ring.submitter().register_probe(&mut p).map_err(|e| {
        format!("this kernel's io_uring cannot list its opcodes (Linux < 5.6?): {e}")
    })?;
    for (code, name) in [
        (opcode::Read::CODE, "READ"),
        (opcode::Write::CODE, "WRITE"),
        (opcode::ReadFixed::CODE, "READ_FIXED"),
        (opcode::WriteFixed::CODE, "WRITE_FIXED"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("this kernel's io_uring lacks IORING_OP_{name}"));
        }
    }
    Ok(())
}

fn disabled_hint() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| s.trim().to_string())
        .as_deref()
    {
        Ok("2") => ": sysctl kernel.io_uring_disabled=2 turns it off for everyone".into(),
        Ok("1") => {
            ": sysctl kernel.io_uring_disabled=1 allows it only to the kernel.io_uring_group".into()
        }
        _ => ": probably a seccomp filter (container runtimes often block io_uring)".into(),
    }
}

impl Uring {
    /// A ring of `qd` slots with their buffers; registers the buffers when
    /// the kernel allows. The note says how the ring was set up.
    pub fn new(sh: &Shared, base: u64, rng: &mut Rng) -> Result<(Uring, String), BenchError> {
        let qd = sh.qd;
        let entries = (qd as u32).next_power_of_two();
        let (ring, setup) =
            build_ring(entries).map_err(|e| crate::sys::io_error("creating an io_uring", e))?;
        let mut bufs = Vec::with_capacity(qd);
        for _ in 0..qd {
            let mut b = AlignedBuf::new(sh.block, sh.align)?;
            rng.fill(b.as_mut_slice());
            bufs.push(b);
        }
        let iovecs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec describes a live buffer owned by this Uring;
        // the buffers are freed only after the ring (field order, and Drop
        // drains in-flight I/O first), so the kernel never sees a dangling
        // registration.
        let reg = unsafe { ring.submitter().register_buffers(&iovecs) };
        let (registered, note) = match reg {
            Ok(()) => (
                true,
                format!("io_uring ring: {setup}; buffers registered (READ_FIXED/WRITE_FIXED)"),
            ),
            Err(e) => (
                false,
                format!(
                    "io_uring ring: {setup}; the kernel refused to register the buffers ({}), so plain READ/WRITE were used, which pin pages per I/O (fio's default, fixedbufs=0)",
                    benchsuite_core::error_chain(&crate::sys::io_error("register_buffers", e))
                ),
            ),
        };
        let now = Instant::now();
        let ext_arg = ring.params().is_feature_ext_arg();
        let mut note = note;
        if sh.open.is_some() && !ext_arg {
            note.push_str(&format!(
                "; this kernel's io_uring has no wait timeout (IORING_FEAT_EXT_ARG, Linux 5.11): between two open-loop I/Os completions were polled every {} µs, so a latency may read up to that much long",
                POLL_SLEEP.as_micros()
            ));
        }
        Ok((
            Uring {
                ring,
                slots: vec![
                    Slot {
                        blk: 0,
                        write: false,
                        generation: 0,
                        start: now,
                    };
                    qd
                ],
                free: (0..qd).rev().collect(),
                inflight: 0,
                registered,
                ext_arg,
                broken: false,
                base,
                busy: HashSet::new(),
                fresh: Vec::with_capacity(qd),
                cqes: Vec::with_capacity(qd),
                lag: benchsuite_core::runner::new_latency_histogram(),
                bufs,
            },
            note,
        ))
    }

    /// I/Os in flight.
    pub fn inflight(&self) -> usize {
        self.inflight
    }

    /// True once waiting on the ring failed: nothing more can be reaped.
    pub fn broken(&self) -> bool {
        self.broken
    }

    /// Issues I/Os until `qd` are in flight (or an fsync becomes due, or
    /// the next block is busy), then submits them and stamps their issue
    /// time.
    pub fn fill(
        &mut self,
        fd: RawFd,
        sh: &Shared,
        picker: &mut Picker,
        writes_since_sync: &mut u64,
        writes: &mut u64,
    ) -> Result<(), BenchError> {
        while self.inflight < sh.qd {
            let Some((idx, write)) = self.push_one(fd, sh, picker, writes_since_sync, writes)?
            else {
                break;
            };
            self.fresh.push(idx);
            // One submit per I/O, as fio does by default
            // (iodepth_batch_submit=1): on virtio and other devices that
            // start work on every doorbell, batching submissions delays the
            // first I/Os of a batch and lowers throughput.
            self.submit_pending()?;
            if write
                && matches!(sh.fsync, crate::settings::Fsync::Every(n) if *writes_since_sync >= n)
            {
                break;
            }
        }
        self.submit_pending()
    }

    /// Open loop: issues one I/O intended to start at `at`, once it is due
    /// and a slot is free, and submits it at once. Its latency counts from
    /// `at`, whatever delayed it (a full ring, a busy block, a late wake-up).
    ///
    /// While it is not due, completions of the I/Os in flight are reaped
    /// as they come (blocked in the kernel until shortly before `at`, then
    /// polling while it spins the last stretch, as
    /// [`pace_until`](benchsuite_core::openloop::pace_until) does); with
    /// every slot in flight (the cap: [`Shared::qd`]) it waits for a
    /// completion.
    #[allow(clippy::too_many_arguments)]
    pub fn issue_at(
        &mut self,
        at: Instant,
        fd: RawFd,
        sh: &Shared,
        picker: &mut Picker,
        writes_since_sync: &mut u64,
        writes: &mut u64,
        hist: &mut Histogram<u64>,
        t: &mut Tally,
        id: usize,
    ) -> Result<(), BenchError> {
        loop {
            if self.free.is_empty() {
                // The cap: wait for one of ours to complete.
                self.reap(sh, hist, t, id, None)?;
                continue;
            }
            let now = Instant::now();
            if now < at {
                if self.inflight == 0 {
                    pace_until(at);
                } else if at - now > SPIN {
                    self.wait_until(at - SPIN)?;
                    self.process(sh, hist, t, id, None)?;
                    continue;
                } else {
                    self.poll()?;
                    self.process(sh, hist, t, id, None)?;
                    std::thread::yield_now();
                    continue;
                }
            }
            match self.push_one(fd, sh, picker, writes_since_sync, writes)? {
                Some((idx, _)) => {
                    self.slots[idx].start = at;
                    self.lag.saturating_record(latency_ns(at, Instant::now()));
                    return self.submit();
                }
                // The next block has a write or read in flight (verify=on):
                // wait for a completion and try again.
                None if self.inflight > 0 => self.reap(sh, hist, t, id, None)?,
                None => {
                    return Err(BenchError::Other(
                        "io_uring open loop: nothing in flight and nothing could be issued".into(),
                    ));
                }
            }
        }
    }

    /// Prepares the next I/O in a free slot and pushes it to the
    /// submission queue (not yet submitted); its `start` is now. `None`
    /// when no slot is free or the picked block is busy (verify=on).
    fn push_one(
        &mut self,
        fd: RawFd,
        sh: &Shared,
        picker: &mut Picker,
        writes_since_sync: &mut u64,
        writes: &mut u64,
    ) -> Result<Option<(usize, bool)>, BenchError> {
        let block = sh.block;
        let verify = sh.verify;
        if self.free.is_empty() {
            return Ok(None);
        }
        let busy = &self.busy;
        let Some((blk, write)) = picker.next(|b| verify && busy.contains(&b)) else {
            return Ok(None);
        };
        let Some(idx) = self.free.pop() else {
            return Ok(None);
        };
        let off = self.base + blk * block as u64;
        let generation = if write {
            *writes_since_sync += 1;
            *writes += 1;
            let buf = &mut self.bufs[idx].as_mut_slice()[..block];
            if verify {
                let g = picker.bump(blk);
                fill_block(buf, off, g);
                g
            } else {
                scramble(buf, off, *writes);
                0
            }
        } else {
            picker.generation(blk)
        };
        let ptr = self.bufs[idx].as_mut_ptr();
        let len = block as u32;
        let fdt = types::Fd(fd);
        let entry = match (write, self.registered) {
            (false, true) => opcode::ReadFixed::new(fdt, ptr, len, idx as u16)
                .offset(off)
                .build(),
            (true, true) => opcode::WriteFixed::new(fdt, ptr, len, idx as u16)
                .offset(off)
                .build(),
            (false, false) => opcode::Read::new(fdt, ptr, len).offset(off).build(),
            (true, false) => opcode::Write::new(fdt, ptr, len).offset(off).build(),
        }
        .user_data(idx as u64);
        // SAFETY: the entry points into bufs[idx], which stays allocated
        // and is not touched by this code until the completion carrying
        // user_data idx is reaped (the slot is off the free list until
        // then), and Drop drains every in-flight I/O before the buffers
        // are freed. The SQ has at least as many entries as slots, and
        // every pushed entry is submitted before the next push.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        if pushed.is_err() {
            self.free.push(idx);
            return Ok(None);
        }
        self.slots[idx] = Slot {
            blk,
            write,
            generation,
            start: Instant::now(),
        };
        if verify {
            self.busy.insert(blk);
        }
        self.inflight += 1;
        Ok(Some((idx, write)))
    }

    /// Submits what is in the submission queue and stamps the issue time
    /// of those I/Os (after the submitting call returns, as fio does).
    fn submit_pending(&mut self) -> Result<(), BenchError> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        self.submit()?;
        let now = Instant::now();
        for &i in &self.fresh {
            self.slots[i].start = now;
        }
        self.fresh.clear();
        Ok(())
    }

    /// Submits everything in the submission queue.
    fn submit(&mut self) -> Result<(), BenchError> {
        let mut spins = 0;
        while !self.ring.submission().is_empty() {
            let n = self.ring.submission().len() as u32;
            // GETEVENTS with min_complete 0 does not wait; it runs the
            // deferred completion work, so completions are seen without an
            // extra wait (fio 3.33's commit passes the same flag).
            // SAFETY: n entries were pushed and synced to the kernel-visible
            // tail (SubmissionQueue syncs on drop); no argument pointer.
            let sub = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(n, 0, IORING_ENTER_GETEVENTS, None)
            };
            match sub {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => {
                    // The entries never reached the kernel and cannot be
                    // taken back: mark the ring unusable (Drop then keeps
                    // the buffers rather than guess).
                    self.broken = true;
                    return Err(crate::sys::io_error("io_uring_enter (submit)", e));
                }
            }
            spins += 1;
            if spins > 1000 {
                self.broken = true;
                return Err(BenchError::Other(
                    "io_uring_enter keeps leaving entries unsubmitted".into(),
                ));
            }
        }
        Ok(())
    }

    /// Makes completions that are done visible without waiting (runs the
    /// deferred task work).
    fn poll(&mut self) -> Result<(), BenchError> {
        if !self.ring.completion().is_empty() {
            return Ok(());
        }
        // SAFETY: nothing to submit, no argument pointer; min_complete 0
        // does not wait.
        let r = unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(0, 0, IORING_ENTER_GETEVENTS, None)
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(e) => {
                self.broken = true;
                Err(crate::sys::io_error("io_uring_enter (poll)", e))
            }
        }
    }

    /// Waits until a completion is ready or `deadline` has passed: in the
    /// kernel with a timeout (`IORING_ENTER_EXT_ARG`, Linux 5.11+), else
    /// polling between sleeps of at most [`POLL_SLEEP`].
    fn wait_until(&mut self, deadline: Instant) -> Result<(), BenchError> {
        if !self.ring.completion().is_empty() {
            return Ok(());
        }
        if self.ext_arg {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.poll();
            }
            let ts = types::Timespec::from(left);
            let args = types::SubmitArgs::new().timespec(&ts);
            return match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => Ok(()),
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => Ok(()),
                Err(e) => {
                    self.broken = true;
                    Err(crate::sys::io_error(
                        "io_uring_enter (wait with timeout)",
                        e,
                    ))
                }
            };
        }
        loop {
            self.poll()?;
            let now = Instant::now();
            if !self.ring.completion().is_empty() || now >= deadline {
                return Ok(());
            }
            std::thread::sleep((deadline - now).min(POLL_SLEEP));
        }
    }

    /// Waits for at least one completion (unless some are ready) and
    /// processes every ready one: latency recorded, reads verified, the
    /// slot freed, the shared budget charged (when `done` is given; it is
    /// set once the budget is spent). Bookkeeping is finished for every
    /// collected completion before the first error is returned.
    pub fn reap(
        &mut self,
        sh: &Shared,
        hist: &mut Histogram<u64>,
        t: &mut Tally,
        id: usize,
        done: Option<&mut bool>,
    ) -> Result<(), BenchError> {
        if self.ring.completion().is_empty() {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => return Ok(()),
                Err(e) => {
                    self.broken = true;
                    return Err(crate::sys::io_error("io_uring_enter (wait)", e));
                }
            }
        }
        self.process(sh, hist, t, id, done)
    }

    /// Processes every ready completion (without waiting): latency from
    /// the slot's start (the issue time, or in open loop the intended
    /// start), reads verified, the slot freed, the shared budget charged
    /// when `done` is given.
    fn process(
        &mut self,
        sh: &Shared,
        hist: &mut Histogram<u64>,
        t: &mut Tally,
        id: usize,
        mut done: Option<&mut bool>,
    ) -> Result<(), BenchError> {
        if self.ring.completion().is_empty() {
            return Ok(());
        }
        self.cqes.clear();
        self.cqes
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        let now = Instant::now();
        let block = sh.block;
        let mut first: Option<BenchError> = None;
        for &(ud, res) in &self.cqes {
            let idx = ud as usize;
            let Some(slot) = self.slots.get(idx).copied() else {
                first.get_or_insert(BenchError::Other(format!(
                    "io_uring returned an unknown completion tag {ud}"
                )));
                continue;
            };
            self.inflight = self.inflight.saturating_sub(1);
            self.free.push(idx);
            self.busy.remove(&slot.blk);
            let off = self.base + slot.blk * block as u64;
            if res < 0 || res as usize != block {
                first.get_or_insert(completion_error(sh, slot.write, off, id, res));
                continue;
            }
            hist.saturating_record(latency_ns(slot.start, now));
            if !slot.write && sh.verify {
                // No write of this block can be in flight with the read
                // (`busy`), so the generation at issue is the one on disk.
                if let Err(e) = check_block(
                    &self.bufs[idx].as_slice()[..block],
                    off,
                    slot.generation,
                    &sh.file_name(id),
                ) {
                    first.get_or_insert(e);
                }
            }
            t.ops += 1;
            if let Some(d) = done.as_deref_mut()
                && sh.budget.fetch_sub(1, Ordering::Relaxed) <= 1
            {
                *d = true;
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // Wait for every in-flight I/O: the kernel writes into (or reads
        // from) the buffers until it completes.
        while self.inflight > 0 && !self.broken {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(_) => break,
            }
            let n = self.ring.completion().count();
            self.inflight = self.inflight.saturating_sub(n);
        }
        if self.inflight > 0 {
            // Could not confirm completion: leak the buffers rather than
            // free memory the kernel might still write into.
            for b in self.bufs.drain(..) {
                std::mem::forget(b);
            }
        }
    }
}
