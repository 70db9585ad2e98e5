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
//! - at most [`ServerConfig::max_connections`] connections at once (512);
//!   more are answered `busy` and closed;
//! - the first frame must arrive within [`IO_TIMEOUT`] of the connection,
//!   every frame within [`IO_TIMEOUT`] of its first byte, frames are at most
//!   [`proto::MAX_FRAME`] bytes;
//! - a control connection without a test is closed after [`IO_TIMEOUT`] of
//!   silence; one with a test after [`DATA_IDLE`] without a control message
//!   or data activity; data sockets time out after [`DATA_IDLE`] too;
//! - one test at a time per control connection, at most
//!   [`proto::MAX_STREAMS`] streams per test and
//!   [`ServerConfig::max_data_threads`] (256) data threads in all;
//! - UDP echo answers only the control connection's address.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream as StdTcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::NetError;
use crate::proto::{
    self, DATA_IDLE, ErrorCode, IO_TIMEOUT, MAGIC, MAX_STREAMS, Message, PROTOCOL_VERSION, Role,
    TestSpec, UNBOUNDED, UdpBatchStats, UdpMode,
};

/// How often a UDP thread wakes to check whether its test ended.
const UDP_POLL: Duration = Duration::from_millis(50);

/// After a `UdpBatch` request: a stream whose last datagram has not arrived
/// is considered drained when nothing arrived on it for this long.
const UDP_QUIET: Duration = Duration::from_millis(2);

/// The longest a `UdpBatch` answer waits for stragglers.
const UDP_DRAIN_MAX: Duration = Duration::from_secs(1);

/// How `benchsuite serve` (or the in-process server) is set up.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (`--bind`). The default is
    /// `127.0.0.1:5301`; any address other than loopback needs a token.
    pub bind: SocketAddr,
    /// The token clients must present (`--token`); `None` accepts anyone,
    /// which is allowed only on loopback.
    pub token: Option<String>,
    /// Log connections and refusals to stderr (`serve` does; the
    /// in-process server is quiet).
    pub log: bool,
    /// Threads of the accept/control runtime. The default is 2.
    pub control_threads: usize,
    /// Connections at once (control and data). The default is 512.
    pub max_connections: usize,
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
            max_data_threads: 256,
            io_timeout: IO_TIMEOUT,
            data_idle: DATA_IDLE,
            echo_cpu: None,
        }
    }

    /// Refuses a server that anyone on the network could use: a
    /// non-loopback address needs a token, and a token must not be empty.
    pub fn check(&self) -> Result<(), NetError> {
        if self.token.as_deref() == Some("") {
            return Err(NetError::Config(
                "--token is empty: give a non-empty token".into(),
            ));
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() {
            return Err(NetError::Config(format!(
                "refusing to listen on {} without --token: any host that reaches it could use this machine's network; \
                 give --token T (clients then pass --token T) or bind 127.0.0.1",
                self.bind
            )));
        }
        if self.control_threads == 0
            || self.max_connections == 0
            || self.max_data_threads == 0
            || self.io_timeout.is_zero()
            || self.data_idle.is_zero()
        {
            return Err(NetError::Config(
                "server limits and thread counts must be positive".into(),
            ));
        }
        if let Some(cpu) = self.echo_cpu {
            let allowed = benchsuite_core::team::allowed_cpus();
            if !allowed.contains(&cpu) {
                return Err(NetError::Config(format!(
                    "cannot pin the server's echo threads to CPU {cpu}: this process may run on CPUs {allowed:?}"
                )));
            }
        }
        Ok(())
    }
}

/// A running server. [`Server::shutdown`] (or drop) stops it and joins
/// every thread it started.
pub struct Server {
    runtime: Option<Runtime>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Checks the configuration, binds, and starts accepting.
    pub fn start(cfg: ServerConfig) -> Result<Server, NetError> {
        cfg.check()?;
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
            cfg,
            sessions: Mutex::new(HashMap::new()),
            connections: AtomicUsize::new(0),
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

    /// Connections open now (control and data handshakes; attached data
    /// connections are counted as data threads).
    pub fn open_connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Data threads running now.
    pub fn data_threads(&self) -> usize {
        self.shared.data_threads.load(Ordering::SeqCst)
    }

    /// Runs until SIGINT (Ctrl-C) or SIGTERM, then shuts down.
    pub fn run_until_signal(mut self) -> Result<(), NetError> {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| NetError::Config("the server is already shut down".into()))?;
        rt.block_on(async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                let mut term = signal(SignalKind::terminate())
                    .map_err(|e| NetError::io("installing the SIGTERM handler", e))?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r.map_err(|e| NetError::io("waiting for Ctrl-C", e)),
                    _ = term.recv() => Ok(()),
                }
            }
            #[cfg(not(unix))]
            {
                tokio::signal::ctrl_c()
                    .await
                    .map_err(|e| NetError::io("waiting for Ctrl-C", e))
            }
        })?;
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

/// Starts a server and runs it until SIGINT or SIGTERM: what
/// `benchsuite serve` does. `on_listening` is told the bound address once
/// the server accepts connections.
pub fn serve(cfg: ServerConfig, on_listening: impl FnOnce(SocketAddr)) -> Result<(), NetError> {
    let server = Server::start(cfg)?;
    on_listening(server.local_addr());
    server.run_until_signal()
}

struct Shared {
    cfg: ServerConfig,
    sessions: Mutex<HashMap<u64, Arc<Session>>>,
    connections: AtomicUsize,
    data_threads: AtomicUsize,
    epoch: Instant,
    next_id: AtomicU64,
}

impl Shared {
    fn log(&self, what: std::fmt::Arguments<'_>) {
        if self.cfg.log {
            eprintln!("benchsuite serve: {what}");
        }
    }

    /// A session id nobody can guess: SipHash with the process's random
    /// keys over a counter and the clock.
    fn new_session_id(&self) -> u64 {
        let mut h = std::hash::RandomState::new().build_hasher();
        h.write_u64(self.next_id.fetch_add(1, Ordering::Relaxed));
        h.write_u128(self.epoch.elapsed().as_nanos());
        h.finish()
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Decrements a counter when dropped.
struct CountGuard<'a>(&'a AtomicUsize);
impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let mut tasks = JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            _ = stop.changed() => break,
            r = listener.accept() => match r {
                Ok((sock, peer)) => {
                    let n = shared.connections.fetch_add(1, Ordering::SeqCst);
                    let sh = shared.clone();
                    let st = stop.clone();
                    if n >= shared.cfg.max_connections {
                        shared.log(format_args!("{peer}: refused, {n} connections open already"));
                        tasks.spawn(async move {
                            let _g = CountGuard(&sh.connections);
                            refuse(sock, ErrorCode::Busy, "the server has too many connections open; try again later").await;
                        });
                    } else {
                        tasks.spawn(async move {
                            let _g = CountGuard(&sh.connections);
                            connection(&sh, sock, peer, st).await;
                        });
                    }
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    shared.log(format_args!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

async fn send(sock: &mut TcpStream, msg: &Message) -> io::Result<()> {
    let frame = proto::encode(msg);
    tokio::time::timeout(IO_TIMEOUT, sock.write_all(&frame))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "write timed out"))?
}

fn error(code: ErrorCode, message: impl Into<String>) -> Message {
    Message::Error {
        code,
        message: message.into(),
        version: PROTOCOL_VERSION,
    }
}

/// Answers with our magic and an error, best effort, and closes.
async fn refuse(mut sock: TcpStream, code: ErrorCode, message: &str) {
    let mut frame = MAGIC.to_vec();
    frame.extend(proto::encode(&error(code, message)));
    let _ = tokio::time::timeout(Duration::from_secs(1), sock.write_all(&frame)).await;
}

/// The first frame of a connection, read exactly (nothing beyond it is
/// consumed: a data connection's bytes follow) within `deadline`.
async fn first_frame(
    sock: &mut TcpStream,
    shared_timeout: Duration,
) -> Result<Result<Message, (String, Option<u64>)>, String> {
    let deadline = tokio::time::Instant::now() + shared_timeout;
    let mut magic = [0u8; 4];
    let read = async {
        sock.read_exact(&mut magic).await?;
        if magic != MAGIC {
            return Ok(None);
        }
        let mut head = [0u8; 4];
        sock.read_exact(&mut head).await?;
        let len = u32::from_be_bytes(head) as usize;
        if len > proto::MAX_FRAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a frame of {len} bytes is above the limit of {}",
                    proto::MAX_FRAME
                ),
            ));
        }
        let mut body = vec![0u8; len];
        sock.read_exact(&mut body).await?;
        Ok(Some(body))
    };
    match tokio::time::timeout_at(deadline, read).await {
        Err(_) => Err(format!(
            "no hello within {:.1} s; closed",
            shared_timeout.as_secs_f64()
        )),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(None)) => Err(format!(
            "not a benchsuite client (it sent {}); closed",
            proto::describe_bytes(&magic)
        )),
        Ok(Ok(Some(body))) => {
            Ok(proto::decode_body(&body).map_err(|e| (e.to_string(), proto::version_of(&body))))
        }
    }
}

async fn connection(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    stop: watch::Receiver<bool>,
) {
    let first = match first_frame(&mut sock, shared.cfg.io_timeout).await {
        Ok(m) => m,
        Err(why) => {
            shared.log(format_args!("{peer}: {why}"));
            return;
        }
    };
    match first {
        Ok(Message::Hello {
            version,
            token,
            software,
        }) => {
            if version != PROTOCOL_VERSION {
                let msg = format!(
                    "the client speaks benchsuite-net protocol version {version}, this server speaks version {PROTOCOL_VERSION}"
                );
                shared.log(format_args!("{peer} ({software}): refused: {msg}"));
                refuse(sock, ErrorCode::Version, &msg).await;
                return;
            }
            if let Some(expected) = &shared.cfg.token {
                let ok = token
                    .as_deref()
                    .is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes()));
                if !ok {
                    let msg = if token.is_none() {
                        "this server requires a token: pass it with --token"
                    } else {
                        "wrong token"
                    };
                    shared.log(format_args!("{peer} ({software}): refused: {msg}"));
                    refuse(sock, ErrorCode::Auth, msg).await;
                    return;
                }
            }
            control(shared, sock, peer, stop).await;
        }
        Ok(Message::Attach { session, role }) => attach(shared, sock, peer, session, role).await,
        Ok(other) => {
            shared.log(format_args!(
                "{peer}: refused: the first message must be a hello, not {}",
                kind(&other)
            ));
            refuse(
                sock,
                ErrorCode::BadRequest,
                "the first message must be a hello",
            )
            .await;
        }
        Err((why, Some(v))) if v != u64::from(PROTOCOL_VERSION) => {
            let msg = format!(
                "the client speaks benchsuite-net protocol version {v}, this server speaks version {PROTOCOL_VERSION}"
            );
            shared.log(format_args!("{peer}: refused: {msg} ({why})"));
            refuse(sock, ErrorCode::Version, &msg).await;
        }
        Err((why, _)) => {
            shared.log(format_args!("{peer}: refused: {why}"));
            refuse(sock, ErrorCode::BadRequest, &why).await;
        }
    }
}

/// The name of a message's type, for logs.
fn kind(m: &Message) -> &'static str {
    match m {
        Message::Hello { .. } => "hello",
        Message::Welcome { .. } => "welcome",
        Message::Error { .. } => "error",
        Message::Start { .. } => "start",
        Message::Ready { .. } => "ready",
        Message::Attach { .. } => "attach",
        Message::Attached => "attached",
        Message::UdpBatch { .. } => "udp_batch",
        Message::UdpStats { .. } => "udp_stats",
        Message::Stop => "stop",
        Message::Stopped { .. } => "stopped",
        Message::Bye => "bye",
    }
}

/// Compares without an early exit, so the time taken does not tell how
/// many leading bytes of a guessed token were right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// Reads frames from a control connection into a buffer; reading more is
/// cancel-safe, so it can sit in `select!` with timeouts.
struct FrameReader {
    buf: Vec<u8>,
    /// When the first byte of the frame being read arrived.
    started: Option<tokio::time::Instant>,
}

impl FrameReader {
    fn take(&mut self) -> Result<Option<Message>, proto::FrameError> {
        match proto::decode(&self.buf)? {
            Some((m, used)) => {
                self.buf.drain(..used);
                self.started = (!self.buf.is_empty()).then(tokio::time::Instant::now);
                Ok(Some(m))
            }
            None => Ok(None),
        }
    }
}

enum Next {
    Msg(Message),
    Closed,
    Stop,
    Fail(String),
}

async fn next_message(
    shared: &Shared,
    sock: &mut TcpStream,
    reader: &mut FrameReader,
    session: Option<&Arc<Session>>,
    stop: &mut watch::Receiver<bool>,
) -> Next {
    let mut last_control = tokio::time::Instant::now();
    loop {
        match reader.take() {
            Ok(Some(m)) => return Next::Msg(m),
            Ok(None) => {}
            Err(e) => return Next::Fail(e.to_string()),
        }
        // The deadline: a started frame must finish within IO_TIMEOUT; an
        // idle connection without a test may wait IO_TIMEOUT; with a test,
        // DATA_IDLE after the last sign of life of control or data.
        let now = tokio::time::Instant::now();
        let (io, idle) = (shared.cfg.io_timeout, shared.cfg.data_idle);
        let deadline = match (reader.started, session) {
            (Some(t), _) => t + io,
            (None, None) => last_control + io,
            (None, Some(s)) => {
                let idle_ms = shared
                    .now_ms()
                    .saturating_sub(s.last_activity.load(Ordering::Relaxed));
                let data_alive = now
                    .checked_sub(Duration::from_millis(idle_ms))
                    .unwrap_or(now);
                last_control.max(data_alive) + idle
            }
        };
        if now >= deadline {
            return Next::Fail(if reader.started.is_some() {
                format!(
                    "a frame did not arrive whole within {:.1} s",
                    io.as_secs_f64()
                )
            } else if session.is_some() {
                format!("no message and no data for {:.1} s", idle.as_secs_f64())
            } else {
                format!("idle for {:.1} s", io.as_secs_f64())
            });
        }
        let mut chunk = [0u8; 4096];
        tokio::select! {
            _ = stop.changed() => return Next::Stop,
            _ = tokio::time::sleep_until(deadline) => {}
            r = sock.read(&mut chunk) => match r {
                Ok(0) => return Next::Closed,
                Ok(n) => {
                    if reader.buf.is_empty() {
                        reader.started = Some(tokio::time::Instant::now());
                    }
                    reader.buf.extend_from_slice(&chunk[..n]);
                    last_control = tokio::time::Instant::now();
                }
                Err(e) => return Next::Fail(e.to_string()),
            },
        }
    }
}

async fn control(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    let mut welcome = MAGIC.to_vec();
    welcome.extend(proto::encode(&Message::Welcome {
        version: PROTOCOL_VERSION,
        software: software(),
        max_streams: MAX_STREAMS,
    }));
    if tokio::time::timeout(IO_TIMEOUT, sock.write_all(&welcome))
        .await
        .is_err()
    {
        return;
    }
    let _ = sock.set_nodelay(true);
    let mut reader = FrameReader {
        buf: Vec::new(),
        started: None,
    };
    let mut session: Option<Arc<Session>> = None;
    let outcome = loop {
        let msg =
            match next_message(shared, &mut sock, &mut reader, session.as_ref(), &mut stop).await {
                Next::Msg(m) => m,
                Next::Closed => break None,
                Next::Stop => break Some("the server is shutting down".to_string()),
                Next::Fail(why) => break Some(why),
            };
        let reply = match msg {
            Message::Start { spec } => {
                if session.is_some() {
                    error(
                        ErrorCode::BadRequest,
                        "one test at a time: send stop before the next start",
                    )
                } else if let Err(why) = spec.check() {
                    error(ErrorCode::Limit, why)
                } else {
                    // UDP sockets go on the address the client reached us
                    // at (with --bind 0.0.0.0, the one its packets use).
                    let local = sock
                        .local_addr()
                        .map(|a| a.ip())
                        .unwrap_or(shared.cfg.bind.ip());
                    match Session::start(shared, spec, peer.ip(), local) {
                        Ok(s) => {
                            let reply = Message::Ready {
                                session: s.id,
                                udp_ports: s.udp_ports.clone(),
                            };
                            lock(&shared.sessions).insert(s.id, s.clone());
                            session = Some(s);
                            reply
                        }
                        Err((code, why)) => error(code, why),
                    }
                }
            }
            Message::UdpBatch { end_seq } => match &session {
                Some(s) if s.spec.udp_mode == UdpMode::Sink && end_seq.len() == s.udp.len() => {
                    Message::UdpStats {
                        streams: s.udp_batch(&end_seq).await,
                    }
                }
                Some(_) => error(
                    ErrorCode::BadRequest,
                    "udp_batch: this test has no such UDP sink streams",
                ),
                None => error(ErrorCode::BadRequest, "udp_batch before start"),
            },
            Message::Stop => match session.take() {
                Some(s) => {
                    lock(&shared.sessions).remove(&s.id);
                    let s2 = s.clone();
                    let _ = tokio::task::spawn_blocking(move || s2.finish_blocking()).await;
                    Message::Stopped {
                        tcp_received: s.tcp_received.load(Ordering::SeqCst),
                        tcp_sent: s.tcp_sent.load(Ordering::SeqCst),
                    }
                }
                None => error(ErrorCode::BadRequest, "stop without a test"),
            },
            Message::Bye => break None,
            other => {
                let why = format!("unexpected {} on a control connection", kind(&other));
                let _ = send(&mut sock, &error(ErrorCode::BadRequest, why.clone())).await;
                break Some(why);
            }
        };
        if let Err(e) = send(&mut sock, &reply).await {
            break Some(format!("write failed: {e}"));
        }
    };
    if let Some(why) = outcome {
        shared.log(format_args!("{peer}: control connection closed: {why}"));
    }
    if let Some(s) = session.take() {
        lock(&shared.sessions).remove(&s.id);
        let _ = tokio::task::spawn_blocking(move || s.finish_blocking()).await;
    }
}

fn software() -> String {
    format!("benchsuite {}", env!("CARGO_PKG_VERSION"))
}

/// One test: its data threads and counters.
struct Session {
    id: u64,
    spec: TestSpec,
    peer_ip: IpAddr,
    shared_epoch: Instant,
    /// Milliseconds since the server's epoch of the last data activity.
    last_activity: Arc<AtomicU64>,
    tcp_received: Arc<AtomicU64>,
    tcp_sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// TCP data connections: a handle to shut the socket down, and the thread.
    tcp: Mutex<Vec<(StdTcpStream, JoinHandle<()>)>>,
    /// TCP data connections attached or being attached (never decreases).
    tcp_attached: std::sync::atomic::AtomicU32,
    udp: Vec<UdpStream>,
    udp_ports: Vec<u16>,
    data_threads: Arc<SharedCount>,
}

/// The server's data-thread counter, shared with the threads.
struct SharedCount {
    shared: Arc<Shared>,
}
impl SharedCount {
    fn release(&self) {
        self.shared.data_threads.fetch_sub(1, Ordering::SeqCst);
    }
}

struct UdpStream {
    sock: Arc<UdpSocket>,
    acc: Arc<Mutex<UdpAcc>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Session {
    fn start(
        shared: &Arc<Shared>,
        spec: TestSpec,
        peer_ip: IpAddr,
        local_ip: IpAddr,
    ) -> Result<Arc<Session>, (ErrorCode, String)> {
        let mut s = Session {
            id: shared.new_session_id(),
            spec,
            peer_ip,
            shared_epoch: shared.epoch,
            last_activity: Arc::new(AtomicU64::new(shared.now_ms())),
            tcp_received: Arc::new(AtomicU64::new(0)),
            tcp_sent: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            tcp: Mutex::new(Vec::new()),
            tcp_attached: std::sync::atomic::AtomicU32::new(0),
            udp: Vec::new(),
            udp_ports: Vec::new(),
            data_threads: Arc::new(SharedCount {
                shared: shared.clone(),
            }),
        };
        for i in 0..s.spec.udp_streams {
            if let Err(e) = s.add_udp(shared, local_ip) {
                s.finish_blocking();
                return Err((ErrorCode::Internal, format!("UDP stream {i}: {e}")));
            }
        }
        Ok(Arc::new(s))
    }

    fn reserve_thread(shared: &Shared) -> Result<(), String> {
        let n = shared.data_threads.fetch_add(1, Ordering::SeqCst);
        if n >= shared.cfg.max_data_threads {
            shared.data_threads.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "the server runs {n} data streams already, its limit is {}",
                shared.cfg.max_data_threads
            ));
        }
        Ok(())
    }

    fn add_udp(&mut self, shared: &Shared, ip: IpAddr) -> Result<(), String> {
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
    async fn udp_batch(&self, end_seq: &[u64]) -> Vec<UdpBatchStats> {
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

    fn touch(&self) {
        self.last_activity.store(
            self.shared_epoch.elapsed().as_millis() as u64,
            Ordering::Relaxed,
        );
    }

    /// Stops every data thread (shutting its socket down so blocked reads
    /// return) and joins it. Idempotent.
    fn finish_blocking(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let tcp: Vec<_> = lock(&self.tcp).drain(..).collect();
        for (sock, _) in &tcp {
            let _ = sock.shutdown(Shutdown::Both);
        }
        for (_, h) in tcp {
            let _ = h.join();
        }
        for u in &self.udp {
            if let Some(h) = lock(&u.thread).take() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish_blocking();
    }
}

async fn attach(shared: &Arc<Shared>, mut sock: TcpStream, peer: SocketAddr, id: u64, role: Role) {
    let Some(session) = lock(&shared.sessions).get(&id).cloned() else {
        shared.log(format_args!(
            "{peer}: refused a data connection for an unknown test"
        ));
        refuse(
            sock,
            ErrorCode::BadRequest,
            "no such test (it ended, or the id is wrong)",
        )
        .await;
        return;
    };
    if peer.ip() != session.peer_ip {
        shared.log(format_args!(
            "{peer}: refused a data connection for another host's test"
        ));
        refuse(
            sock,
            ErrorCode::Auth,
            "a data connection must come from the test's own host",
        )
        .await;
        return;
    }
    // Reserve one of the test's TCP streams (atomically: attaches race).
    let taken = session.tcp_attached.fetch_add(1, Ordering::SeqCst);
    {
        if session.stop.load(Ordering::SeqCst) || taken >= session.spec.tcp_streams {
            refuse(
                sock,
                ErrorCode::Limit,
                &format!(
                    "this test has all its {} TCP streams attached",
                    session.spec.tcp_streams
                ),
            )
            .await;
            return;
        }
    }
    if let Err(why) = Session::reserve_thread(shared) {
        refuse(sock, ErrorCode::Busy, &why).await;
        return;
    }
    let release = || shared.data_threads.fetch_sub(1, Ordering::SeqCst);
    let mut ok = MAGIC.to_vec();
    ok.extend(proto::encode(&Message::Attached));
    if tokio::time::timeout(IO_TIMEOUT, sock.write_all(&ok))
        .await
        .is_err()
    {
        release();
        return;
    }
    let std_sock = match sock.into_std().and_then(|s| {
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(shared.cfg.data_idle))?;
        s.set_write_timeout(Some(shared.cfg.data_idle))?;
        s.set_nodelay(session.spec.nodelay)?;
        Ok(s)
    }) {
        Ok(s) => s,
        Err(e) => {
            shared.log(format_args!("{peer}: data connection setup failed: {e}"));
            release();
            return;
        }
    };
    let handle = match std_sock.try_clone() {
        Ok(h) => h,
        Err(e) => {
            shared.log(format_args!("{peer}: data connection setup failed: {e}"));
            release();
            return;
        }
    };
    let mut tcp = lock(&session.tcp);
    if session.stop.load(Ordering::SeqCst) {
        release();
        return;
    }
    let ctx = DataCtx {
        block: session.spec.block as usize,
        nodelay: session.spec.nodelay,
        activity: session.last_activity.clone(),
        epoch: session.shared_epoch,
        received: session.tcp_received.clone(),
        sent: session.tcp_sent.clone(),
    };
    let count = session.data_threads.clone();
    let cpu = shared.cfg.echo_cpu.filter(|_| role == Role::Echo);
    let sh = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("benchsuite-net-data".into())
        .spawn(move || {
            pin_data_thread(&sh, cpu);
            let mut s = std_sock;
            // Errors end the connection; the client sees it closed and
            // reports that. A reset or timeout here is not the server's
            // problem to log for every stream.
            let _ = match role {
                Role::Sink => sink(&mut s, &ctx),
                Role::Source => source(&mut s, &ctx),
                Role::Echo => echo(&mut s, &ctx),
            };
            count.release();
        });
    match spawned {
        Ok(h) => tcp.push((handle, h)),
        Err(e) => {
            shared.log(format_args!("{peer}: spawning a data thread failed: {e}"));
            release();
        }
    }
}

/// Pins the calling data thread to `cpu`, if one is given. The CPU
/// was checked when the server started, so this fails only if the
/// process's affinity changed since; the thread then runs unpinned and the
/// failure is logged (by `benchsuite serve`; the in-process server is
/// quiet).
fn pin_data_thread(shared: &Shared, cpu: Option<usize>) {
    if let Some(cpu) = cpu
        && let Err(e) = benchsuite_core::team::pin_current_thread(cpu)
    {
        shared.log(format_args!("data thread left unpinned: {e}"));
    }
}

struct DataCtx {
    block: usize,
    nodelay: bool,
    activity: Arc<AtomicU64>,
    epoch: Instant,
    received: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
}

impl DataCtx {
    fn touch(&self) {
        self.activity
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

/// Reads an 8-byte batch header; `Ok(None)` at a clean end of stream.
fn read_header(s: &mut StdTcpStream) -> io::Result<Option<u64>> {
    let mut h = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match s.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u64::from_be_bytes(h)))
}

fn sink(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let mut buf = vec![0u8; ctx.block];
    while let Some(len) = read_header(s)? {
        let mut left = len;
        let mut reads: u32 = 0;
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            match s.read(&mut buf[..want]) {
                Ok(0) if len == UNBOUNDED => return Ok(()),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    left -= n as u64;
                    if len == UNBOUNDED {
                        ctx.received.fetch_add(n as u64, Ordering::Relaxed);
                        reads = reads.wrapping_add(1);
                        if reads.is_multiple_of(1024) {
                            ctx.touch();
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        ctx.received.fetch_add(len, Ordering::Relaxed);
        s.write_all(&len.to_be_bytes())?;
        ctx.touch();
    }
    Ok(())
}

fn source(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let buf = vec![0x5au8; ctx.block];
    while let Some(len) = read_header(s)? {
        let mut left = len;
        let mut writes: u32 = 0;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            if let Err(e) = s.write_all(&buf[..n]) {
                // An unbounded stream ends when the client closes it.
                return if len == UNBOUNDED { Ok(()) } else { Err(e) };
            }
            left -= n as u64;
            ctx.sent.fetch_add(n as u64, Ordering::Relaxed);
            writes = writes.wrapping_add(1);
            if writes.is_multiple_of(1024) {
                ctx.touch();
            }
        }
        if !ctx.nodelay {
            // Push the batch's last short segment now instead of after the
            // client's delayed ACK (see `tcp::push`).
            s.set_nodelay(true)?;
            s.set_nodelay(false)?;
        }
        ctx.touch();
    }
    Ok(())
}

fn echo(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let mut buf = vec![0u8; ctx.block];
    let mut n: u32 = 0;
    loop {
        // A clean close between messages ends the test.
        let mut got = 0;
        while got < buf.len() {
            match s.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(()),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        s.write_all(&buf)?;
        n = n.wrapping_add(1);
        if n.is_multiple_of(1024) {
            ctx.touch();
        }
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
            self.next_seq = seq + 1;
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
    fn a_public_bind_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:5301".parse().unwrap();
        let e = ServerConfig::new(public, None)
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("without --token") && e.contains("0.0.0.0:5301"),
            "{e}"
        );
        assert!(ServerConfig::new(public, Some("t".into())).check().is_ok());
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(ServerConfig::new(lo, None).check().is_ok());
        let v6: SocketAddr = "[::1]:0".parse().unwrap();
        assert!(ServerConfig::new(v6, None).check().is_ok());
        let e = ServerConfig::new(lo, Some(String::new()))
            .check()
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
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
