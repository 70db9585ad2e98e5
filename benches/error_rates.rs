//! Measured error rates of `compare`'s verdict rule: a deterministic,
//! seeded simulation that feeds the real [`compare`] synthetic reports
//! drawn from named noise models, and counts how often it calls a
//! regression.
//!
//! Each trial draws a baseline and a new report of one `time_per_op`
//! metric (lower is better) with `runs` samples per round and `rounds`
//! rounds; the new report's true value is the baseline's times
//! `1 + change`. With the default 5% threshold:
//!
//! - at change 0 every "regressed" is a false alarm;
//! - at +4% (inside the threshold) "regressed" is a wrong call too;
//! - at +5% (exactly the threshold) the rule promises "regressed" at most
//!   `alpha` (5%) of the time;
//! - at +10% and +20% "regressed" is a detection.
//!
//! Noise models: iid normal with CV 1/3/5/10%; a heavy right tail (CV 3%,
//! and one sample in 20 on average ×1.5: an interrupt, a page-cache
//! miss); and per-round drift (each round of each report scaled by
//! `1 + N(0, 3%)`, the machine's speed wandering between rounds; with one
//! round, that is drift between the two reports, which no statistic inside
//! one report can see — the reason for `--rounds`).

use benchsuite_core::host::Host;
use benchsuite_core::param::Point;
use benchsuite_core::results::{Record, Report, RunConfigRecord, Status};
use benchsuite_core::{Direction, Metric, Summary};
use benchsuite_report::compare::{BetweenRun, CompareOptions, Verdict, compare};

/// A noise model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// Name in the table.
    pub name: &'static str,
    /// Coefficient of variation of one sample.
    pub cv: f64,
    /// Standard deviation of each round's scale factor (0: none).
    pub drift: f64,
    /// Probability of a sample being ×1.5 (0: none).
    pub tail: f64,
}

/// The models of the table.
pub const MODELS: [Model; 8] = [
    Model {
        name: "iid CV 1%",
        cv: 0.01,
        drift: 0.0,
        tail: 0.0,
    },
    Model {
        name: "iid CV 3%",
        cv: 0.03,
        drift: 0.0,
        tail: 0.0,
    },
    Model {
        name: "iid CV 5%",
        cv: 0.05,
        drift: 0.0,
        tail: 0.0,
    },
    Model {
        name: "iid CV 10%",
        cv: 0.10,
        drift: 0.0,
        tail: 0.0,
    },
    Model {
        name: "tail 1/20 x1.5, CV 3%",
        cv: 0.03,
        drift: 0.0,
        tail: 0.05,
    },
    Model {
        name: "drift 3%, CV 1%",
        cv: 0.01,
        drift: 0.03,
        tail: 0.0,
    },
    Model {
        name: "drift 3%, CV 3%",
        cv: 0.03,
        drift: 0.03,
        tail: 0.0,
    },
    Model {
        name: "drift 3%, CV 5%",
        cv: 0.05,
        drift: 0.03,
        tail: 0.0,
    },
];

/// The true changes of the table's columns.
pub const CHANGES: [f64; 5] = [0.0, 0.04, 0.05, 0.10, 0.20];

/// SplitMix64: a small, fast, seeded generator; enough for a simulation
/// whose numbers must be the same on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// One synthetic report: `rounds` × `runs` samples of a 100 ns operation
/// scaled by `1 + change`.
pub fn draw(rng: &mut Rng, model: &Model, runs: usize, rounds: usize, change: f64) -> Report {
    let mut samples = Vec::with_capacity(runs * rounds);
    for _ in 0..rounds {
        let round = 1.0 + model.drift * rng.normal();
        for _ in 0..runs {
            let mut v = 100e-9 * (1.0 + change) * round * (1.0 + model.cv * rng.normal());
            if model.tail > 0.0 && rng.uniform() < model.tail {
                v *= 1.5;
            }
            samples.push(v.max(1e-12));
        }
    }
    let metric = Metric {
        name: "time_per_op".into(),
        unit: "s".into(),
        direction: Direction::Lower,
        summary: Summary::new(&samples).expect("finite samples"),
        rounds: (rounds > 1).then(|| vec![runs; rounds]),
        samples,
        timestamps: None,
        tails: None,
        role: None,
        latency: None,
    };
    Report {
        schema_version: benchsuite_core::SCHEMA_VERSION.into(),
        tool_version: "sim".into(),
        started_at: String::new(),
        host: Host::default(),
        cluster: None,
        config: RunConfigRecord {
            runs,
            rounds,
            ..RunConfigRecord::default()
        },
        progress: None,
        records: vec![Record {
            id: "sim.op".into(),
            params: Point::default(),
            requested: None,
            status: Status::Ok,
            reason: None,
            iters_per_sample: Some(1),
            metrics: vec![metric],
            peak: None,
            warnings: Vec::new(),
            notes: Vec::new(),
            phase: None,
            reference: None,
            load: None,
            capacity: None,
        }],
    }
}

/// The fraction of `trials` pairs that `compare` calls regressed, and the
/// fraction it calls unchanged (the rest: undecided or improved).
pub fn rates(
    seed: u64,
    model: &Model,
    runs: usize,
    rounds: usize,
    change: f64,
    trials: usize,
) -> (f64, f64) {
    let mut rng = Rng::new(seed);
    // The models are the noise inside one run; what moves between runs is
    // the trace-driven simulation's (`crate::trace`): no prior here.
    let options = CompareOptions {
        between_run: BetweenRun::Cv(0.0),
        ..CompareOptions::default()
    };
    let (mut regressed, mut unchanged) = (0, 0);
    for _ in 0..trials {
        let base = draw(&mut rng, model, runs, rounds, 0.0);
        let new = draw(&mut rng, model, runs, rounds, change);
        let c = compare(&base, &new, &options).expect("same plan");
        match c.metrics[0].verdict {
            Verdict::Regressed => regressed += 1,
            Verdict::Unchanged => unchanged += 1,
            _ => {}
        }
    }
    (
        regressed as f64 / trials as f64,
        unchanged as f64 / trials as f64,
    )
}

/// The seed of one cell of the table, so each cell is reproducible alone.
pub fn seed(model: usize, rounds: usize, change: usize) -> u64 {
    0xB5_0000 + (model as u64) * 10_000 + (rounds as u64) * 100 + change as u64
}
