//! Judging one node's report by a baseline: see the module docs.

use std::fmt::Write as _;

use serde::Serialize;

use benchsuite_core::results::{Metric, Record, Report, Status, schema_major};
use benchsuite_core::text::printable_line;

use super::baseline::{Band, Baseline, Bound, MachineBaseline, MachineType, Requirement, Rule};
use super::model::{AcceptanceError, BASELINE_FORMAT, Grade, Severity};
use super::quantity::{format_quantity, parse_quantity};
use crate::fleet::host_label;

/// The verdict of one band or rule on one record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleResult {
    /// PASS, WARN or FAIL.
    pub grade: Grade,
    /// The rule's severity (what a clear break of it grades).
    pub severity: Severity,
    /// `band` (from the baseline's data) or `rule` (an operator's).
    pub kind: &'static str,
    /// The rule as a person reads it: `mem.bandwidth op=triad: bandwidth
    /// ≥ 50.10 GB/s`.
    pub rule: String,
    /// The record judged (the rule's selector when none matched).
    pub record: String,
    /// The metric judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// The measured median, in `unit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The 95% interval around it, where the record has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// The metric's base unit.
    pub unit: String,
    /// The value as a share of the baseline's expected value (1.0 = as
    /// expected), where the baseline has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of_baseline: Option<f64>,
    /// Why it graded so.
    pub reason: String,
    /// What to do (on WARN and FAIL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One node's verdict: every band and rule that applies to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeCheck {
    /// The report's host (its host name, and rank under a launcher).
    pub host: String,
    /// The node's name as a scheduler calls it (`scontrol update
    /// nodename=`): the launcher's node name, else the short host name.
    pub node: String,
    /// Its machine type's name.
    pub machine: String,
    /// The worst grade of its results (PASS when there are none).
    pub grade: Grade,
    /// One per band and per rule and record.
    pub results: Vec<RuleResult>,
}

impl NodeCheck {
    /// How many results grade PASS, WARN and FAIL.
    pub fn counts(&self) -> [usize; 3] {
        let mut c = [0; 3];
        for r in &self.results {
            c[r.grade as usize] += 1;
        }
        c
    }

    /// The results that are not PASS, worst first.
    pub fn problems(&self) -> Vec<&RuleResult> {
        let mut p: Vec<&RuleResult> = self
            .results
            .iter()
            .filter(|r| r.grade != Grade::Pass)
            .collect();
        p.sort_by_key(|r| std::cmp::Reverse(r.grade));
        p
    }

    /// One line saying why the node should not take work, for Slurm's
    /// drain reason: `benchsuite: mem.bandwidth op=triad bandwidth 71% of
    /// baseline (+2 more)`; `None` unless the node FAILs.
    pub fn drain_reason(&self) -> Option<String> {
        if self.grade != Grade::Fail {
            return None;
        }
        let fails: Vec<&RuleResult> = self
            .results
            .iter()
            .filter(|r| r.grade == Grade::Fail)
            .collect();
        let first = fails[0];
        let mut s = format!("benchsuite: {}", short(first));
        if fails.len() > 1 {
            let _ = write!(s, " (+{} more)", fails.len() - 1);
        }
        Some(printable_line(&s).into_owned())
    }
}

/// What a result says in a few words: the record, the metric and how far
/// off it is.
fn short(r: &RuleResult) -> String {
    let what = match &r.metric {
        Some(m) => format!("{} {m}", r.record),
        None => r.record.clone(),
    };
    match (r.of_baseline, r.value) {
        (Some(f), Some(_)) => format!("{what} {:.0}% of baseline", 100.0 * f),
        (None, Some(v)) => format!("{what} {}", format_quantity(v, &r.unit)),
        _ => format!("{what}: {}", r.reason.split(':').next().unwrap_or("")),
    }
}

/// The nodes that FAIL, in order.
pub fn defective_nodes(checks: &[NodeCheck]) -> Vec<&NodeCheck> {
    checks.iter().filter(|c| c.grade == Grade::Fail).collect()
}

/// The message of a Kubernetes Node Problem Detector custom plugin: one
/// line of at most `max` characters (NPD's `max_output_length`, 80 by
/// default), the condition's message.
pub fn npd_message(checks: &[NodeCheck], max: usize) -> String {
    let worst = checks.iter().map(|c| c.grade).max().unwrap_or(Grade::Pass);
    let mut s = match worst {
        Grade::Pass => "benchsuite: every check passed".to_string(),
        _ => {
            let problems: Vec<&RuleResult> = checks.iter().flat_map(|c| c.problems()).collect();
            let mut s = format!("benchsuite {worst}: {}", short(problems[0]));
            if problems.len() > 1 {
                let _ = write!(s, " (+{} more)", problems.len() - 1);
            }
            s
        }
    };
    s = printable_line(&s).into_owned();
    if s.chars().count() > max {
        s = s.chars().take(max.saturating_sub(1)).collect::<String>() + "…";
    }
    s
}

/// What to do when a rule of `record`'s module fails, unless the rule
/// says.
fn default_next(record: &str) -> String {
    let module = record.split(['.', ' ']).next().unwrap_or("");
    match module {
        "cpu" => "check the CPU governor and clocks (`benchsuite info`), thermal throttling and other load on the node; measure again",
        "mem" => "check the DIMM population and the memory speed the firmware set (`dmidecode -t memory`), NUMA settings and other load; measure again",
        "disk" => "check the disk's health (`smartctl -a`, `nvme smart-log`), its mount options and other I/O (`iostat -x`); measure again",
        "net" => "check the link's speed and errors (`ethtool`, `ethtool -S`), its MTU and offloads; measure again",
        "gpu" => "run `dcgmi diag -r 2`; check clocks, throttle reasons and the PCIe link (`nvidia-smi -q`); measure again",
        "os" => "check the kernel, its mitigations, the clock source and other load; measure again",
        _ => "measure again; compare the node with a healthy one (`benchsuite compare`)",
    }
    .to_string()
}

/// How a value stands against a bound. The bound is where healthy runs'
/// medians fall (the band already holds the runs' noise), so the median
/// decides a pass; a median beyond the bound fails only when its whole 95%
/// interval is beyond too, and is borderline (WARN) while the interval
/// reaches back: a node drifting past a bound goes PASS, WARN, FAIL, and
/// two runs of one node never land on PASS and FAIL by a coin flip at the
/// bound.
fn against(
    value: f64,
    interval: Option<[f64; 2]>,
    at_least: bool,
    bound: f64,
    severity: Severity,
    unit: &str,
) -> (Grade, String) {
    let (lo, hi) = match interval {
        Some([a, b]) => (a.min(value), b.max(value)),
        None => (value, value),
    };
    let v = format_quantity(value, unit);
    let iv = interval.map_or(String::new(), |_| {
        format!(
            " [{}, {}]",
            format_quantity(lo, unit),
            format_quantity(hi, unit)
        )
    });
    let b = format_quantity(bound, unit);
    let (inside, outside) = if at_least {
        (value >= bound, hi < bound)
    } else {
        (value <= bound, lo > bound)
    };
    let side = if at_least { "below" } else { "above" };
    if inside {
        (
            Grade::Pass,
            format!("{v}{iv}: within {} {b}", if at_least { "≥" } else { "≤" }),
        )
    } else if outside {
        (broken(severity), format!("{v}{iv}: {side} {b}"))
    } else {
        (
            Grade::Warn,
            format!(
                "{v}{iv}: borderline, {side} {b} but its 95% interval reaches back; measure again (a longer run narrows the interval)"
            ),
        )
    }
}

/// The measured median and its 95% interval.
fn measured(m: &Metric) -> (f64, Option<[f64; 2]>) {
    let s = &m.summary;
    (
        s.median,
        s.ci95.filter(|c| c[0].is_finite() && c[1].is_finite()),
    )
}

/// A record that did not measure, as a failure of a rule that needs it.
fn not_measured(rec: &Record) -> String {
    let status = match rec.status {
        Status::Ok => "measured",
        Status::Failed => "failed",
        Status::Skipped => "was skipped",
    };
    match &rec.reason {
        Some(r) => format!("the record {status}: {}", printable_line(r)),
        None => format!("the record {status}"),
    }
}

const MISSING: &str = "no such record in the report (a missing measurement is not a pass)";

/// The grade of a clear break of a rule of `severity`.
fn broken(severity: Severity) -> Grade {
    match severity {
        Severity::Fail => Grade::Fail,
        Severity::Warn => Grade::Warn,
    }
}

/// Judges one band.
fn judge_band(band: &Band, report: &Report) -> Result<RuleResult, AcceptanceError> {
    let v = band.values().map_err(|e| AcceptanceError::Invalid(e.0))?;
    let severity = band.severity.unwrap_or(Severity::Fail);
    let (at_least, bound) = match (v.min, v.max) {
        (Some(m), _) => (true, m),
        (None, Some(m)) => (false, m),
        (None, None) => unreachable!("values() requires a bound"),
    };
    let mut out = RuleResult {
        grade: broken(severity),
        severity,
        kind: "band",
        rule: format!(
            "{}: {} {} {}",
            band.record,
            band.metric,
            if at_least { "≥" } else { "≤" },
            format_quantity(bound, &band.unit)
        ),
        record: band.record.clone(),
        metric: Some(band.metric.clone()),
        value: None,
        interval: None,
        unit: band.unit.clone(),
        of_baseline: None,
        reason: MISSING.to_string(),
        next: Some(
            band.next
                .clone()
                .unwrap_or_else(|| default_next(&band.record)),
        ),
    };
    let Some(rec) = report
        .records
        .iter()
        .find(|r| r.requested_key() == band.record)
    else {
        return Ok(out);
    };
    if rec.status != Status::Ok {
        out.reason = not_measured(rec);
        return Ok(out);
    }
    let Some(m) = rec.metric(&band.metric) else {
        out.reason = format!("the record has no metric {}", band.metric);
        return Ok(out);
    };
    if m.unit != band.unit {
        out.reason = format!(
            "the record measures {} in {}, the band is in {}",
            band.metric, m.unit, band.unit
        );
        return Ok(out);
    }
    let (value, interval) = measured(m);
    let (grade, reason) = against(value, interval, at_least, bound, severity, &m.unit);
    out.grade = grade;
    out.value = Some(value);
    out.interval = interval;
    if v.expected != 0.0 {
        out.of_baseline = Some(value / v.expected);
    }
    out.reason = match out.of_baseline {
        Some(f) => format!(
            "{reason} ({:.0}% of the baseline's {})",
            100.0 * f,
            format_quantity(v.expected, &m.unit)
        ),
        None => reason,
    };
    if grade == Grade::Pass {
        out.next = None;
    }
    Ok(out)
}

/// Whether `rec` is one of the records `rule` names.
fn rule_matches(rule: &Rule, rec: &Record) -> bool {
    let (sel, params) = rule.selector();
    let module = rec.id.split('.').next().unwrap_or(&rec.id);
    let id_ok = sel == "all"
        || sel == rec.id
        || sel == module
        || benchsuite_core::registry::glob(sel, &rec.id);
    if !id_ok {
        return false;
    }
    let key = rec.requested_key();
    let have: Vec<&str> = key.split_whitespace().skip(1).collect();
    params.iter().all(|p| have.contains(p))
}

/// Judges one rule on every record it names.
fn judge_rule(
    rule: &Rule,
    report: &Report,
    machine: Option<&MachineBaseline>,
) -> Result<Vec<RuleResult>, AcceptanceError> {
    let req = rule
        .requirement()
        .map_err(|e| AcceptanceError::Invalid(e.0))?;
    let severity = rule.severity.unwrap_or(Severity::Fail);
    let label = match &rule.metric {
        Some(m) => format!("{}: {m} {}", rule.record, rule.require.trim()),
        None => format!("{}: {}", rule.record, rule.require.trim()),
    };
    let base = |record: &str| RuleResult {
        grade: broken(severity),
        severity,
        kind: "rule",
        rule: label.clone(),
        record: record.to_string(),
        metric: rule.metric.clone(),
        value: None,
        interval: None,
        unit: String::new(),
        of_baseline: None,
        reason: MISSING.to_string(),
        next: Some(rule.next.clone().unwrap_or_else(|| default_next(record))),
    };
    let records: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| rule_matches(rule, r))
        .collect();
    if records.is_empty() {
        let mut r = base(&rule.record);
        r.reason = format!(
            "no record in the report matches {} (a missing measurement is not a pass)",
            rule.record
        );
        return Ok(vec![r]);
    }
    let mut out = Vec::new();
    for rec in records {
        let key = rec.requested_key();
        let mut r = base(&key);
        if rec.status != Status::Ok {
            r.reason = not_measured(rec);
            out.push(r);
            continue;
        }
        let (at_least, bound) = match &req {
            Requirement::Ok => {
                r.grade = Grade::Pass;
                r.reason = "measured".into();
                r.next = None;
                out.push(r);
                continue;
            }
            Requirement::AtLeast(b) => (true, b),
            Requirement::AtMost(b) => (false, b),
        };
        let m = match &rule.metric {
            Some(name) => rec.metric(name),
            None => rec.metrics.first(),
        };
        let Some(m) = m else {
            r.reason = format!(
                "the record has no metric {}",
                rule.metric.as_deref().unwrap_or("at all")
            );
            out.push(r);
            continue;
        };
        r.metric = Some(m.name.clone());
        r.unit = m.unit.clone();
        let expected = machine.and_then(|mb| {
            mb.bands
                .iter()
                .find(|b| b.record == key && b.metric == m.name && b.unit == m.unit)
                .and_then(|b| b.values().ok())
                .map(|v| v.expected)
        });
        let limit = match bound {
            Bound::Value(text) => parse_quantity(text, &m.unit).map_err(|e| {
                AcceptanceError::Invalid(format!(
                    "rule for {}: require `{}`: {e}",
                    rule.record, rule.require
                ))
            })?,
            Bound::OfBaseline(f) => match expected {
                Some(e) => f * e,
                None => {
                    r.grade = Grade::Warn;
                    r.reason = format!(
                        "the baseline has no band for {key} {} on this machine type: `{}` cannot be judged",
                        m.name, rule.require
                    );
                    out.push(r);
                    continue;
                }
            },
        };
        let (value, interval) = measured(m);
        let (grade, reason) = against(value, interval, at_least, limit, severity, &m.unit);
        r.grade = grade;
        r.value = Some(value);
        r.interval = interval;
        r.of_baseline = expected.filter(|e| *e != 0.0).map(|e| value / e);
        r.reason = reason;
        if grade == Grade::Pass {
            r.next = None;
        }
        out.push(r);
    }
    Ok(out)
}

/// The machine type of `report` in `baseline`, or why there is none:
/// the difference from the closest type the baseline has.
fn machine_of<'b>(
    baseline: &'b Baseline,
    report: &Report,
) -> Result<Option<&'b MachineBaseline>, AcceptanceError> {
    if baseline.machines.is_empty() {
        return Ok(None);
    }
    let mine = MachineType::of(report);
    if let Some(m) = baseline.machines.iter().find(|m| m.machine_type() == mine) {
        return Ok(Some(m));
    }
    let closest = baseline
        .machines
        .iter()
        .min_by_key(|m| mine.differences(&m.machine_type()).len())
        .expect("not empty");
    Err(AcceptanceError::Machine(format!(
        "{}'s machine type, `{}`, is not in the baseline; the closest, `{}`, differs in {} (this node vs the baseline); the baseline has: {}. Build bands for this machine type from its runs (`benchsuite baseline ... --merge`)",
        printable_line(&host_label(report)),
        printable_line(&mine.name()),
        printable_line(&closest.name),
        printable_line(&mine.differences(&closest.machine_type()).join(", ")),
        baseline
            .machines
            .iter()
            .map(|m| format!("`{}`", printable_line(&m.name)))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Judges one node's report by `baseline`: every band of its machine type
/// and every rule that applies to it (see the module docs). An error
/// where the baseline cannot judge this report at all: another format or
/// schema, a machine type it has no bands for, a rule or band it cannot
/// read.
pub fn check(baseline: &Baseline, report: &Report) -> Result<NodeCheck, AcceptanceError> {
    if baseline.format != BASELINE_FORMAT {
        return Err(AcceptanceError::Format {
            found: baseline.format,
        });
    }
    if let Some(s) = &baseline.schema
        && schema_major(s) != schema_major(&report.schema_version)
    {
        return Err(AcceptanceError::Schema {
            report: report.schema_version.clone(),
            baseline: s.clone(),
        });
    }
    let machine = machine_of(baseline, report)?;
    let mut results = Vec::new();
    if let Some(m) = machine {
        for b in &m.bands {
            results.push(judge_band(b, report)?);
        }
    }
    let name = machine.map_or_else(|| MachineType::of(report).name(), |m| m.name.clone());
    for rule in &baseline.rules {
        if rule.machine.as_ref().is_some_and(|want| *want != name) {
            continue;
        }
        results.extend(judge_rule(rule, report, machine)?);
    }
    let grade = results.iter().map(|r| r.grade).max().unwrap_or(Grade::Pass);
    let node = report
        .cluster
        .as_ref()
        .and_then(|c| c.node.clone())
        .or_else(|| {
            report
                .host
                .hostname
                .as_deref()
                .map(|h| h.split('.').next().unwrap_or(h).to_string())
        })
        .unwrap_or_else(|| "unknown-host".into());
    Ok(NodeCheck {
        host: host_label(report),
        node,
        machine: name,
        grade,
        results,
    })
}

/// Checks that every rule names a benchmark and metric `known` has
/// (`(id, metric names)` of the registry): an error names the rule and
/// the close names. Bands are not checked (they name what a run
/// measured).
pub fn check_names(
    baseline: &Baseline,
    known: &[(String, Vec<String>)],
) -> Result<(), AcceptanceError> {
    for rule in &baseline.rules {
        rule.requirement()
            .map_err(|e| AcceptanceError::Invalid(e.0))?;
        let (sel, _) = rule.selector();
        let ids: Vec<&(String, Vec<String>)> = known
            .iter()
            .filter(|(id, _)| {
                let module = id.split('.').next().unwrap_or(id);
                sel == "all"
                    || sel == id
                    || sel == module
                    || benchsuite_core::registry::glob(sel, id)
            })
            .collect();
        if ids.is_empty() {
            return Err(AcceptanceError::Invalid(format!(
                "rule for `{}`: no benchmark `{sel}`{}",
                rule.record,
                close_names(sel, known.iter().map(|(id, _)| id.as_str()))
            )));
        }
        if let Some(metric) = &rule.metric
            && !ids.iter().any(|(_, ms)| ms.contains(metric))
        {
            return Err(AcceptanceError::Invalid(format!(
                "rule for `{}`: no metric `{metric}` in {}{}",
                rule.record,
                ids.iter()
                    .map(|(id, _)| id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                close_names(
                    metric,
                    ids.iter().flat_map(|(_, ms)| ms.iter().map(String::as_str))
                )
            )));
        }
    }
    Ok(())
}

/// `; did you mean a, b?` for the names within a small edit distance of
/// `want` (or sharing its module), or `; known: ...` for a few others.
fn close_names<'a>(want: &str, names: impl Iterator<Item = &'a str>) -> String {
    let mut all: Vec<&str> = names.collect();
    all.sort();
    all.dedup();
    let module = want.split('.').next().unwrap_or(want);
    let mut close: Vec<(usize, &str)> = all
        .iter()
        .map(|n| (edit_distance(want, n), *n))
        .filter(|(d, n)| *d <= 3.max(want.len() / 3) || n.split('.').next() == Some(module))
        .collect();
    close.sort();
    close.truncate(5);
    if close.is_empty() {
        let some: Vec<&str> = all.into_iter().take(8).collect();
        format!("; known: {}", some.join(", "))
    } else {
        format!(
            "; did you mean {}?",
            close.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
        )
    }
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Whether two results judge the same band or rule on the same record.
fn same_result(a: &RuleResult, b: &RuleResult) -> bool {
    a.kind == b.kind && a.rule == b.rule && a.record == b.record && a.metric == b.metric
}

/// The records to measure again: those of `first`'s results (a check of
/// `report`) that did not pass and that the report holds (a record it
/// lacks its plan does not make).
pub fn records_to_remeasure(first: &NodeCheck, report: &Report) -> Vec<String> {
    let mut keys: Vec<String> = first
        .results
        .iter()
        .filter(|r| r.grade != Grade::Pass)
        .filter(|r| report.records.iter().any(|x| x.requested_key() == r.record))
        .map(|r| r.record.clone())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// `first` with the results that did not pass judged again from later
/// measurements of their records (`again`, oldest first, each a check of a
/// report of the records measured again, holding the results of those
/// records only: a record not measured again is missing from that report
/// by design, not a failure). A result FAILs only when every
/// measurement failed it; one that passed on its last measurement without
/// ever failing PASSes (a borderline measured again); the rest (failed,
/// then passed: intermittent) WARN. The value shown is the last
/// measurement's, the reason says each.
pub fn remeasured(first: &NodeCheck, again: &[NodeCheck]) -> NodeCheck {
    let mut out = first.clone();
    for r in out.results.iter_mut().filter(|r| r.grade != Grade::Pass) {
        let tries: Vec<&RuleResult> = again
            .iter()
            .filter_map(|c| c.results.iter().find(|x| same_result(x, r)))
            .collect();
        let Some(last) = tries.last() else {
            continue;
        };
        let grades: Vec<Grade> = std::iter::once(r.grade)
            .chain(tries.iter().map(|t| t.grade))
            .collect();
        let grade = if grades.iter().all(|g| *g == Grade::Fail) {
            Grade::Fail
        } else if last.grade == Grade::Pass && !grades.contains(&Grade::Fail) {
            Grade::Pass
        } else {
            Grade::Warn
        };
        let story = grades
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(" → ");
        let fails = grades.iter().filter(|g| **g == Grade::Fail).count();
        let what = match grade {
            Grade::Fail => "failed every time".to_string(),
            Grade::Pass => "passed when measured again".to_string(),
            Grade::Warn if fails > 0 && grades.contains(&Grade::Pass) => {
                "intermittent: failed, and passed when measured again; watch this node".to_string()
            }
            Grade::Warn if fails > 0 => format!(
                "failed {fails} of {} times, borderline the others",
                grades.len()
            ),
            Grade::Warn => "still borderline".to_string(),
        };
        r.reason = format!(
            "{} [measured {}×: {story}; {what}]",
            last.reason,
            grades.len()
        );
        r.grade = grade;
        r.value = last.value;
        r.interval = last.interval;
        r.of_baseline = last.of_baseline;
        if grade == Grade::Pass {
            r.next = None;
        }
    }
    out.grade = out
        .results
        .iter()
        .map(|r| r.grade)
        .max()
        .unwrap_or(Grade::Pass);
    out
}
