//! Comparison of two reports: a pure function from `(base, new, options)` to
//! a [`Comparison`] — a verdict per metric and a **gate**: whether the new
//! report may pass a CI check against the baseline.
//!
//! # The gate
//!
//! The new report fails the gate ([`Comparison::passed`] is false,
//! [`Comparison::outcome`] [`Outcome::Failed`]; the CLI exits 1) when
//!
//! - any metric [regressed](Verdict::Regressed), or
//! - a record that ran (`ok`) in the baseline **failed**, was **skipped**, is
//!   **missing**, or lacks one of its metrics in the new report, or
//! - a metric could not be judged (too few samples, a zero baseline with a
//!   relative threshold), or
//! - the new report has no record that ran at all (empty or all failed).
//!
//! Each of these is a [`Problem`], listed first with its reason.
//! [`Allow`] relaxes the ones users need to (`--allow-missing`,
//! `--allow-skipped`, `--allow-unjudged`); a failed record and an empty
//! report always fail. Records only in the new report are listed
//! ([`Comparison::added`]), not failures; so are records that did not run in
//! the baseline either ([`Comparison::not_comparable`]). When nothing fails
//! but a gated metric is [undecided](Verdict::Undecided), the outcome is
//! [`Outcome::Undecided`] (the CLI exits 3).
//!
//! # Pairing
//!
//! Records pair by benchmark id and the parameters **as requested**
//! ([`Record::requested_params`]), so the same plan pairs up on two machines
//! even where `auto` values resolved differently; where the values that ran
//! differ, the pair is still judged and the difference is its `context`.
//! Reports without any pair are an error ([`CompareError::NothingInCommon`])
//! unless the new one ran nothing (then the gate fails).
//!
//! Two fleet reports (`benchsuite merge`) compare host by host
//! ([`compare_fleets`], see [`fleet`]): each host against the same host of
//! the baseline fleet, one gate over all.
//!
//! # Verdicts
//!
//! Each metric (and each latency tail, `NAME.p99` and `NAME.p99_9`, where
//! both sides recorded every sample's tail, at [`TAIL_THRESHOLD`] by
//! default) is judged against a prediction of one more run from the
//! baselines ([`compare_history`]; `docs/compare.md` has the whole method
//! and its measured error rates):
//!
//! - with a **history** of two or more baselines, the spread of their run
//!   medians (`max(s², w)·(1 + 1/h)`, `h − 1` degrees of freedom, the
//!   typical run's own noise `w` as a floor); the default rule is
//!   [`GateRule::Band`]: regressed when the change lies outside the band at
//!   the metric's level, beyond the threshold, and most of the new run's
//!   rounds show it at no level the history held more than once;
//! - with **one baseline**, the two runs' own noise ([`interval`]: the
//!   round is the unit of evidence where the machine drifted between
//!   rounds) widened by a prior between-run CV ([`BetweenRun`],
//!   [`prior`]); the default rule is [`GateRule::Interval`]: regressed when
//!   the **whole interval** lies beyond the threshold on the worse side (as
//!   criterion decides);
//! - with **interleaved** reports ([`CompareOptions::paired`]), the paired
//!   differences of their rounds ([`GateRule::Paired`]); [`confirm`] runs
//!   them for what a history could not decide.
//!
//! Only gated metrics (headline and secondary [roles](MetricRole), or one a
//! rule names) can fail the gate, and they share the job's `alpha` by
//! Holm's step-down ([`holm_levels`]): each interval is the two-sided
//! `1 − 2·level` one at the level its step left it.
//!
//! - [`Verdict::Regressed`]: as the rule says, on the worse side;
//! - [`Verdict::Improved`]: the same on the better side;
//! - [`Verdict::Unchanged`]: the worse-side bound of the change at
//!   [`CompareOptions::beta`] lies within the threshold;
//! - [`Verdict::Undecided`]: neither: more rounds, baselines or
//!   interleaved pairs would tell; the job's [`Outcome`] is undecided;
//! - [`Verdict::NotJudged`]: a side has fewer than three samples, the
//!   base median is 0 under a relative threshold, or a statistic of the
//!   samples overflows `f64` (values near ±1.8e308, a ratio of
//!   subnormals): never a panic, and a problem of the gate like the rest.
//!
//! Thresholds are relative (`5%`) or absolute in the metric's unit (`0.5pp`
//! for metrics in %, which default to it), per record and metric
//! ([`rules`]). Each metric also reports the noise it saw: the interval's
//! half-width ([`MetricComparison::noise`]: a change smaller than it cannot
//! be confirmed), and [`MetricComparison::quiet_threshold`], the smallest
//! threshold that would have raised no alarm (0 when the interval holds
//! zero). On two runs of the same build (an A/A pair), these are the data
//! to set `--threshold` from.
//!
//! The measured error rates of these rules are printed by `cargo run -p
//! benchsuite-benches --example compare_error_rates` (named noise models
//! inside one run) and `--example compare_trace_rates` (recorded real A/A
//! runs, histories), and checked in their tests.
//!
//! ```
//! use benchsuite_report::compare::{compare, CompareOptions};
//! # use benchsuite_core::{Report, host::Host, results::RunConfigRecord};
//! # let report = Report { schema_version: "1.2".into(), tool_version: "0.1.0".into(),
//! #     started_at: String::new(), host: Host::default(), cluster: None,
//! #     config: RunConfigRecord::default(), progress: None, records: vec![] };
//! // An empty new report never passes.
//! let comparison = compare(&report, &report, &CompareOptions::default()).unwrap();
//! assert!(!comparison.passed());
//! ```

use benchsuite_core::param::Point;
use benchsuite_core::results::{Metric, MetricRole, Record, Report, Status, schema_major};

pub mod calibrate;
pub mod confirm;
mod context;
pub(crate) use context::{testbed_difference, testbed_name};
pub mod fleet;
pub mod history;
pub mod interleave;
pub mod interval;
mod judge;
mod model;
mod outcome;
mod pairing;
pub mod prior;
pub mod rules;
mod states;
mod text;

pub use fleet::{
    FleetComparison, HostComparison, IncomparableHost, compare_fleets, write_fleet_comparison,
};
pub use model::*;
pub use outcome::*;
pub use rules::{ThresholdRule, Tolerance};
pub use text::percent_text;

use judge::{direction_name, lost_tails, metric_names, quantities};
use states::states_note;

/// One baseline report and the name it is shown by (its file).
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    /// How outputs name it (`history/r03.json`).
    pub name: &'a str,
    /// The report.
    pub report: &'a Report,
}

/// Compares `new` against the baseline `base`. Pure: no I/O, no clock.
///
/// Fails when the schema major versions differ, when a threshold rule
/// covers nothing or has the wrong unit, and when no record pairs up
/// although the new report ran something. See the
/// [module documentation](self) for the method.
pub fn compare(
    base: &Report,
    new: &Report,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    compare_history(
        &[Baseline {
            name: "base",
            report: base,
        }],
        new,
        options,
    )
}

/// Compares `new` against a history of baselines of the same testbed: the
/// newest decides what is missing, failed or added; all of them give each
/// metric's noise between runs, and a metric is judged against what they
/// predict for one new run (see the [module documentation](self)). Pure.
///
/// Baselines of another testbed are left out (listed in
/// [`Comparison::excluded`]) unless [`Allow::mixed_hosts`]; none left is
/// an error, as is an empty history or a baseline of another schema major.
pub fn compare_history(
    history: &[Baseline<'_>],
    new: &Report,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    match history {
        [] => return Err(CompareError::NoBaseline),
        [one] => check_schema(one.report, new)?,
        many => {
            for b in many {
                check_schema(b.report, new).map_err(|_| CompareError::BaselineSchema {
                    name: b.name.to_string(),
                    base: b.report.schema_version.clone(),
                    new: new.schema_version.clone(),
                })?;
            }
        }
    }
    check_options(options)?;
    let mut used = Vec::new();
    let mut excluded = Vec::new();
    for b in history {
        match context::testbed_difference(b.report, new) {
            Some(why) if history.len() > 1 && !options.allow.mixed_hosts => {
                excluded.push(format!("{}: {why}", b.name));
            }
            _ => used.push(*b),
        }
    }
    if used.is_empty() {
        return Err(CompareError::NoBaselineOfTestbed {
            count: history.len(),
            why: excluded.first().cloned().unwrap_or_default(),
        });
    }
    // Oldest first; the newest is the baseline records pair with.
    used.sort_by(|a, b| a.report.started_at.cmp(&b.report.started_at));
    let records: Vec<&Record> = used
        .iter()
        .flat_map(|b| &b.report.records)
        .chain(&new.records)
        .collect();
    check_rules(&records, &options.rules)?;
    let mut out = compare_checked(&used, new, options, None)?;
    out.excluded = excluded;
    Ok(out)
}

/// Both reports of one major schema version.
fn check_schema(base: &Report, new: &Report) -> Result<(), CompareError> {
    let (bm, nm) = (
        schema_major(&base.schema_version),
        schema_major(&new.schema_version),
    );
    if bm.is_none() || bm != nm {
        return Err(CompareError::SchemaMismatch {
            base: base.schema_version.clone(),
            new: new.schema_version.clone(),
        });
    }
    Ok(())
}

/// `alpha` in (0, 0.5), thresholds finite and not negative.
fn check_options(options: &CompareOptions) -> Result<(), CompareError> {
    if !(options.alpha > 0.0 && options.alpha < 0.5) {
        return Err(CompareError::Alpha(options.alpha));
    }
    if !(options.beta > 0.0 && options.beta < 0.5) {
        return Err(CompareError::Beta(options.beta));
    }
    let bad = |v: f64| !v.is_finite() || v < 0.0;
    let bad_cv = match options.between_run {
        BetweenRun::Cv(cv) => bad(cv),
        BetweenRun::Prior => false,
    };
    if bad(options.threshold)
        || bad(options.tail_threshold)
        || bad_cv
        || options.rules.iter().any(|r| match &r.tolerance {
            Tolerance::Relative(v) | Tolerance::Absolute { value: v, .. } => bad(*v),
        })
    {
        return Err(CompareError::Threshold);
    }
    Ok(())
}

/// [`compare_history`] once the schemas, testbeds, options and rules are
/// checked; `history` is oldest first and not empty.
fn compare_checked(
    history: &[Baseline<'_>],
    new: &Report,
    options: &CompareOptions,
    focus: Option<&[(String, String)]>,
) -> Result<Comparison, CompareError> {
    let base = history.last().expect("a baseline").report;
    let rule = options.rule.unwrap_or(if options.paired {
        GateRule::Paired
    } else if history.len() > 1 {
        GateRule::Band
    } else {
        GateRule::Interval
    });
    let mut out = Comparison {
        base_schema_version: base.schema_version.clone(),
        new_schema_version: new.schema_version.clone(),
        threshold: options.threshold,
        rules: options.rules.iter().map(|r| r.to_string()).collect(),
        alpha: options.alpha,
        rule,
        family: 0,
        tail_threshold: options.tail_threshold,
        beta: options.beta,
        baselines: history.iter().map(|b| b.name.to_string()).collect(),
        excluded: Vec::new(),
        allow: options.allow,
        passed: false,
        outcome: Outcome::Failed,
        confirmation: None,
        problems: Vec::new(),
        metrics: Vec::new(),
        added: Vec::new(),
        not_comparable: Vec::new(),
        context_differences: context::context_differences(base, new),
    };
    let mut older: Vec<pairing::RecordIndex<'_>> = history
        .iter()
        .rev()
        .skip(1)
        .map(|b| pairing::RecordIndex::new(b.report))
        .collect();
    let mut estimates = Vec::new();

    // Records pair through an index (pairing.rs); each new record is used
    // once, so duplicates pair up in order.
    let mut in_new = pairing::RecordIndex::new(new);
    let mut used = vec![false; new.records.len()];
    let mut paired = 0;
    for b in &base.records {
        match in_new.pair(b, &used) {
            Some((i, n)) => {
                used[i] = true;
                paired += 1;
                let history: Vec<&Record> = older
                    .iter_mut()
                    .filter_map(|r| r.pair(b, &[]).map(|(_, x)| x))
                    .filter(|x| x.status == Status::Ok)
                    .collect();
                compare_records(b, &history, n, options, &mut out, &mut estimates)?;
            }
            // A step of a capacity search: the new run's search chose its
            // own rates, so a rate the base tried may not be there.
            None if b.load.is_some_and(|l| l.step.is_some()) => {
                out.not_comparable.push(NotComparable {
                    key: b.requested_key(),
                    id: b.id.clone(),
                    params: b.requested_params().clone(),
                    metric: None,
                    base_status: b.status,
                    new_status: b.status,
                    reason: "a step of a capacity search in base; the new search chose other rates"
                        .into(),
                })
            }
            None if b.status == Status::Ok => out.problems.push(Problem {
                key: b.requested_key(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::Missing,
                metric: None,
                reason: "ran in base, absent from new".into(),
                allowed: options.allow.missing,
            }),
            None => out.not_comparable.push(NotComparable {
                key: b.requested_key(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                metric: None,
                base_status: b.status,
                new_status: b.status,
                reason: format!(
                    "{} in base and absent from new",
                    status_reason(b.status, b.reason.as_deref())
                ),
            }),
        }
    }
    for (n, _) in new.records.iter().zip(&used).filter(|(_, u)| !**u) {
        out.added.push(unmatched(n, None));
    }
    if let Some(focus) = focus {
        // Only these metrics are judged as gated (a confirmation's family:
        // the metrics still open); the others are shown, not gated.
        for m in &mut out.metrics {
            m.gated &= focus.iter().any(|(k, n)| *k == m.key && *n == m.metric);
        }
    }
    judge_family(&mut out, &estimates, options.alpha, options.beta);
    let ran_in_new = new.records.iter().any(|r| r.status == Status::Ok);
    if !ran_in_new {
        let why = if new.records.is_empty() {
            "the new report has no records".to_string()
        } else {
            format!(
                "none of the new report's {} records ran (all failed or skipped)",
                new.records.len()
            )
        };
        out.problems.insert(
            0,
            Problem {
                key: String::new(),
                id: String::new(),
                params: Point::default(),
                kind: ProblemKind::NoResults,
                metric: None,
                reason: why,
                allowed: false,
            },
        );
    } else if paired == 0 && !base.records.is_empty() {
        let ids = |r: &Report| {
            let mut v: Vec<&str> = r.records.iter().map(|r| r.id.as_str()).collect();
            v.dedup();
            v.join(", ")
        };
        return Err(CompareError::NothingInCommon {
            base: ids(base),
            new: ids(new),
        });
    }
    out.settle();
    Ok(out)
}

/// The verdicts, once every quantity is estimated: the gated ones share
/// the job's `alpha` by Holm's step-down (each gets the level its step
/// left it), the others are judged at `alpha` alone.
fn judge_family(
    out: &mut Comparison,
    estimates: &[(usize, judge::Estimate)],
    alpha: f64,
    beta: f64,
) {
    let gated: Vec<&(usize, judge::Estimate)> = estimates
        .iter()
        .filter(|(i, _)| out.metrics[*i].gated)
        .collect();
    let ps: Vec<f64> = gated
        .iter()
        .map(|(i, e)| judge::p_worse(e, out.metrics[*i].direction))
        .collect();
    let levels = holm_levels(&ps, alpha);
    out.family = gated.len();
    for ((i, e), level) in gated.iter().zip(levels) {
        judge::verdict(&mut out.metrics[*i], e, level, beta);
    }
    for (i, e) in estimates {
        if !out.metrics[*i].gated {
            judge::verdict(&mut out.metrics[*i], e, alpha, beta);
        }
    }
    // An estimate whose change or bounds overflow is not judged after all.
    for (i, _) in estimates {
        let m = &out.metrics[*i];
        if m.verdict == Verdict::NotJudged && m.gated {
            out.problems.push(Problem {
                key: m.key.clone(),
                id: m.id.clone(),
                params: m.params.clone(),
                kind: ProblemKind::NotJudged,
                metric: Some(m.metric.clone()),
                reason: m.note.clone().unwrap_or_default(),
                allowed: out.allow.unjudged,
            });
        }
    }
}

/// Holm's step-down over the one-sided p-values `ps`: the level each
/// test is judged at so that the chance of any false alarm stays at most
/// `alpha`. Sorted ascending, the `j`-th p-value (from 0) is compared with
/// `alpha / (m − j)`; from the first that fails on, every test keeps that
/// level. A test is rejected exactly when its p-value is at most its
/// level, so each verdict agrees with the interval shown at that level.
pub fn holm_levels(ps: &[f64], alpha: f64) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut levels = vec![alpha; m];
    let mut stopped = None;
    for (j, &i) in order.iter().enumerate() {
        let level = alpha / (m - j) as f64;
        levels[i] = match stopped {
            Some(l) => l,
            None if ps[i] <= level => level,
            None => {
                stopped = Some(level);
                level
            }
        };
    }
    levels
}

/// Every rule must cover some metric of a record in either report (of
/// `all`, the records of both), and an absolute one must be in the unit of
/// every metric it covers.
fn check_rules(all: &[&Record], rules: &[ThresholdRule]) -> Result<(), CompareError> {
    for rule in rules {
        let records: Vec<&Record> = all
            .iter()
            .copied()
            .filter(|r| rule.matches_id(&r.id))
            .collect();
        if records.is_empty() {
            let mut ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            return Err(CompareError::RuleMatchesNothing {
                rule: rule.to_string(),
                why: format!(
                    "no record matches `{}` (benchmarks in the reports: {})",
                    rule.selector,
                    ids.join(", ")
                ),
            });
        }
        let mut names: Vec<String> = Vec::new();
        let mut hit = false;
        for r in &records {
            for m in &r.metrics {
                for name in metric_names(m) {
                    if rule.matches_metric(&name) {
                        hit = true;
                        if !rule.tolerance.fits(&m.unit) {
                            let Tolerance::Absolute { unit, .. } = &rule.tolerance else {
                                unreachable!("relative tolerances fit every unit")
                            };
                            return Err(CompareError::RuleUnit {
                                rule: rule.to_string(),
                                metric: format!("{} {name}", r.requested_key()),
                                unit: m.unit.clone(),
                                given: if unit == "%" {
                                    "pp".into()
                                } else {
                                    unit.clone()
                                },
                            });
                        }
                    }
                    names.push(name);
                }
            }
        }
        // Records that did not run have no metrics: only a rule naming a
        // metric needs one to exist.
        if !hit && rule.metric.is_some() {
            names.sort();
            names.dedup();
            return Err(CompareError::RuleMatchesNothing {
                rule: rule.to_string(),
                why: format!(
                    "the records matching `{}` have no metric `{}` (they have: {})",
                    rule.selector,
                    rule.metric.as_deref().unwrap_or_default(),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
            });
        }
    }
    Ok(())
}

fn unmatched(r: &Record, metric: Option<&str>) -> Unmatched {
    Unmatched {
        key: r.requested_key(),
        id: r.id.clone(),
        params: r.requested_params().clone(),
        metric: metric.map(str::to_string),
    }
}

fn status_reason(s: Status, reason: Option<&str>) -> String {
    let name = match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    };
    match reason {
        Some(why) => format!("{name} ({why})"),
        None => name.to_string(),
    }
}

fn compare_records(
    b: &Record,
    older: &[&Record],
    n: &Record,
    options: &CompareOptions,
    out: &mut Comparison,
    estimates: &mut Vec<(usize, judge::Estimate)>,
) -> Result<(), CompareError> {
    let key = b.requested_key();
    if b.status != Status::Ok {
        out.not_comparable.push(NotComparable {
            key,
            id: b.id.clone(),
            params: b.requested_params().clone(),
            metric: None,
            base_status: b.status,
            new_status: n.status,
            reason: {
                let (bs, ns) = (
                    status_reason(b.status, b.reason.as_deref()),
                    status_reason(n.status, n.reason.as_deref()),
                );
                if bs == ns {
                    format!("{bs} in base and new")
                } else {
                    format!("{bs} in base; {ns} in new")
                }
            },
        });
        return Ok(());
    }
    if n.status != Status::Ok {
        let (kind, allowed) = match n.status {
            Status::Skipped => (ProblemKind::Skipped, options.allow.skipped),
            _ => (ProblemKind::Failed, false),
        };
        out.problems.push(Problem {
            key,
            id: b.id.clone(),
            params: b.requested_params().clone(),
            kind,
            metric: None,
            reason: n.reason.clone().unwrap_or_else(|| "no reason given".into()),
            allowed,
        });
        return Ok(());
    }
    let context = resolved_difference(b, n);
    for (k, bm) in b.metrics.iter().enumerate() {
        let Some(nm) = n.metric(&bm.name) else {
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                metric: Some(bm.name.clone()),
                reason: format!("metric {} is in base, not in new", bm.name),
                allowed: options.allow.missing,
            });
            continue;
        };
        if bm.unit != nm.unit || bm.direction != nm.direction {
            // The new build measures something else under the old name:
            // the old metric is gone.
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                metric: Some(bm.name.clone()),
                reason: format!(
                    "metric {} changed from {} ({} is better) to {} ({} is better)",
                    bm.name,
                    bm.unit,
                    direction_name(bm.direction),
                    nm.unit,
                    direction_name(nm.direction)
                ),
                allowed: options.allow.missing,
            });
            continue;
        }
        for tail in lost_tails(bm, nm) {
            out.problems.push(Problem {
                key: key.clone(),
                id: b.id.clone(),
                params: b.requested_params().clone(),
                kind: ProblemKind::MissingMetric,
                reason: format!(
                    "{tail} is in base, not in new (a sample of new recorded too few operations for it)"
                ),
                metric: Some(tail),
                allowed: options.allow.missing,
            });
        }
        // A metric without a role (a report before schema 1.6, a
        // benchmark this build does not know): the first is the headline.
        let declared = bm.role.or(nm.role).unwrap_or(if k == 0 {
            MetricRole::Headline
        } else {
            MetricRole::Secondary
        });
        // A metric whose samples are another's of the record, on both
        // sides (`stream_min` with one stream is `throughput`), repeats it.
        let same = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()))
        };
        let twin = b.metrics[..k].iter().find(|x| {
            x.unit == bm.unit
                && same(&x.samples, &bm.samples)
                && n.metric(&x.name)
                    .is_some_and(|y| y.unit == nm.unit && same(&y.samples, &nm.samples))
        });
        let role = if twin.is_some() && declared.gated_by_default() {
            MetricRole::Derived
        } else {
            declared
        };
        let older_metrics: Vec<&Metric> = older
            .iter()
            .filter_map(|r| r.metric(&bm.name))
            .filter(|m| m.unit == bm.unit && m.direction == bm.direction)
            .collect();
        let mut notes = Vec::new();
        if let Some(t) = twin {
            notes.push(format!("the same samples as {}: not judged twice", t.name));
        }
        notes.extend(states_note(bm, &older_metrics, nm));
        notes.extend(context.clone());
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        for q in quantities(bm, &older_metrics, nm, role) {
            let (mc, est) = judge::estimate(b, &q, options, note.clone());
            if est.is_none() && mc.gated {
                out.problems.push(Problem {
                    key: key.clone(),
                    id: b.id.clone(),
                    params: b.requested_params().clone(),
                    kind: ProblemKind::NotJudged,
                    metric: Some(mc.metric.clone()),
                    reason: mc.note.clone().unwrap_or_default(),
                    allowed: options.allow.unjudged,
                });
            }
            if let Some(e) = est {
                estimates.push((out.metrics.len(), e));
            }
            let mut mc = mc;
            if mc.metric == bm.name {
                // `older` runs newest first.
                mc.history = older_metrics
                    .iter()
                    .rev()
                    .chain(std::iter::once(&bm))
                    .map(|m| benchsuite_core::stats::median(&m.samples))
                    .filter(|v| v.is_finite())
                    .collect();
            }
            out.metrics.push(mc);
        }
    }
    for nm in n.metrics.iter().filter(|m| b.metric(&m.name).is_none()) {
        out.added.push(unmatched(n, Some(&nm.name)));
    }
    Ok(())
}

/// `size: 32MiB (base) vs 48MiB (new)` for every parameter whose resolved
/// value differs between the paired records.
fn resolved_difference(b: &Record, n: &Record) -> Option<String> {
    let diffs: Vec<String> = b
        .params
        .0
        .iter()
        .filter_map(|(name, bv)| {
            let nv = n.params.get(name)?;
            (bv != nv).then(|| format!("{name} ran as {bv} in base, {nv} in new"))
        })
        .collect();
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

#[cfg(test)]
mod tests;
