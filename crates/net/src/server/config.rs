//! How a server is set up ([`ServerConfig`]: its address, token, limits
//! and pinning) and the checks and fitting of those limits: plain data
//! below the server that reads it.

use std::net::SocketAddr;
use std::time::Duration;

use crate::NetError;
use crate::proto::{DATA_IDLE, IO_TIMEOUT};

/// How `benchsuite serve` (or the in-process server) is set up. Its
/// `Debug` shows `<redacted>` in place of the token.
#[derive(Clone)]
pub struct ServerConfig {
    /// Address to listen on (`--bind`). The default is
    /// `127.0.0.1:5301`; any address other than loopback needs a token.
    pub bind: SocketAddr,
    /// The token clients must prove they know (challenge and response; it
    /// never travels). `None` accepts anyone, which is allowed only on
    /// loopback (`benchsuite serve --no-auth`).
    pub token: Option<String>,
    /// Log connections and refusals to stderr (`serve` does; the
    /// in-process server is quiet).
    pub log: bool,
    /// Threads of the accept/control runtime. The default is 2.
    pub control_threads: usize,
    /// Connections at once (control and data). The default is 512.
    pub max_connections: usize,
    /// Connections awaiting authentication (from the accept to the
    /// welcome or the attach) from one source address at once. The default
    /// is 64.
    pub max_per_address: usize,
    /// Data threads (TCP data connections plus UDP sockets) at once, over
    /// all tests. The default is 256.
    pub max_data_threads: usize,
    /// Deadline for a connection's first frame, for each frame once it has
    /// started, and for silence on a control connection without a test.
    /// The default is [`IO_TIMEOUT`] (10 s).
    pub io_timeout: Duration,
    /// Silence allowed on a data connection, and on a test (no control
    /// message and no data). The default is [`DATA_IDLE`] (60 s).
    pub data_idle: Duration,
    /// Pin every echo thread (the server's end of a TCP or UDP ping-pong)
    /// to this logical CPU; sinks and sources stay where the scheduler puts
    /// them. The default is `None`: not pinned. `net.latency --param
    /// cpus=same|different` sets it on its in-process server, so the echo
    /// thread's CPU is known; it must be one this process may run on.
    pub echo_cpu: Option<usize>,
    /// Pin every sink and source thread (the server's end of a throughput
    /// stream) to this logical CPU. The default is `None`: not pinned.
    /// `net.tcp_throughput --param cpus=split` sets it on its in-process
    /// server; it must be one this process may run on.
    pub stream_cpu: Option<usize>,
}

impl ServerConfig {
    /// A configuration with the defaults above.
    pub fn new(bind: SocketAddr, token: Option<String>) -> ServerConfig {
        ServerConfig {
            bind,
            token,
            log: false,
            control_threads: 2,
            max_connections: 512,
            max_per_address: 64,
            max_data_threads: 256,
            io_timeout: IO_TIMEOUT,
            data_idle: DATA_IDLE,
            echo_cpu: None,
            stream_cpu: None,
        }
    }

    /// Refuses a server that anyone on the network could use: a
    /// non-loopback address needs a token, and a token must have at least
    /// [`MIN_TOKEN_LEN`](crate::proto::MIN_TOKEN_LEN) characters.
    pub fn check(&self) -> Result<(), NetError> {
        if self.token.as_deref() == Some("") {
            return Err(NetError::Config(
                "the token is empty: give a non-empty token".into(),
            ));
        }
        if let Some(why) = self
            .token
            .as_deref()
            .and_then(crate::proto::token_too_short)
        {
            return Err(NetError::Config(why));
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() {
            return Err(NetError::Config(format!(
                "refusing to listen on {} without a token: any host that reaches it could use this machine's network; \
                 give one with BENCHSUITE_TOKEN or --token-file PATH (clients then use the same token), or bind 127.0.0.1",
                self.bind
            )));
        }
        if self.control_threads == 0
            || self.max_connections == 0
            || self.max_per_address == 0
            || self.max_data_threads == 0
            || self.io_timeout.is_zero()
            || self.data_idle.is_zero()
        {
            return Err(NetError::Config(
                "server limits and thread counts must be positive".into(),
            ));
        }
        for (cpu, what) in [(self.echo_cpu, "echo"), (self.stream_cpu, "stream")] {
            let Some(cpu) = cpu else { continue };
            let allowed = benchsuite_core::team::allowed_cpus();
            if !allowed.contains(&cpu) {
                return Err(NetError::Config(format!(
                    "cannot pin the server's {what} threads to CPU {cpu}: this process may run on CPUs {allowed:?}"
                )));
            }
        }
        Ok(())
    }
}

/// Descriptors a server keeps besides those its limits count: its
/// listener, its runtime's (epoll, event and signal descriptors), the
/// standard streams, the connection accepted past a full server before
/// it is closed, and headroom for the process it runs in.
pub const FD_RESERVE: u64 = 64;

impl ServerConfig {
    /// The open files this configuration's limits can take at worst: a
    /// descriptor per connection and per refusal being answered (each
    /// bounded by [`max_connections`](Self::max_connections)), two per
    /// data thread (a TCP data connection's socket and the handle that
    /// shuts it down; a UDP stream takes one), and [`FD_RESERVE`].
    pub fn open_files_needed(&self) -> u64 {
        let per = |n: usize| 2 * n as u64;
        per(self.max_connections)
            .saturating_add(per(self.max_data_threads))
            .saturating_add(FD_RESERVE)
    }

    /// Fits the limits to `limit` open files (the soft `RLIMIT_NOFILE`):
    /// where [`open_files_needed`](Self::open_files_needed) exceeds it,
    /// [`max_connections`](Self::max_connections),
    /// [`max_per_address`](Self::max_per_address) and
    /// [`max_data_threads`](Self::max_data_threads) are scaled down
    /// together, so the server refuses (`busy`) and evicts at its own
    /// limits instead of failing to accept at the system's, when legitimate
    /// clients could no longer connect. Returns a sentence saying what was
    /// cut, or `None` if the limits fit as they are; an error if `limit`
    /// leaves no room for a server at all.
    pub fn fit_open_files(&mut self, limit: u64) -> Result<Option<String>, NetError> {
        let need = self.open_files_needed();
        if need <= limit {
            return Ok(None);
        }
        const FLOOR: (usize, usize, usize) = (4, 1, 2);
        let floor = ServerConfig {
            max_connections: FLOOR.0,
            max_per_address: FLOOR.1,
            max_data_threads: FLOOR.2,
            ..self.clone()
        };
        if limit < floor.open_files_needed() {
            return Err(NetError::Config(format!(
                "this process may open only {limit} files (ulimit -n), too few for a server ({} at least); raise the limit",
                floor.open_files_needed()
            )));
        }
        let (room, want) = (limit - FD_RESERVE, need - FD_RESERVE);
        let scale = |n: usize, at_least: usize| {
            ((n as u128 * u128::from(room) / u128::from(want)) as usize).clamp(at_least, n)
        };
        let before = (
            self.max_connections,
            self.max_per_address,
            self.max_data_threads,
        );
        self.max_connections = scale(before.0, FLOOR.0);
        self.max_per_address = scale(before.1, FLOOR.1);
        self.max_data_threads = scale(before.2, FLOOR.2);
        Ok(Some(format!(
            "this process may open {limit} files (ulimit -n), fewer than the {need} its limits could take: \
             at most {} connections (not {}), {} awaiting authentication per address (not {}) and {} data streams (not {}); \
             raise the hard limit (LimitNOFILE=, `ulimit -Hn`) for the full limits",
            self.max_connections,
            before.0,
            self.max_per_address,
            before.1,
            self.max_data_threads,
            before.2
        )))
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field(
                "token",
                &self
                    .token
                    .as_ref()
                    .map(|_| benchsuite_core::bench::REDACTED),
            )
            .field("log", &self.log)
            .field("control_threads", &self.control_threads)
            .field("max_connections", &self.max_connections)
            .field("max_per_address", &self.max_per_address)
            .field("max_data_threads", &self.max_data_threads)
            .field("io_timeout", &self.io_timeout)
            .field("data_idle", &self.data_idle)
            .field("echo_cpu", &self.echo_cpu)
            .field("stream_cpu", &self.stream_cpu)
            .finish()
    }
}
