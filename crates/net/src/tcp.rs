//! `net.tcp_throughput`: bulk TCP transfer over one or more connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use benchsuite_core::team::{Placement, Team, merge_work};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Direction, Finished, Meta, MetricSource,
    MetricSpec, ParamSpec, Point, Value, Work,
};

use crate::client::{Dialer, Link};
use crate::proto::{self, MAX_STREAMS, MAX_TCP_BLOCK, Role, TestSpec, UdpMode};

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
        let totals = Arc::new(Totals::default());
        let (dialer, t2) = (link.dialer, totals.clone());
        let roles2 = roles.clone();
        let team = Team::new(
            roles.len(),
            Placement::Unpinned,
            move |i| Stream::open(dialer, roles2[i], block, nodelay, t2.clone()),
            |s: &mut Stream, iters| s.batch(iters),
        );
        let team = match team {
            Ok(t) => t,
            Err(e) => {
                let _ = link.finish();
                return Err(e);
            }
        };
        Ok(Box::new(TcpCase {
            team,
            link,
            totals,
            about: About {
                peak,
                notes,
                ..About::default()
            },
        }))
    }
}

/// What the client counted over the whole test, checked against the
/// server's counts at the end.
#[derive(Debug, Default)]
struct Totals {
    /// Bytes the server acknowledged on sink connections.
    acked: AtomicU64,
    /// Bytes received from source connections.
    received: AtomicU64,
}

struct Stream {
    sock: TcpStream,
    role: Role,
    nodelay: bool,
    buf: Vec<u8>,
    totals: Arc<Totals>,
}

impl Stream {
    fn open(
        dialer: Dialer,
        role: Role,
        block: usize,
        nodelay: bool,
        totals: Arc<Totals>,
    ) -> Result<Stream, BenchError> {
        let sock = dialer.attach(role, nodelay)?;
        Ok(Stream {
            sock,
            role,
            nodelay,
            // Non-zero contents, so nothing on the way can treat the
            // buffer as a special (zero) page.
            buf: vec![0xa5; block],
            totals,
        })
    }

    /// Moves `iters` blocks; returns the bytes the receiver counted and
    /// this stream's own rate (under "rate").
    fn batch(&mut self, iters: u64) -> Result<Work, BenchError> {
        let block = self.buf.len() as u64;
        let len = iters
            .checked_mul(block)
            .filter(|&l| l < proto::UNBOUNDED)
            .ok_or_else(|| BenchError::Other(format!("a batch of {iters} blocks is too large")))?;
        let t0 = Instant::now();
        let io = |what: &str, e| BenchError::io(format!("{what} (data connection)"), e);
        self.sock
            .write_all(&len.to_be_bytes())
            .map_err(|e| io("sending a batch header", e))?;
        let bytes = match self.role {
            Role::Sink => {
                for _ in 0..iters {
                    self.sock
                        .write_all(&self.buf)
                        .map_err(|e| io("sending", e))?;
                }
                if !self.nodelay {
                    // Nagle may hold the batch's last short segment until
                    // the receiver's delayed ACK (40 ms): an artefact of
                    // batching, not of the stream. Turning TCP_NODELAY on
                    // pushes it out; then Nagle is back for the next batch.
                    push(&self.sock).map_err(|e| io("flushing", e))?;
                }
                let mut ack = [0u8; 8];
                self.sock
                    .read_exact(&mut ack)
                    .map_err(|e| io("waiting for the receiver's count", e))?;
                let got = u64::from_be_bytes(ack);
                if got != len {
                    return Err(BenchError::Verify(format!(
                        "sent {len} bytes, the receiver counted {got}"
                    )));
                }
                self.totals.acked.fetch_add(got, Ordering::Relaxed);
                got
            }
            Role::Source => {
                let mut left = len;
                while left > 0 {
                    let want = left.min(block) as usize;
                    match self.sock.read(&mut self.buf[..want]) {
                        Ok(0) => {
                            return Err(BenchError::Other(format!(
                                "the server closed the data connection with {left} of {len} bytes still to come"
                            )));
                        }
                        Ok(n) => left -= n as u64,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(io("receiving", e)),
                    }
                }
                self.totals.received.fetch_add(len, Ordering::Relaxed);
                len
            }
            Role::Echo => return Err(BenchError::Other("echo is not a throughput role".into())),
        };
        let secs = t0.elapsed().as_secs_f64();
        let mut w = Work::ops_bytes(iters, bytes);
        w.values
            .insert("rate", if secs > 0.0 { bytes as f64 / secs } else { 0.0 });
        Ok(w)
    }
}

/// Sends what Nagle's algorithm holds back, leaving `TCP_NODELAY` off.
pub(crate) fn push(sock: &TcpStream) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    sock.set_nodelay(false)
}

/// Dropped without [`Case::finish`], the fields go in order: the data
/// connections (the team) close before the control connection and a local
/// server.
struct TcpCase {
    team: Team,
    link: Link,
    totals: Arc<Totals>,
    /// Its notes give the path to the server and its peak (or why there is
    /// none).
    about: About,
}

impl Case for TcpCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let t0 = Instant::now();
        let each = self.team.run_each(iters)?;
        let secs = t0.elapsed().as_secs_f64();
        let mut total = Work::default();
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for mut w in each {
            let r = w.values.remove("rate").unwrap_or(0.0);
            lo = lo.min(r);
            hi = hi.max(r);
            merge_work(&mut total, w)?;
        }
        // The same bytes over (to within two clock reads) the runner's
        // interval, in bits: iperf3's unit.
        total
            .values
            .insert("throughput_bits", total.bytes as f64 * 8.0 / secs);
        total.values.insert("stream_min", lo);
        total.values.insert("stream_max", hi);
        Ok(total)
    }

    fn finish(self: Box<Self>) -> Finished {
        let TcpCase {
            team,
            link,
            totals,
            about,
        } = *self;
        // Closing the data connections first lets the server's threads end
        // on end-of-file before it is asked for its counts.
        team.shutdown();
        let checked = link.finish().and_then(|(received, sent)| {
            let acked = totals.acked.load(Ordering::Relaxed);
            let got = totals.received.load(Ordering::Relaxed);
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
