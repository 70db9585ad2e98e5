//! The streams of `net.tcp_throughput`: each stream's sender or
//! receiver thread, the receiver's counts and the server's reports, and
//! the tally of a sample.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use benchsuite_core::{BenchError, Work};

use crate::client::{DATA_TIMEOUT, Dialer};
use crate::proto::{self, REPORT_LEN, Role, STREAM};

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
/// How far a report's time may run ahead of this host's clock since the
/// stream began: the two clocks tick alike, the server's starts later.
pub(super) const CLOCK_SLACK: Duration = Duration::from_secs(1);

/// What the streams' threads share with the thread that takes samples.
pub(super) struct Meter {
    /// Streams still short of their share of the sample being waited for:
    /// the stream that brings it to 0 wakes the sampler.
    pub(super) short: AtomicUsize,
    pub(super) waiter: Mutex<Option<Thread>>,
    /// The first stream failure; the next sample (or the finish) fails
    /// with it.
    pub(super) failure: Mutex<Option<BenchError>>,
    pub(super) failed: AtomicBool,
    /// Set at the end: the streams stop.
    pub(super) stop: AtomicBool,
    /// How long a stream may go without progress, and how long it may take
    /// to end after the stop ([`DATA_TIMEOUT`]; shorter in tests).
    pub(super) idle: Duration,
}

impl Meter {
    pub(super) fn new(idle: Duration) -> Meter {
        Meter {
            short: AtomicUsize::new(0),
            waiter: Mutex::new(None),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            idle,
        }
    }

    pub(super) fn wake(&self) {
        if let Some(t) = lock(&self.waiter).as_ref() {
            t.unpark();
        }
    }

    /// A stream failed (a failure after the stop was asked for counts too:
    /// the end must be clean).
    pub(super) fn fail(&self, e: BenchError) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.failed.store(true, Ordering::SeqCst);
        self.wake();
    }

    pub(super) fn take_failure(&self) -> BenchError {
        lock(&self.failure)
            .take()
            .unwrap_or_else(|| BenchError::Other("a data stream failed".into()))
    }
}

/// `d` for a message: "30 s", "0.5 s".
pub(super) fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A stream's receiver-side count as known here.
pub(super) struct Count {
    /// `down`: the bytes read here so far.
    pub(super) read: AtomicU64,
    /// `up`: the server's latest report (bytes, its nanoseconds).
    pub(super) report: Mutex<(u64, u64)>,
    /// The count at which the stream has its share of the sample being
    /// waited for (`u64::MAX`: none, or already reached).
    pub(super) target: AtomicU64,
}

impl Default for Count {
    fn default() -> Count {
        Count {
            read: AtomicU64::new(0),
            report: Mutex::new((0, 0)),
            target: AtomicU64::new(u64::MAX),
        }
    }
}

impl Count {
    /// The stream's count is now `now`: if that reaches its target, the
    /// target is claimed (once, by this thread or the sampler) and the last
    /// stream to get there wakes the sampler.
    pub(super) fn reached(&self, now: u64, meter: &Meter) {
        let t = self.target.load(Ordering::SeqCst);
        if t != u64::MAX
            && now >= t
            && self
                .target
                .compare_exchange(t, u64::MAX, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            && meter.short.fetch_sub(1, Ordering::SeqCst) == 1
        {
            meter.wake();
        }
    }
}

/// A stream's count at one instant: the bytes its receiver had counted
/// and when, on the receiver's clock (`up`: the server's nanoseconds since
/// the stream began, from its report; `down`: this host's, since
/// [`Streams::epoch`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    pub(super) bytes: u64,
    pub(super) ns: u64,
}

/// Who a stream's messages name: its number and the server's address.
#[derive(Clone)]
pub(super) struct Who {
    pub(super) index: usize,
    pub(super) server: String,
}

/// One data connection and the thread that drives it: for `up` a sender
/// that also reads the server's reports, for `down` a receiver.
pub(super) struct Stream {
    pub(super) role: Role,
    pub(super) who: Who,
    /// A handle on the connection: the stop byte (`down`), and the
    /// shutdown that unblocks the thread when dropped unfinished.
    pub(super) sock: TcpStream,
    pub(super) count: Arc<Count>,
    /// The thread; it returns the receiver's count of the whole stream
    /// (`None` if it failed: the failure is in the meter).
    pub(super) worker: Option<JoinHandle<Option<u64>>>,
}

impl Stream {
    pub(super) fn open(
        dialer: &Dialer,
        index: usize,
        role: Role,
        block: usize,
        nodelay: bool,
        meter: &Arc<Meter>,
        cpu: Option<usize>,
    ) -> Result<Stream, BenchError> {
        let sock = dialer.attach(role, nodelay)?;
        Stream::start(sock, index, role, block, meter, cpu)
    }

    /// Starts the stream on an attached connection.
    pub(super) fn start(
        mut sock: TcpStream,
        index: usize,
        role: Role,
        block: usize,
        meter: &Arc<Meter>,
        cpu: Option<usize>,
    ) -> Result<Stream, BenchError> {
        let io = |what: &str, e| BenchError::io(format!("{what} (data connection)"), e);
        let who = Who {
            index,
            server: match sock.peer_addr() {
                Ok(a) => format!("the server at {a}"),
                Err(_) => "the server".into(),
            },
        };
        sock.set_read_timeout(Some(meter.idle))
            .map_err(|e| io("setting up the stream", e))?;
        // Before the server's clock for the stream starts.
        let started = Instant::now();
        sock.write_all(&STREAM.to_be_bytes())
            .map_err(|e| io("starting the stream", e))?;
        let count = Arc::new(Count::default());
        let handle = sock.try_clone().map_err(|e| io("cloning", e))?;
        let (c, m, w) = (count.clone(), meter.clone(), who.clone());
        // The CPU was checked (it is one this process may run on); a
        // failure to pin now leaves the thread where it is.
        let pin = move || {
            if let Some(cpu) = cpu {
                let _ = benchsuite_core::team::pin_current_thread(cpu);
            }
        };
        let worker = match role {
            Role::Sink => thread::Builder::new()
                .name("benchsuite-net-send".into())
                .spawn(move || {
                    pin();
                    send(sock, block, &c, &m, Reports::new(w, started))
                }),
            Role::Source => thread::Builder::new()
                .name("benchsuite-net-recv".into())
                .spawn(move || {
                    pin();
                    receive(sock, block, &c, &m, &w)
                }),
            Role::Echo => return Err(BenchError::Other("echo is not a throughput role".into())),
        }
        .map_err(|e| BenchError::io("spawning a stream thread", e))?;
        Ok(Stream {
            role,
            who,
            sock: handle,
            count,
            worker: Some(worker),
        })
    }

    /// The receiver's count as known here.
    pub(super) fn current(&self) -> u64 {
        match self.role {
            Role::Sink => lock(&self.count.report).0,
            _ => self.count.read.load(Ordering::SeqCst),
        }
    }

    pub(super) fn mark(&self, epoch: Instant) -> Mark {
        match self.role {
            Role::Sink => {
                let (bytes, ns) = *lock(&self.count.report);
                Mark { bytes, ns }
            }
            _ => Mark {
                bytes: self.count.read.load(Ordering::SeqCst),
                ns: epoch.elapsed().as_nanos() as u64,
            },
        }
    }

    /// Joins the stream's thread: the receiver's count of the whole
    /// stream, `None` if it failed (its failure is in the meter).
    pub(super) fn join(&mut self, meter: &Meter) -> Option<u64> {
        self.worker.take().and_then(|h| {
            h.join().unwrap_or_else(|_| {
                meter.fail(BenchError::Other("a data stream thread panicked".into()));
                None
            })
        })
    }
}

impl Drop for Stream {
    /// Unfinished (an error or a panic on the way): the connection is shut
    /// down so the thread's blocked call returns, and it is joined.
    fn drop(&mut self) {
        if let Some(h) = self.worker.take() {
            let _ = self.sock.shutdown(Shutdown::Both);
            let _ = h.join();
        }
    }
}

/// The server's count reports as they arrive on an `up` stream: whole
/// ones are checked and go to the stream's [`Count`].
pub(super) struct Reports {
    pub(super) who: Who,
    /// When this host started the stream (before the server's clock for
    /// it started).
    pub(super) started: Instant,
    /// A report's first bytes, when a read ended inside one.
    pub(super) part: [u8; REPORT_LEN],
    pub(super) filled: usize,
    /// The server's latest count and its time.
    pub(super) last: u64,
    pub(super) last_ns: u64,
}

impl Reports {
    pub(super) fn new(who: Who, started: Instant) -> Reports {
        Reports {
            who,
            started,
            part: [0; REPORT_LEN],
            filled: 0,
            last: 0,
            last_ns: 0,
        }
    }

    /// Takes `bytes` of the report stream; `sent` is what this host has
    /// written on the stream so far.
    pub(super) fn feed(
        &mut self,
        mut bytes: &[u8],
        sent: u64,
        count: &Count,
        meter: &Meter,
    ) -> Result<(), BenchError> {
        while !bytes.is_empty() {
            let n = (REPORT_LEN - self.filled).min(bytes.len());
            self.part[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled < REPORT_LEN {
                break;
            }
            self.filled = 0;
            let (got, ns) = proto::decode_report(&self.part);
            self.check(got, ns, sent)?;
            *lock(&count.report) = (got, ns);
            self.last = got;
            self.last_ns = ns;
            count.reached(got, meter);
        }
        Ok(())
    }

    /// A report must count no more than was sent, no less than the last
    /// one, and come later than it, but not later than this host's clock
    /// allows.
    pub(super) fn check(&self, got: u64, ns: u64, sent: u64) -> Result<(), BenchError> {
        let Who { index, server } = &self.who;
        if got > sent {
            return Err(BenchError::Verify(format!(
                "{server} reported {got} bytes for stream {index} but only {sent} were sent"
            )));
        }
        if got < self.last {
            return Err(BenchError::Verify(format!(
                "{server}'s count for stream {index} went back from {} to {got} bytes",
                self.last
            )));
        }
        if ns <= self.last_ns {
            return Err(BenchError::Verify(format!(
                "{server}'s clock for stream {index} did not advance: a report at {ns} ns came after one at {} ns",
                self.last_ns
            )));
        }
        let limit = self.started.elapsed() + CLOCK_SLACK;
        if u128::from(ns) > limit.as_nanos() {
            return Err(BenchError::Verify(format!(
                "{server} reported a time of {ns} ns for stream {index}, more than the {} since the stream began here",
                secs(limit)
            )));
        }
        Ok(())
    }

    /// Reads the reports already waiting (without blocking).
    pub(super) fn poll(
        &mut self,
        sock: &mut TcpStream,
        sent: u64,
        count: &Count,
        meter: &Meter,
    ) -> Result<(), BenchError> {
        let mut buf = [0u8; 64 * REPORT_LEN];
        let mut waiting = crate::sys::pending(sock).unwrap_or(0);
        while waiting > 0 {
            let want = waiting.min(buf.len());
            // `want` bytes are queued: this read returns at once.
            let n = sock
                .read(&mut buf[..want])
                .map_err(|e| BenchError::io("reading the server's counts (data connection)", e))?;
            if n == 0 {
                break;
            }
            self.feed(&buf[..n], sent, count, meter)?;
            waiting -= n.min(waiting);
        }
        Ok(())
    }

    /// Reads the reports to the server's end of file (after our shutdown):
    /// the server's total. A server that has not ended the stream
    /// [`Meter::idle`] after the stop has its connection shut down.
    pub(super) fn finish(
        mut self,
        sock: &mut TcpStream,
        sent: u64,
        count: &Count,
        meter: &Meter,
    ) -> Result<u64, BenchError> {
        let deadline = Instant::now() + meter.idle;
        let mut buf = [0u8; 64 * REPORT_LEN];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let _ = sock.shutdown(Shutdown::Both);
                return Err(BenchError::Other(format!(
                    "{} did not end stream {} within {} of the stop (no end of file after the last count)",
                    self.who.server,
                    self.who.index,
                    secs(meter.idle)
                )));
            }
            sock.set_read_timeout(Some(left)).map_err(|e| {
                BenchError::io("reading the server's last count (data connection)", e)
            })?;
            match sock.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.feed(&buf[..n], sent, count, meter)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted || proto::is_timeout(&e) => {}
                Err(e) => {
                    return Err(BenchError::io(
                        "reading the server's last count (data connection)",
                        e,
                    ));
                }
            }
        }
        if self.filled != 0 {
            return Err(BenchError::Other(format!(
                "{} closed stream {} inside a count report",
                self.who.server, self.who.index
            )));
        }
        Ok(self.last)
    }
}

/// `up`: writes `block`-sized pieces until the stop, reading the server's
/// count reports as they come (every [`proto::REPORT_INTERVAL`], between
/// partial writes too: a block may take long on a slow path), then shuts
/// the write side down and reads the reports to the end: the server's
/// total, which must be every byte written.
pub(super) fn send(
    mut sock: TcpStream,
    block: usize,
    count: &Count,
    meter: &Meter,
    mut reports: Reports,
) -> Option<u64> {
    let run = |sock: &mut TcpStream| -> Result<u64, BenchError> {
        let io = |what: &str, e| BenchError::io(format!("{what} (data connection)"), e);
        // Non-zero contents, so nothing on the way can treat the buffer as
        // a special (zero) page.
        let buf = vec![0xa5u8; block];
        let (mut sent, mut at): (u64, usize) = (0, 0);
        // A short write timeout, retried: see `proto::SEND_WAIT`.
        sock.set_write_timeout(Some(proto::SEND_WAIT))
            .map_err(|e| io("setting up the stream", e))?;
        let (mut progress, mut polled) = (Instant::now(), Instant::now());
        while !meter.stop.load(Ordering::Relaxed) {
            match sock.write(&buf[at..]) {
                Ok(0) => return Err(io("sending", io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    sent += n as u64;
                    at = (at + n) % block;
                    progress = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if proto::is_timeout(&e) => {
                    if progress.elapsed() >= meter.idle {
                        return Err(io("sending", e));
                    }
                }
                Err(e) => return Err(io("sending", e)),
            }
            if polled.elapsed() >= proto::REPORT_INTERVAL {
                polled = Instant::now();
                reports.poll(sock, sent, count, meter)?;
            }
        }
        sock.shutdown(Shutdown::Write)
            .map_err(|e| io("ending the stream", e))?;
        let who = reports.who.clone();
        let counted = reports.finish(sock, sent, count, meter)?;
        if counted != sent {
            return Err(BenchError::Verify(format!(
                "sent {sent} bytes on stream {}, {} counted {counted}",
                who.index, who.server
            )));
        }
        Ok(counted)
    };
    run(&mut sock).map_err(|e| meter.fail(e)).ok()
}

/// `down`: reads in `block`-sized reads, counting, until the server's end
/// of file (after the stop byte). The bytes read. A server that has not
/// ended the stream [`Meter::idle`] after the stop has its connection shut
/// down.
pub(super) fn receive(
    mut sock: TcpStream,
    block: usize,
    count: &Count,
    meter: &Meter,
    who: &Who,
) -> Option<u64> {
    let mut buf = vec![0u8; block];
    let mut low = crate::sys::LowWater::for_block(block);
    let mut got: u64 = 0;
    let mut stopping: Option<Instant> = None;
    loop {
        if stopping.is_none() && meter.stop.load(Ordering::SeqCst) {
            stopping = Some(Instant::now());
        }
        if let Some(t) = stopping
            && t.elapsed() >= meter.idle
        {
            let _ = sock.shutdown(Shutdown::Both);
            meter.fail(BenchError::Other(format!(
                "{} did not end stream {} within {} of the stop (it kept sending)",
                who.server,
                who.index,
                secs(meter.idle)
            )));
            return None;
        }
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                low.tick(&sock);
                got += n as u64;
                let now = count.read.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
                count.reached(now, meter);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                meter.fail(BenchError::io(
                    format!("receiving on stream {} from {}", who.index, who.server),
                    e,
                ));
                return None;
            }
        }
    }
    if !meter.stop.load(Ordering::SeqCst) {
        meter.fail(BenchError::Other(format!(
            "{} closed stream {} in the middle of the test",
            who.server, who.index
        )));
        return None;
    }
    Some(got)
}

/// Each stream's rate over a sample (bytes over its receiver's time
/// between the marks) and the sample's time (the streams' mean interval).
pub(super) fn tally(before: &[Mark], after: &[Mark]) -> Result<(Vec<f64>, f64), BenchError> {
    let (mut rates, mut secs) = (Vec::with_capacity(before.len()), Vec::new());
    for (i, (b, a)) in before.iter().zip(after).enumerate() {
        let bytes = a.bytes.saturating_sub(b.bytes);
        let ns = a.ns.saturating_sub(b.ns);
        if ns == 0 {
            if bytes > 0 {
                return Err(BenchError::Verify(format!(
                    "stream {i} counted {bytes} bytes in no time on its receiver's clock"
                )));
            }
            rates.push(0.0);
        } else {
            let t = ns as f64 * 1e-9;
            rates.push(bytes as f64 / t);
            secs.push(t);
        }
    }
    let time = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
    if !(time > 0.0 && time.is_finite()) {
        return Err(BenchError::Other(
            "a sample took no time on any stream's clock: it has no rate".into(),
        ));
    }
    Ok((rates, time))
}

/// The test's streams, flowing from [`Streams::open`] to
/// [`Streams::stop`] (or the drop).
pub(super) struct Streams {
    pub(super) meter: Arc<Meter>,
    pub(super) list: Vec<Stream>,
    pub(super) block: u64,
    /// The clock of the marks of `down` streams.
    pub(super) epoch: Instant,
    /// Where the last sample ended, per stream: the next one begins there,
    /// so the samples tile each stream's time with neither gaps nor
    /// overlaps (what falls between two `run` calls is in the later one).
    pub(super) last: Option<Vec<Mark>>,
}

impl Streams {
    pub(super) fn new(block: usize, idle: Duration) -> Streams {
        Streams {
            meter: Arc::new(Meter::new(idle)),
            list: Vec::new(),
            block: block as u64,
            epoch: Instant::now(),
            last: None,
        }
    }

    pub(super) fn open(
        dialer: Dialer,
        roles: &[Role],
        block: usize,
        nodelay: bool,
        cpu: Option<usize>,
    ) -> Result<Streams, BenchError> {
        let mut s = Streams::new(block, DATA_TIMEOUT);
        for (i, &role) in roles.iter().enumerate() {
            // On an error the streams opened so far are stopped by the drop.
            let stream = Stream::open(&dialer, i, role, block, nodelay, &s.meter, cpu)?;
            s.list.push(stream);
        }
        Ok(s)
    }

    pub(super) fn marks(&self) -> Vec<Mark> {
        self.list.iter().map(|s| s.mark(self.epoch)).collect()
    }

    /// Waits until every stream's receiver has counted `share` bytes past
    /// `before`, or a stream fails, or one counts nothing for
    /// [`Meter::idle`] (while the others may flow).
    pub(super) fn wait(&self, before: &[Mark], share: u64) -> Result<(), BenchError> {
        let meter = &*self.meter;
        *lock(&meter.waiter) = Some(thread::current());
        // Disarmed, counted, then armed: a stream claims its target at most
        // once, and only after `short` counts it.
        for s in &self.list {
            s.count.target.store(u64::MAX, Ordering::SeqCst);
        }
        meter.short.store(self.list.len(), Ordering::SeqCst);
        let targets: Vec<u64> = before
            .iter()
            .map(|b| b.bytes.saturating_add(share))
            .collect();
        for (s, &t) in self.list.iter().zip(&targets) {
            s.count.target.store(t, Ordering::SeqCst);
        }
        for s in &self.list {
            s.count.reached(s.current(), meter);
        }
        let mut seen: Vec<(u64, Instant)> = self
            .list
            .iter()
            .map(|s| (s.current(), Instant::now()))
            .collect();
        let result = 'wait: loop {
            if meter.failed.load(Ordering::SeqCst) {
                break Err(meter.take_failure());
            }
            if meter.short.load(Ordering::SeqCst) == 0 {
                break Ok(());
            }
            for ((s, &t), (last, at)) in self.list.iter().zip(&targets).zip(&mut seen) {
                let now = s.current();
                if now >= t {
                    continue;
                }
                if now != *last {
                    (*last, *at) = (now, Instant::now());
                } else if at.elapsed() >= meter.idle {
                    break 'wait Err(BenchError::Other(format!(
                        "stream {} ({}) moved no data for {} (is the path to {} still up?)",
                        s.who.index,
                        if s.role == Role::Sink {
                            "up: no count from the server advanced"
                        } else {
                            "down: nothing arrived"
                        },
                        secs(meter.idle),
                        s.who.server
                    )));
                }
            }
            // The last stream to reach its share wakes this thread.
            thread::park_timeout(meter.idle.min(Duration::from_millis(50)));
        };
        *lock(&meter.waiter) = None;
        result
    }

    /// One sample: from where the last one ended until every stream's
    /// receiver has counted `iters` more blocks (as a batch of `iters`
    /// writes per stream did). Each stream's rate is its receiver's bytes
    /// over its receiver's time between the two marks; the sample's time
    /// is the streams' mean interval, and its bytes the total rate over
    /// that time.
    pub(super) fn sample(&mut self, iters: u64) -> Result<Work, BenchError> {
        let n = self.list.len() as u64;
        let share = iters
            .checked_mul(self.block)
            .filter(|b| b.checked_mul(n).is_some())
            .ok_or_else(|| BenchError::Other(format!("a batch of {iters} blocks is too large")))?;
        let before = match self.last.take() {
            Some(m) => m,
            None => self.marks(),
        };
        self.wait(&before, share)?;
        let after = self.marks();
        let (rates, time) = tally(&before, &after)?;
        self.last = Some(after);
        let rate: f64 = rates.iter().sum();
        let mut w = Work::ops_bytes(iters * n, (rate * time).round() as u64);
        w.elapsed = Some(Duration::from_secs_f64(time));
        w.values.insert("throughput_bits".into(), rate * 8.0);
        w.values.insert(
            "stream_min".into(),
            rates.iter().copied().fold(f64::INFINITY, f64::min),
        );
        w.values.insert(
            "stream_max".into(),
            rates.iter().copied().fold(0.0, f64::max),
        );
        Ok(w)
    }

    /// Stops every stream cleanly and joins its threads: the bytes the
    /// server must have received (`up`) and sent (`down`), as counted
    /// here.
    pub(super) fn stop(mut self) -> Result<(u64, u64), BenchError> {
        let meter = self.meter.clone();
        meter.stop.store(true, Ordering::SeqCst);
        let mut list = std::mem::take(&mut self.list);
        for s in &mut list {
            if s.role == Role::Source && (&s.sock).write_all(&[1]).is_err() {
                // The server is gone: unblock the receiver.
                let _ = s.sock.shutdown(Shutdown::Both);
            }
        }
        let (mut up, mut down) = (0u64, 0u64);
        for s in &mut list {
            match (s.role, s.join(&meter)) {
                (Role::Sink, Some(counted)) => up = up.saturating_add(counted),
                (Role::Source, Some(got)) => down = down.saturating_add(got),
                _ => {}
            }
        }
        if meter.failed.load(Ordering::SeqCst) {
            return Err(meter.take_failure());
        }
        Ok((up, down))
    }
}
impl Drop for Streams {
    fn drop(&mut self) {
        // Unfinished: each stream's drop shuts it down and joins it.
        self.meter.stop.store(true, Ordering::SeqCst);
    }
}
