//! `cpu.prime`: sysbench's CPU test, event for event.

use std::time::Instant;

use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::team::{Placement, Team};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Meta, MetricSpec, ParamSpec, Point, TeamCase,
    Value, Work,
};

use benchsuite_core::reference::{REFERENCE_SECS, Reference, number_after};

use crate::throughput::{pin_param, placement_caveats, threads_param};

/// sysbench cpu's event; see the crate docs.
#[derive(Debug, Default)]
pub struct Prime;

/// One event of `sysbench cpu`: for every `c` in `3..max_prime`, trial
/// division by `l = 2, 3, …` while `l <= sqrt(c)` (compared as doubles),
/// stopping at the first divisor; `c` counts as prime when no divisor was
/// found. Returns the count (primes below `max_prime`, except 2).
///
/// This is `cpu_execute_event` of sysbench's `src/tests/cpu/sb_cpu.c`, and
/// it runs the same machine operations as sysbench built by gcc -O2 (as
/// Debian ships it): the `l = 2` step is a parity test (gcc peels it out of
/// the loop), every later step a full 64-bit `div`, and the bound is an
/// `f64` square root compared with `l` converted to `f64`.
pub fn sysbench_event(max_prime: u64) -> u64 {
    let mut n = 0u64;
    let mut c = 3u64;
    while c < max_prime {
        let t = (c as f64).sqrt();
        let mut l = 2u64;
        // l = 2: `c % 2 == 0` is a parity test, as gcc compiles it.
        if (l as f64) <= t && c & 1 != 0 {
            l = 3;
            while (l as f64) <= t {
                if div_rem(c, l) == 0 {
                    break;
                }
                l += 1;
            }
        }
        if (l as f64) > t {
            n += 1;
        }
        c += 1;
    }
    n
}

/// `c % l` with a full 64-bit division, as sysbench's C compiles to. LLVM
/// would otherwise test whether both operands fit in 32 bits and use the
/// cheaper 32-bit divide, a shortcut gcc does not take, which would make
/// this loop faster than the one it is meant to match.
#[inline(always)]
fn div_rem(c: u64, l: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let rem: u64;
        // SAFETY: `div` of rdx:rax by a register; rdx is 0 and l >= 2, so
        // no divide error is possible. Registers only.
        unsafe {
            core::arch::asm!(
                "div {l}",
                l = in(reg) l,
                inout("rax") c => _,
                inout("rdx") 0u64 => rem,
                options(pure, nomem, nostack),
            );
        }
        rem
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        c % l
    }
}

/// Primes below `max_prime` other than 2, by a sieve: the reference the
/// event's result is checked against.
fn reference_count(max_prime: u64) -> u64 {
    let n = max_prime as usize;
    if n <= 3 {
        return 0;
    }
    let mut composite = vec![false; n];
    let mut count = 0;
    for i in 2..n {
        if !composite[i] {
            if i >= 3 {
                count += 1;
            }
            let mut j = i * i;
            while j < n {
                composite[j] = true;
                j += i;
            }
        }
    }
    count
}

impl Benchmark for Prime {
    fn meta(&self) -> Meta {
        Meta {
            id: "cpu.prime".into(),
            description: "sysbench cpu: events/s and per-event latency of trial-division prime counting up to max_prime".into(),
            params: vec![
                ParamSpec::count(
                    "max_prime",
                    "upper limit of the prime search, as sysbench's --cpu-max-prime (sysbench defaults to 10000; 20000 is the common setting)",
                    3,
                    100_000_000,
                    20_000,
                )
                .with_smoke(Value::Int(2000)),
                threads_param(
                    1,
                    "threads, each running events back to back (sysbench --threads; default 1, as sysbench)",
                ),
                pin_param(false),
            ],
            metrics: vec![
                MetricSpec::ops_per_sec("events", "event/s"),
                MetricSpec::latency("latency").derived(),
            ],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let max_prime = point.u64("max_prime")?;
        let threads = point.u64("threads")? as usize;
        let pin = point.bool("pin")?;
        let expected = reference_count(max_prime);
        let got = sysbench_event(max_prime);
        if got != expected {
            return Err(BenchError::Verify(format!(
                "the event found {got} primes below {max_prime}, the sieve {expected}"
            )));
        }
        let mut about = About::default();
        about.note(format!(
            "one event = one full trial-division pass over 3..{max_prime} (finds {expected} primes), as sysbench cpu; compare with `sysbench cpu --cpu-max-prime={max_prime} --threads={threads} run`"
        ));
        placement_caveats(threads, pin, &mut about);
        let placement = if pin {
            Placement::Pinned
        } else {
            Placement::Unpinned
        };
        let team = Team::new(
            threads,
            placement,
            |_| Ok(()),
            move |_: &mut (), iters| {
                let mut hist = new_latency_histogram();
                for _ in 0..iters {
                    let t0 = Instant::now();
                    let n = std::hint::black_box(sysbench_event(std::hint::black_box(max_prime)));
                    let ns = t0.elapsed().as_nanos() as u64;
                    if n != expected {
                        return Err(BenchError::Verify(format!(
                            "an event found {n} primes, expected {expected}"
                        )));
                    }
                    hist.record(ns.max(1))
                        .map_err(|e| BenchError::caused("latency histogram", e))?;
                }
                Ok(Work {
                    ops: iters,
                    latency: Some(hist),
                    ..Work::default()
                })
            },
        )?;
        Ok(TeamCase::boxed(team, about))
    }

    /// `sysbench cpu --cpu-max-prime=N --threads=T --time=SECS run`.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<Reference> {
        sysbench(point)
    }
}

/// The sysbench command for a point; events per second is its headline.
fn sysbench(point: &Point) -> Option<Reference> {
    let max_prime = point.get("max_prime")?.as_u64()?;
    let threads = point.get("threads")?.as_u64()?;
    let mut r = Reference::new(
        "sysbench",
        "sysbench",
        vec![
            "sysbench".into(),
            "cpu".into(),
            format!("--cpu-max-prime={max_prime}"),
            format!("--threads={threads}"),
            format!("--time={REFERENCE_SECS}"),
            "run".into(),
        ],
        "events",
        |out| number_after(out, "events per second"),
    );
    if point.get("pin").and_then(Value::as_bool) == Some(true) {
        r.note = Some("sysbench does not pin its threads; ours did (pin=on)".into());
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_counts_primes_like_a_sieve() {
        // π(20000) = 2262; the event starts at 3, so 2261.
        assert_eq!(sysbench_event(20_000), 2261);
        for m in [3, 4, 5, 10, 100, 1000, 7919, 7920] {
            assert_eq!(sysbench_event(m), reference_count(m), "max_prime {m}");
        }
    }

    #[test]
    fn sysbench_command_lines() {
        let mut p = Point::default();
        for s in Prime.meta().params {
            p.set(&s.name, s.default.clone());
        }
        let r = sysbench(&p).unwrap();
        assert_eq!(
            r.command(),
            "sysbench cpu --cpu-max-prime=20000 --threads=1 --time=4 run"
        );
        assert_eq!((r.metric, r.note.is_none()), ("events", true));
        p.set("threads", Value::Int(2));
        p.set("max_prime", Value::Int(10_000));
        p.set("pin", Value::Bool(true));
        let r = sysbench(&p).unwrap();
        assert_eq!(
            r.command(),
            "sysbench cpu --cpu-max-prime=10000 --threads=2 --time=4 run"
        );
        assert!(r.note.is_some());
        let out = "CPU speed:\n    events per second:  1186.43\n\nGeneral statistics:\n";
        assert_eq!((r.parse)(out), Ok(1186.43));
    }
}
