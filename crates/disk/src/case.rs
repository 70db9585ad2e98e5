//! `disk.io`'s prepared case ([`DiskCase`]): the started workers, parked
//! between batches, and what its record says. Built by `prepare.rs`; each
//! batch hands the workers a shared budget (`shared.rs`).

use std::sync::Arc;

use benchsuite_core::team::Team;
use benchsuite_core::{About, BenchError, Case, Finished, Work};

use crate::shared::{FINISH, Shared};

/// One prepared point: the threads, parked between batches, and what its
/// record says. Built by [`prepare`](crate::prepare::prepare).
///
/// It needs no `Drop` of its own: dropping the [`Team`] joins the workers,
/// each worker's ring drains its in-flight I/O as it drops, and the kernel
/// frees the unnamed files as their descriptors close. [`Case::finish`]
/// does the same after draining and verifying, and reports what failed.
pub struct DiskCase {
    team: Team,
    sh: Arc<Shared>,
    threads: u64,
    /// Its resolved parameters are the values that ran, for the record's
    /// parameters; [`Case::finish`] adds what the workers noted.
    about: About,
}

impl DiskCase {
    /// A case over `threads` started workers sharing `sh`.
    pub fn new(team: Team, sh: Arc<Shared>, threads: usize, about: About) -> DiskCase {
        DiskCase {
            team,
            sh,
            threads: threads as u64,
            about,
        }
    }
}

impl Case for DiskCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let iters = iters.min(FINISH - 1);
        let budget = iters.saturating_mul(self.threads).min(i64::MAX as u64) as i64;
        self.sh
            .budget
            .store(budget, std::sync::atomic::Ordering::SeqCst);
        // Open loop: the batch's schedule continues the point's timeline,
        // which pauses while the runner, not the case, has the thread.
        if let Some(open) = &self.sh.open {
            open.start_batch(budget.max(0) as u64);
        }
        let work = self.team.run(iters);
        if let Some(open) = &self.sh.open {
            open.end_batch();
        }
        work
    }

    fn finish(self: Box<Self>) -> Finished {
        let DiskCase {
            team,
            sh,
            mut about,
            ..
        } = *self;
        // Drain in-flight I/O and verify written blocks, then join the
        // workers: dropping each worker closes its unnamed file, which the
        // kernel then frees.
        let r = team.run(FINISH);
        team.shutdown();
        // What the workers noted while setting up (how the ring was set
        // up, whether O_TMPFILE worked) follows what `prepare` noted.
        about.notes.extend(
            sh.notes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        let lag = sh.lag.lock().unwrap_or_else(|p| p.into_inner());
        if !lag.is_empty() {
            let us = |q: f64| lag.value_at_quantile(q) as f64 / 1e3;
            about.notes.push(format!(
                "open loop: the I/Os were submitted after their intended start by {:.1} µs at the median, {:.1} µs at p99, {:.1} µs at most (over {} I/Os, warm-up included): the generator's own lateness, which counts in the latency here (a tool that times from submission, as fio does, leaves it out)",
                us(0.5),
                us(0.99),
                lag.max() as f64 / 1e3,
                lag.len()
            ));
        }
        Finished::with(about, r.map(|_| ()))
    }
}
