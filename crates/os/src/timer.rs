//! `os.timer`: the cost of reading a clock, and the clock's resolution.

use std::time::Instant;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Direction, Finished, Meta, MetricSource,
    MetricSpec, ParamSpec, Point, Work, choice_enum,
};

choice_enum! {
    /// Values of the `clock` parameter.
    enum ClockChoice {
        /// `std::time::Instant::now`.
        Instant = "instant",
        /// `clock_gettime(CLOCK_MONOTONIC)`.
        Monotonic = "clock_gettime_monotonic",
        /// `clock_gettime(CLOCK_REALTIME)`.
        Realtime = "clock_gettime_realtime",
        /// `rdtsc`.
        Tsc = "tsc",
    }
}

/// How long `prepare` compares the TSC with `Instant` to find its frequency.
#[cfg(target_arch = "x86_64")]
const TSC_CALIBRATION: std::time::Duration = std::time::Duration::from_millis(20);

/// Cost per clock read; see the crate docs.
#[derive(Debug, Default)]
pub struct Timer;

impl Benchmark for Timer {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.timer".into(),
            description: "cost of one clock read, and the smallest step the clock was seen to take"
                .into(),
            params: vec![ParamSpec::choice_of(
                "clock",
                "clock to read: std Instant, clock_gettime(CLOCK_MONOTONIC / CLOCK_REALTIME), or the x86 time-stamp counter (rdtsc)",
                ClockChoice::Instant,
            )],
            metrics: vec![
                MetricSpec::time_per_op("time_per_op"),
                MetricSpec {
                    name: "resolution".into(),
                    unit: "s".into(),
                    direction: Direction::Lower,
                    source: MetricSource::ReportedMin("resolution".into()),
                    role: benchsuite_core::MetricRole::Secondary,
                },
            ],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let mut notes = Vec::new();
        let clock = match point.choice::<ClockChoice>("clock")? {
            ClockChoice::Instant => {
                #[cfg(target_os = "linux")]
                note_getres(crate::sys::PosixClock::Monotonic, &mut notes);
                Clock::Instant(Instant::now())
            }
            ClockChoice::Monotonic => posix_clock(Posix::Monotonic, &mut notes)?,
            ClockChoice::Realtime => posix_clock(Posix::Realtime, &mut notes)?,
            ClockChoice::Tsc => tsc_clock(&mut notes)?,
        };
        if let Ok(src) = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        ) {
            notes.push(format!(
                "kernel clocksource: {} (it decides what the OS clocks cost)",
                src.trim()
            ));
        }
        Ok(Box::new(TimerCase {
            clock,
            about: About {
                notes,
                ..About::default()
            },
        }))
    }
}

/// Which POSIX clock (named here so the parameter parsing does not depend on
/// the platform module).
#[derive(Debug, Clone, Copy)]
enum Posix {
    Monotonic,
    Realtime,
}

#[derive(Debug)]
enum Clock {
    /// `Instant::now()`, converted to nanoseconds since this base.
    Instant(Instant),
    #[cfg(target_os = "linux")]
    Posix(crate::sys::PosixClock),
    /// `rdtsc`, with the frequency calibrated in `prepare` (ticks/s).
    #[cfg(target_arch = "x86_64")]
    Tsc { hz: f64 },
}

#[cfg(target_os = "linux")]
fn posix_clock(which: Posix, notes: &mut Vec<String>) -> Result<Clock, BenchError> {
    use crate::sys::PosixClock;
    let clock = match which {
        Posix::Monotonic => PosixClock::Monotonic,
        Posix::Realtime => PosixClock::Realtime,
    };
    crate::sys::clock_check(clock)?;
    note_getres(clock, notes);
    Ok(Clock::Posix(clock))
}

#[cfg(not(target_os = "linux"))]
fn posix_clock(which: Posix, _notes: &mut Vec<String>) -> Result<Clock, BenchError> {
    Err(BenchError::Skip(format!(
        "clock_gettime({which:?}) is measured on Linux only"
    )))
}

#[cfg(target_os = "linux")]
fn note_getres(clock: crate::sys::PosixClock, notes: &mut Vec<String>) {
    if let Ok(ns) = crate::sys::clock_res_ns(clock) {
        notes.push(format!(
            "clock_getres({}) claims {ns} ns; the resolution metric is the smallest step actually observed",
            clock.name()
        ));
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc reads the time-stamp counter and has no memory effects;
    // every x86_64 CPU has it, and `tsc_clock` checked (PR_GET_TSC) that it
    // is not disabled for this process before any hot loop calls this.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(target_arch = "x86_64")]
fn tsc_clock(notes: &mut Vec<String>) -> Result<Clock, BenchError> {
    #[cfg(target_os = "linux")]
    if !crate::sys::tsc_enabled() {
        return Err(BenchError::Skip(
            "rdtsc is disabled for this process (prctl PR_SET_TSC)".into(),
        ));
    }
    let hz = calibrate_tsc();
    if !(hz.is_finite() && hz > 1e6) {
        return Err(BenchError::Other(format!(
            "TSC calibration gave {hz:.0} Hz; the counter does not advance steadily"
        )));
    }
    notes.push(format!(
        "tsc: resolution converted from ticks at {:.1} MHz, a frequency calibrated against Instant over {} ms",
        hz / 1e6,
        TSC_CALIBRATION.as_millis()
    ));
    if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") {
        let flags = info
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        if !(has("constant_tsc") && has("nonstop_tsc")) {
            notes.push(
                "tsc: the CPU does not report constant_tsc and nonstop_tsc; the TSC rate may follow the CPU frequency".into(),
            );
        }
    }
    Ok(Clock::Tsc { hz })
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_clock(_notes: &mut Vec<String>) -> Result<Clock, BenchError> {
    Err(BenchError::Skip(
        "clock=tsc reads the x86_64 time-stamp counter; this CPU is not x86_64".into(),
    ))
}

/// TSC ticks per second, measured against `Instant` over [`TSC_CALIBRATION`].
#[cfg(target_arch = "x86_64")]
fn calibrate_tsc() -> f64 {
    let t0 = Instant::now();
    let c0 = rdtsc();
    while t0.elapsed() < TSC_CALIBRATION {
        std::hint::spin_loop();
    }
    let c1 = rdtsc();
    let secs = t0.elapsed().as_secs_f64();
    c1.wrapping_sub(c0) as f64 / secs
}

/// Reads a clock `iters` times (plus one read to start from) and returns the
/// smallest nonzero step between consecutive reads, in the clock's units.
///
/// The bookkeeping per read is a subtraction and a branch-free minimum
/// (about one nanosecond), included in the measured cost.
#[inline(always)]
fn read_loop(iters: u64, mut read: impl FnMut() -> u64) -> Option<u64> {
    let mut prev = read();
    // Tracks (step - 1): a zero step wraps to u64::MAX and never wins, and a
    // backwards step (CLOCK_REALTIME being set) is huge and never wins either.
    let mut min_minus_one = u64::MAX;
    for _ in 0..iters {
        let t = read();
        min_minus_one = min_minus_one.min(t.wrapping_sub(prev).wrapping_sub(1));
        prev = t;
    }
    std::hint::black_box(prev);
    (min_minus_one != u64::MAX).then(|| min_minus_one + 1)
}

struct TimerCase {
    clock: Clock,
    about: About,
}

impl TimerCase {
    /// Smallest observed step, in seconds.
    fn batch(&self, iters: u64) -> Option<f64> {
        match &self.clock {
            Clock::Instant(base) => {
                let base = *base;
                read_loop(iters, || {
                    Instant::now().saturating_duration_since(base).as_nanos() as u64
                })
                .map(|ns| ns as f64 * 1e-9)
            }
            #[cfg(target_os = "linux")]
            Clock::Posix(c) => {
                let c = *c;
                read_loop(iters, || crate::sys::clock_ns(c)).map(|ns| ns as f64 * 1e-9)
            }
            #[cfg(target_arch = "x86_64")]
            Clock::Tsc { hz } => read_loop(iters, rdtsc).map(|ticks| ticks as f64 / hz),
        }
    }
}

impl Case for TimerCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let resolution = self.batch(iters);
        let mut work = Work::ops(iters);
        match resolution {
            Some(r) => {
                work.values.insert("resolution".into(), r);
            }
            // The runner's first warm-up batches are tiny; only a sampled
            // batch (at least --min-sample-time long) must see a step.
            None if iters < 1000 => {}
            None => {
                return Err(BenchError::Other(format!(
                    "the clock did not advance during {iters} consecutive reads; its resolution is coarser than one batch"
                )));
            }
        }
        Ok(work)
    }

    fn finish(self: Box<Self>) -> Finished {
        self.about.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_loop_finds_the_smallest_nonzero_step() {
        let seq = [10u64, 10, 13, 13, 20, 5, 7, 7];
        let mut it = seq.iter().copied();
        // Steps: 0, 3, 0, 7, backwards, 2, 0 -> 2.
        assert_eq!(read_loop(7, || it.next().unwrap()), Some(2));
        let mut flat = std::iter::repeat(42u64);
        assert_eq!(read_loop(100, || flat.next().unwrap()), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tsc_calibration_is_plausible() {
        let hz = calibrate_tsc();
        // Any x86_64 TSC of this century ticks between 100 MHz and 10 GHz.
        assert!((1e8..1e10).contains(&hz), "{hz}");
    }

    #[test]
    fn every_clock_reports_a_resolution() {
        for clock in <ClockChoice as benchsuite_core::Choice>::NAMES {
            let mut p = Point::default();
            p.set("clock", benchsuite_core::Value::Str(clock.to_string()));
            let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::detect()));
            let mut case = match Timer.prepare(&ctx, &p) {
                Ok(c) => c,
                Err(BenchError::Skip(_)) => continue,
                Err(e) => panic!("{clock}: {}", benchsuite_core::error_chain(&e)),
            };
            let w = case.run(100_000).unwrap();
            let r = w.values["resolution"];
            assert!(r > 0.0 && r < 1e-3, "{clock}: resolution {r}");
            let finished = case.finish();
            assert!(finished.error.is_none(), "{clock}: {:?}", finished.error);
        }
    }
}
