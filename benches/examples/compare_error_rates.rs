//! Prints the error rates of `compare`'s verdict rule under named noise
//! models (see `benchsuite_benches::error_rates`):
//!
//! ```sh
//! cargo run --release -p benchsuite-benches --example compare_error_rates [TRIALS]
//! ```
//!
//! Deterministic: the same table on every machine for the same TRIALS
//! (default 4000 pairs per cell).

use benchsuite_benches::error_rates::{CHANGES, MODELS, rates, seed};

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .map(|t| t.parse().expect("TRIALS is a number of pairs per cell"))
        .unwrap_or(4000);
    let runs = 5;
    println!(
        "compare, one baseline (interval rule, threshold 5%, alpha 1%, beta 5%), runs {runs}, {trials} pairs per cell: % called regressed / % called unchanged"
    );
    println!(
        "| noise model | rounds | false alarm (true 0%) | wrong call (true +4%) | at the threshold (true +5%) | detected (true +10%) | detected (true +20%) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (mi, model) in MODELS.iter().enumerate() {
        for rounds in [1, 3, 5] {
            let cells: Vec<String> = CHANGES
                .iter()
                .enumerate()
                .map(|(ci, &change)| {
                    let (r, same) =
                        rates(seed(mi, rounds, ci), model, runs, rounds, change, trials);
                    format!("{:.1} / {:.1}", r * 100.0, same * 100.0)
                })
                .collect();
            println!("| {} | {rounds} | {} |", model.name, cells.join(" | "));
        }
    }
}
