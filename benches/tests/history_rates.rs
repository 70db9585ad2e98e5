//! The targets of `benchsuite history` (issue 39) on the recorded noise
//! (`benches/data/noise/`); `--example history_rates` prints the figures.
//!
//! The margins follow from the number of independent series: 42 gated
//! series (21 per machine, two machines) are tested at 1% each, so under
//! no change about 0.42 false change points are expected and 3 or more
//! have a binomial probability near 1%; machine states that outlast a run
//! add to that, which is what the bound of 2 leaves room for.

use benchsuite_benches::history::{self, SLACK};
use benchsuite_benches::trace::{data_dir, load};

fn machines() -> Vec<benchsuite_benches::trace::Machine> {
    load(&data_dir()).expect("the noise traces")
}

/// The machine with a long enough history to plant a step and watch it.
fn long_machine() -> benchsuite_benches::trace::Machine {
    machines()
        .into_iter()
        .find(|m| m.runs.len() >= 20)
        .expect("a machine with 20 runs")
}

#[test]
fn the_recorded_noise_has_almost_no_change_point_and_no_regression() {
    let mut series = 0;
    let mut points = 0;
    for m in machines() {
        let q = history::quiet(&m);
        series += q.series.len();
        points += q.series.iter().map(|s| s.2).sum::<usize>();
        let regressions: Vec<_> = q.series.iter().filter(|s| s.3 > 0).collect();
        assert!(regressions.is_empty(), "{}: {regressions:?}", m.name);
    }
    assert!(series >= 40, "{series} series");
    assert!(
        points <= 2,
        "{points} false change points in {series} series"
    );
}

#[test]
fn a_quarter_worse_step_is_found_within_six_runs_and_measured_within_a_few_points() {
    let m = long_machine();
    let from = m.runs.len() - 10;
    let found = history::steps(&m, from, 1.0 / 3.0);
    assert!(found.len() >= 18, "{} plantable series", found.len());
    let hit: Vec<_> = found.iter().filter(|f| f.delay.is_some()).collect();
    // Every series but one may miss (net.latency's rtt, whose slow states
    // before the step are larger than it): at least 90%.
    assert!(
        hit.len() * 10 >= found.len() * 9,
        "{} of {} found",
        hit.len(),
        found.len()
    );
    for f in &hit {
        assert!(
            f.delay.unwrap() <= 6,
            "{} {}: delay {:?}",
            f.key,
            f.metric,
            f.delay
        );
        let off = f.offset.expect("found with every run");
        assert!(off.unsigned_abs() as usize <= SLACK);
        // Where the change point is the planted run, its size is within 5
        // points; a state just before the step (mem.latency's slow runs)
        // moves it and adds that state's few points to the step.
        let err = (f.step.unwrap() - f.planted).abs();
        let bound = if off == 0 { 0.05 } else { 0.08 };
        assert!(
            err <= bound,
            "{} {}: {:?} vs {}",
            f.key,
            f.metric,
            f.step,
            f.planted
        );
    }
}

#[test]
fn linpack_pinned_at_its_slow_level_is_found() {
    let m = long_machine();
    let (f, _) = history::linpack_into_slow_state(&m, m.runs.len() - 5).expect("a LINPACK series");
    // A regression into a level the history once held, caught once five
    // runs sit at it, where it starts.
    assert!(
        f.planted < -0.15,
        "the slow level is {:+.1}%",
        f.planted * 100.0
    );
    assert!(f.delay.is_some_and(|d| d <= 5), "{f:?}");
    assert_eq!(f.offset, Some(0), "{f:?}");
    assert!((f.step.unwrap() - f.planted).abs() <= 0.05, "{f:?}");
}

#[test]
fn a_slow_drift_is_seen_in_some_series_and_said_honestly() {
    let m = long_machine();
    let d = history::drifts(&m, m.runs.len() / 3, 5, 0.03);
    let found = d.iter().filter(|x| x.2.is_some()).count();
    // +3% every 5 runs (12.6% by the end) in series whose runs differ by
    // 2–20%: the quiet ones show it (measured: 9 of 21 on zen4-b).
    assert!(found >= 6, "{found} of {}", d.len());
}

/// Held out: the Zen 5 recordings' base runs (`benches/data/e2e/*/hist.list`,
/// A/A series of one build each, recorded after the method was chosen on
/// `benches/data/noise/`). Their machine states shift by 1–6% (tcp by 18%)
/// within minutes, so change points are found (53 in 126 series) and at a
/// flat 5% seven of them are regressions; at each recording's thresholds
/// file (`history --thresholds`, the gate's own) none is. A scheduled job
/// after each run from the 20th alarmed 1 of 168 times there (3 at 5%); the
/// jobs of one recording overlap, so the independent units are the 6
/// recordings: the bound allows 3.
#[test]
fn held_out_series_at_the_gates_thresholds_alarm_rarely() {
    use benchsuite_benches::e2e;
    use benchsuite_report::trend::TrendOptions;
    let recs = e2e::load(&e2e::data_dir()).expect("the e2e recordings");
    assert!(recs.len() >= 6, "{} recordings", recs.len());
    let (mut series, mut regressions, mut alarms, mut jobs) = (0, 0, 0, 0);
    for r in &recs {
        let m = e2e::base_runs(r).expect("the base runs");
        let gate = TrendOptions {
            rules: r.rules.clone(),
            ..Default::default()
        };
        let q = history::quiet_with(&m, &gate);
        series += q.series.len();
        regressions += q.series.iter().map(|s| s.3).sum::<usize>();
        let (a, j) = history::nightly_alarms(&m, 20, 60, &gate);
        alarms += a;
        jobs += j;
    }
    assert!(series >= 120 && jobs >= 150, "{series} series, {jobs} jobs");
    assert!(
        regressions <= 1,
        "{regressions} regressions in {series} series"
    );
    assert!(alarms <= 3, "{alarms} of {jobs} scheduled jobs alarmed");
}
