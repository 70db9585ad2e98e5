//! A reference tool's process: started in a process group of its own,
//! waited on with a pidfd (woken by Ctrl-C), stopped with a grace, and its
//! pipes read with a bound.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The process groups of the tools running now, so that leaving in a
/// hurry ([`kill_running_tools`]) stops them too.
pub(super) static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A reference tool (or its server) started in a process group of its own,
/// whose ID is the tool's PID. Stopping it ([`ToolProcess::kill`], a
/// timeout or cancel in [`ToolProcess::wait`], or dropping it) sends
/// SIGKILL to the whole group, so processes the tool forked go with it,
/// then reaps the tool. The group is signalled only while the tool is
/// not yet reaped, so its ID cannot have been reused by another group.
///
/// The tool's own group also means a Ctrl-C typed at the terminal reaches
/// benchsuite only: benchsuite decides (through `cancelled`) when the tool
/// is stopped.
#[derive(Debug)]
pub struct ToolProcess {
    child: Child,
    /// The exit status, once reaped.
    status: Option<ExitStatus>,
}

/// Why [`ToolProcess::wait`] stopped the tool before it finished.
#[derive(Debug)]
pub enum Stopped {
    /// It ran past its deadline.
    TimedOut,
    /// `cancelled` turned true (Ctrl-C).
    Cancelled,
    /// Waiting for it failed.
    Wait(io::Error),
}

impl ToolProcess {
    /// Spawns `command` as the leader of a new process group.
    pub fn spawn(mut command: Command) -> io::Result<ToolProcess> {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        let mut running = lock(&RUNNING);
        let child = command.spawn()?;
        running.push(pid_of(&child));
        Ok(ToolProcess {
            child,
            status: None,
        })
    }

    /// The tool's PID (also its process group's ID).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child, to take its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits until the tool exits; past `deadline`, or once `cancelled()`
    /// is true, stops the whole group. After the tool exits by itself,
    /// whatever it left running in its group is stopped too.
    ///
    /// The wait sleeps in the kernel until the tool exits (a pidfd), the
    /// deadline passes, [`wake_waits`] is called (the CLI's Ctrl-C handler
    /// does) or [`CANCEL_CHECK`] elapses, whichever comes first: a waiter
    /// that woke every few milliseconds would be a third task on the CPUs
    /// the tool measures, which ours never has beside it (measured on a
    /// 2-vCPU guest: a 50 Hz sleeper made `perf bench sched pipe` 6–16%
    /// faster, by placing its two processes on one CPU more often). Where
    /// pidfds are missing (Linux before 5.3), it polls every 20 ms.
    pub fn wait(
        &mut self,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<ExitStatus, Stopped> {
        self.wait_checking(deadline, cancelled, CANCEL_CHECK, Duration::ZERO)
    }

    /// [`ToolProcess::wait`], but a tool stopped at its deadline or on
    /// `cancelled` is asked first ([`ToolProcess::stop`] with `grace`):
    /// for a child that cleans up after itself on SIGTERM (a benchsuite
    /// build's round under `compare --interleave`).
    pub fn wait_or_stop(
        &mut self,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
        grace: Duration,
    ) -> Result<ExitStatus, Stopped> {
        self.wait_checking(deadline, cancelled, CANCEL_CHECK, grace)
    }

    /// [`ToolProcess::wait`], looking at `cancelled` at least every
    /// `check`, stopping the tool with `grace`.
    pub(super) fn wait_checking(
        &mut self,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
        check: Duration,
        grace: Duration,
    ) -> Result<ExitStatus, Stopped> {
        let pidfd = pidfd_open(self.child.id());
        let wake = pidfd.as_ref().and_then(|_| WakePipe::new());
        loop {
            match self.exited() {
                Ok(true) => {
                    return self.kill().map_err(Stopped::Wait);
                }
                Ok(false) if cancelled() => {
                    let _ = self.stop(grace);
                    return Err(Stopped::Cancelled);
                }
                Ok(false) if Instant::now() >= deadline => {
                    let _ = self.stop(grace);
                    return Err(Stopped::TimedOut);
                }
                Ok(false) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match &pidfd {
                        Some(fd) => sleep_on(fd, wake.as_ref(), left.min(check)),
                        None => std::thread::sleep(left.min(Duration::from_millis(20))),
                    }
                }
                Err(e) => {
                    let _ = self.kill();
                    return Err(Stopped::Wait(e));
                }
            }
        }
    }

    /// Sends SIGTERM to the tool's process group, gives the tool up to
    /// `grace` to exit, then [`ToolProcess::kill`]s the group (what is left
    /// of it) and reaps the tool. A zero `grace` is [`ToolProcess::kill`].
    pub fn stop(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        if self.status.is_none() && !grace.is_zero() {
            let pgid = pid_of(&self.child);
            if lock(&RUNNING).contains(&pgid) {
                // SAFETY: killpg only sends a signal. The leader is our
                // child, not yet reaped (only `kill`, which needs `&mut
                // self`, reaps it), so the ID still names our group.
                unsafe {
                    libc::killpg(pgid, libc::SIGTERM);
                }
                let until = Instant::now() + grace;
                let pidfd = pidfd_open(self.child.id());
                while !self.exited().unwrap_or(true) && Instant::now() < until {
                    let left = until.saturating_duration_since(Instant::now());
                    match &pidfd {
                        Some(fd) => sleep_on(fd, None, left),
                        None => std::thread::sleep(left.min(Duration::from_millis(20))),
                    }
                }
            }
        }
        self.kill()
    }

    /// Sends SIGKILL to the tool's process group (unless the tool is
    /// reaped already) and reaps the tool; returns its exit status.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let pgid = pid_of(&self.child);
        // The lock is held from the signal until the leader is reaped and
        // its group ID unlisted, so `kill_running_tools` (a second Ctrl-C,
        // on another thread) never signals an ID freed in between; and an
        // ID no longer listed (a failed reap) is never signalled again.
        let mut running = lock(&RUNNING);
        if !running.contains(&pgid) {
            return Err(io::Error::other(
                "the tool was already reaped (or could not be)",
            ));
        }
        // SAFETY: killpg only sends a signal. The group's leader is our
        // child, not yet reaped (a zombie at worst), so the group ID still
        // names the group we created.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        let reaped = self.child.wait();
        running.retain(|&g| g != pgid);
        let status = reaped?;
        self.status = Some(status);
        Ok(status)
    }

    /// Whether the tool has exited, without reaping it (so its group ID
    /// stays ours until [`ToolProcess::kill`]).
    fn exited(&self) -> io::Result<bool> {
        if self.status.is_some() {
            return Ok(true);
        }
        // SAFETY: siginfo_t is plain data, valid when zeroed.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid siginfo_t for waitid to fill; the PID
        // is our child, not yet reaped. WNOWAIT leaves it waitable, WNOHANG
        // returns at once.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: after a successful waitid, si_pid is 0 when no child
        // changed state, else the child's PID.
        Ok(unsafe { info.si_pid() } != 0)
    }
}

impl Drop for ToolProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

pub(super) fn pid_of(child: &Child) -> i32 {
    i32::try_from(child.id()).unwrap_or(i32::MAX)
}

/// The longest a [`ToolProcess::wait`] sleeps without looking at its
/// `cancelled`, for a cancellation nobody announced with [`wake_waits`]
/// (a library caller that only sets its flag).
pub const CANCEL_CHECK: Duration = Duration::from_millis(500);

/// A pidfd for our child `pid`, or `None` where the kernel has none.
pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a PID and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a new fd that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The write ends of the pipes of the waits sleeping now, which
/// [`wake_waits`] writes to.
pub(super) static WAITERS: Mutex<Vec<RawFd>> = Mutex::new(Vec::new());

/// One wait's own wake-up pipe (non-blocking, close-on-exec), listed in
/// [`WAITERS`] while it lives. Each wait has its own so that one waiter
/// emptying its pipe never hides a wake-up from another.
pub(super) struct WakePipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl WakePipe {
    fn new() -> Option<WakePipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if rc != 0 {
            return None;
        }
        // SAFETY: on success both are new fds that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        lock(&WAITERS).push(write.as_raw_fd());
        Some(WakePipe { read, write })
    }
}

impl Drop for WakePipe {
    fn drop(&mut self) {
        // Unlisted before the fd closes, so wake_waits never writes to a
        // number the fd's closing freed for reuse.
        let fd = self.write.as_raw_fd();
        lock(&WAITERS).retain(|&w| w != fd);
    }
}

/// `m`, locked even if a panic poisoned it.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wakes every [`ToolProcess::wait`] now sleeping so it looks at its
/// `cancelled` at once: call it after setting the flag (a Ctrl-C handler).
/// Without it a wait notices within [`CANCEL_CHECK`].
pub fn wake_waits() {
    for &fd in lock(&WAITERS).iter() {
        // SAFETY: writes one byte from a valid buffer to a pipe a live
        // WakePipe owns (listed only while it lives); a full pipe (EAGAIN)
        // is awake already.
        unsafe {
            libc::write(fd, [1u8].as_ptr().cast(), 1);
        }
    }
}

/// Sleeps until `pidfd`'s process exits, `wake` is woken ([`wake_waits`])
/// or `for_` passes.
pub(super) fn sleep_on(pidfd: &OwnedFd, wake: Option<&WakePipe>, for_: Duration) {
    let mut fds = [
        libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.map_or(-1, |w| w.read.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // Rounded up, so a deadline less than 1 ms away does not spin.
    let ms = for_.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: `fds` holds two valid pollfd entries (a negative fd is
    // ignored by poll).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if n > 0
        && fds[1].revents & libc::POLLIN != 0
        && let Some(w) = wake
    {
        // Empty it, or the next sleep would return at once.
        let mut buf = [0u8; 64];
        // SAFETY: reads into a valid buffer from our non-blocking pipe.
        while unsafe { libc::read(w.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

/// Sends SIGKILL to the process group of every tool started with
/// [`ToolProcess::spawn`] and not yet reaped: for a process about to exit
/// without unwinding (a second Ctrl-C), which would leave them running.
///
/// Returns once each group's leader is dead (or after a second at most),
/// so that a scratch directory removed next
/// ([`crate::scratch::remove_all`]) is not written into again. The leaders
/// are left unreaped: the process is about to exit.
pub fn kill_running_tools() {
    let running = lock(&RUNNING);
    for &pgid in running.iter() {
        // SAFETY: only sends a signal; each group's leader is an unreaped
        // child of this process, so the ID still names that group.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
    let until = Instant::now() + Duration::from_secs(1);
    for &pid in running.iter() {
        while Instant::now() < until && !dead(pid) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether our unreaped child `pid` has exited (without reaping it).
pub(super) fn dead(pid: i32) -> bool {
    // SAFETY: siginfo_t is plain data, valid when zeroed.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid siginfo_t for waitid to fill; WNOWAIT
    // leaves the child waitable, WNOHANG returns at once.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: after a successful waitid, si_pid is 0 while it runs.
    rc != 0 || unsafe { info.si_pid() } != 0
}

/// The last bytes a child wrote to a pipe (its stdout or stderr), read on
/// a thread of its own so the child never blocks on a full pipe, keeping
/// at most `keep` bytes however much it writes.
///
/// The reader waits on the pipe and on a stop pipe of its own: when
/// [`PipeTail::tail`] gives up after its grace (a process the child
/// started outside its group, a daemon, holds the pipe open), or the
/// value drops, the reader is told to stop, closes its end and is joined.
/// No thread outlives the value by more than a wake-up.
#[derive(Debug)]
pub struct PipeTail {
    rx: std::sync::mpsc::Receiver<Tail>,
    /// The write end of the reader's stop pipe: closing it wakes the
    /// reader, which then ends. `None` once closed.
    stop: Option<OwnedFd>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// What a [`PipeTail`] kept of a pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The last bytes, as text (invalid UTF-8 replaced).
    pub text: String,
    /// How many bytes before them were read and dropped (0: all is here).
    pub cut: u64,
}

impl Tail {
    /// The text, after a first line that says how many bytes were cut
    /// before it, if any were.
    pub fn shown(&self) -> String {
        if self.cut == 0 {
            self.text.clone()
        } else {
            format!(
                "[{} bytes cut; the last {} follow]\n{}",
                self.cut,
                self.text.len(),
                self.text
            )
        }
    }
}

impl PipeTail {
    /// Starts reading `pipe` (a child's [`std::process::ChildStderr`] or
    /// [`std::process::ChildStdout`]) until its end, keeping its last
    /// `keep` bytes.
    pub fn read(pipe: impl Into<OwnedFd>, keep: usize) -> PipeTail {
        let pipe: OwnedFd = pipe.into();
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_read, stop) = match stop_pipe() {
            Some((r, w)) => (Some(r), Some(w)),
            None => (None, None),
        };
        let stoppable = stop.is_some();
        let reader = std::thread::spawn(move || {
            if let Some(tail) = tail_of(&pipe, stop_read.as_ref(), keep) {
                let _ = tx.send(tail);
            }
        });
        PipeTail {
            rx,
            stop,
            // Without a stop pipe (no descriptors left) the reader cannot
            // be woken: it is left to end with the pipe.
            reader: stoppable.then_some(reader),
        }
    }

    /// The tail, once the pipe ended, as [`Tail::shown`] writes it; `None`
    /// if it is still open after `grace`.
    pub fn get(self, grace: Duration) -> Option<String> {
        self.tail(grace).map(|t| t.shown())
    }

    /// The tail, once the pipe ended; `None` if it is still open after
    /// `grace` (a process the child started outside its group holds it),
    /// and then the reader is stopped and its end of the pipe closed.
    pub fn tail(mut self, grace: Duration) -> Option<Tail> {
        let got = self.rx.recv_timeout(grace).ok();
        self.end();
        got
    }

    /// Stops the reader (if it still reads) and waits for it.
    fn end(&mut self) {
        drop(self.stop.take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for PipeTail {
    fn drop(&mut self) {
        self.end();
    }
}

/// A close-on-exec pipe (read end, write end) whose write end's closing
/// wakes a poll on the read end.
pub(super) fn stop_pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return None;
    }
    // SAFETY: on success both are new fds that nothing else owns.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads `pipe` to its end, keeping its last `keep` bytes (a read error
/// ends it as the end would); `None` once `stop` wakes (its write end
/// closed) before the end.
pub(super) fn tail_of(pipe: &OwnedFd, stop: Option<&OwnedFd>, keep: usize) -> Option<Tail> {
    let mut tail = std::collections::VecDeque::with_capacity(keep.min(1 << 16));
    let mut cut = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.map_or(-1, AsRawFd::as_raw_fd),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` holds two valid pollfd entries (a negative fd is
        // ignored); no timeout: the pipe or the stop wakes it.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if fds[1].revents != 0 {
            return None;
        }
        if fds[0].revents == 0 {
            continue;
        }
        // SAFETY: reads into a valid buffer of its length from our open fd;
        // poll said it will not block.
        let got = unsafe { libc::read(pipe.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        match got {
            0 => break,
            n if n > 0 => {
                tail.extend(&buf[..n as usize]);
                let over = tail.len().saturating_sub(keep);
                tail.drain(..over);
                cut += over as u64;
            }
            _ => {
                let kind = io::Error::last_os_error().kind();
                if kind != io::ErrorKind::Interrupted && kind != io::ErrorKind::WouldBlock {
                    break;
                }
            }
        }
    }
    let bytes: Vec<u8> = tail.into();
    Some(Tail {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        cut,
    })
}
