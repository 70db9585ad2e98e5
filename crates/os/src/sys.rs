//! The only place this crate calls the kernel through `libc` directly: small
//! safe wrappers, each `unsafe` block with the reason it holds.
//!
//! Linux only (the module is compiled on Linux; see the crate docs for what
//! other systems get).
//!
//! # Forking from a multi-threaded process
//!
//! The process that runs benchmarks usually has several threads (a test
//! harness, a progress bar, a Ctrl-C handler). After `fork` the child holds
//! only the forking thread, and any lock another thread held (the allocator's,
//! stdio's) stays locked forever. So the child side of [`fork_child`] is a
//! closed set of [`ChildAction`]s that make only async-signal-safe calls
//! (`read`, `write`, `close`, `execve`, `_exit`) on memory prepared before the
//! fork, and never return into Rust code that might allocate.

use std::ffi::{CString, c_char, c_int};
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::ptr;
use std::time::{Duration, Instant};

use benchsuite_core::BenchError;

// ---------------------------------------------------------------------------
// System calls and clocks
// ---------------------------------------------------------------------------

/// `getppid` issued as a raw system call, so no C-library wrapper or cache
/// can answer it from user space.
#[inline]
pub fn getppid_raw() -> i64 {
    // SAFETY: getppid takes no arguments, touches no user memory and cannot
    // fail; `syscall` with SYS_getppid and no further arguments is its
    // documented calling convention.
    unsafe { libc::syscall(libc::SYS_getppid) }
}

/// A POSIX clock read with `clock_gettime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PosixClock {
    /// `CLOCK_MONOTONIC` (what `std::time::Instant` reads on Linux).
    Monotonic,
    /// `CLOCK_REALTIME` (wall-clock time; may jump).
    Realtime,
}

impl PosixClock {
    fn id(self) -> libc::clockid_t {
        match self {
            PosixClock::Monotonic => libc::CLOCK_MONOTONIC,
            PosixClock::Realtime => libc::CLOCK_REALTIME,
        }
    }

    /// The C name of the clock id.
    pub fn name(self) -> &'static str {
        match self {
            PosixClock::Monotonic => "CLOCK_MONOTONIC",
            PosixClock::Realtime => "CLOCK_REALTIME",
        }
    }
}

fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Reads `clock` in nanoseconds. On Linux this normally runs in the vDSO,
/// without entering the kernel. Errors are not checked here (the hot loop);
/// call [`clock_check`] once first.
#[inline]
pub fn clock_ns(clock: PosixClock) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the
    // call, and the clock id is one of the two every Linux kernel supports.
    unsafe { libc::clock_gettime(clock.id(), &mut ts) };
    timespec_ns(&ts)
}

/// Reads `clock` once, checking for errors.
pub fn clock_check(clock: PosixClock) -> Result<u64, BenchError> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as in `clock_ns`: `ts` is valid and writable.
    let rc = unsafe { libc::clock_gettime(clock.id(), &mut ts) };
    if rc != 0 {
        return Err(BenchError::last_os_error(format!(
            "clock_gettime({})",
            clock.name()
        )));
    }
    Ok(timespec_ns(&ts))
}

/// The resolution `clock_getres` claims for `clock`, in nanoseconds.
pub fn clock_res_ns(clock: PosixClock) -> Result<u64, BenchError> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_getres(clock.id(), &mut ts) };
    if rc != 0 {
        return Err(BenchError::last_os_error(format!(
            "clock_getres({})",
            clock.name()
        )));
    }
    Ok(timespec_ns(&ts))
}

/// Whether `rdtsc` may be executed by this process: `prctl(PR_SET_TSC)` can
/// make it raise SIGSEGV instead.
#[cfg(target_arch = "x86_64")]
pub fn tsc_enabled() -> bool {
    let mut state: c_int = 0;
    // SAFETY: PR_GET_TSC stores one int through the pointer given as the
    // second argument; `state` is a valid, writable int.
    let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut c_int) };
    // On failure (an old kernel without PR_GET_TSC) rdtsc cannot have been
    // disabled through it either.
    rc != 0 || state == libc::PR_TSC_ENABLE
}

// ---------------------------------------------------------------------------
// CPU affinity
// ---------------------------------------------------------------------------

/// A set of CPUs (a `cpu_set_t`, up to `CPU_SETSIZE` = 1024 CPUs).
#[derive(Clone, Copy)]
pub struct CpuSet(libc::cpu_set_t);

impl CpuSet {
    fn empty() -> CpuSet {
        // SAFETY: cpu_set_t is a plain array of integers; all-zero bits is
        // a valid value (the empty set).
        CpuSet(unsafe { std::mem::zeroed() })
    }

    /// The set holding only `cpu`.
    pub fn single(cpu: usize) -> Result<CpuSet, BenchError> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(BenchError::Failed(format!(
                "CPU {cpu} is beyond the {} CPUs a cpu_set_t can name",
                libc::CPU_SETSIZE
            )));
        }
        let mut set = CpuSet::empty();
        // SAFETY: `cpu` < CPU_SETSIZE was checked above, so the bit lies
        // inside the set's array.
        unsafe { libc::CPU_SET(cpu, &mut set.0) };
        Ok(set)
    }

    /// The CPUs in the set, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: every index is below CPU_SETSIZE, inside the array.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &self.0) })
            .collect()
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.cpus()).finish()
    }
}

/// The CPUs the calling thread may run on.
pub fn thread_affinity() -> Result<CpuSet, BenchError> {
    let mut set = CpuSet::empty();
    // SAFETY: pid 0 names the calling thread; the kernel writes at most
    // `size_of::<cpu_set_t>()` bytes into `set`, which is that large.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set.0) };
    if rc != 0 {
        return Err(BenchError::last_os_error("sched_getaffinity"));
    }
    Ok(set)
}

/// Restricts the calling thread (only it: Linux affinity is per thread) to
/// `set`. Threads and processes it creates afterwards inherit the mask.
pub fn set_thread_affinity(set: &CpuSet) -> Result<(), BenchError> {
    // SAFETY: pid 0 names the calling thread; the kernel reads
    // `size_of::<cpu_set_t>()` bytes from `set`, which is that large.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set.0) };
    if rc != 0 {
        return Err(BenchError::last_os_error(format!(
            "sched_setaffinity({set:?})"
        )));
    }
    Ok(())
}

/// Saves the calling thread's CPU affinity and puts it back on
/// [`AffinityGuard::restore`] (which reports a failure) or on drop (which
/// cannot). It must be restored on the thread that saved it; the runner
/// calls `prepare`, `run` and `finish` on one thread.
#[derive(Debug)]
pub struct AffinityGuard {
    saved: CpuSet,
}

impl AffinityGuard {
    /// Remembers the current affinity of the calling thread.
    pub fn save() -> Result<AffinityGuard, BenchError> {
        Ok(AffinityGuard {
            saved: thread_affinity()?,
        })
    }

    /// Restores the saved affinity.
    pub fn restore(self) -> Result<(), BenchError> {
        let saved = self.saved;
        // Restored here, with the error reported: drop must not do it again.
        std::mem::forget(self);
        set_thread_affinity(&saved)
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        let _ = set_thread_affinity(&self.saved);
    }
}

// ---------------------------------------------------------------------------
// Token echo over pipes (the context-switch partner)
// ---------------------------------------------------------------------------

/// Length of one token, as in `perf bench sched pipe` (an `int`).
pub const TOKEN_LEN: usize = 4;

/// The token that asks the echo partner to stop. Sequence tokens never take
/// this value (they keep the top bit clear).
pub const QUIT_TOKEN: [u8; TOKEN_LEN] = [0xff; TOKEN_LEN];

fn errno() -> c_int {
    // Reading errno allocates nothing and is async-signal-safe.
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Reads tokens of [`TOKEN_LEN`] bytes from `read_fd` and writes each back to
/// `write_fd`, until [`QUIT_TOKEN`] or end of file arrives.
///
/// Returns 0 on a clean stop, or the errno of a failed call (-1 for a short
/// transfer). Async-signal-safe: it allocates nothing and calls only `read`
/// and `write`, so a forked child may run it.
pub fn echo_tokens(read_fd: RawFd, write_fd: RawFd) -> c_int {
    let mut buf = [0u8; TOKEN_LEN];
    loop {
        // SAFETY: `buf` is valid and writable for `buf.len()` bytes; an
        // invalid fd makes read fail with EBADF, it cannot corrupt memory.
        let n = unsafe { libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 {
            return 0;
        }
        if n < 0 {
            match errno() {
                libc::EINTR => continue,
                e => return e,
            }
        }
        // Pipe writes of at most PIPE_BUF bytes are atomic, so a token
        // arrives whole or not at all.
        if n as usize != TOKEN_LEN {
            return -1;
        }
        if buf == QUIT_TOKEN {
            return 0;
        }
        loop {
            // SAFETY: `buf` is valid and readable for `buf.len()` bytes.
            let m = unsafe { libc::write(write_fd, buf.as_ptr().cast(), buf.len()) };
            if m == TOKEN_LEN as isize {
                break;
            }
            if m < 0 && errno() == libc::EINTR {
                continue;
            }
            return if m < 0 { errno() } else { -1 };
        }
    }
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// A program image ready for `execve` in a forked child: the path, `argv` =
/// `[path]` and an empty environment, all built before the fork (the child
/// must not allocate).
pub struct ExecImage {
    path: CString,
    argv: [*const c_char; 2],
    envp: [*const c_char; 1],
}

// SAFETY: the raw pointers point into `path`'s heap buffer (or are null).
// The struct owns that buffer and never mutates or frees it while it lives;
// moving the struct to another thread moves only the CString's handle, not
// the buffer, so the pointers stay valid wherever the struct goes.
unsafe impl Send for ExecImage {}

impl ExecImage {
    /// Prepares `path` for exec. Fails if the path contains a NUL byte.
    pub fn new(path: &Path) -> Result<ExecImage, BenchError> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| BenchError::Other(format!("{} contains a NUL byte", path.display())))?;
        let argv = [path.as_ptr(), ptr::null()];
        Ok(ExecImage {
            path,
            argv,
            envp: [ptr::null()],
        })
    }

    /// The program's path.
    pub fn path(&self) -> &str {
        self.path.to_str().unwrap_or("(non-UTF-8 path)")
    }
}

impl fmt::Debug for ExecImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecImage")
            .field("path", &self.path)
            .finish()
    }
}

/// What a forked child does. Each action makes only async-signal-safe calls.
#[derive(Debug)]
pub enum ChildAction<'a> {
    /// `_exit(0)` at once.
    Exit,
    /// `execve` the image; `_exit(127)` if that fails.
    Exec(&'a ExecImage),
    /// Close `close` (the parent's pipe ends, so end of file can reach the
    /// child), then [`echo_tokens`] from `read_fd` to `write_fd`; exit 0 on a
    /// clean stop, 1 otherwise.
    Echo {
        /// Where tokens arrive.
        read_fd: RawFd,
        /// Where they are echoed.
        write_fd: RawFd,
        /// Descriptors to close first.
        close: [RawFd; 2],
    },
}

/// Forks a child that performs `action`.
pub fn fork_child(action: &ChildAction<'_>) -> Result<Child, BenchError> {
    // SAFETY: fork has no memory-safety preconditions in the parent. In the
    // child, a copy of a possibly multi-threaded process, `child_main` makes
    // only async-signal-safe calls on memory prepared before the fork (see
    // the module docs) and never returns.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(BenchError::last_os_error("fork")),
        0 => child_main(action),
        pid => Ok(Child { pid, reaped: false }),
    }
}

fn child_main(action: &ChildAction<'_>) -> ! {
    let code = match *action {
        ChildAction::Exit => 0,
        ChildAction::Exec(image) => {
            // SAFETY: path is NUL-terminated; argv and envp are
            // null-terminated arrays of pointers to NUL-terminated strings,
            // all owned by `image`, which outlives this call. execve returns
            // only on failure.
            unsafe {
                libc::execve(
                    image.path.as_ptr(),
                    image.argv.as_ptr(),
                    image.envp.as_ptr(),
                )
            };
            127
        }
        ChildAction::Echo {
            read_fd,
            write_fd,
            close,
        } => {
            // A terminal's Ctrl-C reaches the whole foreground process group,
            // as `timeout`'s SIGTERM and a hangup's SIGHUP do. The partner
            // ignores them so the parent can finish the current record as
            // promised; the parent ends it through the pipe (or SIGKILL) in
            // finish, and a parent gone closes the pipe. (Ignored, not
            // caught: the parent's handler, inherited, would tell the
            // parent's signal thread of a signal the parent never got.)
            // SAFETY: signal() is async-signal-safe; SIG_IGN installs no
            // handler code in this child.
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
            }
            for fd in close {
                // SAFETY: closing a descriptor number has no memory-safety
                // preconditions; these are this (child) process's copies.
                unsafe { libc::close(fd) };
            }
            if echo_tokens(read_fd, write_fd) == 0 {
                0
            } else {
                1
            }
        }
    };
    // SAFETY: _exit is async-signal-safe, skips atexit handlers and stdio
    // flushing (which belong to the parent) and never returns.
    unsafe { libc::_exit(code) }
}

/// A forked child process. Dropping an unreaped child kills and reaps it,
/// so no zombie outlives its case.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// One `waitpid` call; `Some(status)` once the child is reaped.
    fn wait_once(&mut self, nohang: bool) -> Result<Option<ExitStatus>, BenchError> {
        if self.reaped {
            return Err(BenchError::Other(format!(
                "child {} was already reaped",
                self.pid
            )));
        }
        let flags = if nohang { libc::WNOHANG } else { 0 };
        let mut status: c_int = 0;
        loop {
            // SAFETY: `status` is a valid, writable int; waitpid on our own
            // child's pid touches no other memory.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if rc == self.pid {
                self.reaped = true;
                return Ok(Some(ExitStatus::from_raw(status)));
            }
            if rc == 0 {
                return Ok(None);
            }
            if errno() != libc::EINTR {
                // ECHILD: someone else reaped it (waitpid(-1) elsewhere);
                // either way it is gone.
                let err = BenchError::last_os_error(format!("waitpid({})", self.pid));
                self.reaped = true;
                return Err(err);
            }
        }
    }

    /// Waits for the child to exit and reaps it.
    pub fn wait(&mut self) -> Result<ExitStatus, BenchError> {
        match self.wait_once(false)? {
            Some(status) => Ok(status),
            None => Err(BenchError::Other(format!(
                "waitpid({}) returned without a status",
                self.pid
            ))),
        }
    }

    /// Waits up to `timeout` for the child to exit; past that, kills it with
    /// SIGKILL and reaps it (and says so in the error).
    pub fn wait_or_kill(&mut self, timeout: Duration) -> Result<ExitStatus, BenchError> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(status) = self.wait_once(true)? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.kill();
        let status = self.wait()?;
        Err(BenchError::Other(format!(
            "child {} did not exit within {timeout:?} and was killed ({status})",
            self.pid
        )))
    }

    fn kill(&self) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our
        // unreaped child, so it cannot have been recycled for another process.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn getppid_matches_std() {
        assert_eq!(
            getppid_raw(),
            i64::from(std::os::unix::process::parent_id())
        );
    }

    #[test]
    fn clocks_advance_and_have_a_resolution() {
        for c in [PosixClock::Monotonic, PosixClock::Realtime] {
            let a = clock_check(c).unwrap();
            std::thread::sleep(Duration::from_millis(2));
            let b = clock_ns(c);
            assert!(b > a + 1_000_000, "{c:?}: {a} -> {b}");
            let res = clock_res_ns(c).unwrap();
            assert!(res > 0 && res <= 10_000_000, "{c:?}: res {res}");
        }
    }

    #[test]
    fn affinity_round_trip() {
        let before = thread_affinity().unwrap();
        let cpus = before.cpus();
        assert!(!cpus.is_empty());
        let guard = AffinityGuard::save().unwrap();
        set_thread_affinity(&CpuSet::single(cpus[0]).unwrap()).unwrap();
        assert_eq!(thread_affinity().unwrap().cpus(), [cpus[0]]);
        guard.restore().unwrap();
        assert_eq!(thread_affinity().unwrap().cpus(), cpus);
        assert!(CpuSet::single(libc::CPU_SETSIZE as usize).is_err());
        // Dropping a guard restores too.
        let guard = AffinityGuard::save().unwrap();
        set_thread_affinity(&CpuSet::single(cpus[0]).unwrap()).unwrap();
        drop(guard);
        assert_eq!(thread_affinity().unwrap().cpus(), cpus);
    }

    #[test]
    fn fork_exit_and_exec_report_status() {
        let mut c = fork_child(&ChildAction::Exit).unwrap();
        assert!(c.pid() > 0);
        assert!(c.wait().unwrap().success());
        assert!(c.wait().is_err(), "a reaped child cannot be waited twice");

        let image = ExecImage::new(Path::new("/nonexistent/benchsuite-true")).unwrap();
        let mut c = fork_child(&ChildAction::Exec(&image)).unwrap();
        assert_eq!(c.wait().unwrap().code(), Some(127));
    }

    #[test]
    fn echo_child_echoes_and_stops_on_quit() {
        let (p2c_r, mut p2c_w) = io::pipe().unwrap();
        let (mut c2p_r, c2p_w) = io::pipe().unwrap();
        let mut child = fork_child(&ChildAction::Echo {
            read_fd: p2c_r.as_raw_fd(),
            write_fd: c2p_w.as_raw_fd(),
            close: [p2c_w.as_raw_fd(), c2p_r.as_raw_fd()],
        })
        .unwrap();
        drop((p2c_r, c2p_w));
        for i in 0..100u32 {
            p2c_w.write_all(&i.to_ne_bytes()).unwrap();
            let mut buf = [0u8; TOKEN_LEN];
            c2p_r.read_exact(&mut buf).unwrap();
            assert_eq!(u32::from_ne_bytes(buf), i);
        }
        p2c_w.write_all(&QUIT_TOKEN).unwrap();
        let status = child.wait_or_kill(Duration::from_secs(5)).unwrap();
        assert!(status.success(), "{status}");
    }

    #[test]
    fn dropping_a_child_kills_and_reaps_it() {
        // A child blocked reading a pipe nobody writes to never exits alone.
        let (r, w) = io::pipe().unwrap();
        let (_r2, w2) = io::pipe().unwrap();
        let child = fork_child(&ChildAction::Echo {
            read_fd: r.as_raw_fd(),
            write_fd: w2.as_raw_fd(),
            close: [-1, -1],
        })
        .unwrap();
        let pid = child.pid();
        drop(child);
        // SAFETY: waitpid accepts a null status pointer; it touches no other
        // memory. The child was reaped by drop, so this fails with ECHILD.
        let rc = unsafe { libc::waitpid(pid, ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(rc, -1);
        drop((r, w));
    }
}
