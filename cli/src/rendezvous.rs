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
pub const MIN_TOKEN_LEN: usize = 16;
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
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), String>;
    /// The text of `name`; the error says why not (absent included).
    fn get(&self, name: &str) -> Result<String, String>;
    /// Removes `name`; an absent one is no error.
    fn remove(&self, name: &str) -> Result<(), String>;
    /// The names now; an error only when the store is lost for good.
    fn list(&self) -> Result<HashSet<String>, String>;
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

// ---------------------------------------------------------------------------
// A shared directory
// ---------------------------------------------------------------------------

/// The rendezvous directory of `--output-dir`.
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// The store in `dir`, created.
    pub fn create(dir: PathBuf) -> io::Result<DirStore> {
        fs::create_dir_all(&dir)?;
        Ok(DirStore { dir })
    }
}

impl Store for DirStore {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), String> {
        publish(
            &self.dir.join(name),
            text,
            how == Put::Secret,
            how != Put::Beat,
        )
    }

    fn get(&self, name: &str) -> Result<String, String> {
        let path = self.dir.join(name);
        fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn remove(&self, name: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(format!("cannot remove {}: {e}", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// A listing, not a look-up per file: on NFS a failed look-up may be
    /// cached for many seconds, while a listing is revalidated when the
    /// directory changed. An unreadable directory lists nothing.
    fn list(&self) -> Result<HashSet<String>, String> {
        Ok(fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn place(&self) -> String {
        format!("in {}", self.dir.display())
    }

    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn flag(&self) -> &'static str {
        "--output-dir"
    }
}

/// Writes `path` atomically (a temporary file renamed over it); a
/// `private` file is readable by this user only; `sync`ed to disk before
/// the rename.
pub fn publish(path: &Path, text: &str, private: bool, sync: bool) -> Result<(), String> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> io::Result<()> {
        let mut o = fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt as _;
            o.mode(0o600);
        }
        let mut f = o.open(&tmp)?;
        f.write_all(text.as_bytes())?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

// ---------------------------------------------------------------------------
// The wire
// ---------------------------------------------------------------------------

/// One message of the meeting point's protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Msg {
    Hello {
        version: u32,
        nonce: String,
        /// The rank's job: its id and step.
        #[serde(default)]
        job: String,
        #[serde(default)]
        world: u64,
    },
    Challenge {
        nonce: String,
    },
    Auth {
        mac: String,
    },
    Welcome {
        proof: String,
        /// Random per meeting point.
        instance: String,
    },
    Put {
        name: String,
        text: String,
    },
    Get {
        name: String,
    },
    Remove {
        name: String,
    },
    /// The names; `since`: the version of the names the rank has, to get
    /// `names: null` while they are the same (a text rewritten, such as a
    /// heartbeat, leaves them the same).
    List {
        #[serde(default)]
        since: Option<u64>,
    },
    Ok,
    Value {
        text: Option<String>,
    },
    Names {
        version: u64,
        names: Option<Vec<String>>,
    },
    Error {
        message: String,
    },
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    Io(io::Error),
    /// The length prefix is above the limit (nothing was allocated).
    TooLarge {
        len: u64,
        max: usize,
    },
    Malformed(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::TooLarge { len, max } => {
                write!(f, "a frame of {len} bytes is above the limit of {max}")
            }
            FrameError::Malformed(e) => write!(f, "malformed message: {e}"),
        }
    }
}

/// A frame's body length from its prefix, checked against `max`.
pub fn frame_len(head: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(head);
    usize::try_from(len)
        .ok()
        .filter(|&n| n <= max)
        .ok_or(FrameError::TooLarge {
            len: u64::from(len),
            max,
        })
}

/// `read_exact` that gives up at `deadline`, or when `stop` is set (the
/// stream's read timeout bounds each single read).
fn read_by(
    r: &mut impl Read,
    buf: &mut [u8],
    deadline: Instant,
    stop: Option<&AtomicBool>,
) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(io::Error::other("the meeting point stops"));
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "timed out waiting for the peer",
            ));
        }
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads one frame of at most `max` bytes, whole before `deadline`; the
/// body is allocated only after its length passed the limit.
pub fn read_frame(
    r: &mut impl Read,
    max: usize,
    deadline: Instant,
    stop: Option<&AtomicBool>,
) -> Result<Msg, FrameError> {
    let mut head = [0u8; 4];
    read_by(r, &mut head, deadline, stop).map_err(FrameError::Io)?;
    let len = frame_len(head, max)?;
    let mut body = vec![0u8; len];
    read_by(r, &mut body, deadline, stop).map_err(FrameError::Io)?;
    serde_json::from_slice(&body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// A frame: the length prefix and the JSON.
pub fn encode(msg: &Msg) -> Vec<u8> {
    let body = serde_json::to_vec(msg).unwrap_or_default();
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The job a rank belongs to: its id and step (the restart of a requeued
/// Slurm job included), and its world size. Ranks meet only within one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub world: u64,
}

impl std::fmt::Display for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job {} with {} rank(s)", self.id, self.world)
    }
}

/// What the authentication codes cover: both nonces.
fn transcript(client: &[u8], server: &[u8]) -> Vec<u8> {
    [client, server].concat()
}
/// The meeting point's key, derived from the job's token.
fn derive_key(token: &str) -> [u8; 32] {
    auth_mac(token.as_bytes(), &[0u8; NONCE_LEN], KEY_CONTEXT)
}

/// The most characters of a text from a peer not authenticated yet that
/// a rank shows.
pub const MAX_UNTRUSTED: usize = 512;

/// A text from a peer not authenticated yet, fit to print on one line:
/// control and direction-changing characters escaped (`\n`, `\u{1b}`),
/// at most [`MAX_UNTRUSTED`] characters (then `…`).
pub fn untrusted(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_UNTRUSTED {
            out.push('…');
            break;
        }
        // Zero-width and bidirectional controls (which reorder a line).
        let hidden = matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        );
        if c.is_control() || hidden {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `name` may be stored: 1 to [`MAX_NAME`] bytes of
/// `[A-Za-z0-9._-]`, not starting with a dot.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

// ---------------------------------------------------------------------------
// The meeting point (rank 0)
// ---------------------------------------------------------------------------

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
    pub fn parse(v: &str) -> Result<Rendezvous, String> {
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
pub fn check_world(given: &str, world: u64) -> Result<(), String> {
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
#[cfg(unix)]
#[allow(clippy::useless_conversion, reason = "rlim_t is i64 on some systems")]
fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the one passed, which
    // lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the `rlimit` passed, which lives for the
        // call; a soft limit up to the hard one needs no privilege (where
        // it is refused, as macOS refuses one above OPEN_MAX, the old one
        // stays).
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    (lim.rlim_cur != libc::RLIM_INFINITY).then(|| u64::try_from(lim.rlim_cur).unwrap_or(u64::MAX))
}

#[cfg(not(unix))]
fn raise_fd_limit() -> Option<u64> {
    None
}

fn check_ip(given: &str, ip: IpAddr) -> Result<(), String> {
    if ip.is_unspecified() || ip.is_multicast() {
        return Err(format!(
            "--rendezvous {given}: {ip} is an unspecified or multicast address; give the address (or a name of it) of rank 0's host that the other ranks connect to"
        ));
    }
    Ok(())
}

/// One stored text.
#[derive(Debug)]
struct Entry {
    text: String,
    at: Instant,
}

/// The store's contents.
#[derive(Debug, Default)]
struct Table {
    map: BTreeMap<String, Entry>,
    /// Bytes of names and texts.
    bytes: usize,
    /// Changes when a name comes or goes.
    version: u64,
}

impl Table {
    /// An empty table whose first version is random, so that a rank's
    /// cached version never matches another meeting point's.
    fn new() -> Table {
        let version = random_bytes(8)
            .ok()
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        Table {
            version,
            ..Table::default()
        }
    }
}

/// The store's contents and the meeting point's state.
#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    key: [u8; 32],
    stop: AtomicBool,
    started: Instant,
    /// The last refused connection: when, from where, why.
    refused: Mutex<Option<(Instant, SocketAddr, String)>>,
    /// The connections awaiting authentication, oldest first.
    pending: Mutex<std::collections::VecDeque<(u64, IpAddr, TcpStream)>>,
    given: String,
    /// The job it serves.
    job: Job,
    /// Random per meeting point (in the `welcome`).
    instance: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Applies a request to the store.
    fn apply(&self, msg: Msg) -> Msg {
        let mut t = lock(&self.table);
        match msg {
            Msg::Put { name, text } => {
                if !valid_name(&name) {
                    return error(format!(
                        "invalid name ({} bytes): 1 to {MAX_NAME} bytes of A-Z a-z 0-9 . _ -, not starting with a dot",
                        name.len()
                    ));
                }
                if text.len() > MAX_VALUE {
                    return error(format!(
                        "{name}: {} bytes is above the limit of {MAX_VALUE}",
                        text.len()
                    ));
                }
                let old = t.map.get(&name).map(|e| name.len() + e.text.len());
                if old.is_none() && t.map.len() >= MAX_ENTRIES {
                    return error(format!("the store is full ({MAX_ENTRIES} names)"));
                }
                let bytes = t.bytes - old.unwrap_or(0) + name.len() + text.len();
                if bytes > MAX_BYTES {
                    return error(format!("the store is full ({MAX_BYTES} bytes)"));
                }
                t.bytes = bytes;
                if old.is_none() {
                    t.version = t.version.wrapping_add(1);
                }
                t.map.insert(
                    name,
                    Entry {
                        text,
                        at: Instant::now(),
                    },
                );
                Msg::Ok
            }
            Msg::Get { name } => Msg::Value {
                text: t.map.get(&name).map(|e| e.text.clone()),
            },
            Msg::Remove { name } => {
                if let Some(e) = t.map.remove(&name) {
                    t.bytes -= name.len() + e.text.len();
                    t.version = t.version.wrapping_add(1);
                }
                Msg::Ok
            }
            Msg::List { since } => Msg::Names {
                version: t.version,
                names: (since != Some(t.version)).then(|| t.map.keys().cloned().collect()),
            },
            other => error(format!("unexpected {} request", op_name(&other))),
        }
    }

    fn refuse(&self, peer: SocketAddr, why: &str) {
        *lock(&self.refused) = Some((Instant::now(), peer, why.to_string()));
    }
}

fn error(message: String) -> Msg {
    Msg::Error { message }
}

fn op_name(m: &Msg) -> &'static str {
    match m {
        Msg::Hello { .. } => "hello",
        Msg::Challenge { .. } => "challenge",
        Msg::Auth { .. } => "auth",
        Msg::Welcome { .. } => "welcome",
        Msg::Put { .. } => "put",
        Msg::Get { .. } => "get",
        Msg::Remove { .. } => "remove",
        Msg::List { .. } => "list",
        Msg::Ok => "ok",
        Msg::Value { .. } => "value",
        Msg::Names { .. } => "names",
        Msg::Error { .. } => "error",
    }
}

/// Decrements a counter when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Takes a place below `max` in `count`, or `None`.
fn take_slot(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot(count.clone()))
}

/// Rank 0's meeting point: serves the store on HOST:PORT until
/// [`MeetingPoint::close`].
pub struct MeetingPoint {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MeetingPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeetingPoint")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MeetingPoint {
    /// Binds HOST:PORT (an address of this host) and serves the ranks of
    /// `job`. A HOST that does not resolve yet (a DNS record that comes
    /// with the pod) is looked up again until `wait`.
    pub fn start(
        rdv: &Rendezvous,
        token: &str,
        job: &Job,
        wait: Duration,
    ) -> Result<MeetingPoint, String> {
        let given = &rdv.given;
        check_world(given, job.world)?;
        check_fd_limit(given, job.world)?;
        let until = Instant::now() + wait;
        let mut noted = false;
        let mut addrs = loop {
            match rdv.resolve() {
                Ok(a) if !a.is_empty() => break a,
                r => {
                    let why = r.err().map_or("no address".to_string(), |e| e.to_string());
                    if Instant::now() >= until {
                        return Err(format!(
                            "--rendezvous {given}: cannot resolve {}: {why}",
                            rdv.host
                        ));
                    }
                    if !noted {
                        eprintln!(
                            "note: --rendezvous {given}: cannot resolve {} yet ({why}); trying again until --rendezvous-timeout",
                            rdv.host
                        );
                        noted = true;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        };
        // An address the other hosts can reach first; a host name that
        // resolves to loopback only (Debian's /etc/hosts maps the host's
        // own name to 127.0.1.1) serves this host alone.
        addrs.sort_by_key(|a| a.ip().is_loopback());
        if job.world > 1
            && rdv.host.parse::<IpAddr>().is_err()
            && addrs.iter().all(|a| a.ip().is_loopback())
        {
            eprintln!(
                "warning: --rendezvous {given}: {} resolves to loopback only ({}): ranks on other hosts cannot reach the meeting point; give an address (or a name) of this host that they reach",
                rdv.host,
                addrs[0].ip()
            );
        }
        let mut first_err = None;
        let mut listener = None;
        for a in &addrs {
            check_ip(given, a.ip())?;
            match TcpListener::bind(a) {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(e) => {
                    first_err.get_or_insert((*a, e));
                }
            }
        }
        let listener = match (listener, first_err) {
            (Some(l), _) => l,
            (None, Some((a, e))) => {
                return Err(match e.kind() {
                    io::ErrorKind::AddrNotAvailable => format!(
                        "--rendezvous {given}: {} is not an address of this host; rank 0 serves the meeting point, so HOST must name rank 0's own host (e.g. its pod's name under a headless Service)",
                        a.ip()
                    ),
                    io::ErrorKind::AddrInUse => format!(
                        "--rendezvous {given}: port {} on {} is in use (another run?); give another PORT",
                        a.port(),
                        a.ip()
                    ),
                    _ => format!("--rendezvous {given}: cannot listen on {a}: {e}"),
                });
            }
            (None, None) => return Err(format!("--rendezvous {given}: no address")),
        };
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--rendezvous {given}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--rendezvous {given}: {e}"))?;
        let shared = Arc::new(Shared {
            table: Mutex::new(Table::new()),
            key: derive_key(token),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            refused: Mutex::new(None),
            pending: Mutex::new(std::collections::VecDeque::new()),
            given: given.clone(),
            job: job.clone(),
            instance: random_bytes(8)
                .map(|b| to_hex(&b))
                .map_err(|e| format!("--rendezvous {given}: cannot read random bytes: {e}"))?,
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name("rendezvous-accept".into())
            .spawn(move || accept_loop(&listener, &s))
            .map_err(|e| format!("--rendezvous {given}: cannot start a thread: {e}"))?;
        Ok(MeetingPoint {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store, as this rank (rank 0) uses it: directly, in memory.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::new(Served {
            shared: self.shared.clone(),
        })
    }

    /// Serves until every rank of the job but `me` has left
    /// (`rQ-NONCE.left`, NONCE that of its heartbeat `rQ.alive` or its
    /// `rQ.json`: another run's marker does not count), or its heartbeat
    /// has been silent for `timeout` (or `cancel`), then stops. After this
    /// rank `failed`, a rank that failed too (`rQ.failed`: it learnt of
    /// it) counts as gone, and a rank never seen (no heartbeat) is waited
    /// for [`LINGER`] at most: a rank whose heartbeat beats learns of the
    /// failure when it reaches its network phase, however long its other
    /// benchmarks take.
    pub fn close(self, me: u64, timeout: Duration, cancel: &AtomicBool, failed: bool) {
        self.close_within(me, timeout, cancel, failed, LINGER);
    }

    /// [`MeetingPoint::close`], waiting `linger` for a rank never seen.
    fn close_within(
        mut self,
        me: u64,
        timeout: Duration,
        cancel: &AtomicBool,
        failed: bool,
        linger: Duration,
    ) {
        let mut said = false;
        let since = Instant::now();
        loop {
            let mut pending = self.awaited(me, timeout, failed);
            if failed && since.elapsed() >= linger {
                pending.retain(|&(_, seen)| seen);
            }
            if pending.is_empty() || cancel.load(Ordering::SeqCst) {
                break;
            }
            if !said && (failed || since.elapsed() >= Duration::from_secs(2)) {
                let list = |which: &dyn Fn(bool) -> bool| {
                    let l: Vec<String> = pending
                        .iter()
                        .filter(|p| which(p.1))
                        .map(|p| p.0.to_string())
                        .collect();
                    l.join(", ")
                };
                let all = list(&|_| true);
                if failed {
                    let unseen = list(&|seen| !seen);
                    let unseen = if unseen.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; rank(s) {unseen} not seen yet: {} s at most, unless a heartbeat comes",
                            linger.as_secs()
                        )
                    };
                    eprintln!(
                        "rank {me}: keeping the meeting point {} up so that rank(s) {all} learn of this failure: while a rank's heartbeat goes on (until it leaves, or is silent for --rendezvous-timeout){unseen}",
                        self.shared.given
                    );
                } else {
                    eprintln!(
                        "rank {me}: keeping the meeting point {} until rank(s) {all} leave (or are silent for --rendezvous-timeout)",
                        self.shared.given
                    );
                }
                said = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop();
    }

    /// The ranks [`MeetingPoint::close`] still waits for, and whether
    /// each was seen (its heartbeat is there).
    fn awaited(&self, me: u64, timeout: Duration, failed: bool) -> Vec<(u64, bool)> {
        let t = &lock(&self.shared.table).map;
        let nonce_of = |name: String| {
            let e = t.get(&name)?;
            let v: serde_json::Value = serde_json::from_str(&e.text).ok()?;
            v["nonce"].as_str().map(str::to_string)
        };
        (0..self.shared.job.world)
            .filter(|&q| q != me)
            .filter_map(|q| {
                let left = [format!("r{q}.alive"), format!("r{q}.json")]
                    .into_iter()
                    .filter_map(nonce_of)
                    .any(|n| t.contains_key(&format!("r{q}-{n}.left")));
                // A rank that learnt of this rank's failure writes its own
                // failure marker and then, as it exits, its leaving: that
                // is given a moment to arrive (else the rank's last words
                // would find the meeting point gone).
                let fell = failed
                    && t.get(&format!("r{q}.failed"))
                        .is_some_and(|e| e.at.elapsed() >= LEFT_GRACE);
                let heartbeat = t.get(&format!("r{q}.alive"));
                let beat = heartbeat.map_or(self.shared.started, |e| e.at);
                (!left && !fell && beat.elapsed() < timeout).then_some((q, heartbeat.is_some()))
            })
            .collect()
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MeetingPoint {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let open = Arc::new(AtomicUsize::new(0));
    let max_open = usize::try_from(shared.job.world)
        .unwrap_or(usize::MAX)
        .saturating_add(MAX_CONNECTIONS);
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id: u64 = 0;
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                threads.retain(|t| !t.is_finished());
                let Some(o) = take_slot(&open, max_open) else {
                    // Over the limit: closed at once.
                    drop(stream);
                    continue;
                };
                let Ok(clone) = stream.try_clone() else {
                    continue;
                };
                next_id += 1;
                let id = next_id;
                admit(&mut lock(&shared.pending), id, peer.ip(), clone);
                let s = shared.clone();
                let spawned = std::thread::Builder::new()
                    .name("rendezvous-conn".into())
                    .spawn(move || {
                        let _open = o;
                        let pending = Pending { shared: &s, id };
                        serve_conn(stream, peer, &s, pending);
                    });
                if let Ok(t) = spawned {
                    threads.push(t);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            // EMFILE and friends: back off instead of spinning.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

/// Queues a connection awaiting authentication; when [`MAX_PENDING`]
/// await, closes the oldest of the address with the most, so that one
/// source cannot crowd out the others' handshakes (and below that, many
/// ranks of one node connecting at once are all let in).
fn admit(
    q: &mut std::collections::VecDeque<(u64, IpAddr, TcpStream)>,
    id: u64,
    ip: IpAddr,
    stream: TcpStream,
) {
    let count = |ip: IpAddr| q.iter().filter(|e| e.1 == ip).count();
    let at = if q.len() >= MAX_PENDING {
        let most = q.iter().map(|e| count(e.1)).max().unwrap_or(0);
        q.iter().position(|e| count(e.1) == most)
    } else {
        None
    };
    if let Some((_, _, oldest)) = at.and_then(|at| q.remove(at)) {
        // Its thread reads an end of file and leaves.
        let _ = oldest.shutdown(std::net::Shutdown::Both);
    }
    q.push_back((id, ip, stream));
}

/// A connection's place among those awaiting authentication, given up
/// when dropped.
struct Pending<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).retain(|(i, _, _)| *i != self.id);
    }
}

/// One rank's connection: the handshake, then requests.
fn serve_conn(mut s: TcpStream, peer: SocketAddr, shared: &Shared, pending: Pending<'_>) {
    if s.set_nonblocking(false).is_err()
        || s.set_read_timeout(Some(POLL)).is_err()
        || s.set_write_timeout(Some(HANDSHAKE)).is_err()
    {
        return;
    }
    let _ = s.set_nodelay(true);
    let stop = Some(&shared.stop);
    let by = Instant::now() + HANDSHAKE;
    let mut magic = [0u8; 4];
    if read_by(&mut s, &mut magic, by, stop).is_err() || magic != MAGIC {
        return;
    }
    let hello = read_frame(&mut s, MAX_HANDSHAKE_FRAME, by, stop);
    let _ = s.write_all(&MAGIC);
    let (client_nonce, job) = match hello {
        Ok(Msg::Hello {
            version,
            nonce,
            job,
            world,
        }) if version == VERSION => match from_hex(&nonce).filter(|n| n.len() == NONCE_LEN) {
            Some(n) => (n, Job { id: job, world }),
            None => {
                let _ = reply(
                    &mut s,
                    &error("the hello's nonce is not 32 bytes of hex".into()),
                );
                return;
            }
        },
        Ok(Msg::Hello { version, .. }) => {
            let _ = reply(
                &mut s,
                &error(format!(
                    "the meeting point speaks version {VERSION}, this rank {version}: give every rank the same benchsuite"
                )),
            );
            return;
        }
        Ok(other) => {
            let _ = reply(
                &mut s,
                &error(format!("expected hello, got {}", op_name(&other))),
            );
            return;
        }
        Err(e) => {
            if matches!(e, FrameError::TooLarge { .. } | FrameError::Malformed(_)) {
                let _ = reply(&mut s, &error(e.to_string()));
            }
            return;
        }
    };
    let Ok(server_nonce) = random_bytes(NONCE_LEN) else {
        return;
    };
    if reply(
        &mut s,
        &Msg::Challenge {
            nonce: to_hex(&server_nonce),
        },
    )
    .is_err()
    {
        return;
    }
    // The rank proves first; the proof is for it alone.
    let both = transcript(&client_nonce, &server_nonce);
    let expected = auth_mac(&shared.key, &both, RANK_SAYS);
    match read_frame(&mut s, MAX_HANDSHAKE_FRAME, by, stop) {
        Ok(Msg::Auth { mac })
            if from_hex(&mac).is_some_and(|g| constant_time_eq(&g, &expected)) => {}
        Ok(Msg::Auth { .. }) => {
            shared.refuse(peer, "wrong token");
            std::thread::sleep(REFUSAL_DELAY);
            let _ = reply(
                &mut s,
                &error(format!(
                    "wrong token: the authentication code does not match the meeting point's token (give every rank the same BENCHSUITE_TOKEN or --token-file), or {} serves another job (give each job a port of its own)",
                    shared.given
                )),
            );
            return;
        }
        _ => return,
    }
    if job != shared.job {
        let why = format!(
            "another job's meeting point: this rank is of {job}, the meeting point (rank 0) serves {}; give each job a port of its own (or the same --job-id, step and world size to the ranks of one job)",
            shared.job
        );
        shared.refuse(peer, &format!("a rank of another job ({job})"));
        let _ = reply(&mut s, &error(why));
        return;
    }
    let proof = auth_mac(&shared.key, &both, SERVER_SAYS);
    let welcome = Msg::Welcome {
        proof: to_hex(&proof),
        instance: shared.instance.clone(),
    };
    if reply(&mut s, &welcome).is_err() {
        return;
    }
    drop(pending);
    loop {
        match read_frame(&mut s, MAX_FRAME, Instant::now() + IDLE, stop) {
            Ok(m) => {
                let answer = shared.apply(m);
                if reply(&mut s, &answer).is_err() {
                    return;
                }
            }
            Err(e @ (FrameError::TooLarge { .. } | FrameError::Malformed(_))) => {
                let _ = reply(&mut s, &error(e.to_string()));
                return;
            }
            Err(FrameError::Io(_)) => return,
        }
    }
}

fn reply(s: &mut TcpStream, m: &Msg) -> io::Result<()> {
    s.write_all(&encode(m))
}

/// Rank 0's view of its own meeting point.
struct Served {
    shared: Arc<Shared>,
}

impl Store for Served {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), String> {
        if how == Put::Secret {
            return Err(format!(
                "{name}: a secret is never published at the meeting point"
            ));
        }
        match self.shared.apply(Msg::Put {
            name: name.into(),
            text: text.into(),
        }) {
            Msg::Ok => Ok(()),
            Msg::Error { message } => Err(format!(
                "the meeting point {} refused {name}: {message}",
                self.shared.given
            )),
            _ => Err(format!("{name}: unexpected answer")),
        }
    }

    fn get(&self, name: &str) -> Result<String, String> {
        lock(&self.shared.table)
            .map
            .get(name)
            .map(|e| e.text.clone())
            .ok_or_else(|| format!("{name} absent {}", self.place()))
    }

    fn remove(&self, name: &str) -> Result<(), String> {
        self.shared.apply(Msg::Remove { name: name.into() });
        Ok(())
    }

    fn list(&self) -> Result<HashSet<String>, String> {
        Ok(lock(&self.shared.table).map.keys().cloned().collect())
    }

    fn place(&self) -> String {
        format!("at the meeting point {} (this rank's)", self.shared.given)
    }

    fn location(&self) -> String {
        self.shared.given.clone()
    }

    fn flag(&self) -> &'static str {
        "--rendezvous"
    }

    fn fresh(&self) -> bool {
        true
    }

    fn trouble(&self) -> Option<String> {
        let r = lock(&self.shared.refused);
        let (at, peer, why) = r.as_ref()?;
        Some(format!(
            "the meeting point refused a connection from {peer} {} ago: {why}",
            benchsuite::units::format_seconds(at.elapsed().as_secs_f64())
        ))
    }
}

// ---------------------------------------------------------------------------
// A rank's side
// ---------------------------------------------------------------------------

/// Why a request got no answer.
#[derive(Debug)]
enum Fail {
    /// Not reachable now (not started yet, gone, a network error).
    Down(String),
    /// It refused this rank for good (a wrong token, another job).
    Refused(String),
}

/// The meeting point of another rank (rank 0), reached over TCP; one
/// connection, opened again as needed.
pub struct Remote {
    rdv: Rendezvous,
    key: [u8; 32],
    job: Job,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    conn: Mutex<Option<TcpStream>>,
    /// Since when, and why, it does not answer.
    down: Mutex<Option<(Instant, String)>>,
    refused: Mutex<Option<String>>,
    /// The names last listed, and their version.
    names: Mutex<Option<(u64, HashSet<String>)>>,
    /// The meeting point's `instance` last welcomed by.
    instance: Mutex<Option<String>>,
    /// Whether this rank published anything lasting there.
    published: AtomicBool,
    /// Why what this rank published is lost (rank 0 restarted).
    restarted: Mutex<Option<String>>,
}

impl Remote {
    /// The meeting point at `rdv`; nothing is connected yet. A rank waits
    /// for it (each request tries again) until it has not answered for
    /// `timeout`.
    pub fn new(
        rdv: Rendezvous,
        token: &str,
        job: Job,
        timeout: Duration,
        cancel: Arc<AtomicBool>,
    ) -> Remote {
        Remote {
            rdv,
            key: derive_key(token),
            job,
            timeout,
            cancel,
            conn: Mutex::new(None),
            down: Mutex::new(None),
            refused: Mutex::new(None),
            names: Mutex::new(None),
            instance: Mutex::new(None),
            published: AtomicBool::new(false),
            restarted: Mutex::new(None),
        }
    }

    fn connect(&self) -> Result<TcpStream, Fail> {
        let addrs = self
            .rdv
            .resolve()
            .map_err(|e| Fail::Down(format!("cannot resolve {}: {e}", self.rdv.host)))?;
        let wait = self
            .timeout
            .clamp(Duration::from_millis(100), Duration::from_secs(2));
        let mut last = format!("{} resolves to no address", self.rdv.host);
        for a in addrs {
            match TcpStream::connect_timeout(&a, wait) {
                Ok(s) => return self.handshake(s),
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        Err(Fail::Down(last))
    }

    /// Hello, challenge, this rank's proof, the meeting point's: nothing
    /// else is sent before the meeting point proved that it knows the
    /// token. What is not the protocol (another service behind a stale
    /// address, garbage) is tried again; a refusal is final.
    fn handshake(&self, mut s: TcpStream) -> Result<TcpStream, Fail> {
        let io = |e: io::Error| Fail::Down(e.to_string());
        s.set_read_timeout(Some(POLL)).map_err(io)?;
        s.set_write_timeout(Some(REPLY)).map_err(io)?;
        let _ = s.set_nodelay(true);
        let by = Instant::now() + HANDSHAKE;
        let nonce = random_bytes(NONCE_LEN).map_err(io)?;
        let mut hello = MAGIC.to_vec();
        hello.extend(encode(&Msg::Hello {
            version: VERSION,
            nonce: to_hex(&nonce),
            job: self.job.id.clone(),
            world: self.job.world,
        }));
        s.write_all(&hello).map_err(io)?;
        let mut magic = [0u8; 4];
        read_by(&mut s, &mut magic, by, None).map_err(io)?;
        if magic != MAGIC {
            return Err(Fail::Down(format!(
                "{} is not a benchsuite meeting point (it answered {:?})",
                self.rdv.given,
                String::from_utf8_lossy(&magic)
            )));
        }
        let frame = |s: &mut TcpStream| {
            read_frame(s, MAX_HANDSHAKE_FRAME, by, None).map_err(|e| match e {
                FrameError::Io(e) => Fail::Down(e.to_string()),
                e => Fail::Down(format!(
                    "{} answered {}",
                    self.rdv.given,
                    untrusted(&e.to_string())
                )),
            })
        };
        // Before the welcome, whoever answers has proved nothing: its
        // words are shown escaped and cut, and said to be unproven.
        let refused = |message: &str| {
            Fail::Refused(format!(
                "{} (said before it proved that it knows the token)",
                untrusted(message)
            ))
        };
        let server_nonce = match frame(&mut s)? {
            Msg::Challenge { nonce: ns } => from_hex(&ns)
                .filter(|n| n.len() == NONCE_LEN)
                .ok_or_else(|| Fail::Down("a malformed challenge".into()))?,
            Msg::Error { message } => return Err(refused(&message)),
            other => {
                return Err(Fail::Down(format!(
                    "expected a challenge, got {}",
                    op_name(&other)
                )));
            }
        };
        let both = transcript(&nonce, &server_nonce);
        let mac = auth_mac(&self.key, &both, RANK_SAYS);
        s.write_all(&encode(&Msg::Auth { mac: to_hex(&mac) }))
            .map_err(io)?;
        let instance = match frame(&mut s)? {
            Msg::Welcome { proof, instance } => {
                let expected = auth_mac(&self.key, &both, SERVER_SAYS);
                if !from_hex(&proof).is_some_and(|p| constant_time_eq(&p, &expected)) {
                    return Err(Fail::Refused(
                        "the meeting point does not know this rank's token (a wrong token on this rank or on rank 0, or not the job's meeting point)".into(),
                    ));
                }
                instance
            }
            Msg::Error { message } => return Err(refused(&message)),
            other => {
                return Err(Fail::Down(format!(
                    "expected welcome, got {}",
                    op_name(&other)
                )));
            }
        };
        let mut seen = lock(&self.instance);
        if seen.as_ref().is_some_and(|i| *i != instance) && self.published.load(Ordering::SeqCst) {
            lock(&self.restarted).get_or_insert_with(|| {
                format!(
                    "the meeting point {} restarted (rank 0 restarted): what the ranks published there is lost",
                    self.rdv.given
                )
            });
        }
        *seen = Some(instance);
        Ok(s)
    }

    /// One request and its answer; a broken connection is opened again
    /// once.
    fn call(&self, msg: &Msg) -> Result<Msg, Fail> {
        if let Some(why) = lock(&self.refused).clone() {
            return Err(Fail::Refused(why));
        }
        let mut conn = lock(&self.conn);
        let mut last = String::new();
        for _ in 0..2 {
            if conn.is_none() {
                match self.connect() {
                    Ok(s) => *conn = Some(s),
                    Err(Fail::Refused(why)) => {
                        let why = format!(
                            "the meeting point {} refused this rank: {why}",
                            self.rdv.given
                        );
                        *lock(&self.refused) = Some(why.clone());
                        return Err(Fail::Refused(why));
                    }
                    Err(Fail::Down(why)) => {
                        last = why;
                        break;
                    }
                }
            }
            let Some(s) = conn.as_mut() else { break };
            let sent = s.write_all(&encode(msg)).map_err(FrameError::Io);
            match sent.and_then(|()| read_frame(s, MAX_REPLY, Instant::now() + REPLY, None)) {
                Ok(answer) => {
                    *lock(&self.down) = None;
                    return Ok(answer);
                }
                Err(e) => {
                    last = e.to_string();
                    *conn = None;
                }
            }
        }
        lock(&self.down)
            .get_or_insert_with(|| (Instant::now(), String::new()))
            .1 = last.clone();
        Err(Fail::Down(last))
    }

    /// The meeting point has not answered for `--rendezvous-timeout`.
    fn lost(&self) -> Option<String> {
        let d = lock(&self.down);
        let (since, why) = d.as_ref()?;
        (since.elapsed() >= self.timeout).then(|| {
            format!(
                "lost the meeting point {} (rank 0 serves it): no answer for {} ({why}): rank 0 never started, ended, or is not reachable; --rendezvous-timeout sets the wait",
                self.rdv.given,
                benchsuite::units::format_seconds(since.elapsed().as_secs_f64())
            )
        })
    }
}

impl Store for Remote {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), String> {
        if how == Put::Secret {
            return Err(format!(
                "{name}: a secret is never sent to the meeting point"
            ));
        }
        let msg = Msg::Put {
            name: name.into(),
            text: text.into(),
        };
        let mut pause = Duration::from_millis(50);
        let started = Instant::now();
        loop {
            match self.call(&msg) {
                Ok(Msg::Ok) => {
                    if how != Put::Beat {
                        self.published.store(true, Ordering::SeqCst);
                    }
                    return Ok(());
                }
                Ok(Msg::Error { message }) => {
                    return Err(format!(
                        "the meeting point {} refused {name}: {message}",
                        self.rdv.given
                    ));
                }
                Ok(other) => {
                    return Err(format!(
                        "the meeting point {} answered {} to put",
                        self.rdv.given,
                        op_name(&other)
                    ));
                }
                Err(Fail::Refused(why)) => return Err(why),
                Err(Fail::Down(why)) => {
                    if how == Put::Beat || (how == Put::Last && started.elapsed() >= LAST_WORDS) {
                        return Err(why);
                    }
                    if let Some(lost) = self.lost() {
                        return Err(lost);
                    }
                    if self.cancel.load(Ordering::SeqCst) {
                        return Err("interrupted (Ctrl-C)".into());
                    }
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    fn get(&self, name: &str) -> Result<String, String> {
        match self.call(&Msg::Get { name: name.into() }) {
            Ok(Msg::Value { text: Some(t) }) => Ok(t),
            Ok(Msg::Value { text: None }) => Err(format!("{name} absent {}", self.place())),
            Ok(other) => Err(format!(
                "the meeting point {} answered {} to get",
                self.rdv.given,
                op_name(&other)
            )),
            Err(Fail::Refused(why) | Fail::Down(why)) => Err(why),
        }
    }

    fn remove(&self, name: &str) -> Result<(), String> {
        match self.call(&Msg::Remove { name: name.into() }) {
            Err(Fail::Refused(why)) => Err(why),
            _ => Ok(()),
        }
    }

    fn list(&self) -> Result<HashSet<String>, String> {
        if let Some(why) = lock(&self.restarted).clone() {
            return Err(why);
        }
        let since = lock(&self.names).as_ref().map(|(v, _)| *v);
        match self.call(&Msg::List { since }) {
            Ok(Msg::Names { version, names }) => {
                let mut cache = lock(&self.names);
                match (names, cache.as_ref()) {
                    (Some(n), _) => {
                        let n: HashSet<String> = n.into_iter().collect();
                        *cache = Some((version, n.clone()));
                        Ok(n)
                    }
                    (None, Some((v, n))) if *v == version => Ok(n.clone()),
                    (None, _) => {
                        *cache = None;
                        Ok(HashSet::new())
                    }
                }
            }
            Ok(other) => Err(format!(
                "the meeting point {} answered {} to list",
                self.rdv.given,
                op_name(&other)
            )),
            Err(Fail::Refused(why)) => Err(why),
            Err(Fail::Down(_)) => self.lost().map_or_else(|| Ok(HashSet::new()), Err),
        }
    }

    fn place(&self) -> String {
        format!("at the meeting point {}", self.rdv.given)
    }

    fn location(&self) -> String {
        self.rdv.given.clone()
    }

    fn flag(&self) -> &'static str {
        "--rendezvous"
    }

    fn answering(&self) -> bool {
        lock(&self.down).is_none()
    }

    fn fresh(&self) -> bool {
        true
    }

    fn trouble(&self) -> Option<String> {
        if let Some(r) = lock(&self.refused).clone() {
            return Some(r);
        }
        let d = lock(&self.down);
        let (since, why) = d.as_ref()?;
        Some(format!(
            "the meeting point {} has not answered for {} ({why})",
            self.rdv.given,
            benchsuite::units::format_seconds(since.elapsed().as_secs_f64())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(body: &[u8]) -> Vec<u8> {
        let mut v = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(1)
    }

    #[test]
    fn a_frame_round_trips() {
        let m = Msg::Put {
            name: "r1.json".into(),
            text: "{\"a\":1}".into(),
        };
        let bytes = encode(&m);
        let got = read_frame(&mut bytes.as_slice(), MAX_FRAME, soon(), None).unwrap();
        assert_eq!(got, m);
    }

    #[test]
    fn an_oversized_length_is_refused_before_anything_is_read() {
        // 4 GiB - 1 announced, nothing behind it: refused from the prefix.
        let bytes = [0xff, 0xff, 0xff, 0xff];
        match read_frame(&mut bytes.as_slice(), MAX_FRAME, soon(), None) {
            Err(FrameError::TooLarge { len, max }) => {
                assert_eq!((len, max), (u64::from(u32::MAX), MAX_FRAME));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            frame_len(
                (MAX_HANDSHAKE_FRAME as u32).to_be_bytes(),
                MAX_HANDSHAKE_FRAME
            )
            .is_ok()
        );
        assert!(matches!(
            frame_len(
                (MAX_HANDSHAKE_FRAME as u32 + 1).to_be_bytes(),
                MAX_HANDSHAKE_FRAME
            ),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn garbage_and_truncated_frames_are_errors_not_panics() {
        let garbage = frame_of(b"\x00\x01not json");
        assert!(matches!(
            read_frame(&mut garbage.as_slice(), MAX_FRAME, soon(), None),
            Err(FrameError::Malformed(_))
        ));
        let unknown = frame_of(br#"{"op":"explode"}"#);
        assert!(matches!(
            read_frame(&mut unknown.as_slice(), MAX_FRAME, soon(), None),
            Err(FrameError::Malformed(_))
        ));
        let mut short = frame_of(br#"{"op":"list"}"#);
        short.truncate(8);
        assert!(matches!(
            read_frame(&mut short.as_slice(), MAX_FRAME, soon(), None),
            Err(FrameError::Io(_))
        ));
        assert!(matches!(
            read_frame(&mut [0u8, 0].as_slice(), MAX_FRAME, soon(), None),
            Err(FrameError::Io(_))
        ));
    }

    #[test]
    fn the_store_refuses_bad_names_big_values_and_too_many_names() {
        let shared = Shared {
            table: Mutex::new(Table::new()),
            key: derive_key("t"),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            refused: Mutex::new(None),
            pending: Mutex::new(std::collections::VecDeque::new()),
            given: "h:1".into(),
            job: job(2),
            instance: "i".into(),
        };
        let put = |name: &str, text: String| {
            shared.apply(Msg::Put {
                name: name.into(),
                text,
            })
        };
        assert_eq!(put("r0.json", "x".into()), Msg::Ok);
        for bad in ["", ".hidden", "a/b", "../x", &"n".repeat(MAX_NAME + 1)] {
            assert!(
                matches!(put(bad, String::new()), Msg::Error { .. }),
                "{bad:?}"
            );
        }
        assert!(valid_name(&"n".repeat(MAX_NAME)));
        assert!(matches!(
            put("big", "x".repeat(MAX_VALUE + 1)),
            Msg::Error { .. }
        ));
        assert_eq!(put("big", "x".repeat(MAX_VALUE)), Msg::Ok);
        {
            let t = &mut lock(&shared.table).map;
            for i in t.len()..MAX_ENTRIES {
                t.insert(
                    format!("f{i}"),
                    Entry {
                        text: String::new(),
                        at: Instant::now(),
                    },
                );
            }
        }
        match put("one-more", String::new()) {
            Msg::Error { message } => assert!(message.contains("full"), "{message}"),
            other => panic!("{other:?}"),
        }
        // Rewriting a name already there still works.
        assert_eq!(put("r0.json", "y".into()), Msg::Ok);
        assert_eq!(
            shared.apply(Msg::Get {
                name: "r0.json".into()
            }),
            Msg::Value {
                text: Some("y".into())
            }
        );
        assert!(matches!(
            shared.apply(Msg::Welcome {
                proof: String::new(),
                instance: String::new()
            }),
            Msg::Error { .. }
        ));
    }

    #[test]
    fn a_listing_is_sent_again_only_when_a_name_came_or_went() {
        let (mp, rdv) = local("t");
        let list = |since| mp.shared.apply(Msg::List { since });
        let Msg::Names { version: v0, .. } = list(None) else {
            panic!()
        };
        assert_eq!(
            list(Some(v0)),
            Msg::Names {
                version: v0,
                names: None
            }
        );
        let store = mp.store();
        store.put("r1.alive", "1", Put::Beat).unwrap();
        let Msg::Names { version: v1, names } = list(Some(v0)) else {
            panic!()
        };
        assert_ne!(v1, v0);
        assert_eq!(names, Some(vec!["r1.alive".to_string()]));
        // A heartbeat rewritten: the same names.
        store.put("r1.alive", "2", Put::Beat).unwrap();
        assert_eq!(
            list(Some(v1)),
            Msg::Names {
                version: v1,
                names: None
            }
        );
        store.remove("r1.alive").unwrap();
        assert!(matches!(list(Some(v1)), Msg::Names { names: Some(n), .. } if n.is_empty()));
        // A rank's cached listing follows.
        let r = remote(&rdv, "t", 3, Duration::from_secs(5));
        assert!(r.list().unwrap().is_empty());
        store.put("r0.json", "{}", Put::Durable).unwrap();
        assert!(r.list().unwrap().contains("r0.json"));
        assert!(r.list().unwrap().contains("r0.json"), "from the cache");
    }

    #[test]
    fn rendezvous_addresses_parse_or_say_what_is_expected() {
        let r = Rendezvous::parse("benchsuite-0.benchsuite:29400").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port),
            ("benchsuite-0.benchsuite", 29400)
        );
        let r = Rendezvous::parse("[::1]:7").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 7));
        for bad in [
            "host",
            "host:",
            ":80",
            "host:0",
            "host:70000",
            "::1:80",
            "[::1:80",
            "a b:1",
        ] {
            let e = Rendezvous::parse(bad).unwrap_err();
            assert!(e.contains("--rendezvous"), "{e}");
        }
        for bad in ["0.0.0.0:1", "[::]:1", "224.0.0.1:1"] {
            let e = Rendezvous::parse(bad).unwrap_err();
            assert!(e.contains("unspecified or multicast"), "{e}");
        }
    }

    fn job(world: u64) -> Job {
        Job {
            id: "j1/run".into(),
            world,
        }
    }

    /// A meeting point of job `j1/run` with 3 ranks, on an ephemeral port.
    fn local(token: &str) -> (MeetingPoint, Rendezvous) {
        let probe = Rendezvous::parse("127.0.0.1:1").unwrap();
        let mut rdv = probe.clone();
        // An ephemeral port: bind port 0 through the same path.
        rdv.port = 0;
        let mp = MeetingPoint::start(&rdv, token, &job(3), Duration::from_secs(1)).unwrap();
        let port = mp.local_addr().port();
        let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
        (mp, rdv)
    }

    /// A rank of job `j1/run` with `world` ranks.
    fn remote(rdv: &Rendezvous, token: &str, world: u64, timeout: Duration) -> Remote {
        Remote::new(
            rdv.clone(),
            token,
            job(world),
            timeout,
            Arc::new(AtomicBool::new(false)),
        )
    }

    #[test]
    fn ranks_with_the_token_share_the_store_and_others_are_refused() {
        let (mp, rdv) = local("secret");
        let a = remote(&rdv, "secret", 3, Duration::from_secs(5));
        a.put("r1.json", "hello", Put::Durable).unwrap();
        assert_eq!(mp.store().get("r1.json").unwrap(), "hello");
        mp.store().put("r0.json", "zero", Put::Durable).unwrap();
        assert_eq!(a.get("r0.json").unwrap(), "zero");
        assert!(a.list().unwrap().contains("r0.json"));
        assert!(
            a.put("t", "x", Put::Secret).is_err(),
            "no secret on the wire"
        );
        let wrong = remote(&rdv, "guess", 3, Duration::from_secs(5));
        let e = wrong.list().unwrap_err();
        assert!(e.contains("refused this rank: wrong token"), "{e}");
        assert!(e.contains("serves another job"), "{e}");
        let t = mp.store().trouble().unwrap_or_default();
        assert!(t.contains("wrong token"), "{t}");
        // The meeting point still serves the right one.
        assert_eq!(a.get("r1.json").unwrap(), "hello");
    }

    #[test]
    fn hostile_clients_stall_nobody() {
        let (mp, rdv) = local("secret");
        let addr = mp.local_addr();
        // Silent connections (more than may await authentication),
        // garbage, an oversized frame.
        let silent: Vec<TcpStream> = (0..MAX_PENDING + 8)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let mut g = TcpStream::connect(addr).unwrap();
        g.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut big = TcpStream::connect(addr).unwrap();
        big.write_all(&MAGIC).unwrap();
        big.write_all(&u32::MAX.to_be_bytes()).unwrap();
        // Served well before the silent ones' handshakes time out.
        let a = remote(&rdv, "secret", 3, HANDSHAKE);
        a.put("r1.alive", "1", Put::Durable).unwrap();
        // The oversized frame got an error and was closed.
        big.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut buf = Vec::new();
        let _ = big.read_to_end(&mut buf);
        assert!(
            String::from_utf8_lossy(&buf).contains("above the limit"),
            "{buf:?}"
        );
        drop(silent);
    }

    #[test]
    fn a_meeting_point_that_never_comes_is_lost_after_the_timeout() {
        // A port nobody listens on: bind one and free it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
        let r = remote(&rdv, "t", 3, Duration::from_millis(300));
        assert!(r.list().unwrap().is_empty(), "not lost yet");
        let e = r.put("r1.json", "x", Put::Durable).unwrap_err();
        assert!(
            e.contains(&format!("lost the meeting point 127.0.0.1:{port}")),
            "{e}"
        );
        assert!(r.list().is_err());
    }

    #[test]
    fn close_waits_for_every_rank_to_leave() {
        let (mp, _) = local("t");
        let store = mp.store();
        store
            .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
            .unwrap();
        // Another run's marker of rank 1: not this run's leaving.
        store.put("r1-zz.left", "", Put::Durable).unwrap();
        store
            .put("r2.alive", r#"{"nonce":"bb"}"#, Put::Beat)
            .unwrap();
        store.put("r2-bb.left", "", Put::Durable).unwrap();
        let t = Instant::now();
        // Rank 1 never leaves: given up once silent for the timeout.
        mp.close(
            0,
            Duration::from_millis(500),
            &AtomicBool::new(false),
            false,
        );
        assert!(
            t.elapsed() >= Duration::from_millis(450),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn close_returns_once_every_rank_left() {
        let (mp, _) = local("t");
        let store = mp.store();
        store
            .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
            .unwrap();
        store.put("r1-aa.left", "", Put::Durable).unwrap();
        store
            .put("r2.json", r#"{"nonce":"bb"}"#, Put::Durable)
            .unwrap();
        store.put("r2-bb.left", "", Put::Durable).unwrap();
        let t = Instant::now();
        let timeout = Duration::from_secs(20);
        mp.close(0, timeout, &AtomicBool::new(false), false);
        assert!(t.elapsed() < timeout / 2, "{:?}", t.elapsed());
    }

    #[test]
    fn a_failed_rank_0_waits_only_for_ranks_that_did_not_learn_of_it() {
        let (mp, _) = local("t");
        let store = mp.store();
        store
            .put("r1.alive", r#"{"nonce":"aa"}"#, Put::Beat)
            .unwrap();
        store.put("r1.failed", "{}", Put::Durable).unwrap();
        store
            .put("r2.alive", r#"{"nonce":"bb"}"#, Put::Beat)
            .unwrap();
        store.put("r2-bb.left", "", Put::Durable).unwrap();
        let t = Instant::now();
        mp.close(0, Duration::from_secs(600), &AtomicBool::new(false), true);
        assert!(t.elapsed() < LINGER / 2, "{:?}", t.elapsed());
    }

    #[test]
    fn a_failed_rank_0_serves_a_beating_rank_past_the_linger_for_unseen_ones() {
        let (mp, _) = local("t");
        let store = mp.store();
        let done = Arc::new(AtomicBool::new(false));
        // Rank 1 beats (busy with its other benchmarks) for 4 s, then
        // learns of the failure; rank 2 is never seen.
        let beating = {
            let (store, done) = (store.clone(), done.clone());
            std::thread::spawn(move || {
                let t = Instant::now();
                let mut n = 0;
                while t.elapsed() < Duration::from_secs(4) {
                    n += 1;
                    let beat = format!(r#"{{"nonce":"aa","beat":{n}}}"#);
                    store.put("r1.alive", &beat, Put::Beat).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                }
                done.store(true, Ordering::SeqCst);
                store.put("r1.failed", "{}", Put::Durable).unwrap();
                store.put("r1-aa.left", "", Put::Durable).unwrap();
            })
        };
        let t = Instant::now();
        // A 1 s linger: rank 2 is given up on after it, rank 1 is not.
        mp.close_within(
            0,
            Duration::from_secs(600),
            &AtomicBool::new(false),
            true,
            Duration::from_secs(1),
        );
        assert!(done.load(Ordering::SeqCst), "served until rank 1 learnt");
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
        beating.join().unwrap();
    }

    #[test]
    fn a_failed_rank_0_gives_up_on_a_rank_never_seen_after_the_linger() {
        let (mp, _) = local("t");
        let t = Instant::now();
        mp.close_within(
            0,
            Duration::from_secs(600),
            &AtomicBool::new(false),
            true,
            Duration::from_secs(1),
        );
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    }

    /// Reads a frame as JSON, and the 4 bytes before it when `magic`.
    fn raw_frame(s: &mut TcpStream, magic: bool) -> serde_json::Value {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        if magic {
            let mut m = [0u8; 4];
            s.read_exact(&mut m).unwrap();
            assert_eq!(m, MAGIC);
        }
        let mut head = [0u8; 4];
        s.read_exact(&mut head).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(head) as usize];
        s.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[test]
    fn a_client_that_reaches_the_port_gets_nothing_to_guess_with() {
        let (mp, _) = local("secret-token-0123456789");
        let mut c = TcpStream::connect(mp.local_addr()).unwrap();
        let mut hello = MAGIC.to_vec();
        hello.extend(encode(&Msg::Hello {
            version: VERSION,
            nonce: to_hex(&[1u8; NONCE_LEN]),
            job: "j1/run".into(),
            world: 3,
        }));
        c.write_all(&hello).unwrap();
        let challenge = raw_frame(&mut c, true);
        assert_eq!(challenge["op"], "challenge");
        let keys: Vec<&String> = challenge.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["nonce", "op"], "no proof before the rank's");
        c.write_all(&encode(&Msg::Auth {
            mac: to_hex(&[0u8; 32]),
        }))
        .unwrap();
        let answer = raw_frame(&mut c, false);
        assert_eq!(answer["op"], "error");
        assert!(answer["message"].as_str().unwrap().contains("wrong token"));
        assert!(answer.get("proof").is_none());
    }

    #[test]
    fn a_fake_meeting_point_reflecting_the_ranks_code_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let fake = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let hello = raw_frame(&mut s, true);
            assert_eq!(hello["op"], "hello");
            s.write_all(&MAGIC).unwrap();
            s.write_all(&encode(&Msg::Challenge {
                nonce: to_hex(&[2u8; NONCE_LEN]),
            }))
            .unwrap();
            let auth = raw_frame(&mut s, false);
            // The rank's own code sent back as the proof.
            let mac = auth["mac"].as_str().unwrap().to_string();
            s.write_all(&encode(&Msg::Welcome {
                proof: mac,
                instance: "x".into(),
            }))
            .unwrap();
            // Nothing else comes.
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            rest
        });
        let rdv = Rendezvous::parse(&format!("127.0.0.1:{}", addr.port())).unwrap();
        let r = remote(&rdv, "secret-token-0123456789", 3, Duration::from_secs(5));
        let e = r.list().unwrap_err();
        assert!(e.contains("does not know this rank's token"), "{e}");
        drop(r);
        assert!(fake.join().unwrap().is_empty(), "nothing sent after");
    }

    #[test]
    fn an_unauthenticated_refusal_is_shown_escaped_cut_and_unproven() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let said = format!("wrong token\n\u{1b}[2Jerror: all good{}", "x".repeat(900));
        let fake = {
            let said = said.clone();
            std::thread::spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                raw_frame(&mut s, true);
                s.write_all(&MAGIC).unwrap();
                s.write_all(&encode(&Msg::Error { message: said })).unwrap();
            })
        };
        let rdv = Rendezvous::parse(&format!("127.0.0.1:{}", addr.port())).unwrap();
        let r = remote(&rdv, "secret-token-0123456789", 3, Duration::from_secs(5));
        let e = r.list().unwrap_err();
        fake.join().unwrap();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(!e.contains('\u{1b}'), "{e}");
        assert!(e.contains("wrong token\\n\\u{1b}[2J"), "{e}");
        assert!(e.contains("x…") && !e.contains(&"x".repeat(600)), "{e}");
        assert!(
            e.ends_with("(said before it proved that it knows the token)"),
            "{e}"
        );
        assert_eq!(untrusted("ok \u{202e}x"), "ok \\u{202e}x");
    }

    #[test]
    fn a_rank_of_another_job_is_refused_naming_both() {
        let (mp, rdv) = local("t");
        let other = Remote::new(
            rdv.clone(),
            "t",
            Job {
                id: "j2/run".into(),
                world: 3,
            },
            Duration::from_secs(5),
            Arc::new(AtomicBool::new(false)),
        );
        let e = other.put("r1.json", "x", Put::Durable).unwrap_err();
        assert!(e.contains("job j2/run") && e.contains("job j1/run"), "{e}");
        assert!(mp.store().get("r1.json").is_err(), "nothing stored");
        let bigger = remote(&rdv, "t", 4, Duration::from_secs(5));
        let e = bigger.list().unwrap_err();
        assert!(e.contains("4 rank(s)") && e.contains("3 rank(s)"), "{e}");
        assert!(remote(&rdv, "t", 3, Duration::from_secs(5)).list().is_ok());
    }

    #[test]
    fn another_service_behind_the_address_is_tried_again_not_final() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let http = std::thread::spawn(move || {
            // Answers every connection like a web server, then stops.
            l.set_nonblocking(true).unwrap();
            let until = Instant::now() + Duration::from_millis(600);
            while Instant::now() < until {
                if let Ok((mut s, _)) = l.accept() {
                    let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let rdv = Rendezvous::parse(&format!("127.0.0.1:{port}")).unwrap();
        let r = remote(&rdv, "t", 3, Duration::from_millis(300));
        assert!(r.list().unwrap().is_empty(), "not final");
        assert!(lock(&r.refused).is_none());
        let e = r.put("r1.json", "x", Put::Durable).unwrap_err();
        assert!(
            e.contains("lost the meeting point") && e.contains("not a benchsuite meeting point"),
            "{e}"
        );
        http.join().unwrap();
    }

    #[test]
    fn a_restarted_meeting_point_tells_a_rank_that_published_there() {
        let (mp, rdv) = local("t");
        let r = remote(&rdv, "t", 3, Duration::from_secs(5));
        r.put("r1.json", "x", Put::Durable).unwrap();
        assert!(r.list().unwrap().contains("r1.json"));
        drop(mp);
        let again = MeetingPoint::start(&rdv, "t", &job(3), Duration::from_secs(1)).unwrap();
        // The old connection is closed: the next request reconnects.
        let by = Instant::now() + Duration::from_secs(10);
        let e = loop {
            match r.list() {
                Err(e) => break e,
                Ok(_) if Instant::now() < by => std::thread::sleep(Duration::from_millis(20)),
                Ok(n) => panic!("{n:?}"),
            }
        };
        assert!(e.contains("restarted"), "{e}");
        drop(again);
    }

    #[test]
    fn one_source_cannot_crowd_out_the_others_handshakes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut streams = Vec::new();
        let mut q = std::collections::VecDeque::new();
        let ip = |n: u8| IpAddr::from([10, 0, 0, n]);
        let mut id = 0;
        let mut add = |q: &mut std::collections::VecDeque<_>, from: IpAddr| {
            let s = TcpStream::connect(addr).unwrap();
            streams.push(l.accept().unwrap());
            id += 1;
            admit(q, id, from, s);
        };
        let from = |q: &std::collections::VecDeque<(u64, IpAddr, TcpStream)>, n| {
            q.iter().filter(|e| e.1 == ip(n)).count()
        };
        add(&mut q, ip(1));
        // Many ranks of one node at once: all let in while there is room.
        for _ in 1..MAX_PENDING {
            add(&mut q, ip(2));
        }
        assert_eq!(from(&q, 2), MAX_PENDING - 1, "none closed below the limit");
        let first_of_2 = q.iter().find(|e| e.1 == ip(2)).unwrap().0;
        for _ in 0..MAX_PENDING {
            add(&mut q, ip(2));
        }
        assert_eq!(q.len(), MAX_PENDING);
        assert_eq!(from(&q, 1), 1, "the other source's handshake stays");
        assert!(
            q.iter().all(|e| e.0 != first_of_2),
            "the oldest of the busiest address gave way"
        );
        // All taken by many sources: the one with the most gives way.
        for n in 3..30 {
            add(&mut q, ip(n));
        }
        assert_eq!(q.len(), MAX_PENDING);
        assert_eq!(from(&q, 1), 1);
        assert_eq!(from(&q, 2), MAX_PENDING - 1 - 27);
    }

    #[test]
    fn a_world_beyond_the_open_file_limit_is_refused_up_front() {
        let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let Some(files) = limits.lines().find(|l| l.starts_with("Max open files")) else {
            eprintln!("skipping: no open-file limit in /proc/self/limits");
            return;
        };
        if files.split_whitespace().nth(3) == Some("unlimited") {
            eprintln!("skipping: no open-file limit");
            return;
        }
        assert!(check_fd_limit("h:1", 2).is_ok());
        // The soft limit was raised to the hard one.
        let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let files = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap_or_default();
        let soft_hard: Vec<&str> = files.split_whitespace().skip(3).take(2).collect();
        assert_eq!(soft_hard.first(), soft_hard.get(1), "{files}");
        let e = check_fd_limit("h:1", u64::MAX / 2).unwrap_err();
        assert!(
            e.contains("--rendezvous h:1") && e.contains("ulimit -Hn"),
            "{e}"
        );
    }

    #[test]
    fn a_world_beyond_what_the_store_holds_is_refused_up_front() {
        assert!(check_world("h:1", MAX_WORLD).is_ok());
        let e = check_world("h:1", MAX_WORLD + 1).unwrap_err();
        assert!(
            e.contains("--rendezvous h:1") && e.contains("--output-dir"),
            "{e}"
        );
        // Each rank's entries, as many as it keeps at once, fit.
        assert!(MAX_WORLD as usize * ENTRIES_PER_RANK <= MAX_ENTRIES);
        assert!(MAX_WORLD as usize * 16 * 1024 <= MAX_BYTES);
    }

    #[test]
    fn the_token_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r0-abc.token");
        publish(&path, "secret", true, true).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "secret");
        let names: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
    }
}
