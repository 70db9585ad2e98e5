//! A baseline: per machine type, the band each gated metric of a healthy
//! node falls in, built from the fleet's own reports, plus the rules an
//! operator adds. Written as TOML a person edits ([`Baseline::to_toml`]);
//! read back with any TOML reader into [`Baseline`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use benchsuite_core::bench::Direction;
use benchsuite_core::results::{MetricRole, Report, Status};
use benchsuite_core::stats::percentile_sorted;

use super::model::{AcceptanceError, BASELINE_FORMAT, Severity};
use super::quantity::{format_quantity, parse_quantity};
use crate::fleet::{MAD_SCALE, host_label};

/// How many scaled MADs of the fleet's spread a band's bound lies from
/// its median (at least the margin).
pub const BAND_MADS: f64 = 3.0;

/// The least distance of a bound from the median, relative, when the
/// spread is smaller or unknown (fewer than 3 runs).
pub const DEFAULT_MARGIN: f64 = 0.05;

/// The least distance, in percentage points, of a metric measured in `%`
/// (UDP loss), whose relative change near zero means nothing.
pub const PERCENT_MARGIN_PP: f64 = 0.5;

/// The fewest runs whose spread a band uses; below it the margin alone.
pub const MIN_RUNS_FOR_SPREAD: usize = 3;

/// What sets machines apart by design: a node is judged against the
/// bands of its own machine type only.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MachineType {
    /// CPU model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<usize>,
    /// Memory, rounded to GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<u64>,
    /// The GPU models, one entry per device, sorted.
    #[serde(default)]
    pub gpus: Vec<String>,
}

impl MachineType {
    /// The machine type of a report's host.
    pub fn of(r: &Report) -> MachineType {
        let mut gpus: Vec<String> = r
            .host
            .extra
            .get("gpu")
            .and_then(|g| g.get("devices"))
            .and_then(|d| d.as_array())
            .map(|d| {
                d.iter()
                    .filter_map(|x| x.get("name").and_then(|n| n.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        gpus.sort();
        MachineType {
            cpu: r.host.cpu.model.clone(),
            cpus: r.host.cpu.logical_cpus,
            memory_gib: r
                .host
                .memory_bytes
                .map(|b| (b as f64 / (1u64 << 30) as f64).round() as u64),
            gpus,
        }
    }

    /// A name for people: `AMD EPYC 9B45, 2 CPUs, 8 GiB, 8× NVIDIA H100`.
    pub fn name(&self) -> String {
        let mut s = self.cpu.clone().unwrap_or_else(|| "unknown CPU".into());
        if let Some(n) = self.cpus {
            let _ = write!(s, ", {n} CPUs");
        }
        if let Some(g) = self.memory_gib {
            let _ = write!(s, ", {g} GiB");
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for g in &self.gpus {
            *counts.entry(g).or_default() += 1;
        }
        for (g, n) in counts {
            let _ = write!(s, ", {n}× {g}");
        }
        s
    }

    /// The facts in which `self` differs from `other`, as `field self vs
    /// other` phrases; empty when equal.
    pub fn differences(&self, other: &MachineType) -> Vec<String> {
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        let n = |v: Option<u64>| v.map_or("unknown".into(), |x| x.to_string());
        let mut d = Vec::new();
        if self.cpu != other.cpu {
            d.push(format!("cpu `{}` vs `{}`", o(&self.cpu), o(&other.cpu)));
        }
        if self.cpus != other.cpus {
            d.push(format!(
                "cpus {} vs {}",
                n(self.cpus.map(|x| x as u64)),
                n(other.cpus.map(|x| x as u64))
            ));
        }
        if self.memory_gib != other.memory_gib {
            d.push(format!(
                "memory {} GiB vs {} GiB",
                n(self.memory_gib),
                n(other.memory_gib)
            ));
        }
        if self.gpus != other.gpus {
            let g = |v: &[String]| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            d.push(format!("gpus [{}] vs [{}]", g(&self.gpus), g(&other.gpus)));
        }
        d
    }
}

/// A baseline file: see the module docs and docs/fleet.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The file format ([`BASELINE_FORMAT`]).
    pub format: u32,
    /// The benchsuite that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The report schema of the runs it was built from (`1.5`): a report
    /// of another major is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// One entry per machine type.
    #[serde(default, rename = "machine")]
    pub machines: Vec<MachineBaseline>,
    /// Rules an operator added, judged beside the bands.
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
}

/// The bands of one machine type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineBaseline {
    /// The machine type's name (for people and for rules' `machine`).
    pub name: String,
    /// CPU model name a node must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<usize>,
    /// Memory, rounded to GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<u64>,
    /// The GPU models, one entry per device, sorted.
    #[serde(default)]
    pub gpus: Vec<String>,
    /// The hosts whose runs the bands came from.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// How many runs (reports).
    #[serde(default)]
    pub runs: usize,
    /// One row per record and gated metric.
    #[serde(default, rename = "band")]
    pub bands: Vec<Band>,
}

impl MachineBaseline {
    /// The machine type a node must have to be judged by these bands.
    pub fn machine_type(&self) -> MachineType {
        let mut gpus = self.gpus.clone();
        gpus.sort();
        MachineType {
            cpu: self.cpu.clone(),
            cpus: self.cpus,
            memory_gib: self.memory_gib,
            gpus,
        }
    }
}

/// One metric's acceptance band: a healthy node measures at least `min`
/// (a rate) or at most `max` (a time); the other side is not judged (a
/// faster node is not unhealthy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// The record: its id and requested parameters, as reports name it
    /// (`mem.bandwidth op=triad`).
    pub record: String,
    /// The metric.
    pub metric: String,
    /// Its base unit (`B/s`, `s`).
    pub unit: String,
    /// The fleet's median.
    pub expected: String,
    /// The lowest healthy value (metrics where higher is better).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    /// The highest healthy value (metrics where lower is better).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    /// `fail` (the default) or `warn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// What to do when it fails (a default per module otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Where the band came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A band's numbers, parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandValues {
    /// The median of the fleet.
    pub expected: f64,
    /// The lowest healthy value.
    pub min: Option<f64>,
    /// The highest healthy value.
    pub max: Option<f64>,
}

impl Band {
    /// The band's numbers in its base unit; an error names the field.
    pub fn values(&self) -> Result<BandValues, benchsuite_core::ValueError> {
        self.values_text().map_err(Into::into)
    }

    fn values_text(&self) -> Result<BandValues, String> {
        let p = |field: &str, v: &str| {
            parse_quantity(v, &self.unit)
                .map_err(|e| format!("band {} {}: {field} {e}", self.record, self.metric))
        };
        let v = BandValues {
            expected: p("expected", &self.expected)?,
            min: self.min.as_deref().map(|m| p("min", m)).transpose()?,
            max: self.max.as_deref().map(|m| p("max", m)).transpose()?,
        };
        if v.min.is_none() && v.max.is_none() {
            return Err(format!(
                "band {} {}: give min (a rate) or max (a time)",
                self.record, self.metric
            ));
        }
        Ok(v)
    }
}

/// A rule an operator adds to a baseline (`[[rule]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Which records: a module (`mem`), an id (`gpu.bandwidth`), a glob
    /// (`disk.*`), `all`, each optionally followed by parameters the
    /// record must have (`gpu.bandwidth op=d2d`).
    pub record: String,
    /// Which metric; the record's headline metric when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// `>= 3.8 TB/s`, `<= 40us`, `>= 90% of baseline`, `<= 110% of
    /// baseline`, or `ok` (the record must have measured).
    pub require: String,
    /// `fail` (the default) or `warn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// What to do when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Only nodes of this machine type (its `name`); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// What a rule requires, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// The record measured (status ok).
    Ok,
    /// At least a value (in the metric's base unit once resolved).
    AtLeast(Bound),
    /// At most a value.
    AtMost(Bound),
}

/// The other side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// An amount with its unit, as written (`3.8 TB/s`): parsed against
    /// the metric's unit when the record is known.
    Value(String),
    /// A fraction of the baseline's expected value (`0.9` for 90%).
    OfBaseline(f64),
}

impl Rule {
    /// Parses `require`.
    pub fn requirement(&self) -> Result<Requirement, benchsuite_core::ValueError> {
        self.requirement_text().map_err(Into::into)
    }

    fn requirement_text(&self) -> Result<Requirement, String> {
        let t = self.require.trim();
        let how = "write `ok`, `>= VALUE UNIT` (`>= 3.8 TB/s`), `<= VALUE UNIT` (`<= 40us`) or `>= 90% of baseline`";
        if t == "ok" {
            return Ok(Requirement::Ok);
        }
        let (at_least, rest) = if let Some(r) = t.strip_prefix(">=") {
            (true, r.trim())
        } else if let Some(r) = t.strip_prefix("<=") {
            (false, r.trim())
        } else {
            return Err(format!("rule for {}: require `{t}`: {how}", self.record));
        };
        let bound = match rest.strip_suffix("of baseline") {
            Some(p) => {
                let p = p.trim();
                let f = p
                    .strip_suffix('%')
                    .and_then(|x| x.trim().parse::<f64>().ok())
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| {
                        format!(
                            "rule for {}: require `{t}`: `{p}` is not a percentage above 0 ({how})",
                            self.record
                        )
                    })?;
                Bound::OfBaseline(f / 100.0)
            }
            None if rest.is_empty() => {
                return Err(format!("rule for {}: require `{t}`: {how}", self.record));
            }
            None => Bound::Value(rest.to_string()),
        };
        Ok(if at_least {
            Requirement::AtLeast(bound)
        } else {
            Requirement::AtMost(bound)
        })
    }

    /// The selector part of `record` and the parameters it requires.
    pub fn selector(&self) -> (&str, Vec<&str>) {
        let mut parts = self.record.split_whitespace();
        let sel = parts.next().unwrap_or("");
        (sel, parts.collect())
    }
}

/// How a baseline is built ([`Baseline::build`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildOptions {
    /// The least relative distance of a bound from the median.
    pub margin: f64,
    /// Scaled MADs of the fleet's spread to the bound.
    pub mads: f64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            margin: DEFAULT_MARGIN,
            mads: BAND_MADS,
        }
    }
}

/// The metrics of a record a baseline bands: the gated ones (headline and
/// secondary, not derived, spread or a repeat of an earlier metric's
/// samples).
fn gated_metrics(rec: &benchsuite_core::Record) -> Vec<&benchsuite_core::Metric> {
    let mut out: Vec<&benchsuite_core::Metric> = Vec::new();
    for (k, m) in rec.metrics.iter().enumerate() {
        let role = m.role.unwrap_or(if k == 0 {
            MetricRole::Headline
        } else {
            MetricRole::Secondary
        });
        let twin = rec.metrics[..k]
            .iter()
            .any(|x| x.unit == m.unit && x.samples == m.samples);
        if role.gated_by_default() && !twin && m.summary.median.is_finite() {
            out.push(m);
        }
    }
    out
}

impl Baseline {
    /// Builds the bands of every machine type in `reports` (each a node's
    /// run; a host may appear in several): per record and gated metric,
    /// the median of the runs' medians, and a bound in the bad direction
    /// at `mads` scaled MADs of the runs' spread or `margin` of the
    /// median, whichever is wider (the margin alone with fewer than 3
    /// runs). Records that did not measure (failed, skipped) contribute
    /// nothing.
    pub fn build(reports: &[Report], options: &BuildOptions) -> Result<Baseline, AcceptanceError> {
        if reports.is_empty() {
            return Err(AcceptanceError::Empty);
        }
        if !(options.margin.is_finite() && options.margin >= 0.0 && options.margin < 1.0) {
            return Err(AcceptanceError::Invalid(format!(
                "margin {}: give a fraction in [0, 1)",
                options.margin
            )));
        }
        let mut groups: BTreeMap<MachineType, Vec<&Report>> = BTreeMap::new();
        for r in reports {
            groups.entry(MachineType::of(r)).or_default().push(r);
        }
        let mut machines = Vec::new();
        for (machine, runs) in groups {
            let mut hosts: Vec<String> = runs.iter().map(|r| host_label(r)).collect();
            hosts.sort();
            hosts.dedup();
            // (record key, metric) in first-seen order → (unit, direction, medians).
            let mut order: Vec<(String, String)> = Vec::new();
            let mut cells: BTreeMap<(String, String), (String, Direction, Vec<f64>)> =
                BTreeMap::new();
            for r in &runs {
                for rec in r.records.iter().filter(|x| x.status == Status::Ok) {
                    let key = rec.requested_key();
                    for m in gated_metrics(rec) {
                        let k = (key.clone(), m.name.clone());
                        let cell = cells.entry(k.clone()).or_insert_with(|| {
                            order.push(k);
                            (m.unit.clone(), m.direction, Vec::new())
                        });
                        if cell.0 == m.unit && cell.1 == m.direction {
                            cell.2.push(m.summary.median);
                        }
                    }
                }
            }
            let bands = order
                .into_iter()
                .map(|k| {
                    let (unit, direction, values) = cells.remove(&k).expect("every key has a cell");
                    band(k.0, k.1, &unit, direction, values, runs.len(), options)
                })
                .collect();
            machines.push(MachineBaseline {
                name: machine.name(),
                cpu: machine.cpu,
                cpus: machine.cpus,
                memory_gib: machine.memory_gib,
                gpus: machine.gpus,
                hosts,
                runs: runs.len(),
                bands,
            });
        }
        Ok(Baseline {
            format: BASELINE_FORMAT,
            tool_version: Some(env!("CARGO_PKG_VERSION").to_string()),
            schema: Some(reports[0].schema_version.clone()),
            machines,
            rules: Vec::new(),
        })
    }

    /// Explicitly merges a newer build into `previous`: machine types the
    /// new data has replace theirs (a band keeps the `severity` and
    /// `next` a person gave it), the others stay, and `previous`'s rules
    /// stay. Returns the machine types replaced and kept, by name.
    pub fn merge_into(self, previous: Baseline) -> (Baseline, Vec<String>, Vec<String>) {
        let (matched, unmatched): (Vec<MachineBaseline>, Vec<MachineBaseline>) =
            previous.machines.into_iter().partition(|old| {
                self.machines
                    .iter()
                    .any(|m| m.machine_type() == old.machine_type())
            });
        let kept: Vec<String> = unmatched.iter().map(|m| m.name.clone()).collect();
        let mut replaced = Vec::new();
        let mut machines = unmatched;
        for mut m in self.machines {
            if let Some(old) = matched
                .iter()
                .find(|o| o.machine_type() == m.machine_type())
            {
                for b in &mut m.bands {
                    if let Some(o) = old
                        .bands
                        .iter()
                        .find(|o| o.record == b.record && o.metric == b.metric)
                    {
                        b.severity = o.severity;
                        b.next.clone_from(&o.next);
                    }
                }
            }
            replaced.push(m.name.clone());
            machines.push(m);
        }
        (
            Baseline {
                machines,
                rules: previous.rules,
                ..self
            },
            replaced,
            kept,
        )
    }
}

/// One band from the runs' medians of a record's metric.
fn band(
    record: String,
    metric: String,
    unit: &str,
    direction: Direction,
    mut values: Vec<f64>,
    runs: usize,
    o: &BuildOptions,
) -> Band {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = percentile_sorted(&values, 0.5);
    let spread = if n >= MIN_RUNS_FOR_SPREAD {
        let mut dev: Vec<f64> = values.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        MAD_SCALE * percentile_sorted(&dev, 0.5)
    } else {
        0.0
    };
    let percent_metric = unit == "%";
    let (margin, margin_text) = if percent_metric {
        (PERCENT_MARGIN_PP, format!("{PERCENT_MARGIN_PP}pp"))
    } else {
        (
            o.margin * median.abs(),
            format!("{}%", trim(o.margin * 100.0)),
        )
    };
    let by_spread = o.mads * spread;
    let half = by_spread.max(margin);
    let side = match direction {
        Direction::Higher => "−",
        Direction::Lower => "+",
    };
    let spread_text = |x: f64| {
        if percent_metric {
            format!("{}pp", trim(x))
        } else if median != 0.0 {
            format!("{}%", trim(100.0 * x / median.abs()))
        } else {
            format_quantity(x, unit)
        }
    };
    let mut source = if n < MIN_RUNS_FOR_SPREAD {
        format!(
            "{n} run{}: median {side} margin {margin_text} (fewer than {MIN_RUNS_FOR_SPREAD} runs: their spread is unknown)",
            if n == 1 { "" } else { "s" }
        )
    } else if by_spread > margin {
        format!(
            "{n} runs: median {side} {} × scaled MAD ({})",
            trim(o.mads),
            spread_text(by_spread)
        )
    } else {
        format!(
            "{n} runs: median {side} margin {margin_text} ({} × scaled MAD is {})",
            trim(o.mads),
            spread_text(by_spread)
        )
    };
    if n < runs {
        let _ = write!(source, "; measured in {n} of {runs} runs");
    }
    if direction == Direction::Higher && median - half <= 0.0 && median > 0.0 {
        source.push_str(
            "; the runs vary so much that the bound reaches 0 (it never fails): measure longer",
        );
    }
    let (min, max) = match direction {
        Direction::Higher if median > 0.0 => {
            (Some(format_quantity((median - half).max(0.0), unit)), None)
        }
        Direction::Higher => (Some(format_quantity(median - half, unit)), None),
        Direction::Lower => (None, Some(format_quantity(median + half, unit))),
    };
    Band {
        record,
        metric,
        unit: unit.to_string(),
        expected: format_quantity(median, unit),
        min,
        max,
        severity: None,
        next: None,
        source: Some(source),
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A TOML string literal.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Baseline {
    /// The baseline as the TOML file a person reads and edits: one line
    /// per band, comments saying what each field means.
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        let runs: usize = self.machines.iter().map(|m| m.runs).sum();
        let _ = writeln!(
            s,
            "# Acceptance baseline for `benchsuite check --baseline FILE REPORT`, written by\n\
             # `benchsuite baseline` from {runs} run(s) of {} machine type(s). Per machine type,\n\
             # each band is where a healthy node's metric falls: at least `min` (rates) or at\n\
             # most `max` (times), from the fleet's median and spread (`source`). Edit freely:\n\
             # widen a band, add `severity = \"warn\"` or `next = \"what to do\"` to a row, add\n\
             # [[rule]] tables (`require = \">= 3.8 TB/s\"`, `\">= 90% of baseline\"`, `\"ok\"`).\n\
             # Rebuild with `benchsuite baseline ... --merge FILE` to keep your edits.",
            self.machines.len()
        );
        let _ = writeln!(s, "\nformat = {}", self.format);
        if let Some(v) = &self.tool_version {
            let _ = writeln!(s, "tool_version = {}", quoted(v));
        }
        if let Some(v) = &self.schema {
            let _ = writeln!(s, "schema = {}", quoted(v));
        }
        for m in &self.machines {
            let _ = writeln!(s, "\n[[machine]]\nname = {}", quoted(&m.name));
            if let Some(c) = &m.cpu {
                let _ = writeln!(s, "cpu = {}", quoted(c));
            }
            if let Some(c) = m.cpus {
                let _ = writeln!(s, "cpus = {c}");
            }
            if let Some(g) = m.memory_gib {
                let _ = writeln!(s, "memory_gib = {g}");
            }
            let list = |v: &[String]| v.iter().map(|x| quoted(x)).collect::<Vec<_>>().join(", ");
            let _ = writeln!(s, "gpus = [{}]", list(&m.gpus));
            let _ = writeln!(s, "hosts = [{}]", list(&m.hosts));
            let _ = writeln!(s, "runs = {}", m.runs);
            let _ = writeln!(s, "band = [");
            for b in &m.bands {
                let mut row = format!(
                    "  {{ record = {}, metric = {}, unit = {}, expected = {}",
                    quoted(&b.record),
                    quoted(&b.metric),
                    quoted(&b.unit),
                    quoted(&b.expected)
                );
                for (k, v) in [("min", &b.min), ("max", &b.max)] {
                    if let Some(v) = v {
                        let _ = write!(row, ", {k} = {}", quoted(v));
                    }
                }
                if let Some(sev) = b.severity {
                    let _ = write!(row, ", severity = {}", quoted(sev.as_str()));
                }
                for (k, v) in [("next", &b.next), ("source", &b.source)] {
                    if let Some(v) = v {
                        let _ = write!(row, ", {k} = {}", quoted(v));
                    }
                }
                let _ = writeln!(s, "{row} }},");
            }
            let _ = writeln!(s, "]");
        }
        if self.rules.is_empty() {
            let _ = writeln!(
                s,
                "\n# [[rule]]\n# record = \"mem.bandwidth\"          # a module, id or glob, and parameters (`gpu.bandwidth op=d2d`)\n# metric = \"bandwidth\"              # the headline metric when absent\n# require = \">= 90% of baseline\"    # or `>= 3.8 TB/s`, `<= 40us`, `ok`\n# severity = \"fail\"                 # or warn\n# next = \"reseat the DIMMs; check the BIOS memory speed\""
            );
        }
        for r in &self.rules {
            let _ = writeln!(s, "\n[[rule]]\nrecord = {}", quoted(&r.record));
            if let Some(m) = &r.metric {
                let _ = writeln!(s, "metric = {}", quoted(m));
            }
            let _ = writeln!(s, "require = {}", quoted(&r.require));
            if let Some(sev) = r.severity {
                let _ = writeln!(s, "severity = {}", quoted(sev.as_str()));
            }
            if let Some(n) = &r.next {
                let _ = writeln!(s, "next = {}", quoted(n));
            }
            if let Some(m) = &r.machine {
                let _ = writeln!(s, "machine = {}", quoted(m));
            }
        }
        s
    }
}
