//! The control side of the server, on the tokio runtime: the accept loop
//! (the connection limit and the per-address gate of [`super::gate`]), a
//! connection's handshake (hello with the version check, then the
//! challenge, the client's response and the server's proof when the
//! server has a token; or a data connection's attach, whose test is found
//! here — a wrong id is a failed authentication — before it is handed to
//! [`super::data`]), and the control conversation of one client (start,
//! `udp_batch`, stop, bye) with its timeouts. Everything here is async and
//! speaks [`crate::proto`] frames; the blocking data path lives elsewhere.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::proto::{
    self, ErrorCode, IO_TIMEOUT, MAGIC, MAX_HANDSHAKE_FRAME, MAX_STREAMS, Message, NONCE_LEN,
    PROTOCOL_VERSION, Role, UdpMode,
};

use super::data::attach;
use super::gate::{self, Refusal, Ticket};
use super::guard::{CountGuard, lock};
use super::refuse::{error, refuse, refuse_in_place};
use super::state::{Session, Shared};

pub(super) async fn accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
) {
    let mut tasks = JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            _ = stop.changed() => break,
            r = listener.accept() => match r {
                Ok((sock, peer)) => admit(&shared, &mut tasks, sock, peer, &stop),
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    shared.log_refusal(format_args!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// A new connection: through the gate (back-off, per-address cap) and the
/// connection limit (evicting the oldest unauthenticated connection when
/// full) to its own task, or refused before anything is read.
fn admit(
    shared: &Arc<Shared>,
    tasks: &mut JoinSet<()>,
    sock: TcpStream,
    peer: SocketAddr,
    stop: &watch::Receiver<bool>,
) {
    let refusal = match shared.gate.admit(peer.ip(), Instant::now()) {
        Err(Refusal::BackedOff(left)) => (ErrorCode::Auth, backed_off(peer, left)),
        Err(Refusal::TooMany(held)) => (
            ErrorCode::Busy,
            format!(
                "too many connections from {} awaiting authentication ({held}, the limit); try again later",
                peer.ip()
            ),
        ),
        Ok(ticket) => {
            let n = shared.connections.fetch_add(1, Ordering::SeqCst);
            // Full: make room by closing the oldest connection that has
            // not authenticated.
            let room = n < shared.cfg.max_connections
                || shared.gate.evict_oldest(ticket.id).is_some_and(|ip| {
                    shared.log_refusal(format_args!(
                        "{n} connections open: closed the oldest one awaiting authentication (from {ip}) to admit {peer}"
                    ));
                    true
                });
            if room {
                let sh = shared.clone();
                let st = stop.clone();
                tasks.spawn(async move {
                    let _g = CountGuard(&sh.connections);
                    connection(&sh, sock, peer, st, ticket).await;
                });
                return;
            }
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            shared.gate.release(ticket.id);
            (
                ErrorCode::Busy,
                "the server has too many connections open; try again later".to_string(),
            )
        }
    };
    // Refusals have their own bound: a flood of them neither takes the
    // slots of real connections nor runs the server out of descriptors.
    // Past it, a refused connection is closed without an answer.
    let (code, why) = refusal;
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= shared.cfg.max_connections {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        shared.log_refusal(format_args!("{peer}: closed unanswered: {why}"));
        return;
    }
    shared.log_refusal(format_args!("{peer}: refused: {why}"));
    let sh = shared.clone();
    tasks.spawn(async move {
        let _g = CountGuard(&sh.refusing);
        refuse(sock, code, &why).await;
    });
}

async fn send(sock: &mut TcpStream, msg: &Message) -> io::Result<()> {
    let frame = proto::encode(msg);
    tokio::time::timeout(IO_TIMEOUT, sock.write_all(&frame))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "write timed out"))?
}

/// Reads one frame of at most [`MAX_HANDSHAKE_FRAME`] bytes, exactly
/// (nothing beyond it is consumed: a data connection's bytes follow). The
/// body buffer grows as the bytes arrive, so announcing a large frame
/// costs the client the bytes, not the server the memory.
async fn handshake_frame(sock: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = [0u8; 4];
    sock.read_exact(&mut head).await?;
    let len = u32::from_be_bytes(head) as usize;
    if len > MAX_HANDSHAKE_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a handshake frame of {len} bytes is above the limit of {MAX_HANDSHAKE_FRAME}"),
        ));
    }
    let mut body = Vec::with_capacity(len.min(512));
    (&mut *sock).take(len as u64).read_to_end(&mut body).await?;
    if body.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the client closed the connection mid-frame",
        ));
    }
    Ok(body)
}

/// How a connection's handshake ended.
enum Handshake {
    /// An authenticated control connection: whether our magic is sent,
    /// and the proof that we know the token, for the welcome (none
    /// without a token).
    Control {
        magic_sent: bool,
        proof: Option<String>,
    },
    /// A data connection's attach, to a test that exists and is its
    /// host's.
    Attach { session: Arc<Session>, role: Role },
    /// Refused or failed (already answered and logged).
    Done,
}

/// Frees the connection's place among those awaiting authentication
/// when dropped.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: u64,
}
impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.gate.release(self.id);
    }
}

async fn connection(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
    ticket: Ticket,
) {
    let Ticket { id, evicted } = ticket;
    let pending = PendingGuard { shared, id };
    let evicted = async {
        if evicted.await.is_err() {
            // Released without an eviction: never fires.
            std::future::pending::<()>().await;
        }
    };
    let timeout = shared.cfg.io_timeout;
    let outcome = tokio::select! {
        _ = evicted => {
            // Already logged by the accept loop.
            return;
        }
        _ = stop.changed() => return,
        r = tokio::time::timeout(timeout, handshake(shared, &mut sock, peer)) => match r {
            Ok(Ok(h)) => h,
            // Our own words (the client's are escaped where they appear).
            Ok(Err(why)) => {
                shared.log_refusal(format_args!("{peer}: {why}"));
                return;
            }
            Err(_) => {
                shared.log_refusal(format_args!(
                    "{peer}: no complete handshake within {:.1} s; closed",
                    timeout.as_secs_f64()
                ));
                return;
            }
        },
    };
    drop(pending);
    match outcome {
        Handshake::Control { magic_sent, proof } => {
            control(shared, sock, peer, stop, magic_sent, proof).await
        }
        Handshake::Attach { session, role } => attach(shared, sock, peer, session, role).await,
        Handshake::Done => {}
    }
}

/// The hello (or attach), and with a token the challenge and response.
/// `Err` is a failure to log (the connection just closes), in our words
/// with anything the client chose escaped; refusals are answered and
/// logged here and return [`Handshake::Done`].
async fn handshake(
    shared: &Arc<Shared>,
    sock: &mut TcpStream,
    peer: SocketAddr,
) -> Result<Handshake, String> {
    let mut magic = [0u8; 4];
    sock.read_exact(&mut magic)
        .await
        .map_err(|e| format!("closed before the greeting ({e})"))?;
    if magic != MAGIC {
        return Err(format!(
            "not a benchsuite client (it sent {}); closed",
            proto::describe_bytes(&magic)
        ));
    }
    let body = match handshake_frame(sock).await {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            let why = e.to_string();
            shared.log_refusal(format_args!("{peer}: refused: {why}"));
            refuse_in_place(sock, ErrorCode::Limit, &why, false).await;
            return Ok(Handshake::Done);
        }
        Err(e) => return Err(e.to_string()),
    };
    let first = proto::decode_body(&body).map_err(|e| (e.to_string(), proto::version_of(&body)));
    let (software_raw, client_nonce) = match first {
        Ok(Message::Hello {
            version,
            software,
            nonce,
        }) => {
            if version != PROTOCOL_VERSION {
                let msg = version_mismatch(u64::from(version));
                shared.log_refusal(format_args!(
                    "{peer} ({}): refused: {msg}",
                    printable(&software)
                ));
                refuse_in_place(sock, ErrorCode::Version, &msg, false).await;
                return Ok(Handshake::Done);
            }
            (software, nonce)
        }
        Ok(Message::Attach { session, role }) => {
            return Ok(match find_test(shared, sock, peer, session).await {
                Some(session) => Handshake::Attach { session, role },
                None => Handshake::Done,
            });
        }
        Ok(other) => {
            shared.log_refusal(format_args!(
                "{peer}: refused: the first message must be a hello, not {}",
                kind(&other)
            ));
            refuse_in_place(
                sock,
                ErrorCode::BadRequest,
                "the first message must be a hello",
                false,
            )
            .await;
            return Ok(Handshake::Done);
        }
        Err((why, Some(v))) if v != u64::from(PROTOCOL_VERSION) => {
            let msg = version_mismatch(v);
            shared.log_refusal(format_args!("{peer}: refused: {msg} ({})", printable(&why)));
            refuse_in_place(sock, ErrorCode::Version, &msg, false).await;
            return Ok(Handshake::Done);
        }
        Err((why, _)) => {
            shared.log_refusal(format_args!("{peer}: refused: {}", printable(&why)));
            refuse_in_place(sock, ErrorCode::BadRequest, &why, false).await;
            return Ok(Handshake::Done);
        }
    };
    let Some(token) = &shared.cfg.token else {
        return Ok(Handshake::Control {
            magic_sent: false,
            proof: None,
        });
    };
    // The client's own words: escaped and cut short before they reach
    // the server's log (a terminal escape, 4 KiB of text).
    let software = printable(&software_raw);
    let Some(client_nonce) = proto::nonce_from_hex(&client_nonce) else {
        let msg = format!(
            "the hello's nonce must be {NONCE_LEN} random bytes in hex (protocol version {PROTOCOL_VERSION})"
        );
        shared.log_refusal(format_args!("{peer} ({software}): refused: {msg}"));
        refuse_in_place(sock, ErrorCode::BadRequest, &msg, false).await;
        return Ok(Handshake::Done);
    };
    let mut nonce = [0u8; NONCE_LEN];
    if let Err(e) = crate::sys::random_bytes(&mut nonce) {
        shared.log(format_args!("{peer}: cannot make a nonce: {e}"));
        refuse_in_place(
            sock,
            ErrorCode::Internal,
            "the server cannot make a nonce",
            false,
        )
        .await;
        return Ok(Handshake::Done);
    }
    let mut challenge = MAGIC.to_vec();
    challenge.extend(proto::encode(&Message::Challenge {
        nonce: proto::to_hex(&nonce),
    }));
    sock.write_all(&challenge)
        .await
        .map_err(|e| format!("sending the challenge to \"{software}\" failed: {e}"))?;
    let body = match handshake_frame(sock).await {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            let why = e.to_string();
            shared.log_refusal(format_args!("{peer} ({software}): refused: {why}"));
            refuse_in_place(sock, ErrorCode::Limit, &why, true).await;
            return Ok(Handshake::Done);
        }
        // A client without the token closes here: no guess was made.
        Err(e) => {
            return Err(format!(
                "\"{software}\" closed without answering the challenge ({e})"
            ));
        }
    };
    // A connection opened before another from this address failed must
    // not spend a guess while that back-off runs.
    if let Some(wait) = shared.gate.backed_off(peer.ip(), Instant::now()) {
        let msg = backed_off(peer, wait);
        shared.log_refusal(format_args!("{peer} ({software}): refused: {msg}"));
        refuse_in_place(sock, ErrorCode::Auth, &msg, true).await;
        return Ok(Handshake::Done);
    }
    let expected = proto::client_mac(token.as_bytes(), &nonce, &client_nonce, &software_raw);
    let ok = match proto::decode_body(&body) {
        Ok(Message::Auth { mac }) => {
            proto::from_hex(&mac).is_some_and(|given| proto::constant_time_eq(&given, &expected))
        }
        _ => false,
    };
    if !ok {
        let delay = failed(shared, peer);
        let msg = "wrong token: the authentication code does not match this server's token";
        shared.log_refusal(format_args!(
            "{peer} ({software}): refused: wrong token (further connections from {} refused for {:.1} s)",
            peer.ip(),
            delay.as_secs_f64()
        ));
        refuse_in_place(sock, ErrorCode::Auth, msg, true).await;
        return Ok(Handshake::Done);
    }
    shared.gate.succeeded(peer.ip());
    // Only now, to a client that proved it knows the token: a client that
    // merely reaches the server gets nothing to test guesses against.
    let proof = proto::server_proof(token.as_bytes(), &nonce, &client_nonce, &software_raw);
    Ok(Handshake::Control {
        magic_sent: true,
        proof: Some(proto::to_hex(&proof)),
    })
}

/// The test a data connection's attach names, or `None` (answered and
/// logged). The session id is the data connection's credential: an id
/// that names no test, or another host's, is a failed authentication
/// (it earns the address a back-off, as a wrong MAC does), and while the
/// address serves one its attaches are refused unread, so connections
/// opened before a failure cannot each spend a guess. All of this happens
/// while the connection still awaits authentication: it counts against
/// its address's cap and may be evicted.
async fn find_test(
    shared: &Arc<Shared>,
    sock: &mut TcpStream,
    peer: SocketAddr,
    id: u64,
) -> Option<Arc<Session>> {
    if let Some(wait) = shared.gate.backed_off(peer.ip(), Instant::now()) {
        let msg = backed_off(peer, wait);
        shared.log_refusal(format_args!("{peer}: refused a data connection: {msg}"));
        refuse_in_place(sock, ErrorCode::Auth, &msg, false).await;
        return None;
    }
    let (code, msg, what) = match lock(&shared.sessions).get(&id).cloned() {
        Some(s) if s.peer_ip == peer.ip() => return Some(s),
        Some(_) => (
            ErrorCode::Auth,
            "a data connection must come from the test's own host",
            "another host's test",
        ),
        None => (
            ErrorCode::BadRequest,
            "no such test (it ended, or the id is wrong)",
            "an unknown test",
        ),
    };
    let delay = failed(shared, peer);
    shared.log_refusal(format_args!(
        "{peer}: refused a data connection for {what} (further connections from {} refused for {:.1} s)",
        peer.ip(),
        delay.as_secs_f64()
    ));
    refuse_in_place(sock, code, msg, false).await;
    None
}

/// Records a failed authentication from `peer`: the back-off it earned.
/// Logs (not rate-limited: it is rare) when the back-off table was full
/// and widened entries to make room.
fn failed(shared: &Shared, peer: SocketAddr) -> Duration {
    let gate::Failure { delay, widened } = shared.gate.failed(peer.ip(), Instant::now());
    if widened > 0 {
        shared.log(format_args!(
            "the back-off table is full ({} entries of sources that failed to authenticate): {widened} entries widened to their /24 or /16 (IPv6 /48 or /32), or to every address; their back-offs now cover their neighbours",
            super::BACKOFF_TABLE
        ));
    }
    delay
}

/// The refusal of an address serving a back-off.
fn backed_off(peer: SocketAddr, wait: Duration) -> String {
    format!(
        "too many failed authentications from {}; retry in {:.1} s",
        peer.ip(),
        wait.as_secs_f64().max(0.1)
    )
}

fn version_mismatch(theirs: u64) -> String {
    format!(
        "the client speaks benchsuite-net protocol version {theirs}, this server speaks version {PROTOCOL_VERSION}"
    )
}

/// The name of a message's type, for logs.
fn kind(m: &Message) -> &'static str {
    match m {
        Message::Hello { .. } => "hello",
        Message::Challenge { .. } => "challenge",
        Message::Auth { .. } => "auth",
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
    magic_sent: bool,
    proof: Option<String>,
) {
    let mut welcome = if magic_sent {
        Vec::new()
    } else {
        MAGIC.to_vec()
    };
    welcome.extend(proto::encode(&Message::Welcome {
        version: PROTOCOL_VERSION,
        software: software(),
        max_streams: MAX_STREAMS,
        proof,
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
        shared.log(format_args!(
            "{peer}: control connection closed: {}",
            printable(&why)
        ));
    }
    if let Some(s) = session.take() {
        lock(&shared.sessions).remove(&s.id);
        let _ = tokio::task::spawn_blocking(move || s.finish_blocking()).await;
    }
}

/// `text` as the server may log it: control characters, quotes and
/// backslashes escaped, at most 64 characters.
fn printable(text: &str) -> String {
    const MAX: usize = 64;
    let mut out: String = text
        .chars()
        .take(MAX)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

fn software() -> String {
    format!("benchsuite {}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_strings_are_escaped_and_cut_before_logging() {
        assert_eq!(printable("benchsuite 0.1.0"), "benchsuite 0.1.0");
        assert_eq!(printable("a\x1b[2Jb\n\"c\\"), "a\\u{1b}[2Jb\\n\\\"c\\\\");
        let long = "x".repeat(65536);
        let p = printable(&long);
        assert_eq!(p.chars().count(), 65);
        assert!(p.ends_with('…'));
    }
}
