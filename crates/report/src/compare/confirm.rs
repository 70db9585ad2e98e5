//! The gate's second stage: **confirm by pairing**. A new run judged
//! against a history (the screen, [`compare_history`])
//! leaves the metrics it cannot decide `undecided`; here the two builds
//! measure just those metrics' records alternately (A B A B, one round
//! each, [`Interleaver`]), which cancels the machine states that outlast a
//! round, and pairs are added until every open metric is decided or the
//! budget is spent.
//!
//! The screen's regressions are open too: one run cannot tell a
//! regression from a machine state its history never held (a VM's slow
//! state for a whole run), and the pairs can. A screen regression the
//! pairs cannot decide stays undecided, never passed.
//!
//! # Error levels
//!
//! With a confirmation, only the pairs can call a metric regressed (the
//! screen's own regressions are open), so the job's `alpha` is theirs.
//! The confirmation looks at the pairs a few times ([`looks`]: after 5, 10
//! ... pairs and at the budget); each look judges at its share of `alpha`
//! and of `beta` (Bonferroni over the looks), so adding pairs until a
//! verdict comes raises neither error. At each look the metrics still open
//! share the look's level by Holm's step-down, and each is judged by the
//! paired rule ([`GateRule::Paired`]): the 10% trimmed mean of its rounds'
//! log differences (Yuen's test: one odd round in ten moves it little),
//! regressed when no change is ruled out and the estimate is beyond the
//! threshold, unchanged when the worse-side bound is within it.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use benchsuite_core::results::Report;

use super::interleave::{InterleaveError, Interleaver};
use super::*;

/// The fewest pairs judged: the first look.
pub const FIRST_LOOK: usize = 5;

/// The default budget: at most this many A B pairs.
pub const DEFAULT_BUDGET: usize = 15;

/// The pair counts at which a confirmation with this budget judges: 5,
/// 10, 20, 40 ... below the budget, and the budget (at least 3).
pub fn looks(budget: usize) -> Vec<usize> {
    let budget = budget.max(interval::MIN_SAMPLES);
    let mut v = Vec::new();
    let mut k = FIRST_LOOK;
    while k < budget {
        v.push(k);
        k *= 2;
    }
    v.push(budget);
    v
}

/// Whether a metric is open to the confirmation: gated, and regressed or
/// undecided by the screen (a confirmation's own verdicts close it).
fn is_open(m: &MetricComparison) -> bool {
    m.gated
        && m.stage != Some(Stage::Confirm)
        && matches!(m.verdict, Verdict::Undecided | Verdict::Regressed)
}

/// The metrics the confirmation decides, as (record key, metric): the
/// gated ones the screen left undecided or called regressed.
pub fn open(c: &Comparison) -> Vec<(String, String)> {
    c.metrics
        .iter()
        .filter(|m| is_open(m))
        .map(|m| (m.key.clone(), m.metric.clone()))
        .collect()
}

/// The records of the open metrics, each once, in the comparison's order:
/// what the confirmation measures again.
pub fn records(c: &Comparison) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for m in c.metrics.iter().filter(|m| is_open(m)) {
        if !keys.contains(&m.key) {
            keys.push(m.key.clone());
        }
    }
    keys
}

/// One look: the open metrics of `current` judged on the pooled
/// interleaved reports (`base`, `new`), at the share of the job's levels
/// of one of `looks` looks. A metric decided here takes the paired
/// verdict; one still undecided keeps its earlier one, unless `last`,
/// where it takes the paired numbers too. Problems of the new build in
/// these rounds (a record that failed) are added. Pure.
pub fn judge_look(
    current: &Comparison,
    base: &Report,
    new: &Report,
    options: &CompareOptions,
    looks: usize,
    last: bool,
) -> Result<Comparison, CompareError> {
    let open = open(current);
    let mut out = current.clone();
    if open.is_empty() {
        return Ok(out);
    }
    let share = CompareOptions {
        alpha: options.alpha / looks as f64,
        beta: options.beta / looks as f64,
        paired: true,
        rule: Some(GateRule::Paired),
        ..options.clone()
    };
    check_schema(base, new)?;
    check_options(&share)?;
    let pairs = base
        .records
        .iter()
        .filter_map(|r| r.metrics.first())
        .filter_map(|m| m.rounds.as_ref().map(Vec::len))
        .max()
        .unwrap_or(1);
    let paired = compare_checked(
        &[Baseline {
            name: "interleaved base",
            report: base,
        }],
        new,
        &share,
        Some(&open),
    )?;
    for m in out.metrics.iter_mut() {
        if !open.iter().any(|(k, n)| *k == m.key && *n == m.metric) {
            continue;
        }
        let Some(p) = paired
            .metrics
            .iter()
            .find(|p| p.key == m.key && p.metric == m.metric)
        else {
            continue;
        };
        let decided = matches!(
            p.verdict,
            Verdict::Regressed | Verdict::Improved | Verdict::Unchanged
        );
        if !decided && !last {
            continue;
        }
        let screen = format!("the screen: {} {}", m.verdict, m.change_text());
        *m = MetricComparison {
            gated: true,
            // The screen's history of run medians stays what is drawn.
            history: std::mem::take(&mut m.history),
            stage: Some(Stage::Confirm),
            pairs: Some(pairs),
            // Not decided by the budget's end (or not judgeable in the
            // rounds): undecided, whatever the screen said.
            verdict: if decided {
                p.verdict
            } else {
                Verdict::Undecided
            },
            note: Some(match p.note.clone() {
                Some(n) => format!("{screen}; {n}"),
                None => screen,
            }),
            ..p.clone()
        };
    }
    let open_keys: Vec<&String> = open.iter().map(|(k, _)| k).collect();
    for p in paired.problems {
        // Once each: a record still open is judged again at the next look.
        let known = out
            .problems
            .iter()
            .any(|q| q.key == p.key && q.kind == p.kind && q.metric == p.metric);
        if open_keys.contains(&&p.key) && p.kind != ProblemKind::NotJudged && !known {
            out.problems.push(Problem {
                reason: format!("in the interleaved rounds: {}", p.reason),
                ..p
            });
        }
    }
    out.settle();
    Ok(out)
}

/// The two builds of a confirmation and what each round runs.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmBuilds<'a> {
    /// The base build's binary (main's).
    pub base: &'a Path,
    /// The new build's binary (the one the new report came from).
    pub new: &'a Path,
    /// `run`'s arguments as the new report was made (selectors,
    /// parameters), without `-o`, `--format` or `--rounds`; each round adds
    /// `--only KEY` for every record it measures again.
    pub run_args: &'a [String],
    /// The most A B pairs (at least 3).
    pub budget: usize,
    /// The longest a round may take; `None`: [`Interleaver`]'s default.
    pub round_timeout: Option<std::time::Duration>,
}

/// Why a confirmation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    /// A build did not run, or printed no report.
    #[error(transparent)]
    Build(#[from] InterleaveError),
    /// The pooled rounds could not be compared.
    #[error(transparent)]
    Compare(#[from] CompareError),
}

/// Confirms `screen` (a comparison of `new_report` against its history)
/// by interleaving the two builds on the records of its open metrics,
/// until each is decided or `builds.budget` pairs ran; tells `say` of
/// each round. Returns the screen's comparison with the open metrics'
/// verdicts replaced by the pairs' and [`Comparison::confirmation`] set.
/// Nothing is open: the screen, unchanged. The rounds ran on another
/// testbed than `new_report`, or `cancel` was set: the screen's verdicts
/// stand, and the confirmation's note says why.
pub fn confirm(
    screen: &Comparison,
    new_report: &Report,
    builds: &ConfirmBuilds<'_>,
    options: &CompareOptions,
    cancel: &AtomicBool,
    say: &mut dyn FnMut(String),
) -> Result<Comparison, ConfirmError> {
    let records = records(screen);
    let open_at_start = open(screen).len();
    if records.is_empty() {
        return Ok(screen.clone());
    }
    let looks = looks(builds.budget);
    let budget = *looks.last().expect("a look");
    let mut args = builds.run_args.to_vec();
    for k in &records {
        args.push("--only".into());
        args.push(k.clone());
    }
    let mut rounds = Interleaver::new(builds.base, builds.new, &args)?;
    rounds.set_round_timeout(builds.round_timeout);
    let started = Instant::now();
    let mut current = screen.clone();
    let mut note = None;
    'looks: for (j, &at) in looks.iter().enumerate() {
        while rounds.pairs() < at {
            if !rounds.pair(budget, cancel, say)? {
                note = Some(format!(
                    "interrupted after {} pairs: the verdicts of the last look stand",
                    rounds.pairs()
                ));
                break 'looks;
            }
            if rounds.pairs() == 1 {
                let (b, _) = rounds.pooled()?;
                if let Some(why) = context::testbed_difference(&b, new_report) {
                    note = Some(format!(
                        "the builds ran on another testbed than the new report ({why}): the screen's verdicts stand"
                    ));
                    current = screen.clone();
                    break 'looks;
                }
            }
        }
        let (b, n) = rounds.pooled()?;
        current = judge_look(&current, &b, &n, options, looks.len(), j + 1 == looks.len())?;
        if open(&current).is_empty() {
            break;
        }
    }
    let still_open = current.undecided().count();
    current.confirmation = Some(Confirmation {
        records,
        open: open_at_start,
        decided: open_at_start - still_open.min(open_at_start),
        pairs: rounds.pairs(),
        budget,
        looks,
        wall_s: started.elapsed().as_secs_f64(),
        note,
    });
    Ok(current)
}
