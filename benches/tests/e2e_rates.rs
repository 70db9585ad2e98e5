//! The recorded end-to-end CI jobs of `benches/data/e2e/` (see
//! `benchsuite_benches::e2e`; `cargo run --release -p benchsuite-benches
//! --example e2e_rates` prints the rates with their intervals). Each job is
//! one independent trial of the real command line; the bounds follow from
//! how many there are.

use benchsuite_benches::e2e::{self, E2eRecording};
use benchsuite_report::compare::{Outcome, Stage, Verdict};

fn recordings() -> Vec<E2eRecording> {
    let recs = e2e::load(&e2e::data_dir()).expect("the recordings load");
    assert!(!recs.is_empty(), "a recorded machine");
    recs
}

/// Today's screen judges every recorded job's screen run as the recorded
/// job did: a metric the screen decided there is decided the same way, and
/// one the confirmation decided was left open by the screen. A change to
/// the screen's rule shows here against real jobs.
#[test]
fn the_screen_judges_each_recorded_job_as_it_did() {
    for rec in recordings() {
        for job in &rec.jobs {
            let now = e2e::rescreen(&rec, job).expect("the job's screen");
            for m in job.comparison.metrics.iter().filter(|m| m.gated) {
                let again = now
                    .metrics
                    .iter()
                    .find(|x| x.key == m.key && x.metric == m.metric)
                    .unwrap_or_else(|| {
                        panic!("{} {}: {} {} gone", rec.name, job.name, m.key, m.metric)
                    });
                if m.stage == Some(Stage::Confirm) {
                    assert!(
                        matches!(again.verdict, Verdict::Undecided | Verdict::Regressed),
                        "{} {}: {} {} was confirmed, but the screen now calls it {}",
                        rec.name,
                        job.name,
                        m.key,
                        m.metric,
                        again.verdict
                    );
                } else {
                    assert_eq!(
                        again.verdict, m.verdict,
                        "{} {}: {} {}",
                        rec.name, job.name, m.key, m.metric
                    );
                }
            }
        }
    }
}

/// What the recorded jobs decided: no A/A job failed beyond
/// `max(1, n/50)` (the target is ≤ 1%); every job's exit code is its
/// outcome's; planted slowdowns in metrics at the default threshold
/// (quiet ones: `os.syscall`, `cpu.prime`) were regressed in ≥ 80% of
/// planted jobs and never passed as unchanged; and only metrics whose
/// calibrated threshold is above the default (the noisy ones) were ever
/// left undecided in an A/A job.
#[test]
fn recorded_jobs_fail_on_planted_slowdowns_and_never_on_a_copy() {
    let mut planted_jobs = 0;
    for rec in recordings() {
        let aa: Vec<_> = rec.jobs.iter().filter(|j| !j.planted).collect();
        let n = aa.len();
        assert!(n >= 30, "{}: {n} A/A jobs", rec.name);
        for j in &rec.jobs {
            assert_eq!(
                j.rc,
                j.comparison.outcome.exit_code(),
                "{} {}",
                rec.name,
                j.name
            );
        }
        let failed: Vec<&str> = aa
            .iter()
            .filter(|j| j.comparison.outcome == Outcome::Failed)
            .map(|j| j.name.as_str())
            .collect();
        assert!(failed.len() <= (n / 50).max(1), "{}: {failed:?}", rec.name);
        for j in &aa {
            for m in j
                .comparison
                .metrics
                .iter()
                .filter(|m| m.gated && m.verdict == Verdict::Undecided)
            {
                assert!(
                    rec.rules
                        .iter()
                        .any(|r| r.matches_id(&m.id) && r.matches_metric(&m.metric)),
                    "{} {}: {} {} undecided at the default threshold",
                    rec.name,
                    j.name,
                    m.key,
                    m.metric
                );
            }
        }
        let planted: Vec<_> = rec.jobs.iter().filter(|j| j.planted).collect();
        planted_jobs += planted.len();
        for (id, metric) in [("os.syscall", "time_per_op"), ("cpu.prime", "events")] {
            let v: Vec<Verdict> = planted
                .iter()
                .filter_map(|j| {
                    j.comparison
                        .metrics
                        .iter()
                        .find(|m| m.gated && m.id == id && m.metric == metric)
                        .map(|m| m.verdict)
                })
                .collect();
            let hit = v.iter().filter(|x| **x == Verdict::Regressed).count();
            assert!(
                hit * 10 >= planted.len() * 8 && !v.contains(&Verdict::Unchanged),
                "{}: {id} {metric}: {v:?}",
                rec.name
            );
        }
        // stress-ng --cpu 2 beside the run: every CPU record regressed.
        for (k, (_, c)) in rec.stress.iter().enumerate() {
            for m in c
                .metrics
                .iter()
                .filter(|m| m.gated && m.id.starts_with("cpu."))
            {
                assert_eq!(
                    m.verdict,
                    Verdict::Regressed,
                    "{} stress s{}: {} {}",
                    rec.name,
                    k + 1,
                    m.key,
                    m.metric
                );
            }
        }
    }
    assert!(planted_jobs >= 8, "{planted_jobs} planted jobs in all");
}

/// A recording that keeps its calibration jobs gated with exactly the
/// thresholds `calibrate` computes from them today.
#[test]
fn the_thresholds_file_is_what_calibrate_computes_from_its_jobs() {
    use benchsuite_report::compare::calibrate::{AaJob, CalibrateOptions, calibrate};
    let mut checked = 0;
    for rec in recordings() {
        let jobs = e2e::calibration_jobs(&rec).expect("the calibration jobs load");
        if jobs.is_empty() {
            continue;
        }
        let aa: Vec<AaJob<'_>> = jobs
            .iter()
            .map(|(name, base, new)| AaJob { name, base, new })
            .collect();
        let options = CalibrateOptions {
            undecided: rec.undecided,
            ..CalibrateOptions::default()
        };
        let c = calibrate(&aa, &options).expect("they calibrate");
        // As the file writes them (sorted by key, values as displayed).
        let text = |rules: &[benchsuite_report::compare::ThresholdRule]| {
            let mut v: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(text(&c.rules()), text(&rec.rules), "{}", rec.name);
        checked += 1;
    }
    assert!(checked > 0, "no recording keeps its calibration jobs");
}
