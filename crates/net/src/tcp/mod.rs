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

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Direction, Finished, Meta,
    MetricSource, MetricSpec, ParamSpec, Point, Value, Work,
};

use crate::client::Link;
use crate::params::{StreamCpus, split_cpus};
use crate::proto::{MAX_STREAMS, MAX_TCP_BLOCK, Role, TestSpec, UdpMode};

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
            id: "net.tcp_throughput".into(),
            description: "bulk TCP transfer like iperf3: block-sized writes and reads over N parallel connections, bytes counted by the receiver".into(),
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
                    name: "throughput_bits".into(),
                    unit: "bit/s".into(),
                    direction: Direction::Higher,
                    source: MetricSource::Reported("throughput_bits".into()),
                    role: benchsuite_core::MetricRole::Derived,
                },
                MetricSpec {
                    name: "stream_min".into(),
                    unit: "B/s".into(),
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMin("stream_min".into()),
                    // With one stream, the same number as `throughput`:
                    // compare then treats it as derived (same samples).
                    role: benchsuite_core::MetricRole::Secondary,
                },
                MetricSpec {
                    name: "stream_max".into(),
                    unit: "B/s".into(),
                    direction: Direction::Higher,
                    source: MetricSource::ReportedMax("stream_max".into()),
                    role: benchsuite_core::MetricRole::Secondary,
                },
            ],
        }
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::facts::host_facts(ctx))
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

mod streams;

use streams::*;

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
mod tests;
