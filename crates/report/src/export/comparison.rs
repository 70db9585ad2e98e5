//! What the human-readable formats (table, Markdown, HTML) share of a
//! comparison: its columns, the short key of each record, what fails the
//! gate and the notes under it.

use std::collections::{BTreeMap, BTreeSet};

use crate::compare::{
    BetweenSource, Comparison, GateRule, MetricComparison, ProblemKind, Tolerance, Verdict,
};
use benchsuite_core::units::format_value;

use super::keys;

/// Header of the comparison columns.
pub(super) const COMPARISON_HEADER: [&str; 8] = [
    "benchmark",
    "metric",
    "base",
    "new",
    "change [interval]",
    "verdict",
    "worst",
    "rerun CV",
];

/// Which columns of [`COMPARISON_HEADER`] are right-aligned.
pub(super) const COMPARISON_RIGHT: [bool; 8] = [false, false, true, true, true, false, true, true];

/// How a comparison is shown in the human-readable formats: each record by
/// its short key (what differs between the records of one benchmark, in
/// human sizes; [`keys::short_keys`]) unless `full_keys`, and with `all`,
/// the metrics that cannot fail the gate (derived and spread) too.
pub(super) struct ComparisonView<'a> {
    pub(super) c: &'a Comparison,
    /// Full key → short key, for every record the comparison names; empty
    /// with full keys.
    short: BTreeMap<&'a str, String>,
    all: bool,
}

impl<'a> ComparisonView<'a> {
    pub(super) fn new(c: &'a Comparison, all: bool, full_keys: bool) -> Self {
        if full_keys {
            return ComparisonView {
                c,
                short: BTreeMap::new(),
                all,
            };
        }
        let mut items: Vec<(&str, &str, &benchsuite_core::param::Point)> = Vec::new();
        items.extend(
            c.metrics
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.problems
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.added
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        items.extend(
            c.not_comparable
                .iter()
                .map(|m| (m.key.as_str(), m.id.as_str(), &m.params)),
        );
        let pairs: Vec<(&str, &benchsuite_core::param::Point)> =
            items.iter().map(|(_, id, p)| (*id, *p)).collect();
        let keys = keys::short_keys(&pairs, &BTreeSet::new());
        let short = items.iter().map(|(k, _, _)| *k).zip(keys).collect();
        ComparisonView { c, short, all }
    }

    /// The short key of a record named by its full key.
    pub(super) fn key<'k>(&'k self, full: &'k str) -> &'k str {
        self.short.get(full).map_or(full, String::as_str)
    }

    /// The metrics shown: all with `all`, else those that can fail the gate.
    pub(super) fn metrics(&self) -> impl Iterator<Item = &'a MetricComparison> + '_ {
        self.c.metrics.iter().filter(|m| self.all || m.gated)
    }
}

/// The cells of each shown metric, under [`COMPARISON_HEADER`]: the change
/// with its interval, the verdict (with `worse` for an undecided change on
/// the worse side), the worst change the evidence leaves open and the
/// noise between runs it was judged with (where the rounds were the unit,
/// `drift`, the notes list).
pub(super) fn comparison_rows(v: &ComparisonView<'_>) -> Vec<[String; 8]> {
    v.metrics()
        .map(|m| {
            let mut tags = Vec::new();
            if m.verdict == Verdict::Undecided && m.is_worse() {
                tags.push("worse");
            }
            if !m.gated {
                tags.push("not gated");
            }
            let verdict = if tags.is_empty() {
                m.verdict.to_string()
            } else {
                format!("{} ({})", m.verdict, tags.join(", "))
            };
            [
                v.key(&m.key).to_string(),
                m.metric.clone(),
                format_value(m.base_median, &m.unit),
                format_value(m.new_median, &m.unit),
                m.change_text(),
                verdict,
                m.worst_text(),
                between_cell(m),
            ]
        })
        .collect()
}

/// The noise between runs a metric was judged with: `3.1% (10 runs)`
/// measured from a history, `5% prior` without one.
fn between_cell(m: &MetricComparison) -> String {
    if m.between_source == Some(BetweenSource::Paired) {
        return "paired".into();
    }
    let Some(cv) = m.between_cv else {
        return String::new();
    };
    let cv = format!("{:.1}%", cv * 100.0);
    match m.between_source {
        Some(BetweenSource::History) => format!("{cv} ({} runs)", m.history_runs),
        Some(BetweenSource::Floor) => format!("{cv} floor"),
        Some(BetweenSource::Prior) => format!("{cv} prior"),
        _ => String::new(),
    }
}

/// What fails the gate, one line each, listed before anything else:
/// `FAIL os.syscall call=write: failed in new: prepare: ...`, then each
/// regression.
pub(super) fn gate_lines(v: &ComparisonView<'_>) -> Vec<String> {
    let c = v.c;
    let mut lines = Vec::new();
    for p in &c.problems {
        let what = match (&p.metric, p.key.is_empty()) {
            (Some(m), _) => format!("{} ({m})", v.key(&p.key)),
            (None, false) => v.key(&p.key).to_string(),
            (None, true) => "new report".into(),
        };
        let tag = if p.allowed { "allowed" } else { "FAIL" };
        lines.push(match p.kind {
            ProblemKind::NotJudged => format!("{tag} {what}: not judged: {}", p.reason),
            kind => format!("{tag} {what}: {kind} in new: {}", p.reason),
        });
    }
    for m in c.with_verdict(Verdict::Regressed).filter(|m| m.gated) {
        lines.push(format!(
            "FAIL {} ({}): regressed {} (threshold {})",
            v.key(&m.key),
            m.metric,
            m.change_text(),
            m.tolerance
        ));
    }
    lines
}

/// The one-line summary under a comparison, then one line per thing the
/// reader should know: the rule, the noise floor, what differs between the
/// runs, added records and records not compared (those not compared for
/// one reason on one line).
pub(super) fn comparison_notes(v: &ComparisonView<'_>) -> (String, Vec<String>) {
    let c = v.c;
    let mut rule = match c.rule {
        GateRule::Interval => "rule: regressed when the whole interval of the change lies beyond the threshold; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
        GateRule::Band => "rule: regressed when the change lies outside the band the baselines predict for an unchanged run, beyond the threshold, in most of new's rounds and at no level the history holds; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
        GateRule::Paired => "rule: regressed when the interleaved rounds' paired differences rule out no change and their trimmed mean is beyond the threshold; unchanged when its worse-side bound is within the threshold; undecided otherwise".to_string(),
    };
    rule.push_str(&format!(
        " ({}; metrics in %: {}pp; tails: {}",
        Tolerance::Relative(c.threshold),
        crate::compare::rules::PERCENT_METRIC_DEFAULT,
        Tolerance::Relative(c.tail_threshold),
    ));
    for r in &c.rules {
        rule.push_str(&format!("; {r}"));
    }
    rule.push(')');
    let mut notes = vec![rule];
    if c.metrics.iter().any(|m| m.unchanged_above.is_some()) {
        notes.push(format!(
            "worst: the worst change this evidence leaves open ({:.0}% one-sided): a metric is unchanged when it lies within the threshold",
            100.0 * (1.0 - c.beta)
        ));
    }
    if c.family > 0 {
        let least = c
            .metrics
            .iter()
            .filter(|m| m.gated)
            .filter_map(|m| m.level)
            .fold(c.alpha, f64::min);
        let pct = |v: f64| {
            let s = format!("{:.3}", v * 100.0);
            format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
        };
        notes.push(format!(
            "family: {} gated metrics share a {} chance of any false alarm (Holm): each is judged at a one-sided level of {} to {}, its interval the two-sided 1 − 2·level one",
            c.family,
            pct(c.alpha),
            pct(least),
            pct(c.alpha),
        ));
    }
    match c.baselines.len() {
        0 | 1 => {
            if c.metrics.iter().any(|m| m.between_source == Some(BetweenSource::Prior)) {
                notes.push("history: one baseline, so the noise between runs is unknown: each metric's prior between-run CV stands in for it (conservative; give several baselines, or set `CompareOptions::between_run`)".into());
            } else if c.metrics.iter().any(|m| m.between_source == Some(BetweenSource::None)) {
                notes.push("history: one baseline and no between-run CV: only the noise inside the two runs counts, so a machine state that outlasts a run looks like a change".into());
            }
        }
        n => notes.push(format!(
            "history: {n} baseline runs ({} … {}, the newest decides what is missing); each metric's noise between runs is measured from them",
            c.baselines[0],
            c.baselines[n - 1]
        )),
    }
    for e in &c.excluded {
        notes.push(format!(
            "left out of the history: {e} (`CompareOptions::allow.mixed_hosts` keeps it)"
        ));
    }
    if let Some(k) = &c.confirmation {
        notes.push(format!(
            "confirmation: {} of the {} undecided metrics decided by {} interleaved pairs of the two builds ({} record(s), looks at {} pairs, {:.0} s){}",
            k.decided,
            k.open,
            k.pairs,
            k.records.len(),
            k.looks.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "),
            k.wall_s,
            k.note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
        ));
    } else if c.outcome() == crate::compare::Outcome::Undecided {
        notes.push(if c.rule == GateRule::Paired {
            "undecided: these interleaved rounds cannot yet tell these changes from the noise; more rounds (`Builds::rounds`) would decide them".into()
        } else {
            "undecided: the new run alone cannot tell these changes from the noise; measure the two builds side by side (interleaved) to decide them".into()
        });
    }
    // Only the interval rule alarms exactly when an interval clears the
    // threshold, so only there does the quiet threshold of an A/A pair say
    // which threshold would have kept it quiet.
    let quiet = c
        .noise_floor()
        .filter(|(q, _)| c.rule == GateRule::Interval && *q > 0.0);
    let moved = c.count(Verdict::Regressed) + c.count(Verdict::Improved) > 0;
    if let (Some((q, qm)), false) = (quiet, moved) {
        notes.push(format!(
            "noise (if these are two runs of the same build): an alarm at any threshold below {} ({} {}); set `CompareOptions::threshold` above it",
            pct_text(q),
            v.key(&qm.key),
            qm.metric,
        ));
    }
    if let (Some((w, wm)), true) = (c.widest_noise(), moved) {
        notes.push(format!(
            "noise: the widest interval is ±{} ({} {}): smaller real changes cannot be confirmed at these `RunConfig::runs`/`RunConfig::rounds`",
            pct_text(w).trim_start_matches('+'),
            v.key(&wm.key),
            wm.metric
        ));
    }
    let what = |key: &str, metric: &Option<String>| match metric {
        Some(m) => format!("{} ({m})", v.key(key)),
        None => v.key(key).to_string(),
    };
    for d in &c.context_differences {
        notes.push(format!("differs between the runs: {d}"));
    }
    // Paired rounds are judged round by round whatever their drift: the
    // note would say nothing there.
    let drifted: Vec<String> = v
        .metrics()
        .filter(|m| m.drift && m.verdict != Verdict::NotJudged && c.rule != GateRule::Paired)
        .map(|m| format!("{} ({})", v.key(&m.key), m.metric))
        .collect();
    if !drifted.is_empty() {
        notes.push(format!(
            "drift: the rounds of a side differed by more than their samples' noise, so each round counted as one sample: {}",
            drifted.join(", ")
        ));
    }
    for m in v.metrics().filter(|m| m.verdict != Verdict::NotJudged) {
        if let Some(n) = &m.note {
            notes.push(format!("{} ({}): {n}", v.key(&m.key), m.metric));
        }
    }
    if !c.added.is_empty() {
        let added: Vec<String> = c.added.iter().map(|u| what(&u.key, &u.metric)).collect();
        notes.push(format!("added in new: {}", added.join(", ")));
    }
    // Records not compared for one reason (five GPU records without a
    // driver, skipped on both sides) share one line.
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for n in &c.not_comparable {
        let w = what(&n.key, &n.metric);
        match groups.iter_mut().find(|(r, _)| *r == n.reason) {
            Some((_, keys)) => keys.push(w),
            None => groups.push((n.reason.as_str(), vec![w])),
        }
    }
    for (reason, keys) in groups {
        notes.push(format!("not compared: {}: {reason}", keys.join(", ")));
    }
    (c.summary(), notes)
}

/// A relative change as a percentage: `+7.2%`, or `+2.8e13%` past
/// ±10,000% (never capped).
fn pct_text(v: f64) -> String {
    crate::compare::percent_text(v)
}
