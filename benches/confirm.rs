//! The two-stage gate (screen against a history, confirm by pairing)
//! replayed on recorded real CI jobs: `benches/data/confirm/<machine>/`.
//!
//! A machine's directory holds `history/rNN.json.gz` (quick passes of the
//! base build, `run --rounds 3`) and `jobNN/` directories in the order they
//! ran, each one CI job:
//!
//! - `kind`: `aa` (the new build is a copy of the base build) or
//!   `planted` (a scratch build with known slowdowns, see `README.md`);
//! - `new.json.gz`: the job's screen run, `run --rounds 3` of its new build;
//! - `interleave-base.json.gz`, `interleave-new.json.gz`: the two builds'
//!   pooled rounds of `compare --interleave BASE NEW --rounds K` (each round
//!   a whole quick pass), so a confirmation of any budget up to `K` pairs
//!   is replayed by cutting both to their first `k` rounds.
//!
//! A job's history is the newest `h` quick passes of the base build before
//! it: the history runs, then the screen runs of the A/A jobs (a CI job on
//! main adds its run to the history; a pull request's does not).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use benchsuite_core::Report;
use benchsuite_report::compare::confirm::{judge_look, looks};
use benchsuite_report::compare::{
    Baseline, CompareOptions, Comparison, Outcome, ThresholdRule, Verdict, compare_history,
};

/// One recorded CI job.
#[derive(Debug, Clone)]
pub struct Job {
    /// The directory's name (`job07`).
    pub name: String,
    /// Whether the new build had planted slowdowns.
    pub planted: bool,
    /// The screen run of the new build.
    pub new: Report,
    /// The base build's interleaved rounds, pooled.
    pub pairs_base: Report,
    /// The new build's interleaved rounds, pooled.
    pub pairs_new: Report,
}

/// A machine's recorded jobs and the history before them.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The directory's name.
    pub name: String,
    /// The base build's quick passes before the first job, oldest first.
    pub history: Vec<Report>,
    /// The jobs, in the order they ran.
    pub jobs: Vec<Job>,
    /// Screen runs with `stress-ng --cpu 2` beside them, after the jobs.
    pub stress: Vec<Report>,
}

/// The recordings of the repository: `benches/data/confirm/`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/confirm")
}

/// Reads a gzip-compressed report, with its benchmarks' roles filled in.
pub fn read_gz(p: &Path) -> Result<Report, String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?,
    )
    .read_to_string(&mut text)
    .map_err(|e| format!("{}: {e}", p.display()))?;
    let mut r = Report::from_json(&text, &p.display().to_string()).map_err(|e| e.to_string())?;
    benchsuite::registry().fill_roles(&mut r);
    Ok(r)
}

/// The entries of directory `d`, sorted by path.
pub fn sorted_entries(d: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .map_err(|e| format!("{}: {e}", d.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// Reads every machine's recording under `dir`.
pub fn load(dir: &Path) -> Result<Vec<Recording>, String> {
    let mut out = Vec::new();
    for d in sorted_entries(dir)?.into_iter().filter(|p| p.is_dir()) {
        let mut history = Vec::new();
        for p in sorted_entries(&d.join("history"))? {
            if p.to_string_lossy().ends_with(".json.gz") {
                history.push(read_gz(&p)?);
            }
        }
        history.sort_by(|a, b| a.started_at.cmp(&b.started_at));
        let mut jobs = Vec::new();
        for j in sorted_entries(&d)?.into_iter().filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("job"))
        }) {
            let kind = std::fs::read_to_string(j.join("kind"))
                .map_err(|e| format!("{}: {e}", j.display()))?;
            jobs.push(Job {
                name: j.file_name().unwrap_or_default().to_string_lossy().into(),
                planted: kind.trim() == "planted",
                new: read_gz(&j.join("new.json.gz"))?,
                pairs_base: read_gz(&j.join("interleave-base.json.gz"))?,
                pairs_new: read_gz(&j.join("interleave-new.json.gz"))?,
            });
        }
        let mut stress = Vec::new();
        if d.join("stress").is_dir() {
            for p in sorted_entries(&d.join("stress"))? {
                if p.to_string_lossy().ends_with(".json.gz") {
                    stress.push(read_gz(&p)?);
                }
            }
        }
        out.push(Recording {
            name: d.file_name().unwrap_or_default().to_string_lossy().into(),
            history,
            jobs,
            stress,
        });
    }
    Ok(out)
}

/// `report`'s pooled rounds cut to the first `k`: each metric's samples
/// (and tails) of those rounds.
pub fn first_rounds(report: &Report, k: usize) -> Report {
    let mut r = report.clone();
    for rec in &mut r.records {
        for m in &mut rec.metrics {
            let Some(rounds) = &m.rounds else { continue };
            let k = k.min(rounds.len());
            let n: usize = rounds[..k].iter().sum();
            m.samples.truncate(n);
            if let Some(t) = &mut m.tails {
                for v in [&mut t.p99, &mut t.p99_9].into_iter().flatten() {
                    v.truncate(n);
                }
            }
            m.rounds = Some(rounds[..k].to_vec());
        }
    }
    r.config.rounds = k;
    r
}

/// How many pairs a recorded job holds.
pub fn recorded_pairs(job: &Job) -> usize {
    job.pairs_new.config.rounds
}

/// What the two-stage gate said of one job.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// The job.
    pub name: String,
    /// Whether it was planted.
    pub planted: bool,
    /// The screen's outcome.
    pub screen: Outcome,
    /// The outcome after the confirmation.
    pub outcome: Outcome,
    /// Pairs the confirmation used.
    pub pairs: usize,
    /// The gated metrics called regressed in the end: (key, metric).
    pub regressed: Vec<(String, String)>,
    /// The gated metrics the screen called regressed.
    pub screen_regressed: Vec<(String, String)>,
    /// The gated metrics left undecided in the end.
    pub undecided: Vec<(String, String)>,
    /// The comparison after the confirmation.
    pub comparison: Comparison,
}

impl JobResult {
    /// The final verdict on the gated metric `metric` of benchmark `id`.
    pub fn verdict(&self, id: &str, metric: &str) -> Option<Verdict> {
        self.comparison
            .metrics
            .iter()
            .find(|m| m.id == id && m.metric == metric && m.gated)
            .map(|m| m.verdict)
    }
}

/// The base build's quick passes before job `i`, newest last: the
/// history runs and the earlier A/A jobs' screen runs.
pub fn history_before(rec: &Recording, i: usize) -> Vec<&Report> {
    let mut v: Vec<&Report> = rec.history.iter().collect();
    v.extend(rec.jobs[..i].iter().filter(|j| !j.planted).map(|j| &j.new));
    v
}

/// Replays job `i` of `rec`: the screen against the newest `h` runs
/// before it, then a confirmation of budget `budget` (at most the pairs
/// recorded) on its recorded pairs; `budget` 0: the screen alone.
pub fn replay(
    rec: &Recording,
    i: usize,
    h: usize,
    budget: usize,
    options: &CompareOptions,
) -> JobResult {
    let job = &rec.jobs[i];
    let screen = screen_before(rec, i, h, &job.new, options);
    let gated = |c: &Comparison, v: Verdict| -> Vec<(String, String)> {
        c.metrics
            .iter()
            .filter(|m| m.gated && m.verdict == v)
            .map(|m| (m.key.clone(), m.metric.clone()))
            .collect()
    };
    let mut current = screen.clone();
    let mut pairs = 0;
    if budget > 0 {
        let budget = budget.min(recorded_pairs(job));
        let at = looks(budget);
        for (j, &k) in at.iter().enumerate() {
            if benchsuite_report::compare::confirm::open(&current).is_empty() {
                break;
            }
            pairs = k;
            current = judge_look(
                &current,
                &first_rounds(&job.pairs_base, k),
                &first_rounds(&job.pairs_new, k),
                options,
                at.len(),
                j + 1 == at.len(),
            )
            .expect("the rounds compare");
        }
    }
    JobResult {
        name: job.name.clone(),
        planted: job.planted,
        screen: screen.outcome(),
        outcome: current.outcome(),
        pairs,
        regressed: gated(&current, Verdict::Regressed),
        screen_regressed: gated(&screen, Verdict::Regressed),
        undecided: gated(&current, Verdict::Undecided),
        comparison: current,
    }
}

/// A rate as the examples print it: `3/30 = 10.0% [2.1, 26.5]`, with
/// its exact 95% interval.
pub fn rate(k: usize, n: usize) -> String {
    let (lo, hi) = interval95(k, n);
    format!(
        "{k}/{n} = {:.1}% [{:.1}, {:.1}]",
        100.0 * k as f64 / n.max(1) as f64,
        lo * 100.0,
        hi * 100.0
    )
}

/// The exact (Clopper–Pearson) 95% interval of a rate of `k` in `n`.
pub fn interval95(k: usize, n: usize) -> (f64, f64) {
    use statrs::distribution::{Beta, ContinuousCDF};
    let beta_inv = |p: f64, a: f64, b: f64| Beta::new(a, b).map_or(f64::NAN, |d| d.inverse_cdf(p));
    if n == 0 {
        return (0.0, 1.0);
    }
    let lo = if k == 0 {
        0.0
    } else {
        beta_inv(0.025, k as f64, (n - k + 1) as f64)
    };
    let hi = if k == n {
        1.0
    } else {
        beta_inv(0.975, (k + 1) as f64, (n - k) as f64)
    };
    (lo, hi)
}

/// The planted slowdowns of the `planted` jobs (benchmark id, metric): each
/// +10% work per reported operation (see `benches/data/confirm/README.md`).
pub const PLANTED: [(&str, &str); 3] = [
    ("os.syscall", "time_per_op"),
    ("cpu.prime", "events"),
    ("mem.bandwidth", "bandwidth"),
];

/// A threshold per headline metric from another machine's recorded noise
/// (held out: fitted on `traced`, applied to the recordings): `max(5%, 3 ×
/// its between-run CV)`, rounded up to a multiple of 5%, as `--threshold
/// 'ID:METRIC=N%'` rules. A metric at CV ≤ 1.7% keeps the 5% default.
pub fn threshold_policy(traced: &crate::trace::Machine) -> Vec<ThresholdRule> {
    crate::trace::headlines(traced)
        .iter()
        .filter_map(|hl| {
            let pct = (3.0 * hl.between_cv * 100.0 / 5.0).ceil().max(1.0) * 5.0;
            let id = hl.key.split_whitespace().next()?;
            ThresholdRule::parse(&format!("{id}:{}={pct}%", hl.metric)).ok()
        })
        .collect()
}

/// The screen of a stress run against the newest `h` quick passes of the
/// base build (all of the recording's history and A/A screen runs).
pub fn screen_stress(
    rec: &Recording,
    run: &Report,
    h: usize,
    options: &CompareOptions,
) -> Comparison {
    screen_before(rec, rec.jobs.len(), h, run, options)
}

/// The screen of `run` against the newest `h` quick passes of the base
/// build before job `i` (`i` = the number of jobs: after all of them).
fn screen_before(
    rec: &Recording,
    i: usize,
    h: usize,
    run: &Report,
    options: &CompareOptions,
) -> Comparison {
    let before = history_before(rec, i);
    let from = before.len().saturating_sub(h);
    let names: Vec<String> = (from..before.len()).map(|k| format!("h{k}")).collect();
    let baselines: Vec<Baseline<'_>> = before[from..]
        .iter()
        .zip(&names)
        .map(|(r, name)| Baseline { name, report: r })
        .collect();
    compare_history(&baselines, run, options).expect("runs of one plan")
}

/// The between-run CV of a gated metric of benchmark `id` over all of the
/// recording's quick passes of the base build (the spread of their run
/// medians' logarithms): the class the detection target is set
/// for (≤ 3%). `None` for a metric that is not positive in every run (UDP
/// loss at 0%: judged in percentage points, not as a ratio).
pub fn between_cv(rec: &Recording, id: &str, metric: &str) -> Option<f64> {
    let medians: Vec<f64> = history_before(rec, rec.jobs.len())
        .iter()
        .filter_map(|r| {
            r.records
                .iter()
                .find(|x| x.id == id && x.status == benchsuite_core::Status::Ok)
                .and_then(|x| x.metric(metric))
                .map(|m| benchsuite_core::stats::median(&m.samples))
        })
        .collect();
    if medians.len() < 3 || medians.iter().any(|m| *m <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = medians.iter().map(|m| m.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt().exp_m1())
}

/// Thresholds fitted on A/A jobs' two-stage results (`fit`): for each
/// gated metric, the largest `unchanged_above` it ended with, rounded up to
/// a multiple of 5% (0.5pp for metrics in %), and never below the
/// default: the threshold at which each of those jobs would have called it
/// unchanged. Rates are then measured on other jobs.
pub fn fitted_policy(fit: &[&JobResult], options: &CompareOptions) -> Vec<ThresholdRule> {
    let mut worst: Vec<(String, String, bool, f64)> = Vec::new();
    for r in fit {
        for m in r.comparison.metrics.iter().filter(|m| m.gated) {
            let Some(u) = m.unchanged_above else { continue };
            let pp = m.unit == "%"
                && matches!(
                    m.tolerance,
                    benchsuite_report::compare::Tolerance::Absolute { .. }
                );
            match worst
                .iter_mut()
                .find(|(id, name, _, _)| *id == m.id && *name == m.metric)
            {
                Some(w) => w.3 = w.3.max(u),
                None => worst.push((m.id.clone(), m.metric.clone(), pp, u)),
            }
        }
    }
    worst
        .into_iter()
        .filter_map(|(id, metric, pp, u)| {
            let text = if pp {
                let v = ((u / 0.5).ceil() * 0.5).max(0.5);
                format!("{id}:{metric}={v}pp")
            } else {
                let floor = if metric.contains(".p99") {
                    options.tail_threshold
                } else {
                    options.threshold
                };
                let v = ((u * 20.0).ceil() / 20.0).max(floor);
                if v <= floor {
                    return None;
                }
                format!("{id}:{metric}={}%", (v * 100.0).round())
            };
            ThresholdRule::parse(&text).ok()
        })
        .collect()
}

/// Thresholds calibrated ([`benchsuite_report::compare::calibrate`]) on
/// the A/A jobs of `rec` that `fit` picks: each job's own interleaved
/// pairs, the confirmation's budget. Rates are then measured on the other
/// jobs.
pub fn calibrated(
    rec: &Recording,
    fit: impl Fn(&Job) -> bool,
) -> benchsuite_report::compare::calibrate::Calibration {
    use benchsuite_report::compare::calibrate::{AaJob, CalibrateOptions, calibrate};
    let jobs: Vec<AaJob<'_>> = rec
        .jobs
        .iter()
        .filter(|j| !j.planted && fit(j))
        .map(|j| AaJob {
            name: &j.name,
            base: &j.pairs_base,
            new: &j.pairs_new,
        })
        .collect();
    calibrate(&jobs, &CalibrateOptions::default()).expect("the A/A jobs calibrate")
}

/// Scales metric `metric` of every record of benchmark `id` in `report`
/// by `factor` (its samples and tails): a planted change on recorded noise.
pub fn scale_metric(report: &mut Report, id: &str, metric: &str, factor: f64) {
    for r in report.records.iter_mut().filter(|r| r.id == id) {
        for m in r.metrics.iter_mut().filter(|m| m.name == metric) {
            m.samples.iter_mut().for_each(|s| *s *= factor);
            if let Some(t) = &mut m.tails {
                for v in [&mut t.p99, &mut t.p99_9].into_iter().flatten() {
                    v.iter_mut().for_each(|s| *s *= factor);
                }
            }
        }
    }
}

/// Replays job `i` of `rec` as [`replay`] does, with `metric` of `id`
/// scaled by `factor` in its new build's screen run and pairs: a change
/// planted on the job's real noise (the history is untouched).
pub fn replay_planted(
    rec: &Recording,
    i: usize,
    h: usize,
    budget: usize,
    options: &CompareOptions,
    (id, metric, factor): (&str, &str, f64),
) -> JobResult {
    let mut job = rec.jobs[i].clone();
    scale_metric(&mut job.new, id, metric, factor);
    scale_metric(&mut job.pairs_new, id, metric, factor);
    let one = Recording {
        name: rec.name.clone(),
        history: history_before(rec, i).into_iter().cloned().collect(),
        jobs: vec![job],
        stress: Vec::new(),
    };
    replay(&one, 0, h, budget, options)
}
