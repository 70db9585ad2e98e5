//! `os.context_switch`: a token passed back and forth over two pipes.

use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;
use std::time::Duration;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point,
    Work, choice_enum, error_chain,
};

use crate::sys::{self, AffinityGuard, Child, ChildAction, CpuSet, QUIT_TOKEN, TOKEN_LEN};

choice_enum! {
    /// Values of the `mode` parameter: what the partner is.
    enum Mode {
        /// A forked process.
        Process = "process",
        /// A thread of this process.
        Thread = "thread",
    }
}

choice_enum! {
    /// Values of the `cpus` parameter: where the two ends run.
    enum Cpus {
        /// Both pinned to one CPU.
        Same = "same",
        /// Pinned to two CPUs.
        Different = "different",
        /// Not pinned.
        Any = "any",
    }
}

/// How long `finish` waits for a partner process before killing it.
const PARTNER_EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Context switch via pipe ping-pong; see the crate docs.
#[derive(Debug, Default)]
pub struct ContextSwitch;

impl Benchmark for ContextSwitch {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.context_switch".into(),
            description: "pipe ping-pong between two processes or threads; time per switch = round trip / 2 (perf bench sched pipe reports the round trip)".into(),
            params: vec![
                ParamSpec::choice_of(
                    "mode",
                    "process: the partner is a forked process (perf bench sched pipe's default); thread: a thread of this process (perf's -T)",
                    Mode::Process,
                ),
                ParamSpec::choice_of(
                    "cpus",
                    "same: both ends pinned to one CPU (taskset -c 0 perf bench sched pipe); different: pinned to two CPUs (cross-CPU wake-up); any: not pinned (plain perf bench sched pipe)",
                    Cpus::Same,
                ),
            ],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let mode = point.choice::<Mode>("mode")?;
        let placement = placement(point.choice("cpus")?)?;
        PingPong::start(mode == Mode::Process, placement).map(|c| Box::new(c) as Box<dyn Case>)
    }

    /// `perf bench sched pipe` (`-T` for threads) under `taskset -c`.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        let allowed = sys::thread_affinity().ok()?.cpus();
        crate::reference::context_switch(point, &allowed)
    }
}

/// Where the two ends run: `(ours, partner's)`, or `None` for unpinned.
type Placement = Option<(usize, usize)>;

/// Picks CPUs from those this thread may run on.
fn placement(cpus: Cpus) -> Result<Placement, BenchError> {
    if cpus == Cpus::Any {
        return Ok(None);
    }
    let allowed = sys::thread_affinity()?.cpus();
    match (cpus, allowed.as_slice()) {
        (Cpus::Any, _) => Ok(None),
        (Cpus::Same, [a, ..]) => Ok(Some((*a, *a))),
        (Cpus::Different, [a, b, ..]) => Ok(Some((*a, *b))),
        (Cpus::Different, _) => Err(BenchError::Skip(format!(
            "cpus=different needs two CPUs, and this process may run on only {allowed:?}"
        ))),
        (Cpus::Same, []) => Err(BenchError::Other(
            "sched_getaffinity returned no CPU".into(),
        )),
    }
}

/// The other end of the ping-pong.
#[derive(Debug)]
enum Partner {
    /// A forked process; dropping it kills and reaps it.
    Process(Child),
    /// A thread; it stops on the quit token or end of file.
    Thread(JoinHandle<io::Result<()>>),
}

/// Our end of the pipe to the partner. Dropping it asks the partner to stop
/// and closes the pipe.
#[derive(Debug)]
struct ToPartner(PipeWriter);

impl Drop for ToPartner {
    fn drop(&mut self) {
        // Ask the partner to stop. Closing the pipe would give it end of file
        // too, but another child forked meanwhile (a concurrent benchmark in
        // the same process) may hold a copy of this pipe end open. A failure
        // here means the partner is gone already.
        let _ = self.0.write_all(&QUIT_TOKEN);
    }
}

/// The case. `finish` stops the partner and restores the affinity, and says
/// what failed; if the case is dropped instead (an error in `start`, a
/// panic), its fields still do both: the quit token is sent, a partner
/// process is killed and reaped, the affinity is restored.
#[derive(Debug)]
struct PingPong {
    /// Tokens to the partner.
    to_partner: ToPartner,
    /// Tokens back from the partner.
    from_partner: PipeReader,
    partner: Partner,
    /// Our affinity before pinning (`None` with cpus=any, which does not
    /// pin); restored in `finish`.
    affinity: Option<AffinityGuard>,
    seq: u32,
    about: About,
    /// cpus=any with a partner process: after each batch, whether both
    /// ends had last run on one CPU, and the batch's time per switch.
    placements: Option<Vec<(bool, f64)>>,
}

/// The CPU a process last ran on: field 39 (`processor`) of
/// `/proc/PID/stat`, counted after the command name's closing parenthesis
/// (the name may hold spaces).
fn last_cpu(pid: i32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the name start at 3 (state); processor is 39.
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// The note on where the two ends ran, from each batch's end (cpus=any).
fn placement_note(batches: &[(bool, f64)]) -> Option<String> {
    if batches.is_empty() {
        return None;
    }
    let mean = |same: bool| {
        let v: Vec<f64> = batches
            .iter()
            .filter(|b| b.0 == same)
            .map(|b| b.1)
            .collect();
        (!v.is_empty()).then(|| (v.len(), v.iter().sum::<f64>() / v.len() as f64))
    };
    let part = |m: Option<(usize, f64)>, what: &str| {
        m.map(|(n, t)| format!("{what} after {n} ({:.2} µs per switch on average)", t * 1e6))
    };
    let parts: Vec<String> = [part(mean(true), "on one CPU"), part(mean(false), "on two")]
        .into_iter()
        .flatten()
        .collect();
    Some(format!(
        "cpus=any: where the scheduler had put the two ends when each of the {} batches ended (each end's last CPU; a batch may have spent part of its time in the other state): {}; the record's figure mixes the two states in the proportion this run met (pinned, on this machine: cpus=same for one CPU, cpus=different for two)",
        batches.len(),
        parts.join(", ")
    ))
}

impl PingPong {
    /// Creates the pipes and the partner (parked reading its pipe) and pins
    /// both ends. The partner inherits its CPU: this thread pins itself to
    /// the partner's CPU, creates it, then moves to its own CPU.
    fn start(process: bool, placement: Placement) -> Result<PingPong, BenchError> {
        let (p2c_r, p2c_w) = io::pipe().map_err(|e| BenchError::io("pipe", e))?;
        let (c2p_r, c2p_w) = io::pipe().map_err(|e| BenchError::io("pipe", e))?;
        let mut affinity = None;
        if let Some((_, theirs)) = placement {
            affinity = Some(AffinityGuard::save()?);
            sys::set_thread_affinity(&CpuSet::single(theirs)?)?;
        }
        let partner = if process {
            let child = sys::fork_child(&ChildAction::Echo {
                read_fd: p2c_r.as_raw_fd(),
                write_fd: c2p_w.as_raw_fd(),
                close: [p2c_w.as_raw_fd(), c2p_r.as_raw_fd()],
            })?;
            // The child has its copies; ours of its ends must close so that
            // end of file reaches each side when the other goes away.
            drop((p2c_r, c2p_w));
            Partner::Process(child)
        } else {
            let handle = std::thread::Builder::new()
                .name("os.context_switch partner".into())
                .spawn(
                    move || match sys::echo_tokens(p2c_r.as_raw_fd(), c2p_w.as_raw_fd()) {
                        0 => Ok(()),
                        -1 => Err(io::Error::other("short pipe transfer")),
                        e => Err(io::Error::from_raw_os_error(e)),
                    },
                )
                .map_err(|e| BenchError::io("spawn partner thread", e))?;
            Partner::Thread(handle)
        };
        // From here on, dropping `case` stops the partner and restores the
        // affinity, whatever fails next.
        let mut case = PingPong {
            to_partner: ToPartner(p2c_w),
            from_partner: c2p_r,
            partner,
            affinity,
            seq: 0,
            about: About::default(),
            placements: None,
        };
        match placement {
            Some((ours, _)) => sys::set_thread_affinity(&CpuSet::single(ours)?)?,
            None => {
                case.about.caveat(
                    "cpus=any: the scheduler decides whether the two ends share a CPU, so results may be bimodal; pin with cpus=same or cpus=different for stable numbers",
                );
                if process {
                    case.placements = Some(Vec::new());
                }
            }
        }
        Ok(case)
    }

    /// Stops the partner, waits for it, and restores our affinity; every
    /// step runs even if an earlier one failed.
    fn shutdown(self) -> (About, Result<(), BenchError>) {
        let PingPong {
            to_partner,
            from_partner,
            partner,
            affinity,
            seq: _,
            mut about,
            placements,
        } = self;
        if let Some(note) = placements.as_deref().and_then(placement_note) {
            about.note(note);
        }
        // Sends the quit token and closes our end.
        drop(to_partner);
        let mut errors = Vec::new();
        match partner {
            Partner::Process(mut child) => match child.wait_or_kill(PARTNER_EXIT_TIMEOUT) {
                Ok(status) if status.success() => {}
                Ok(status) => errors.push(BenchError::Other(format!(
                    "partner process exited with {status}"
                ))),
                Err(e) => errors.push(BenchError::caused("partner process", e)),
            },
            Partner::Thread(handle) => match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(BenchError::io("partner thread", e)),
                Err(_) => errors.push(BenchError::Other("partner thread panicked".into())),
            },
        }
        drop(from_partner);
        if let Some(guard) = affinity
            && let Err(e) = guard.restore()
        {
            errors.push(BenchError::caused("restoring CPU affinity", e));
        }
        (about, one_error(errors))
    }
}

/// No error, the one error, or several as one (each with its causes: a
/// chain can hold only one).
fn one_error(mut errors: Vec<BenchError>) -> Result<(), BenchError> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(BenchError::Other(
            errors
                .iter()
                .map(|e| error_chain(e))
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

impl Case for PingPong {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let to_partner = &mut self.to_partner.0;
        let mut back = [0u8; TOKEN_LEN];
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            // Sequence tokens keep the top bit clear, so never equal QUIT.
            self.seq = self.seq.wrapping_add(1) & 0x7fff_ffff;
            let token = self.seq.to_ne_bytes();
            transfer(|| to_partner.write(&token), "write token to partner")?;
            transfer(
                || self.from_partner.read(&mut back),
                "read token from partner",
            )?;
            if back != token {
                return Err(BenchError::Verify(format!(
                    "sent token {}, got {} back",
                    self.seq,
                    u32::from_ne_bytes(back)
                )));
            }
        }
        let elapsed = t0.elapsed();
        // Where the two ends last ran, read after the timed loop (a /proc
        // read, tens of µs, that the batch's time leaves out).
        if let (Some(p), Partner::Process(child)) = (&mut self.placements, &self.partner) {
            // SAFETY: sched_getcpu has no preconditions.
            let ours = unsafe { libc::sched_getcpu() };
            if let Some(theirs) = last_cpu(child.pid())
                && ours >= 0
                && iters > 0
            {
                p.push((
                    i64::from(ours) == theirs,
                    elapsed.as_secs_f64() / (2 * iters) as f64,
                ));
            }
        }
        // Each round trip is two switches: to the partner and back.
        Ok(Work {
            elapsed: Some(elapsed),
            ..Work::ops(2 * iters)
        })
    }

    fn finish(self: Box<Self>) -> Finished {
        let (about, result) = self.shutdown();
        Finished::with(about, result)
    }
}

/// One `read` or `write` of a whole token (retried on EINTR). Pipe transfers
/// of at most PIPE_BUF bytes are atomic, so anything else is an error.
fn transfer(mut op: impl FnMut() -> io::Result<usize>, what: &str) -> Result<(), BenchError> {
    loop {
        match op() {
            Ok(TOKEN_LEN) => return Ok(()),
            Ok(0) => {
                return Err(BenchError::Other(format!(
                    "{what}: the partner closed its pipe (did it exit?)"
                )));
            }
            Ok(n) => {
                return Err(BenchError::Other(format!(
                    "{what}: moved {n} bytes instead of {TOKEN_LEN}"
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BenchError::io(what, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_modes_echo_and_shut_down_cleanly() {
        let before = sys::thread_affinity().unwrap().cpus();
        for process in [true, false] {
            let mut case = PingPong::start(process, Some((before[0], before[0]))).unwrap();
            assert_eq!(sys::thread_affinity().unwrap().cpus(), [before[0]]);
            let w = case.run(50).unwrap();
            assert_eq!(w.ops, 100, "two switches per round trip");
            let finished = Box::new(case).finish();
            assert!(finished.error.is_none(), "{:?}", finished.error);
            assert_eq!(sys::thread_affinity().unwrap().cpus(), before);
        }
    }

    #[test]
    fn unpinned_batches_say_where_the_two_ends_ran() {
        let allowed = sys::thread_affinity().unwrap().cpus();
        let mut case = PingPong::start(true, None).unwrap();
        for _ in 0..4 {
            let w = case.run(200).unwrap();
            assert!(w.elapsed.is_some_and(|e| e > std::time::Duration::ZERO));
        }
        let placements = case.placements.clone().unwrap();
        assert_eq!(placements.len(), 4);
        assert!(
            placements.iter().all(|p| p.1 > 0.0 && p.1 < 1.0),
            "{placements:?}"
        );
        let partner = match &case.partner {
            Partner::Process(c) => last_cpu(c.pid()).unwrap(),
            Partner::Thread(_) => unreachable!(),
        };
        assert!(
            allowed.contains(&(partner as usize)),
            "{partner} not in {allowed:?}"
        );
        let finished = Box::new(case).finish();
        let notes = format!("{:?}", finished.about);
        assert!(notes.contains("each of the 4 batches ended"), "{notes}");
        // Pinned cases do not look.
        let mut case = PingPong::start(true, Some((allowed[0], allowed[0]))).unwrap();
        case.run(10).unwrap();
        assert!(case.placements.is_none());
    }

    #[test]
    fn the_placement_note_gives_each_state_its_share_and_mean() {
        let note = placement_note(&[(true, 2e-6), (false, 20e-6), (false, 30e-6)]).unwrap();
        assert!(note.contains("3 batches"), "{note}");
        assert!(note.contains("on one CPU after 1 (2.00 µs"), "{note}");
        assert!(note.contains("on two after 2 (25.00 µs"), "{note}");
        assert_eq!(placement_note(&[]), None);
    }

    #[test]
    fn a_dropped_case_stops_its_partner_and_restores_the_affinity() {
        let before = sys::thread_affinity().unwrap().cpus();
        for process in [true, false] {
            let mut case = PingPong::start(process, Some((before[0], before[0]))).unwrap();
            case.run(5).unwrap();
            drop(case);
            assert_eq!(sys::thread_affinity().unwrap().cpus(), before);
        }
    }

    #[test]
    fn a_dead_partner_is_an_error_not_a_hang() {
        let mut case = PingPong::start(true, None).unwrap();
        let Partner::Process(child) = &case.partner else {
            panic!("expected a process partner");
        };
        // SAFETY: kill has no memory-safety preconditions; the pid is our
        // own unreaped child.
        unsafe { libc::kill(child.pid(), libc::SIGKILL) };
        let err = case.run(10).unwrap_err().to_string();
        assert!(err.contains("partner"), "{err}");
        let finished = Box::new(case).finish();
        assert!(
            finished
                .about
                .caveats
                .iter()
                .any(|c| c.to_string().starts_with("cpus=any")),
            "{:?}",
            finished.about.caveats
        );
        let err = error_chain(&finished.error.expect("the partner was killed"));
        assert!(err.contains("signal"), "{err}");
    }

    #[test]
    fn impossible_placements_are_rejected() {
        assert!(placement(Cpus::Any).unwrap().is_none());
        let (a, b) = placement(Cpus::Same).unwrap().unwrap();
        assert_eq!(a, b);
        match placement(Cpus::Different) {
            Ok(Some((a, b))) => assert_ne!(a, b),
            Err(BenchError::Skip(msg)) => assert!(msg.contains("two CPUs")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn several_shutdown_errors_are_all_reported() {
        assert!(one_error(vec![]).is_ok());
        let e = one_error(vec![BenchError::caused(
            "partner process",
            BenchError::Other("waitpid".into()),
        )])
        .unwrap_err();
        assert_eq!(e.to_string(), "partner process");
        let e = one_error(vec![
            BenchError::Other("partner thread panicked".into()),
            BenchError::caused("restoring CPU affinity", BenchError::Other("EPERM".into())),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "partner thread panicked; restoring CPU affinity: EPERM"
        );
    }
}
