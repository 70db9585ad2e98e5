//! The two-stage gate's targets, checked on the recorded real CI jobs of
//! `benches/data/confirm/` (see `benchsuite_benches::confirm`; `cargo run
//! --release -p benchsuite-benches --example confirm_rates` prints the
//! tables with their intervals). Each job is one independent trial, and
//! the bounds follow from how many there are, not from resampling:
//!
//! - A/A jobs (two copies of one build) that fail after the confirmation
//!   (a gated metric regressed): the target is ≤ 1%; with n jobs, at most
//!   `max(1, n/50)` may fail (at a true 1% and n = 30, two or more fail
//!   with probability 3.6%);
//! - A/A jobs left undecided after the confirmation: the target was ≤ 5%;
//!   on this VM at the default 5% thresholds every A/A job ends undecided
//!   (`os.call`'s per-process states, the virtio disk's latency, loopback
//!   UDP and TCP and `net.latency` cannot be shown within 5% in 15 pairs:
//!   docs/compare.md). What is checked is that only such metrics stay
//!   undecided: none whose between-run CV over the recording is at most
//!   3% (the gate decides what its noise allows);
//! - planted jobs (+10% work per operation in three benchmarks): each
//!   planted metric whose between-run CV (over the recording's quick
//!   passes) is at most 3%, the class, regressed in at least 80% of
//!   them (at a true 90% and 10 jobs, fewer than 8 with probability 7%);
//!   every planted metric, quiet or not, never unchanged.
//!
//! The rule's constants (alpha, beta, the trimming, the looks, the
//! budget) were set before these jobs were recorded and not changed after.

use benchsuite_benches::confirm::{self, JobResult, PLANTED};
use benchsuite_report::compare::confirm::DEFAULT_BUDGET;
use benchsuite_report::compare::{CompareOptions, Outcome, Verdict};

/// The history the CI recipe keeps.
const HISTORY: usize = 10;

fn replayed() -> Vec<(String, Vec<JobResult>)> {
    let recs = confirm::load(&confirm::data_dir()).expect("the recordings load");
    assert!(!recs.is_empty(), "a recorded machine");
    let o = CompareOptions::default();
    recs.iter()
        .map(|rec| {
            let results = (0..rec.jobs.len())
                .filter(|&i| confirm::history_before(rec, i).len() >= HISTORY)
                .map(|i| confirm::replay(rec, i, HISTORY, DEFAULT_BUDGET, &o))
                .collect();
            (rec.name.clone(), results)
        })
        .collect()
}

#[test]
fn unchanged_builds_never_fail_after_the_confirmation() {
    for (name, results) in replayed() {
        let aa: Vec<&JobResult> = results.iter().filter(|r| !r.planted).collect();
        let n = aa.len();
        assert!(n >= 20, "{name}: {n} A/A jobs with a {HISTORY}-run history");
        let failed: Vec<String> = aa
            .iter()
            .filter(|r| r.outcome == Outcome::Failed)
            .map(|r| format!("{}: {:?}", r.name, r.regressed))
            .collect();
        assert!(
            failed.len() <= (n / 50).max(1),
            "{name}: {} of {n} A/A jobs failed: {failed:?}",
            failed.len()
        );
    }
}

#[test]
fn only_metrics_too_noisy_for_the_threshold_stay_undecided() {
    let recs = confirm::load(&confirm::data_dir()).expect("the recordings load");
    for (rec, (name, results)) in recs.iter().zip(replayed()) {
        for r in results.iter().filter(|r| !r.planted) {
            for (key, metric) in &r.undecided {
                let id = key.split_whitespace().next().unwrap_or_default();
                // A tail has no run median of its own: it is as noisy as
                // its metric's tails are (never quiet at 5%).
                let Some(cv) = confirm::between_cv(rec, id, metric) else {
                    continue;
                };
                assert!(
                    cv > 0.03,
                    "{name} {}: {key} {metric} (between-run CV {:.1}%) left undecided",
                    r.name,
                    cv * 100.0
                );
            }
        }
    }
}

#[test]
fn planted_slowdowns_are_regressed_after_the_confirmation() {
    let recs = confirm::load(&confirm::data_dir()).expect("the recordings load");
    for (rec, (name, results)) in recs.iter().zip(replayed()) {
        let planted: Vec<&JobResult> = results.iter().filter(|r| r.planted).collect();
        let n = planted.len();
        assert!(n >= 8, "{name}: {n} planted jobs");
        for (id, metric) in PLANTED {
            let cv = confirm::between_cv(rec, id, metric).expect("the metric ran");
            let verdicts: Vec<Option<Verdict>> =
                planted.iter().map(|r| r.verdict(id, metric)).collect();
            let hit = verdicts
                .iter()
                .filter(|v| **v == Some(Verdict::Regressed))
                .count();
            assert!(
                cv > 0.03 || hit * 10 >= n * 8,
                "{name}: {id} {metric} (CV {:.1}%) regressed in {hit} of {n} planted jobs: {verdicts:?}",
                cv * 100.0
            );
            assert!(
                !verdicts.contains(&Some(Verdict::Unchanged)),
                "{name}: {id} {metric} passed as unchanged: {verdicts:?}"
            );
        }
    }
}

/// Calibrated thresholds (`compare::calibrate` on one half of the A/A
/// jobs' own pairs), judged on the other half and on every planted job,
/// then the halves swapped: every A/A job is held out once.
/// A machine's held-out results, and each held-out A/A job's index with
/// the options (thresholds) it was judged at.
type HeldOut = (String, Vec<JobResult>, Vec<(usize, CompareOptions)>);

fn calibrated_held_out() -> Vec<HeldOut> {
    let recs = confirm::load(&confirm::data_dir()).expect("the recordings load");
    recs.iter()
        .map(|rec| {
            let early = |j: &confirm::Job| j.name.as_str() <= "job20";
            let mut results = Vec::new();
            let mut folds = Vec::new();
            for first_half in [true, false] {
                let c = confirm::calibrated(rec, |j| early(j) == first_half);
                let o = CompareOptions {
                    rules: c.rules(),
                    ..CompareOptions::default()
                };
                for i in (0..rec.jobs.len())
                    .filter(|&i| !rec.jobs[i].planted && early(&rec.jobs[i]) != first_half)
                    .filter(|&i| confirm::history_before(rec, i).len() >= HISTORY)
                {
                    results.push(confirm::replay(rec, i, HISTORY, DEFAULT_BUDGET, &o));
                    folds.push((i, o.clone()));
                }
                if first_half {
                    // The planted jobs, once (at the first fold's thresholds).
                    for i in (0..rec.jobs.len()).filter(|&i| rec.jobs[i].planted) {
                        results.push(confirm::replay(rec, i, HISTORY, DEFAULT_BUDGET, &o));
                    }
                }
            }
            (rec.name.clone(), results, folds)
        })
        .collect()
}

/// The undecided target (≤ 5% of A/A jobs) is met at thresholds this
/// machine can judge at, fitted on other jobs: with n held-out A/A jobs,
/// at most `max(1, n/20)` end undecided and at most `max(1, n/50)` fail
/// (at a true 5% and n = 26, two or more undecided with probability
/// 37%: the bound is loose; at a true 15%, 87%); planted +10% slowdowns in
/// metrics whose between-run CV is ≤ 3% are still regressed in ≥ 80% of
/// jobs, and never unchanged; a regression into a state the history holds
/// (LINPACK −25%, planted on each held-out A/A job's own noise in every
/// round and pair) is never unchanged.
#[test]
fn calibrated_thresholds_decide_held_out_jobs() {
    let recs = confirm::load(&confirm::data_dir()).expect("the recordings load");
    for (rec, (name, results, folds)) in recs.iter().zip(calibrated_held_out()) {
        let aa: Vec<&JobResult> = results.iter().filter(|r| !r.planted).collect();
        let n = aa.len();
        assert!(n >= 20, "{name}: {n} held-out A/A jobs");
        let undecided: Vec<String> = aa
            .iter()
            .filter(|r| r.outcome == Outcome::Undecided)
            .map(|r| format!("{}: {:?}", r.name, r.undecided))
            .collect();
        assert!(
            undecided.len() <= (n / 20).max(1),
            "{name}: {} of {n} held-out A/A jobs undecided: {undecided:?}",
            undecided.len()
        );
        let failed = aa.iter().filter(|r| r.outcome == Outcome::Failed).count();
        assert!(failed <= (n / 50).max(1), "{name}: {failed} of {n} failed");
        let planted: Vec<&JobResult> = results.iter().filter(|r| r.planted).collect();
        for (id, metric) in PLANTED {
            let cv = confirm::between_cv(rec, id, metric).expect("the metric ran");
            if cv > 0.03 {
                continue;
            }
            let v: Vec<Option<Verdict>> = planted.iter().map(|r| r.verdict(id, metric)).collect();
            let hit = v.iter().filter(|x| **x == Some(Verdict::Regressed)).count();
            assert!(
                hit * 10 >= planted.len() * 8 && !v.contains(&Some(Verdict::Unchanged)),
                "{name}: {id} {metric} (CV {:.1}%): {v:?}",
                cv * 100.0
            );
        }
        for (i, o) in &folds {
            let r = confirm::replay_planted(
                rec,
                *i,
                HISTORY,
                DEFAULT_BUDGET,
                o,
                ("cpu.linpack", "flops", 0.75),
            );
            let v = r.verdict("cpu.linpack", "flops");
            assert!(
                matches!(v, Some(Verdict::Regressed | Verdict::Undecided)),
                "{name} {}: LINPACK −25% judged {v:?}",
                r.name
            );
        }
    }
}
