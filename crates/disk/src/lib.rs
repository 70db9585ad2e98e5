//! # benchsuite-disk
//!
//! File I/O the way fio measures it: sequential and random reads and
//! writes, MB/s, IOPS and completion-latency percentiles, with `O_DIRECT`
//! by default so the number is the device's, not the page cache's.
//!
//! ## `disk.io`
//!
//! | parameter | default | meaning (fio equivalent) |
//! |-----------|---------|--------------------------|
//! | `op` | `read` | `read`, `write` (sequential), `randread`, `randwrite`, `randrw` (`rw=`) |
//! | `block` (`--block`) | `0` = auto | bytes per I/O, 512 B..100 MiB; auto is 1 MiB sequential, 4 KiB random (`bs=`) |
//! | `threads` (`--threads`) | 1 | threads, each with its own file (`numjobs=`) |
//! | `qd` | 1 | I/Os in flight per thread with io_uring (`iodepth=`); closed loop only |
//! | `size` | 1 GiB | each thread's file (in place: region), rounded down to whole blocks (`size=`) |
//! | `rwmix` | 70 | percent reads for `randrw` (`rwmixread=`) |
//! | `engine` | `io_uring` | `io_uring` or `sync` (`ioengine=io_uring` / `psync`) |
//! | `direct` | on | `O_DIRECT` (`direct=1`) |
//! | `fsync` | `none` | `end` (after each timed batch), `every:N` (after N writes; `fsync=N`) |
//! | `verify` | off | per-block pattern, checked on every read and read back at teardown |
//! | `dir` | `auto` | scratch directory; `auto` = `--scratch-dir`, else `$TMPDIR`, else `/tmp`; an existing file or block device is tested in place (`filename=`, see below) |
//! | `preset` (`--preset`) | `none` | `sysbench-rndrw` = `op=randrw block=16K rwmix=60 fsync=every:40` |
//! | `rate` | `off` | `off` = closed loop (`qd` in flight per thread); `N` = open loop at N I/O/s across all threads, latency from each I/O's intended start (`rate_iops=`, see below); `auto` = a ladder up to saturation (`--slo`) |
//!
//! Metrics: `bandwidth` (B/s, reads and writes together), `iops` (IO/s) and
//! `latency` (s per I/O; the record adds p50/p90/p99/p99.9/p99.99/max from
//! an HDR histogram of every I/O, the threads' histograms added, never
//! their percentiles averaged). `--duration 60s --interval 1s` gives a
//! per-second time series.
//!
//! Each record's parameters are the values that ran: `block=0` shows the
//! block it chose, `--preset` the `op`, `block`, `rwmix` and `fsync` it
//! set, `engine=sync` where io_uring fell back, the `qd` it was clamped to
//! (1 with `engine=sync`, at most the blocks per file), the `size` used
//! (whole blocks; in place, capped by the target). Its notes say what was
//! measured: the file system and directory (or the target tested in place
//! and which bytes of it were overwritten), the mount and block device
//! under it (driver, scheduler, rotational, logical block; a paravirtual
//! disk such as virtio_blk is named as such — the report's
//! `host.extra.disk` has the same for the scratch directory), the files, the `O_DIRECT`
//! alignment and where it came from, the engine and how its ring was set
//! up, that a preset was applied. Its warnings say what makes the number
//! mean less than it seems: the page cache, a memory file system, an
//! engine fallback, an ignored `qd`, a sparse target.
//!
//! ### What one iteration is
//!
//! One completed I/O of `block` bytes. A batch of `n` iterations is
//! `n × threads` I/Os shared by all threads, each taking I/Os until the
//! batch's budget is spent (so all threads stop together and none idles at
//! the end of a batch), so `iops = I/Os / wall time` and `bandwidth = iops ×
//! block`, exactly as fio computes them over its runtime.
//!
//! ### Open loop (`rate`)
//!
//! `rate=N` issues I/Os on a fixed schedule instead of keeping a queue
//! full, as a service sees requests arrive (wrk2's method, no coordinated
//! omission). A batch of `n` iterations is still `n × threads` I/Os, now on
//! one schedule shared by all threads: I/O `k` of the batch (a ticket the
//! threads claim in turn) is intended to start `k / N` seconds after the
//! batch's first, and each batch's schedule continues the last one's (the
//! first batch starts it). Its latency is measured from that intended start to its
//! completion, not from its submission: a stall of the device (or of the
//! thread) counts fully for every I/O that should have started during it.
//! Each batch completes all its I/Os before it returns; when a stall holds
//! up its end, the next batch's first I/Os are already late and count it
//! (a schedule restarted per batch would wait the stall out); it pauses
//! between batches, from the end of one to the first worker's start of
//! the next, so the runner's time and waking the workers never count. The
//! record's `load`
//! gives the offered and achieved rates, and a point whose achieved rate
//! falls more than 5% short is marked saturated (a warning), its latencies
//! then describing a growing queue.
//!
//! - `engine=sync`: a thread claims the next I/O, waits until it is due
//!   (at once if it is late) and does it; with all threads busy, the next
//!   I/Os wait, their latency growing.
//! - `engine=io_uring`: each thread submits each of its I/Os when it is
//!   due (one submit per I/O), reaping completions while it waits (in the
//!   kernel with a timeout until 1 ms before the next start, then
//!   polling while it spins), and keeps as many in flight as the rate
//!   needs up to a cap per thread: 256, fewer for large blocks (64 MiB of
//!   buffers per thread, 8 GiB in all) or small files (the blocks a thread
//!   has). At the cap the next I/O waits for a completion, its latency
//!   counting from its intended start all the same.
//!
//! `qd` does not apply (anything but 1 is refused naming `rate`), nor does
//! `fsync=end` (its flush would be outside the schedule; `fsync=every:N`
//! runs on schedule, the I/Os behind a flush waiting for it, and so does
//! the sysbench preset). `verify=on` works as in closed loop. The waits
//! sleep, then spin (yielding the CPU on every turn) for the last 1 ms
//! before each start: in a virtual machine a sleeping thread can wake a
//! host tick late (I/Os submitted up to 4.4 ms late at 5 000/s with an
//! 80 µs margin), and that lateness counts in the latency. From about
//! 1 000 I/O/s per thread up, that is a CPU per thread. Each record's
//! notes say how late the I/Os were submitted (p50, p99, max). `rate=auto` is expanded into
//! numeric rates by the capacity search before any point is prepared.
//!
//! The fio reference of an open-loop point runs fio with
//! `--rate_iops=N/threads` per job (split by `rwmix` for `randrw`),
//! `--rate_process=linear`, `--lat_percentiles=1` and `--iodepth=64` with
//! io_uring, and compares mean latency (fio's total latency, `lat_ns`).
//! fio measures from each I/O's submission, so its number leaves out the
//! waits that ours counts.
//!
//! ### Written data
//!
//! Write buffers hold pseudo-random bytes, and before every write the
//! first 8 bytes of each 512 B sector are stamped with the offset and a
//! write counter (fio's default `scramble_buffers=1`): compressing or
//! deduplicating storage cannot turn repeated writes of one buffer into no
//! work. With `verify=on` each write carries the verify pattern instead.
//!
//! ### Latency
//!
//! Closed loop: fio's completion latency (`clat`): with `engine=sync` the
//! duration of the `pread`/`pwrite` call; with io_uring the time from the
//! return of the submitting `io_uring_enter` to the reaping of the
//! completion (fio stamps the same two points). Submission cost is in the
//! rates, not the latency. Open loop (`rate=N`): from the I/O's intended
//! start to the reaping of its completion (see above).
//!
//! ### Engines
//!
//! `io_uring`: one ring per thread, `qd` buffers registered with the kernel
//! (`READ_FIXED`/`WRITE_FIXED`) when it allows, set up as fio 3.33 does
//! (single issuer + deferred task work where available). If the kernel
//! forbids io_uring (`kernel.io_uring_disabled`, a seccomp filter) or lacks
//! an opcode, the point runs with `sync` and says so in a warning. `sync`:
//! `pread`/`pwrite` one I/O at a time; like fio's psync it ignores the
//! queue depth (the record says so when `qd > 1`). The queue is kept full
//! across batches, as in fio's steady state.
//!
//! ### Files: where, how, and never left behind
//!
//! Each thread gets one file in the scratch directory (`dir`, else
//! `--scratch-dir`, else the system temp dir: `$TMPDIR` or `/tmp`). The file
//! is created without a name (`O_TMPFILE`), or, where the file system lacks
//! that, created as `.benchsuite-scratch-<pid>-<n>.dat` and unlinked at
//! once: no file ever appears in the directory for longer than that, and the
//! kernel frees the space when the descriptor closes — at teardown, on
//! error, on Ctrl-C, and even when the process is killed. Before writing,
//! the free space (`statvfs`, excluding root-reserved blocks) must hold
//! `size × threads` plus 1% and 1 MiB; otherwise the record fails with a
//! message and nothing is written (`--opt disk.space-check=off` skips the
//! check for file systems whose `statvfs` is wrong). `prepare` then
//! reserves the space (`fallocate`) and writes every block with
//! pseudo-random data, untimed: reads never hit holes, and compressing or
//! deduplicating storage cannot shortcut the work. The layout is flushed
//! (`fsync`) before timing.
//!
//! ### An existing file or block device: in place
//!
//! A `dir` (or, with `dir=auto`, a `--scratch-dir`) that names an existing
//! regular file or block device is tested in place, as fio's `--filename`
//! does, instead of creating scratch files:
//!
//! - **Read-only points** (`op=read|randread` with `verify=off`) run
//!   without any flag: the target is opened read-only and nothing is
//!   written. The note says its existing contents were read: what it holds
//!   shapes the result (holes and unwritten extents read as zeros without
//!   device I/O; with `direct=off`, pages already cached come from memory).
//!   A regular file with fewer bytes allocated than its length
//!   (`st_blocks × 512 < size`: holes) gets a warning.
//! - **Points that write** (`write`, `randwrite`, `randrw`, or `verify=on`,
//!   which writes its pattern first) need `--allow-overwrite=PATH` naming
//!   the target (`--opt allow-overwrite=PATH[,PATH...]`: several
//!   comma-separated; a name matches by canonical path or by device and
//!   inode, so a symbolic link to the target matches it). A write test on
//!   any target it does not name is refused before anything runs, one line
//!   naming `dir`, the path and the flag (exit 2). The bare flag (`on`)
//!   authorises a single target: a plan that would write to two distinct
//!   ones is refused naming both. With it the target's data is overwritten,
//!   and the note says so: `tested PATH in place (existing file, N bytes);
//!   its contents were overwritten in [0, END)`.
//! - **Opened first, then classified, and never swapped.** The path is
//!   resolved once, when the run is planned: a symbolic link the user named
//!   is followed there, and the record shows the canonical path (`tested
//!   /dev/sdb (given as /dev/disk/by-id/...) in place`). Every open after
//!   that follows no symbolic link (`openat2(RESOLVE_NO_SYMLINKS)`, else
//!   `O_NOFOLLOW`), and what it opened is classified by `fstat` on the
//!   descriptor, never by a `stat` of the path before; the file type, device
//!   and inode are compared with what the plan saw. A path swapped in
//!   between (for a symbolic link to a block device, another file, a device
//!   node) fails the record naming what it was and what it is now, and
//!   nothing is written.
//! - The target is never created, truncated, extended or deleted, and there
//!   is no layout pass (its data is already there; `verify=on` writes its
//!   pattern over the regions first). Thread `i` uses bytes `[i × size,
//!   (i + 1) × size)`; with one thread `size` is capped by the target's
//!   length (the record's `size` says what ran), with more threads a
//!   target shorter than `threads × size` is refused naming `threads`. A
//!   target shorter than one block is refused naming `dir`. The length of a
//!   block device comes from `ioctl(BLKGETSIZE64)`.
//! - Every writable open is `O_EXCL`: on a block device the kernel refuses
//!   (`EBUSY`) while it is mounted or claimed (RAID, LVM, swap), so a
//!   mounted file system is never written under; the record fails and
//!   nothing is written.
//! - `O_DIRECT` alignment comes from the target itself:
//!   `statx(STATX_DIOALIGN)`, else for a device its logical block size
//!   (`ioctl(BLKSSZGET)`).
//!
//! ### Direct and buffered I/O
//!
//! `direct=on` (default) opens with `O_DIRECT`. Buffers are aligned to
//! the larger of the page size and the file's direct-I/O memory alignment,
//! and the block must be a multiple of the offset alignment; both come from
//! `statx(STATX_DIOALIGN)` (Linux 6.1+), else the device's
//! `logical_block_size` in sysfs, else 4096 B. A file system that refuses
//! `O_DIRECT` skips the point with the reason; so does `tmpfs` (memory, no
//! disk). `direct=off` runs buffered after dropping the layout from the
//! page cache (fio's `invalidate=1`); every such record carries a warning,
//! and a second one when the files fit in RAM.
//!
//! ### fsync
//!
//! `every:N`: after every N writes of a thread, the in-flight I/Os are
//! completed and the file is `fsync`ed (fio's `fsync=N`, sysbench's
//! `--file-fsync-freq`). `end`: the same after each timed batch, so every
//! sample includes making its writes durable (fio's `end_fsync=1` does it
//! once per job). fsync time counts in the rates, not in `latency`.
//!
//! ### verify=on
//!
//! Every block carries a header with its offset, a generation and a
//! checksum of a pseudo-random payload (layout in `src/pattern.rs`).
//! Every read is checked; every block written during the run is read back
//! and checked at teardown. A mismatch fails the record with the offset,
//! the expected and the actual value. Checking costs CPU inside the timing:
//! do not compare verify=on numbers with fio's unverified ones.
//!
//! ### The sysbench preset
//!
//! `--preset sysbench-rndrw` runs `sysbench fileio --file-test-mode=rndrw`'s
//! recipe: 16 KiB random I/O, 3 reads per 2 writes (`--file-rw-ratio=1.5`,
//! so `rwmix=60`), and sysbench's `--file-fsync-freq=100`, which counts
//! every request, reads included: at 3:2 that is an fsync every 40 writes,
//! hence `fsync=every:40`. Differences that remain: sysbench counts
//! requests across all threads and fsyncs its 128 files one per turn,
//! disk.io counts each thread's writes and fsyncs that thread's one file;
//! sysbench uses buffered I/O unless `--file-extra-flags=direct`. For
//! like-for-like numbers run sysbench with `--file-extra-flags=direct`
//! (or give `direct=off`), with `--file-total-size` equal to `size ×
//! threads`.
//!
//! ### Errors
//!
//! ENOSPC, EIO and other errors during layout or timing fail the record
//! with the errno's name and the operation's offset; the run continues with
//! the next point. Bad parameters are rejected before anything runs, each
//! message naming the parameter.
//!
//! ## Platforms
//!
//! Linux only (O_TMPFILE, O_DIRECT, statx, io_uring); elsewhere the module
//! lists no benchmarks.

#[cfg(target_os = "linux")]
pub mod device;

#[cfg(target_os = "linux")]
mod case;
#[cfg(target_os = "linux")]
mod fio;
mod io;
#[cfg(target_os = "linux")]
mod pattern;
#[cfg(target_os = "linux")]
mod picker;
#[cfg(target_os = "linux")]
mod prepare;
#[cfg(target_os = "linux")]
mod settings;
#[cfg(target_os = "linux")]
mod shared;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod target;
#[cfg(target_os = "linux")]
mod uring;
#[cfg(target_os = "linux")]
mod worker;

use benchsuite_core::Benchmark;

#[cfg(target_os = "linux")]
pub use io::DiskIo;
#[cfg(target_os = "linux")]
pub use prepare::{SPACE_CHECK_OPTION, page_cache_caveat};
#[cfg(target_os = "linux")]
pub use target::ALLOW_OVERWRITE_OPTION;

/// Module name: benchmark ids start with `disk.`.
pub const MODULE: &str = "disk";

/// One-line description of the module.
pub const DESCRIPTION: &str = "disk and file-system I/O: sequential and random read/write throughput, IOPS and latency percentiles (fio-style, O_DIRECT)";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    #[cfg(target_os = "linux")]
    {
        vec![Box::new(DiskIo)]
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}
