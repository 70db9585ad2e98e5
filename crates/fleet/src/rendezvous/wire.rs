//! The meeting point's wire format: frames, messages, the key.

use super::*;

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
pub(crate) fn read_by(
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
pub(crate) fn transcript(client: &[u8], server: &[u8]) -> Vec<u8> {
    [client, server].concat()
}
/// The meeting point's key, derived from the job's token.
pub(crate) fn derive_key(token: &str) -> [u8; 32] {
    auth_mac(token.as_bytes(), &[0u8; NONCE_LEN], KEY_CONTEXT)
}

/// The most characters of a text from a peer not authenticated yet that
/// a rank shows.
pub const MAX_UNTRUSTED: usize = benchsuite_net::proto::MAX_UNTRUSTED;

/// A text from a peer not authenticated yet, fit to print on one line:
/// control and direction-changing characters escaped (`\n`, `\u{1b}`),
/// at most [`MAX_UNTRUSTED`] characters (then `…`); the network crate's
/// rule ([`benchsuite_net::proto::untrusted`]).
pub fn untrusted(text: &str) -> String {
    benchsuite_net::proto::untrusted(text)
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
