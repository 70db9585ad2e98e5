//! `net.latency`: ping-pong round trips over TCP or UDP, optionally while
//! a bulk TCP stream loads the same path; or, with `rate=N`, an open loop
//! of requests at N per second ([`open`]).

mod open;

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use benchsuite_core::openloop::Rate;
use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::team::{allowed_cpus, pin_current_thread, set_current_thread_cpus};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Finished, Meta, MetricSpec,
    ParamSpec, Point, Value, Work,
};

use crate::client::Link;
use crate::proto::{MAX_UDP_PAYLOAD, Role, TestSpec, UNBOUNDED, UdpMode};
use crate::route::Route;
use open::{UDP_MAX_LOST_IN_A_ROW, UDP_PING_TIMEOUT};

benchsuite_core::choice_enum! {
    /// The transport of the ping-pong (`proto`).
    enum Proto {
        /// TCP, `TCP_NODELAY` on both ends.
        Tcp = "tcp",
        /// UDP.
        Udp = "udp",
    }
}

benchsuite_core::choice_enum! {
    /// What else runs during the ping-pong (`load`).
    enum LoadKind {
        /// Nothing.
        None = "none",
        /// A bulk TCP stream to the same server.
        Tcp = "tcp",
    }
}

benchsuite_core::choice_enum! {
    /// Where the ping-pong's two threads run (`cpus`, as
    /// `os.context_switch` names them).
    enum Cpus {
        /// `same` for the ping-pong with the in-process server, `any` with
        /// `--peer` or a rate: the default, one placement every run (`any`
        /// flips between the costs of `same` and `different` from run to
        /// run).
        Auto = "auto",
        /// Where the scheduler puts them.
        Any = "any",
        /// Both on one CPU.
        Same = "same",
        /// On two CPUs.
        Different = "different",
    }
}

/// The largest ping-pong message.
const MAX_MESSAGE: u64 = 64 << 10;

/// Block size of the background stream of `load=tcp`.
const LOAD_BLOCK: usize = 128 << 10;

/// Ping-pong latency; see the crate docs.
#[derive(Debug, Default)]
pub struct Latency;

impl Benchmark for Latency {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::client::Target::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "net.latency".into(),
            description: "ping-pong round-trip time of block-sized messages over TCP or UDP (sockperf ping-pong --full-rtt), optionally under a bulk TCP load".into(),
            params: vec![
                ParamSpec::choice_of("proto", "tcp (TCP_NODELAY on both ends) or udp", Proto::Tcp),
                ParamSpec::size(
                    "block",
                    "message size each way, 1 byte..64 KiB (sockperf -m; lmbench lat_tcp uses 1)",
                    1,
                    MAX_MESSAGE,
                    1,
                ),
                ParamSpec::choice_of(
                    "load",
                    "none, or tcp: a bulk TCP stream (128 KiB writes) to the same server runs throughout (latency under load)",
                    LoadKind::None,
                ),
                ParamSpec::choice_of(
                    "cpus",
                    "where the ping-pong's two threads run: auto: same for the ping-pong with the in-process server, any with --peer or a rate; any: where the scheduler puts them (plain sockperf; the round trip then changes with the placement, run to run: on a 2-vCPU VM 12 or 57 µs); same: this client thread and the server's echo thread pinned to one CPU (a round trip is two context switches, no cross-CPU wake-up; taskset -c 0 on both sockperf ends); different: pinned to two CPUs (every wake-up crosses CPUs, as it does between two hosts). same and different need the in-process server",
                    Cpus::Auto,
                ),
                ParamSpec::rate(
                    "rate",
                    "off = ping-pong (closed loop); N = open loop at N requests/s, as many outstanding as the rate needs, latency from each request's intended start; auto = a ladder up to saturation (see --slo)",
                ),
            ],
            metrics: vec![MetricSpec::latency("rtt")],
        }
    }

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        if let Some(cpus) = point.get("cpus").and_then(Value::as_str)
            && !matches!(Cpus::from_name(cpus), Some(Cpus::Any | Cpus::Auto))
            && ctx.options.contains_key("peer")
        {
            return Err(ConfigError::InvalidValue {
                param: "cpus".into(),
                value: cpus.into(),
                reason: "with --peer the server is another process, not this one's to place: leave cpus=auto (or any) and pin each end: `benchsuite serve --echo-cpu N` there, `taskset -c M benchsuite run ...` here".into(),
            });
        }
        let udp = point
            .get("proto")
            .and_then(Value::as_str)
            .and_then(Proto::from_name)
            == Some(Proto::Udp);
        let block = point.get("block").and_then(Value::as_u64);
        if let Some(b) = block
            && udp
            && Rate::of(point) != Rate::Closed
            && b < open::UDP_TAG as u64
        {
            return Err(ConfigError::InvalidValue {
                param: "block".into(),
                value: b.to_string(),
                reason: format!(
                    "with proto=udp and a rate each request carries its {}-byte sequence number (answers are matched by it): block must be at least {}",
                    open::UDP_TAG,
                    open::UDP_TAG
                ),
            });
        }
        if let Some(b) = block
            && udp
            && b > u64::from(MAX_UDP_PAYLOAD)
        {
            return Err(ConfigError::InvalidValue {
                param: "block".into(),
                value: b.to_string(),
                reason: format!(
                    "a UDP datagram carries at most {MAX_UDP_PAYLOAD} bytes (65535 minus the IP and UDP headers)"
                ),
            });
        }
        Ok(())
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::facts::host_facts(ctx))
    }

    /// The matching reference tool on loopback (none with `--peer`).
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::latency(ctx, point)
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let udp = point.choice::<Proto>("proto")? == Proto::Udp;
        let block = point.u64("block")? as usize;
        let load = point.choice::<LoadKind>("load")? == LoadKind::Tcp;
        let asked = point.choice::<Cpus>("cpus")?;
        let rate = match Rate::of(point) {
            Rate::Closed => None,
            Rate::Fixed(r) => Some(r),
            Rate::Auto => {
                return Err(BenchError::Other(
                    "rate=auto reached net.latency unresolved: it stands for a ladder of rates that the capacity search (`benchsuite run` with rate=auto) measures one by one; give a number of requests per second, or off".into(),
                ));
            }
        };
        // auto: one placement every run for the closed loop; the open
        // loop (a rate) and a peer keep the scheduler's.
        let cpus = match asked {
            Cpus::Auto if ctx.options.contains_key("peer") || rate.is_some() => Cpus::Any,
            Cpus::Auto => Cpus::Same,
            c => c,
        };
        if udp && rate.is_some() && block < open::UDP_TAG {
            return Err(BenchError::Other(format!(
                "open-loop UDP needs block >= {} (the sequence number)",
                open::UDP_TAG
            )));
        }
        let placement = placement(cpus)?;
        if udp && block > MAX_UDP_PAYLOAD as usize {
            return Err(BenchError::Other(format!(
                "a UDP datagram carries at most {MAX_UDP_PAYLOAD} bytes"
            )));
        }
        let spec = TestSpec {
            block: block as u32,
            tcp_streams: u32::from(!udp) + u32::from(load),
            udp_streams: u32::from(udp),
            udp_mode: UdpMode::Echo,
            nodelay: true,
        };
        let link = Link::open_pinned(ctx, spec, placement.map(|(_, server)| server))?;
        let route = link.target.route();
        let mut about = About {
            notes: vec![link.target.path_note(&route)],
            ..About::default()
        };
        let setup = (|| -> Result<(Pinger, Option<Load>), BenchError> {
            let pinger = if udp {
                let port = *link
                    .udp_ports
                    .first()
                    .ok_or_else(|| BenchError::Other("the server opened no UDP socket".into()))?;
                let s = link.dialer.udp(port)?;
                s.set_read_timeout(Some(UDP_PING_TIMEOUT))
                    .map_err(|e| BenchError::io("set_read_timeout", e))?;
                if rate.is_some() {
                    s.set_nonblocking(true)
                        .map_err(|e| BenchError::io("set_nonblocking", e))?;
                }
                Pinger::Udp {
                    sock: s,
                    seq: 0,
                    buf: vec![0; block],
                    back: vec![0; block + 1],
                }
            } else {
                let sock = link.dialer.attach(Role::Echo, true)?;
                if rate.is_some() {
                    sock.set_nonblocking(true)
                        .map_err(|e| BenchError::io("set_nonblocking", e))?;
                }
                Pinger::Tcp {
                    sock,
                    buf: vec![0x5a; block],
                }
            };
            let load = if load {
                Some(Load::start(link.dialer.attach(Role::Sink, false)?)?)
            } else {
                None
            };
            Ok((pinger, load))
        })();
        let (pinger, load_stream) = match setup {
            Ok(s) => s,
            Err(e) => {
                let _ = link.finish();
                return Err(e);
            }
        };
        if load_stream.is_some() {
            about.caveat(
                "load=tcp: a bulk TCP stream (128 KiB writes) to the same server ran throughout; on a machine with few CPUs it competes with the ping-pong for them too",
            );
        }
        // Last, so that no thread started above inherits this pin: the
        // server's echo thread pins itself, the load's threads are free.
        let restore_cpus = match placement {
            Some((client, _)) => {
                let before = allowed_cpus();
                if let Err(e) = pin_current_thread(client) {
                    if let Some(l) = load_stream {
                        l.stop();
                    }
                    drop(pinger);
                    let _ = link.finish();
                    return Err(e);
                }
                Some(before)
            }
            None => None,
        };
        match placement {
            Some((client, server)) => about.notes.push(format!(
                "cpus={}: this client thread ran on CPU {client}, the server's echo thread on CPU {server}{}",
                if asked == Cpus::Auto { format!("auto (as {cpus})") } else { cpus.to_string() },
                if load { "; the load's sender and sink were not pinned" } else { "" }
            )),
            None if route == Route::Loopback => about.notes.push(
                "cpus=any: the scheduler placed client and server; a wake-up on the other CPU (an inter-processor interrupt; in a virtual machine a hypervisor exit) can cost more than a switch on the same CPU, so the round trip depends on where they ran: cpus=same and cpus=different measure each".into(),
            ),
            None => {}
        }
        if route == Route::Loopback {
            about.notes.push(
                "loopback: the round trip is two system calls and two wake-ups on each side, no wire".into(),
            );
        }
        Ok(Box::new(LatencyCase {
            open: rate.map(|rate| Open {
                timeline: benchsuite_core::openloop::Timeline::new(rate),
                rate,
                bufs: open::Bufs::new(block),
                stats: open::OpenStats::default(),
            }),
            pinger,
            load: load_stream,
            lost: 0,
            pings: 0,
            about,
            restore_cpus,
            link,
        }))
    }
}

enum Pinger {
    Tcp {
        sock: TcpStream,
        buf: Vec<u8>,
    },
    Udp {
        sock: UdpSocket,
        seq: u64,
        buf: Vec<u8>,
        back: Vec<u8>,
    },
}

/// The background stream of `load=tcp`: a thread writing to a sink until
/// told to stop (or until the server closes the sink).
struct Load {
    stop: Arc<AtomicBool>,
    sock: TcpStream,
    thread: JoinHandle<()>,
}

impl Load {
    fn start(sock: TcpStream) -> Result<Load, BenchError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut w = sock
            .try_clone()
            .map_err(|e| BenchError::io("cloning the load connection", e))?;
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("benchsuite-net-load".into())
            .spawn(move || {
                let buf = vec![0xa5u8; LOAD_BLOCK];
                if w.write_all(&UNBOUNDED.to_be_bytes()).is_err() {
                    return;
                }
                while !st.load(Ordering::Relaxed) {
                    if w.write_all(&buf).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| BenchError::io("spawning the load thread", e))?;
        Ok(Load { stop, sock, thread })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblocks a write waiting for buffer space.
        let _ = self.sock.shutdown(Shutdown::Both);
        let _ = self.thread.join();
    }
}

/// The open loop's state (`rate=N`).
struct Open {
    rate: f64,
    /// The schedule across the case's batches.
    timeline: benchsuite_core::openloop::Timeline,
    bufs: open::Bufs,
    stats: open::OpenStats,
}

struct LatencyCase {
    /// `Some` in an open loop; the sockets are non-blocking then.
    open: Option<Open>,
    pinger: Pinger,
    /// The background stream, with `load=tcp`.
    load: Option<Load>,
    lost: u64,
    pings: u64,
    /// Its notes give the path, and where the threads ran; [`Case::finish`]
    /// adds lost UDP pings to its caveats.
    about: About,
    /// This thread's CPUs before `cpus=same|different` pinned it; put back
    /// in [`Case::finish`].
    restore_cpus: Option<Vec<usize>>,
    link: Link,
}

fn io_err(what: &str) -> impl Fn(io::Error) -> BenchError + '_ {
    move |e| BenchError::io(what.to_string(), e)
}

impl Case for LatencyCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        if let Some(o) = &mut self.open {
            let sched = o.timeline.batch(iters);
            let work = match &mut self.pinger {
                Pinger::Tcp { sock, buf } => {
                    open::tcp_batch(sock, buf.len(), sched, iters, &mut o.bufs, &mut o.stats)
                }
                Pinger::Udp { sock, seq, buf, .. } => open::udp_batch(
                    sock,
                    buf.len(),
                    sched,
                    iters,
                    seq,
                    &mut o.bufs,
                    &mut o.stats,
                ),
            };
            // The schedule pauses while the runner has the thread.
            o.timeline.end();
            return work;
        }
        let mut hist = new_latency_histogram();
        match &mut self.pinger {
            Pinger::Tcp { sock, buf } => {
                for _ in 0..iters {
                    let t0 = Instant::now();
                    sock.write_all(buf).map_err(io_err("sending a ping"))?;
                    sock.read_exact(buf)
                        .map_err(io_err("waiting for the pong"))?;
                    let ns = t0.elapsed().as_nanos() as u64;
                    hist.record(ns.max(1))
                        .map_err(|e| BenchError::caused("histogram", e))?;
                }
            }
            Pinger::Udp {
                sock,
                seq,
                buf,
                back,
            } => {
                let mut done = 0;
                let mut lost_in_a_row = 0;
                while done < iters {
                    *seq += 1;
                    // A sequence number (as much of it as fits) tells this
                    // ping's answer from a late answer to a lost one.
                    let tag = seq.to_be_bytes();
                    let n = buf.len().min(8);
                    buf[..n].copy_from_slice(&tag[8 - n..]);
                    let t0 = Instant::now();
                    sock.send(buf).map_err(io_err("sending a UDP ping"))?;
                    self.pings += 1;
                    let answered = loop {
                        match sock.recv(back) {
                            Ok(k) if k == buf.len() && back[..n] == buf[..n] => break true,
                            Ok(_) => continue, // a stale answer
                            Err(e) if crate::proto::is_timeout(&e) => break false,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(BenchError::io("waiting for a UDP pong", e)),
                        }
                    };
                    if answered {
                        let ns = t0.elapsed().as_nanos() as u64;
                        hist.record(ns.max(1))
                            .map_err(|e| BenchError::caused("histogram", e))?;
                        done += 1;
                        lost_in_a_row = 0;
                    } else {
                        self.lost += 1;
                        lost_in_a_row += 1;
                        if lost_in_a_row >= UDP_MAX_LOST_IN_A_ROW {
                            return Err(BenchError::Other(format!(
                                "{UDP_MAX_LOST_IN_A_ROW} UDP pings in a row got no answer within {} ms: is UDP blocked between the hosts?",
                                UDP_PING_TIMEOUT.as_millis()
                            )));
                        }
                    }
                }
            }
        }
        Ok(Work {
            ops: iters,
            latency: Some(hist),
            ..Work::default()
        })
    }

    fn finish(self: Box<Self>) -> Finished {
        let LatencyCase {
            open,
            pinger,
            load,
            lost,
            pings,
            mut about,
            restore_cpus,
            link,
        } = *self;
        if let Some(l) = load {
            l.stop();
        }
        drop(pinger);
        if let Some(cpus) = restore_cpus {
            let _ = set_current_thread_cpus(&cpus);
        }
        let ended = link.finish().map(|_| ());
        if let Some(o) = open {
            about.notes.push(o.stats.note(o.rate));
            if o.stats.lost > 0 {
                about.caveat(format!(
                    "{} of {} UDP requests got no answer within {} ms: each counts as lost (no sample, not resent, so the schedule stays as it was), and the achieved rate counts only those answered",
                    o.stats.lost,
                    o.stats.requests,
                    UDP_PING_TIMEOUT.as_millis()
                ));
            }
        }
        if lost > 0 {
            about.caveat(format!(
                "{lost} of {pings} UDP pings got no answer within {} ms and were resent; a lost ping adds no sample, and each cost its timeout in wall time",
                UDP_PING_TIMEOUT.as_millis()
            ));
        }
        Finished::with(about, ended)
    }
}

/// Where the client thread and the in-process server's echo thread run:
/// `(client, server)` CPUs, or `None` for wherever the scheduler puts
/// them. The CPUs are the first one or two this thread may run on.
fn placement(cpus: Cpus) -> Result<Option<(usize, usize)>, BenchError> {
    let allowed = allowed_cpus();
    match (cpus, allowed.as_slice()) {
        (Cpus::Any | Cpus::Auto, _) => Ok(None),
        (Cpus::Same, [a, ..]) => Ok(Some((*a, *a))),
        (Cpus::Different, [a, b, ..]) => Ok(Some((*a, *b))),
        (Cpus::Different, _) => Err(BenchError::Skip(format!(
            "cpus=different needs two CPUs, and this process may run only on {allowed:?}"
        ))),
        (Cpus::Same, []) => Err(BenchError::Other(
            "cpus=same: this process may run on no CPU".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Cpus_allowed_list` of each thread of this process whose name
    /// starts with `prefix` (names are cut to 15 bytes).
    fn thread_cpus(prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if !comm.starts_with(prefix) {
                continue;
            }
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            if let Some(l) = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            {
                out.push(l.trim().to_string());
            }
        }
        out
    }

    #[test]
    fn cpus_pins_both_ends_and_finish_unpins() {
        let before = allowed_cpus();
        let mode = if before.len() >= 2 {
            Cpus::Different
        } else {
            Cpus::Same
        };
        let (client, server) = placement(mode).unwrap().unwrap();
        let ctx = Context::new(Arc::new(benchsuite_core::Host::default()));
        let mut p = Point::default();
        for (k, v) in [("proto", "tcp"), ("load", "none"), ("cpus", mode.name())] {
            p.set(k, Value::Str(v.into()));
        }
        p.set("block", Value::Int(1));
        let mut case = Latency.prepare(&ctx, &p).unwrap();
        let w = case.run(50).unwrap();
        assert_eq!(w.latency.unwrap().len(), 50);
        assert_eq!(allowed_cpus(), vec![client]);
        // The echo thread ("benchsuite-net-data", cut to 15 bytes) runs
        // on the server's CPU (other tests' servers may run beside it).
        let data = thread_cpus("benchsuite-net-");
        assert!(data.contains(&server.to_string()), "{data:?}");
        let finished = case.finish();
        assert!(finished.error.is_none(), "{:?}", finished.error);
        assert_eq!(allowed_cpus(), before);
        if before.len() >= 2 {
            assert_eq!(
                placement(Cpus::Different).unwrap(),
                Some((before[0], before[1]))
            );
        }
        assert_eq!(placement(Cpus::Any).unwrap(), None);
    }
}
