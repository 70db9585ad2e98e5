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
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs as _, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, anyhow, bail};
use benchsuite::cluster::Launcher;
use benchsuite::report::RunProgress;
use benchsuite::runner::{Observer, Plan, PlannedBench};
use benchsuite::{Benchmark, Host, Point, Record, Registry, Report, RunConfig};
use serde_json::{Value, json};

use crate::fleet::{ClusterArgs, Placement, file_part};
use crate::planfile::PlannedPhase;
use crate::rendezvous::{
    DirStore, Job, MIN_TOKEN_LEN, MeetingPoint, Put, Remote, Rendezvous, Store,
};

/// `run --net-pairs`: how network benchmarks measure under a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NetPairs {
    /// `pairwise` under a launcher with `--output-dir` (or `--rendezvous`),
    /// a world size of 2 or more and a net benchmark selected; `off`
    /// otherwise.
    Auto,
    /// Each rank measures its own loopback (an in-process server).
    Off,
    /// Rank pairs i <-> i + N/2 (bisection), each way in turn.
    Pairwise,
    /// All ranks measure the first one at once.
    FanIn,
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
pub struct Split<'r> {
    pub phases: Phases<'r>,
    pub net: Vec<NetPart<'r>>,
}

/// The net benchmarks of one phase (of a plan file, or the command
/// line's), planned against a stand-in server.
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

/// `--rendezvous-timeout` when not given.
const DEFAULT_TIMEOUT: &str = "10m";

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
        text.push_str(s.bench.meta().id);
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

/// `--rendezvous-timeout`, `--net-bind` and `--rendezvous`, checked.
struct Flags {
    timeout: Duration,
    bind: Option<IpAddr>,
    rendezvous: Option<Rendezvous>,
}

/// `--rendezvous-timeout`, `--net-bind` and `--rendezvous`, checked.
fn checked_flags(args: &ClusterArgs) -> Result<Flags> {
    let given = args
        .rendezvous_timeout
        .as_deref()
        .unwrap_or(DEFAULT_TIMEOUT);
    let timeout = benchsuite::units::parse_duration(given)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            anyhow!(
                "invalid value `{given}` for --rendezvous-timeout: give a positive duration, e.g. 10m or 90s"
            )
        })?;
    if let Some(ip) = args.net_bind
        && (ip.is_unspecified() || ip.is_multicast())
    {
        bail!(
            "--net-bind {ip}: give the address of one interface that the other ranks can reach (the rank publishes it), not an unspecified or multicast address"
        );
    }
    let rendezvous = args
        .rendezvous
        .as_deref()
        .map(Rendezvous::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    Ok(Flags {
        timeout,
        bind: args.net_bind,
        rendezvous,
    })
}

/// Says that `--net-bind` / `--rendezvous-timeout` given do nothing here.
fn note_ignored(args: &ClusterArgs, why: &str) {
    let given: Vec<&str> = [
        args.net_bind.is_some().then_some("--net-bind"),
        args.rendezvous_timeout
            .is_some()
            .then_some("--rendezvous-timeout"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !given.is_empty() {
        eprintln!(
            "note: {} ignored: the ranks do not pair up for network benchmarks ({why})",
            given.join(" and ")
        );
    }
}

/// The address to serve on: `--net-bind`, else the host name's first
/// non-loopback address (IPv4 first), else the source address of the
/// default route (found by connecting a UDP socket: nothing is sent),
/// else loopback.
fn bind_address(given: Option<IpAddr>, hostname: Option<&str>) -> (IpAddr, &'static str) {
    if let Some(ip) = given {
        return (ip, "--net-bind");
    }
    if let Some(name) = hostname {
        let mut ips: Vec<IpAddr> = (name, 0)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default();
        ips.retain(|ip| !ip.is_loopback() && !ip.is_unspecified());
        ips.sort_by_key(|ip| ip.is_ipv6());
        if let Some(ip) = ips.first() {
            return (*ip, "the host name's address");
        }
    }
    let routed = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).and_then(|s| {
        // TEST-NET-2: only the route lookup matters.
        s.connect((Ipv4Addr::new(198, 51, 100, 1), 9))?;
        s.local_addr()
    });
    match routed {
        Ok(a) if !a.ip().is_unspecified() && !a.ip().is_loopback() => {
            (a.ip(), "the default route's source address")
        }
        _ => (
            Ipv4Addr::LOCALHOST.into(),
            "loopback: no other address found; reachable from this host only (--net-bind ADDR)",
        ),
    }
}

/// The job's token as `--rendezvous` takes it: without the whitespace
/// around it (a secret file's last newline), the same value for the
/// meeting point, every rank's server and its clients; at least
/// [`MIN_TOKEN_LEN`] characters, since a fake meeting point can test
/// guesses offline.
fn shared_token(given: &str) -> Result<String> {
    let token = given.trim();
    if token.chars().count() < MIN_TOKEN_LEN {
        bail!(
            "--rendezvous needs a token of at least {MIN_TOKEN_LEN} characters (this one has {}): a long random one, the same on every rank, e.g. from `openssl rand -hex 32`",
            token.chars().count()
        );
    }
    Ok(token.to_string())
}

/// Why `launcher` gave no job id: the variable that would have given one.
fn no_job_id(launcher: Launcher) -> &'static str {
    match launcher {
        Launcher::Slurm => "SLURM_JOB_ID is not set",
        Launcher::OpenMpi | Launcher::Pmix | Launcher::Pmi => {
            "PMIX_NAMESPACE is not set (a launcher without PMIx gives none)"
        }
        Launcher::Kubernetes => {
            "a Kubernetes Indexed Job gives none (pass the Job's uid, label batch.kubernetes.io/controller-uid, from the downward API)"
        }
        Launcher::Env => "TORCHELASTIC_RUN_ID is not set, or `none` (torchrun --rdzv-id sets it)",
    }
}

/// This host's name, as the report's `host.hostname` reads it.
fn hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|f| fs::read_to_string(f).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Pairing {
    /// The pairing for this run, or `None` when net benchmarks measure on
    /// loopback as without a launcher (`--net-pairs off`, or `auto` where
    /// pairing cannot apply). `--net-pairs pairwise|fan-in` where it cannot
    /// apply is an error naming the missing piece. Called as soon as the
    /// placement is known: from here on this rank's heartbeat runs, and an
    /// error leaves its failure marker for the other ranks.
    pub fn new(
        args: &ClusterArgs,
        placement: &Placement,
        cfg: &RunConfig,
        registry: &Registry,
        plan: Option<&[RunConfig]>,
    ) -> Result<Option<Pairing>> {
        let flags = checked_flags(args);
        // `--rendezvous` asks for pairing as `--net-pairs pairwise` does:
        // where it cannot apply, an error, not a note.
        let rendezvous = args.rendezvous.is_some();
        let explicit = match args.net_pairs {
            NetPairs::Off => {
                flags?;
                if rendezvous {
                    bail!(
                        "--rendezvous: --net-pairs off measures each rank's own loopback, with no meeting point; give one or the other"
                    );
                }
                note_ignored(args, "--net-pairs off");
                return Ok(None);
            }
            NetPairs::Auto => None,
            NetPairs::Pairwise => Some(Mode::Pairwise),
            NetPairs::FanIn => Some(Mode::FanIn),
        };
        // The command line's selection, or the plan file's phases (none
        // when it could not be read: its error comes next, and leaves the
        // failure marker, for ranks that could read it).
        let configs = plan.unwrap_or(std::slice::from_ref(cfg));
        let net_selected = configs.is_empty()
            || configs.iter().any(|c| {
                registry.select(&c.selectors).is_ok_and(|b| {
                    b.iter()
                        .any(|b| b.meta().module() == benchsuite_net::MODULE)
                })
            });
        let cluster = placement.cluster();
        let why_not = if configs.iter().any(|c| c.options.contains_key("peer")) {
            Some("--peer names the server already; give one or the other")
        } else if !net_selected {
            Some("no net benchmark is selected (e.g. `net` or `net.tcp_throughput`)")
        } else if cluster.is_none() {
            Some(
                "needs a launcher's rank and world size (SLURM_PROCID and SLURM_NTASKS, OMPI_COMM_WORLD_*, PMI_*, RANK and WORLD_SIZE, or JOB_COMPLETION_INDEX with --world-size) and not --no-cluster",
            )
        } else if cluster.is_some_and(|c| c.world_size < 2) {
            Some("needs a world size of 2 or more")
        } else if placement.dir().is_none() && !rendezvous {
            Some(
                "needs --output-dir DIR on a file system all ranks share (the ranks find each other's servers there), or --rendezvous HOST:PORT",
            )
        } else {
            None
        };
        let mode = match (explicit, why_not) {
            (Some(m), Some(why)) => bail!("--net-pairs {}: {why}", m.name()),
            (None, Some(why)) if rendezvous => {
                flags?;
                bail!("--rendezvous: {why}")
            }
            (None, Some(why)) => {
                flags?;
                if net_selected
                    && placement.dir().is_none()
                    && !configs.iter().any(|c| c.options.contains_key("peer"))
                    && cluster.is_some_and(|c| c.world_size >= 2)
                {
                    eprintln!(
                        "note: net benchmarks measure each rank's own loopback: give --output-dir DIR on a shared file system, or --rendezvous HOST:PORT, to measure between ranks (--net-pairs)"
                    );
                }
                note_ignored(args, &format!("--net-pairs auto: {why}"));
                return Ok(None);
            }
            (m, None) => m.unwrap_or(Mode::Pairwise),
        };
        let Some(c) = cluster else {
            return Ok(None); // checked above
        };
        let rank = c.rank;
        let nonce =
            random_hex(8).context("--net-pairs: cannot read random bytes from the system")?;
        let name = hostname();
        let mut step = c.step.as_deref().map_or_else(|| "run".into(), file_part);
        // A requeued Slurm job keeps its id, and its step ids start again.
        if c.launcher == Launcher::Slurm
            && let Some(n) = std::env::var("SLURM_RESTART_COUNT")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&n| n > 0)
        {
            step = format!("{step}.restart{n}");
        }
        let (store, shared_token, meeting, flags): (Arc<dyn Store>, _, _, _) = if rendezvous {
            // Checked before anything is served or published: no
            // failure marker can be written without them.
            let flags = flags?;
            let Some(rdv) = flags.rendezvous.clone() else {
                return Ok(None); // given, so parsed
            };
            let Some(token) = cfg.options.get("token") else {
                bail!(
                    "--rendezvous needs a token shared by every rank (it proves each connection to the meeting point and guards each rank's server; it never crosses the network): set {} or give --token-file PATH, the same on every rank",
                    crate::config::TOKEN_ENV
                );
            };
            let token = shared_token(token)?;
            // Without a job id, two jobs at one HOST:PORT with one token
            // could not be told apart.
            let Some(id) = c.job.as_deref() else {
                bail!(
                    "--rendezvous needs the job's id, so that only this job's ranks meet at {}: {}; give --job-id ID, the same on every rank of the job and another for each job",
                    rdv.given,
                    no_job_id(c.launcher)
                );
            };
            let job = Job {
                id: format!("{id}/{step}"),
                world: c.world_size,
            };
            crate::rendezvous::check_world(&rdv.given, job.world).map_err(|e| anyhow!(e))?;
            if rank == 0 {
                let mp = MeetingPoint::start(&rdv, &token, &job, flags.timeout)
                    .map_err(|e| anyhow!(e))?;
                eprintln!(
                    "rank 0: --net-pairs {}: serving the meeting point on {} (--rendezvous {})",
                    mode.name(),
                    mp.local_addr(),
                    rdv.given
                );
                (mp.store(), Some(token), Some(mp), Ok(flags))
            } else {
                let remote = Remote::new(rdv, &token, job, flags.timeout, cfg.cancel.clone());
                (Arc::new(remote), Some(token), None, Ok(flags))
            }
        } else {
            let Some(job_dir) = placement.dir() else {
                return Ok(None); // checked above
            };
            let dir = job_dir.join(".rendezvous").join(step);
            let store = DirStore::create(dir.clone()).with_context(|| {
                format!(
                    "--output-dir: cannot create the rendezvous directory {}",
                    dir.display()
                )
            })?;
            (Arc::new(store), None, None, flags)
        };
        // An earlier run's files of this rank (same job and step).
        for name in [format!("r{rank}.json"), format!("r{rank}.failed")] {
            store
                .remove(&name)
                .map_err(|e| anyhow!("{}: {e}", store.flag()))?;
        }
        let mut p = Pairing {
            mode,
            auto: explicit.is_none() && !rendezvous,
            rank,
            world: c.world_size,
            host: name
                .clone()
                .or_else(|| c.node.clone())
                .unwrap_or_else(|| "unknown-host".into()),
            store,
            shared_token,
            meeting,
            nonce,
            bind: Ipv4Addr::LOCALHOST.into(),
            bind_from: "",
            timeout: Duration::MAX,
            started_ms: now_ms(),
            cancel: cfg.cancel.clone(),
            completed: Cell::new(false),
            failed_early: Cell::new(false),
            heartbeat: None,
            beats: RefCell::new(BTreeMap::new()),
            met: RefCell::new(BTreeMap::new()),
            facts: RefCell::new(Value::Null),
        };
        // Dropped on an error from here on: the failure marker.
        let flags = flags?;
        p.timeout = flags.timeout;
        (p.bind, p.bind_from) = bind_address(flags.bind, name.as_deref());
        p.heartbeat = Some(Heartbeat::start(
            p.store.clone(),
            format!("r{rank}.alive"),
            p.nonce.clone(),
            p.beat_period(),
        ));
        Ok(Some(p))
    }

    /// How often this rank's heartbeat beats, and others' are read.
    fn beat_period(&self) -> Duration {
        (self.timeout / 4).clamp(Duration::from_millis(50), BEAT)
    }

    /// How often a waiting rank reads the others' heartbeats: often
    /// enough to see them change well within the timeout, seldom enough
    /// for a large world on a shared file system.
    fn look_every(&self) -> Duration {
        (self.timeout / 8).clamp(self.beat_period() / 2, Duration::from_secs(2))
    }

    /// Splits the run's phases (the command line's one, or a plan file's)
    /// into their other benchmarks, run first, in their order, each phase
    /// as it is, and their net benchmarks, measured last between the ranks
    /// (in the phases' order); each part keeps the parameters and options
    /// its benchmarks take. The net parts are planned against a stand-in
    /// server (so what cannot run against another host's server is refused
    /// now); [`Pairing::run`] gives them the partner's. `None` where `auto`
    /// falls back to loopback (said on stderr): the run goes on unsplit,
    /// without this pairing.
    pub fn split<'r>(
        &self,
        registry: &'r Registry,
        phases: &[(Option<PlannedPhase>, RunConfig)],
        host: &Host,
    ) -> Result<Option<Split<'r>>> {
        let mut others: Phases<'r> = (Vec::new(), Vec::new());
        let mut net_parts = Vec::new();
        for (phase, cfg) in phases {
            let explain = |e: benchsuite::ConfigError| match phase {
                Some(p) => p.explain(e),
                None => anyhow!("{e}"),
            };
            let selected = registry.select(&cfg.selectors).map_err(explain)?;
            let (net, other): (Vec<&dyn Benchmark>, Vec<&dyn Benchmark>) = selected
                .into_iter()
                .partition(|b| b.meta().module() == benchsuite_net::MODULE);
            let part = |benches: &[&dyn Benchmark]| {
                let mut c = cfg.clone();
                c.selectors = benches.iter().map(|b| b.meta().id.to_string()).collect();
                c.sweep
                    .retain(|k, _| benches.iter().any(|b| b.meta().param(k).is_some()));
                c.options.retain(|k, _| {
                    benches
                        .iter()
                        .any(|b| b.options().iter().any(|o| o.name == k))
                });
                c
            };
            if !other.is_empty() {
                let c = part(&other);
                let plan =
                    benchsuite::runner::plan_on(registry, &c, host.clone()).map_err(explain)?;
                others.0.push((phase.clone(), c));
                others.1.push(plan);
            }
            if net.is_empty() {
                continue;
            }
            let mut c = part(&net);
            c.options.insert(
                "peer".into(),
                format!("{}:{}", self.bind, benchsuite_net::DEFAULT_PORT),
            );
            c.options.insert("token".into(), "stand-in".into());
            match benchsuite::runner::plan_on(registry, &c, host.clone()) {
                Ok(plan) => net_parts.push(NetPart {
                    phase: phase.clone(),
                    cfg: c,
                    plan,
                }),
                Err(e) if self.auto => {
                    eprintln!(
                        "note: net benchmarks measure each rank's own loopback: they cannot measure another rank's server ({:#}); --net-pairs pairwise says so as an error",
                        explain(e)
                    );
                    self.completed.set(true);
                    return Ok(None);
                }
                Err(e) => bail!(
                    "--net-pairs {}: the net benchmarks measure another rank's server: {:#} (--net-pairs off measures each rank's loopback)",
                    self.mode.name(),
                    explain(e)
                ),
            }
        }
        if net_parts.is_empty() {
            self.completed.set(true);
            return Ok(None);
        }
        Ok(Some(Split {
            phases: others,
            net: net_parts,
        }))
    }

    /// An idle rank (another task of its node measures): says so in the
    /// rendezvous, so that the measuring ranks do not wait for it, and
    /// stays until all ranks met (the barrier), so that they can tell its
    /// file from an earlier run's.
    pub fn announce_idle(&self) -> Result<()> {
        self.publish_join(None, "")
            .map_err(|e| anyhow!("{}: {e}", self.store.flag()))?;
        eprintln!(
            "rank {}: --net-pairs {}: idle; staying until every rank reaches the network phase ({})",
            self.rank,
            self.mode.name(),
            self.store.place()
        );
        match self.join_all(None, "") {
            // Now with the ranks met: final (a meeting point's needs no
            // list of them).
            Ok(_) if !self.store.fresh() => {
                if let Err(e) = self.publish_join(None, "") {
                    eprintln!("rank {}: --net-pairs: {e}", self.rank);
                }
            }
            Err(why) => {
                eprintln!(
                    "rank {}: --net-pairs {}: {why}",
                    self.rank,
                    self.mode.name()
                );
                self.write_failed(&why);
            }
            Ok(_) => {}
        }
        self.completed.set(true);
        Ok(())
    }

    /// Runs the net parts ([`Pairing::split`]), one point after the other:
    /// serves, meets the other ranks, measures its partner's server. Never
    /// fails: what cannot be measured becomes failed (or, without a
    /// partner, skipped) records saying why. Each record is named after
    /// its part's phase; the report's selectors are every part's.
    pub fn run(&self, parts: &[NetPart<'_>], observer: &mut dyn Observer) -> Report {
        let steps: Vec<Step<'_>> = parts
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.plan.benches.iter().flat_map(move |pb| {
                    pb.points.iter().map(move |p| Step {
                        bench: pb.bench,
                        point: p.clone(),
                        part: i,
                        rounds: n.cfg.rounds.max(1),
                    })
                })
            })
            .collect();
        let total = weight(&steps);
        observer.start(total);
        let mut acc = Acc {
            base: None,
            records: Vec::new(),
        };
        if let Err(why) = self.phase(parts, &steps, observer, &mut acc) {
            let cancelled = self.cancel.load(Ordering::SeqCst);
            eprintln!(
                "rank {}: --net-pairs {}: {why}",
                self.rank,
                self.mode.name()
            );
            if !cancelled {
                let left = &steps[acc.records.len().min(steps.len())..];
                self.record_unmeasured(
                    parts,
                    left,
                    Record::failed,
                    &why.to_string(),
                    observer,
                    &mut acc,
                );
            }
        }
        self.completed.set(true);
        let mut report = match acc.base {
            Some(r) => r,
            None => {
                let empty = Plan {
                    benches: Vec::new(),
                    ctx: parts[0].plan.ctx.clone(),
                };
                benchsuite::runner::run_plan(&empty, &parts[0].cfg, &mut benchsuite::runner::Silent)
            }
        };
        let done = weight(&steps[..acc.records.len().min(steps.len())]);
        report.records = acc.records;
        report.config.selectors = Vec::new();
        for s in parts.iter().flat_map(|n| &n.cfg.selectors) {
            if !report.config.selectors.contains(s) {
                report.config.selectors.push(s.clone());
            }
        }
        report.progress = (done < total).then_some(RunProgress {
            done,
            planned: total,
        });
        report
    }

    /// The report as the user asked for it (selectors and parameters as
    /// given on the command line, not split; with a plan file, `plan`, its
    /// phases' as without pairing), with `host.extra.net.pairing`:
    /// the mode, this rank's role, whom it measured and who measured it.
    pub fn finish(&self, report: &mut Report, cfg: &RunConfig, plan: Option<&[RunConfig]>) {
        match plan.and_then(|p| p.first().map(|first| (p, first))) {
            None => {
                report.config.selectors = cfg.selectors.clone();
                report.config.params = cfg.sweep.clone();
            }
            // As without pairing: the first phase's settings, and every
            // phase's selectors (the first unit run may be a later phase's,
            // and the split narrowed them to benchmark ids).
            Some((phases, first)) => {
                let c = &mut report.config;
                c.selectors.clear();
                for s in phases.iter().flat_map(|p| &p.selectors) {
                    if !c.selectors.contains(s) {
                        c.selectors.push(s.clone());
                    }
                }
                c.params = first.sweep.clone();
                c.runs = first.runs;
                c.rounds = first.rounds.max(1);
                c.min_sample_time_s = first.min_sample_time.as_secs_f64();
                c.warmup_time_s = first.warmup.as_secs_f64();
                c.duration_s = first.duration.map(|d| d.as_secs_f64());
                c.interval_s = first.duration.map(|_| first.interval().as_secs_f64());
                c.quick = first.quick;
            }
        }
        // The partner's address and token were the pairing's, not
        // options given; the options given are all shown (secrets
        // redacted), whichever phase took them.
        let options = &mut report.config.options;
        options.remove("peer");
        options.remove("token");
        for (k, v) in &cfg.options {
            options.entry(k.clone()).or_insert_with(|| {
                if benchsuite::bench::is_secret_key(k) {
                    benchsuite::bench::REDACTED.to_string()
                } else {
                    v.clone()
                }
            });
        }
        let facts = self.facts.borrow().clone();
        if !facts.is_null() {
            let net = report
                .host
                .extra
                .entry(benchsuite_net::MODULE.to_string())
                .or_insert_with(|| json!({}));
            if !net.is_object() {
                *net = json!({});
            }
            net["pairing"] = facts;
        }
    }

    /// Serves, then meets and measures; a failure is marked (`rR.failed`)
    /// while the server still runs, so that its clients learn it first.
    fn phase(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
    ) -> Result<(), String> {
        let started = (|| -> Result<_, String> {
            // With --rendezvous, the job's token; else a fresh one,
            // published for this rank's clients only.
            let Some(token) = self.shared_token.clone() else {
                let token = random_hex(32)
                    .map_err(|e| format!("cannot read random bytes from the system: {e}"))?;
                let server = self.start_server(&token)?;
                let token_file = TokenFile {
                    store: self.store.clone(),
                    name: format!("r{}-{}.token", self.rank, self.nonce),
                };
                self.store.put(&token_file.name, &token, Put::Secret)?;
                return Ok((server, Some(token_file)));
            };
            Ok((self.start_server(&token)?, None))
        })();
        match started {
            Ok((server, token_file)) => {
                let addr = server.local_addr();
                let r = self.meet_and_measure(parts, steps, observer, acc, addr);
                if let Err(why) = &r {
                    self.write_failed(why);
                }
                server.shutdown();
                drop(token_file);
                r
            }
            Err(why) => {
                self.write_failed(&why);
                self.failed_early.set(true);
                Err(why)
            }
        }
    }

    fn meet_and_measure(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
        addr: SocketAddr,
    ) -> Result<(), String> {
        let hash = schedule_hash(self.mode, steps);
        self.publish_join(Some(addr), &hash)
            .inspect_err(|_| self.failed_early.set(true))?;
        eprintln!(
            "rank {}: --net-pairs {}: serving on {addr} ({}); waiting for the other {} rank(s) {}",
            self.rank,
            self.mode.name(),
            self.bind_from,
            self.world - 1,
            self.store.place()
        );
        let peers = self.join_all(Some(addr), &hash)?;
        // Now with the ranks met: a rank that comes late and finds this
        // rank gone still knows the file is this run's (at a meeting
        // point, it is anyway).
        if !self.store.fresh() {
            self.publish_join(Some(addr), &hash)?;
        }
        let measuring: Vec<u64> = peers
            .values()
            .filter(|p| p.address.is_some())
            .map(|p| p.rank)
            .collect();
        let (rounds, odd) = schedule(self.mode, &measuring);
        let peer_json = |q: u64| {
            let p = &peers[&q];
            json!({"rank": q, "host": p.host, "address": p.address.map(|a| a.to_string())})
        };
        let served: Vec<Value> = rounds
            .iter()
            .flat_map(|r| r.pairs.iter())
            .filter(|(_, s)| *s == self.rank)
            .map(|(c, _)| peer_json(*c))
            .collect();
        let against: Vec<Value> = rounds
            .iter()
            .flat_map(|r| r.pairs.iter())
            .filter(|(c, _)| *c == self.rank)
            .map(|(_, s)| peer_json(*s))
            .collect();
        *self.facts.borrow_mut() = json!({
            "mode": self.mode.name(),
            "rank": self.rank,
            "address": addr.to_string(),
            "measuring_ranks": measuring,
            "measured_against": against.first(),
            "served": served,
            "rendezvous": self.store.location(),
        });
        let mut measured = false;
        for (i, round) in rounds.iter().enumerate() {
            let tag = i + 1;
            let clients = round.clients();
            if let Some(&(_, srv)) = round.pairs.iter().find(|(c, _)| *c == self.rank) {
                let p = &peers[&srv];
                let note = match self.mode {
                    Mode::Pairwise => format!(
                        "cross-host (--net-pairs pairwise): measured against the server of rank {srv} (host {}) at {}; bisection round {tag} of {}, {} pair(s) measuring at once",
                        p.host,
                        p.address.map(|a| a.to_string()).unwrap_or_default(),
                        rounds.len(),
                        round.pairs.len()
                    ),
                    Mode::FanIn => format!(
                        "cross-host (--net-pairs fan-in): one of {} clients measuring the server of rank {srv} (host {}) at {} at once; this client's own result",
                        round.pairs.len(),
                        p.host,
                        p.address.map(|a| a.to_string()).unwrap_or_default()
                    ),
                };
                self.measure(parts, steps, observer, acc, p, &clients, &peers, tag, &note)?;
                measured = true;
            }
            self.wait_markers(
                &clients,
                &[],
                &peers,
                &format!("done-{tag}"),
                &format!("to finish round {tag}"),
            )?;
        }
        if !measured {
            let why = match (self.mode, odd) {
                _ if measuring.len() < 2 => format!(
                    "no partner: rank {} is the only one that measures (the others are idle: one task per node; --per-task makes every task measure)",
                    self.rank
                ),
                (Mode::Pairwise, Some(_)) => format!(
                    "no partner: {} ranks measure, an odd number, and rank {} is the one left out of the bisection pairs",
                    measuring.len(),
                    self.rank
                ),
                _ => format!(
                    "this rank served the fan-in ({} clients at once); their reports hold the results",
                    measuring.len() - 1
                ),
            };
            eprintln!(
                "rank {}: --net-pairs {}: {why}",
                self.rank,
                self.mode.name()
            );
            self.record_unmeasured(parts, steps, Record::skipped, &why, observer, acc);
        }
        Ok(())
    }

    /// One record per step this rank does not measure (`make`: skipped or
    /// failed), with `why`, reported to the observer as it goes.
    fn record_unmeasured(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        make: fn(&str, Point, String) -> Record,
        why: &str,
        observer: &mut dyn Observer,
        acc: &mut Acc,
    ) {
        for s in steps {
            let id = s.bench.meta().id;
            let mut r = make(
                id,
                s.point.clone(),
                format!("--net-pairs {}: {why}", self.mode.name()),
            );
            r.phase = parts[s.part].phase.as_ref().map(|p| p.name.clone());
            observer.record_start(id, &s.point);
            observer.record_done(&r);
            acc.records.push(r);
        }
    }

    /// Measures `server` point by point, the round's `clients` starting
    /// each point together; stops when the server's rank failed.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
        server: &Peer,
        clients: &[u64],
        peers: &BTreeMap<u64, Peer>,
        round: usize,
        note: &str,
    ) -> Result<(), String> {
        let addr = server
            .address
            .ok_or_else(|| format!("rank {} published no address", server.rank))?;
        let token = match &self.shared_token {
            Some(t) => t.clone(),
            None => self
                .store
                .get(&format!("r{}-{}.token", server.rank, server.nonce))
                .map_err(|e| format!("cannot read rank {}'s token {e}", server.rank))?,
        };
        let total = weight(steps);
        for (k, s) in steps.iter().enumerate() {
            let part = &parts[s.part];
            let tag = format!("ready-{round}-{}", k + 1);
            if let Some(why) = self.failed_now(server.rank) {
                return Err(why);
            }
            self.marker(&tag)?;
            // At the meeting point, whose names are counted: step k-1's
            // marker, since every client passed that step (each wrote
            // step k's) and none waits for it any more.
            if k >= 2 && self.shared_token.is_some() {
                let _ = self.store.remove(&format!(
                    "r{}-{}.ready-{round}-{}",
                    self.rank,
                    self.nonce,
                    k - 1
                ));
            }
            self.wait_markers(
                clients,
                &[server.rank],
                peers,
                &tag,
                &format!("to start step {} of round {round}", k + 1),
            )?;
            let mut ctx = part.plan.ctx.clone();
            ctx.options.insert("peer".into(), addr.to_string());
            ctx.options.insert("token".into(), token.trim().to_string());
            let step = Plan {
                benches: vec![PlannedBench {
                    bench: s.bench,
                    points: vec![s.point.clone()],
                }],
                ctx,
            };
            let mut r =
                benchsuite::runner::run_plan(&step, &part.cfg, &mut Steps { inner: observer });
            for rec in &mut r.records {
                rec.notes.push(note.to_string());
                rec.phase = part.phase.as_ref().map(|p| p.name.clone());
            }
            acc.records.append(&mut r.records);
            if acc.base.is_none() {
                acc.base = Some(r);
            }
            if observer.wants_checkpoints()
                && let Some(base) = &acc.base
            {
                let mut so_far = base.clone();
                so_far.records = acc.records.clone();
                so_far.progress = Some(RunProgress {
                    done: weight(&steps[..acc.records.len().min(steps.len())]),
                    planned: total,
                });
                observer.checkpoint(&so_far);
            }
            if self.cancel.load(Ordering::SeqCst) {
                return Err("interrupted (Ctrl-C)".into());
            }
        }
        self.marker(&format!("done-{round}"))
    }

    /// This rank's server on `--net-bind`, an ephemeral port, with room
    /// for every other rank measuring it at once (fan-in).
    fn start_server(&self, token: &str) -> Result<benchsuite_net::Server, String> {
        let world = usize::try_from(self.world).unwrap_or(usize::MAX);
        let mut c = benchsuite_net::ServerConfig::new(
            SocketAddr::new(self.bind, 0),
            Some(token.to_string()),
        );
        c.max_connections = c.max_connections.max(world.saturating_mul(16));
        c.max_per_address = c.max_per_address.max(world.saturating_mul(8));
        c.max_data_threads = c.max_data_threads.max(world.saturating_mul(8));
        benchsuite_net::Server::start(c).map_err(|e| {
            format!(
                "cannot start this rank's server on {} ({}): {}",
                self.bind,
                self.bind_from,
                benchsuite::error_chain(&e)
            )
        })
    }

    /// `rR.json`: this rank's server (`None`: idle), nonce and schedule
    /// hash, and the nonces of the ranks it met (once it did). Not at a
    /// meeting point, which holds this run's entries only (there a rank's
    /// `rR.json` is this run's), and whose store would not hold a list of
    /// the whole world per rank.
    fn publish_join(&self, address: Option<SocketAddr>, schedule: &str) -> Result<(), String> {
        let met: serde_json::Map<String, Value> = if self.store.fresh() {
            serde_json::Map::new()
        } else {
            self.met
                .borrow()
                .iter()
                .map(|(q, n)| (q.to_string(), Value::from(n.as_str())))
                .collect()
        };
        let v = json!({
            "rank": self.rank,
            "host": self.host,
            "role": if address.is_some() { "measure" } else { "idle" },
            "address": address.map(|a| a.to_string()),
            "nonce": self.nonce,
            "mode": self.mode.name(),
            "schedule": schedule,
            "met": met,
            "written_at_ms": now_ms() as u64,
            "pid": std::process::id(),
        });
        self.store.put(
            &format!("r{}.json", self.rank),
            &v.to_string(),
            Put::Durable,
        )
    }

    /// An empty marker file `rR-NONCE.TAG`.
    fn marker(&self, tag: &str) -> Result<(), String> {
        self.store.put(
            &format!("r{}-{}.{tag}", self.rank, self.nonce),
            "",
            Put::Durable,
        )
    }

    fn write_failed(&self, why: &str) {
        self.write_failed_as(why, Put::Durable);
    }

    /// [`Self::write_failed`], published `how` ([`Put::Last`] as the rank
    /// exits).
    fn write_failed_as(&self, why: &str, how: Put) {
        let v = json!({
            "rank": self.rank,
            "host": self.host,
            "nonce": self.nonce,
            "reason": why,
            "written_at_ms": now_ms() as u64,
        });
        let _ = self
            .store
            .put(&format!("r{}.failed", self.rank), &v.to_string(), how);
    }

    /// Why rank `q` failed, if it wrote so in this run: the marker's nonce
    /// is the one met or seen beating, or it was written after this rank
    /// started, or the store holds this run's only (a meeting point: rank
    /// 0 may have failed before this rank started).
    fn failed(&self, q: u64) -> Option<String> {
        let text = self.store.get(&format!("r{q}.failed")).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        let nonce = v["nonce"].as_str();
        let known = nonce.is_some_and(|n| {
            self.met.borrow().get(&q).is_some_and(|m| m == n)
                || self
                    .beats
                    .borrow()
                    .get(&q)
                    .and_then(|b| b.live.as_deref())
                    .is_some_and(|l| l == n)
        });
        let after = v["written_at_ms"]
            .as_u64()
            .is_some_and(|w| u128::from(w) >= self.started_ms);
        (known || after || self.store.fresh()).then(|| {
            format!(
                "rank {q} (host {}) failed: {}",
                v["host"].as_str().unwrap_or("?"),
                v["reason"].as_str().unwrap_or("no reason given")
            )
        })
    }

    /// [`Pairing::failed`], looked up through a listing.
    fn failed_now(&self, q: u64) -> Option<String> {
        self.listing()
            .ok()?
            .contains(&format!("r{q}.failed"))
            .then(|| self.failed(q))
            .flatten()
    }

    /// The names in the store now (a listing: see [`Store::list`]); an
    /// error when the meeting point is lost.
    fn listing(&self) -> Result<HashSet<String>, String> {
        self.store.list()
    }

    /// Reads rank `q`'s heartbeat: a change since the last look is a sign
    /// of life (and tells its nonce).
    fn look(&self, q: u64, names: &HashSet<String>) {
        let name = format!("r{q}.alive");
        let text = names
            .contains(&name)
            .then(|| self.store.get(&name).ok())
            .flatten()
            .filter(|t| !t.is_empty());
        let mut beats = self.beats.borrow_mut();
        let Some(b) = beats.get_mut(&q) else {
            beats.insert(
                q,
                Beat {
                    text,
                    since: Instant::now(),
                    live: None,
                },
            );
            return;
        };
        if text.is_some() && text != b.text {
            b.live = text
                .as_deref()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .and_then(|v| v["nonce"].as_str().map(str::to_string));
            b.since = Instant::now();
        }
        if text.is_some() {
            b.text = text;
        }
    }

    /// Why rank `q` counts as failed for having started again: a live
    /// heartbeat whose nonce is not the one met at the barrier (it would
    /// never write the markers this rank waits for).
    fn restarted(&self, q: u64) -> Option<String> {
        let met = self.met.borrow();
        let met = met.get(&q)?;
        let beats = self.beats.borrow();
        let live = beats.get(&q)?.live.as_ref()?;
        (live != met).then(|| {
            format!(
                "rank {q} restarted: its heartbeat r{q}.alive is another run's than the one met at the barrier {}",
                self.store.place()
            )
        })
    }

    /// Why rank `q` counts as gone: its heartbeat has not changed for
    /// `--rendezvous-timeout`.
    fn gone(&self, q: u64) -> Option<String> {
        let beats = self.beats.borrow();
        let b = beats.get(&q)?;
        if b.since.elapsed() < self.timeout {
            return None;
        }
        let file = format!("r{q}.alive");
        Some(match (&b.text, &b.live) {
            (None, _) => format!(
                "rank {q} shows no sign of life ({file} absent: it never started, or not with this {})",
                self.store.flag()
            ),
            (Some(_), None) => {
                // A marker not counted: written before this rank started,
                // by a run not seen beating (see `failed`).
                let marker = self
                    .store
                    .get(&format!("r{q}.failed"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|v| v["reason"].as_str().map(str::to_string))
                    .map(|why| {
                        format!(
                            "; its r{q}.failed, from before this rank started (this run's or an earlier one's), says: {why}"
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "rank {q}'s heartbeat {file} has not changed in {} (an earlier run's, or this run's rank {q} ended or hangs){marker}",
                    humantime_secs(self.timeout)
                )
            }
            (Some(_), Some(_)) => format!(
                "rank {q}'s heartbeat {file} stopped {} ago (killed, or its host is down)",
                humantime_secs(b.since.elapsed())
            ),
        })
    }

    /// Waits until `ready(q, listing)` for every rank `q` of `ranks` but
    /// this one; stops early when `ready` says why not, when one of them
    /// (or of `watch`) failed, when one's heartbeat did not change for
    /// `--rendezvous-timeout` (judged only while the store answers), and
    /// when the store is lost (a meeting point silent for that long).
    /// Looks every 10 ms at first, every 250 ms at most.
    fn wait_all(
        &self,
        ranks: &[u64],
        watch: &[u64],
        what: &str,
        file: impl Fn(u64) -> String,
        mut ready: impl FnMut(u64, &HashSet<String>) -> Result<bool, String>,
    ) -> Result<(), String> {
        let mut pause = Duration::from_millis(10);
        let mut looked: Option<Instant> = None;
        let mut left: Vec<u64> = ranks.iter().copied().filter(|&q| q != self.rank).collect();
        let watch: Vec<u64> = watch.iter().copied().filter(|&q| q != self.rank).collect();
        let mut answered = true;
        loop {
            let names = self.listing()?;
            // While the store did not answer, nobody's heartbeat could be
            // seen: their clocks start again when it answers.
            let answering = self.store.answering();
            if answering && !answered {
                for b in self.beats.borrow_mut().values_mut() {
                    b.since = Instant::now();
                }
            }
            answered = answering;
            if looked.is_none_or(|t| t.elapsed() >= self.look_every()) {
                for &q in left.iter().chain(&watch) {
                    self.look(q, &names);
                }
                looked = Some(Instant::now());
            }
            if let Some(why) = left.iter().chain(&watch).find_map(|&q| self.restarted(q)) {
                return Err(why);
            }
            let mut stop = None;
            left.retain(|&q| match ready(q, &names) {
                Ok(done) => !done,
                Err(why) => {
                    stop.get_or_insert(why);
                    true
                }
            });
            if let Some(why) = stop {
                return Err(why);
            }
            if left.is_empty() {
                return Ok(());
            }
            if let Some(why) = left
                .iter()
                .chain(&watch)
                .filter(|q| names.contains(&format!("r{q}.failed")))
                .find_map(|&q| self.failed(q))
            {
                return Err(why);
            }
            if self.cancel.load(Ordering::SeqCst) {
                return Err("interrupted (Ctrl-C)".into());
            }
            if let Some((q, why)) = left
                .iter()
                .chain(&watch)
                .filter(|_| self.store.answering())
                .find_map(|&q| self.gone(q).map(|w| (q, w)))
            {
                let awaited = if left.contains(&q) {
                    format!("{} absent {}", file(q), self.store.place())
                } else {
                    format!("its server measured, {}", self.store.place())
                };
                let trouble = self
                    .store
                    .trouble()
                    .map(|t| format!("; {t}"))
                    .unwrap_or_default();
                return Err(format!(
                    "gave up waiting for rank {q} {what} ({awaited}): {why}{trouble}; --rendezvous-timeout sets the wait"
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 3 / 2).min(Duration::from_millis(250));
        }
    }

    /// The barrier: every rank's `rR.json` of this run (this one serving
    /// on `addr`, or idle), with the same `schedule` where both measure.
    fn join_all(
        &self,
        addr: Option<SocketAddr>,
        schedule: &str,
    ) -> Result<BTreeMap<u64, Peer>, String> {
        let mut peers = BTreeMap::new();
        let all: Vec<u64> = (0..self.world).collect();
        let name = |q: u64| format!("r{q}.json");
        self.wait_all(&all, &[], "to reach the network phase", name, |q, names| {
            if !names.contains(&name(q)) {
                return Ok(false);
            }
            let Ok(text) = self.store.get(&name(q)) else {
                return Ok(false);
            };
            let Ok(v) = serde_json::from_str::<Value>(&text) else {
                return Ok(false);
            };
            let nonce = v["nonce"].as_str().unwrap_or_default();
            let live = self
                .beats
                .borrow()
                .get(&q)
                .and_then(|b| b.live.clone())
                .is_some_and(|l| l == nonce);
            let met_me = v["met"][self.rank.to_string()].as_str() == Some(self.nonce.as_str());
            if !(live || met_me || self.store.fresh()) {
                return Ok(false);
            }
            let address = v["address"].as_str().and_then(|a| a.parse().ok());
            let host = v["host"].as_str().unwrap_or("?").to_string();
            if addr.is_some() && address.is_some() && v["schedule"].as_str() != Some(schedule) {
                let theirs = v["mode"].as_str().unwrap_or("?");
                return Err(if theirs == self.mode.name() {
                    format!(
                        "rank {q} (host {host}) and rank {} (host {}) would measure different net steps (benchmarks, parameters or --rounds differ); give every rank the same command",
                        self.rank, self.host
                    )
                } else {
                    format!(
                        "rank {q} (host {host}) runs --net-pairs {theirs} and rank {} (host {}) --net-pairs {}; give every rank the same command",
                        self.rank,
                        self.host,
                        self.mode.name()
                    )
                });
            }
            peers.insert(
                q,
                Peer {
                    rank: q,
                    host,
                    address,
                    nonce: nonce.to_string(),
                },
            );
            Ok(true)
        })?;
        peers.insert(
            self.rank,
            Peer {
                rank: self.rank,
                host: self.host.clone(),
                address: addr,
                nonce: self.nonce.clone(),
            },
        );
        *self.met.borrow_mut() = peers.iter().map(|(q, p)| (*q, p.nonce.clone())).collect();
        Ok(peers)
    }

    fn wait_markers(
        &self,
        ranks: &[u64],
        watch: &[u64],
        peers: &BTreeMap<u64, Peer>,
        tag: &str,
        what: &str,
    ) -> Result<(), String> {
        let name = |q: u64| {
            format!(
                "r{q}-{}.{tag}",
                peers.get(&q).map_or("", |p| p.nonce.as_str())
            )
        };
        self.wait_all(ranks, watch, what, name, |q, names| {
            Ok(names.contains(&name(q)))
        })
    }
}

fn humantime_secs(d: Duration) -> String {
    benchsuite::units::format_seconds(d.as_secs_f64())
}

impl Drop for Pairing {
    fn drop(&mut self) {
        if !self.completed.get() {
            self.write_failed_as(
                if std::thread::panicking() {
                    "it panicked before its network phase ended"
                } else {
                    "it ended before its network phase (an error or Ctrl-C; see its log)"
                },
                Put::Last,
            );
        }
        if self.must_be_seen() {
            self.stay_until_seen();
        }
        // This rank reads the store no more.
        let _ = self.store.put(
            &format!("r{}-{}.left", self.rank, self.nonce),
            "",
            Put::Last,
        );
        if let Some(m) = self.meeting.take() {
            m.close(self.rank, self.timeout, &self.cancel, !self.completed.get());
        }
    }
}

impl Pairing {
    /// Ends `run`'s command: on rank 0 of `--rendezvous`, the meeting
    /// point is kept until the other ranks no longer need it (every one
    /// left, or is silent for `--rendezvous-timeout`; after a failure of
    /// this rank, every one left or learnt of it, or is silent that long,
    /// and one never seen for [`crate::rendezvous::LINGER`] at most). An
    /// error is printed first, as `main` prints it, so that it shows at
    /// once (then the exit code is still 2).
    pub fn end(pairing: Option<Pairing>, result: Result<i32>) -> Result<i32> {
        let Some(mut p) = pairing else {
            return result;
        };
        let meeting = p.meeting.take();
        let failed = !p.completed.get();
        if meeting.is_none() && !p.must_be_seen() {
            return result;
        }
        // Printed before the wait for the others, so that it shows at once.
        let result = match result {
            Err(e) if !crate::is_broken_pipe(&e) => {
                eprintln!("error: {e:#}");
                Ok(2)
            }
            r => r,
        };
        let (rank, timeout, cancel) = (p.rank, p.timeout, p.cancel.clone());
        // Its failure marker (if it failed) and its leaving.
        drop(p);
        if let Some(meeting) = meeting {
            meeting.close(rank, timeout, &cancel, failed);
        }
        result
    }

    /// Whether this rank failed (before or in its net phase) before the
    /// barrier (no nonce of it met), in a directory that keeps earlier
    /// runs' files, with its heartbeat beating: its failure marker could
    /// pass for an earlier run's. Another rank counts such a marker only
    /// when it was written after that rank started, or when its nonce is
    /// the one that rank saw beating; a rank that started after this one
    /// failed needs the latter. Not after Ctrl-C.
    fn must_be_seen(&self) -> bool {
        (!self.completed.get() || self.failed_early.get())
            && self.world > 1
            && self.heartbeat.is_some()
            && !self.store.fresh()
            && self.met.borrow().is_empty()
            && !self.cancel.load(Ordering::SeqCst)
    }

    /// After a failure before the barrier ([`Self::must_be_seen`]): keeps
    /// beating until every other rank has reached the barrier in this run
    /// (its `rQ.json` carries the nonce its heartbeat showed: from there
    /// on it watches this rank's heartbeat), or failed, then long enough
    /// for them to see this heartbeat change (a failed rank that stays
    /// watches too). Otherwise a rank that started after this one failed
    /// would wait the whole `--rendezvous-timeout` out for it. A rank busy
    /// with its other benchmarks (or stalled) is waited for, one that left
    /// is not, one never seen [`crate::rendezvous::LINGER`] at most. The
    /// wait lasts `--rendezvous-timeout` at most (a rank arriving later
    /// gives up as soon), then the few seconds a rank that just arrived
    /// needs to see the change; Ctrl-C ends it.
    fn stay_until_seen(&self) {
        let never = self.timeout.min(crate::rendezvous::LINGER);
        let mut said = false;
        let started = Instant::now();
        let mut left: Vec<u64> = (0..self.world).filter(|&q| q != self.rank).collect();
        let mut looked: Option<Instant> = None;
        let mut pause = Duration::from_millis(10);
        let mut watching = false;
        // Rank q's entry `name` (`rQ.json`, `rQ-NONCE.left`), if this run's:
        // the nonce of its heartbeat.
        let this_runs = |q: u64, names: &HashSet<String>, live: &str| {
            let barrier = format!("r{q}.json");
            names.contains(&format!("r{q}-{live}.left"))
                || names.contains(&barrier)
                    && self
                        .store
                        .get(&barrier)
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .is_some_and(|v| v["nonce"].as_str() == Some(live))
        };
        while !left.is_empty() {
            if self.cancel.load(Ordering::SeqCst) || started.elapsed() >= self.timeout {
                return;
            }
            let Ok(names) = self.listing() else {
                return;
            };
            if looked.is_none_or(|t| t.elapsed() >= self.look_every()) {
                for &q in &left {
                    self.look(q, &names);
                }
                looked = Some(Instant::now());
            }
            let late = started.elapsed() >= never;
            left.retain(|&q| {
                let live = self.beats.borrow().get(&q).and_then(|b| b.live.clone());
                let failed = names.contains(&format!("r{q}.failed")) && self.failed(q).is_some();
                let there = live.as_deref().is_some_and(|l| this_runs(q, &names, l));
                watching |= failed || there;
                // A rank seen beating is waited for as at the barrier (a
                // stalled heartbeat may come back), within the bound.
                let gone = live.is_none() && late;
                !(failed || there || gone)
            });
            if !said && (!left.is_empty() || watching) {
                said = true;
                eprintln!(
                    "rank {}: staying until the other ranks reach the network barrier and see its failure marker (--rendezvous-timeout at most, {}, and a few seconds; a rank never seen: {}; Ctrl-C ends it)",
                    self.rank,
                    humantime_secs(self.timeout),
                    humantime_secs(never)
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 3 / 2).min(Duration::from_millis(250));
        }
        if !watching {
            return;
        }
        // Two of their looks, and a beat between them.
        let until = Instant::now() + self.look_every() * 2 + self.beat_period();
        while Instant::now() < until && !self.cancel.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_is_a_bisection_each_way() {
        let (r, odd) = schedule(Mode::Pairwise, &[0, 1, 2, 3]);
        assert_eq!(r[0].pairs, [(2, 0), (3, 1)]);
        assert_eq!(r[1].pairs, [(0, 2), (1, 3)]);
        assert_eq!(odd, None);
        let (r, odd) = schedule(Mode::Pairwise, &[0, 2, 4]);
        assert_eq!(r[0].pairs, [(2, 0)]);
        assert_eq!(r[1].pairs, [(0, 2)]);
        assert_eq!(odd, Some(4));
        assert_eq!(schedule(Mode::Pairwise, &[5]), (Vec::new(), None));
    }

    #[test]
    fn fan_in_has_every_other_rank_measure_the_first() {
        let (r, odd) = schedule(Mode::FanIn, &[1, 3, 4]);
        assert_eq!(
            r,
            [Round {
                pairs: vec![(3, 1), (4, 1)]
            }]
        );
        assert_eq!(odd, None);
    }

    /// A pairing of rank 0 in a world of 2 meeting in `dir`, started now.
    fn pairing(dir: &std::path::Path) -> Pairing {
        Pairing {
            mode: Mode::Pairwise,
            auto: false,
            rank: 0,
            world: 2,
            host: "h0".into(),
            store: Arc::new(DirStore::create(dir.to_path_buf()).unwrap()),
            shared_token: None,
            meeting: None,
            nonce: "00000000000000aa".into(),
            bind: Ipv4Addr::LOCALHOST.into(),
            bind_from: "--net-bind",
            timeout: Duration::from_secs(60),
            started_ms: now_ms(),
            cancel: Arc::new(AtomicBool::new(false)),
            completed: Cell::new(true),
            failed_early: Cell::new(false),
            heartbeat: None,
            beats: RefCell::new(BTreeMap::new()),
            met: RefCell::new(BTreeMap::new()),
            facts: RefCell::new(Value::Null),
        }
    }

    #[test]
    fn at_a_meeting_point_rr_json_lists_no_met_and_counts_without_a_heartbeat() {
        let tmp = tempfile::tempdir().unwrap();
        let rdv = Rendezvous {
            host: "127.0.0.1".into(),
            port: 0,
            given: "127.0.0.1:0".into(),
        };
        let job = Job {
            id: "j/run".into(),
            world: 2,
        };
        let mp = MeetingPoint::start(&rdv, "t", &job, Duration::from_secs(1)).unwrap();
        let mut p = pairing(tmp.path());
        p.store = mp.store();
        p.timeout = Duration::from_secs(5);
        p.met.borrow_mut().insert(1, "00000000000000bb".into());
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        p.publish_join(Some(addr), "h").unwrap();
        let mine: Value = serde_json::from_str(&p.store.get("r0.json").unwrap()).unwrap();
        assert_eq!(mine["met"], json!({}), "{mine}");
        // Rank 1 met the others and left (no heartbeat): still this run's.
        let theirs = json!({"rank": 1, "host": "h1", "address": "127.0.0.1:10",
            "nonce": "00000000000000bb", "mode": "pairwise", "schedule": "h"});
        p.store
            .put("r1.json", &theirs.to_string(), Put::Durable)
            .unwrap();
        let peers = p.join_all(Some(addr), "h").unwrap();
        assert_eq!(peers[&1].nonce, "00000000000000bb");
        mp.close(0, Duration::from_millis(1), &AtomicBool::new(false), false);
    }

    #[test]
    fn an_earlier_runs_failure_marker_does_not_count() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pairing(tmp.path());
        let failed = |nonce: &str, at: u128| {
            let v = json!({"rank": 1, "host": "h1", "nonce": nonce, "reason": "boom", "written_at_ms": at as u64});
            fs::write(tmp.path().join("r1.failed"), v.to_string()).unwrap();
        };
        // Written before this rank started, by a nonce never met.
        failed("00000000000000bb", p.started_ms - 1);
        assert_eq!(p.failed(1), None);
        // The same marker, by the nonce met at the barrier.
        p.met.borrow_mut().insert(1, "00000000000000bb".into());
        assert_eq!(
            p.failed(1).as_deref(),
            Some("rank 1 (host h1) failed: boom")
        );
        // Written after this rank started.
        p.met.borrow_mut().clear();
        failed("00000000000000cc", now_ms() + 1);
        assert!(p.failed(1).is_some());
    }

    #[test]
    fn a_heartbeat_counts_once_it_changes_and_is_gone_once_it_stops() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = pairing(tmp.path());
        p.timeout = Duration::from_millis(300);
        let beat = |n: u64| {
            let v = json!({"nonce": "00000000000000bb", "beat": n});
            fs::write(tmp.path().join("r1.alive"), v.to_string()).unwrap();
        };
        beat(1);
        p.look(1, &p.listing().unwrap());
        assert_eq!(p.beats.borrow()[&1].live, None, "maybe an earlier run's");
        beat(2);
        p.look(1, &p.listing().unwrap());
        assert_eq!(
            p.beats.borrow()[&1].live.as_deref(),
            Some("00000000000000bb")
        );
        assert_eq!(p.gone(1), None);
        std::thread::sleep(Duration::from_millis(350));
        p.look(1, &p.listing().unwrap());
        let why = p.gone(1).unwrap();
        assert!(why.contains("heartbeat r1.alive stopped"), "{why}");
    }

    #[test]
    fn the_schedule_hash_tells_modes_and_steps_apart() {
        let registry = benchsuite::registry();
        let bench = |id: &str| registry.benchmarks().find(|b| b.meta().id == id).unwrap();
        let tcp = bench("net.tcp_throughput");
        let step = |point: Point, rounds: usize| Step {
            bench: tcp,
            point,
            part: 0,
            rounds,
        };
        let h = schedule_hash(Mode::Pairwise, &[step(Point::default(), 1)]);
        assert_eq!(
            h,
            schedule_hash(Mode::Pairwise, &[step(Point::default(), 1)])
        );
        assert_ne!(h, schedule_hash(Mode::FanIn, &[step(Point::default(), 1)]));
        assert_ne!(
            h,
            schedule_hash(Mode::Pairwise, &[step(Point::default(), 2)])
        );
        let mut point = Point::default();
        point
            .0
            .insert("block".into(), benchsuite::param::Value::Int(1024));
        assert_ne!(h, schedule_hash(Mode::Pairwise, &[step(point, 1)]));
    }

    fn peer(rank: u64, nonce: &str) -> Peer {
        Peer {
            rank,
            host: format!("h{rank}"),
            address: None,
            nonce: nonce.into(),
        }
    }

    #[test]
    fn a_rank_whose_heartbeat_shows_another_run_than_the_one_met_failed() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pairing(tmp.path());
        p.met.borrow_mut().insert(1, "00000000000000bb".into());
        let beat = |nonce: &str, n: u64| {
            let v = json!({"nonce": nonce, "beat": n});
            fs::write(tmp.path().join("r1.alive"), v.to_string()).unwrap();
            p.look(1, &p.listing().unwrap());
        };
        beat("00000000000000bb", 1);
        beat("00000000000000bb", 2);
        assert_eq!(p.restarted(1), None, "the run met");
        // Restarted: a new nonce beating; it never writes the old run's
        // markers, and is not silent either.
        beat("00000000000000cc", 3);
        let peers = BTreeMap::from([
            (0, peer(0, "00000000000000aa")),
            (1, peer(1, "00000000000000bb")),
        ]);
        let t = Instant::now();
        let e = p
            .wait_markers(&[0, 1], &[], &peers, "done-1", "to finish round 1")
            .unwrap_err();
        assert!(e.contains("rank 1 restarted"), "{e}");
        assert!(t.elapsed() < p.timeout / 2, "not after the timeout");
    }

    /// A directory that does not answer until `up`.
    struct Outage {
        dir: DirStore,
        up: Instant,
    }

    impl Store for Outage {
        fn put(&self, name: &str, text: &str, how: Put) -> Result<(), String> {
            self.dir.put(name, text, how)
        }
        fn get(&self, name: &str) -> Result<String, String> {
            self.dir.get(name)
        }
        fn remove(&self, name: &str) -> Result<(), String> {
            self.dir.remove(name)
        }
        fn list(&self) -> Result<HashSet<String>, String> {
            self.dir.list()
        }
        fn place(&self) -> String {
            self.dir.place()
        }
        fn location(&self) -> String {
            self.dir.location()
        }
        fn flag(&self) -> &'static str {
            "--rendezvous"
        }
        fn answering(&self) -> bool {
            Instant::now() >= self.up
        }
    }

    #[test]
    fn heartbeats_are_judged_anew_once_the_store_answers_again() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = pairing(tmp.path());
        p.timeout = Duration::from_secs(2);
        let outage = Duration::from_millis(300);
        p.store = Arc::new(Outage {
            dir: DirStore::create(tmp.path().to_path_buf()).unwrap(),
            up: Instant::now() + outage,
        });
        // Rank 1 last seen beating long ago, by this rank's clock, while
        // the store did not answer.
        p.beats.borrow_mut().insert(
            1,
            Beat {
                text: Some("x".into()),
                since: Instant::now() - Duration::from_secs(60),
                live: None,
            },
        );
        let peers = BTreeMap::from([(1, peer(1, "00000000000000bb"))]);
        let t = Instant::now();
        let e = p
            .wait_markers(&[0, 1], &[], &peers, "done-1", "to finish round 1")
            .unwrap_err();
        assert!(e.contains("gave up waiting for rank 1"), "{e}");
        // Given up only a whole timeout after the answers resumed.
        assert!(t.elapsed() >= outage + p.timeout, "{:?}", t.elapsed());
    }

    #[test]
    fn the_bind_address_is_the_flag_else_never_unspecified() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(bind_address(Some(ip), Some("x")), (ip, "--net-bind"));
        let (ip, _) = bind_address(None, Some("localhost"));
        assert!(!ip.is_unspecified());
    }
}
