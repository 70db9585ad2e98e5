//! The promises of `compare`'s verdict rule against one baseline (the
//! interval rule), checked on the deterministic simulation that `cargo run
//! --release -p benchsuite-benches --example compare_error_rates` prints in
//! full: a true change exactly at the threshold called regressed about
//! alpha (1%) of the time and unchanged at most beta (5%) of the time;
//! detection ≥ 90% of a true +10% at CV 3% with runs 5 × rounds 3; an
//! unchanged run at CV 1% called unchanged (not undecided) nearly always.
//! Each bound is the promise plus two standard errors of a rate from
//! these trials (at 4000: ±0.3% at 1%, ±0.7% at 5%), so each can fail.

use benchsuite_benches::error_rates::{CHANGES, MODELS, rates, seed};

const TRIALS: usize = 4000;

fn model(name: &str) -> (usize, &'static benchsuite_benches::error_rates::Model) {
    MODELS
        .iter()
        .enumerate()
        .find(|(_, m)| m.name == name)
        .expect("a model of the table")
}

#[test]
fn an_unchanged_quiet_run_is_called_unchanged_not_undecided() {
    // CV 1%, runs 5 × rounds 3: the worse-side bound of an A/A change is
    // a few tenths of a percent, far inside 5%: undecided would be a
    // failure to use the evidence.
    // (With 3% drift between rounds the round is the unit of evidence,
    // and three rounds leave an A/A change undecided about two times in
    // three: the example's table shows it.)
    let (mi, m) = model("iid CV 1%");
    let (r, same) = rates(seed(mi, 3, 0), m, 5, 3, CHANGES[0], TRIALS);
    assert!(r == 0.0, "{:.2}% false regressions", r * 100.0);
    assert!(same >= 0.99, "unchanged {:.1}%", same * 100.0);
}

#[test]
fn a_true_ten_percent_regression_is_detected_nine_times_in_ten() {
    // At alpha 1% one baseline needs 5 rounds of 5 samples at CV 3% (3
    // rounds: about 75%; the example's table).
    let (mi, m) = model("iid CV 3%");
    let (r, _) = rates(seed(mi, 5, 3), m, 5, 5, CHANGES[3], TRIALS);
    let margin = 2.0 * (0.9 * 0.1 / TRIALS as f64).sqrt();
    assert!(r >= 0.90 - margin, "detected {:.1}%", r * 100.0);
}

#[test]
fn drift_between_single_round_reports_is_why_rounds_exist() {
    // With one round per report, 3% drift between the two runs cannot be
    // seen inside either, and false alarms appear; the table documents
    // this, and this test keeps the documentation honest.
    let (mi, m) = model("drift 3%, CV 1%");
    let (one, _) = rates(seed(mi, 1, 0), m, 5, 1, 0.0, TRIALS);
    let (three, _) = rates(seed(mi, 3, 0), m, 5, 3, 0.0, TRIALS);
    assert!(
        one > 0.03 && three < 0.01,
        "rounds 1: {one}, rounds 3: {three}"
    );
}

#[test]
fn a_change_at_the_threshold_is_regressed_about_alpha_and_unchanged_at_most_beta() {
    // The rule's promises: a true change exactly at the threshold is
    // called regressed at most alpha (1%) of the time, and unchanged at
    // most beta (5%) of the time (whatever the noise: a change the
    // evidence cannot place is undecided). Drift between rounds that the
    // F-test misses at 3 rounds widens both a little.
    assert_eq!(CHANGES[2], 0.05);
    let se = |p: f64| 2.0 * (p * (1.0 - p) / TRIALS as f64).sqrt();
    let mut calibrated = 0;
    for (mi, m) in MODELS.iter().enumerate() {
        for rounds in [1, 3, 5] {
            if m.drift > 0.0 && rounds == 1 {
                continue; // drift between two single-round reports is invisible
            }
            // Drift the F-test misses at 3 rounds and a heavy tail break
            // the interval's model: measured up to 3% and 7%.
            let (alpha, beta) = if m.drift > 0.0 || m.tail > 0.0 {
                (0.03, 0.07)
            } else {
                (0.01, 0.05)
            };
            let (r, same) = rates(seed(mi, rounds, 2), m, 5, rounds, CHANGES[2], TRIALS);
            assert!(
                r <= alpha + se(alpha),
                "{}, rounds {rounds}: regressed {:.2}%",
                m.name,
                r * 100.0
            );
            assert!(
                same <= beta + se(beta),
                "{}, rounds {rounds}: unchanged {:.2}%",
                m.name,
                same * 100.0
            );
            // Not vacuous: on iid noise at rounds 3 and 5 the interval is
            // about right, so the rate is near alpha, not far below it.
            if m.drift == 0.0 && m.tail == 0.0 && rounds > 1 && r >= 0.0025 {
                calibrated += 1;
            }
        }
    }
    assert!(calibrated >= 4, "only {calibrated} cells near alpha");
}
