//! A team of worker threads for multi-threaded cases, and CPU pinning.
//!
//! A [`Team`] creates its threads once, in `prepare` (untimed): each runs an
//! `init` closure *on its own thread* (so buffers are first-touched by the
//! thread that uses them, on its NUMA node) and then parks. [`Team::run`]
//! releases every worker at once through a barrier, each does `iters`
//! iterations on its own state, and `run` returns when the last one is done,
//! with their [`Work`] merged (operations and bytes summed, latency
//! histograms added — never percentiles averaged). Dropping the team (or
//! [`Team::shutdown`]) joins every thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::bench::{About, Case, Finished, Work};
use crate::error::BenchError;

/// Logical CPUs this process may run on, in ascending order (from the
/// affinity mask; falls back to `0..available_parallelism`).
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, and
        // sched_getaffinity writes at most size_of::<cpu_set_t>() bytes.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            // SAFETY: CPU_ISSET reads the set initialised above; the index is below CPU_SETSIZE.
            let v: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect();
            if !v.is_empty() {
                return v;
            }
        }
    }
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (0..n).collect()
}

/// Pins the calling thread to one logical CPU.
pub fn pin_current_thread(cpu: usize) -> Result<(), BenchError> {
    #[cfg(target_os = "linux")]
    {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(BenchError::Other(format!(
                "cpu {cpu} is beyond CPU_SETSIZE"
            )));
        }
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes
        // within it because cpu < CPU_SETSIZE (checked above).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: see above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: pid 0 is the calling thread; pointer and size describe `set`.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(BenchError::last_os_error(format!(
                "sched_setaffinity(cpu {cpu})"
            )));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(BenchError::Failed(
            "thread pinning is implemented on Linux only".into(),
        ))
    }
}

/// Restricts the calling thread to a set of CPUs (used to undo a pin).
pub fn set_current_thread_cpus(cpus: &[usize]) -> Result<(), BenchError> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            // SAFETY: c < CPU_SETSIZE, so CPU_SET writes inside `set`.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: pid 0 is the calling thread; pointer and size describe `set`.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(BenchError::last_os_error("sched_setaffinity"));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        Ok(())
    }
}

/// How a team's threads are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Thread `i` pinned to the `i mod n`-th allowed CPU (oversubscribed
    /// teams wrap around).
    Pinned,
    /// Left to the scheduler.
    Unpinned,
}

type WorkFn<S> = dyn Fn(&mut S, u64) -> Result<Work, BenchError> + Send + Sync;

struct Shared {
    start: Barrier,
    done: Barrier,
    stop: AtomicBool,
    iters: Mutex<u64>,
    results: Mutex<Vec<Option<Result<Work, BenchError>>>>,
    /// When each worker began and ended its last batch (its own clock
    /// readings, after the barrier released it).
    spans: Mutex<Vec<Option<(Instant, Instant)>>>,
}

/// Worker threads parked between batches. See the module docs.
pub struct Team {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("threads", &self.handles.len())
            .finish()
    }
}

impl Team {
    /// Starts `threads` workers. `init(i)` builds worker `i`'s state on that
    /// worker (after pinning); `work(state, iters)` is one batch. Returns
    /// the first `init` error, after stopping the workers already started.
    pub fn new<S, I, W>(
        threads: usize,
        placement: Placement,
        init: I,
        work: W,
    ) -> Result<Team, BenchError>
    where
        S: 'static,
        I: Fn(usize) -> Result<S, BenchError> + Send + Sync + 'static,
        W: Fn(&mut S, u64) -> Result<Work, BenchError> + Send + Sync + 'static,
    {
        if threads == 0 {
            return Err(BenchError::Other("a team needs at least one thread".into()));
        }
        let shared = Arc::new(Shared {
            start: Barrier::new(threads + 1),
            done: Barrier::new(threads + 1),
            stop: AtomicBool::new(false),
            iters: Mutex::new(0),
            results: Mutex::new((0..threads).map(|_| None).collect()),
            spans: Mutex::new(vec![None; threads]),
        });
        let init = Arc::new(init);
        let work: Arc<WorkFn<S>> = Arc::new(work);
        let cpus = allowed_cpus();
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (sh, ini, wk) = (shared.clone(), init.clone(), work.clone());
            let cpu = cpus[i % cpus.len()];
            let spawned = std::thread::Builder::new()
                .name(format!("benchsuite-worker-{i}"))
                .spawn(move || worker(i, placement, cpu, &sh, &*ini, &*wk));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The barriers count `threads` workers; without them the
                    // started ones would wait forever. Stop and report.
                    let team = Team { shared, handles };
                    team.abort_start();
                    return Err(BenchError::io(
                        format!("spawning worker {i} of {threads}"),
                        e,
                    ));
                }
            }
        }
        let team = Team { shared, handles };
        // Initialisation round: every worker reports its init result.
        team.shared.start.wait();
        team.shared.done.wait();
        if let Some(e) = team.take_results().into_iter().find_map(Result::err) {
            team.shutdown();
            return Err(e);
        }
        Ok(team)
    }

    /// Number of workers.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Always false: a team has at least one worker.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Runs one batch of `iters` iterations on every worker at once and
    /// returns their merged work. Errors from any worker are returned after
    /// all have finished the batch.
    ///
    /// Unless a worker timed its own work ([`Work::elapsed`]), the batch's
    /// time is the span the workers ran, from the first one's start to the
    /// last one's end, on their own clocks: not the caller's wall time,
    /// which also holds waking the workers and being woken by the last.
    /// Those wake-ups cost microseconds on a quiet machine, but on a busy
    /// one a woken thread can wait a whole scheduler slice for its CPU,
    /// and a batch of a few hundred nanoseconds of work then measured
    /// milliseconds (a loaded CI machine reported 8 ms per pointer-chase
    /// hop).
    pub fn run(&self, iters: u64) -> Result<Work, BenchError> {
        *self.shared.iters.lock().unwrap_or_else(|p| p.into_inner()) = iters;
        self.shared.start.wait();
        self.shared.done.wait();
        let span = self.take_span();
        let mut total = Work::default();
        for r in self.take_results() {
            merge_work(&mut total, r?)?;
        }
        if total.elapsed.is_none() {
            total.elapsed = span;
        }
        Ok(total)
    }

    /// From the first worker's start to the last one's end in the batch
    /// just run (`None` if a worker recorded none).
    fn take_span(&self) -> Option<Duration> {
        let mut spans = self.shared.spans.lock().unwrap_or_else(|p| p.into_inner());
        let all: Option<Vec<(Instant, Instant)>> = spans.iter_mut().map(Option::take).collect();
        let all = all?;
        let start = all.iter().map(|s| s.0).min()?;
        let end = all.iter().map(|s| s.1).max()?;
        Some(end.saturating_duration_since(start))
    }

    /// Each worker's own work from one batch (per-thread numbers).
    pub fn run_each(&self, iters: u64) -> Result<Vec<Work>, BenchError> {
        *self.shared.iters.lock().unwrap_or_else(|p| p.into_inner()) = iters;
        self.shared.start.wait();
        self.shared.done.wait();
        self.take_results().into_iter().collect()
    }

    fn take_results(&self) -> Vec<Result<Work, BenchError>> {
        let mut r = self
            .shared
            .results
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        r.iter_mut()
            .map(|slot| {
                slot.take()
                    .unwrap_or_else(|| Err(BenchError::Other("a worker thread died".into())))
            })
            .collect()
    }

    fn abort_start(mut self) {
        // Workers spawned so far are blocked on `start` which needs all of
        // them; they cannot be released. Detach them: they hold only Arcs.
        // This only happens when the OS refuses to create a thread.
        self.shared.stop.store(true, Ordering::SeqCst);
        self.handles.clear();
    }

    /// Stops and joins every worker (also done on drop).
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.start.wait();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The case of a benchmark whose work is one [`Team`] batch: `run` is
/// [`Team::run`], `finish` joins the workers and returns the [`About`]
/// built in `prepare`. Most multi-threaded benchmarks need nothing else.
#[derive(Debug)]
pub struct TeamCase {
    team: Team,
    about: About,
}

impl TeamCase {
    /// A case running `team`, whose record carries `about`.
    pub fn new(team: Team, about: About) -> Self {
        TeamCase { team, about }
    }

    /// [`TeamCase::new`], boxed for [`crate::Benchmark::prepare`].
    pub fn boxed(team: Team, about: About) -> Box<dyn Case> {
        Box::new(Self::new(team, about))
    }
}

impl Case for TeamCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.team.run(iters)
    }

    fn finish(self: Box<Self>) -> Finished {
        let TeamCase { team, about } = *self;
        team.shutdown();
        about.into()
    }
}

/// Adds `w` into `total`: operations and bytes summed, histograms added,
/// device time the maximum, reported values summed.
pub fn merge_work(total: &mut Work, w: Work) -> Result<(), BenchError> {
    total.ops += w.ops;
    total.bytes += w.bytes;
    if let Some(h) = w.latency {
        match &mut total.latency {
            Some(t) => t
                .add(&h)
                .map_err(|e| BenchError::caused("merging latency histograms", e))?,
            None => total.latency = Some(h),
        }
    }
    total.elapsed = match (total.elapsed, w.elapsed) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    for (k, v) in w.values {
        *total.values.entry(k).or_insert(0.0) += v;
    }
    Ok(())
}

fn worker<S>(
    i: usize,
    placement: Placement,
    cpu: usize,
    shared: &Shared,
    init: &(dyn Fn(usize) -> Result<S, BenchError> + Send + Sync),
    work: &WorkFn<S>,
) {
    let pinned = match placement {
        Placement::Pinned => pin_current_thread(cpu),
        Placement::Unpinned => Ok(()),
    };
    let (mut state, first) = match pinned.and_then(|_| init(i)) {
        Ok(s) => (Some(s), Ok(Work::default())),
        Err(e) => (None, Err(BenchError::caused(format!("worker {i}"), e))),
    };
    shared.start.wait();
    shared.results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(first);
    shared.done.wait();
    loop {
        shared.start.wait();
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let iters = *shared.iters.lock().unwrap_or_else(|p| p.into_inner());
        let t0 = Instant::now();
        let r = match &mut state {
            Some(s) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(s, iters)))
                .unwrap_or_else(|_| Err(BenchError::Other(format!("worker {i} panicked")))),
            None => Err(BenchError::Other(format!(
                "worker {i} failed to initialise"
            ))),
        };
        let t1 = Instant::now();
        shared.spans.lock().unwrap_or_else(|p| p.into_inner())[i] = Some((t0, t1));
        shared.results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
        shared.done.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_runs_each_batch_with_its_own_state() {
        let team = Team::new(
            3,
            Placement::Unpinned,
            |i| Ok(vec![i as u64; 4]),
            |s: &mut Vec<u64>, iters| {
                s[0] += iters;
                Ok(Work::ops_bytes(iters, s[1] * 10))
            },
        )
        .unwrap();
        assert_eq!(team.len(), 3);
        let w = team.run(5).unwrap();
        assert_eq!(w.ops, 15);
        assert_eq!(w.bytes, 10 + 20, "workers 1 and 2 report 10 and 20 bytes");
        let each = team.run_each(2).unwrap();
        assert_eq!(each.iter().map(|w| w.ops).collect::<Vec<_>>(), [2, 2, 2]);
        team.shutdown();
    }

    #[test]
    fn a_batch_lasts_what_its_workers_ran_not_the_callers_wall_time() {
        let team = Team::new(
            2,
            Placement::Unpinned,
            |_| Ok(()),
            |_: &mut (), n| {
                std::thread::sleep(Duration::from_millis(n));
                Ok(Work::ops(n))
            },
        )
        .unwrap();
        let t0 = Instant::now();
        let w = team.run(20).unwrap();
        let wall = t0.elapsed();
        let e = w.elapsed.expect("the workers' span");
        assert!(
            e >= Duration::from_millis(20) && e <= wall,
            "{e:?} of {wall:?}"
        );
        // A worker that times its own work keeps its figure.
        let own = Team::new(
            1,
            Placement::Unpinned,
            |_| Ok(()),
            |_: &mut (), n| {
                Ok(Work {
                    elapsed: Some(Duration::from_secs(n)),
                    ..Work::ops(n)
                })
            },
        )
        .unwrap();
        assert_eq!(own.run(7).unwrap().elapsed, Some(Duration::from_secs(7)));
    }

    #[test]
    fn init_and_work_errors_are_reported_not_hung() {
        let e = Team::new(
            2,
            Placement::Unpinned,
            |i| {
                if i == 1 {
                    Err(BenchError::Other("no buffer".into()))
                } else {
                    Ok(())
                }
            },
            |_: &mut (), n| Ok(Work::ops(n)),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "worker 1");
        assert_eq!(crate::error_chain(&e), "worker 1: no buffer");
        let team = Team::new(
            2,
            Placement::Pinned,
            |_| Ok(()),
            |_: &mut (), n| {
                if n > 3 {
                    Err(BenchError::Other("too many".into()))
                } else {
                    Ok(Work::ops(n))
                }
            },
        )
        .unwrap();
        assert_eq!(team.run(3).unwrap().ops, 6);
        assert!(team.run(4).is_err());
        // The team still works after an error, and drop joins it.
        assert_eq!(team.run(1).unwrap().ops, 2);
    }

    #[test]
    fn pinning_follows_the_allowed_cpus() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_current_thread(first).unwrap();
            assert_eq!(allowed_cpus(), vec![first]);
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
