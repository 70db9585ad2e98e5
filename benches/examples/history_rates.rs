//! Prints the proof of `benchsuite history` on the recorded noise
//! (`benches/data/noise/`): false change points per series, planted −25%
//! steps (delay, size), LINPACK pinned at its slow level, a +3%-per-5-runs
//! drift. `cargo run --release -p benchsuite-benches --example history_rates`.

use benchsuite_benches::history;
use benchsuite_benches::trace::{data_dir, load};
use benchsuite_benches::{e2e, history::quiet};
use benchsuite_report::trend::TrendOptions;

fn main() {
    let machines = load(&data_dir()).expect("the noise traces");
    held_out();

    for m in &machines {
        let n = m.runs.len();
        let q = history::quiet(m);
        let cps: usize = q.series.iter().map(|s| s.2).sum();
        let regs: usize = q.series.iter().map(|s| s.3).sum();
        println!(
            "\n## {} ({} runs, {} gated series): {cps} false change points ({regs} regressions)",
            m.name,
            n,
            q.series.len()
        );
        for (k, mt, c, r) in q.series.iter().filter(|s| s.2 > 0) {
            println!("  unplanted {k} {mt}: {c} change point(s), {r} regression(s)");
        }
        if n < 12 {
            println!("  (too few runs to plant a step and watch it)");
            continue;
        }
        let from = n - 10;
        println!("  planted: 25% worse from run {} on", from + 1);
        for f in history::steps(m, from, 1.0 / 3.0) {
            println!(
                "  step {:<45} {:<12} delay {:>7}  at {:>3}  step {:>7} (planted {:+.1}%)",
                f.key.split(' ').next().unwrap_or(""),
                f.metric,
                f.delay.map_or("missed".into(), |d| format!("{d} runs")),
                f.offset.map_or("-".into(), |o| format!("{o:+}")),
                f.step.map_or("-".into(), |s| format!("{:+.1}%", s * 100.0)),
                f.planted * 100.0
            );
        }
        let at = (n - 5).max(12);
        if let Some((f, slow)) = history::linpack_into_slow_state(m, at) {
            println!(
                "  LINPACK pinned at its slow level ({:.1} GFLOP/s, {:+.1}% of its usual) from run {}: delay {}, at {}, step {}",
                slow / 1e9,
                f.planted * 100.0,
                at + 1,
                f.delay.map_or("missed".into(), |d| format!("{d} runs")),
                f.offset.map_or("-".into(), |o| format!("{o:+}")),
                f.step.map_or("-".into(), |s| format!("{:+.1}%", s * 100.0)),
            );
        }
        let from = n / 3;
        let drift = history::drifts(m, from, 5, 0.03);
        let found = drift.iter().filter(|d| d.2.is_some()).count();
        println!(
            "  drift +3% per 5 runs from run {}: a regression change point in {found} of {} series",
            from + 1,
            drift.len()
        );
        for (k, mt, first) in &drift {
            println!(
                "    {} {mt}: {}",
                k.split(' ').next().unwrap_or(""),
                first.map_or("not found".into(), |r| format!("first at run {r}"))
            );
        }
    }
}

/// False change points on the Zen 5 recordings' base runs
/// (`benches/data/e2e/*/hist.list`): unplanted series recorded after the
/// method was chosen.
fn held_out() {
    let recs = e2e::load(&e2e::data_dir()).expect("the e2e recordings");
    let (mut series, mut points, mut regs, mut regs_gate) = (0, 0, 0, 0);
    let (mut alarms, mut alarms_gate, mut jobs) = (0, 0, 0);
    println!("## held out: the Zen 5 recordings' base runs (A/A, unplanted)");
    for r in &recs {
        let m = e2e::base_runs(r).expect("the base runs");
        let q = quiet(&m);
        let c: usize = q.series.iter().map(|s| s.2).sum();
        let g: usize = q.series.iter().map(|s| s.3).sum();
        println!(
            "  {} ({} runs, {} gated series): {c} change points ({g} regressions)",
            r.name,
            m.runs.len(),
            q.series.len()
        );
        let history = e2e_history_runs(r);
        for (k, mt, at, step, g) in &q.found {
            println!(
                "    {:<20} {mt:<12} at run {:>2} ({}) {:+.1}%{}",
                k.split(' ').next().unwrap_or(""),
                at + 1,
                if *at == history {
                    "the first job"
                } else if *at < history {
                    "in the history"
                } else {
                    "among the jobs"
                },
                step * 100.0,
                if *g { " regression" } else { "" }
            );
        }
        series += q.series.len();
        points += c;
        regs += g;
        let gate = TrendOptions {
            rules: r.rules.clone(),
            ..Default::default()
        };
        let q = history::quiet_with(&m, &gate);
        let g2: usize = q.series.iter().map(|s| s.3).sum();
        regs_gate += g2;
        let (a, j) = history::nightly_alarms(&m, 20, 60, &TrendOptions::default());
        let (a2, j2) = history::nightly_alarms(&m, 20, 60, &gate);
        (alarms, alarms_gate, jobs) = (alarms + a, alarms_gate + a2, jobs + j);
        assert_eq!(j, j2);
        println!(
            "    at the recording's thresholds file: {g2} regressions; a job after each run from the 20th: alarmed {a} of {j} (5%), {a2} of {j2} (thresholds file)"
        );
        let from = m.runs.len() - 10;
        let found = history::steps(&m, from, 1.0 / 3.0);
        let mut delays: Vec<usize> = found.iter().filter_map(|f| f.delay).collect();
        delays.sort_unstable();
        let missed: Vec<String> = found
            .iter()
            .filter(|f| f.delay.is_none())
            .map(|f| format!("{} {}", f.key.split(' ').next().unwrap_or(""), f.metric))
            .collect();
        println!(
            "    planted 25% worse from run {}: found in {} of {} series, delay {} runs (median {}), missed: {}",
            from + 1,
            delays.len(),
            found.len(),
            delays
                .first()
                .map_or("-".into(), |d| format!("{d}–{}", delays[delays.len() - 1])),
            delays
                .get(delays.len() / 2)
                .map_or("-".into(), |d| d.to_string()),
            if missed.is_empty() {
                "none".into()
            } else {
                missed.join(", ")
            }
        );
    }
    println!(
        "  in all: {points} change points ({regs} regressions at 5%, {regs_gate} at the thresholds files) in {series} series"
    );
    println!(
        "  scheduled jobs that alarmed: {alarms} of {jobs} at 5%, {alarms_gate} of {jobs} at the thresholds files (6 recordings: the jobs of one overlap)"
    );
}

/// How many of a recording's base runs are its history (run back to back
/// before the first job); the rest are the A/A jobs' screen runs.
fn e2e_history_runs(r: &e2e::E2eRecording) -> usize {
    std::fs::read_to_string(r.dir.join("hist.list"))
        .map(|t| t.lines().filter(|l| l.starts_with("history/")).count())
        .unwrap_or(0)
}
