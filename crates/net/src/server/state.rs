//! The state the server's parts share, as data: `Shared` (the
//! configuration, the per-address gate, the session table, the connection
//! and data-thread counters) and one test's `Session` with its UDP
//! streams. They refer to each other (the table holds sessions, a session
//! holds the data-thread counter), so they sit together here, below the
//! code that acts on them: the accept loop and control conversation
//! (`control.rs`), a session's start and teardown (`session.rs`) and its
//! TCP and UDP data paths (`data.rs`, `udp.rs`).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, TcpStream as StdTcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::proto::TestSpec;

use super::config::ServerConfig;
use super::gate::Gate;
use super::udp_accounting::UdpAcc;

pub(super) struct Shared {
    pub(super) cfg: ServerConfig,
    pub(super) gate: Gate,
    pub(super) sessions: Mutex<HashMap<u64, Arc<Session>>>,
    pub(super) connections: AtomicUsize,
    /// Connections being refused (an answer written, the close lingering).
    pub(super) refusing: AtomicUsize,
    pub(super) data_threads: AtomicUsize,
    pub(super) epoch: Instant,
    pub(super) next_id: AtomicU64,
}

impl Shared {
    pub(super) fn log(&self, what: std::fmt::Arguments<'_>) {
        if self.cfg.log {
            eprintln!("benchsuite serve: {what}");
        }
    }

    /// Logs a refusal or a hostile client's failure, at most 20 lines a
    /// second (the count of the others goes with the next line).
    pub(super) fn log_refusal(&self, what: std::fmt::Arguments<'_>) {
        if !self.cfg.log {
            return;
        }
        match self.gate.may_log(Instant::now()) {
            Some(0) => eprintln!("benchsuite serve: {what}"),
            Some(n) => eprintln!(
                "benchsuite serve: {what} ({n} more refusals not logged, at most 20 lines a second)"
            ),
            None => {}
        }
    }

    /// A session id nobody can guess: 64 bits from the kernel's secure
    /// generator (or, should that fail, SipHash with the process's random
    /// keys over a counter and the clock).
    pub(super) fn new_session_id(&self) -> u64 {
        let mut b = [0u8; 8];
        if crate::sys::random_bytes(&mut b).is_ok() {
            return u64::from_ne_bytes(b);
        }
        let mut h = std::hash::RandomState::new().build_hasher();
        h.write_u64(self.next_id.fetch_add(1, Ordering::Relaxed));
        h.write_u128(self.epoch.elapsed().as_nanos());
        h.finish()
    }

    pub(super) fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

/// One test: its data threads and counters.
pub(super) struct Session {
    pub(super) id: u64,
    pub(super) spec: TestSpec,
    pub(super) peer_ip: IpAddr,
    pub(super) shared_epoch: Instant,
    /// Milliseconds since the server's epoch of the last data activity.
    pub(super) last_activity: Arc<AtomicU64>,
    pub(super) tcp_received: Arc<AtomicU64>,
    pub(super) tcp_sent: Arc<AtomicU64>,
    pub(super) stop: Arc<AtomicBool>,
    /// TCP data connections: a handle to shut the socket down, and the thread.
    pub(super) tcp: Mutex<Vec<(StdTcpStream, JoinHandle<()>)>>,
    /// TCP data connections attached or being attached (an attach that
    /// fails gives its place back).
    pub(super) tcp_attached: std::sync::atomic::AtomicU32,
    pub(super) udp: Vec<UdpStream>,
    pub(super) udp_ports: Vec<u16>,
    pub(super) data_threads: Arc<SharedCount>,
}

/// The server's data-thread counter, shared with the threads.
pub(super) struct SharedCount {
    pub(super) shared: Arc<Shared>,
}
impl SharedCount {
    pub(super) fn release(&self) {
        self.shared.data_threads.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One of a test's UDP sockets, its receive accounting and its thread
/// (started by `Session::add_udp`, in `udp.rs`).
pub(super) struct UdpStream {
    pub(super) sock: Arc<UdpSocket>,
    pub(super) acc: Arc<Mutex<UdpAcc>>,
    pub(super) thread: Mutex<Option<JoinHandle<()>>>,
}
