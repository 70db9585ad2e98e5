//! # benchsuite-os
//!
//! Operating-system primitives, in the tradition of lmbench (`lat_syscall`,
//! `lat_proc`, `lat_ctx`) and `perf bench` (`syscall basic`, `sched pipe`).
//! Every benchmark's headline metric is `time_per_op`: seconds per operation
//! (the runner divides a batch's wall time by the operations it reports).
//!
//! | id | one operation | includes | compare with |
//! |----|---------------|----------|--------------|
//! | `os.timer` | one clock read | loop + a subtract and a minimum (~1 ns) | — |
//! | `os.call` | one call + return through a function pointer | loop, summing the result | lmbench `lat_proc procedure` (`args=1`) |
//! | `os.syscall` | one system call | loop | lmbench `lat_syscall null` / `write`; `perf bench syscall basic` |
//! | `os.thread_create` | spawn + join of a thread | stack mmap/munmap, std's bookkeeping | pthread_create + pthread_join |
//! | `os.process_create` | fork + exit (or exec) + waitpid | the parent's page-table copy | lmbench `lat_proc fork` / `exec` |
//! | `os.context_switch` | half a pipe round trip | one pipe write + one pipe read per switch | `perf bench sched pipe` ÷ 2 |
//!
//! ## `os.timer` — `clock=instant|clock_gettime_monotonic|clock_gettime_realtime|tsc`
//!
//! The cost of reading a clock, reading it back to back (default `instant`,
//! `std::time::Instant::now`, which is `CLOCK_MONOTONIC` on Linux).
//! `clock_gettime` normally runs in the vDSO without entering the kernel; its
//! cost depends on the kernel's clocksource (`tsc` is fast, `hpet` or
//! `acpi_pm` in a VM can cost microseconds), which the record's notes name.
//! `tsc` is the bare `rdtsc` instruction (x86_64 only; elsewhere the point is
//! unsupported).
//!
//! A second metric, `resolution` (seconds), is the smallest nonzero step seen
//! between consecutive reads in the batch: what the clock can actually
//! distinguish, which may be coarser than what `clock_getres` claims (said
//! in a note) and, for fast clocks, is bounded below by the read cost.
//! For `tsc` the step is in ticks, converted to seconds with a frequency
//! calibrated against `Instant` over 20 ms in `prepare` (said in a note).
//!
//! ## `os.call` — `args=0..7`
//!
//! A procedure call and return: `#[inline(never)]`, `extern "C"` functions
//! taking N `u64` arguments, called through a `black_box`ed function pointer so
//! the compiler can neither inline nor elide them; the results are summed.
//! Successive calls are independent, so this is the per-call cost of a loop
//! of calls as an out-of-order CPU overlaps them (lmbench `lat_proc
//! procedure` is the same shape with one argument). On x86_64 System V the
//! first six arguments travel in registers and the seventh on the stack.
//!
//! ## `os.syscall` — `call=getppid|write_devnull`
//!
//! The round trip into the kernel. `getppid` (default) is issued as
//! `syscall(SYS_getppid)` so no libc wrapper or cache can answer it in user
//! space; it is the "null call" of lmbench `lat_syscall null` and the loop of
//! `perf bench syscall basic` (which reports the same quantity, in usecs/op).
//! `write_devnull` is a 1-byte `write(2)` to a descriptor of `/dev/null`
//! opened in `prepare` (lmbench `lat_syscall write`). Both include the
//! kernel's entry/exit mitigations (PTI, retpolines...), which dominate on
//! many machines.
//!
//! ## `os.thread_create`
//!
//! `std::thread::Builder::spawn` of a thread that returns at once, then
//! `join`: pthread_create + pthread_join plus std's bookkeeping (an `Arc`ed
//! result slot, the thread's name and stack-size lookup). The stack (2 MiB by
//! default) is mapped and unmapped each time.
//!
//! ## `os.process_create` — `mode=fork_exit|fork_exec`
//!
//! `fork_exit` (default): `fork`, the child calls `_exit(0)`, the parent
//! `waitpid`s (lmbench `lat_proc fork`). `fork_exec`: the child `execve`s
//! `/bin/true` (or `/usr/bin/true`; unsupported if neither exists) with an
//! empty environment, then the parent waits (lmbench `lat_proc exec`, which
//! execs a small static program, whereas `/bin/true` is usually dynamically
//! linked, so the loader's work is included). `fork` copies the parent's page
//! tables, so its cost grows with the parent's memory: a larger embedding
//! program measures a slower fork. The child makes only async-signal-safe
//! calls, as it must in a multi-threaded parent.
//!
//! ## `os.context_switch` — `mode=process|thread`, `cpus=same|different|any`
//!
//! Two pipes and a partner (a forked process, or a thread with `mode=thread`)
//! created in `prepare` and parked reading its pipe. One iteration writes a
//! 4-byte token to the partner and reads it back: a round trip. Each round
//! trip is two switches, so the case reports `2 × iters` operations and
//! `time_per_op` is **round trip / 2 = the time of one switch**.
//!
//! What one switch includes: one pipe `write` (which wakes the sleeper), the
//! scheduler's switch to it, and the pipe `read` that completes in it.
//! lmbench's `lat_ctx` measures its own pipe overhead and subtracts it; this
//! benchmark does not, and so matches `perf bench sched pipe`, which runs the
//! same loop (4-byte `int` tokens, two pipes, `fork` by default, threads with
//! `-T`) and prints `usecs/op` = total time / loops, where one loop is one
//! **round trip**. Hence:
//!
//! ```text
//! os.context_switch time_per_op  =  perf bench sched pipe usecs/op  /  2
//! ```
//!
//! `cpus=same` (default) pins both ends to one CPU, so every wake-up is a
//! real switch on that CPU (compare with `taskset -c 0 perf bench sched
//! pipe`). `cpus=different` pins them to two CPUs, so a switch is a cross-CPU
//! wake-up (an IPI and an idle exit) rather than a switch on one CPU;
//! unsupported when this process may use only one CPU. `cpus=any` does not
//! pin, as plain `perf bench sched pipe` does; the scheduler then decides,
//! and results may be bimodal. Finishing the case sends a quit token, closes
//! the pipes, reaps the child or joins the thread, and restores this
//! thread's CPU affinity (the runner reuses its thread for other
//! benchmarks).
//!
//! ## Platforms
//!
//! Written for Linux. Elsewhere `os.syscall`, `os.process_create` and
//! `os.context_switch` are not listed, and `os.timer`'s `clock_gettime`
//! clocks are unsupported points.

mod call;
#[cfg(target_os = "linux")]
mod ctx;
#[cfg(target_os = "linux")]
mod process;
#[cfg(target_os = "linux")]
mod reference;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod syscall;
mod thread;
mod timer;

use benchsuite_core::Benchmark;

pub use call::Call;
#[cfg(target_os = "linux")]
pub use ctx::ContextSwitch;
#[cfg(target_os = "linux")]
pub use process::ProcessCreate;
#[cfg(target_os = "linux")]
pub use syscall::Syscall;
pub use thread::ThreadCreate;
pub use timer::Timer;

/// Module name: benchmark ids start with `os.`.
pub const MODULE: &str = "os";

/// One-line description of the module.
pub const DESCRIPTION: &str = "OS primitives: clock reads, procedure and system calls, thread and process creation, context switches";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    let mut v: Vec<Box<dyn Benchmark>> = vec![Box::new(Timer), Box::new(Call)];
    #[cfg(target_os = "linux")]
    v.push(Box::new(Syscall));
    v.push(Box::new(ThreadCreate));
    #[cfg(target_os = "linux")]
    {
        v.push(Box::new(ProcessCreate));
        v.push(Box::new(ContextSwitch));
    }
    v
}
