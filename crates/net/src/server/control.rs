//! The control side of the server, on the tokio runtime: the accept loop
//! (and its connection limit), a connection's first frame (hello with the
//! version and token checks, or a data connection's attach, handed to
//! [`super::data`]), and the control conversation of one client (start,
//! `udp_batch`, stop, bye) with its timeouts. Everything here is async and
//! speaks [`crate::proto`] frames; the blocking data path lives elsewhere.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::proto::{
    self, ErrorCode, IO_TIMEOUT, MAGIC, MAX_STREAMS, Message, PROTOCOL_VERSION, UdpMode,
};

use super::data::attach;
use super::session::Session;
use super::{CountGuard, Shared, lock};

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
pub(super) async fn refuse(mut sock: TcpStream, code: ErrorCode, message: &str) {
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
            shared.log(format_args!("{peer}: {}", printable(&why.to_string())));
            return;
        }
    };
    match first {
        Ok(Message::Hello {
            version,
            token,
            software,
        }) => {
            // The client's own words: escaped and cut short before they
            // reach the server's log (a terminal escape, 64 KiB of text).
            let software = printable(&software);
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
            shared.log(format_args!("{peer}: refused: {msg} ({})", printable(&why)));
            refuse(sock, ErrorCode::Version, &msg).await;
        }
        Err((why, _)) => {
            shared.log(format_args!("{peer}: refused: {}", printable(&why)));
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

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
    }
}
