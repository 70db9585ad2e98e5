//! The proof of `benchsuite history` (issue 39): change points found in
//! planted series and false ones in the recorded noise
//! (`benches/data/noise/`), per metric. Used by `--example history_rates`
//! (prints the tables) and `tests/history_rates.rs` (holds the targets).

use benchsuite_core::{Report, Status};
use benchsuite_report::trend::{Trend, TrendOptions, trend};

use crate::trace::{Machine, plant};

/// The gated series of a machine: (record key, metric).
pub fn series(m: &Machine) -> Vec<(String, String)> {
    let t = run(&m.runs, &TrendOptions::default());
    t.series
        .iter()
        .map(|s| (s.key.clone(), s.metric.clone()))
        .collect()
}

/// `history` over `runs` (named r01, r02 ...).
pub fn run(runs: &[Report], options: &TrendOptions) -> Trend {
    let named: Vec<(String, Report)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("r{:02}", i + 1), r.clone()))
        .collect();
    trend(&named, options).expect("a machine's runs make a history")
}

/// The change points of one series of `t`.
fn points<'a>(
    t: &'a Trend,
    key: &str,
    metric: &str,
) -> &'a [benchsuite_report::trend::ChangePoint] {
    t.series
        .iter()
        .find(|s| s.key == key && s.metric == metric)
        .map_or(&[], |s| s.change_points.as_slice())
}

/// Unplanted: each series' change points over all of a machine's runs.
#[derive(Debug, Clone)]
pub struct Quiet {
    pub machine: String,
    pub runs: usize,
    /// (key, metric, change points, of them regressions).
    pub series: Vec<(String, String, usize, usize)>,
    /// Each change point: (key, metric, the run it starts at, 0-based, its
    /// step, a regression).
    pub found: Vec<(String, String, usize, f64, bool)>,
}

pub fn quiet(m: &Machine) -> Quiet {
    quiet_with(m, &TrendOptions::default())
}

/// [`quiet`] under `options` (a thresholds file's rules).
pub fn quiet_with(m: &Machine, options: &TrendOptions) -> Quiet {
    let t = run(&m.runs, options);
    Quiet {
        machine: m.name.clone(),
        runs: m.runs.len(),
        series: t
            .series
            .iter()
            .map(|s| {
                (
                    s.key.clone(),
                    s.metric.clone(),
                    s.change_points.len(),
                    s.change_points.iter().filter(|c| c.regression).count(),
                )
            })
            .collect(),
        found: t
            .series
            .iter()
            .flat_map(|s| {
                s.change_points
                    .iter()
                    .map(|c| (s.key.clone(), s.metric.clone(), c.at, c.step, c.regression))
            })
            .collect(),
    }
}

/// How far from the planted run a change point may start and still be
/// the planted one: a machine state just before the step (mem.latency's
/// slow runs 13–15 of zen4-b) moves it by two runs.
pub const SLACK: usize = 3;

/// A planted step: found, after how many runs, where and how far off its
/// size.
#[derive(Debug, Clone)]
pub struct Found {
    pub key: String,
    pub metric: String,
    /// Runs at the new level when a regression change point within
    /// [`SLACK`] runs of the step first appears; `None` when not found by
    /// the last run.
    pub delay: Option<usize>,
    /// With every run: where the change point starts, less the planted run.
    pub offset: Option<i64>,
    /// The step reported with every run, and the planted one.
    pub step: Option<f64>,
    pub planted: f64,
}

/// `runs` with `metric` of `key` made worse from run `from` on by
/// `change(i)` (cumulative factor for run `i`).
fn planted(
    runs: &[Report],
    key: &str,
    metric: &str,
    from: usize,
    change: impl Fn(usize) -> f64,
) -> Vec<Report> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| {
            if i >= from {
                plant(r, key, metric, change(i))
            } else {
                r.clone()
            }
        })
        .collect()
}

/// The first prefix of `runs` (from `from + 1` runs on) whose history has a
/// regression change point of the series within `slack` runs of `from`.
fn delay(runs: &[Report], key: &str, metric: &str, from: usize, slack: usize) -> Option<usize> {
    (from + 1..=runs.len()).find_map(|n| {
        let t = run(&runs[..n], &TrendOptions::default());
        points(&t, key, metric)
            .iter()
            .any(|c| c.regression && c.at.abs_diff(from) <= slack)
            .then_some(n - from)
    })
}

/// The regression change point of the planted series nearest `from`
/// (within [`SLACK`]) with every run: (offset, step).
fn nearest(t: &Trend, key: &str, metric: &str, from: usize) -> Option<(i64, f64)> {
    points(t, key, metric)
        .iter()
        .filter(|c| c.regression && c.at.abs_diff(from) <= SLACK)
        .min_by_key(|c| c.at.abs_diff(from))
        .map(|c| (c.at as i64 - from as i64, c.step))
}

/// A step of `change` (worse) at run `from` of each series of `m` whose
/// values are not all zero (a relative step of 0% loss is none), one
/// series at a time.
pub fn steps(m: &Machine, from: usize, change: f64) -> Vec<Found> {
    let all = run(&m.runs, &TrendOptions::default());
    all.series
        .iter()
        .filter(|s| s.medians.iter().flatten().any(|v| *v != 0.0))
        .map(|s| {
            let (key, metric) = (s.key.clone(), s.metric.clone());
            let runs = planted(&m.runs, &key, &metric, from, |_| change);
            let t = run(&runs, &TrendOptions::default());
            let near = nearest(&t, &key, &metric, from);
            Found {
                delay: delay(&runs, &key, &metric, from, SLACK),
                offset: near.map(|n| n.0),
                step: near.map(|n| n.1),
                planted: match s.direction {
                    benchsuite_core::Direction::Higher => 1.0 / (1.0 + change) - 1.0,
                    benchsuite_core::Direction::Lower => change,
                },
                key,
                metric,
            }
        })
        .collect()
}

/// LINPACK pinned at its slow level from run `from` on: each later run's
/// samples scaled so its median is the slowest run median seen before.
pub fn linpack_into_slow_state(m: &Machine, from: usize) -> Option<(Found, f64)> {
    let (key, metric) = series(m)
        .into_iter()
        .find(|(k, mt)| k.starts_with("cpu.linpack") && mt == "flops")?;
    let median = |r: &Report| {
        r.records
            .iter()
            .find(|x| x.requested_key() == key && x.status == Status::Ok)
            .and_then(|x| x.metric(&metric))
            .map(|x| benchsuite_core::stats::median(&x.samples))
    };
    let meds: Vec<f64> = m.runs.iter().filter_map(median).collect();
    let slow = meds[..from].iter().copied().fold(f64::INFINITY, f64::min);
    let typical = benchsuite_core::stats::median(&meds[..from]);
    let runs: Vec<Report> = m
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if i < from {
                return r.clone();
            }
            // Worse by what takes this run's median to the slow level.
            let now = median(r).unwrap_or(slow);
            plant(r, &key, &metric, now / slow - 1.0)
        })
        .collect();
    let t = run(&runs, &TrendOptions::default());
    let near = nearest(&t, &key, &metric, from);
    Some((
        Found {
            delay: delay(&runs, &key, &metric, from, SLACK),
            offset: near.map(|n| n.0),
            step: near.map(|n| n.1),
            planted: slow / typical - 1.0,
            key,
            metric,
        },
        slow,
    ))
}

/// A drift: worse by `per_step` more every `every` runs from run `from` on.
/// Whether (and where first) a regression change point is reported.
pub fn drifts(
    m: &Machine,
    from: usize,
    every: usize,
    per_step: f64,
) -> Vec<(String, String, Option<usize>)> {
    series(m)
        .into_iter()
        .map(|(key, metric)| {
            let runs = planted(&m.runs, &key, &metric, from, |i| {
                (1.0 + per_step).powi(((i - from) / every + 1) as i32) - 1.0
            });
            let first = (from + 1..=runs.len()).find(|&n| {
                let t = run(&runs[..n], &TrendOptions::default());
                points(&t, &key, &metric)
                    .iter()
                    .any(|c| c.regression && c.at >= from)
            });
            (key, metric, first)
        })
        .collect()
}

/// A scheduled job after every run from `first` on (0-based): `history`
/// over the newest `window` runs so far. Returns (jobs that alarmed, jobs).
pub fn nightly_alarms(
    m: &Machine,
    first: usize,
    window: usize,
    options: &TrendOptions,
) -> (usize, usize) {
    let mut alarms = 0;
    let mut jobs = 0;
    for end in first.max(benchsuite_report::trend::MIN_RUNS)..=m.runs.len() {
        let runs = &m.runs[end.saturating_sub(window)..end];
        jobs += 1;
        if run(runs, options).exit_code() != 0 {
            alarms += 1;
        }
    }
    (alarms, jobs)
}
