//! The capacity search against stand-ins whose answer is known: a single
//! FIFO server simulated in virtual time (each batch reports its own
//! elapsed time, so the tests are exact and never depend on this
//! machine's speed).
//!
//! With requests arriving on a fixed schedule at rate λ and exponential
//! service times of rate μ (a D/M/1 queue), the time a request spends in
//! the system is exponential with rate μ(1 − σ), where σ is the root in
//! (0, 1) of σ = exp(−μ(1 − σ)/λ) (Kleinrock, Queueing Systems I, §6.4).
//! Its p99 is ln(100) / (μ(1 − σ)), so the highest rate whose p99 stays
//! under T has 1 − σ* = ln(100)/(μT) and λ* = −μ(1 − σ*)/ln σ*.

use std::time::Duration;

use benchsuite_core::capacity::{SearchOutcome, Slo};
use benchsuite_core::openloop::Rate;
use benchsuite_core::runner::{Silent, new_latency_histogram, run};
use benchsuite_core::{
    BenchError, Benchmark, Case, Caveat, Context, Meta, MetricSpec, ParamSpec, Point, Record,
    Registry, Report, RunConfig, Status, Value, Work,
};

/// Service times: exponential with this rate, or constant at its inverse.
#[derive(Clone, Copy)]
enum Service {
    Exponential(f64),
    Constant(f64),
}

/// A one-server queue: `queue.sim`.
struct Queue {
    service: Service,
    /// A one-off stall of the server, at this virtual time, for this long.
    stall: Option<(f64, f64)>,
}

impl Benchmark for Queue {
    fn meta(&self) -> Meta {
        Meta {
            id: "queue.sim".into(),
            description: "a simulated single-server queue".into(),
            params: vec![ParamSpec::rate("rate", "offered load")],
            metrics: vec![
                MetricSpec::ops_per_sec("throughput", "op/s"),
                MetricSpec::latency("latency").secondary(),
            ],
        }
    }

    fn prepare(&self, _: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        Ok(Box::new(QueueCase {
            service: self.service,
            rate: Rate::of(point),
            rng: 0x9e37_79b9_7f4a_7c15,
            clock: 0.0,
            issued: 0,
            stall: self.stall,
        }))
    }
}

struct QueueCase {
    service: Service,
    rate: Rate,
    rng: u64,
    /// Virtual time since the case started, for the stall.
    clock: f64,
    /// Operations of earlier batches: the open loop's schedule runs on
    /// across batches (operation g of the case at g / rate).
    issued: u64,
    stall: Option<(f64, f64)>,
}

impl QueueCase {
    fn service_time(&mut self) -> f64 {
        match self.service {
            Service::Constant(mu) => 1.0 / mu,
            Service::Exponential(mu) => {
                // xorshift64*, then the inverse of the exponential CDF.
                self.rng ^= self.rng >> 12;
                self.rng ^= self.rng << 25;
                self.rng ^= self.rng >> 27;
                let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
                let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                -u.ln() / mu
            }
        }
    }

    /// Service of an operation starting at virtual `start` (batch time),
    /// the stall included when the server reaches it.
    fn serve(&mut self, batch_start: f64, start: f64) -> f64 {
        let mut s = self.service_time();
        if let Some((at, len)) = self.stall
            && batch_start + start >= at
        {
            s += len;
            self.stall = None;
        }
        s
    }
}

impl Case for QueueCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut h = new_latency_histogram();
        let base = self.clock;
        let mut free = 0.0f64; // when the server is next free, batch time
        for k in 0..iters {
            // Closed loop: the next request arrives when the last is done.
            // (Batch time: an operation the schedule wanted before this
            // batch began is late by that much.)
            let arrive = match self.rate {
                Rate::Fixed(r) => (self.issued + k) as f64 / r - base,
                _ => free,
            };
            let start = arrive.max(free);
            let done = start + self.serve(base, start);
            free = done;
            h.record(((done - arrive) * 1e9).max(1.0) as u64).unwrap();
        }
        self.clock += free;
        self.issued += iters;
        Ok(Work {
            ops: iters,
            latency: Some(h),
            elapsed: Some(Duration::from_secs_f64(free)),
            ..Work::default()
        })
    }
}

fn registry(q: Queue) -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(q)).unwrap();
    r
}

fn config(sweep: &[(&str, &str)], slo: Option<&str>) -> RunConfig {
    RunConfig::default()
        .to_builder()
        .selectors(["queue.sim"])
        .sweep(sweep.iter().copied())
        .slo(slo.map(|s| Slo::parse(s).unwrap()))
        .build()
        .unwrap()
}

fn summary(report: &Report) -> &Record {
    report
        .records
        .iter()
        .find(|r| r.capacity.is_some())
        .expect("a summary record")
}

/// λ* for a D/M/1 queue with service rate `mu` and p99 bound `t`.
fn dm1_capacity(mu: f64, t: f64) -> f64 {
    let one_minus_sigma = 100f64.ln() / (mu * t);
    let sigma = 1.0 - one_minus_sigma;
    -mu * one_minus_sigma / sigma.ln()
}

#[test]
fn the_search_finds_a_known_capacity_within_five_percent() {
    let mu = 100_000.0;
    for (bound, t) in [("100us", 100e-6), ("200us", 200e-6)] {
        let expect = dm1_capacity(mu, t);
        let report = run(
            &registry(Queue {
                service: Service::Exponential(mu),
                stall: None,
            }),
            &config(&[], Some(&format!("p99<={bound}"))),
            &mut Silent,
        )
        .unwrap();
        let s = summary(&report);
        let c = s.capacity.as_ref().unwrap();
        assert_eq!(c.verdict, SearchOutcome::Met, "{}", c.sentence());
        let got = c.rate.unwrap();
        let err = (got - expect).abs() / expect;
        assert!(
            err <= 0.05,
            "p99<={bound}: found {got:.0}/s, D/M/1 says {expect:.0}/s ({:.1}% off): {}",
            err * 100.0,
            c.sentence()
        );
        eprintln!(
            "p99<={bound}: found {got:.0}/s, D/M/1 gives {expect:.0}/s ({:+.1}%), {} steps",
            (got / expect - 1.0) * 100.0,
            c.steps.len()
        );
        let [lo, hi] = c.interval.unwrap();
        assert!(lo.unwrap() <= hi.unwrap() && hi.unwrap() / lo.unwrap() <= 1.05 + 1e-9);
        // Every step is its own record with its load, and the summary's
        // steps match them one to one.
        let steps: Vec<&Record> = report.records.iter().filter(|r| r.load.is_some()).collect();
        assert_eq!(steps.len(), c.steps.len());
        assert!(c.steps.len() <= benchsuite_core::capacity::MAX_STEPS);
        for (r, st) in steps.iter().zip(&c.steps) {
            assert_eq!(r.params.get("rate"), Some(&Value::Int(st.offered as u64)));
            assert_eq!(r.load.unwrap().saturated, st.saturated);
        }
        assert_eq!(s.metric("capacity").unwrap().summary.median, got);
        assert_eq!(
            report.config.slo.as_deref(),
            Some(&*format!("p99<={bound}"))
        );
    }
}

#[test]
fn offered_above_what_is_carried_is_marked_saturated() {
    // Service at 10k/s, offered 20k/s: half is carried.
    let report = run(
        &registry(Queue {
            service: Service::Constant(10_000.0),
            stall: None,
        }),
        &config(&[("rate", "5k,20k")], None),
        &mut Silent,
    )
    .unwrap();
    let light = &report.records[0];
    let heavy = &report.records[1];
    let l = light.load.unwrap();
    assert!(
        !l.saturated && (l.achieved / l.offered - 1.0).abs() < 0.01,
        "{l:?}"
    );
    assert!(
        !light
            .warnings
            .iter()
            .any(|w| matches!(w, Caveat::Saturated { .. }))
    );
    let h = heavy.load.unwrap();
    assert!(h.saturated, "{h:?}");
    assert!((h.achieved - 10_000.0).abs() / 10_000.0 < 0.01, "{h:?}");
    assert!(
        heavy
            .warnings
            .iter()
            .any(|w| matches!(w, Caveat::Saturated { .. }))
    );
    // A closed-loop record has no load.
    let closed = run(
        &registry(Queue {
            service: Service::Constant(10_000.0),
            stall: None,
        }),
        &config(&[], None),
        &mut Silent,
    )
    .unwrap();
    assert_eq!(closed.records[0].load, None);
}

#[test]
fn a_stall_hides_in_a_closed_loop_and_shows_in_an_open_one() {
    // 20k/s service, one 100 ms stall half a second in (virtual time).
    let stall = Some((0.5, 0.1));
    let q = || Queue {
        service: Service::Constant(20_000.0),
        stall,
    };
    let cfg = config(&[], None)
        .to_builder()
        .runs(10)
        .min_sample_time(Duration::from_millis(100))
        .warmup(Duration::ZERO)
        .build()
        .unwrap();
    let p99 = |r: &Report| {
        r.records[0]
            .metric("latency")
            .unwrap()
            .latency
            .as_ref()
            .unwrap()
            .p99
    };
    let closed = run(&registry(q()), &cfg, &mut Silent).unwrap();
    let cfg = cfg.to_builder().param("rate", "2000").build().unwrap();
    let open = run(&registry(q()), &cfg, &mut Silent).unwrap();
    // Closed loop: the stall is one slow sample among ~20 000.
    assert!(p99(&closed) < 1e-3, "closed p99 {}", p99(&closed));
    // Open loop at 2000/s: the ~200 requests due during the stall wait
    // behind it (100 ms down to 0), about 10% of the ~2 000 sampled, so
    // the p99 is tens of milliseconds.
    assert!(
        p99(&open) > 50e-3,
        "open p99 {}: {:?} {:?}",
        p99(&open),
        open.records[0].iters_per_sample,
        open.records[0].metric("latency").unwrap().latency
    );
}

#[test]
fn a_target_never_met_or_never_broken_is_said_plainly() {
    // Exponential service at 100k/s: even at light load the p99 is
    // ln(100)/μ = 46 µs, over a 10 µs bound.
    let report = run(
        &registry(Queue {
            service: Service::Exponential(100_000.0),
            stall: None,
        }),
        &config(&[], Some("p99<=10us")),
        &mut Silent,
    )
    .unwrap();
    let c = summary(&report).capacity.clone().unwrap();
    assert_eq!(c.verdict, SearchOutcome::NeverMet, "{}", c.sentence());
    assert_eq!(c.rate, None);
    assert!(c.sentence().contains("never met"), "{}", c.sentence());
    assert!(summary(&report).metric("capacity").is_none());

    // Constant 50 µs service: the latency is 50 µs at every rate the server
    // carries, under a 1 ms bound, until saturation at 20k/s.
    let report = run(
        &registry(Queue {
            service: Service::Constant(20_000.0),
            stall: None,
        }),
        &config(&[], Some("p99<=1ms")),
        &mut Silent,
    )
    .unwrap();
    let c = summary(&report).capacity.clone().unwrap();
    assert_eq!(c.verdict, SearchOutcome::NeverBroken, "{}", c.sentence());
    let r = c.rate.unwrap();
    assert!(
        (20_000.0 / 1.06..=20_000.0).contains(&r),
        "{}",
        c.sentence()
    );
    assert!(c.sentence().contains("never broken"), "{}", c.sentence());
}

#[test]
fn rate_auto_climbs_to_saturation_and_marks_the_knee() {
    let report = run(
        &registry(Queue {
            service: Service::Constant(20_000.0),
            stall: None,
        }),
        &config(&[("rate", "auto")], None),
        &mut Silent,
    )
    .unwrap();
    let s = summary(&report);
    let c = s.capacity.as_ref().unwrap();
    assert_eq!(c.verdict, SearchOutcome::Ladder);
    assert!(c.steps.last().unwrap().saturated);
    assert!(c.steps[..c.steps.len() - 1].iter().all(|s| !s.saturated));
    // 1k, 1.5k, 2.25k, ... ×1.5: the last carried rung is within 1.5× of 20k.
    let knee = c.knee.unwrap();
    assert!(
        (20_000.0 / 1.5..=20_000.0 * 1.001).contains(&knee),
        "{knee}"
    );
    assert_eq!(s.status, Status::Ok);
}

#[test]
fn bad_targets_and_combinations_are_refused_before_anything_runs() {
    for bad in [
        "p99",
        "99<=1ms",
        "p100<=1ms",
        "p99<=fast",
        "p99<=0ms",
        "max<=1ms",
    ] {
        assert!(Slo::parse(bad).is_err(), "{bad} parsed");
    }
    let ok = Slo::parse("latency.p99.9<=250us").unwrap();
    assert_eq!(ok.metric.as_deref(), Some("latency"));
    assert!((ok.quantile - 0.999).abs() < 1e-12);
    assert_eq!(ok.samples_needed(), 100_000);
    let q = || {
        registry(Queue {
            service: Service::Constant(1e4),
            stall: None,
        })
    };
    let err = |cfg: RunConfig| run(&q(), &cfg, &mut Silent).unwrap_err().to_string();
    let e = err(config(&[], Some("rtt.p99<=1ms")));
    assert!(
        e.contains("`RunConfig::slo`") && e.contains("rtt") && e.contains("latency"),
        "{e}"
    );
    let e = err(config(&[("rate", "5000")], Some("p99<=1ms")));
    assert!(
        e.contains("`RunConfig::slo`") && e.contains("rate=5000"),
        "{e}"
    );
    let e = err(config(&[("rate", "0")], None));
    assert!(e.contains("rate") && e.contains("at least 1"), "{e}");
    // A benchmark without a rate parameter has no capacity to search.
    struct Plain;
    impl Benchmark for Plain {
        fn meta(&self) -> Meta {
            Meta {
                id: "plain.op".into(),
                description: "".into(),
                params: vec![],
                metrics: vec![MetricSpec::time_per_op("t")],
            }
        }
        fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
            unreachable!()
        }
    }
    let mut r = Registry::new();
    r.register(Box::new(Plain)).unwrap();
    let c = config(&[], Some("p99<=1ms"))
        .to_builder()
        .selectors(["plain.op"])
        .build()
        .unwrap();
    let e = run(&r, &c, &mut Silent).unwrap_err().to_string();
    assert!(
        e.contains("`RunConfig::slo`") && e.contains("plain.op"),
        "{e}"
    );
}

#[test]
fn rate_ranges_grow_by_fractions() {
    let spec = ParamSpec::rate("rate", "");
    let v = benchsuite_core::sweep::parse_values(&spec, "1k..5k:x1.5").unwrap();
    let n: Vec<u64> = v.iter().filter_map(Value::as_u64).collect();
    assert_eq!(n, [1000, 1500, 2250, 3375]);
    let v = benchsuite_core::sweep::parse_values(&spec, "off,auto,2.5k").unwrap();
    assert_eq!(
        v,
        [
            Value::Str("off".into()),
            Value::Str("auto".into()),
            Value::Int(2500)
        ]
    );
    assert!(benchsuite_core::sweep::parse_values(&spec, "1k..auto").is_err());
    assert!(benchsuite_core::sweep::parse_values(&spec, "1k..5k:x1").is_err());
}

#[test]
fn a_search_of_a_benchmark_that_cannot_run_here_is_skipped_saying_why() {
    struct Absent;
    impl Benchmark for Absent {
        fn meta(&self) -> Meta {
            Meta {
                id: "queue.sim".into(),
                description: "".into(),
                params: vec![ParamSpec::rate("rate", "")],
                metrics: vec![MetricSpec::latency("latency")],
            }
        }
        fn prepare(&self, _: &Context, _: &Point) -> Result<Box<dyn Case>, BenchError> {
            Err(BenchError::Skip("no such device here".into()))
        }
    }
    let mut r = Registry::new();
    r.register(Box::new(Absent)).unwrap();
    let report = run(&r, &config(&[], Some("p99<=1ms")), &mut Silent).unwrap();
    // One step (skipped), then the summary, skipped for the same reason.
    assert_eq!(report.records.len(), 2);
    let s = summary(&report);
    assert_eq!(s.status, Status::Skipped);
    assert_eq!(s.reason.as_deref(), Some("no such device here"));
}

/// `rounds` > 1: the search runs once per round; its answer's samples are
/// the searches' answers, the summary's headline, and the step records
/// are the first search's only.
#[test]
fn rounds_repeat_the_search_and_pool_the_answers() {
    let q = registry(Queue {
        service: Service::Constant(1e4),
        stall: None,
    });
    let c = config(&[("rate", "auto")], Some("p99<=1ms"))
        .to_builder()
        .rounds(3)
        .build()
        .unwrap();
    let r = run(&q, &c, &mut Silent).unwrap();
    let summary = r
        .records
        .iter()
        .find(|x| x.capacity.is_some())
        .expect("a summary");
    let cap = summary.capacity.as_ref().unwrap();
    assert_eq!(cap.searches.len(), 3, "{cap:?}");
    let answers: Vec<f64> = cap.searches.iter().flatten().copied().collect();
    assert_eq!(answers.len(), 3, "{cap:?}");
    let m = &summary.metrics[0];
    assert_eq!(m.name, "capacity");
    assert_eq!(m.samples, answers);
    assert_eq!(m.rounds.as_deref(), Some(&[1, 1, 1][..]));
    assert_eq!(m.role, Some(benchsuite_core::MetricRole::Headline));
    assert_eq!(
        cap.rate,
        Some(benchsuite_core::stats::median(&answers)),
        "the answer is the searches' median"
    );
    // The sentence's tail is the first search's own answer, not the median.
    let mut c = cap.clone();
    c.searches = vec![Some(30_000.0), Some(10_000.0), Some(20_000.0)];
    c.rate = Some(20_000.0);
    c.verdict = benchsuite_core::capacity::SearchOutcome::Met;
    let text = c.sentence();
    assert!(text.contains("median 20.000 k/s"), "{text}");
    assert!(
        text.contains("The first: capacity for p99<=1ms: 30.000 k/s"),
        "{text}"
    );
    // Most searches never met: so is the median, whatever the others found.
    let mut c = cap.clone();
    c.searches = vec![None, None, Some(10_000.0)];
    c.rate = None;
    assert!(
        c.sentence().contains("median never met"),
        "{}",
        c.sentence()
    );
    assert!(
        summary.notes.iter().any(|n| n.starts_with("3 searches: ")),
        "{:?}",
        summary.notes
    );
    // The steps are the first search's: as many records as its steps.
    let steps = r.records.iter().filter(|x| x.load.is_some()).count();
    assert_eq!(steps, cap.steps.len());
    assert!(
        r.records
            .iter()
            .filter(|x| x.load.is_some())
            .all(|x| !x.notes.iter().any(|n| n.contains("pooled"))),
        "a step is not pooled"
    );
}
