//! Prints `compare`'s error rates on recorded real A/A noise (see
//! `benchsuite_benches::trace`):
//!
//! ```sh
//! cargo run --release -p benchsuite-benches --example compare_trace_rates [TRIALS]
//! ```
//!
//! Deterministic for the same traces and TRIALS (default 400 draws per
//! cell).

use benchsuite_benches::trace::{self, Machine};
use benchsuite_report::compare::{BetweenRun, CompareOptions, GateRule};

/// The between-run CV classes of the detection table (upper bounds).
const CV_BINS: [f64; 5] = [0.01, 0.02, 0.03, 0.05, 0.10];

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .map(|t| t.parse().expect("TRIALS is a number of draws per cell"))
        .unwrap_or(400);
    let machines = trace::load(&trace::data_dir()).expect("the traces load");
    let default = CompareOptions::default();
    let with_rule = |rule| CompareOptions {
        rule: Some(rule),
        ..CompareOptions::default()
    };
    // One baseline and no prior: the noise inside the two runs alone (as
    // before histories, but with roles and the family's Holm levels).
    let no_prior = CompareOptions {
        between_run: BetweenRun::Cv(0.0),
        ..CompareOptions::default()
    };
    for (mi, m) in machines.iter().enumerate() {
        println!(
            "\n## {} ({} runs, {} … {})\n",
            m.name,
            m.runs.len(),
            m.runs[0].started_at,
            m.runs[m.runs.len() - 1].started_at
        );
        println!(
            "A/A: gates failed (any gated metric regressed), {trials} random draws per cell; windows: in recorded order\n"
        );
        println!(
            "| history runs | rule | random draws | windows | metrics that alarmed (random draws) |"
        );
        println!("|---:|---|---:|---:|---|");
        let row = |h: usize, name: &str, o: &CompareOptions| {
            let (a, who) = trace::aa_random(m, h, trials, trace::seed(mi, h, 0, 0), o);
            let (wa, wn) = trace::aa_windows(m, h, o);
            let who: Vec<String> = who
                .iter()
                .take(4)
                .map(|((k, x), n)| format!("{k} {x} ({n})"))
                .collect();
            println!(
                "| {h} | {name} | {:.1}% ({a}/{trials}) | {wa}/{wn} | {} |",
                100.0 * a as f64 / trials as f64,
                who.join("; ")
            );
        };
        row(1, "interval, no prior", &no_prior);
        row(1, "interval + prior (default for 1)", &default);
        for h in [3, 5, 10] {
            if h + 1 > m.runs.len() {
                continue;
            }
            row(h, "band (default)", &default);
            row(h, "interval", &with_rule(GateRule::Interval));
            for tail in [0.05, 0.10] {
                let o = CompareOptions {
                    tail_threshold: tail,
                    ..CompareOptions::default()
                };
                row(h, &format!("band, tails at {:.0}%", tail * 100.0), &o);
            }
        }
        // AA_ONLY=1 skips the detection tables (the slow part).
        if std::env::var_os("AA_ONLY").is_none() {
            detection(m, mi, trials);
        }
    }
}

fn detection(m: &Machine, mi: usize, trials: usize) {
    let hls = trace::headlines(m);
    println!("\nHeadline metrics and their between-run CV (spread of run medians):\n");
    for hl in &hls {
        println!("- {} {}: {:.1}%", hl.key, hl.metric, hl.between_cv * 100.0);
    }
    if std::env::var_os("PER_METRIC").is_some() {
        println!(
            "\nPer metric, 10 baselines (or all but one), band rule, % called regressed at +5/+10/+20%:\n"
        );
        let h = 10.min(m.runs.len() - 1);
        for (i, hl) in hls.iter().enumerate() {
            let cells: Vec<String> = [5, 10, 20]
                .iter()
                .map(|&pct| {
                    let hit = trace::detect(
                        m,
                        hl,
                        h,
                        pct as f64 / 100.0,
                        trials,
                        trace::seed(mi, h, pct, i),
                        &CompareOptions::default(),
                    );
                    format!("{:.0}%", 100.0 * hit as f64 / trials as f64)
                })
                .collect();
            println!(
                "- {} {} (CV {:.1}%): {}",
                hl.key,
                hl.metric,
                hl.between_cv * 100.0,
                cells.join(" / ")
            );
        }
    }
    println!(
        "\nDetection of one planted change in one headline metric by the screen alone, {trials} random draws per metric: % called regressed / % called unchanged (a miss; the rest is undecided, for the pairs) (metrics in the class)\n"
    );
    println!("| history runs | rule | change | CV ≤ 1% | 1–2% | 2–3% | 3–5% | 5–10% | > 10% |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for h in [3, 5, 10] {
        if h + 1 > m.runs.len() {
            continue;
        }
        for (rule, name) in [(GateRule::Band, "band"), (GateRule::Interval, "interval")] {
            let o = CompareOptions {
                rule: Some(rule),
                ..CompareOptions::default()
            };
            for pct in [5, 10, 20] {
                let mut cells = Vec::new();
                let mut lower = 0.0;
                for upper in CV_BINS.iter().copied().chain([f64::INFINITY]) {
                    let (mut hit, mut miss, mut n, mut k) = (0, 0, 0, 0);
                    for (i, hl) in hls.iter().enumerate() {
                        if hl.between_cv > lower && hl.between_cv <= upper {
                            let (r, u) = trace::detect_verdicts(
                                m,
                                hl,
                                h,
                                pct as f64 / 100.0,
                                trials,
                                trace::seed(mi, h, pct, i),
                                &o,
                            );
                            hit += r;
                            miss += u;
                            n += trials;
                            k += 1;
                        }
                    }
                    cells.push(if n == 0 {
                        "-".to_string()
                    } else {
                        format!(
                            "{:.0}% / {:.0}% ({k})",
                            100.0 * hit as f64 / n as f64,
                            100.0 * miss as f64 / n as f64
                        )
                    });
                    lower = upper;
                }
                println!("| {h} | {name} | +{pct}% | {} |", cells.join(" | "));
            }
        }
    }
    // The round escape that is gone: +30% in the last 2 of 3 rounds, and
    // +10% in all of them with more history, on the quiet metrics.
    {
        let default = CompareOptions::default();
        let quiet: Vec<_> = trace::headlines(m)
            .into_iter()
            .filter(|hl| hl.between_cv <= 0.03)
            .collect();
        if quiet.is_empty() || m.runs.len() < 6 {
            return;
        }
        println!(
            "\n{}: the screen on the metrics at CV <= 3%, {trials} draws each: % regressed\n",
            m.name
        );
        println!(
            "| metric | +30% in 2 of 3 rounds (h 5) | +10% (h 5) | +10% (h 10) | +10% (h 20) |"
        );
        println!("|---|---:|---:|---:|---:|");
        for (i, hl) in quiet.iter().enumerate() {
            let pct = |k: usize| format!("{:.0}%", 100.0 * k as f64 / trials as f64);
            let two = trace::detect_from_round(
                m,
                hl,
                5,
                (0.30, 1),
                trials,
                trace::seed(mi, 5, 30, i),
                &default,
            );
            let mut cells = vec![pct(two)];
            for h in [5, 10, 20] {
                cells.push(if h + 1 > m.runs.len() {
                    "-".into()
                } else {
                    pct(trace::detect(
                        m,
                        hl,
                        h,
                        0.10,
                        trials,
                        trace::seed(mi, h, 10, i),
                        &default,
                    ))
                });
            }
            println!("| {} {} | {} |", hl.key, hl.metric, cells.join(" | "));
        }
    }
}
