//! `compare` on arbitrary finite samples (issue 37 L3: samples of ±1e308
//! panicked in the t distribution's CDF): the input's bytes are read as
//! `f64`s (the non-finite ones left out: a report cannot hold them) and
//! dealt to an older baseline, a baseline and a new report; each
//! comparison (one baseline, paired rounds, a history) is a verdict or
//! "not judged" with its reason, never a panic. The stable suite runs the
//! same property with proptest: crates/report/tests/fuzz.rs
//! (`compare_judges_arbitrary_finite_samples_or_says_why_not`).
#![no_main]

use benchsuite_core::Report;
use benchsuite_report::CompareOptions;
use benchsuite_report::compare::{Baseline, compare, compare_history};
use libfuzzer_sys::fuzz_target;

const FIXTURE: &str = include_str!("../../crates/report/tests/fixtures/report-1.0.json");

fn report(samples: &[f64], rounds: bool, at: &str) -> Report {
    let mut r = Report::from_json(FIXTURE, "fixture.json").expect("the fixture reads");
    r.started_at = at.into();
    let m = &mut r.records[0].metrics[0];
    m.samples = samples.to_vec();
    if rounds {
        m.rounds = Some(vec![1; samples.len()]);
    }
    r
}

fuzz_target!(|data: &[u8]| {
    let [cut_a, cut_b, flags, rest @ ..] = data else {
        return;
    };
    let xs: Vec<f64> = rest
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .filter(|x| x.is_finite())
        .collect();
    let a = (*cut_a as usize * xs.len()) / 255;
    let b = a + (*cut_b as usize * (xs.len() - a)) / 255;
    let rounds = flags & 1 == 1;
    let old = report(&xs[..a], rounds, "2026-01-01T00:00:00Z");
    let base = report(&xs[a..b], rounds, "2026-01-02T00:00:00Z");
    let new = report(&xs[b..], rounds, "2026-01-03T00:00:00Z");
    let paired = CompareOptions {
        paired: true,
        ..CompareOptions::default()
    };
    for options in [CompareOptions::default(), paired] {
        let _ = compare(&base, &new, &options);
    }
    let history = [
        Baseline {
            name: "old",
            report: &old,
        },
        Baseline {
            name: "base",
            report: &base,
        },
    ];
    let _ = compare_history(&history, &new, &CompareOptions::default());
});
