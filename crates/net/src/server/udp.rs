//! The server's UDP side: a test's UDP sockets, each with a blocking
//! receive thread (sink or echo), the per-batch receive accounting
//! (`UdpAcc`: loss, reordering, lateness, RFC 3550 jitter) and the drain
//! that answers a `udp_batch` once every stream's batch is in. These sit
//! together because the accounting, the thread that feeds it and the
//! drain that reads it share one lock and one notion of a batch.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::proto::{self, UdpBatchStats, UdpMode};

use super::session::{Session, pin_data_thread};
use super::{Shared, lock};

/// How often a UDP thread wakes to check whether its test ended.
const UDP_POLL: Duration = Duration::from_millis(50);

/// After a `UdpBatch` request: a stream whose last datagram has not arrived
/// is considered drained when nothing arrived on it for this long.
const UDP_QUIET: Duration = Duration::from_millis(2);

/// The longest a `UdpBatch` answer waits for stragglers.
const UDP_DRAIN_MAX: Duration = Duration::from_secs(1);

pub(super) struct UdpStream {
    sock: Arc<UdpSocket>,
    acc: Arc<Mutex<UdpAcc>>,
    pub(super) thread: Mutex<Option<JoinHandle<()>>>,
}

impl Session {
    pub(super) fn add_udp(&mut self, shared: &Shared, ip: IpAddr) -> Result<(), String> {
        let sock = UdpSocket::bind(SocketAddr::new(ip, 0)).map_err(|e| format!("bind: {e}"))?;
        sock.set_read_timeout(Some(UDP_POLL))
            .map_err(|e| format!("set_read_timeout: {e}"))?;
        // The receive buffer stays at the system default
        // (net.core.rmem_default), as iperf3 leaves it: a deeper one loses
        // less in bursts but hands the receiver cache-cold data at overload.
        let port = sock
            .local_addr()
            .map_err(|e| format!("getsockname: {e}"))?
            .port();
        let sock = Arc::new(sock);
        Self::reserve_thread(shared)?;
        let acc = Arc::new(Mutex::new(UdpAcc::default()));
        let (a, stop, peer, epoch, block, mode) = (
            acc.clone(),
            self.stop.clone(),
            self.peer_ip,
            self.shared_epoch,
            self.spec.block as usize,
            self.spec.udp_mode,
        );
        let activity = self.last_activity.clone();
        let count = self.data_threads.clone();
        let sock2 = sock.clone();
        let cpu = shared.cfg.echo_cpu.filter(|_| mode == UdpMode::Echo);
        let sh = self.data_threads.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("benchsuite-net-udp".into())
            .spawn(move || {
                pin_data_thread(&sh, cpu);
                udp_thread(&sock2, &a, &stop, peer, epoch, block, mode, &activity);
                count.release();
            });
        match spawned {
            Ok(h) => {
                self.udp.push(UdpStream {
                    sock,
                    acc,
                    thread: Mutex::new(Some(h)),
                });
                self.udp_ports.push(port);
                Ok(())
            }
            Err(e) => {
                self.data_threads.release();
                Err(format!("spawning a thread: {e}"))
            }
        }
    }

    /// Waits until each UDP stream has its batch (last datagram seen, or
    /// quiet for [`UDP_QUIET`]), then returns and resets the counts.
    pub(super) async fn udp_batch(&self, end_seq: &[u64]) -> Vec<UdpBatchStats> {
        let asked = Instant::now();
        loop {
            let done = self.udp.iter().zip(end_seq).all(|(u, &end)| {
                let a = lock(&u.acc);
                if a.next_seq >= end {
                    return true;
                }
                // Datagrams still queued: the receiving thread is behind
                // (descheduled), not done.
                if crate::sys::pending(&*u.sock).is_some_and(|n| n > 0) {
                    return false;
                }
                let quiet_since = a.last_arrival.map_or(asked, |t| t.max(asked));
                quiet_since.elapsed() >= UDP_QUIET
            });
            if done || asked.elapsed() >= UDP_DRAIN_MAX || self.stop.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        self.touch();
        self.udp
            .iter()
            .zip(end_seq)
            .map(|(u, &end)| lock(&u.acc).take_batch(end))
            .collect()
    }
}

/// What a UDP sink stream has counted in the current batch.
#[derive(Debug, Default)]
pub(crate) struct UdpAcc {
    /// First sequence number of the current batch.
    batch_start: u64,
    /// One past the highest sequence number seen.
    next_seq: u64,
    stats: UdpBatchStats,
    /// Transit time (arrival − send stamp) of the previous datagram, ns.
    last_transit: Option<i128>,
    jitter_ns: f64,
    last_arrival: Option<Instant>,
}

impl UdpAcc {
    /// Counts one datagram: sequence number, payload length, the sender's
    /// timestamp and our arrival time (both in ns on their own clocks).
    pub(crate) fn record(
        &mut self,
        seq: u64,
        len: u64,
        sent_ns: u64,
        arrival_ns: u64,
        now: Instant,
    ) {
        self.last_arrival = Some(now);
        if seq < self.batch_start {
            self.stats.late += 1;
            return;
        }
        if self.stats.received == 0 {
            self.stats.first_ns = arrival_ns;
            self.stats.first_bytes = len;
        }
        self.stats.last_ns = arrival_ns;
        self.stats.received += 1;
        self.stats.bytes += len;
        if seq < self.next_seq {
            self.stats.out_of_order += 1;
        } else {
            // A forged u64::MAX must not overflow (a debug build would
            // panic and leak this data thread's slot).
            self.next_seq = seq.saturating_add(1);
        }
        // RFC 3550 §6.4.1: J += (|D(i-1, i)| - J) / 16, where D is the
        // difference of transit times; the clocks' offset cancels.
        let transit = i128::from(arrival_ns) - i128::from(sent_ns);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// The batch's counts; the next batch starts at `end`.
    pub(crate) fn take_batch(&mut self, end: u64) -> UdpBatchStats {
        let mut out = std::mem::take(&mut self.stats);
        out.jitter_ns = self.jitter_ns;
        self.batch_start = end;
        self.next_seq = self.next_seq.max(end);
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn udp_thread(
    sock: &UdpSocket,
    acc: &Mutex<UdpAcc>,
    stop: &AtomicBool,
    peer: IpAddr,
    epoch: Instant,
    block: usize,
    mode: UdpMode,
    activity: &AtomicU64,
) {
    // One byte more than a datagram may hold, so a larger one shows as
    // truncated rather than silently cut.
    let mut buf = vec![0u8; block.max(proto::UDP_HEADER as usize) + 1];
    let mut n: u32 = 0;
    while !stop.load(Ordering::Relaxed) {
        let (len, from) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if proto::is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
            // ICMP errors from an earlier send (echo to a closed port) show
            // up here; they end nothing.
            Err(_) => continue,
        };
        // Only the test's own host counts (and is ever answered).
        if from.ip() != peer {
            continue;
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(256) {
            activity.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
        match mode {
            UdpMode::Echo => {
                let _ = sock.send_to(&buf[..len.min(block)], from);
            }
            UdpMode::Sink => {
                if len < proto::UDP_HEADER as usize || len > block {
                    continue;
                }
                let now = Instant::now();
                let arrival = now.duration_since(epoch).as_nanos() as u64;
                let seq = u64::from_be_bytes(buf[0..8].try_into().unwrap_or_default());
                let sent = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
                lock(acc).record(seq, len as u64, sent, arrival, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_maximal_sequence_number_does_not_overflow() {
        let mut a = UdpAcc::default();
        let t = Instant::now();
        a.record(u64::MAX, 100, 0, 10, t);
        a.record(u64::MAX, 100, 0, 20, t);
        a.record(3, 100, 0, 30, t);
        let b = a.take_batch(10);
        assert_eq!(b.received, 3);
        assert_eq!(b.out_of_order, 1);
    }

    #[test]
    fn udp_accounting_counts_loss_reordering_lateness_and_jitter() {
        let t = Instant::now();
        let mut a = UdpAcc::default();
        // Batch 1: seqs 0..5 sent; 2 is lost, 4 arrives before 3.
        for (seq, arrival) in [(0, 100), (1, 200), (4, 400), (3, 410)] {
            a.record(seq, 100, seq * 100, arrival, t);
        }
        let b = a.take_batch(5);
        assert_eq!(
            (b.received, b.bytes, b.out_of_order, b.late),
            (4, 400, 1, 0)
        );
        assert!(b.jitter_ns > 0.0);
        // Batch 2: a straggler from batch 1 arrives, then 5 and 6.
        a.record(2, 100, 200, 500, t);
        a.record(5, 100, 500, 600, t);
        a.record(6, 100, 600, 700, t);
        let b = a.take_batch(7);
        assert_eq!((b.received, b.out_of_order, b.late), (2, 0, 1));
        // Perfectly regular arrivals decay the jitter towards 0.
        let mut c = UdpAcc::default();
        for s in 0..200 {
            c.record(s, 1, s * 10, s * 10 + 5, t);
        }
        assert_eq!(c.take_batch(200).jitter_ns, 0.0);
    }
}
