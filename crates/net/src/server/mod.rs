//! The server: `benchsuite serve`, and the in-process one a client starts on
//! loopback when no `--peer` is given.
//!
//! Accept and control run on a small tokio runtime (a handful of control
//! connections cost nothing while idle). The data path does not: each data
//! connection and each UDP socket gets a dedicated thread doing plain
//! blocking `read`/`write`/`recv` on a std socket — one system call per
//! block and no executor in between, which is what iperf3 and sockperf do
//! and what measures fastest (an async reader adds an epoll round and a
//! task wake-up per block).
//!
//! # Limits (what a hostile or broken client can cost)
//!
//! - the limits below are the defaults; where this process's soft limit of
//!   open files could not hold what they can take
//!   ([`ServerConfig::open_files_needed`]: 1600 descriptors), they are
//!   scaled down together to fit ([`ServerConfig::fit_open_files`]), and
//!   [`serve`] first raises the soft limit to the hard one;
//! - at most [`ServerConfig::max_connections`] connections at once (512);
//!   at the limit a new connection evicts the oldest one still awaiting
//!   authentication, or, if every connection is authenticated, is
//!   answered `busy` and closed; connections being refused (answered, then
//!   closed within about a second) are bounded by the same number
//!   separately, and past it closed without an answer, so a flood of
//!   refusals takes no real connection's slot;
//! - at most [`ServerConfig::max_per_address`] connections awaiting
//!   authentication (from the accept to the welcome or the attach) per
//!   source address (64); more are answered `busy` at once;
//! - after a failed authentication — a wrong MAC, or a data connection's
//!   attach naming a test that does not exist or is another host's (the
//!   session id is a data connection's credential) — connections from
//!   that address are refused (`auth`, with the time to wait) before
//!   anything is read, for 100 ms doubling with each consecutive failure
//!   up to 30 s, cleared by a success (the table is bounded, 4096
//!   entries: when it is full, the oldest entries are widened to their
//!   /24 or /16 — IPv6 /48 or /32 — rather than forgotten, so no back-off
//!   is cut short); an attach, like a hello, awaits authentication until
//!   its test is found, so it counts against its address's cap and may be
//!   evicted;
//! - the whole handshake (hello, challenge, auth) must complete within
//!   [`IO_TIMEOUT`] of the accept, every later frame within [`IO_TIMEOUT`]
//!   of its first byte; frames are at most
//!   [`proto::MAX_FRAME`](crate::proto::MAX_FRAME) bytes,
//!   [`proto::MAX_HANDSHAKE_FRAME`](crate::proto::MAX_HANDSHAKE_FRAME)
//!   before authentication, and a frame's buffer grows only as its bytes
//!   arrive;
//! - a control connection without a test is closed after [`IO_TIMEOUT`] of
//!   silence; one with a test after [`DATA_IDLE`] without a control message
//!   or data activity; data sockets time out after [`DATA_IDLE`] too;
//! - one test at a time per control connection, at most
//!   [`proto::MAX_STREAMS`](crate::proto::MAX_STREAMS) streams per test and
//!   [`ServerConfig::max_data_threads`] (256) data threads in all;
//! - UDP echo answers only the control connection's address, and UDP
//!   sinks count only its datagrams;
//! - what the server logs about a client (its software string, bytes it
//!   sent instead of the magic) is escaped and cut to 64 characters, and
//!   refusals are logged at most 20 lines a second.
//!
//! [`IO_TIMEOUT`]: crate::proto::IO_TIMEOUT
//! [`DATA_IDLE`]: crate::proto::DATA_IDLE
//!
//! # Where the code is
//!
//! This file is the public face (what `lib.rs`, the client and
//! `benchsuite serve` use: [`ServerConfig`], [`Server`], [`serve`]). Below
//! it, as data that the rest acts on:
//!
//! - `config`: [`ServerConfig`], its checks and the fitting of its limits
//!   to the open-file limit;
//! - `state`: the state every part shares (`Shared`: the configuration,
//!   the gate, the session table, the connection and data-thread
//!   counters) and one test's `Session` with its UDP streams;
//! - `guard`: `lock` and `CountGuard`; `refuse`: the error answer and the
//!   gentle close that follows it; `udp_accounting`: a UDP stream's
//!   per-batch receive counts (loss, reordering, lateness, jitter).
//!
//! The behaviour is split along the server's own seams, which are also
//! its thread boundaries:
//!
//! - `control`: the async side — the accept loop, a connection's
//!   handshake (hello, version check, challenge and response), the control
//!   conversation;
//! - `gate`: the per-address policy applied at accept — back-off after
//!   failed authentications, the cap on connections awaiting
//!   authentication and the eviction of the oldest one, log rate limits;
//! - `session`: one test (`Session`): its start, its data-thread budget
//!   and the teardown that joins every thread;
//! - `data`: the blocking TCP data path — attaching a data connection to
//!   its test and the sink, source and echo loops on a dedicated thread;
//! - `udp`: the blocking UDP side — a test's UDP sockets and the threads
//!   that feed their accounting, and the drain behind a `udp_batch`
//!   answer.

mod config;
mod control;
mod data;
mod gate;
mod guard;
mod refuse;
mod session;
mod state;
mod udp;
mod udp_accounting;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::NetError;

use control::accept_loop;
use gate::Gate;
use guard::lock;
use state::{Session, Shared};

pub use config::{FD_RESERVE, ServerConfig};
pub use gate::{BACKOFF_FIRST, BACKOFF_MAX, BACKOFF_TABLE};

/// A running server. [`Server::shutdown`] (or drop) stops it and joins
/// every thread it started.
pub struct Server {
    runtime: Option<Runtime>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
    /// What [`ServerConfig::fit_open_files`] cut, if anything.
    fit_note: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Checks the configuration, fits its limits to this process's soft
    /// limit of open files ([`ServerConfig::fit_open_files`]; it does not
    /// raise it, [`serve`] does), binds, and starts accepting.
    pub fn start(mut cfg: ServerConfig) -> Result<Server, NetError> {
        cfg.check()?;
        let fit_note = match crate::sys::open_file_limit() {
            Some((Some(soft), _)) => cfg.fit_open_files(soft)?,
            _ => None,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.control_threads)
            .thread_name("benchsuite-net-ctl")
            // Joining a test's threads runs on the blocking pool; don't
            // keep those helpers around for tokio's default 10 s.
            .thread_keep_alive(Duration::from_millis(500))
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| NetError::io("starting the server's runtime", e))?;
        let bind = cfg.bind;
        let listener = runtime
            .block_on(TcpListener::bind(bind))
            .map_err(|e| NetError::io(format!("cannot listen on {bind}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| NetError::io("getsockname", e))?;
        let (stop, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            gate: Gate::new(cfg.max_per_address),
            cfg,
            sessions: Mutex::new(HashMap::new()),
            connections: AtomicUsize::new(0),
            refusing: AtomicUsize::new(0),
            data_threads: AtomicUsize::new(0),
            epoch: Instant::now(),
            next_id: AtomicU64::new(1),
        });
        let accept = runtime.spawn(accept_loop(shared.clone(), listener, stop_rx));
        Ok(Server {
            runtime: Some(runtime),
            addr,
            stop,
            accept: Some(accept),
            shared,
            fit_note,
        })
    }

    /// The address it listens on (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Tests running now.
    pub fn active_tests(&self) -> usize {
        lock(&self.shared.sessions).len()
    }

    /// Connections open now (control connections, handshakes, refusals
    /// being answered; attached data connections are counted as data
    /// threads).
    pub fn open_connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst) + self.shared.refusing.load(Ordering::SeqCst)
    }

    /// Data threads running now.
    pub fn data_threads(&self) -> usize {
        self.shared.data_threads.load(Ordering::SeqCst)
    }

    /// Connections awaiting authentication now.
    pub fn pending_connections(&self) -> usize {
        self.shared.gate.pending()
    }

    /// Source addresses in the back-off table now (failed to authenticate
    /// recently).
    pub fn backoff_entries(&self) -> usize {
        self.shared.gate.backoff_entries()
    }

    /// Runs until SIGINT (Ctrl-C), SIGTERM or SIGHUP, then shuts down.
    pub fn run_until_signal(self) -> Result<(), NetError> {
        self.run_until_signal_after(|_| {})
    }

    /// [`Server::run_until_signal`], calling `ready` once the signals are
    /// caught: a signal before that would end the process without its
    /// shutdown, so whoever waits for the server to say it listens can
    /// signal it as soon as it does.
    pub fn run_until_signal_after(mut self, ready: impl FnOnce(&Server)) -> Result<(), NetError> {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| NetError::Config("the server is already shut down".into()))?;
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let _in_runtime = rt.enter();
            let mut caught = Vec::new();
            for (kind, name) in [
                (SignalKind::interrupt(), "SIGINT"),
                (SignalKind::terminate(), "SIGTERM"),
                (SignalKind::hangup(), "SIGHUP"),
            ] {
                caught.push(
                    signal(kind)
                        .map_err(|e| NetError::io(format!("installing the {name} handler"), e))?,
                );
            }
            let [mut int, mut term, mut hup] = <[_; 3]>::try_from(caught).expect("three");
            drop(_in_runtime);
            ready(&self);
            rt.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            });
        }
        #[cfg(not(unix))]
        {
            ready(&self);
            rt.block_on(tokio::signal::ctrl_c())
                .map_err(|e| NetError::io("waiting for Ctrl-C", e))?;
        }
        self.stop_and_join();
        Ok(())
    }

    /// Stops accepting, ends every test (closing its sockets) and joins
    /// every thread the server started.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        let _ = self.stop.send(true);
        if let Some(accept) = self.accept.take() {
            // The accept loop returns once every connection task has ended
            // its test and joined that test's threads.
            let _ = rt.block_on(accept);
        }
        // Safety net: end any test whose task did not (cannot normally happen).
        let left: Vec<Arc<Session>> = lock(&self.shared.sessions)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for s in left {
            s.finish_blocking();
        }
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts a server and runs it until SIGINT, SIGTERM or SIGHUP: what
/// `benchsuite serve` does. First it raises this process's soft limit of
/// open files to the hard one (the default soft limit, often 1024, is
/// below what the default limits can take), so only a low hard limit cuts
/// the server's limits (logged). `on_listening` is told the bound address
/// once the server accepts connections.
pub fn serve(cfg: ServerConfig, on_listening: impl FnOnce(SocketAddr)) -> Result<(), NetError> {
    crate::sys::raise_open_file_limit();
    let server = Server::start(cfg)?;
    server.run_until_signal_after(|server| {
        on_listening(server.local_addr());
        if let Some(note) = &server.fit_note {
            server.shared.log(format_args!("note: {note}"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_bind_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:5301".parse().unwrap();
        let e = ServerConfig::new(public, None)
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("without a token")
                && e.contains("0.0.0.0:5301")
                && e.contains("BENCHSUITE_TOKEN"),
            "{e}"
        );
        assert!(
            ServerConfig::new(public, Some("a-token-of-16-ch".into()))
                .check()
                .is_ok()
        );
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(ServerConfig::new(lo, None).check().is_ok());
        let v6: SocketAddr = "[::1]:0".parse().unwrap();
        assert!(ServerConfig::new(v6, None).check().is_ok());
        let e = ServerConfig::new(lo, Some(String::new()))
            .check()
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty"), "{e}");
        let mut c = ServerConfig::new(lo, None);
        c.max_per_address = 0;
        assert!(c.check().is_err());
    }

    #[test]
    fn a_token_shorter_than_16_characters_is_refused() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let e = ServerConfig::new(lo, Some("fifteen-chars-x".into()))
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("15 characters") && e.contains("at least 16") && e.contains("offline"),
            "{e}"
        );
        // Characters, not bytes.
        let e = ServerConfig::new(lo, Some("ééééééééééééééé".into()))
            .check()
            .unwrap_err()
            .to_string();
        assert!(e.contains("15 characters"), "{e}");
        assert!(
            ServerConfig::new(lo, Some("sixteen-chars-xx".into()))
                .check()
                .is_ok()
        );
    }

    #[test]
    fn the_limits_fit_the_open_files_allowed() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut c = ServerConfig::new(lo, None);
        // 512 connections and 512 refusals, 2 descriptors × 256 data
        // threads, and the reserve.
        assert_eq!(c.open_files_needed(), 1600);
        assert!(c.fit_open_files(1600).unwrap().is_none());
        assert_eq!(c.max_connections, 512);
        for limit in [1024u64, 256, 80] {
            let mut c = ServerConfig::new(lo, None);
            let note = c.fit_open_files(limit).unwrap().unwrap();
            assert!(c.open_files_needed() <= limit, "{limit}: {c:?}");
            assert!(
                note.contains(&format!("may open {limit} files"))
                    && note.contains("(not 512)")
                    && note.contains("ulimit"),
                "{note}"
            );
            assert!(c.max_connections >= 4 && c.max_per_address >= 1 && c.max_data_threads >= 2);
        }
        let mut c = ServerConfig::new(lo, None);
        c.fit_open_files(256).unwrap();
        assert_eq!(
            (c.max_connections, c.max_per_address, c.max_data_threads),
            (64, 8, 32)
        );
        let e = ServerConfig::new(lo, None)
            .fit_open_files(50)
            .unwrap_err()
            .to_string();
        assert!(e.contains("only 50 files"), "{e}");
    }

    #[test]
    fn debug_never_shows_the_token() {
        let c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), Some("hunter2-x".into()));
        let d = format!("{c:?} {c:#?}");
        assert!(!d.contains("hunter2"), "{d}");
        assert!(
            d.contains("<redacted>") && d.contains("max_per_address"),
            "{d}"
        );
        let n = format!(
            "{:?}",
            ServerConfig::new("127.0.0.1:0".parse().unwrap(), None)
        );
        assert!(n.contains("token: None"), "{n}");
    }
}
