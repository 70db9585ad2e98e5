//! The targets of `compare`'s verdict rule, checked on the deterministic
//! simulation that `cargo run --release -p benchsuite-benches --example
//! compare_error_rates` prints in full: false "regressed" ≤ 1% at CV ≤ 5%
//! with runs 5 × rounds 3, even with 3% drift between rounds; detection
//! ≥ 90% of a true +10% at CV 3% with runs 5 × rounds 3; and a true change
//! exactly at the threshold called regressed about alpha (5%) of the time.

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
fn false_regressions_stay_under_one_percent_at_cv_up_to_5_with_drift() {
    for name in [
        "iid CV 1%",
        "iid CV 3%",
        "iid CV 5%",
        "drift 3%, CV 1%",
        "drift 3%, CV 3%",
        "drift 3%, CV 5%",
    ] {
        let (mi, m) = model(name);
        let (r, _) = rates(seed(mi, 3, 0), m, 5, 3, CHANGES[0], TRIALS);
        assert!(
            r <= 0.01,
            "{name}, rounds 3: {:.2}% false regressions",
            r * 100.0
        );
    }
}

#[test]
fn a_true_ten_percent_regression_is_detected_nine_times_in_ten() {
    let (mi, m) = model("iid CV 3%");
    let (r, _) = rates(seed(mi, 3, 3), m, 5, 3, CHANGES[3], TRIALS);
    assert!(r >= 0.90, "detected {:.1}%", r * 100.0);
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
fn a_change_at_the_threshold_is_called_regressed_about_alpha_of_the_time() {
    // The rule's promise: a true change exactly at the threshold is called
    // regressed about alpha (5%) of the time. Measured 2.6-5.4% without
    // drift (4000 pairs: ±0.7% at 2 standard errors); drift between rounds
    // that the F-test misses at 3 rounds pushes it to 6-8%.
    assert_eq!(CHANGES[2], 0.05);
    for (mi, m) in MODELS.iter().enumerate() {
        for rounds in [1, 3, 5] {
            if m.drift > 0.0 && rounds == 1 {
                continue; // drift between two single-round reports is invisible
            }
            let bound = if m.drift > 0.0 { 0.09 } else { 0.06 };
            let (r, _) = rates(seed(mi, rounds, 2), m, 5, rounds, CHANGES[2], TRIALS);
            assert!(r <= bound, "{}, rounds {rounds}: {:.2}%", m.name, r * 100.0);
        }
    }
}
