//! The control protocol between a client (`benchsuite run net ...`) and a
//! server (`benchsuite serve`, or the in-process one on loopback).
//!
//! # Wire format (protocol version 4)
//!
//! Every TCP connection starts with the 4 bytes [`MAGIC`] (`BSNT`) from each
//! side, followed by *frames*: a 4-byte big-endian length `n`
//! (`n ≤ MAX_FRAME` = 64 KiB; `n ≤ MAX_HANDSHAKE_FRAME` = 4 KiB for the
//! frames a client sends before it is authenticated) and `n` bytes of
//! UTF-8 JSON, one [`Message`] tagged by its `"type"`. The client speaks
//! first; the server answers with its own magic and a frame, so a peer
//! that is not a benchsuite server is recognised by its first four bytes.
//!
//! A **control connection** carries:
//!
//! ```text
//! client                                   server
//! Hello {version, software, nonce}   →
//!   server with a token:
//!                                    ←     Challenge {nonce}                           |  Error {code, message, version}
//! Auth {mac}                         →
//!                                    ←     Welcome {version, software, limits, proof}  |  Error {auth}
//!   server without a token (--no-auth): the hello is answered at once
//!                                    ←     Welcome ... (no proof)                      |  Error
//! Start {spec}                       →
//!                                    ←     Ready {session, udp_ports}           |  Error
//!   ... data connections attach, data flows (TCP: see Role), per-batch UdpBatch → UdpStats ...
//! Stop                               →
//!                                    ←     Stopped {tcp_received, tcp_sent}
//! (Start ... Stop again, one test at a time)
//! Bye                                →     (both close)
//! ```
//!
//! # Authentication: challenge and response, both ways
//!
//! The token never travels, and each side proves that it knows it. The
//! client's hello carries a fresh nonce `Nc` of [`NONCE_LEN`] (32) bytes; a
//! server with a token answers with [`Message::Challenge`], its own fresh
//! nonce `Ns` (both from the kernel's secure random generator, in
//! lowercase hex). The client answers [`Message::Auth`] with `mac`, and a
//! server that finds it right sends [`Message::Welcome`] with `proof`
//! (lowercase hex):
//!
//! ```text
//! mac   = HMAC-SHA256(key = token (its UTF-8 bytes),
//!                     msg = "benchsuite-net v4 client" || Ns || Nc || software)
//! proof = HMAC-SHA256(key = token,
//!                     msg = "benchsuite-net v4 server" || Ns || Nc || software)
//! ```
//!
//! (the nonces as their 32 raw bytes, `software` the hello's, UTF-8;
//! [`client_mac`], [`server_proof`]). Each side compares in constant time.
//! A wrong `mac` is answered `Error {code: auth}` (and backed off), so a
//! client that merely reaches the server gets nothing to test guessed
//! tokens against; a client with a token accepts a welcome only with the
//! right `proof`, before it sends anything else, and refuses a server that
//! welcomes it without a challenge. Someone who records a conversation
//! learns nonces and codes, not the token, and cannot replay them (the
//! next nonces differ). A server posing as the real one gets the client's
//! `mac` and can test guessed tokens against it offline, as an eavesdropper
//! can: hence tokens of at least [`MIN_TOKEN_LEN`] characters, long and
//! random. Nothing after the handshake is authenticated or encrypted: see
//! `docs/security.md`.
//!
//! A server without a token (`benchsuite serve --no-auth`, loopback only)
//! answers the hello with `Welcome` directly, one round trip, without a
//! proof; only a client without a token accepts that.
//!
//! A **data connection** sends `Attach {session, role}` and receives
//! `Attached` (or `Error`); after that it carries raw bytes, see
//! [`Role`]. The session id is a random 64-bit number known only to the
//! control connection that authenticated, and the data connection must
//! come from that connection's address, so it needs no token of its own.
//! An id that names no test (or another host's) is a failed
//! authentication, answered as one and backed off as a wrong MAC is.
//!
//! # Limits
//!
//! A frame above [`MAX_FRAME`] (above [`MAX_HANDSHAKE_FRAME`] before
//! authentication) is rejected from its length prefix, before anything is
//! allocated, and a frame's body grows only as its bytes arrive; every
//! read has a deadline ([`IO_TIMEOUT`] for a frame, and for the whole
//! handshake from the accept to the welcome; [`DATA_IDLE`] between data
//! batches); a test may use at most [`MAX_STREAMS`] data streams. So a
//! broken or hostile client can neither make the server allocate without
//! bound nor hold a thread forever. The server's own limits (connections
//! per address, back-off after failed authentications) are described in
//! [`crate::server`].

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The protocol version this build speaks. Bumped on any incompatible
/// change; peers with different versions refuse each other and both name
/// the two versions. Version 2 replaced the token in the hello with a
/// challenge and response; version 3 added continuous TCP streams
/// ([`STREAM`]: count reports from a sink, a stop byte to a source);
/// version 4 made the authentication mutual (a client nonce in the hello,
/// a proof in the welcome).
pub const PROTOCOL_VERSION: u32 = 4;

/// The 4 bytes each side sends first on every connection.
pub const MAGIC: [u8; 4] = *b"BSNT";

/// The largest frame body accepted, in bytes (64 KiB).
pub const MAX_FRAME: usize = 64 * 1024;

/// The largest frame body a server accepts before the client is
/// authenticated (hello, auth, attach), in bytes (4 KiB): the handshake's
/// messages are a few hundred bytes.
pub const MAX_HANDSHAKE_FRAME: usize = 4 * 1024;

/// Bytes of the server's authentication nonce.
pub const NONCE_LEN: usize = 32;

/// The shortest token a server takes, and a client sends a MAC of, in
/// characters. Whoever the client reaches — the real server or one posing
/// as it — receives one authentication code per connection, and so does
/// someone recording the handshake; each can be tested offline against
/// guessed tokens as fast as HMACs compute. A short token falls to that;
/// 16 characters is the floor (`--rendezvous` has the same), a long random
/// token (`openssl rand -hex 32`) is the advice.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why `token` is too short to use ([`MIN_TOKEN_LEN`]), or `None`.
pub fn token_too_short(token: &str) -> Option<String> {
    let n = token.chars().count();
    (n < MIN_TOKEN_LEN).then(|| {
        format!(
            "the token has {n} characters; benchsuite-net takes tokens of at least {MIN_TOKEN_LEN}: \
             each authentication code a server (or whoever poses as one, or records the handshake) gets \
             can be tested offline against guessed tokens, and a short one falls quickly; \
             use a long random one, e.g. from `openssl rand -hex 32`"
        )
    })
}

/// What [`auth_mac`] covers before the nonce: protocol versions 2 and 3
/// authenticated clients with it (domain separation: a MAC made with the
/// token for anything else never passes). `--rendezvous` derives its keys
/// with it.
pub const AUTH_CONTEXT: &[u8] = b"benchsuite-net v2 auth";

/// What a client's [`Message::Auth`] MAC covers first ([`client_mac`]).
pub const CLIENT_CONTEXT: &[u8] = b"benchsuite-net v4 client";

/// What a server's [`Message::Welcome`] proof covers first
/// ([`server_proof`]): another context than the client's, so neither
/// side's code can be sent back as the other's.
pub const SERVER_CONTEXT: &[u8] = b"benchsuite-net v4 server";

/// The most data streams (TCP connections plus UDP sockets) one test may use.
pub const MAX_STREAMS: u32 = 128;

/// The largest TCP block (bytes per write and per read), 1 MiB.
pub const MAX_TCP_BLOCK: u32 = 1 << 20;

/// The largest UDP payload over IPv4: 65535 − 20 (IP header) − 8 (UDP header).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;

/// Bytes at the start of every UDP throughput datagram: sequence number
/// and send time (two big-endian `u64`s). Smaller datagrams cannot carry
/// them, so this is the smallest `block` of `net.udp_throughput`.
pub const UDP_HEADER: u32 = 16;

/// Deadline for reading one whole frame (and the connection's first frame
/// after accept).
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a data connection (or a whole test) may stay silent between
/// batches before the server drops it.
pub const DATA_IDLE: Duration = Duration::from_secs(60);

/// The default TCP port of `benchsuite serve` (UDP test sockets use
/// ephemeral ports the server names in [`Message::Ready`]).
pub const DEFAULT_PORT: u16 = 5301;

/// A batch length of `u64::MAX` on a sink or source connection means "until
/// the connection closes" (the background stream of `net.latency load=tcp`).
pub const UNBOUNDED: u64 = u64::MAX;

/// A batch length of `u64::MAX − 1` on a sink or source connection starts a
/// continuous stream with a clean end (`net.tcp_throughput`): the bytes
/// flow without pauses between the client's samples, and the client counts
/// each sample from the receiver's side. See [`Role`] for each end.
pub const STREAM: u64 = u64::MAX - 1;

/// Bytes of one count report a sink sends back on a [`STREAM`]: the bytes
/// it has received on the connection, then the nanoseconds since it read
/// the stream's header (its own monotonic clock), two big-endian `u64`s.
pub const REPORT_LEN: usize = 16;

/// How often a [`STREAM`] sink reports its count while bytes arrive (at
/// most once per interval, checked after each read), and how often a
/// [`STREAM`] source looks for the client's stop byte.
pub const REPORT_INTERVAL: Duration = Duration::from_millis(1);

/// Encodes a [`STREAM`] count report.
pub fn encode_report(bytes: u64, ns: u64) -> [u8; REPORT_LEN] {
    let mut r = [0u8; REPORT_LEN];
    r[..8].copy_from_slice(&bytes.to_be_bytes());
    r[8..].copy_from_slice(&ns.to_be_bytes());
    r
}

/// Decodes a [`STREAM`] count report: (bytes, nanoseconds).
pub fn decode_report(r: &[u8; REPORT_LEN]) -> (u64, u64) {
    let mut b = [0u8; 8];
    b.copy_from_slice(&r[..8]);
    let mut n = [0u8; 8];
    n.copy_from_slice(&r[8..]);
    (u64::from_be_bytes(b), u64::from_be_bytes(n))
}

/// What a data connection does after `Attached`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Client → server. Per batch the client sends an 8-byte big-endian
    /// length `L` then `L` bytes; the server reads them in `block`-sized
    /// reads and answers with the 8-byte count it received. `L =
    /// UNBOUNDED`: read until the connection closes, no answer. `L =`
    /// [`STREAM`]: the client sends until it shuts down its write side;
    /// the server reads in `block`-sized reads and, at most every
    /// [`REPORT_INTERVAL`] while bytes arrive, sends a count report
    /// ([`REPORT_LEN`] bytes: the bytes received so far and the time since
    /// the header, in its own nanoseconds), at once (`TCP_NODELAY` on its
    /// end, whatever the spec's `nodelay`); at the end of file it sends a
    /// last report with the total and shuts down its write side.
    Sink,
    /// Server → client. Per batch the client sends an 8-byte length `L`;
    /// the server sends `L` bytes in `block`-sized writes. `L =
    /// UNBOUNDED`: until the connection closes. `L =` [`STREAM`]: until the
    /// client sends any byte (looked for every [`REPORT_INTERVAL`]); then
    /// the server shuts down its write side, so the client, reading to the
    /// end of file, has received exactly what the server counts as sent.
    Source,
    /// Ping-pong: the server reads `block` bytes and writes them back,
    /// until the connection closes.
    Echo,
}

/// What the server does with the test's UDP sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UdpMode {
    /// Count datagrams (sequence numbers, loss, reordering, jitter).
    Sink,
    /// Send every datagram back to its sender (only to the control
    /// connection's address, so the server cannot be used as a reflector).
    Echo,
}

/// One test as the client asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSpec {
    /// Bytes per write and per read on TCP; datagram payload on UDP.
    pub block: u32,
    /// TCP data connections the client will attach (any roles).
    pub tcp_streams: u32,
    /// UDP sockets the server opens for the test.
    pub udp_streams: u32,
    /// What the UDP sockets do.
    pub udp_mode: UdpMode,
    /// Set `TCP_NODELAY` on the server's ends of the data connections.
    pub nodelay: bool,
}

impl TestSpec {
    /// Checks the spec against the protocol's limits; the message says what
    /// is wrong in the client's terms.
    pub fn check(&self) -> Result<(), benchsuite_core::ValueError> {
        self.check_text().map_err(Into::into)
    }

    fn check_text(&self) -> Result<(), String> {
        let streams = u64::from(self.tcp_streams) + u64::from(self.udp_streams);
        if streams == 0 {
            return Err("a test needs at least one stream".into());
        }
        if streams > u64::from(MAX_STREAMS) {
            return Err(format!(
                "{streams} streams asked for, the limit is {MAX_STREAMS}"
            ));
        }
        if self.block == 0 {
            return Err("block must be at least 1 byte".into());
        }
        if self.block > MAX_TCP_BLOCK {
            return Err(format!(
                "block of {} bytes is above the limit of {MAX_TCP_BLOCK}",
                self.block
            ));
        }
        if self.udp_streams > 0 {
            if self.block > MAX_UDP_PAYLOAD {
                return Err(format!(
                    "a UDP datagram of {} bytes is above the IPv4 maximum of {MAX_UDP_PAYLOAD}",
                    self.block
                ));
            }
            if self.udp_mode == UdpMode::Sink && self.block < UDP_HEADER {
                return Err(format!(
                    "a UDP throughput datagram needs at least {UDP_HEADER} bytes (sequence number and timestamp), not {}",
                    self.block
                ));
            }
        }
        Ok(())
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Missing or wrong token.
    Auth,
    /// The peers speak different protocol versions.
    Version,
    /// A request above a limit (streams, block, frame size).
    Limit,
    /// The server is at capacity (connections or data threads).
    Busy,
    /// A message that makes no sense here (wrong order, unknown session).
    BadRequest,
    /// Something failed on the server (socket, thread).
    Internal,
}

/// Per-stream statistics of one UDP batch, counted by the receiver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpBatchStats {
    /// Datagrams of this batch received (sequence numbers in the batch's
    /// range; duplicates counted once each time they arrive).
    pub received: u64,
    /// Payload bytes of those datagrams.
    pub bytes: u64,
    /// Datagrams that arrived after one with a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams of an earlier batch that arrived during this one (already
    /// counted lost there; not counted here).
    pub late: u64,
    /// RFC 3550 interarrival jitter at the end of the batch, nanoseconds.
    pub jitter_ns: f64,
    /// When the batch's first datagram was received, ns since the
    /// server's epoch for the test (all streams of a test share it).
    pub first_ns: u64,
    /// When the batch's last datagram was received, same clock.
    pub last_ns: u64,
    /// Payload bytes of the first datagram (not part of the rate over
    /// `last_ns − first_ns`, which counts the datagrams after it).
    pub first_bytes: u64,
}

/// One control message. JSON-encoded, tagged by `"type"`; unknown fields
/// are ignored so later minor additions stay compatible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Client → server, first frame of a control connection. It carries
    /// no token (a version-1 hello's `token` field is ignored, and the
    /// version refused).
    Hello {
        /// The client's [`PROTOCOL_VERSION`].
        version: u32,
        /// Free text, e.g. `benchsuite 0.1.0`; part of the MAC in
        /// [`Message::Auth`].
        software: String,
        /// The client's [`NONCE_LEN`] random bytes, lowercase hex: part of
        /// both codes, so the server's proof is fresh for this client.
        /// (Empty when left out, as in a hello of an older version.)
        #[serde(default)]
        nonce: String,
    },
    /// Server → client: the server has a token; prove you know it.
    Challenge {
        /// [`NONCE_LEN`] random bytes, lowercase hex.
        nonce: String,
    },
    /// Client → server: the answer to [`Message::Challenge`].
    Auth {
        /// [`client_mac`] of the token, both nonces and the hello's
        /// software string, lowercase hex (64 digits).
        mac: String,
    },
    /// Server → client: the hello is accepted.
    Welcome {
        /// The server's [`PROTOCOL_VERSION`].
        version: u32,
        /// Free text, e.g. `benchsuite 0.1.0`.
        software: String,
        /// The server's stream limit.
        max_streams: u32,
        /// A server with a token: [`server_proof`] of it, both nonces and
        /// the hello's software string, lowercase hex. Left out by a
        /// server without a token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proof: Option<String>,
    },
    /// Either way: a refusal. The connection is closed after it, except
    /// for `bad_request`/`limit` answers to `Start`.
    Error {
        /// What kind of refusal.
        code: ErrorCode,
        /// A sentence for a human.
        message: String,
        /// The sender's [`PROTOCOL_VERSION`].
        version: u32,
    },
    /// Client → server: set up a test.
    Start {
        /// What to set up.
        spec: TestSpec,
    },
    /// Server → client: the test is set up.
    Ready {
        /// Random id the data connections present in `Attach`.
        session: u64,
        /// Ports of the test's UDP sockets (same address as the control
        /// connection), one per UDP stream.
        udp_ports: Vec<u16>,
    },
    /// Client → server, first frame of a data connection.
    Attach {
        /// The id from `Ready`.
        session: u64,
        /// What the connection does.
        role: Role,
    },
    /// Server → client: the data connection is attached.
    Attached,
    /// Client → server: a UDP sink batch has been sent; `end_seq[i]` is one
    /// past the last sequence number sent on UDP stream `i`.
    UdpBatch {
        /// Per stream, one past the last sequence number sent.
        end_seq: Vec<u64>,
    },
    /// Server → client: what each UDP stream received in the batch.
    UdpStats {
        /// One entry per UDP stream.
        streams: Vec<UdpBatchStats>,
    },
    /// Client → server: end the test (data connections may already be
    /// closed).
    Stop,
    /// Server → client: the test is over; the server's byte counts.
    Stopped {
        /// Bytes the server received on sink connections.
        tcp_received: u64,
        /// Bytes the server sent on source connections.
        tcp_sent: u64,
    },
    /// Client → server: closing; no answer.
    Bye,
}

/// HMAC-SHA256 keyed with `key` over `parts`, one after the other.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    // HMAC takes keys of any length (long ones are hashed first).
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// The authentication code of protocol versions 2 and 3: HMAC-SHA256
/// keyed with the token over [`AUTH_CONTEXT`], the raw nonce bytes and
/// the hello's software string. Version 4 authenticates with
/// [`client_mac`] and [`server_proof`]; `--rendezvous` derives its keys
/// with this one.
pub fn auth_mac(token: &[u8], nonce: &[u8], software: &str) -> [u8; 32] {
    hmac_sha256(token, &[AUTH_CONTEXT, nonce, software.as_bytes()])
}

/// The code a client sends in [`Message::Auth`]: HMAC-SHA256 keyed with
/// the token over [`CLIENT_CONTEXT`], the server's nonce, the client's
/// nonce (raw bytes) and the hello's software string.
pub fn client_mac(
    token: &[u8],
    server_nonce: &[u8],
    client_nonce: &[u8],
    software: &str,
) -> [u8; 32] {
    hmac_sha256(
        token,
        &[
            CLIENT_CONTEXT,
            server_nonce,
            client_nonce,
            software.as_bytes(),
        ],
    )
}

/// The proof a server sends in [`Message::Welcome`]: as [`client_mac`],
/// over [`SERVER_CONTEXT`].
pub fn server_proof(
    token: &[u8],
    server_nonce: &[u8],
    client_nonce: &[u8],
    software: &str,
) -> [u8; 32] {
    hmac_sha256(
        token,
        &[
            SERVER_CONTEXT,
            server_nonce,
            client_nonce,
            software.as_bytes(),
        ],
    )
}

/// Whether `proof_hex` is the [`server_proof`] of `token` for these
/// nonces and software string (compared in constant time).
pub fn proof_is_right(
    token: &str,
    server_nonce: &[u8],
    client_nonce: &[u8],
    software: &str,
    proof_hex: &str,
) -> bool {
    let want = server_proof(token.as_bytes(), server_nonce, client_nonce, software);
    from_hex(proof_hex).is_some_and(|p| constant_time_eq(&p, &want))
}

/// Compares without an early exit, so the time taken does not tell how
/// many leading bytes of a guessed authentication code were right (the
/// server's check of [`Message::Auth`], and `run --rendezvous`'s).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// `n` bytes from the kernel's cryptographically secure generator (for
/// nonces and one-time tokens).
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; n];
    crate::sys::random_bytes(&mut b)?;
    Ok(b)
}

/// A nonce in hex as the protocol carries it: its [`NONCE_LEN`] bytes, or
/// `None` for anything else.
pub fn nonce_from_hex(hex: &str) -> Option<Vec<u8>> {
    from_hex(hex).filter(|n| n.len() == NONCE_LEN)
}

/// The [`Message::Auth`] a client with `token`, which said hello with
/// `client_nonce` and `software`, answers a [`Message::Challenge`] of
/// `server_nonce_hex` with; `None` if that is not [`NONCE_LEN`] bytes of
/// hex.
pub fn answer_challenge(
    token: &str,
    server_nonce_hex: &str,
    client_nonce: &[u8],
    software: &str,
) -> Option<Message> {
    let server_nonce = nonce_from_hex(server_nonce_hex)?;
    Some(Message::Auth {
        mac: to_hex(&client_mac(
            token.as_bytes(),
            &server_nonce,
            client_nonce,
            software,
        )),
    })
}

/// Lowercase hex.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Bytes from hex (either case); `None` for an odd length or a non-hex
/// digit.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    t.chunks(2)
        .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

/// A frame that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length prefix is above [`MAX_FRAME`].
    #[error("a frame of {0} bytes is above the limit of {MAX_FRAME}")]
    TooLarge(u64),
    /// The body is not a valid message.
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// Encodes a message as a frame (length prefix + JSON).
pub fn encode(msg: &Message) -> Vec<u8> {
    // Serialising these plain types cannot fail (no maps with non-string
    // keys, no non-finite floats except jitter, which serde_json writes as
    // null rather than failing).
    let body = serde_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec());
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Decodes the first frame of `buf`: `Ok(None)` if more bytes are needed,
/// `Ok(Some((message, bytes used)))`, or an error. Never allocates more
/// than the body it parses (at most [`MAX_FRAME`]) and never panics,
/// whatever the bytes (property-tested).
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, FrameError> {
    let Some(len) = frame_len(buf)? else {
        return Ok(None);
    };
    let Some(body) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    decode_body(body).map(|m| Some((m, 4 + len)))
}

/// The body length announced by a frame's first 4 bytes, checked against
/// the limit; `None` with fewer than 4 bytes.
fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len as u64));
    }
    Ok(Some(len))
}

/// Parses a frame body.
///
/// serde's error quotes the peer's text (`unknown variant `...``): it is
/// made [`untrusted`] here, so that it reaches a record's reason, a
/// progress line, an export or a log escaped.
pub fn decode_body(body: &[u8]) -> Result<Message, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Malformed(untrusted(&e.to_string())))
}

/// The `version` field of a body that does not parse as a [`Message`] (a
/// hello from a different protocol version), if it has one.
pub fn version_of(body: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v.get("version")?.as_u64()
}

/// Describes bytes that should have been [`MAGIC`]: printable ASCII as
/// text, anything else in hex.
pub fn describe_bytes(b: &[u8]) -> String {
    if !b.is_empty() && b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        let hex: Vec<String> = b.iter().map(|c| format!("{c:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}

// ---------------------------------------------------------------------------
// Blocking frame I/O (the client side, and tests)
// ---------------------------------------------------------------------------

/// Writes a frame.
pub fn write_frame(w: &mut impl Write, msg: &Message) -> io::Result<()> {
    w.write_all(&encode(msg))
}

/// Reads one frame from a blocking stream whose read timeout is already
/// set: the whole frame must arrive before `deadline`. The body buffer is
/// allocated only after the length passed the limit.
pub fn read_frame_blocking(r: &mut impl Read, deadline: Instant) -> io::Result<Message> {
    let mut head = [0u8; 4];
    read_exact_by(r, &mut head, deadline)?;
    let len = frame_len(&head)
        .map_err(invalid)?
        .ok_or_else(|| invalid("short frame header"))?;
    let mut body = vec![0u8; len];
    read_exact_by(r, &mut body, deadline)?;
    decode_body(&body).map_err(invalid)
}

/// `read_exact` that gives up at `deadline` (the stream's read timeout
/// bounds each single read; this bounds the total).
pub fn read_exact_by(r: &mut impl Read, mut buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    while !buf.is_empty() {
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "timed out waiting for the peer",
            ));
        }
        match r.read(buf) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                ));
            }
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How long a continuous sender's write waits for room in its socket
/// buffer before it tries again (the socket's write timeout while it
/// streams; the kernel rounds it up to one clock tick, 4 ms at HZ=250).
/// The kernel wakes a writer blocked on a full TCP send buffer only once a
/// third of the buffer is free again; on a long path, where the bytes in
/// flight are bounded by that buffer, waiting for that leaves the pipe
/// short of full for much of each cycle. Trying again after this long
/// tops the buffer up as soon as there is room, as a sender that polls for
/// it does (iperf3).
pub const SEND_WAIT: Duration = Duration::from_millis(1);

/// `write_all` on a stream whose write timeout is short ([`SEND_WAIT`]):
/// a timeout means "try again", until nothing could be written for `idle`.
pub fn write_all_retrying(w: &mut impl Write, mut buf: &[u8], idle: Duration) -> io::Result<()> {
    let mut progress = Instant::now();
    while !buf.is_empty() {
        match w.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                progress = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                if progress.elapsed() >= idle {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// True for the errors a socket read timeout produces.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn invalid(e: impl ToString) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// The most characters of a peer's text (an `Error` message) that this
/// side shows.
pub const MAX_UNTRUSTED: usize = 512;

/// A text from the peer, fit to print on one line of a terminal or a
/// report: control and direction-changing characters escaped (`\n`,
/// `\u{1b}`), at most [`MAX_UNTRUSTED`] characters (then `…`). A server's
/// refusal may hold anything up to a frame's size.
pub fn untrusted(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_UNTRUSTED {
            out.push('…');
            break;
        }
        // One line: no line feed or tab either.
        if c == '\n' || c == '\t' || benchsuite_core::text::is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all_messages() -> Vec<Message> {
        vec![
            Message::Hello {
                version: PROTOCOL_VERSION,
                software: "benchsuite 0.1.0".into(),
                nonce: to_hex(&[5u8; NONCE_LEN]),
            },
            Message::Challenge {
                nonce: to_hex(&[7u8; NONCE_LEN]),
            },
            Message::Auth {
                mac: to_hex(&[9u8; 32]),
            },
            Message::Welcome {
                version: PROTOCOL_VERSION,
                software: "x".into(),
                max_streams: MAX_STREAMS,
                proof: Some(to_hex(&[6u8; 32])),
            },
            Message::Welcome {
                version: PROTOCOL_VERSION,
                software: "no token".into(),
                max_streams: MAX_STREAMS,
                proof: None,
            },
            Message::Error {
                code: ErrorCode::Auth,
                message: "wrong token".into(),
                version: 1,
            },
            Message::Start {
                spec: TestSpec {
                    block: 4096,
                    tcp_streams: 2,
                    udp_streams: 0,
                    udp_mode: UdpMode::Sink,
                    nodelay: true,
                },
            },
            Message::Ready {
                session: u64::MAX,
                udp_ports: vec![1, 65535],
            },
            Message::Attach {
                session: 7,
                role: Role::Echo,
            },
            Message::Attached,
            Message::UdpBatch { end_seq: vec![3] },
            Message::UdpStats {
                streams: vec![UdpBatchStats {
                    received: 1,
                    bytes: 2,
                    out_of_order: 3,
                    late: 4,
                    jitter_ns: 5.5,
                    first_ns: 6,
                    last_ns: 7,
                    first_bytes: 8,
                }],
            },
            Message::Stop,
            Message::Stopped {
                tcp_received: 1,
                tcp_sent: 2,
            },
            Message::Bye,
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in all_messages() {
            let f = encode(&m);
            assert!(f.len() <= 4 + MAX_FRAME);
            let (back, used) = decode(&f).unwrap().unwrap();
            assert_eq!(back, m);
            assert_eq!(used, f.len());
            // Every strict prefix asks for more bytes.
            for cut in 0..f.len() {
                assert_eq!(decode(&f[..cut]).unwrap(), None, "{m:?} cut at {cut}");
            }
            let mut r = &f[..];
            let got = read_frame_blocking(&mut r, Instant::now() + IO_TIMEOUT).unwrap();
            assert_eq!(got, m);
        }
    }

    #[test]
    fn oversized_and_malformed_frames_are_rejected() {
        let mut f = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        assert_eq!(decode(&f), Err(FrameError::TooLarge(MAX_FRAME as u64 + 1)));
        let mut r = &f[..];
        let e = read_frame_blocking(&mut r, Instant::now() + IO_TIMEOUT).unwrap_err();
        assert!(e.to_string().contains("above the limit"), "{e}");
        f = 5u32.to_be_bytes().to_vec();
        f.extend_from_slice(b"hello");
        assert!(matches!(decode(&f), Err(FrameError::Malformed(_))));
        let body = br#"{"type":"hello","version":9,"token":null,"software":"x","new":1}"#;
        assert!(decode_body(body).is_ok(), "unknown fields are ignored");
        // A version-1 hello (with its token) still parses, so the server
        // can name both versions when it refuses it.
        let v1 = br#"{"type":"hello","version":1,"token":"t","software":"benchsuite 0.1.0"}"#;
        assert!(matches!(
            decode_body(v1),
            Ok(Message::Hello { version: 1, .. })
        ));
        assert_eq!(version_of(br#"{"type":"hola","version":2}"#), Some(2));
        assert_eq!(version_of(b"garbage"), None);
    }

    #[test]
    fn specs_are_checked_against_the_limits() {
        let ok = TestSpec {
            block: 1,
            tcp_streams: 1,
            udp_streams: 0,
            udp_mode: UdpMode::Sink,
            nodelay: false,
        };
        assert!(ok.check().is_ok());
        let bad = |f: &dyn Fn(&mut TestSpec)| {
            let mut s = ok.clone();
            f(&mut s);
            s.check().unwrap_err()
        };
        assert!(bad(&|s| s.block = 0).contains("at least 1"));
        assert!(bad(&|s| s.tcp_streams = 0).contains("at least one stream"));
        assert!(bad(&|s| s.tcp_streams = MAX_STREAMS + 1).contains("limit"));
        assert!(bad(&|s| s.block = MAX_TCP_BLOCK + 1).contains("limit"));
        assert!(
            bad(&|s| {
                s.udp_streams = 1;
                s.block = MAX_UDP_PAYLOAD + 1
            })
            .contains("65507")
        );
        assert!(
            bad(&|s| {
                s.udp_streams = 1;
                s.block = 8
            })
            .contains("at least 16")
        );
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
    fn the_auth_mac_is_hmac_sha256_of_context_nonce_and_software() {
        // A known answer, computed independently (Python's hmac module):
        // hmac.new(b"token", b"benchsuite-net v2 auth" + bytes([1] * 32) + b"sw", sha256)
        assert_eq!(
            to_hex(&auth_mac(b"token", &[1u8; NONCE_LEN], "sw")),
            "4a9c37aa1ebaf0306f1401f231bbb540395566280644ecf707ba28f76d75b9ea"
        );
        // Every input matters.
        let nonce = [1u8; NONCE_LEN];
        let base = auth_mac(b"token", &nonce, "sw");
        assert_ne!(base, auth_mac(b"tokeN", &nonce, "sw"));
        assert_ne!(base, auth_mac(b"token", &[2u8; NONCE_LEN], "sw"));
        assert_ne!(base, auth_mac(b"token", &nonce, "sw2"));
    }

    #[test]
    fn the_v4_codes_are_hmac_sha256_of_context_both_nonces_and_software() {
        // Known answers, computed independently (Python's hmac module):
        // hmac.new(b"token", b"benchsuite-net v4 client" + bytes([1] * 32) + bytes([2] * 32) + b"sw", sha256)
        let (ns, nc) = ([1u8; NONCE_LEN], [2u8; NONCE_LEN]);
        let mac = client_mac(b"token", &ns, &nc, "sw");
        assert_eq!(
            to_hex(&mac),
            "deefc56aeb83e45439eeb6acfed4a93b549e7e94663abb5fe2dc36bc53da6d49"
        );
        // ...and b"benchsuite-net v4 server" for the proof.
        let proof = server_proof(b"token", &ns, &nc, "sw");
        assert_eq!(
            to_hex(&proof),
            "0d6f37bf72c05125e123d24635d911cbdee805d5e5d16ca430026c2280ffb39d"
        );
        // Every input matters, and the two sides' codes differ (neither
        // can be sent back as the other), as does the older scheme's.
        assert_ne!(mac, proof);
        assert_ne!(mac, auth_mac(b"token", &ns, "sw"));
        assert_ne!(mac, client_mac(b"tokeN", &ns, &nc, "sw"));
        assert_ne!(mac, client_mac(b"token", &nc, &ns, "sw"));
        assert_ne!(mac, client_mac(b"token", &ns, &ns, "sw"));
        assert_ne!(mac, client_mac(b"token", &ns, &nc, "sw2"));
        assert!(proof_is_right("token", &ns, &nc, "sw", &to_hex(&proof)));
        assert!(!proof_is_right("token", &ns, &nc, "sw", &to_hex(&mac)));
        assert!(!proof_is_right("tokeN", &ns, &nc, "sw", &to_hex(&proof)));
        assert!(!proof_is_right("token", &ns, &nc, "sw", "zz"));
        assert!(!proof_is_right("token", &ns, &nc, "sw", ""));
        assert_eq!(
            answer_challenge("token", &to_hex(&ns), &nc, "sw"),
            Some(Message::Auth { mac: to_hex(&mac) })
        );
        assert_eq!(answer_challenge("token", "abc", &nc, "sw"), None);
        assert_eq!(
            answer_challenge("token", &to_hex(&[1u8; 8]), &nc, "sw"),
            None
        );
        // The token is nowhere in what goes on the wire.
        let auth = encode(&answer_challenge("s3cret-token", &to_hex(&ns), &nc, "sw").unwrap());
        assert!(!String::from_utf8_lossy(&auth).contains("s3cret"));
    }

    #[test]
    fn count_reports_round_trip() {
        for (b, n) in [(0, 0), (1, u64::MAX), (u64::MAX, 7)] {
            assert_eq!(decode_report(&encode_report(b, n)), (b, n));
        }
        assert_eq!(encode_report(1, 2)[7], 1);
        assert_eq!(encode_report(1, 2)[15], 2);
    }

    #[test]
    fn hex_round_trips_and_rejects_junk() {
        assert_eq!(to_hex(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(from_hex("00abFF"), Some(vec![0, 0xab, 0xff]));
        assert_eq!(from_hex(""), Some(vec![]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_eq!(from_hex("+1"), None);
    }

    #[test]
    fn describe_bytes_prints_text_or_hex() {
        assert_eq!(describe_bytes(b"SSH-"), "\"SSH-\"");
        assert_eq!(describe_bytes(&[0, 255]), "bytes 00 ff");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary bytes never panic the decoder, and it never claims
        /// more bytes than it was given.
        #[test]
        fn decoder_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(Some((_, used))) = decode(&bytes) {
                prop_assert!(used <= bytes.len());
            }
            let _ = version_of(&bytes);
            let _ = describe_bytes(&bytes);
            let mut r = &bytes[..];
            let _ = read_frame_blocking(&mut r, Instant::now() + Duration::from_secs(1));
        }

        /// A valid length prefix followed by arbitrary (JSON-ish) bytes.
        #[test]
        fn decoder_never_panics_on_framed_garbage(body in "[{}\\[\\]\":,a-z0-9 ]{0,300}") {
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body.as_bytes());
            match decode(&f) {
                Ok(Some((_, used))) => prop_assert_eq!(used, f.len()),
                Ok(None) => prop_assert!(false, "a complete frame must decode or fail"),
                Err(FrameError::TooLarge(_)) => prop_assert!(false, "small frame called too large"),
                Err(FrameError::Malformed(_)) => {}
            }
        }

        /// Any length prefix above the limit is refused from the 4 header
        /// bytes alone, before a body is read or allocated.
        #[test]
        fn oversized_prefixes_are_refused_early(len in (MAX_FRAME as u32 + 1)..=u32::MAX) {
            let f = len.to_be_bytes();
            prop_assert_eq!(decode(&f), Err(FrameError::TooLarge(u64::from(len))));
        }
    }
}
