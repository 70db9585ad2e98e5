//! Change points in one series of run medians: binary segmentation with a
//! rank statistic and a permutation test of its maximum.
//!
//! For a segment of `n` values, every split `k` (each side at least
//! [`MIN_SEGMENT`] long) is scored by the standardised Mann–Whitney
//! statistic of the two sides (mid-ranks, tie-corrected variance), and the
//! best split by the largest `|Z|`. Its p-value is the share of `B`
//! permutations of the segment whose own best `|Z|` is at least as large:
//! the maximum over splits is what is tested, so under exchangeable values
//! (no change) a segment is split with probability at most `alpha`,
//! whatever the values' distribution (ranks) and however many splits there
//! were to choose from. The permutations come from a fixed seed, so a
//! series always gives the same answer (as Apache Otava made E-Divisive
//! deterministic by replacing its random permutations). A significant
//! split is kept and both sides searched again.
//!
//! What this cannot know: a machine state that outlasts runs (a slow
//! LINPACK for an hour) makes neighbouring runs alike, not exchangeable,
//! and is found as a change point; `benches` measures how often on
//! recorded noise. And one split per test does not see a level that came
//! and went (a regression fixed later: both ends alike) until the series
//! ends at it.

/// The shortest segment on either side of a change point.
pub const MIN_SEGMENT: usize = 3;

/// Permutations per test: p-values in steps of 1/2000.
pub const PERMUTATIONS: usize = 1999;

/// A change point found: the index of the first value after it and its
/// p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub at: usize,
    pub p: f64,
}

/// The change points of `x` at level `alpha`, by index, in order.
///
/// Binary segmentation first; then each change point is moved to the best
/// split between its neighbours and tested there again, and dropped when
/// that test fails, until nothing moves. On a staircase the first split
/// falls between the steps (the middle splits the ranks best); between its
/// neighbours it moves onto a step, or goes.
pub fn change_points(x: &[f64], alpha: f64) -> Vec<Split> {
    let mut found = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        if b - a < 2 * MIN_SEGMENT {
            continue;
        }
        let Some((k, p)) = test_segment(&x[a..b]) else {
            continue;
        };
        if p < alpha {
            found.push(Split { at: a + k, p });
            todo.push((a, a + k));
            todo.push((a + k, b));
        }
    }
    found.sort_by_key(|s| s.at);
    for _ in 0..8 {
        let mut changed = false;
        let mut i = 0;
        while i < found.len() {
            let a = if i == 0 { 0 } else { found[i - 1].at };
            let b = found.get(i + 1).map_or(x.len(), |s| s.at);
            match test_segment(&x[a..b]).filter(|(_, p)| *p < alpha) {
                Some((k, p)) => {
                    changed |= found[i].at != a + k;
                    found[i] = Split { at: a + k, p };
                    i += 1;
                }
                None => {
                    found.remove(i);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    found
}

/// The best split of `x` and its permutation p-value; `None` when no split
/// leaves [`MIN_SEGMENT`] on each side or every value is the same.
fn test_segment(x: &[f64]) -> Option<(usize, f64)> {
    let ranks = mid_ranks(x);
    let ties = tie_term(&ranks);
    let (k, z) = best(&ranks, ties)?;
    if z <= 0.0 {
        return None;
    }
    // Seeded by the segment's length and ranks: the same segment, the same
    // permutations.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (x.len() as u64);
    for r in &ranks {
        seed = seed.rotate_left(7) ^ (r * 2.0) as u64;
    }
    let mut rng = SplitMix(seed);
    let mut perm = ranks.clone();
    let mut at_least = 0usize;
    for _ in 0..PERMUTATIONS {
        for i in (1..perm.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            perm.swap(i, j);
        }
        if best(&perm, ties).is_some_and(|(_, zp)| zp >= z - 1e-12) {
            at_least += 1;
        }
    }
    Some((k, (1 + at_least) as f64 / (PERMUTATIONS + 1) as f64))
}

/// The split with the largest `|Z|` of the rank-sum of its right side.
fn best(ranks: &[f64], ties: f64) -> Option<(usize, f64)> {
    let n = ranks.len();
    if n < 2 * MIN_SEGMENT {
        return None;
    }
    let nf = n as f64;
    let total: f64 = ranks.iter().sum();
    let mut left = 0.0;
    let mut top: Option<(usize, f64)> = None;
    for (i, r) in ranks.iter().enumerate().take(n - MIN_SEGMENT) {
        left += r;
        let k = i + 1;
        if k < MIN_SEGMENT {
            continue;
        }
        let (n1, n2) = (k as f64, nf - k as f64);
        let right = total - left;
        let u = right - n2 * (n2 + 1.0) / 2.0;
        let var = n1 * n2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
        if var <= 0.0 {
            continue;
        }
        let z = ((u - n1 * n2 / 2.0) / var.sqrt()).abs();
        if top.is_none_or(|(_, t)| z > t) {
            top = Some((k, z));
        }
    }
    top
}

/// Ranks from 1, ties sharing their mean rank.
pub(crate) fn mid_ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// `Σ (t³ − t)` over the groups of tied ranks.
fn tie_term(ranks: &[f64]) -> f64 {
    let mut sorted = ranks.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        sum += t * t * t - t;
        i = j + 1;
    }
    sum
}

/// The Hodges–Lehmann shift `after − before` (the median of all pairwise
/// differences) and its distribution-free 95% interval (Moses: order
/// statistics of the differences at the Mann–Whitney critical count,
/// normal approximation).
pub fn shift(before: &[f64], after: &[f64]) -> (f64, [f64; 2]) {
    let mut d: Vec<f64> = after
        .iter()
        .flat_map(|a| before.iter().map(move |b| a - b))
        .collect();
    d.sort_by(f64::total_cmp);
    let m = d.len();
    let est = benchsuite_core::stats::median(&d);
    let (n1, n2) = (before.len() as f64, after.len() as f64);
    let c = (n1 * n2 / 2.0 - 1.959_964 * (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt()).floor();
    let c = if c < 0.0 { 0 } else { c as usize };
    let lo = d[c.min(m - 1)];
    let hi = d[(m - 1).saturating_sub(c)];
    (est, [lo, hi])
}

/// SplitMix64: a small deterministic generator for the permutations.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream of standard normal values from a seed (Box–Muller).
    fn normals(seed: u64, n: usize) -> Vec<f64> {
        let mut r = SplitMix(seed);
        let mut u = || (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        (0..n)
            .map(|_| {
                let (a, b) = (u().max(1e-300), u());
                (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        let mut x = normals(1, 30);
        for v in &mut x[20..] {
            *v += 4.0;
        }
        let cps = change_points(&x, 0.01);
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].at, 20);
        assert!(cps[0].p < 0.01);
    }

    #[test]
    fn a_staircase_has_each_step_found() {
        let mut x = normals(2, 36);
        for (i, v) in x.iter_mut().enumerate() {
            *v += 5.0 * (i / 12) as f64;
        }
        let cps: Vec<usize> = change_points(&x, 0.01).iter().map(|s| s.at).collect();
        assert_eq!(cps, [12, 24]);
    }

    /// What binary segmentation with one split per test cannot see: a
    /// level that comes and goes (a regression fixed later) leaves both
    /// ends alike, and no single split of the whole is significant. Its
    /// end, once the series stops at the new level, is a plain step.
    #[test]
    fn a_level_that_comes_and_goes_is_found_only_once_it_stays() {
        let mut x = normals(2, 36);
        for v in &mut x[12..24] {
            *v += 5.0;
        }
        assert!(change_points(&x, 0.01).is_empty());
        let cps: Vec<usize> = change_points(&x[..24], 0.01).iter().map(|s| s.at).collect();
        assert_eq!(cps, [12]);
    }

    #[test]
    fn a_constant_or_short_series_has_none_and_answers_are_deterministic() {
        assert!(change_points(&[1.0; 20], 0.01).is_empty());
        assert!(change_points(&[1.0, 2.0, 3.0, 10.0, 11.0], 0.01).is_empty());
        let x = normals(3, 25);
        assert_eq!(change_points(&x, 0.2), change_points(&x, 0.2));
    }

    /// Under no change the first test splits a series at most alpha of the
    /// time: 400 independent series of 25, alpha 5%: the count of series
    /// split at all lies in a binomial's 99.9% range (20 expected).
    #[test]
    fn pure_noise_is_split_about_alpha_of_the_time() {
        let split = (0..400u64)
            .filter(|&s| !change_points(&normals(1000 + s, 25), 0.05).is_empty())
            .count();
        // Binomial(400, 0.05): mean 20, sd 4.4; 99.9%: 7 … 35 (a binary
        // segmentation adds a little above alpha).
        assert!((7..=38).contains(&split), "{split} of 400 split");
    }

    #[test]
    fn the_shift_and_its_interval_hold_the_true_step() {
        let a: Vec<f64> = normals(5, 20).iter().map(|v| v * 0.1).collect();
        let b: Vec<f64> = normals(6, 10).iter().map(|v| v * 0.1 - 0.3).collect();
        let (est, [lo, hi]) = shift(&a, &b);
        assert!(lo < -0.3 && -0.3 < hi, "[{lo}, {hi}]");
        assert!((est + 0.3).abs() < 0.1, "{est}");
        assert_eq!(mid_ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
    }
}
