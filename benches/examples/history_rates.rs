//! Prints the proof of `benchsuite history` on the recorded noise
//! (`benches/data/noise/`): false change points per series, planted −25%
//! steps (delay, size), LINPACK pinned at its slow level, a +3%-per-5-runs
//! drift. `cargo run --release -p benchsuite-benches --example history_rates`.

use benchsuite_benches::history;
use benchsuite_benches::trace::{data_dir, load};

fn main() {
    let machines = load(&data_dir()).expect("the noise traces");

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
