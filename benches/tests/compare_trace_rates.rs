//! The history gate's targets, checked on the recorded real A/A noise in
//! `benches/data/noise/` (see `benchsuite_benches::trace`; `cargo run
//! --release -p benchsuite-benches --example compare_trace_rates` prints
//! the whole table):
//!
//! - the job's A/A false alarm (any gated metric of the quick pass
//!   regressed) at most 5% with a 5-run history and at most 1% with 10;
//! - a planted +10% in a headline metric whose between-run CV is at most
//!   1% detected at least 90% of the time with a 10-run history, and +20%
//!   with a 5-run history (pooled over the metrics of the class, on
//!   machines with enough runs for the history and a new run).
//!
//! The classes reach to CV 2% (+10%) and 3% (+20%); there the
//! measured rates fall short (docs/compare.md: a metric whose history
//! holds recurring slow rounds, as `cpu.flops` on the later runs of
//! `zen4-b`, is judged as being in a state the history has seen), so those
//! classes are printed by the example, not asserted here.
//!
//! Fewer draws than the example (a debug build): each target is checked
//! with a margin of two standard errors of its estimate from these draws
//! (at 300 draws: 5% + 2.5%, 1% + 1.1%); the example's figures, from more
//! draws, are the ones `docs/compare.md` quotes.

use benchsuite_benches::trace::{self, Machine};
use benchsuite_report::compare::CompareOptions;

const DRAWS: usize = 300;

fn machines() -> Vec<Machine> {
    let m = trace::load(&trace::data_dir()).expect("the traces load");
    assert!(m.len() >= 2, "two traced machines");
    for x in &m {
        assert!(x.runs.len() >= 8, "{}: {} runs", x.name, x.runs.len());
    }
    m
}

#[test]
fn the_jobs_false_alarms_stay_under_target_on_real_noise() {
    let o = CompareOptions::default();
    for (mi, m) in machines().iter().enumerate() {
        for (h, bound) in [(5, 0.05), (10, 0.01)] {
            if h + 1 > m.runs.len() {
                eprintln!(
                    "{}: {} runs, too few for a {h}-run history and a new run: not checked",
                    m.name,
                    m.runs.len()
                );
                continue;
            }
            let (alarms, who) = trace::aa_random(m, h, DRAWS, trace::seed(mi, h, 0, 0), &o);
            let rate = alarms as f64 / DRAWS as f64;
            let margin = 2.0 * (bound * (1.0 - bound) / DRAWS as f64).sqrt();
            assert!(
                rate <= bound + margin,
                "{}: history {h}: {alarms}/{DRAWS} A/A gates failed: {who:?}",
                m.name
            );
        }
    }
}

#[test]
fn planted_changes_are_caught_where_the_noise_allows() {
    let o = CompareOptions::default();
    for (mi, m) in machines().iter().enumerate() {
        for (h, pct, max_cv) in [(10, 10, 0.01), (5, 20, 0.01)] {
            if h + 1 > m.runs.len() || (h == 10 && m.runs.len() < 15) {
                eprintln!(
                    "{}: {} runs, too few to draw {h}-run histories from: not checked",
                    m.name,
                    m.runs.len()
                );
                continue;
            }
            let (mut hit, mut n) = (0, 0);
            let mut misses = Vec::new();
            for (i, hl) in trace::headlines(m).iter().enumerate() {
                if hl.between_cv > max_cv {
                    continue;
                }
                let k = trace::detect(
                    m,
                    hl,
                    h,
                    pct as f64 / 100.0,
                    DRAWS / 3,
                    trace::seed(mi, h, pct, i),
                    &o,
                );
                if k < DRAWS / 3 {
                    misses.push(format!("{} {}: {k}/{}", hl.key, hl.metric, DRAWS / 3));
                }
                hit += k;
                n += DRAWS / 3;
            }
            let rate = hit as f64 / n.max(1) as f64;
            let margin = 2.0 * (0.9 * 0.1 / n.max(1) as f64).sqrt();
            assert!(
                n == 0 || rate >= 0.90 - margin,
                "{}: history {h}, +{pct}% at CV <= {max_cv}: detected {:.1}% ({misses:?})",
                m.name,
                rate * 100.0
            );
        }
    }
}
