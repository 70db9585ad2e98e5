//! Prints the two-stage gate's rates on the recorded CI jobs of
//! `benches/data/confirm/` (see `benchsuite_benches::confirm`):
//!
//! ```sh
//! cargo run --release -p benchsuite-benches --example confirm_rates [DIR]
//! ```
//!
//! Each job is replayed once (deterministic): the screen against the
//! newest 5 or 10 quick passes of the base build before it, alone and
//! followed by a confirmation on the job's own recorded pairs. Every rate
//! comes with its exact 95% interval and the number of jobs behind it.

use benchsuite_benches::confirm::{self, JobResult, PLANTED, interval95};
use benchsuite_report::compare::confirm::DEFAULT_BUDGET;
use benchsuite_report::compare::{CompareOptions, Outcome};

fn rate(k: usize, n: usize) -> String {
    let (lo, hi) = interval95(k, n);
    format!(
        "{k}/{n} = {:.1}% [{:.1}, {:.1}]",
        100.0 * k as f64 / n.max(1) as f64,
        lo * 100.0,
        hi * 100.0
    )
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(confirm::data_dir);
    let recs = confirm::load(&dir).expect("the recordings load");
    let o = CompareOptions::default();
    for rec in &recs {
        println!(
            "\n## {} ({} history runs, {} jobs: {} A/A, {} planted; {} pairs each)\n",
            rec.name,
            rec.history.len(),
            rec.jobs.len(),
            rec.jobs.iter().filter(|j| !j.planted).count(),
            rec.jobs.iter().filter(|j| j.planted).count(),
            rec.jobs.first().map_or(0, confirm::recorded_pairs),
        );
        println!(
            "| history | stage | A/A failed (a metric regressed) | A/A undecided | A/A passed | pairs used (median, max) |"
        );
        println!("|---:|---|---|---|---|---|");
        let mut all: Vec<(usize, usize, Vec<JobResult>)> = Vec::new();
        for h in [5, 10] {
            for budget in [0, DEFAULT_BUDGET] {
                let results: Vec<JobResult> = (0..rec.jobs.len())
                    .filter(|&i| confirm::history_before(rec, i).len() >= h)
                    .map(|i| confirm::replay(rec, i, h, budget, &o))
                    .collect();
                let aa: Vec<&JobResult> = results.iter().filter(|r| !r.planted).collect();
                let n = aa.len();
                let count = |x: Outcome| aa.iter().filter(|r| r.outcome == x).count();
                let mut pairs: Vec<usize> = aa.iter().map(|r| r.pairs).collect();
                pairs.sort_unstable();
                println!(
                    "| {h} | {} | {} | {} | {} | {}, {} |",
                    if budget == 0 {
                        "screen alone".to_string()
                    } else {
                        format!("screen + confirm (budget {budget})")
                    },
                    rate(count(Outcome::Failed), n),
                    rate(count(Outcome::Undecided), n),
                    rate(count(Outcome::Passed), n),
                    pairs.get(n / 2).copied().unwrap_or(0),
                    pairs.last().copied().unwrap_or(0),
                );
                all.push((h, budget, results));
            }
        }
        println!("\nWhat failed or stayed undecided in A/A jobs:\n");
        for (h, budget, results) in &all {
            for r in results.iter().filter(|r| !r.planted) {
                if r.outcome != Outcome::Passed {
                    println!(
                        "- h {h}, budget {budget}, {}: {} (regressed {:?}; undecided {:?})",
                        r.name,
                        r.outcome.as_str(),
                        r.regressed,
                        r.undecided
                    );
                }
            }
        }
        println!("\nPlanted slowdowns: % of planted jobs whose metric ended regressed\n");
        println!("| history | stage | planted metric | regressed | undecided | unchanged |");
        println!("|---:|---|---|---|---|---|");
        for (h, budget, results) in &all {
            let planted: Vec<&JobResult> = results.iter().filter(|r| r.planted).collect();
            let n = planted.len();
            for (id, metric) in PLANTED {
                let verdict = |r: &JobResult| {
                    r.comparison
                        .metrics
                        .iter()
                        .find(|m| m.id == id && m.metric == metric && m.gated)
                        .map(|m| m.verdict)
                };
                let count = |v| planted.iter().filter(|r| verdict(r) == Some(v)).count();
                use benchsuite_report::compare::Verdict::*;
                println!(
                    "| {h} | {} | {id} {metric} | {} | {} | {} |",
                    if *budget == 0 {
                        "screen alone"
                    } else {
                        "two-stage"
                    },
                    rate(count(Regressed), n),
                    rate(count(Undecided), n),
                    rate(count(Unchanged), n),
                );
            }
        }
    }
}
