//! Why a [`Store`](super::Store) could not do what was asked.

use std::io;
use std::path::PathBuf;

/// Why a store's `put`, `get`, `remove` or `list` failed. Its message says
/// where (the directory's file, the meeting point's address) and what to
/// do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The name is not in the store (yet).
    #[error("{name} absent {place}")]
    Absent {
        name: String,
        /// Where it was looked for: `in DIR`, `at the meeting point H:P`.
        place: String,
    },
    /// A file of a directory store could not be read, written or removed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// `read`, `write`, `remove`.
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A secret (a token) is never sent to a meeting point.
    #[error("{name}: a secret is never sent to a meeting point")]
    Secret { name: String },
    /// The meeting point answered with a refusal of this request.
    #[error("the meeting point {point} refused {name}: {message}")]
    Refused {
        point: String,
        name: String,
        message: String,
    },
    /// The meeting point answered something this request does not expect.
    #[error("the meeting point {point} answered {answer} to {request}")]
    Unexpected {
        point: String,
        answer: String,
        request: &'static str,
    },
    /// The meeting point cannot be reached, refused this rank for good
    /// (another job, a wrong token), or was lost (rank 0 restarted or
    /// ended): the text says which and what sets the wait.
    #[error("{0}")]
    Unreachable(String),
    /// The run was interrupted while the store was being retried.
    #[error("interrupted (Ctrl-C)")]
    Interrupted,
}

impl StoreError {
    /// Whether the name is merely absent (not published yet).
    pub fn is_absent(&self) -> bool {
        matches!(self, StoreError::Absent { .. })
    }
}

/// The rendezvous protocol's own steps report errors as text; a store's
/// error joins them through `?`.
impl From<StoreError> for String {
    fn from(e: StoreError) -> String {
        e.to_string()
    }
}

/// Why a meeting point (`--rendezvous`, rank 0) could not start: the
/// address, the world size or the file limit; the message says which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

impl From<String> for StartError {
    fn from(s: String) -> StartError {
        StartError(s)
    }
}
