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
//! flight are bounded by it, and the reports are read between partial
//! writes.
//!
//! Nothing the server says is taken on trust: a report may not count more
//! than was sent on its stream, nor go back, and its time must advance and
//! stay within this host's clock since the stream began (plus
//! [`CLOCK_SLACK`]). A stream that counts nothing for [`DATA_TIMEOUT`]
//! fails the sample, naming it, even while the others flow; one the server
//! does not end within [`DATA_TIMEOUT`] of the stop is shut down and fails
//! the record.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Direction, Finished, Meta,
    MetricSource, MetricSpec, ParamSpec, Point, Value, Work,
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

benchsuite_core::choice_enum! {
    /// Where a stream's two ends run (`cpus`).
    pub(crate) enum StreamCpus {
        /// `split` with the in-process server and one stream on a machine
        /// with two CPUs or more, else `any`.
        Auto = "auto",
        /// Where the scheduler puts them.
        Any = "any",
        /// This host's stream threads on the first allowed CPU, the
        /// in-process server's on the second.
        Split = "split",
    }
}

/// The CPUs of a stream's two ends (this host's, the in-process
/// server's) for `cpus` (None: unpinned), or why `cpus` cannot be had.
/// `allowed` is this process's CPUs, lowest first.
pub(crate) fn split_cpus(
    cpus: StreamCpus,
    in_process: bool,
    threads: u64,
    allowed: &[usize],
) -> Result<Option<(usize, usize)>, String> {
    let possible = in_process && threads == 1 && allowed.len() >= 2;
    match cpus {
        StreamCpus::Any => Ok(None),
        StreamCpus::Auto if !possible => Ok(None),
        _ if !in_process => Err(
            "with --peer the server is another process, not this one's to place: leave cpus=auto or any, and pin each end with taskset".into(),
        ),
        _ if threads != 1 => Err(format!(
            "cpus=split places one stream's two ends; with threads={threads} use cpus=any"
        )),
        _ if allowed.len() < 2 => Err(format!(
            "cpus=split needs two CPUs; this process may run on {allowed:?}"
        )),
        _ => Ok(Some((allowed[0], allowed[1]))),
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
                ParamSpec::choice_of(
                    "cpus",
                    "where a stream's two ends run: split = this host's stream thread on the first allowed CPU, the in-process server's on the second (as iperf3 -A 0,1); any = where the scheduler puts them (they may share a CPU or move between CPUs during the run); auto = split with the in-process server, one stream and two CPUs or more, else any",
                    StreamCpus::Auto,
                ),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec("throughput"),
                MetricSpec {
                    name: "throughput_bits",
                    unit: "bit/s",
                    direction: Direction::Higher,
                    source: MetricSource::Reported("throughput_bits"),
                    role: benchsuite_core::MetricRole::Derived,
                },
                MetricSpec {
                    name: "stream_min",
                    unit: "B/s",
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMin("stream_min"),
                    // With one stream, the same number as `throughput`:
                    // compare then treats it as derived (same samples).
                    role: benchsuite_core::MetricRole::Secondary,
                },
                MetricSpec {
                    name: "stream_max",
                    unit: "B/s",
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMax("stream_max"),
                    role: benchsuite_core::MetricRole::Secondary,
                },
            ],
        }
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::host_facts(ctx))
    }

    /// A `cpus=split` that cannot be had is refused before anything runs.
    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let (Some(cpus), Some(threads)) = (
            point
                .get("cpus")
                .and_then(Value::as_str)
                .and_then(StreamCpus::from_name),
            point.get("threads").and_then(Value::as_u64),
        ) else {
            return Ok(());
        };
        // What no machine could give; a machine with one CPU skips the
        // record when it runs (as net.latency's cpus=different).
        split_cpus(cpus, !ctx.options.contains_key("peer"), threads, &[0, 1])
            .map(|_| ())
            .map_err(|reason| ConfigError::InvalidValue {
                param: "cpus".into(),
                value: cpus.to_string(),
                reason,
            })
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
        let cpus = point.choice::<StreamCpus>("cpus")?;
        let allowed = benchsuite_core::team::allowed_cpus();
        let split = split_cpus(
            cpus,
            !ctx.options.contains_key("peer"),
            u64::from(threads),
            &allowed,
        )
        .map_err(|reason| BenchError::Skip(format!("cpus={cpus}: {reason}")))?;
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
        let link = Link::open_placed(ctx, spec, None, split.map(|(_, server)| server))?;
        let mut notes = Vec::new();
        match split {
            Some((here, server)) => notes.push(format!(
                "cpus={cpus}: this host's stream threads ran on CPU {here}, the in-process server's on CPU {server}"
            )),
            None if link.target.is_local() => notes.push(format!(
                "cpus={cpus}: the scheduler placed both ends (they may share a CPU or move between CPUs during the run; cpus=split fixes where each runs)"
            )),
            None => {}
        }
        let peak = link.target.peak(
            "throughput",
            if direction == Flow::Bidir { 2 } else { 1 },
            &mut notes,
        );
        let here = split.map(|(here, _)| here);
        let streams = match Streams::open(link.dialer, &roles, block, nodelay, here) {
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
/// How far a report's time may run ahead of this host's clock since the
/// stream began: the two clocks tick alike, the server's starts later.
const CLOCK_SLACK: Duration = Duration::from_secs(1);

/// What the streams' threads share with the thread that takes samples.
struct Meter {
    /// Streams still short of their share of the sample being waited for:
    /// the stream that brings it to 0 wakes the sampler.
    short: AtomicUsize,
    waiter: Mutex<Option<Thread>>,
    /// The first stream failure; the next sample (or the finish) fails
    /// with it.
    failure: Mutex<Option<BenchError>>,
    failed: AtomicBool,
    /// Set at the end: the streams stop.
    stop: AtomicBool,
    /// How long a stream may go without progress, and how long it may take
    /// to end after the stop ([`DATA_TIMEOUT`]; shorter in tests).
    idle: Duration,
}

impl Meter {
    fn new(idle: Duration) -> Meter {
        Meter {
            short: AtomicUsize::new(0),
            waiter: Mutex::new(None),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            idle,
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
}

/// `d` for a message: "30 s", "0.5 s".
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A stream's receiver-side count as known here.
struct Count {
    /// `down`: the bytes read here so far.
    read: AtomicU64,
    /// `up`: the server's latest report (bytes, its nanoseconds).
    report: Mutex<(u64, u64)>,
    /// The count at which the stream has its share of the sample being
    /// waited for (`u64::MAX`: none, or already reached).
    target: AtomicU64,
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
    fn reached(&self, now: u64, meter: &Meter) {
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
struct Mark {
    bytes: u64,
    ns: u64,
}

/// Who a stream's messages name: its number and the server's address.
#[derive(Clone)]
struct Who {
    index: usize,
    server: String,
}

/// One data connection and the thread that drives it: for `up` a sender
/// that also reads the server's reports, for `down` a receiver.
struct Stream {
    role: Role,
    who: Who,
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
    fn start(
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
    fn current(&self) -> u64 {
        match self.role {
            Role::Sink => lock(&self.count.report).0,
            _ => self.count.read.load(Ordering::SeqCst),
        }
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
/// ones are checked and go to the stream's [`Count`].
struct Reports {
    who: Who,
    /// When this host started the stream (before the server's clock for
    /// it started).
    started: Instant,
    /// A report's first bytes, when a read ended inside one.
    part: [u8; REPORT_LEN],
    filled: usize,
    /// The server's latest count and its time.
    last: u64,
    last_ns: u64,
}

impl Reports {
    fn new(who: Who, started: Instant) -> Reports {
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
    fn feed(
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
    fn check(&self, got: u64, ns: u64, sent: u64) -> Result<(), BenchError> {
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
    fn poll(
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
    fn finish(
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
fn send(
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
fn receive(
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
fn tally(before: &[Mark], after: &[Mark]) -> Result<(Vec<f64>, f64), BenchError> {
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
    fn new(block: usize, idle: Duration) -> Streams {
        Streams {
            meter: Arc::new(Meter::new(idle)),
            list: Vec::new(),
            block: block as u64,
            epoch: Instant::now(),
            last: None,
        }
    }

    fn open(
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

    fn marks(&self) -> Vec<Mark> {
        self.list.iter().map(|s| s.mark(self.epoch)).collect()
    }

    /// Waits until every stream's receiver has counted `share` bytes past
    /// `before`, or a stream fails, or one counts nothing for
    /// [`Meter::idle`] (while the others may flow).
    fn wait(&self, before: &[Mark], share: u64) -> Result<(), BenchError> {
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
    fn sample(&mut self, iters: u64) -> Result<Work, BenchError> {
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

    /// `Cpus_allowed_list` of this process's threads named
    /// "benchsuite-net-…" (client stream and server data threads alike:
    /// names are cut to 15 bytes).
    fn net_thread_cpus() -> Vec<String> {
        let mut out = Vec::new();
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            if let (true, Some(l)) = (
                comm.starts_with("benchsuite-net-"),
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:")),
            ) {
                out.push(l.trim().to_string());
            }
        }
        out
    }

    #[test]
    fn cpus_split_pins_the_two_ends_apart() {
        let allowed = benchsuite_core::team::allowed_cpus();
        if allowed.len() < 2 {
            benchsuite_core::testing::skip(
                benchsuite_core::testing::Capability::TwoCpus,
                &format!("cpus=split needs two CPUs, this process has {allowed:?}"),
            );
            return;
        }
        let ctx = Context::new(Arc::new(benchsuite_core::Host::default()));
        let mut p = Point::default();
        p.set("block", Value::Int(64 << 10));
        p.set("threads", Value::Int(1));
        p.set("direction", Value::Str("up".into()));
        p.set("nodelay", Value::Bool(false));
        p.set("cpus", Value::Str("split".into()));
        let mut case = TcpThroughput.prepare(&ctx, &p).unwrap();
        // 16 blocks' worth per stream.
        let w = case.run(16).unwrap();
        assert!(w.bytes > 0, "{w:?}");
        let cpus = net_thread_cpus();
        for c in [allowed[0], allowed[1]] {
            assert!(cpus.contains(&c.to_string()), "CPU {c} in {cpus:?}");
        }
        let finished = case.finish();
        assert!(finished.error.is_none(), "{:?}", finished.error);
        let note = finished
            .about
            .notes
            .iter()
            .find(|n| n.starts_with("cpus=split"))
            .cloned()
            .unwrap_or_default();
        assert!(
            note.contains(&format!("CPU {}", allowed[0]))
                && note.contains(&format!("CPU {}", allowed[1])),
            "{note}"
        );
        // The caller's own thread was never pinned.
        assert_eq!(benchsuite_core::team::allowed_cpus(), allowed);
    }

    #[test]
    fn cpus_split_one_stream_on_two_cpus_and_say_why_not() {
        use StreamCpus::{Any, Auto};
        assert_eq!(split_cpus(Auto, true, 1, &[3, 7, 9]), Ok(Some((3, 7))));
        assert_eq!(
            split_cpus(StreamCpus::Split, true, 1, &[0, 1]),
            Ok(Some((0, 1)))
        );
        // auto falls back to the scheduler; split says what is missing.
        for (threads, cpus) in [(2, &[0usize, 1][..]), (1, &[0][..])] {
            assert_eq!(split_cpus(Auto, true, threads, cpus), Ok(None));
        }
        assert_eq!(split_cpus(Auto, false, 1, &[0, 1]), Ok(None));
        assert_eq!(split_cpus(Any, true, 1, &[0, 1]), Ok(None));
        let why = |threads, cpus: &[usize], local| {
            split_cpus(StreamCpus::Split, local, threads, cpus).unwrap_err()
        };
        assert!(why(2, &[0, 1], true).contains("threads=2"));
        assert!(why(1, &[0], true).contains("two CPUs"));
        assert!(why(1, &[0, 1], false).contains("--peer"));
    }
    use std::net::TcpListener;

    /// A connected pair on loopback: (this host's end, the fake server's).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        (c, s)
    }

    fn who() -> Who {
        Who {
            index: 3,
            server: "the server at test".into(),
        }
    }

    /// Reads the stream's start word.
    fn started(s: &mut TcpStream) {
        let mut w = [0u8; 8];
        s.read_exact(&mut w).unwrap();
        assert_eq!(u64::from_be_bytes(w), STREAM);
    }

    /// A fake server on its own thread.
    fn serve(mut s: TcpStream, f: impl FnOnce(&mut TcpStream) + Send + 'static) -> JoinHandle<()> {
        thread::spawn(move || {
            started(&mut s);
            f(&mut s);
        })
    }

    /// `down`: sends until the write fails; the stop byte is ignored.
    fn flood(s: &mut TcpStream) {
        let buf = [0x5au8; 16 << 10];
        while s.write_all(&buf).is_ok() {}
    }

    /// `down`, well behaved: sends until the stop byte, then ends.
    fn source(s: &mut TcpStream) {
        let mut r = s.try_clone().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let t = thread::spawn(move || {
            let _ = r.read(&mut [0u8; 1]);
            st.store(true, Ordering::SeqCst);
        });
        let buf = [0x5au8; 16 << 10];
        while !stop.load(Ordering::SeqCst) && s.write_all(&buf).is_ok() {}
        let _ = s.shutdown(Shutdown::Write);
        t.join().unwrap();
    }

    /// `up`, well behaved: counts, reports after every read, and at the
    /// end of file reports the total and ends.
    fn sink(s: &mut TcpStream) {
        let t0 = Instant::now();
        let (mut buf, mut total) = (vec![0u8; 64 << 10], 0u64);
        let mut ns = 0;
        loop {
            let n = s.read(&mut buf).unwrap();
            total += n as u64;
            ns = (t0.elapsed().as_nanos() as u64).max(ns + 1);
            s.write_all(&proto::encode_report(total, ns)).unwrap();
            if n == 0 {
                break;
            }
        }
        s.shutdown(Shutdown::Write).unwrap();
    }

    #[test]
    fn reports_split_anywhere_are_reassembled_and_counted_once() {
        let (count, meter) = (Count::default(), Meter::new(DATA_TIMEOUT));
        let mut wire = Vec::new();
        for (bytes, ns) in [(10, 1_000), (25, 2_000), (25, 3_000), (90, 4_000)] {
            wire.extend(proto::encode_report(bytes, ns));
        }
        let mut r = Reports::new(who(), Instant::now());
        // Pieces of 1, 7, 20 and the rest: every boundary inside a report.
        let mut rest = &wire[..];
        for cut in [1, 7, 20] {
            r.feed(&rest[..cut], 100, &count, &meter).unwrap();
            rest = &rest[cut..];
        }
        r.feed(rest, 100, &count, &meter).unwrap();
        assert_eq!(*lock(&count.report), (90, 4_000));
        assert_eq!((r.last, r.filled), (90, 0));
        // A count that goes back is a verification failure.
        let e = r
            .feed(&proto::encode_report(89, 5_000), 100, &count, &meter)
            .unwrap_err();
        assert!(matches!(e, BenchError::Verify(_)), "{e}");
    }

    #[test]
    fn reports_that_overcount_or_misstate_the_time_are_rejected() {
        let (count, meter) = (Count::default(), Meter::new(DATA_TIMEOUT));
        let fresh = || {
            let mut r = Reports::new(who(), Instant::now());
            r.feed(&proto::encode_report(10, 1_000), 10, &count, &meter)
                .unwrap();
            r
        };
        let bad = |r: &mut Reports, bytes: u64, ns: u64, sent: u64| {
            let e = r
                .feed(&proto::encode_report(bytes, ns), sent, &count, &meter)
                .unwrap_err();
            assert!(matches!(e, BenchError::Verify(_)), "{e}");
            e.to_string()
        };
        // More than was sent, a huge count among them (no wrap, no panic).
        let e = bad(&mut fresh(), 11, 2_000, 10);
        assert!(
            e.contains("the server at test reported 11 bytes for stream 3 but only 10 were sent"),
            "{e}"
        );
        bad(&mut fresh(), u64::MAX, 2_000, 10);
        // A time that does not advance, or runs ahead of this host's clock.
        bad(&mut fresh(), 10, 1_000, 10);
        bad(&mut fresh(), 10, 999, 10);
        let e = bad(&mut fresh(), 10, u64::MAX, 10);
        assert!(e.contains("since the stream began"), "{e}");
        bad(&mut fresh(), 10, 5_000_000_000, 10);
        // A report at 0 ns: no time passed since the stream began.
        let mut r = Reports::new(who(), Instant::now());
        bad(&mut r, 0, 0, 0);
        // Within the slack: fine.
        fresh()
            .feed(&proto::encode_report(10, 500_000_000), 10, &count, &meter)
            .unwrap();
    }

    #[test]
    fn the_last_stream_to_reach_its_share_wakes_the_sampler_once() {
        let meter = Meter::new(DATA_TIMEOUT);
        *lock(&meter.waiter) = Some(thread::current());
        let (a, b) = (Count::default(), Count::default());
        meter.short.store(2, Ordering::SeqCst);
        a.target.store(100, Ordering::SeqCst);
        b.target.store(50, Ordering::SeqCst);
        a.reached(99, &meter);
        assert_eq!(meter.short.load(Ordering::SeqCst), 2);
        a.reached(100, &meter);
        a.reached(200, &meter);
        assert_eq!(meter.short.load(Ordering::SeqCst), 1);
        // Not armed: no effect, even at the largest count.
        Count::default().reached(u64::MAX, &meter);
        assert_eq!(meter.short.load(Ordering::SeqCst), 1);
        let waker = thread::scope(|s| s.spawn(|| b.reached(60, &meter)).join());
        waker.unwrap();
        assert_eq!(meter.short.load(Ordering::SeqCst), 0);
        // The unpark came: this returns at once, not after the timeout.
        let t = Instant::now();
        thread::park_timeout(Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_sample_with_no_time_is_an_error_not_a_nan() {
        let m = |bytes, ns| Mark { bytes, ns };
        let e = tally(&[m(0, 5)], &[m(0, 5)]).unwrap_err();
        assert!(e.to_string().contains("no time"), "{e}");
        let e = tally(&[m(0, 5)], &[m(7, 5)]).unwrap_err();
        assert!(e.to_string().contains("stream 0 counted 7 bytes"), "{e}");
        let (rates, time) = tally(&[m(0, 0), m(0, 0)], &[m(1000, 1_000_000), m(0, 0)]).unwrap();
        assert_eq!(time, 1e-3);
        assert_eq!(rates, vec![1e6, 0.0]);
    }

    /// Streams on fake servers: each `(role, server)` gets a connection.
    #[allow(clippy::type_complexity)]
    fn streams(
        block: usize,
        idle: Duration,
        servers: Vec<(Role, Box<dyn FnOnce(&mut TcpStream) + Send>)>,
    ) -> (Streams, Vec<JoinHandle<()>>) {
        let mut s = Streams::new(block, idle);
        let mut fakes = Vec::new();
        for (i, (role, f)) in servers.into_iter().enumerate() {
            let (c, srv) = pair();
            fakes.push(serve(srv, f));
            s.list
                .push(Stream::start(c, i, role, block, &s.meter, None).unwrap());
        }
        (s, fakes)
    }

    #[test]
    fn well_behaved_servers_give_finite_samples_and_a_clean_stop() {
        let (mut s, fakes) = streams(
            4 << 10,
            Duration::from_secs(10),
            vec![
                (Role::Sink, Box::new(sink)),
                (Role::Source, Box::new(source)),
                (Role::Sink, Box::new(sink)),
            ],
        );
        for _ in 0..3 {
            let w = s.sample(8).unwrap();
            let t = w.elapsed.unwrap();
            assert!(t > Duration::ZERO);
            let min = w.values["stream_min"];
            assert!(min.is_finite() && min > 0.0, "{min}");
        }
        let (up, down) = s.stop().unwrap();
        assert!(up >= 2 * 3 * 8 * (4 << 10), "{up}");
        assert!(down >= 3 * 8 * (4 << 10), "{down}");
        for f in fakes {
            f.join().unwrap();
        }
    }

    #[test]
    fn a_stream_that_stops_counting_fails_the_sample_naming_it() {
        // Stream 0 flows; stream 1's server takes the bytes but never
        // reports a count.
        let (mut s, fakes) = streams(
            1 << 10,
            Duration::from_secs(1),
            vec![
                (Role::Source, Box::new(flood)),
                (
                    Role::Sink,
                    Box::new(|s: &mut TcpStream| {
                        let mut buf = vec![0u8; 64 << 10];
                        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                    }),
                ),
            ],
        );
        let e = s.sample(4).unwrap_err().to_string();
        assert!(e.contains("stream 1 (up"), "{e}");
        drop(s);
        for f in fakes {
            f.join().unwrap();
        }
    }

    #[test]
    fn stop_ends_when_a_server_ignores_it() {
        // `down`: the server keeps sending after the stop byte; `up`: it
        // keeps reporting after our end of file and never ends its own.
        let (mut s, fakes) = streams(
            1 << 10,
            Duration::from_secs(1),
            vec![
                (Role::Source, Box::new(flood)),
                (
                    Role::Sink,
                    Box::new(|s: &mut TcpStream| {
                        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
                        let (t0, mut total) = (Instant::now(), 0u64);
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            match s.read(&mut buf) {
                                // Our end of file: reports go on regardless.
                                Ok(0) => thread::sleep(Duration::from_millis(1)),
                                Ok(n) => total += n as u64,
                                Err(e) if proto::is_timeout(&e) => {}
                                Err(_) => return,
                            }
                            let ns = t0.elapsed().as_nanos() as u64;
                            if s.write_all(&proto::encode_report(total, ns)).is_err() {
                                return;
                            }
                        }
                    }),
                ),
            ],
        );
        s.sample(4).unwrap();
        let e = s.stop().unwrap_err().to_string();
        assert!(e.contains("did not end stream"), "{e}");
        for f in fakes {
            f.join().unwrap();
        }
    }

    #[test]
    fn reports_are_read_while_a_block_is_still_being_written() {
        // A block far larger than the socket buffers: its write cannot
        // finish, as on a slow path. The server reads 1 MiB, reports it
        // and stops reading; the report must still be seen.
        let held = Arc::new(AtomicBool::new(true));
        let h = held.clone();
        let (s, fakes) = streams(
            64 << 20,
            Duration::from_secs(20),
            vec![(
                Role::Sink,
                Box::new(move |s: &mut TcpStream| {
                    let mut buf = vec![0u8; 1 << 20];
                    s.read_exact(&mut buf).unwrap();
                    s.write_all(&proto::encode_report(1 << 20, 1_000)).unwrap();
                    while h.load(Ordering::SeqCst) {
                        thread::sleep(Duration::from_millis(5));
                    }
                }),
            )],
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.list[0].current() == 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(*lock(&s.list[0].count.report), (1 << 20, 1_000));
        held.store(false, Ordering::SeqCst);
        drop(s);
        for f in fakes {
            f.join().unwrap();
        }
    }
}
