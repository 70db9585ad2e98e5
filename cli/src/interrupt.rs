//! SIGINT (Ctrl-C), SIGTERM (CI's cancel, `timeout`, the end of a Slurm
//! job) and SIGHUP (a closed terminal or SSH session) all end a command
//! the same way.
//!
//! The first signal sets the command's cancel flag: the current record
//! (or round) finishes, the tools it runs are stopped, their scratch
//! directories removed, what is done is written, and the process exits
//! with 128 + the signal's number ([`exit_code`]: 130 for Ctrl-C, 143 for
//! SIGTERM, 129 for SIGHUP). A second signal leaves at once (128 + its
//! number), but still stops the tools' process groups (they run in groups
//! of their own, which no terminal or `kill` of our PID reaches) and
//! removes every scratch directory.
//!
//! The signal handler only writes the signal's number to a pipe; a thread
//! of its own does the rest. Nothing here runs inside a measurement: the
//! measuring code looks at a flag it looked at before.

use std::io::Write;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The signals that end a command.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The write end of the pipe the handler writes to (-1 before
/// [`install`]).
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// The process that installed the handler: a child forked from it (a
/// benchmark's, before it execs or exits) inherits the handler and the
/// pipe, and must not report a signal of its own as ours.
static OWNER: AtomicI32 = AtomicI32::new(0);

/// The first signal received (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);

/// The cancel flags of the commands that asked ([`install`]).
static FLAGS: Mutex<Vec<Arc<AtomicBool>>> = Mutex::new(Vec::new());

/// Makes SIGINT, SIGTERM and SIGHUP set `cancel` (and wake the waits on
/// reference tools), the second of them leave at once, cleaning up as the
/// module says. Installed once; each call adds its flag.
pub(crate) fn install(cancel: &Arc<AtomicBool>) {
    FLAGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(cancel.clone());
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        if let Err(e) = start() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: cannot handle SIGINT/SIGTERM/SIGHUP ({e}): a signal ends benchsuite without cleaning up"
            );
        }
    });
}

/// The exit status of a command a signal ended: 128 + the first signal's
/// number (130 when none came, as a cancel set by other means is taken
/// for a Ctrl-C).
pub(crate) fn exit_code() -> i32 {
    128 + match FIRST.load(Ordering::SeqCst) {
        0 => libc::SIGINT,
        s => s,
    }
}

/// The name a signal goes by in messages.
pub(crate) fn name() -> &'static str {
    match FIRST.load(Ordering::SeqCst) {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "Ctrl-C",
    }
}

/// The pipe, the thread that reads it, then the handlers.
fn start() -> std::io::Result<()> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read, write] = fds;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || listen(read))?;
    PIPE.store(write, Ordering::SeqCst);
    OWNER.store(std::process::id() as i32, Ordering::SeqCst);
    for sig in SIGNALS {
        // SAFETY: sigaction is zeroed plain data; the handler is an
        // `extern "C" fn(c_int)` that makes only async-signal-safe calls.
        // SA_RESTART: a read or write the signal interrupts is resumed,
        // not failed with EINTR.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The handler: the signal's number into the pipe, nothing else (in a
/// forked child: nothing at all).
extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: errno is this thread's; saved and restored so the code the
    // signal interrupted sees its own. getpid(2) and write(2) are
    // async-signal-safe; a full pipe (a flood of signals) drops the byte,
    // which is harmless.
    unsafe {
        if libc::getpid() != OWNER.load(Ordering::Relaxed) {
            return;
        }
        let errno = *libc::__errno_location();
        let byte = sig as u8;
        libc::write(PIPE.load(Ordering::Relaxed), (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// After SIGHUP the terminal is gone: a write to it fails with EIO, and
/// every `eprintln!` that finishes the command (its summary, a warning)
/// would panic (exit 101, the report perhaps unwritten). Stdout and stderr
/// that are terminals are pointed at /dev/null; files and pipes stay, so
/// `-o` and redirected output are written in full.
fn quiet_hung_up_terminal() {
    // SAFETY: open(2), isatty(3), dup2(2) and close(2) on descriptors this
    // process owns; a failure leaves the descriptor as it was.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null < 0 {
            return;
        }
        for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            // A hung-up terminal may fail isatty's ioctl with EIO.
            *libc::__errno_location() = 0;
            if libc::isatty(fd) == 1 || *libc::__errno_location() == libc::EIO {
                libc::dup2(null, fd);
            }
        }
        libc::close(null);
    }
}

/// Reads signals from the pipe, one at a time.
fn listen(read: RawFd) {
    let mut received = 0usize;
    loop {
        let mut byte = 0u8;
        // SAFETY: reads one byte into a valid buffer from our pipe.
        let n = unsafe { libc::read(read, (&mut byte as *mut u8).cast(), 1) };
        if n != 1 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let sig = libc::c_int::from(byte);
        received += 1;
        if received == 1 {
            FIRST.store(sig, Ordering::SeqCst);
            if sig == libc::SIGHUP {
                quiet_hung_up_terminal();
            }
            for f in FLAGS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                f.store(true, Ordering::SeqCst);
            }
            // A reference tool's wait sleeps until it exits: wake it.
            benchsuite::reference::wake_waits();
            // Not eprintln!: after SIGHUP the terminal may be gone, and a
            // failed write must not end this thread.
            let _ = writeln!(
                std::io::stderr(),
                "\n{}: finishing the current record, then writing the report ({} again to leave at once)",
                name(),
                name()
            );
        } else {
            // Tools run in process groups of their own: stop them before
            // removing the directories they write in.
            benchsuite::reference::kill_running_tools();
            benchsuite::scratch::remove_all();
            std::process::exit(128 + sig);
        }
    }
}
