//! Open-loop load: operations started on a fixed schedule, whatever the
//! system under test does, with each latency measured from the operation's
//! *intended* start.
//!
//! A closed loop (fio's `iodepth`, a ping-pong) starts the next operation
//! when one completes. When the system stalls, the loop stalls with it: a
//! 100 ms stall costs one slow sample, although at 10 000 operations per
//! second a thousand requests would have waited behind it. Its percentiles
//! hide the stall ("coordinated omission", Gil Tene; wrk2 and
//! HdrHistogram's correction measure from the intended start for this
//! reason). Open loop is what a service sees: requests arrive at their own
//! rate.
//!
//! A benchmark that supports it declares the `rate` parameter
//! ([`ParamSpec::rate`](crate::ParamSpec::rate)); its case reads
//! [`Rate::of`] and, at [`Rate::Fixed`], issues the `k`-th operation of a
//! batch at [`Schedule::at`]`(k)` and records `completion - at(k)` in its
//! latency histogram. The runner adds the offered and achieved rates to the
//! record ([`OpenLoad`]) and marks a point whose achieved rate falls more
//! than [`SATURATION_TOLERANCE`] short of the offered one as saturated
//! ([`Caveat::Saturated`](crate::Caveat::Saturated)).
//!
//! The schedule runs on across a case's batches ([`Timeline`]): the
//! first batch starts it, and each later batch continues where the last
//! one's operations left off on it. A batch completes its operations
//! before it returns, so when a stall holds up the end of one batch, the
//! next batch's first operations are already late and count it — a
//! schedule restarted per batch would wait out the stall (coordinated
//! omission at the batch's scale). The time between batches, when the
//! runner rather than the case runs (from [`Timeline::end`] to the next
//! [`Timeline::batch`]), is left out: the schedule pauses for it, so the
//! harness's own gaps never count as the system's latency. The achieved
//! rate of a batch is its operations over its wall time, the drain
//! included.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::param::{Point, RATE_AUTO, RATE_OFF, Value};

/// The name of the offered-load parameter.
pub const RATE: &str = "rate";

/// How far (as a fraction) the achieved rate may fall below the offered
/// one before the point counts as saturated: 5%. An open-loop sample lasts
/// at least [`crate::runner::OPEN_LOOP_SAMPLE`] (100 ms), so its drain (the
/// last operations' latency after the last start) costs well under 1% on
/// a system that keeps up; the rest of the tolerance absorbs a brief
/// hiccup of the machine. A system that does not keep up falls further
/// behind the longer it runs.
pub const SATURATION_TOLERANCE: f64 = 0.05;

/// What a point's `rate` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Closed loop (`rate=off`, and every benchmark without `rate`).
    Closed,
    /// Open loop at this many operations per second.
    Fixed(f64),
    /// A ladder of rates up to saturation (see [`crate::capacity`]).
    Auto,
}

impl Rate {
    /// The point's `rate`; [`Rate::Closed`] when it has none.
    pub fn of(point: &Point) -> Rate {
        match point.get(RATE) {
            Some(Value::Int(n)) if *n > 0 => Rate::Fixed(*n as f64),
            Some(Value::Float(f)) if *f > 0.0 => Rate::Fixed(*f),
            Some(Value::Str(s)) if s == RATE_AUTO => Rate::Auto,
            Some(Value::Str(s)) if s == RATE_OFF => Rate::Closed,
            _ => Rate::Closed,
        }
    }

    /// The fixed rate, if this is one.
    pub fn fixed(self) -> Option<f64> {
        match self {
            Rate::Fixed(r) => Some(r),
            _ => None,
        }
    }
}

/// The intended start times of one batch: operation `k` (from 0) at
/// `start + k / rate`.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    start: Instant,
    period_ns: f64,
}

impl Schedule {
    /// A schedule of `rate` operations per second starting now.
    pub fn new(rate: f64) -> Schedule {
        Schedule::starting_at(rate, Instant::now())
    }

    /// A schedule of `rate` operations per second starting at `start`.
    pub fn starting_at(rate: f64, start: Instant) -> Schedule {
        Schedule {
            start,
            period_ns: 1e9 / rate.max(1e-9),
        }
    }

    /// The intended start of operation `k`.
    pub fn at(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * self.period_ns) as u64)
    }

    /// How many operations are due by `now` (those with `at(k) <= now`).
    pub fn due(&self, now: Instant) -> u64 {
        let ns = now.saturating_duration_since(self.start).as_nanos() as f64;
        (ns / self.period_ns).floor() as u64 + 1
    }

    /// The time between two starts.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns as u64)
    }

    /// The first start.
    pub fn start(&self) -> Instant {
        self.start
    }
}

/// A case's schedule across its batches: operation `g` of the case
/// (counting every batch) is intended at `start + g / rate`, the start
/// being when the first batch began, moved later by every pause between
/// batches ([`Timeline::end`] to the next [`Timeline::batch`]). See the
/// module docs for why.
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    rate: f64,
    start: Option<Instant>,
    next: u64,
    /// When the last batch ended, while the runner has the thread.
    paused: Option<Instant>,
}

impl Timeline {
    /// A timeline at `rate` operations per second, not yet started.
    pub fn new(rate: f64) -> Timeline {
        Timeline {
            rate,
            start: None,
            next: 0,
            paused: None,
        }
    }

    /// The schedule of the next batch of `n` operations: its operation `k`
    /// (from 0) is the case's operation `next + k`. The first call starts
    /// the timeline now.
    pub fn batch(&mut self, n: u64) -> Schedule {
        let now = Instant::now();
        let start = self.start.get_or_insert(now);
        if let Some(p) = self.paused.take() {
            *start += now.saturating_duration_since(p);
        }
        let start = *start;
        let whole = Schedule::starting_at(self.rate, start);
        let s = Schedule::starting_at(self.rate, whole.at(self.next));
        self.next += n;
        s
    }

    /// The batch's operations are all done: the schedule pauses until the
    /// next [`Timeline::batch`] (the runner's time, not the system's).
    pub fn end(&mut self) {
        self.paused = Some(Instant::now());
    }

    /// The rate.
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// The latency of an operation intended to start at `intended` and
/// completed at `done`, in nanoseconds (at least 1, as histograms want).
pub fn latency_ns(intended: Instant, done: Instant) -> u64 {
    (done.saturating_duration_since(intended).as_nanos() as u64).max(1)
}

/// How long before a deadline [`pace_until`] stops sleeping and spins:
/// 1 ms. A sleep overshoots by the timer slack (50 µs by default) plus the
/// wake-up, and in a virtual machine whose idle vCPU halts, the wake-up can
/// wait for the host's scheduler tick: on a 2-vCPU KVM guest, I/Os paced
/// with an 80 µs margin at 5 000/s were submitted up to 4.4 ms late (p99
/// 1.1 ms), a lateness that counts in their latency; with this margin,
/// p99 6–150 µs. Spinning costs a CPU while operations are less than this
/// apart; it yields the CPU on every turn, so other runnable threads (more
/// workers than CPUs) still run.
pub const SPIN: Duration = Duration::from_millis(1);

/// Waits until `t`: sleeps while it is more than [`SPIN`] away, then
/// spins, yielding the CPU on every turn, for the last stretch. Returns at once when `t` has
/// passed. A late return is not hidden: the latency counts from `t`.
pub fn pace_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::thread::yield_now();
        }
    }
}

/// The load an open-loop record carried, in operations per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenLoad {
    /// The rate asked for (`rate=N`).
    pub offered: f64,
    /// Operations completed over the samples' wall time (warm-up excluded).
    pub achieved: f64,
    /// The achieved rate fell more than [`SATURATION_TOLERANCE`] short of
    /// the offered one: the system did not keep up, and its latencies
    /// describe a growing queue.
    pub saturated: bool,
    /// The step of a capacity search this record is (1-based): its rate
    /// was chosen by the search, so another run's search may have no step
    /// at it (`compare` does not count such a record as missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
}

impl OpenLoad {
    /// The load of `ops` operations in `secs` seconds at `offered`.
    pub fn new(offered: f64, ops: u64, secs: f64) -> OpenLoad {
        let achieved = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
        OpenLoad {
            offered,
            achieved,
            saturated: achieved < offered * (1.0 - SATURATION_TOLERANCE),
            step: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_of_a_point() {
        let mut p = Point::default();
        assert_eq!(Rate::of(&p), Rate::Closed);
        p.set(RATE, Value::Str("off".into()));
        assert_eq!(Rate::of(&p), Rate::Closed);
        p.set(RATE, Value::Str("auto".into()));
        assert_eq!(Rate::of(&p), Rate::Auto);
        p.set(RATE, Value::Int(2500));
        assert_eq!(Rate::of(&p), Rate::Fixed(2500.0));
    }

    #[test]
    fn schedule_spaces_starts_evenly() {
        let t0 = Instant::now();
        let s = Schedule::starting_at(1000.0, t0);
        assert_eq!(s.at(0), t0);
        assert_eq!(s.at(1000) - t0, Duration::from_secs(1));
        assert_eq!(s.period(), Duration::from_millis(1));
        assert_eq!(s.due(t0), 1);
        assert_eq!(s.due(t0 + Duration::from_micros(2500)), 3);
        assert_eq!(latency_ns(s.at(2), t0), 1);
        assert_eq!(latency_ns(t0, t0 + Duration::from_micros(3)), 3000);
    }

    #[test]
    fn a_timeline_continues_across_batches() {
        let mut t = Timeline::new(1000.0);
        let a = t.batch(10);
        let b = t.batch(5);
        assert_eq!(b.at(0) - a.at(0), Duration::from_millis(10));
        assert_eq!(t.batch(1).at(0) - a.at(0), Duration::from_millis(15));
        // A pause between batches moves the rest of the schedule by it.
        let c = t.batch(1);
        t.end();
        std::thread::sleep(Duration::from_millis(20));
        let d = t.batch(1);
        let gap = d.at(0) - c.at(0);
        assert!(gap >= Duration::from_millis(21), "{gap:?}");
    }

    #[test]
    fn saturation_is_more_than_the_tolerance_short() {
        assert!(!OpenLoad::new(1000.0, 960, 1.0).saturated);
        assert!(OpenLoad::new(1000.0, 940, 1.0).saturated);
        assert!(!OpenLoad::new(1000.0, 1000, 1.0).saturated);
    }
}
