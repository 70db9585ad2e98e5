//! Prints the rates of the recorded end-to-end CI jobs of
//! `benches/data/e2e/` (see `benchsuite_benches::e2e`), each with its
//! exact 95% interval and the number of jobs behind it:
//!
//! ```sh
//! cargo run --release -p benchsuite-benches --example e2e_rates [DIR]
//! ```

use benchsuite_benches::confirm::rate;
use benchsuite_benches::e2e;
use benchsuite_report::compare::{Outcome, Verdict};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(e2e::data_dir);
    for rec in e2e::load(&dir).expect("the recordings load") {
        let aa: Vec<_> = rec.jobs.iter().filter(|j| !j.planted).collect();
        let n = aa.len();
        let count = |o: Outcome| aa.iter().filter(|j| j.comparison.outcome == o).count();
        println!(
            "\n## {} ({} jobs: {n} A/A, {} planted; thresholds: {} raised)\n",
            rec.name,
            rec.jobs.len(),
            rec.jobs.len() - n,
            rec.rules.len()
        );
        println!(
            "A/A: failed {}, undecided {}, passed {}",
            rate(count(Outcome::Failed), n),
            rate(count(Outcome::Undecided), n),
            rate(count(Outcome::Passed), n)
        );
        for j in aa
            .iter()
            .filter(|j| j.comparison.outcome != Outcome::Passed)
        {
            let open: Vec<String> = j
                .comparison
                .metrics
                .iter()
                .filter(|m| m.gated && matches!(m.verdict, Verdict::Undecided | Verdict::Regressed))
                .map(|m| format!("{} {} {} {}", m.id, m.metric, m.verdict, m.change_text()))
                .collect();
            println!(
                "- {}: {} ({})",
                j.name,
                j.comparison.outcome.as_str(),
                open.join("; ")
            );
        }
        let planted: Vec<_> = rec.jobs.iter().filter(|j| j.planted).collect();
        let planted_metrics = if planted.is_empty() {
            &[][..]
        } else {
            &[
                ("os.syscall", "time_per_op"),
                ("cpu.prime", "events"),
                ("mem.bandwidth", "bandwidth"),
            ][..]
        };
        for &(id, metric) in planted_metrics {
            let v: Vec<String> = planted
                .iter()
                .filter_map(|j| {
                    j.comparison
                        .metrics
                        .iter()
                        .find(|m| m.gated && m.id == id && m.metric == metric)
                        .map(|m| format!("{} {}", m.verdict, m.change_text()))
                })
                .collect();
            let hit = v.iter().filter(|x| x.starts_with("regressed")).count();
            println!(
                "planted {id} {metric}: regressed {} ({})",
                rate(hit, planted.len()),
                v.join(", ")
            );
        }
        if !planted.is_empty() {
            let failed = planted
                .iter()
                .filter(|j| j.comparison.outcome == Outcome::Failed)
                .count();
            println!("planted jobs failed: {}", rate(failed, planted.len()));
        }
        for (k, (_, c)) in rec.stress.iter().enumerate() {
            let v: Vec<String> = c
                .metrics
                .iter()
                .filter(|m| m.gated && (m.id.starts_with("cpu.") || m.id.starts_with("mem.")))
                .map(|m| format!("{} {} {}", m.id, m.verdict, m.change_text()))
                .collect();
            println!(
                "stress-ng --cpu 2, s{} (screen alone): {}; {}",
                k + 1,
                c.outcome.as_str(),
                v.join("; ")
            );
        }
        let mut walls: Vec<f64> = rec.jobs.iter().map(|j| j.wall_s).collect();
        walls.sort_by(f64::total_cmp);
        let mut pairs: Vec<usize> = rec
            .jobs
            .iter()
            .map(|j| j.comparison.confirmation.as_ref().map_or(0, |c| c.pairs))
            .collect();
        pairs.sort_unstable();
        println!(
            "compare with the confirmation: {:.1} s median, {:.1}–{:.1} s; pairs median {}, max {}",
            walls[walls.len() / 2],
            walls[0],
            walls[walls.len() - 1],
            pairs[pairs.len() / 2],
            pairs[pairs.len() - 1]
        );
    }
}
