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

use benchsuite_benches::confirm::{self, JobResult, PLANTED, rate};
use benchsuite_report::compare::confirm::DEFAULT_BUDGET;
use benchsuite_report::compare::{CompareOptions, Outcome};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(confirm::data_dir);
    let recs = confirm::load(&dir).expect("the recordings load");
    // The default 5% everywhere, and a threshold per metric from the
    // recorded noise of another machine (zen4-b, held out).
    let traced = benchsuite_benches::trace::load(&benchsuite_benches::trace::data_dir())
        .expect("the traces load");
    let zen4b = traced.iter().find(|m| m.name == "zen4-b").expect("zen4-b");
    let policy = confirm::threshold_policy(zen4b);
    println!(
        "threshold policy from zen4-b (3 × between-run CV, at least 5%): {}",
        policy
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (label, o) in [
        ("default thresholds (5%)", CompareOptions::default()),
        (
            "thresholds from zen4-b's noise",
            CompareOptions {
                rules: policy.clone(),
                ..CompareOptions::default()
            },
        ),
    ] {
        println!("\n# {label}");
        report(&recs, &o);
    }
    // Thresholds calibrated on one half of this machine's A/A jobs (their
    // own interleaved pairs), rates on the other half's A/A jobs and on
    // every planted job (never calibrated on); then the halves swapped.
    for rec in &recs {
        for (fold, first_half) in [("up to job20", true), ("after job20", false)] {
            let early = |j: &confirm::Job| j.name.as_str() <= "job20";
            let c = confirm::calibrated(rec, |j| early(j) == first_half);
            println!(
                "\n# {}: thresholds calibrated on the A/A jobs {fold} ({} jobs, budget {}): {}",
                rec.name,
                c.jobs,
                c.options.budget,
                c.rules()
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let calibrated = CompareOptions {
                rules: c.rules(),
                ..CompareOptions::default()
            };
            let held: Vec<JobResult> = (0..rec.jobs.len())
                .filter(|&i| rec.jobs[i].planted || early(&rec.jobs[i]) != first_half)
                .filter(|&i| confirm::history_before(rec, i).len() >= 10)
                .map(|i| confirm::replay(rec, i, 10, DEFAULT_BUDGET, &calibrated))
                .collect();
            held_out(&held);
            // A regression into a state the history holds: LINPACK −25%
            // (zen4-b's slow level) in every round and pair of each
            // held-out A/A job, on its own noise.
            let linpack: Vec<_> = (0..rec.jobs.len())
                .filter(|&i| !rec.jobs[i].planted && early(&rec.jobs[i]) != first_half)
                .filter(|&i| confirm::history_before(rec, i).len() >= 10)
                .map(|i| {
                    confirm::replay_planted(
                        rec,
                        i,
                        10,
                        DEFAULT_BUDGET,
                        &calibrated,
                        ("cpu.linpack", "flops", 0.75),
                    )
                    .verdict("cpu.linpack", "flops")
                })
                .collect();
            let k = |v| linpack.iter().filter(|x| **x == Some(v)).count();
            use benchsuite_report::compare::Verdict;
            println!(
                "LINPACK −25% planted on held-out A/A jobs: regressed {}, undecided {}, unchanged {}",
                rate(k(Verdict::Regressed), linpack.len()),
                rate(k(Verdict::Undecided), linpack.len()),
                rate(k(Verdict::Unchanged), linpack.len())
            );
        }
    }
}

/// The rates of held-out jobs judged at calibrated thresholds.
fn held_out(held: &[JobResult]) {
    let aa: Vec<&JobResult> = held.iter().filter(|r| !r.planted).collect();
    let n = aa.len();
    let count = |x: Outcome| aa.iter().filter(|r| r.outcome == x).count();
    println!(
        "held-out A/A jobs (history 10, two-stage): failed {}, undecided {}, passed {}",
        rate(count(Outcome::Failed), n),
        rate(count(Outcome::Undecided), n),
        rate(count(Outcome::Passed), n)
    );
    for r in aa.iter().filter(|r| r.outcome != Outcome::Passed) {
        println!(
            "- {}: {} (regressed {:?}; undecided {:?})",
            r.name,
            r.outcome.as_str(),
            r.regressed,
            r.undecided
        );
    }
    let planted: Vec<&JobResult> = held.iter().filter(|r| r.planted).collect();
    for (id, metric) in PLANTED {
        let v: Vec<_> = planted.iter().map(|r| r.verdict(id, metric)).collect();
        let k = v
            .iter()
            .filter(|x| **x == Some(benchsuite_report::compare::Verdict::Regressed))
            .count();
        println!(
            "planted {id} {metric}: regressed {} ({v:?})",
            rate(k, planted.len())
        );
    }
}

fn report(recs: &[confirm::Recording], o: &CompareOptions) {
    for rec in recs {
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
                    .map(|i| confirm::replay(rec, i, h, budget, o))
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
                let count = |v| {
                    planted
                        .iter()
                        .filter(|r| r.verdict(id, metric) == Some(v))
                        .count()
                };
                use benchsuite_report::compare::Verdict::*;
                let cv = confirm::between_cv(rec, id, metric).unwrap_or(f64::NAN);
                println!(
                    "| {h} | {} | {id} {metric} (CV {:.1}%) | {} | {} | {} |",
                    if *budget == 0 {
                        "screen alone"
                    } else {
                        "two-stage"
                    },
                    cv * 100.0,
                    rate(count(Regressed), n),
                    rate(count(Undecided), n),
                    rate(count(Unchanged), n),
                );
            }
        }
        if !rec.stress.is_empty() {
            println!(
                "\nScreen runs with stress-ng --cpu 2 beside them, against the newest 10 runs: the cpu and mem records\n"
            );
            for (k, run) in rec.stress.iter().enumerate() {
                let c = confirm::screen_stress(rec, run, 10, o);
                let cells: Vec<String> = c
                    .metrics
                    .iter()
                    .filter(|m| m.gated && (m.id.starts_with("cpu.") || m.id.starts_with("mem.")))
                    .map(|m| format!("{} {} {} {}", m.id, m.metric, m.verdict, m.change_text()))
                    .collect();
                println!(
                    "- s{}: {}; {}",
                    k + 1,
                    c.outcome().as_str(),
                    cells.join("; ")
                );
            }
        }
    }
}
