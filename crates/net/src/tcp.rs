//! `net.tcp_throughput`: bulk TCP transfer over one or more connections.
//!
//! The streams run continuously from `prepare` to `finish`, as iperf3's
//! do: a sample is an interval of the streams' time, not a transfer of its
//! own, so no sample ends with a round trip to the server (which on a long
//! path would leave the link idle for an RTT per sample). Each sample
//! counts the bytes **the receiver** got during it: for `down` this host
//! reads and counts them; for `up` the server reports its count with its
//! own timestamp at most every millisecond ([`proto::STREAM`]), and the
//! stream's rate is the server's bytes over the server's time between the
//! reports that bracket the sample. Bytes written into a socket buffer
//! are never counted as moved. Consecutive samples share their boundary
//! marks, so they tile each stream's time. Senders keep their socket
//! buffer topped up ([`proto::SEND_WAIT`]): on a long path the bytes in
//! flight are bounded by it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Direction, Finished, Meta, MetricSource,
    MetricSpec, ParamSpec, Point, Value, Work,
};

use crate::client::{DATA_TIMEOUT, Dialer, Link};
use crate::proto::{self, MAX_STREAMS, MAX_TCP_BLOCK, REPORT_LEN, Role, STREAM, TestSpec, UdpMode};

benchsuite_core::choice_enum! {
    /// Which way the bytes go (`direction`).
    enum Flow {
        /// This host sends to the server (iperf3's default).
        Up = "up",
        /// The server sends (iperf3 -R).
        Down = "down",
        /// Both at once (iperf3 --bidir).
        Bidir = "bidir",
    }
}

/// TCP throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct TcpThroughput;

impl Benchmark for TcpThroughput {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::client::Target::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "net.tcp_throughput",
            description: "bulk TCP transfer like iperf3: block-sized writes and reads over N parallel connections, bytes counted by the receiver",
            params: vec![
                ParamSpec::size(
                    "block",
                    "bytes per write() and per read() (iperf3 -l)",
                    1,
                    u64::from(MAX_TCP_BLOCK),
                    128 << 10,
                )
                .with_smoke(Value::Int(64 << 10)),
                ParamSpec::count(
                    "threads",
                    "parallel streams (connections), one thread each (iperf3 -P); bidir opens this many each way",
                    1,
                    u64::from(MAX_STREAMS / 2),
                    1,
                ),
                ParamSpec::choice_of(
                    "direction",
                    "up: this host sends to the server (iperf3 default); down: the server sends (iperf3 -R); bidir: both at once (iperf3 --bidir)",
                    Flow::Up,
                ),
                ParamSpec::flag(
                    "nodelay",
                    "TCP_NODELAY on both ends (disables Nagle's coalescing of small writes; iperf3 -N)",
                    false,
                ),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec("throughput"),
                MetricSpec {
                    name: "throughput_bits",
                    unit: "bit/s",
                    direction: Direction::Higher,
                    source: MetricSource::Reported("throughput_bits"),
                },
                MetricSpec {
                    name: "stream_min",
                    unit: "B/s",
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMin("stream_min"),
                },
                MetricSpec {
                    name: "stream_max",
                    unit: "B/s",
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMax("stream_max"),
                },
            ],
        }
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::host_facts(ctx))
    }

    /// The matching reference tool on loopback (none with `--peer`).
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::tcp(ctx, point)
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let block = point.u64("block")? as usize;
        let threads = point.u64("threads")? as u32;
        let nodelay = point.bool("nodelay")?;
        let direction = point.choice::<Flow>("direction")?;
        let roles: Vec<Role> = match direction {
            Flow::Up => vec![Role::Sink; threads as usize],
            Flow::Down => vec![Role::Source; threads as usize],
            Flow::Bidir => (0..2 * threads)
                .map(|i| {
                    if i < threads {
                        Role::Sink
                    } else {
                        Role::Source
                    }
                })
                .collect(),
        };
        let spec = TestSpec {
            block: block as u32,
            tcp_streams: roles.len() as u32,
            udp_streams: 0,
            udp_mode: UdpMode::Sink,
            nodelay,
        };
        let link = Link::open(ctx, spec)?;
        let mut notes = Vec::new();
        let peak = link.target.peak(
            "throughput",
            if direction == Flow::Bidir { 2 } else { 1 },
            &mut notes,
        );
        let streams = match Streams::open(link.dialer, &roles, block, nodelay) {
            Ok(s) => s,
            Err(e) => {
                let _ = link.finish();
                return Err(e);
            }
        };
        notes.push(format!(
            "the streams run continuously from setup to teardown; each sample counts the bytes the receiver got during it ({})",
            match direction {
                Flow::Up => "the server's counts over its own clock, reported every millisecond",
                Flow::Down => "counted here as they are read",
                Flow::Bidir => "server → here counted here; here → server from the server's counts over its own clock, reported every millisecond",
            }
        ));
        Ok(Box::new(TcpCase {
            streams,
            link,
            about: About {
                peak,
                notes,
                ..About::default()
            },
        }))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the streams' threads share with the thread that takes samples.
struct Meter {
    /// Receiver-side bytes of every stream, as known here (for `up`, as of
    /// the server's latest report).
    total: AtomicU64,
    /// The sampler waiting in [`Meter::wait_for`] is woken when `total`
    /// reaches this (`u64::MAX`: nobody waits).
    wake_at: AtomicU64,
    waiter: Mutex<Option<Thread>>,
    /// The first stream failure; the next sample (or the finish) fails
    /// with it.
    failure: Mutex<Option<BenchError>>,
    failed: AtomicBool,
    /// Set at the end: the streams stop.
    stop: AtomicBool,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            total: AtomicU64::new(0),
            wake_at: AtomicU64::new(u64::MAX),
            waiter: Mutex::new(None),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }

    /// `n` more bytes reached a receiver.
    fn add(&self, n: u64) {
        let now = self.total.fetch_add(n, Ordering::SeqCst) + n;
        if now >= self.wake_at.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    fn wake(&self) {
        if let Some(t) = lock(&self.waiter).as_ref() {
            t.unpark();
        }
    }

    /// A stream failed (a failure after the stop was asked for counts too:
    /// the end must be clean).
    fn fail(&self, e: BenchError) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.failed.store(true, Ordering::SeqCst);
        self.wake();
    }

    fn take_failure(&self) -> BenchError {
        lock(&self.failure)
            .take()
            .unwrap_or_else(|| BenchError::Other("a data stream failed".into()))
    }

    /// Waits until `total` reaches `target` and `ready()` holds (every
    /// stream has moved its share), or a stream fails, or no byte arrives
    /// for [`DATA_TIMEOUT`]. A stream that stalls while the others flow
    /// fails on its own socket's timeout.
    fn wait_for(&self, target: u64, ready: impl Fn() -> bool) -> Result<(), BenchError> {
        *lock(&self.waiter) = Some(thread::current());
        self.wake_at.store(target, Ordering::SeqCst);
        let mut seen = self.total.load(Ordering::SeqCst);
        let mut progress = Instant::now();
        let result = loop {
            if self.failed.load(Ordering::SeqCst) {
                break Err(self.take_failure());
            }
            let total = self.total.load(Ordering::SeqCst);
            if total >= target && ready() {
                break Ok(());
            }
            if total != seen {
                seen = total;
                progress = Instant::now();
            } else if progress.elapsed() >= DATA_TIMEOUT {
                break Err(BenchError::Other(format!(
                    "no data arrived for {} s (is the path to the server still up?)",
                    DATA_TIMEOUT.as_secs()
                )));
            }
            // Past the total, the slowest stream is polled for; before it,
            // the streams wake this thread when the total is reached.
            thread::park_timeout(if total >= target {
                Duration::from_micros(200)
            } else {
                Duration::from_millis(50)
            });
        };
        self.wake_at.store(u64::MAX, Ordering::SeqCst);
        result
    }
}

/// A stream's receiver-side count as known here.
#[derive(Default)]
struct Count {
    /// `down`: the bytes read here so far.
    read: AtomicU64,
    /// `up`: the server's latest report (bytes, its nanoseconds).
    report: Mutex<(u64, u64)>,
}

/// A stream's count at one instant: the bytes its receiver had counted
/// and when, on the receiver's clock (`up`: the server's nanoseconds since
/// the stream began, from its report; `down`: this host's, since
/// [`Streams::epoch`]).
#[derive(Clone, Copy)]
struct Mark {
    bytes: u64,
    ns: u64,
}

/// One data connection and the thread that drives it: for `up` a sender
/// that also reads the server's reports, for `down` a receiver.
struct Stream {
    role: Role,
    /// A handle on the connection: the stop byte (`down`), and the
    /// shutdown that unblocks the thread when dropped unfinished.
    sock: TcpStream,
    count: Arc<Count>,
    /// The thread; it returns the receiver's count of the whole stream
    /// (`None` if it failed: the failure is in the meter).
    worker: Option<JoinHandle<Option<u64>>>,
}

impl Stream {
    fn open(
        dialer: &Dialer,
        role: Role,
        block: usize,
        nodelay: bool,
        meter: &Arc<Meter>,
    ) -> Result<Stream, BenchError> {
        let io = |what: &str, e| BenchError::io(format!("{what} (data connection)"), e);
        let mut sock = dialer.attach(role, nodelay)?;
        sock.write_all(&STREAM.to_be_bytes())
            .map_err(|e| io("starting the stream", e))?;
        let count = Arc::new(Count::default());
        let handle = sock.try_clone().map_err(|e| io("cloning", e))?;
        let (c, m) = (count.clone(), meter.clone());
        let worker = match role {
            Role::Sink => thread::Builder::new()
                .name("benchsuite-net-send".into())
                .spawn(move || send(sock, block, &c, &m)),
            Role::Source => thread::Builder::new()
                .name("benchsuite-net-recv".into())
                .spawn(move || receive(sock, block, &c, &m)),
            Role::Echo => return Err(BenchError::Other("echo is not a throughput role".into())),
        }
        .map_err(|e| BenchError::io("spawning a stream thread", e))?;
        Ok(Stream {
            role,
            sock: handle,
            count,
            worker: Some(worker),
        })
    }

    fn mark(&self, epoch: Instant) -> Mark {
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
    fn join(&mut self, meter: &Meter) -> Option<u64> {
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
/// ones go to the stream's [`Count`] and the meter.
#[derive(Default)]
struct Reports {
    /// A report's first bytes, when a read ended inside one.
    part: [u8; REPORT_LEN],
    filled: usize,
    /// The server's latest count.
    last: u64,
}

impl Reports {
    /// Takes `bytes` of the report stream.
    fn feed(&mut self, mut bytes: &[u8], count: &Count, meter: &Meter) -> Result<(), BenchError> {
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
            if got < self.last {
                return Err(BenchError::Verify(format!(
                    "the server's count went back from {} to {got} bytes",
                    self.last
                )));
            }
            *lock(&count.report) = (got, ns);
            meter.add(got - self.last);
            self.last = got;
        }
        Ok(())
    }

    /// Reads the reports already waiting (without blocking).
    fn poll(
        &mut self,
        sock: &mut TcpStream,
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
            self.feed(&buf[..n], count, meter)?;
            waiting -= n.min(waiting);
        }
        Ok(())
    }

    /// Reads the reports to the server's end of file (after our shutdown):
    /// the server's total.
    fn finish(
        mut self,
        sock: &mut TcpStream,
        count: &Count,
        meter: &Meter,
    ) -> Result<u64, BenchError> {
        let mut buf = [0u8; 64 * REPORT_LEN];
        loop {
            match sock.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.feed(&buf[..n], count, meter)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(BenchError::io(
                        "reading the server's last count (data connection)",
                        e,
                    ));
                }
            }
        }
        if self.filled != 0 {
            return Err(BenchError::Other(
                "the server closed the data connection inside a count report".into(),
            ));
        }
        Ok(self.last)
    }
}

/// `up`: writes `block`-sized pieces until the stop, reading the server's
/// count reports as they come (every [`proto::REPORT_INTERVAL`]), then
/// shuts the write side down and reads the reports to the end: the
/// server's total, which must be every byte written.
fn send(mut sock: TcpStream, block: usize, count: &Count, meter: &Meter) -> Option<u64> {
    let run = |sock: &mut TcpStream| -> Result<u64, BenchError> {
        let io = |what: &str, e| BenchError::io(format!("{what} (data connection)"), e);
        // Non-zero contents, so nothing on the way can treat the buffer as
        // a special (zero) page.
        let buf = vec![0xa5u8; block];
        let mut sent: u64 = 0;
        let mut reports = Reports::default();
        // A short write timeout, retried: see `proto::SEND_WAIT`.
        sock.set_write_timeout(Some(proto::SEND_WAIT))
            .map_err(|e| io("setting up the stream", e))?;
        let mut polled = Instant::now();
        while !meter.stop.load(Ordering::Relaxed) {
            proto::write_all_retrying(sock, &buf, DATA_TIMEOUT).map_err(|e| io("sending", e))?;
            sent += block as u64;
            if polled.elapsed() >= proto::REPORT_INTERVAL {
                polled = Instant::now();
                reports.poll(sock, count, meter)?;
            }
        }
        sock.shutdown(Shutdown::Write)
            .map_err(|e| io("ending the stream", e))?;
        let counted = reports.finish(sock, count, meter)?;
        if counted != sent {
            return Err(BenchError::Verify(format!(
                "sent {sent} bytes on a stream, the server counted {counted}"
            )));
        }
        Ok(counted)
    };
    run(&mut sock).map_err(|e| meter.fail(e)).ok()
}

/// `down`: reads in `block`-sized reads, counting, until the server's end
/// of file (after the stop byte). The bytes read.
fn receive(mut sock: TcpStream, block: usize, count: &Count, meter: &Meter) -> Option<u64> {
    let mut buf = vec![0u8; block];
    let mut got: u64 = 0;
    loop {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got += n as u64;
                count.read.fetch_add(n as u64, Ordering::SeqCst);
                meter.add(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                meter.fail(BenchError::io("receiving (data connection)", e));
                return None;
            }
        }
    }
    if !meter.stop.load(Ordering::SeqCst) {
        meter.fail(BenchError::Other(
            "the server closed the data connection in the middle of the test".into(),
        ));
        return None;
    }
    Some(got)
}

/// The test's streams, flowing from [`Streams::open`] to
/// [`Streams::stop`] (or the drop).
struct Streams {
    meter: Arc<Meter>,
    list: Vec<Stream>,
    block: u64,
    /// The clock of the marks of `down` streams.
    epoch: Instant,
    /// Where the last sample ended, per stream: the next one begins there,
    /// so the samples tile each stream's time with neither gaps nor
    /// overlaps (what falls between two `run` calls is in the later one).
    last: Option<Vec<Mark>>,
}

impl Streams {
    fn open(
        dialer: Dialer,
        roles: &[Role],
        block: usize,
        nodelay: bool,
    ) -> Result<Streams, BenchError> {
        let mut s = Streams {
            meter: Arc::new(Meter::new()),
            list: Vec::with_capacity(roles.len()),
            block: block as u64,
            epoch: Instant::now(),
            last: None,
        };
        for &role in roles {
            // On an error the streams opened so far are stopped by the drop.
            s.list
                .push(Stream::open(&dialer, role, block, nodelay, &s.meter)?);
        }
        Ok(s)
    }

    fn marks(&self) -> Vec<Mark> {
        self.list.iter().map(|s| s.mark(self.epoch)).collect()
    }

    /// One sample: from where the last one ended until every stream's
    /// receiver has counted `iters` more blocks (as a batch of `iters`
    /// writes per stream did). Each stream's rate is its receiver's bytes
    /// over its receiver's time between the two marks; the sample's time
    /// is the streams' mean interval, and its bytes the total rate over
    /// that time.
    fn sample(&mut self, iters: u64) -> Result<Work, BenchError> {
        let n = self.list.len() as u64;
        let share = iters.checked_mul(self.block);
        let want = share
            .and_then(|b| b.checked_mul(n))
            .ok_or_else(|| BenchError::Other(format!("a batch of {iters} blocks is too large")))?;
        let share = share.unwrap_or(u64::MAX);
        let before = match self.last.take() {
            Some(m) => m,
            None => self.marks(),
        };
        let start: u64 = before.iter().map(|m| m.bytes).sum();
        self.meter.wait_for(start.saturating_add(want), || {
            self.list.iter().zip(&before).all(|(s, b)| {
                let now = match s.role {
                    Role::Sink => lock(&s.count.report).0,
                    _ => s.count.read.load(Ordering::SeqCst),
                };
                now.saturating_sub(b.bytes) >= share
            })
        })?;
        let after = self.marks();
        let (mut rates, mut secs) = (Vec::with_capacity(before.len()), Vec::new());
        for (b, a) in before.iter().zip(&after) {
            let t = a.ns.saturating_sub(b.ns) as f64 * 1e-9;
            if t > 0.0 {
                rates.push(a.bytes.saturating_sub(b.bytes) as f64 / t);
                secs.push(t);
            } else {
                // Cannot happen (each stream counted more bytes, so time
                // passed on its receiver's clock); nothing is claimed.
                rates.push(0.0);
            }
        }
        self.last = Some(after);
        let time = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
        let rate: f64 = rates.iter().sum();
        let mut w = Work::ops_bytes(iters * n, (rate * time).round() as u64);
        w.elapsed = Some(Duration::from_secs_f64(time));
        w.values.insert("throughput_bits", rate * 8.0);
        w.values.insert(
            "stream_min",
            rates.iter().copied().fold(f64::INFINITY, f64::min),
        );
        w.values
            .insert("stream_max", rates.iter().copied().fold(0.0, f64::max));
        Ok(w)
    }

    /// Stops every stream cleanly and joins its threads: the bytes the
    /// server must have received (`up`) and sent (`down`), as counted
    /// here.
    fn stop(mut self) -> Result<(u64, u64), BenchError> {
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
                (Role::Sink, Some(counted)) => up += counted,
                (Role::Source, Some(got)) => down += got,
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

/// Dropped without [`Case::finish`], the fields go in order: the data
/// connections (their threads joined) close before the control connection
/// and a local server.
struct TcpCase {
    streams: Streams,
    link: Link,
    /// Its notes give the path to the server and its peak (or why there is
    /// none).
    about: About,
}

impl Case for TcpCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.streams.sample(iters)
    }

    fn finish(self: Box<Self>) -> Finished {
        let TcpCase {
            streams,
            link,
            about,
        } = *self;
        // The streams end first (cleanly: the server counts to the last
        // byte), then the server is asked for its counts.
        let stopped = streams.stop();
        let served = link.finish();
        let checked = stopped.and_then(|(acked, got)| {
            let (received, sent) = served?;
            if received != acked || sent != got {
                return Err(BenchError::Verify(format!(
                    "the server counted {received} bytes received and {sent} sent; this client counted {acked} acknowledged and {got} received"
                )));
            }
            Ok(())
        });
        Finished::with(about, checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_split_anywhere_are_reassembled_and_counted_once() {
        let (count, meter) = (Count::default(), Meter::new());
        let mut wire = Vec::new();
        for (bytes, ns) in [(10, 1_000), (25, 2_000), (25, 3_000), (90, 4_000)] {
            wire.extend(proto::encode_report(bytes, ns));
        }
        let mut r = Reports::default();
        // Pieces of 1, 7, 20 and the rest: every boundary inside a report.
        let mut rest = &wire[..];
        for cut in [1, 7, 20] {
            r.feed(&rest[..cut], &count, &meter).unwrap();
            rest = &rest[cut..];
        }
        r.feed(rest, &count, &meter).unwrap();
        assert_eq!(*lock(&count.report), (90, 4_000));
        assert_eq!(meter.total.load(Ordering::SeqCst), 90);
        assert_eq!((r.last, r.filled), (90, 0));
        // A count that goes back is a verification failure.
        let e = r
            .feed(&proto::encode_report(89, 5_000), &count, &meter)
            .unwrap_err();
        assert!(matches!(e, BenchError::Verify(_)), "{e}");
    }
}
