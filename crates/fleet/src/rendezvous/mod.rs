//! Where the ranks of `run --net-pairs` meet (the protocol is in
//! `pairing.rs`): a [`Store`] of small named texts, published atomically.
//!
//! - [`DirStore`]: the rendezvous directory of `--output-dir` on a file
//!   system all ranks share; a name is a file, written to a temporary file
//!   and renamed.
//! - `--rendezvous HOST:PORT` (no shared file system): rank 0 serves a
//!   [`MeetingPoint`] on HOST:PORT, an in-memory store, and the other
//!   ranks reach it through a [`Remote`].
//!
//! # The meeting point's wire format (version 2)
//!
//! Over TCP, each side first sends the 4 bytes [`MAGIC`] (`BSRV`), then
//! *frames*: a 4-byte big-endian length `n` and `n` bytes of UTF-8 JSON,
//! one [`Msg`] tagged by `"op"`. The client speaks first:
//!
//! ```text
//! rank                                     meeting point (rank 0)
//! hello {version, nonce: Nc, job, world}  →
//!                                    ←     challenge {nonce: Ns}         |  error
//! auth {mac}                         →
//!                                    ←     welcome {proof, instance}     |  error
//! put {name, text} | get {name} | remove {name} | list {since}   →
//!                                    ←     ok | value {text} | names {version, names} | error
//! ```
//!
//! A listing is sent whole only when a name came or went since the
//! version the rank holds (`since`); heartbeats rewrite texts, so a rank
//! waiting at a barrier mostly gets `names: null`.
//!
//! Both sides prove that they know the job's token, which never travels,
//! the rank first (as a `benchsuite-net` client proves itself to the
//! server): with `K = auth_mac(token, 32 zero bytes, KEY_CONTEXT)` (the
//! HMAC-SHA256 of `benchsuite-net`'s protocol v2,
//! [`benchsuite_net::proto::auth_mac`]), `mac = auth_mac(K, Nc‖Ns, "rank")`
//! and `proof = auth_mac(K, Nc‖Ns, "meeting point")`, each compared in
//! constant time; the nonces are 32 random bytes in hex. The meeting
//! point sends its proof only to a rank whose `mac` passed, so a client
//! that merely reaches the port gets nothing to test guessed tokens
//! against; the rank checks the proof before it sends anything else. A
//! fake meeting point at HOST:PORT gets one `mac` per connection, which
//! can be tested offline against guesses: hence the token's minimum
//! length. `K` is derived so that neither side answers anything a
//! `benchsuite-net` server (which takes the same token) would accept.
//!
//! The hello names the rank's job (its id and step, as the rendezvous
//! directory does) and world size; the meeting point welcomes only ranks
//! of its own job, and refuses another's naming both. `instance` is
//! random per meeting point: a rank that finds another one behind
//! HOST:PORT after it published there knows that rank 0 restarted and
//! what it published is lost.
//!
//! # Limits
//!
//! A frame above [`MAX_HANDSHAKE_FRAME`] before the `welcome` (above
//! [`MAX_FRAME`] after) is refused from its length prefix, before anything
//! is allocated; the handshake must end within [`HANDSHAKE`] of the
//! accept, a request arrive within [`IDLE`]; at most [`MAX_PENDING`]
//! connections await authentication (when all are taken, a new one closes
//! the oldest of the address with the most, so idle or trickling clients
//! cannot keep a rank out, while the many ranks of one node connecting at
//! once all get in) and [`MAX_CONNECTIONS`] plus the world size are open
//! at once (past it, a new one is closed at once); a failed
//! authentication is answered after [`REFUSAL_DELAY`]. The world is at
//! most [`MAX_WORLD`] ranks, and rank 0's limit of open files must hold a
//! connection per rank (its soft limit is raised to the hard one).
//! The store holds at most [`MAX_ENTRIES`] names of at most [`MAX_NAME`]
//! bytes (`[A-Za-z0-9._-]`), each text at most [`MAX_VALUE`] bytes,
//! [`MAX_BYTES`] in all. Each connection has a thread of its own, so a
//! slow or hostile client stalls nobody else.

mod client;
mod dir;
mod error;
mod server;
mod wire;

pub use client::*;
pub use dir::*;
pub use error::{StartError, StoreError};
pub use server::*;
pub use wire::*;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use benchsuite_net::proto::{
    NONCE_LEN, auth_mac, constant_time_eq, from_hex, is_timeout, random_bytes, to_hex,
};
use serde::{Deserialize, Serialize};

/// The 4 bytes each side sends first.
pub const MAGIC: [u8; 4] = *b"BSRV";
/// The meeting point's protocol version.
pub const VERSION: u32 = 2;
/// The largest frame before the `welcome` (hello, auth), in bytes.
pub const MAX_HANDSHAKE_FRAME: usize = 1024;
/// The largest request frame after the `welcome`, in bytes.
pub const MAX_FRAME: usize = 1024 * 1024;
/// The largest reply frame a rank reads (a listing), in bytes.
pub const MAX_REPLY: usize = 16 * 1024 * 1024;
/// The most names the store holds.
pub const MAX_ENTRIES: usize = 65_536;
/// The longest name, in bytes.
pub const MAX_NAME: usize = 128;
/// The longest text, in bytes.
pub const MAX_VALUE: usize = 256 * 1024;
/// The most bytes (names and texts) the store holds.
pub const MAX_BYTES: usize = 64 * 1024 * 1024;
/// The most entries one rank keeps in the store at once, with room to
/// spare: its heartbeat, `rR.json`, failure and leaving markers, and per
/// round (two at most) two step markers (earlier steps' are removed) and
/// one round marker.
pub const ENTRIES_PER_RANK: usize = 16;
/// The largest world a meeting point serves: each rank's entries
/// ([`ENTRIES_PER_RANK`], 16 KiB in all at most) fit [`MAX_ENTRIES`] and
/// [`MAX_BYTES`].
pub const MAX_WORLD: u64 = (MAX_ENTRIES / ENTRIES_PER_RANK) as u64;
/// The most connections awaiting authentication.
pub const MAX_PENDING: usize = 64;
/// The most connections open at once, besides one per rank.
pub const MAX_CONNECTIONS: usize = 256;
/// The shortest token `--rendezvous` takes, in characters: a fake meeting
/// point gets one authentication code per connection to test guesses
/// against offline.
pub const MIN_TOKEN_LEN: usize = benchsuite_net::MIN_TOKEN_LEN;
/// From the accept to the `welcome`.
pub const HANDSHAKE: Duration = Duration::from_secs(5);
/// The longest wait for an authenticated rank's next request.
pub const IDLE: Duration = Duration::from_secs(120);
/// The wait before a failed authentication is answered.
pub const REFUSAL_DELAY: Duration = Duration::from_millis(200);
/// How long a failed rank 0 waits for the leaving of a rank that wrote
/// its failure marker.
const LEFT_GRACE: Duration = Duration::from_secs(2);
/// How long a rank that exits retries its last markers ([`Put::Last`]).
pub const LAST_WORDS: Duration = Duration::from_secs(5);
/// The longest wait for a reply (a rank's side).
const REPLY: Duration = Duration::from_secs(10);
/// How often blocked reads look at the stop flag.
const POLL: Duration = Duration::from_millis(200);
/// What the key is derived with.
const KEY_CONTEXT: &str = "benchsuite rendezvous v1 key";
/// How long a failed rank 0 keeps serving, at most, so that a rank not
/// seen yet (no heartbeat) learns of its failure; a rank whose heartbeat
/// beats is waited for as long as it does.
pub const LINGER: Duration = Duration::from_secs(30);
const SERVER_SAYS: &str = "meeting point";
const RANK_SAYS: &str = "rank";

/// How a text is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// A heartbeat: one try, not synced; a missed one is only late.
    Beat,
    /// Synced to disk (a directory), retried until the meeting point
    /// answers or `--rendezvous-timeout` (a meeting point).
    Durable,
    /// A rank's last words as it exits (its failure marker, its leaving):
    /// synced, but retried for [`LAST_WORDS`] at most, since a meeting
    /// point that is gone by then (rank 0 ended) has nobody left to tell.
    Last,
    /// A secret (a token): mode 0600 in a directory; never sent to a
    /// meeting point.
    Secret,
}

/// Where the ranks meet: named texts, each published atomically (a reader
/// sees the old text or the new one).
pub trait Store: Send + Sync {
    /// Publishes `text` as `name`.
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), StoreError>;
    /// The text of `name`; the error says why not
    /// ([`StoreError::Absent`] when it is not there).
    fn get(&self, name: &str) -> Result<String, StoreError>;
    /// Removes `name`; an absent one is no error.
    fn remove(&self, name: &str) -> Result<(), StoreError>;
    /// The names now; an error only when the store is lost for good.
    fn list(&self) -> Result<HashSet<String>, StoreError>;
    /// Where, for messages: `in DIR`, `at the meeting point HOST:PORT`.
    fn place(&self) -> String;
    /// Where, for the report: DIR, or HOST:PORT.
    fn location(&self) -> String;
    /// The flag that sets it.
    fn flag(&self) -> &'static str;
    /// What is wrong with the store now, if anything (said along with a
    /// rank given up on).
    fn trouble(&self) -> Option<String> {
        None
    }
    /// Whether it answered the last request: while it does not, the
    /// other ranks' heartbeats cannot be seen, and nobody is given up on
    /// for a silent one (the store's own timeout applies).
    fn answering(&self) -> bool {
        true
    }
    /// Whether everything in it was written during this run: a meeting
    /// point lives as long as rank 0's run (a restarted rank 0 serves a
    /// new, empty one), while a directory keeps earlier runs' files.
    fn fresh(&self) -> bool {
        false
    }
}

/// `--rendezvous HOST:PORT`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendezvous {
    pub host: String,
    pub port: u16,
    /// As given, for messages.
    pub given: String,
}

impl Rendezvous {
    /// Parses HOST:PORT (`[v6]:PORT` for an IPv6 address); refuses an
    /// unspecified or multicast address, which no rank can connect to.
    pub fn parse(v: &str) -> Result<Rendezvous, benchsuite_core::ValueError> {
        Self::parse_text(v).map_err(Into::into)
    }

    fn parse_text(v: &str) -> Result<Rendezvous, String> {
        let bad = || {
            format!(
                "invalid value `{v}` for --rendezvous: expected HOST:PORT, e.g. benchsuite-0.benchsuite:29400 or 10.0.0.1:29400 ([ADDR]:PORT for IPv6)"
            )
        };
        let (host, port) = v.rsplit_once(':').ok_or_else(bad)?;
        let host = match host.strip_prefix('[') {
            Some(h) => h.strip_suffix(']').ok_or_else(bad)?,
            None if host.contains(':') => return Err(bad()),
            None => host,
        };
        let port: u16 = port.parse().ok().filter(|&p| p != 0).ok_or_else(bad)?;
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '/') {
            return Err(bad());
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            check_ip(v, ip)?;
        }
        Ok(Rendezvous {
            host: host.to_string(),
            port,
            given: v.to_string(),
        })
    }

    fn resolve(&self) -> io::Result<Vec<SocketAddr>> {
        Ok((self.host.as_str(), self.port).to_socket_addrs()?.collect())
    }
}

/// Refuses a world whose entries cannot all fit in the store (see
/// [`MAX_WORLD`]), before anything is published.
pub fn check_world(given: &str, world: u64) -> Result<(), benchsuite_core::ValueError> {
    check_world_text(given, world).map_err(Into::into)
}

fn check_world_text(given: &str, world: u64) -> Result<(), String> {
    if world > MAX_WORLD {
        return Err(format!(
            "--rendezvous {given}: a world of {world} ranks is more than the meeting point holds ({MAX_WORLD}); give the ranks --output-dir DIR on a file system they all share instead"
        ));
    }
    Ok(())
}

/// Files rank 0 needs open besides one connection per rank: those
/// awaiting authentication ([`MAX_PENDING`]), its listener, its own files.
const FILES_BESIDES_RANKS: u64 = MAX_PENDING as u64 + 32;

/// Refuses a world whose connections (one per rank, kept open) cannot fit
/// under this process's limit of open files (`ulimit -n`), once its soft
/// limit is raised to the hard one.
fn check_fd_limit(given: &str, world: u64) -> Result<(), String> {
    let need = world.saturating_add(FILES_BESIDES_RANKS);
    match raise_fd_limit() {
        Some(n) if n < need => Err(format!(
            "--rendezvous {given}: the meeting point keeps a connection per rank open: {world} ranks need about {need} open files, and this process may open at most {n} (ulimit -Hn); raise the hard limit on rank 0 (e.g. LimitNOFILE, or `ulimit -n {need}` as root)"
        )),
        _ => Ok(()),
    }
}

/// Raises this process's soft limit of open files to its hard limit, and
/// returns the soft limit then (`None`: unlimited or unknown).
fn raise_fd_limit() -> Option<u64> {
    benchsuite_net::raise_open_file_limit().and_then(|(soft, _)| soft)
}

fn check_ip(given: &str, ip: IpAddr) -> Result<(), String> {
    if ip.is_unspecified() || ip.is_multicast() {
        return Err(format!(
            "--rendezvous {given}: {ip} is an unspecified or multicast address; give the address (or a name of it) of rank 0's host that the other ranks connect to"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
