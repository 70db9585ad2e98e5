//! `os.context_switch`: a token passed back and forth over two pipes.

use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;
use std::time::Duration;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Meta, MetricSpec, ParamSpec, Point, Work,
};

use crate::sys::{self, AffinityGuard, Child, ChildAction, CpuSet, QUIT_TOKEN, TOKEN_LEN};

/// Values of the `mode` parameter.
const MODES: &[&str] = &["process", "thread"];
/// Values of the `cpus` parameter.
const CPUS: &[&str] = &["same", "different", "any"];

/// How long teardown waits for a partner process before killing it.
const PARTNER_EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Context switch via pipe ping-pong; see the crate docs.
#[derive(Debug, Default)]
pub struct ContextSwitch;

impl Benchmark for ContextSwitch {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.context_switch",
            description: "pipe ping-pong between two processes or threads; time per switch = round trip / 2 (perf bench sched pipe reports the round trip)",
            params: vec![
                ParamSpec::choice(
                    "mode",
                    "process: the partner is a forked process (perf bench sched pipe's default); thread: a thread of this process (perf's -T)",
                    MODES,
                    "process",
                ),
                ParamSpec::choice(
                    "cpus",
                    "same: both ends pinned to one CPU (taskset -c 0 perf bench sched pipe); different: pinned to two CPUs (cross-CPU wake-up); any: not pinned (plain perf bench sched pipe)",
                    CPUS,
                    "same",
                ),
            ],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let mode = point.str("mode")?;
        if !MODES.contains(&mode) {
            return Err(BenchError::Other(format!("unknown mode `{mode}`")));
        }
        let placement = placement(point.str("cpus")?)?;
        PingPong::start(mode == "process", placement).map(|c| Box::new(c) as Box<dyn Case>)
    }
}

/// Where the two ends run: `(ours, partner's)`, or `None` for unpinned.
type Placement = Option<(usize, usize)>;

/// Picks CPUs from those this thread may run on.
fn placement(cpus: &str) -> Result<Placement, BenchError> {
    if cpus == "any" {
        return Ok(None);
    }
    let allowed = sys::thread_affinity()?.cpus();
    match (cpus, allowed.as_slice()) {
        ("same", [a, ..]) => Ok(Some((*a, *a))),
        ("different", [a, b, ..]) => Ok(Some((*a, *b))),
        ("different", _) => Err(BenchError::Skip(format!(
            "cpus=different needs two CPUs, and this process may run on only {allowed:?}"
        ))),
        ("same", []) => Err(BenchError::Other(
            "sched_getaffinity returned no CPU".into(),
        )),
        (other, _) => Err(BenchError::Other(format!("unknown cpus `{other}`"))),
    }
}

/// The other end of the ping-pong.
#[derive(Debug)]
enum Partner {
    Process(Child),
    Thread(JoinHandle<Result<(), String>>),
    Gone,
}

#[derive(Debug)]
struct PingPong {
    /// Tokens to the partner; `None` once shut down.
    to_partner: Option<PipeWriter>,
    /// Tokens back from the partner.
    from_partner: PipeReader,
    partner: Partner,
    /// Our affinity before pinning; restored in teardown.
    affinity: Option<AffinityGuard>,
    seq: u32,
    about: About,
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
                        -1 => Err("short pipe transfer".to_string()),
                        e => Err(io::Error::from_raw_os_error(e).to_string()),
                    },
                )
                .map_err(|e| BenchError::io("spawn partner thread", e))?;
            Partner::Thread(handle)
        };
        // From here on, dropping `case` stops the partner and restores the
        // affinity, whatever fails next.
        let mut case = PingPong {
            to_partner: Some(p2c_w),
            from_partner: c2p_r,
            partner,
            affinity,
            seq: 0,
            about: About::default(),
        };
        match placement {
            Some((ours, _)) => sys::set_thread_affinity(&CpuSet::single(ours)?)?,
            None => case.about.warnings.push(
                "cpus=any: the scheduler decides whether the two ends share a CPU, so results may be bimodal; pin with cpus=same or cpus=different for stable numbers".into(),
            ),
        }
        Ok(case)
    }

    /// Stops the partner, waits for it, and restores our affinity; every
    /// step runs even if an earlier one failed. Safe to call twice.
    fn shutdown(&mut self) -> Result<(), BenchError> {
        let mut errors = Vec::new();
        if let Some(mut w) = self.to_partner.take() {
            // Ask the partner to stop. Closing `w` would give it end of file
            // too, but another child forked meanwhile (a concurrent benchmark
            // in the same process) may hold a copy of this pipe end open.
            // A failure here means the partner is gone already.
            let _ = w.write_all(&QUIT_TOKEN);
        }
        match std::mem::replace(&mut self.partner, Partner::Gone) {
            Partner::Process(mut child) => match child.wait_or_kill(PARTNER_EXIT_TIMEOUT) {
                Ok(status) if status.success() => {}
                Ok(status) => errors.push(format!("partner process exited with {status}")),
                Err(e) => errors.push(format!("partner process: {e}")),
            },
            Partner::Thread(handle) => match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(format!("partner thread: {e}")),
                Err(_) => errors.push("partner thread panicked".into()),
            },
            Partner::Gone => {}
        }
        if let Some(mut guard) = self.affinity.take()
            && let Err(e) = guard.restore()
        {
            errors.push(format!("restoring CPU affinity: {e}"));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(BenchError::Other(errors.join("; ")))
        }
    }
}

impl Case for PingPong {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let Some(to_partner) = self.to_partner.as_mut() else {
            return Err(BenchError::Other(
                "os.context_switch: case already torn down".into(),
            ));
        };
        let mut back = [0u8; TOKEN_LEN];
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
        // Each round trip is two switches: to the partner and back.
        Ok(Work::ops(2 * iters))
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.shutdown()
    }

    fn about(&self) -> Option<&About> {
        Some(&self.about)
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        let _ = self.shutdown();
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
            case.teardown().unwrap();
            assert_eq!(sys::thread_affinity().unwrap().cpus(), before);
            assert!(case.run(1).is_err(), "a torn-down case must not run");
            case.teardown().unwrap();
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
        let err = case.teardown().unwrap_err().to_string();
        assert!(err.contains("signal"), "{err}");
    }

    #[test]
    fn unknown_or_impossible_placements_are_rejected() {
        assert!(placement("any").unwrap().is_none());
        let (a, b) = placement("same").unwrap().unwrap();
        assert_eq!(a, b);
        match placement("different") {
            Ok(Some((a, b))) => assert_ne!(a, b),
            Err(BenchError::Skip(msg)) => assert!(msg.contains("two CPUs")),
            other => panic!("{other:?}"),
        }
        assert!(placement("bogus").is_err());
    }
}
