//! # benchsuite-fleet
//!
//! benchsuite across many hosts: which task of a launched job this process
//! is ([`launcher`]), where its report goes ([`placement`]), and the
//! network benchmarks between the job's ranks ([`pairing`]), which meet
//! through a shared directory or a meeting point ([`rendezvous`], with its
//! wire format). The fleet *view* of the reports (merge, outliers) is
//! `benchsuite_report::fleet`.
//!
//! The CLI hands this crate plain data ([`PlacementConfig`],
//! [`PairingConfig`]); errors are [`FleetError`]. Whether a benchmark needs
//! a peer, or takes the job's token, is what it declares
//! (`Meta::capabilities`), not its module's name.

use std::io;

pub mod launcher;
pub mod pairing;
pub mod placement;
pub mod rendezvous;

pub use pairing::{NetPairs, Pairing, PairingConfig};
pub use placement::{Placement, PlacementConfig};

/// The environment variable that holds the token of `serve`,
/// `run --peer` and `--rendezvous`.
pub use benchsuite_net::token::TOKEN_ENV;

/// Why a fleet step failed. Each message names the flag or file it is
/// about, as the command line reads it.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A flag, or a combination of flags, that cannot work here.
    #[error("{0}")]
    Usage(String),
    /// A phase of the run that cannot be planned (names the phase, or the
    /// plan file and line).
    #[error("{0}")]
    Plan(String),
    /// The rendezvous (its directory, the meeting point) failed.
    #[error("{0}")]
    Rendezvous(String),
    /// The system refused something (random bytes, a directory, a file).
    #[error("{what}")]
    Io {
        /// What was being done, naming the flag or file.
        what: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
}
