//! `run`'s pairing flags as plain data, and their defaults: a leaf below
//! the pairing and the flag checks that read them (`flags.rs`).

use std::net::IpAddr;

/// `run --net-pairs`: how network benchmarks measure under a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetPairs {
    /// `pairwise` under a launcher with `--output-dir` (or `--rendezvous`),
    /// a world size of 2 or more and a net benchmark selected; `off`
    /// otherwise.
    #[default]
    Auto,
    /// Each rank measures its own loopback (an in-process server).
    Off,
    /// Rank pairs i <-> i + N/2 (bisection), each way in turn.
    Pairwise,
    /// All ranks measure the first one at once.
    FanIn,
}

/// `run`'s flags for the pairing, as plain data (`--net-pairs`,
/// `--net-bind`, `--rendezvous-timeout`, `--rendezvous`). Their values are
/// checked by [`Pairing::new`](super::Pairing::new), after the failure
/// marker can be written (a rank with a bad flag tells the others at once).
#[derive(Debug, Clone, Default)]
pub struct PairingConfig {
    /// `--net-pairs`.
    pub net_pairs: NetPairs,
    /// `--net-bind ADDR`.
    pub net_bind: Option<IpAddr>,
    /// `--rendezvous-timeout DURATION`, as given.
    pub rendezvous_timeout: Option<String>,
    /// `--rendezvous HOST:PORT`, as given.
    pub rendezvous: Option<String>,
}

/// `--rendezvous-timeout` when not given.
pub(super) const DEFAULT_TIMEOUT: &str = "10m";
