//! Trace-driven error rates of `compare`: the real [`compare_history`]
//! fed whole recorded A/A runs (`benchsuite run --rounds 3` of one build,
//! nothing changed between runs) from `benches/data/noise/<machine>/`.
//!
//! The Gaussian models of [`crate::error_rates`] hold the noise inside a
//! run; the noise that fails CI jobs lives between runs (a VM's loopback
//! in a slow state for minutes, a virtio disk's speed moving with the
//! host), and only recorded runs have it. Each trial draws whole runs of
//! one machine:
//!
//! - **A/A, random**: `h` runs at random as the history and another as
//!   the new run; a false alarm is a gate that fails (any gated metric
//!   regressed, or any problem).
//! - **A/A, windows**: in recorded order, runs `i − h .. i` as the history
//!   and run `i` as the new one, as a CI job keeping the last `h` runs of
//!   its main branch sees them (states that last minutes are not mixed
//!   into the history as random draws would mix them).
//! - **Detection**: a random A/A draw with one gated headline metric of
//!   the new run made worse by `change` (every sample); detected when that
//!   metric is called regressed. Each headline metric's between-run CV is
//!   the spread of its run medians over all of the machine's runs.

use std::io::Read as _;
use std::path::Path;

use benchsuite_core::results::MetricRole;
use benchsuite_core::{Direction, Report, Status};
use benchsuite_report::compare::{Baseline, CompareOptions, Verdict, compare_history};

use crate::error_rates::Rng;

/// The recorded A/A runs of one machine, in the order they ran.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The directory's name (`zen4-a`).
    pub name: String,
    /// The runs, oldest first.
    pub runs: Vec<Report>,
}

/// The traces of the repository: `benches/data/noise/`.
pub fn data_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/noise")
}

/// Reads every machine under `dir`: each subdirectory's `*.json.gz`
/// reports (gzip-compressed `benchsuite run` JSON), sorted by start time,
/// with the roles their benchmarks declare filled in.
pub fn load(dir: &Path) -> Result<Vec<Machine>, String> {
    let registry = benchsuite::registry();
    let mut machines = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut runs = Vec::new();
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = e.map_err(|e| e.to_string())?.path();
            if !p.to_string_lossy().ends_with(".json.gz") {
                continue;
            }
            let mut text = String::new();
            flate2::read::GzDecoder::new(
                std::fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?,
            )
            .read_to_string(&mut text)
            .map_err(|e| format!("{}: {e}", p.display()))?;
            let mut r =
                Report::from_json(&text, &p.display().to_string()).map_err(|e| e.to_string())?;
            registry.fill_roles(&mut r);
            runs.push(r);
        }
        runs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
        let name = d.file_name().unwrap_or_default().to_string_lossy().into();
        machines.push(Machine { name, runs });
    }
    Ok(machines)
}

/// Names for the baselines of a trial (what outputs call them).
const NAMES: [&str; 32] = [
    "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h14",
    "h15", "h16", "h17", "h18", "h19", "h20", "h21", "h22", "h23", "h24", "h25", "h26", "h27",
    "h28", "h29", "h30", "h31",
];

/// `compare` of `new` against `history` (indices into `m.runs`), in
/// recorded order.
fn judge(m: &Machine, history: &[usize], new: &Report, options: &CompareOptions) -> Verdicts {
    let mut idx = history.to_vec();
    idx.sort_unstable();
    let baselines: Vec<Baseline<'_>> = idx
        .iter()
        .enumerate()
        .map(|(k, &i)| Baseline {
            name: NAMES[k % NAMES.len()],
            report: &m.runs[i],
        })
        .collect();
    let c = compare_history(&baselines, new, options).expect("runs of one plan compare");
    let with = |v: Verdict| {
        c.metrics
            .iter()
            .filter(|x| x.gated && x.verdict == v)
            .map(|x| (x.key.clone(), x.metric.clone()))
            .collect()
    };
    Verdicts {
        passed: c.passed(),
        regressed: with(Verdict::Regressed),
        unchanged: with(Verdict::Unchanged),
    }
}

/// What one comparison said.
#[derive(Debug, Clone)]
pub struct Verdicts {
    /// Whether the gate passed.
    pub passed: bool,
    /// The gated metrics called regressed: (record key, metric).
    pub regressed: Vec<(String, String)>,
    /// The gated metrics called unchanged.
    pub unchanged: Vec<(String, String)>,
}

/// `k` distinct indices below `n`, at random.
fn pick(rng: &mut Rng, n: usize, k: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (rng.uniform() * (n - i) as f64) as usize;
        all.swap(i, j.min(n - 1));
    }
    all.truncate(k);
    all
}

/// A metric that alarmed ((record key, metric)) and how often.
pub type Alarms = Vec<((String, String), usize)>;

/// A/A false alarms of the whole job with random draws: how many of
/// `trials` gates failed, and the metrics that failed them (with counts).
pub fn aa_random(
    m: &Machine,
    h: usize,
    trials: usize,
    seed: u64,
    options: &CompareOptions,
) -> (usize, Alarms) {
    let mut rng = Rng::new(seed);
    let mut alarms = 0;
    let mut who: Alarms = Vec::new();
    for _ in 0..trials {
        let draw = pick(&mut rng, m.runs.len(), h + 1);
        let v = judge(m, &draw[1..], &m.runs[draw[0]], options);
        if !v.passed {
            alarms += 1;
            for r in v.regressed {
                match who.iter_mut().find(|(k, _)| *k == r) {
                    Some((_, n)) => *n += 1,
                    None => who.push((r, 1)),
                }
            }
        }
    }
    who.sort_by_key(|w| std::cmp::Reverse(w.1));
    (alarms, who)
}

/// A/A false alarms over sliding windows in recorded order: (alarms,
/// windows).
pub fn aa_windows(m: &Machine, h: usize, options: &CompareOptions) -> (usize, usize) {
    let mut alarms = 0;
    let windows = m.runs.len().saturating_sub(h);
    for i in h..m.runs.len() {
        let history: Vec<usize> = (i - h..i).collect();
        if !judge(m, &history, &m.runs[i], options).passed {
            alarms += 1;
        }
    }
    (alarms, windows)
}

/// A gated headline metric that ran in every run of a machine.
#[derive(Debug, Clone)]
pub struct Headline {
    /// Record key (id and requested parameters).
    pub key: String,
    /// Metric name.
    pub metric: String,
    /// The spread of its run medians over the machine's runs, as a CV.
    pub between_cv: f64,
}

/// The machine's headline metrics, each with its between-run CV.
pub fn headlines(m: &Machine) -> Vec<Headline> {
    let mut out = Vec::new();
    let first = &m.runs[0];
    for rec in first.records.iter().filter(|r| r.status == Status::Ok) {
        let key = rec.requested_key();
        for metric in rec
            .metrics
            .iter()
            .filter(|x| x.role == Some(MetricRole::Headline))
        {
            let medians: Option<Vec<f64>> = m
                .runs
                .iter()
                .map(|r| {
                    r.records
                        .iter()
                        .find(|x| x.requested_key() == key && x.status == Status::Ok)
                        .and_then(|x| x.metric(&metric.name))
                        .map(|x| benchsuite_core::stats::median(&x.samples).ln())
                })
                .collect();
            let Some(logs) = medians else { continue };
            let n = logs.len() as f64;
            let mean = logs.iter().sum::<f64>() / n;
            let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            out.push(Headline {
                key: key.clone(),
                metric: metric.name.clone(),
                between_cv: var.sqrt().exp_m1(),
            });
        }
    }
    out
}

/// `report` with `metric` of record `key` made worse by `change` (every
/// sample and tail: ×(1 + change) where lower is better, ÷ where higher).
pub fn plant(report: &Report, key: &str, metric: &str, change: f64) -> Report {
    let mut r = report.clone();
    for rec in r.records.iter_mut().filter(|x| x.requested_key() == key) {
        for m in rec.metrics.iter_mut().filter(|x| x.name == metric) {
            let f = match m.direction {
                Direction::Lower => 1.0 + change,
                Direction::Higher => 1.0 / (1.0 + change),
            };
            m.samples.iter_mut().for_each(|s| *s *= f);
            if let Some(t) = &mut m.tails {
                for v in [&mut t.p99, &mut t.p99_9].into_iter().flatten() {
                    v.iter_mut().for_each(|s| *s *= f);
                }
            }
        }
    }
    r
}

/// `report` with `metric` of record `key` made worse by `change` in the
/// rounds `from..` only (0-based; every round from `from` on), as a
/// slowdown that spares the first rounds of a run.
pub fn plant_from_round(
    report: &Report,
    key: &str,
    metric: &str,
    change: f64,
    from: usize,
) -> Report {
    let mut r = report.clone();
    for rec in r.records.iter_mut().filter(|x| x.requested_key() == key) {
        for m in rec.metrics.iter_mut().filter(|x| x.name == metric) {
            let f = match m.direction {
                Direction::Lower => 1.0 + change,
                Direction::Higher => 1.0 / (1.0 + change),
            };
            let rounds = m.rounds.clone().unwrap_or_else(|| vec![m.samples.len()]);
            let start: usize = rounds.iter().take(from).sum();
            m.samples[start..].iter_mut().for_each(|s| *s *= f);
        }
    }
    r
}

/// How many of `trials` random draws called `hl` regressed when the new
/// run's last rounds were made worse: `slowdown` is the change and the
/// first round it applies to (0-based); the rounds before it are spared.
pub fn detect_from_round(
    m: &Machine,
    hl: &Headline,
    h: usize,
    slowdown: (f64, usize),
    trials: usize,
    seed: u64,
    options: &CompareOptions,
) -> usize {
    let (change, from) = slowdown;
    verdicts_of(m, hl, h, trials, seed, options, |r| {
        plant_from_round(r, &hl.key, &hl.metric, change, from)
    })
    .0
}

/// How many of `trials` random draws called `hl` regressed once the new
/// run's value was made worse by `change`.
pub fn detect(
    m: &Machine,
    hl: &Headline,
    h: usize,
    change: f64,
    trials: usize,
    seed: u64,
    options: &CompareOptions,
) -> usize {
    detect_verdicts(m, hl, h, change, trials, seed, options).0
}

/// How many of `trials` random draws called `hl` regressed, and how many
/// unchanged (a miss the screen would pass), once the new run's value was
/// made worse by `change`; the rest were undecided (for the pairs).
pub fn detect_verdicts(
    m: &Machine,
    hl: &Headline,
    h: usize,
    change: f64,
    trials: usize,
    seed: u64,
    options: &CompareOptions,
) -> (usize, usize) {
    verdicts_of(m, hl, h, trials, seed, options, |r| {
        plant(r, &hl.key, &hl.metric, change)
    })
}

/// Over `trials` random draws of a history of `h` runs and a new run made
/// by `planted` from another: how often `hl` was called regressed, and how
/// often unchanged.
fn verdicts_of(
    m: &Machine,
    hl: &Headline,
    h: usize,
    trials: usize,
    seed: u64,
    options: &CompareOptions,
    planted: impl Fn(&Report) -> Report,
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut hits, mut passed) = (0, 0);
    for _ in 0..trials {
        let draw = pick(&mut rng, m.runs.len(), h + 1);
        let new = planted(&m.runs[draw[0]]);
        let v = judge(m, &draw[1..], &new, options);
        let is =
            |list: &[(String, String)]| list.iter().any(|(k, x)| *k == hl.key && *x == hl.metric);
        if is(&v.regressed) {
            hits += 1;
        } else if is(&v.unchanged) {
            passed += 1;
        }
    }
    (hits, passed)
}

/// The seed of one cell, so each cell is reproducible alone.
pub fn seed(machine: usize, h: usize, change_pct: usize, metric: usize) -> u64 {
    0x7_2ACE_0000
        + (machine as u64) * 1_000_000
        + (h as u64) * 10_000
        + (change_pct as u64) * 100
        + metric as u64
}
