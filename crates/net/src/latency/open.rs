//! The open loop of `net.latency` (`rate=N`): requests on a fixed
//! schedule, each one's latency from its intended start (see
//! [`benchsuite_core::openloop`]).
//!
//! One thread and one non-blocking socket per batch: it sleeps in `ppoll`
//! until the next intended start or until the socket can be read (or, with
//! a send pending, written), sends every request that is due, reads what
//! came back and records each answer's latency from its request's intended
//! start. As many requests are outstanding as the rate and the round trip
//! make; nothing limits them. A send that a full socket buffer holds up
//! leaves late, and its latency counts from its intended start all the
//! same. The batch returns once every request was answered (or, for UDP,
//! given up on): nothing carries over to the next.
//!
//! TCP: requests are pipelined on the connection and the echo is a byte
//! stream in order, so the `k`-th `block` bytes back answer request `k`.
//! UDP: each datagram starts with a 64-bit sequence number (so `block` is
//! at least 8) that matches its answer; one unanswered
//! [`UDP_PING_TIMEOUT`] after it was sent is lost
//! (no sample, not resent: resending would change the schedule).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use benchsuite_core::openloop::{Schedule, latency_ns};
use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::{BenchError, Work};
use hdrhistogram::Histogram;

use crate::client::DATA_TIMEOUT;
use crate::sys::{FineTimer, wait_ready};

/// How long a UDP ping waits for its answer before it counts as lost.
pub(super) const UDP_PING_TIMEOUT: Duration = Duration::from_millis(200);

/// Consecutive lost UDP pings after which the batch fails.
pub(super) const UDP_MAX_LOST_IN_A_ROW: u32 = 10;

/// The smallest UDP request of the open loop: its sequence number.
pub(super) const UDP_TAG: usize = 8;

/// How long a batch may go without a byte sent or received before it
/// gives up on the server.
const STUCK: Duration = DATA_TIMEOUT;

/// What the open loop saw over all batches (warm-up included), for the
/// record's notes.
#[derive(Debug, Default)]
pub(super) struct OpenStats {
    /// Requests sent.
    pub requests: u64,
    /// The most requests sent and not yet answered at once.
    pub max_outstanding: u64,
    /// The sum of each request's send lateness (the time from its intended
    /// start to its first byte entering the socket), ns.
    pub late_ns: u128,
    /// The largest such lateness, ns.
    pub late_max_ns: u64,
    /// UDP requests unanswered within [`UDP_PING_TIMEOUT`].
    pub lost: u64,
}

impl OpenStats {
    fn sent(&mut self, sched: &Schedule, k: u64, at: Instant) {
        let late = at.saturating_duration_since(sched.at(k)).as_nanos() as u64;
        self.requests += 1;
        self.late_ns += u128::from(late);
        self.late_max_ns = self.late_max_ns.max(late);
    }

    /// The record's note, at `rate` requests/s.
    pub(super) fn note(&self, rate: f64) -> String {
        let mean_late = if self.requests > 0 {
            (self.late_ns / u128::from(self.requests)) as f64 / 1e3
        } else {
            0.0
        };
        format!(
            "open loop at {rate} requests/s on 1 connection: each request has an intended start on a fixed schedule (continued across batches), and its latency counts from that start to its answer, so a stall or a late send counts in full (no coordinated omission); up to {} request{} outstanding at once; a request's send left on average {mean_late:.1} µs after its intended start (at most {:.1} µs; the client sleeps in ppoll until then, it does not spin)",
            self.max_outstanding,
            if self.max_outstanding == 1 {
                " was"
            } else {
                "s were"
            },
            self.late_max_ns as f64 / 1e3,
        )
    }
}

/// The buffers of a batch, kept between batches.
#[derive(Debug)]
pub(super) struct Bufs {
    /// Requests to send: TCP sends from it in pieces, UDP its first
    /// `block` bytes with the tag in front.
    out: Vec<u8>,
    /// Answers.
    back: Vec<u8>,
}

impl Bufs {
    pub(super) fn new(block: usize) -> Bufs {
        Bufs {
            out: vec![0x5a; block.max(64 << 10)],
            back: vec![0; block.max(64 << 10) + 1],
        }
    }
}

fn record(hist: &mut Histogram<u64>, ns: u64) -> Result<(), BenchError> {
    hist.record(ns)
        .map_err(|e| BenchError::caused("histogram", e))
}

fn stuck(what: &str) -> BenchError {
    BenchError::Other(format!(
        "open loop: nothing sent or received for {} s while {what}: is the server stopped?",
        STUCK.as_secs()
    ))
}

/// One TCP batch of `iters` requests of `block` bytes on `sched` (the
/// case's [`benchsuite_core::openloop::Timeline`] continued).
pub(super) fn tcp_batch(
    sock: &mut TcpStream,
    block: usize,
    sched: Schedule,
    iters: u64,
    bufs: &mut Bufs,
    stats: &mut OpenStats,
) -> Result<Work, BenchError> {
    let _timer = FineTimer::new();
    let mut hist = new_latency_histogram();
    let b = block as u64;
    let total = iters * b;
    let (mut sent, mut got, mut done) = (0u64, 0u64, 0u64);
    let mut progress = sched.start();
    while done < iters {
        let now = Instant::now();
        let want = sched.due(now).min(iters) * b;
        let mut blocked = false;
        while sent < want {
            let n = ((want - sent) as usize).min(bufs.out.len());
            let t = Instant::now();
            match sock.write(&bufs.out[..n]) {
                Ok(0) => return Err(BenchError::Other("the server closed the connection".into())),
                Ok(w) => {
                    // Requests whose first byte left in this write.
                    for k in sent.div_ceil(b)..(sent + w as u64).div_ceil(b) {
                        stats.sent(&sched, k, t);
                    }
                    sent += w as u64;
                    progress = t;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::io("sending a request", e)),
            }
        }
        stats.max_outstanding = stats.max_outstanding.max(sent.div_ceil(b) - done);
        loop {
            match sock.read(&mut bufs.back) {
                Ok(0) => {
                    return Err(BenchError::Other(
                        "the server closed the connection before answering every request".into(),
                    ));
                }
                Ok(r) => {
                    let t = Instant::now();
                    got += r as u64;
                    if got > sent {
                        return Err(BenchError::Other(
                            "the server sent more bytes than were sent to it".into(),
                        ));
                    }
                    for k in done..got / b {
                        record(&mut hist, latency_ns(sched.at(k), t))?;
                    }
                    done = got / b;
                    progress = t;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::io("reading the answers", e)),
            }
        }
        if done == iters {
            break;
        }
        let now = Instant::now();
        if now.duration_since(progress) >= STUCK {
            return Err(stuck("requests were outstanding"));
        }
        // Until the next intended start, an answer, or room to send.
        let mut events = libc::POLLIN;
        // Not blocked, every due request left whole: the next starts at
        // its intended time.
        let next = if blocked {
            events |= libc::POLLOUT;
            None
        } else if sent < total {
            Some(sched.at(sent / b))
        } else {
            None
        };
        let limit = progress + STUCK;
        let until = next.map_or(limit, |n| n.min(limit));
        if until > now {
            wait_ready(sock, events, Some(until - now))
                .map_err(|e| BenchError::io("waiting on the connection", e))?;
        }
    }
    Ok(Work {
        ops: iters,
        latency: Some(hist),
        ..Work::default()
    })
}

/// A UDP request sent and not yet settled.
#[derive(Debug, Clone, Copy)]
struct Pending {
    sent: Instant,
    answered: bool,
}

/// One UDP batch of `iters` requests of `block` (≥ [`UDP_TAG`]) bytes at
/// `sched`; `seq` is the case's sequence counter. The work's operations
/// are the answered requests.
pub(super) fn udp_batch(
    sock: &UdpSocket,
    block: usize,
    sched: Schedule,
    iters: u64,
    seq: &mut u64,
    bufs: &mut Bufs,
    stats: &mut OpenStats,
) -> Result<Work, BenchError> {
    if block < UDP_TAG {
        return Err(BenchError::Other(format!(
            "open-loop UDP needs block >= {UDP_TAG} (the sequence number)"
        )));
    }
    let _timer = FineTimer::new();
    let mut hist = new_latency_histogram();
    // Request k carries sequence number base + k; a datagram outside the
    // window (a late answer to a lost request, from an earlier batch) is
    // stale.
    let base = *seq + 1;
    *seq += iters;
    let mut window: VecDeque<Pending> = VecDeque::new();
    // Requests 0..front are settled, front..next sent; `unanswered` of
    // those wait for their answer.
    let (mut front, mut next, mut done, mut unanswered) = (0u64, 0u64, 0u64, 0u64);
    let (mut lost_in_a_row, mut last_answer) = (0u32, sched.start());
    let silence = UDP_PING_TIMEOUT * UDP_MAX_LOST_IN_A_ROW;
    let mut progress = sched.start();
    loop {
        let due = sched.due(Instant::now()).min(iters);
        let mut blocked = false;
        while next < due {
            bufs.out[..UDP_TAG].copy_from_slice(&(base + next).to_be_bytes());
            let t = Instant::now();
            match sock.send(&bufs.out[..block]) {
                Ok(_) => {
                    stats.sent(&sched, next, t);
                    window.push_back(Pending {
                        sent: t,
                        answered: false,
                    });
                    next += 1;
                    unanswered += 1;
                    progress = t;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::io("sending a UDP request", e)),
            }
        }
        stats.max_outstanding = stats.max_outstanding.max(unanswered);
        loop {
            match sock.recv(&mut bufs.back) {
                Ok(n) if n == block => {
                    let t = Instant::now();
                    let tag =
                        u64::from_be_bytes(bufs.back[..UDP_TAG].try_into().unwrap_or_default());
                    let k = tag.wrapping_sub(base);
                    if k < front || k >= next {
                        continue;
                    }
                    let p = &mut window[(k - front) as usize];
                    if !p.answered {
                        p.answered = true;
                        record(&mut hist, latency_ns(sched.at(k), t))?;
                        done += 1;
                        unanswered -= 1;
                        last_answer = t;
                        progress = t;
                    }
                }
                Ok(_) => {} // not one of ours
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::io("waiting for UDP answers", e)),
            }
        }
        // Settle the oldest requests: answered, or lost once past the
        // timeout.
        let now = Instant::now();
        while let Some(p) = window.front() {
            if p.answered {
                lost_in_a_row = 0;
            } else if now.duration_since(p.sent) >= UDP_PING_TIMEOUT {
                stats.lost += 1;
                unanswered -= 1;
                lost_in_a_row += 1;
                if lost_in_a_row >= UDP_MAX_LOST_IN_A_ROW
                    && now.duration_since(last_answer) >= silence
                {
                    return Err(BenchError::Other(format!(
                        "{UDP_MAX_LOST_IN_A_ROW} UDP requests in a row got no answer within {} ms, and none came for {} s: is UDP blocked between the hosts?",
                        UDP_PING_TIMEOUT.as_millis(),
                        silence.as_secs()
                    )));
                }
            } else {
                break;
            }
            window.pop_front();
            front += 1;
        }
        if next == iters && window.is_empty() {
            break;
        }
        if now.duration_since(progress) >= STUCK {
            return Err(stuck("UDP requests were due"));
        }
        let mut events = libc::POLLIN;
        let mut until = progress + STUCK;
        if blocked {
            events |= libc::POLLOUT;
        } else if next < iters {
            until = until.min(sched.at(next));
        }
        // The oldest unsettled request is unanswered: its timeout.
        if let Some(p) = window.front() {
            until = until.min(p.sent + UDP_PING_TIMEOUT);
        }
        if until > now {
            wait_ready(sock, events, Some(until - now))
                .map_err(|e| BenchError::io("waiting on the UDP socket", e))?;
        }
    }
    Ok(Work {
        ops: done,
        latency: Some(hist),
        ..Work::default()
    })
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A UDP echo on loopback that answers request `i` (in arrival order)
    /// when `answer(i)`, until dropped; and a client socket connected to it.
    fn udp_echo(answer: fn(u64) -> bool) -> (UdpSocket, std::thread::JoinHandle<()>) {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        client.set_nonblocking(true).unwrap();
        let me = client.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut i = 0;
            let mut quiet = 0;
            // Ends after a second without a datagram.
            while quiet < 20 {
                match server.recv_from(&mut buf) {
                    Ok((n, from)) if from == me => {
                        quiet = 0;
                        if answer(i) {
                            server.send_to(&buf[..n], from).unwrap();
                        }
                        i += 1;
                    }
                    _ => quiet += 1,
                }
            }
        });
        (client, t)
    }

    #[test]
    fn lost_udp_requests_are_counted_and_do_not_hang_the_batch() {
        let (sock, server) = udp_echo(|i| i % 4 != 3);
        let mut stats = OpenStats::default();
        let mut bufs = Bufs::new(32);
        let mut seq = 0;
        let t0 = Instant::now();
        let w = udp_batch(
            &sock,
            32,
            Schedule::new(5000.0),
            200,
            &mut seq,
            &mut bufs,
            &mut stats,
        )
        .unwrap();
        let took = t0.elapsed();
        assert_eq!(w.ops, 150);
        assert_eq!(w.latency.unwrap().len(), 150);
        assert_eq!((stats.lost, stats.requests), (50, 200));
        assert_eq!(seq, 200);
        // 40 ms of schedule, then the last loss's 200 ms timeout.
        assert!(
            took >= UDP_PING_TIMEOUT && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert!(stats.note(5000.0).contains("open loop at 5000 requests/s"));
        // The next batch ignores answers to the last one's requests.
        let w = udp_batch(
            &sock,
            32,
            Schedule::new(5000.0),
            8,
            &mut seq,
            &mut bufs,
            &mut stats,
        )
        .unwrap();
        assert_eq!(w.ops, 6);
        drop(sock);
        server.join().unwrap();
    }

    #[test]
    fn udp_with_no_answers_fails_saying_so() {
        let (sock, server) = udp_echo(|_| false);
        let mut stats = OpenStats::default();
        let mut bufs = Bufs::new(8);
        let e = udp_batch(
            &sock,
            8,
            Schedule::new(1000.0),
            10_000,
            &mut 0,
            &mut bufs,
            &mut stats,
        )
        .expect_err("fails");
        assert!(e.to_string().contains("is UDP blocked"), "{e}");
        drop(sock);
        server.join().unwrap();
    }

    /// A TCP echo that answers in pieces of 1 to 7 bytes whatever the
    /// block, so answers straddle reads: the client still matches the
    /// `k`-th block to request `k`.
    #[test]
    fn tcp_answers_split_anywhere_are_matched_in_order() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let server = std::thread::spawn(move || {
            let mut buf = [0u8; 7];
            let mut n = 1;
            loop {
                match s.read(&mut buf[..n]) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => s.write_all(&buf[..k]).unwrap(),
                }
                n = n % 7 + 1;
            }
        });
        client.set_nodelay(true).unwrap();
        client.set_nonblocking(true).unwrap();
        let mut stats = OpenStats::default();
        let mut bufs = Bufs::new(10);
        // Far above what the echo keeps up with: requests pile up.
        let w = tcp_batch(
            &mut client,
            10,
            Schedule::new(1e6),
            3000,
            &mut bufs,
            &mut stats,
        )
        .unwrap();
        assert_eq!(w.ops, 3000);
        let h = w.latency.unwrap();
        assert_eq!(h.len(), 3000);
        assert!(stats.max_outstanding > 1, "{stats:?}");
        assert_eq!(stats.requests, 3000);
        // Latencies from the intended start grow as the queue does.
        assert!(h.max() > h.min());
        drop(client);
        server.join().unwrap();
    }
}
