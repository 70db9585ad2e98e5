//! `net.udp_throughput`: datagrams at an offered rate; the receiver counts
//! what arrived, in what order, and how regularly.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use benchsuite_core::team::{Placement, Team, merge_work};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Caveat, ConfigError, Context, Direction, Finished, Meta,
    MetricSource, MetricSpec, ParamSpec, Point, Value, Work,
};

use crate::client::{Dialer, Link};
use crate::params::parse_rate;
use crate::proto::{MAX_TCP_BLOCK, MAX_UDP_PAYLOAD, TestSpec, UDP_HEADER, UdpMode};

/// UDP throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct UdpThroughput;

/// `block` must fit in one IPv4 UDP datagram and hold the header.
fn check_udp_block(block: u64) -> Result<(), ConfigError> {
    if block > u64::from(MAX_UDP_PAYLOAD) || block < u64::from(UDP_HEADER) {
        return Err(ConfigError::InvalidValue {
            param: "block".into(),
            value: block.to_string(),
            reason: format!(
                "a UDP throughput datagram carries {UDP_HEADER}..{MAX_UDP_PAYLOAD} bytes: \
                 {UDP_HEADER} for the sequence number and timestamp, at most 65535 minus the IP and UDP headers"
            ),
        });
    }
    Ok(())
}

fn reported(name: &'static str, unit: &'static str, direction: Direction) -> MetricSpec {
    MetricSpec {
        name: name.into(),
        unit: unit.into(),
        direction,
        source: MetricSource::Reported(name.into()),
        role: benchsuite_core::MetricRole::Secondary,
    }
}

impl Benchmark for UdpThroughput {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::client::Target::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "net.udp_throughput".into(),
            description: "UDP datagrams at an offered rate like iperf3 -u: received rate, loss, reordering and RFC 3550 jitter, counted by the receiver".into(),
            params: vec![
                ParamSpec::size(
                    "block",
                    "datagram payload, 16..65507 bytes (iperf3 -l); 1472 fills one 1500-byte Ethernet frame",
                    u64::from(UDP_HEADER),
                    u64::from(MAX_TCP_BLOCK),
                    1472,
                ),
                ParamSpec::count(
                    "threads",
                    "parallel streams (sockets), one thread each; the rate is shared evenly",
                    1,
                    32,
                    1,
                ),
                ParamSpec::text(
                    "rate",
                    "offered rate over all streams: max (as fast as the sender can, iperf3 -b 0) or bits per second (500M, 1.5G)",
                    "max|RATE",
                    "max",
                ),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec("received"),
                reported("loss", "%", Direction::Lower),
                reported("jitter", "s", Direction::Lower).spread(),
                reported("out_of_order", "%", Direction::Lower),
                // What the sender managed to offer: the `received` rate
                // plus the loss, so not a measurement of its own.
                reported("offered", "B/s", Direction::Higher).derived(),
                MetricSpec::ops_per_sec("datagrams", "datagram/s").derived(),
            ],
        }
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        if let Some(b) = point.get("block").and_then(Value::as_u64) {
            check_udp_block(b)?;
        }
        if let Some(r) = point.get("rate").and_then(Value::as_str) {
            parse_rate(r).map_err(|reason| ConfigError::InvalidValue {
                param: "rate".into(),
                value: r.into(),
                reason: reason.0,
            })?;
        }
        Ok(())
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::facts::host_facts(ctx))
    }

    /// The matching reference tool on loopback (none with `--peer`).
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::udp(ctx, point)
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let block = point.u64("block")?;
        check_udp_block(block).map_err(|e| BenchError::Other(e.to_string()))?;
        let threads = point.u64("threads")? as usize;
        let rate = parse_rate(point.str("rate")?).map_err(|e| BenchError::Other(e.0))?;
        let spec = TestSpec {
            block: block as u32,
            tcp_streams: 0,
            udp_streams: threads as u32,
            udp_mode: UdpMode::Sink,
            nodelay: false,
        };
        let link = Link::open(ctx, spec)?;
        let mut caveats = Vec::new();
        let mut notes = Vec::new();
        let peak = link.target.peak("received", 1, &mut notes);
        match rate {
            None => notes.push(
                "rate=max: each sender sends as fast as it can (iperf3 -b 0), so loss shows where the receiver or the path overflowed".into(),
            ),
            Some(_) if !link.target.is_local() && block > 1472 => caveats.push(Caveat::text(
                "datagrams above 1472 bytes are IP-fragmented on a 1500-byte MTU path; one lost fragment loses the datagram",
            )),
            Some(_) => {}
        }
        let ports = link.udp_ports.clone();
        if ports.len() != threads {
            let _ = link.finish();
            return Err(BenchError::Other(format!(
                "the server opened {} UDP sockets, {threads} were asked for",
                ports.len()
            )));
        }
        let per_stream = rate.map(|r| r / threads as f64);
        let dialer = link.dialer;
        let epoch = Instant::now();
        let team = Team::new(
            threads,
            Placement::Unpinned,
            move |i| UdpSender::open(dialer, ports[i], block as usize, per_stream, epoch),
            |s: &mut UdpSender, iters| s.batch(iters),
        );
        let team = match team {
            Ok(t) => t,
            Err(e) => {
                let _ = link.finish();
                return Err(e);
            }
        };
        Ok(Box::new(UdpCase {
            team,
            link,
            next_seq: vec![0; threads],
            block,
            about: About {
                peak,
                caveats,
                notes,
                ..About::default()
            },
        }))
    }
}

struct UdpSender {
    sock: UdpSocket,
    buf: Vec<u8>,
    seq: u64,
    /// Seconds between datagrams, when paced.
    gap: Option<f64>,
    epoch: Instant,
}

impl UdpSender {
    fn open(
        dialer: Dialer,
        port: u16,
        block: usize,
        bits_per_sec: Option<f64>,
        epoch: Instant,
    ) -> Result<UdpSender, BenchError> {
        Ok(UdpSender {
            sock: dialer.udp(port)?,
            buf: vec![0xa5; block],
            seq: 0,
            gap: bits_per_sec.map(|r| block as f64 * 8.0 / r),
            epoch,
        })
    }

    /// Sends `iters` datagrams (paced when a rate is set). `elapsed` is the
    /// send interval: for a paced stream it ends when the next datagram
    /// would be due (`iters` gaps, not `iters - 1`), so back-to-back
    /// batches keep the rate and a one-datagram batch does not count as
    /// sent in no time.
    fn batch(&mut self, iters: u64) -> Result<Work, BenchError> {
        let t0 = Instant::now();
        for k in 0..iters {
            if let Some(gap) = self.gap {
                // Pace against the batch's start, so a late datagram is
                // followed by catch-up rather than a permanent lag.
                wait_until(t0 + Duration::from_secs_f64(gap * k as f64));
            }
            self.buf[0..8].copy_from_slice(&self.seq.to_be_bytes());
            let stamp = self.epoch.elapsed().as_nanos() as u64;
            self.buf[8..16].copy_from_slice(&stamp.to_be_bytes());
            loop {
                match self.sock.send(&self.buf) {
                    Ok(_) => break,
                    // The local queue is full: the datagram was not sent.
                    // Try again, as iperf3 does; it is not a network loss.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => std::thread::yield_now(),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        return Err(BenchError::io(
                            "sending UDP: the server's port answered ICMP port unreachable (firewall, or the test ended)",
                            e,
                        ));
                    }
                    Err(e) => return Err(BenchError::io("sending UDP", e)),
                }
            }
            self.seq += 1;
        }
        if let Some(gap) = self.gap {
            wait_until(t0 + Duration::from_secs_f64(gap * iters as f64));
        }
        Ok(Work {
            ops: iters,
            elapsed: Some(t0.elapsed()),
            ..Work::default()
        })
    }
}

/// Sleeps, then spins, until `due` (returns at once if it has passed).
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due <= now {
        return;
    }
    let wait = due - now;
    if wait > Duration::from_micros(200) {
        std::thread::sleep(wait - Duration::from_micros(100));
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

/// Dropped without [`Case::finish`], the fields go in order: the senders
/// (the team) stop before the control connection and a local server.
struct UdpCase {
    team: Team,
    link: Link,
    next_seq: Vec<u64>,
    block: u64,
    /// Its notes give the path to the server and its peak (or why there is
    /// none).
    about: About,
}

impl Case for UdpCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut sent = Work::default();
        for w in self.team.run_each(iters)? {
            merge_work(&mut sent, w)?;
        }
        for s in &mut self.next_seq {
            *s += iters;
        }
        let stats = self.link.control().udp_batch(self.next_seq.clone())?;
        let received: u64 = stats.iter().map(|s| s.received).sum();
        let bytes: u64 = stats.iter().map(|s| s.bytes).sum();
        let ooo: u64 = stats.iter().map(|s| s.out_of_order).sum();
        let jitter = stats.iter().map(|s| s.jitter_ns).sum::<f64>() / stats.len().max(1) as f64;
        let send_secs = sent
            .elapsed
            .map(|d| d.as_secs_f64())
            .filter(|s| *s > 0.0)
            .ok_or_else(|| BenchError::Other("the senders reported no send time".into()))?;
        // The receiver's clock is the time base: from the first datagram it
        // received in this batch to the last, and the bytes after the
        // first. Datagrams still queued when the sender stopped are counted
        // when the receiver actually takes them, so a deep socket buffer
        // does not inflate the rate; iperf3's receiver line is the same
        // ratio over its whole test.
        let first = stats
            .iter()
            .filter(|s| s.received > 0)
            .min_by_key(|s| s.first_ns);
        let last_ns = stats.iter().map(|s| s.last_ns).max().unwrap_or(0);
        let (bytes_after_first, span) = match first {
            Some(f) if last_ns > f.first_ns && received > 1 => (
                bytes - f.first_bytes,
                Duration::from_nanos(last_ns - f.first_ns),
            ),
            // One datagram (the runner's first, tiny calibration batch): no
            // interval at the receiver, so the sender's stands in.
            _ => (bytes, sent.elapsed.unwrap_or_default()),
        };
        let mut w = Work {
            ops: received.saturating_sub(1).max(1),
            bytes: bytes_after_first,
            elapsed: Some(span),
            ..Work::default()
        };
        let lost = sent.ops.saturating_sub(received);
        w.values
            .insert("loss".into(), lost as f64 * 100.0 / sent.ops as f64);
        w.values.insert("jitter".into(), jitter * 1e-9);
        w.values.insert(
            "out_of_order".into(),
            if received > 0 {
                ooo as f64 * 100.0 / received as f64
            } else {
                0.0
            },
        );
        w.values
            .insert("offered".into(), (sent.ops * self.block) as f64 / send_secs);
        if received == 0 {
            return Err(BenchError::Other(format!(
                "none of the {} datagrams arrived: is UDP blocked between the hosts (the server listens on UDP ports {:?})?",
                sent.ops, self.link.udp_ports
            )));
        }
        Ok(w)
    }

    fn finish(self: Box<Self>) -> Finished {
        let UdpCase {
            team, link, about, ..
        } = *self;
        team.shutdown();
        Finished::with(about, link.finish().map(|_| ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_bits_per_second() {
        assert_eq!(parse_rate("max").unwrap(), None);
        assert_eq!(parse_rate("MAX").unwrap(), None);
        assert_eq!(parse_rate("500M").unwrap(), Some(500e6));
        assert_eq!(parse_rate("1.5G").unwrap(), Some(1.5e9));
        assert_eq!(parse_rate("100Mbit").unwrap(), Some(100e6));
        assert_eq!(parse_rate("1Gbps").unwrap(), Some(1e9));
        assert_eq!(parse_rate("64k").unwrap(), Some(64e3));
        assert!(parse_rate("fast").unwrap_err().contains("max"));
        assert!(parse_rate("10X").unwrap_err().contains("unit"));
        assert!(parse_rate("0").is_err());
    }

    #[test]
    fn oversized_and_undersized_datagrams_are_usage_errors() {
        let e = check_udp_block(65508).unwrap_err().to_string();
        assert!(e.contains("block") && e.contains("65507"), "{e}");
        assert!(check_udp_block(65507).is_ok());
        assert!(check_udp_block(15).is_err());
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        let mut p = Point::default();
        p.set("block", Value::Int(64 << 10));
        p.set("rate", Value::Str("max".into()));
        assert!(UdpThroughput.validate(&ctx, &p).is_err());
        p.set("block", Value::Int(32 << 10));
        assert!(UdpThroughput.validate(&ctx, &p).is_ok());
        p.set("rate", Value::Str("lots".into()));
        let e = UdpThroughput.validate(&ctx, &p).unwrap_err().to_string();
        assert!(e.contains("rate") && e.contains("lots"), "{e}");
    }
}
