//! What goes wrong talking to a peer or starting a server ([`NetError`]),
//! and how it becomes a [`BenchError`]. A leaf: the client, the server and
//! the benchmarks all import it.

use std::net::SocketAddr;

use benchsuite_core::BenchError;

use crate::proto;

/// What goes wrong talking to a peer or starting a server. Every message
/// names the peer and says what to check.
///
/// `Display` shows one level: the OS error under [`NetError::Io`],
/// [`NetError::Connect`] and [`NetError::BadFrame`] is their
/// [`source`](std::error::Error::source) (print the chain with
/// [`benchsuite_core::error_chain`]). Into a [`BenchError`] they go as
/// [`BenchError::Io`], with the same text and the OS error kept.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A system call failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The TCP connection could not be made.
    #[error("cannot connect to {peer}; {hint}")]
    Connect {
        /// Who.
        peer: SocketAddr,
        /// What to check.
        hint: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A bad setting (bind without token, bad peer syntax).
    #[error("{0}")]
    Config(String),
    /// The peer answered, but not as a benchsuite server.
    #[error("{peer} is not a benchsuite server: {detail}")]
    NotBenchsuite {
        /// Who.
        peer: SocketAddr,
        /// What it did.
        detail: String,
    },
    /// The two sides speak different protocol versions.
    #[error(
        "protocol version mismatch: the server at {peer} speaks benchsuite-net protocol version {theirs}, this client speaks version {ours}; run the same benchsuite version on both hosts"
    )]
    Version {
        /// Who.
        peer: SocketAddr,
        /// The server's version.
        theirs: u32,
        /// Ours.
        ours: u32,
    },
    /// The server did not prove that it knows the token (protocol
    /// version 4): it is not the server meant, or its token differs.
    #[error(
        "the server at {peer} did not prove that it knows the token: {detail}; whoever answers there may be posing as the server (check --peer); nothing was sent to it but the handshake"
    )]
    Unproven {
        /// Who.
        peer: SocketAddr,
        /// What it did instead.
        detail: String,
    },
    /// The server refused (wrong token, a limit, busy).
    #[error("the server at {peer} refused: {message}")]
    Refused {
        /// Who.
        peer: SocketAddr,
        /// Why, as a code.
        code: proto::ErrorCode,
        /// Why, in words.
        message: String,
    },
    /// The conversation broke the protocol.
    #[error("protocol error with {peer}: {detail}")]
    Protocol {
        /// Who.
        peer: SocketAddr,
        /// What happened.
        detail: String,
    },
    /// The server sent a frame that does not decode (too large, or not a
    /// message).
    #[error("protocol error with {peer}")]
    BadFrame {
        /// Who.
        peer: SocketAddr,
        /// What is wrong with it.
        #[source]
        source: std::io::Error,
    },
}

impl NetError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NetError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<NetError> for BenchError {
    fn from(e: NetError) -> Self {
        let text = e.to_string();
        match e {
            NetError::Io { context, source } => BenchError::Io { context, source },
            NetError::Connect { source, .. } | NetError::BadFrame { source, .. } => {
                BenchError::io(text, source)
            }
            _ => BenchError::Other(text),
        }
    }
}
