//! The server's UDP side: a test's UDP sockets, each with a blocking
//! receive thread (sink or echo) that feeds the per-batch receive
//! accounting (`UdpAcc`, in [`super::udp_accounting`]: loss, reordering,
//! lateness, RFC 3550 jitter), and the drain that answers a `udp_batch`
//! once every stream's batch is in. The thread that feeds the accounting
//! and the drain that reads it sit together: they share one lock and one
//! notion of a batch.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::proto::{self, UdpBatchStats, UdpMode};

use super::guard::lock;
use super::session::pin_data_thread;
use super::state::{Session, Shared, UdpStream};
use super::udp_accounting::UdpAcc;

/// How often a UDP thread wakes to check whether its test ended.
const UDP_POLL: Duration = Duration::from_millis(50);

/// After a `UdpBatch` request: a stream whose last datagram has not arrived
/// is considered drained when nothing arrived on it for this long.
const UDP_QUIET: Duration = Duration::from_millis(2);

/// The longest a `UdpBatch` answer waits for stragglers.
const UDP_DRAIN_MAX: Duration = Duration::from_secs(1);

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
