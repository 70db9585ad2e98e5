//! Network benchmarks between a launcher's ranks (`run --net-pairs`), with
//! no `benchsuite serve` to start by hand.
//!
//! Under a launcher, `net.*` benchmarks run after every other benchmark, in
//! a phase of their own (a plan file's: the net points of all its phases,
//! in their order, each with its phase's settings). Ranks meet through named texts in a store
//! (`rendezvous.rs`), each published atomically: the files of the
//! rendezvous directory `DIR/JOB/.rendezvous/STEP/` of `--output-dir` (a
//! file system all ranks share; STEP gets `.restartN` for a requeued Slurm
//! job, `SLURM_RESTART_COUNT`), each written to a temporary file and
//! renamed; or, with `--rendezvous HOST:PORT`, the entries of a meeting
//! point that rank 0 serves there from its memory (see below). Either way:
//!
//! 0. as soon as the rank knows it pairs (before its other benchmarks), it
//!    picks a random nonce for this run and rewrites its heartbeat
//!    `rR.alive` (the nonce and a counter) about every second (a quarter
//!    of `--rendezvous-timeout` if that is shorter) until it exits;
//! 1. every measuring rank starts a server (`--net-bind`, an ephemeral
//!    port, a fresh random token; with `--rendezvous`, the job's token)
//!    and publishes it: its token in `rR-NONCE.token` (mode 0600; never
//!    with `--rendezvous`), its address, its nonce and a hash of
//!    its schedule (mode, rounds, benchmarks and points) in `rR.json`; a
//!    rank idle on purpose (one task per node) publishes `rR.json` saying
//!    so;
//! 2. every rank waits for the `rR.json` of all ranks (the barrier). A
//!    rank's `rR.json` counts only when it is this run's: its nonce is the
//!    one of a heartbeat seen changing during this wait, or the file lists
//!    the reader's own nonce among the ranks its writer met (each rank
//!    rewrites its `rR.json` with `met` after the barrier, so a rank that
//!    already left still counts); at a meeting point, which holds this
//!    run's entries only, it always counts (and lists no `met`, which
//!    would grow with the square of the world). Ranks whose schedules
//!    differ stop at once (both named). Idle ranks leave after the
//!    barrier. Then every rank computes the same schedule from the
//!    measuring ranks `M` (sorted):
//!    - `pairwise` (a bisection): `M[i]` with `M[i + n/2]`; in round 1 the
//!      upper rank of every pair measures the lower one's server, in
//!      round 2 the other way, so every rank's report holds cross-host
//!      records; with an odd `n` the last rank has no partner (its net
//!      records are skipped, saying so);
//!    - `fan-in`: `M[0]` serves, all others measure it at once (one round);
//!      each client's records are its own result, `M[0]`'s are skipped;
//! 3. within a round, the clients start each benchmark point together
//!    (each writes `rR-NONCE.ready-ROUND-STEP` and waits for the others'),
//!    so the pairs (or the fan-in's clients) load the network at once;
//!    after its last point a client writes `rR-NONCE.done-ROUND`, and every
//!    rank waits for all clients' before the next round (and a server
//!    before it stops).
//!
//! A rank that ends without finishing its part (an error, even before its
//! other benchmarks, Ctrl-C, a panic; not `kill -9` or a second Ctrl-C)
//! writes `rR.failed` (with its nonce) before its server stops; a rank
//! waiting for it, or measuring its server, stops at once and records its
//! remaining network benchmarks as failed with that reason (and writes its
//! own `rR.failed`, so that nobody waits for it either). A failure marker
//! counts when its nonce is the heartbeat's or the barrier's, or when it
//! was written after the reader started (by the clocks of both); an
//! earlier run's markers are ignored. So a rank that fails before the
//! barrier (before or in its net phase), in a rendezvous directory, keeps
//! beating as it exits until every other rank has reached the barrier in
//! this run (its `rR.json` with the nonce its heartbeat showed; it then
//! sees this rank's heartbeat change, and so its marker's nonce), failed,
//! or left; 30 s at most for a rank never seen, and
//! `--rendezvous-timeout` in all (and a few seconds for a rank arriving
//! then). A rank that started after the failure
//! does not wait the timeout out. A rank that is waited for while its
//! heartbeat does not change for `--rendezvous-timeout` (10 minutes by
//! default) is given up on, naming the rank and its files; a rank that is
//! alive (busy with its other benchmarks, or a long net record) is waited
//! for; one whose heartbeat shows another nonce than the one met at the
//! barrier restarted, and counts as failed (it will never write the
//! markers waited for). Two runs into one rendezvous directory must not
//! overlap (a job id keeps them apart; `TORCHELASTIC_RUN_ID=none` is no
//! job id). The token
//! files are removed when their server stops. A rank that no longer reads
//! the store (done, failed or falling back to loopback) writes
//! `rR-NONCE.left` as it exits.
//!
//! With `--rendezvous HOST:PORT`, rank 0 binds HOST:PORT (an address of
//! its own) as soon as it knows it pairs, idle or not, and the other ranks
//! connect to it, each request trying again until the meeting point has
//! not answered for `--rendezvous-timeout` (then their waits, and their
//! remaining net records, fail naming it). Every connection proves the
//! job-wide token both ways (HMAC challenge and response; the token never
//! travels), and every rank's server takes that same token (trimmed, at
//! least 16 characters), so no token is published. Only ranks of one job
//! meet there (job id, step with its Slurm restart, world size, as the
//! directory's path separates them): a job id is required (`--job-id`
//! where the launcher gives none), and the world is at most
//! [`crate::rendezvous::MAX_WORLD`] ranks. Rank 0 keeps serving until
//! every other rank has left, or its heartbeat has been silent for
//! `--rendezvous-timeout`; after an error of rank 0 (printed at once, see
//! [`Pairing::end`]), until every other rank left or failed too (it
//! learnt of it) or its heartbeat has been silent for that long, and 30 s
//! at most for a rank never seen. While the meeting point does not
//! answer, no heartbeat can be seen: their clocks start again when it
//! answers.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use benchsuite_core::bench::option_with_role;
use benchsuite_core::cluster::Launcher;
use benchsuite_core::phase::Phase as PlannedPhase;
use benchsuite_core::results::RunProgress;
use benchsuite_core::runner::{Observer, Plan, PlannedBench};
use benchsuite_core::{
    Benchmark, ConfigError, Host, OptionRole, Point, Record, Registry, Report, RunConfig,
};
use serde_json::{Value, json};

use crate::FleetError;
use crate::placement::{Placement, file_part};
use crate::rendezvous::{DirStore, Job, MeetingPoint, Put, Remote, Store};

type Result<T, E = FleetError> = std::result::Result<T, E>;

macro_rules! usage {
    ($($t:tt)*) => { return Err(FleetError::Usage(format!($($t)*))) };
}

/// Whether `b` measures a peer (declares an option of role
/// [`OptionRole::Peer`]).
fn needs_peer(b: &dyn Benchmark) -> bool {
    option_with_role(b, OptionRole::Peer).is_some()
}

/// The pairing that runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pairwise,
    FanIn,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Pairwise => "pairwise",
            Mode::FanIn => "fan-in",
        }
    }
}

/// A run's phases (none from a plan file here) and their plans.
pub type Phases<'r> = (Vec<(Option<PlannedPhase>, RunConfig)>, Vec<Plan<'r>>);

/// A run split for the pairing ([`Pairing::split`]): its phases without
/// their net benchmarks, run first, each as it is, and the net parts of
/// every phase, which [`Pairing::run`] measures between the ranks.
#[derive(Debug)]
pub struct Split<'r> {
    pub phases: Phases<'r>,
    pub net: Vec<NetPart<'r>>,
}

/// The net benchmarks of one phase (of a plan file, or the command
/// line's), planned against a stand-in server.
#[derive(Debug)]
pub struct NetPart<'r> {
    /// The plan file's phase it comes from (its records are named so).
    pub phase: Option<PlannedPhase>,
    pub cfg: RunConfig,
    pub plan: Plan<'r>,
}

/// One net benchmark point of [`NetPart`] number `part`, run `rounds`
/// times (its part's `--rounds`).
struct Step<'a> {
    bench: &'a dyn Benchmark,
    point: Point,
    part: usize,
    rounds: usize,
}

/// How often a rank rewrites its heartbeat at most.
const BEAT: Duration = Duration::from_secs(1);

/// One round: who measures whom, as (client, server) rank pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Round {
    pairs: Vec<(u64, u64)>,
}

impl Round {
    fn clients(&self) -> Vec<u64> {
        self.pairs.iter().map(|p| p.0).collect()
    }
}

/// The rounds for the measuring ranks `m` (sorted), and the rank left
/// without a partner (pairwise with an odd count).
fn schedule(mode: Mode, m: &[u64]) -> (Vec<Round>, Option<u64>) {
    let n = m.len();
    if n < 2 {
        return (Vec::new(), None);
    }
    match mode {
        Mode::Pairwise => {
            let h = n / 2;
            let up = Round {
                pairs: (0..h).map(|i| (m[i + h], m[i])).collect(),
            };
            let down = Round {
                pairs: (0..h).map(|i| (m[i], m[i + h])).collect(),
            };
            (vec![up, down], (n % 2 == 1).then(|| m[n - 1]))
        }
        Mode::FanIn => (
            vec![Round {
                pairs: m[1..].iter().map(|&c| (c, m[0])).collect(),
            }],
            None,
        ),
    }
}

/// What every rank must agree on: the mode, the rounds, and the steps
/// (benchmark ids and points), as a 64-bit FNV-1a hash in hex.
fn schedule_hash(mode: Mode, steps: &[Step<'_>]) -> String {
    let mut text = mode.name().to_string();
    for s in steps {
        text.push('|');
        text.push_str(&s.bench.meta().id);
        text.push_str(&serde_json::to_string(&s.point).unwrap_or_default());
        text.push_str(&format!("x{}", s.rounds));
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The record steps of `steps`: each point counts its part's rounds.
fn weight(steps: &[Step<'_>]) -> usize {
    steps.iter().map(|s| s.rounds).sum()
}

/// What a rank published in `rR.json`.
#[derive(Debug, Clone)]
struct Peer {
    rank: u64,
    host: String,
    /// Its server; `None` for a rank that does not measure.
    address: Option<SocketAddr>,
    nonce: String,
}

/// What this rank saw of another's heartbeat `rQ.alive`.
#[derive(Debug)]
struct Beat {
    /// The file's text when last read.
    text: Option<String>,
    /// When it last changed (or when this rank began to look).
    since: Instant,
    /// The nonce of a heartbeat seen changing: a live process.
    live: Option<String>,
}

/// The network phase of a run under a launcher, from the moment the rank
/// knows it pairs. Its heartbeat runs while it lives; dropped without
/// having finished its part, it writes this rank's `rR.failed`.
pub struct Pairing {
    mode: Mode,
    /// `--net-pairs auto`: a net phase that cannot be planned against
    /// another rank's server falls back to loopback.
    auto: bool,
    rank: u64,
    world: u64,
    host: String,
    /// Where the ranks meet.
    store: Arc<dyn Store>,
    /// `--rendezvous`: the job's token, which every rank's server takes
    /// (no token is published).
    shared_token: Option<String>,
    /// `--rendezvous` on rank 0: the meeting point it serves.
    meeting: Option<MeetingPoint>,
    nonce: String,
    bind: IpAddr,
    bind_from: &'static str,
    timeout: Duration,
    /// When this rank started (ms since the epoch, its clock).
    started_ms: u128,
    cancel: Arc<AtomicBool>,
    completed: Cell<bool>,
    /// Its net phase failed before the barrier by its own fault (its
    /// server, its token, its publishing; not another rank's failure seen
    /// at the barrier): it stays for the others as it exits, as a rank
    /// that ended before its net phase does ([`Pairing::must_be_seen`]).
    failed_early: Cell<bool>,
    heartbeat: Option<Heartbeat>,
    beats: RefCell<BTreeMap<u64, Beat>>,
    /// The nonces of the ranks met at the barrier.
    met: RefCell<BTreeMap<u64, String>>,
    /// `host.extra.net.pairing` of the report.
    facts: RefCell<Value>,
    /// The option keys the pairing filled (a peer, a token): not options
    /// given, so not in the report's configuration.
    filled: RefCell<BTreeSet<std::borrow::Cow<'static, str>>>,
}

impl std::fmt::Debug for Pairing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pairing")
            .field("mode", &self.mode)
            .field("rank", &self.rank)
            .field("rendezvous", &self.store.location())
            .finish()
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// `n` random bytes from the system, as hex.
fn random_hex(n: usize) -> io::Result<String> {
    benchsuite_net::proto::random_bytes(n).map(|b| benchsuite_net::proto::to_hex(&b))
}

/// A thread rewriting `rR.alive` (the nonce and a counter) every `every`
/// until dropped.
struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(store: Arc<dyn Store>, name: String, nonce: String, every: Duration) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let beat = move || {
            let mut n: u64 = 0;
            while !halt.load(Ordering::SeqCst) {
                n += 1;
                let v = json!({"nonce": nonce, "beat": n, "pid": std::process::id()});
                // A missed beat is only late: the next one comes.
                let _ = store.put(&name, &v.to_string(), Put::Beat);
                let next = Instant::now() + every;
                while !halt.load(Ordering::SeqCst) && Instant::now() < next {
                    std::thread::sleep(every.min(Duration::from_millis(50)));
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name("rendezvous-heartbeat".into())
            .spawn(beat)
            .ok();
        Heartbeat { stop, thread }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The net phase's records so far, and the report of its first step.
struct Acc {
    base: Option<Report>,
    records: Vec<Record>,
}

/// A token file, removed when its server stops (or on an error).
struct TokenFile {
    store: Arc<dyn Store>,
    name: String,
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = self.store.remove(&self.name);
    }
}

/// Passes one step's progress to the run's observer; the net phase
/// started the progress and writes its own checkpoints.
struct Steps<'a> {
    inner: &'a mut dyn Observer,
}

impl Observer for Steps<'_> {
    fn record_start(&mut self, id: &str, point: &Point) {
        self.inner.record_start(id, point);
    }

    fn record_done(&mut self, record: &Record) {
        self.inner.record_done(record);
    }
}

mod config;
mod flags;
mod measure;
mod setup;
mod watch;

#[cfg(test)]
mod tests;

pub use config::{NetPairs, PairingConfig};
use flags::*;
