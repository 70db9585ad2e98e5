//! Comparison of two fleet reports (`benchsuite merge` output): each host
//! of the new fleet against the same host of the baseline fleet, judged
//! as [`compare`](super::compare) judges two reports, and one gate over
//! all of them.
//!
//! # Pairing hosts
//!
//! Hosts pair by their label ([`host_label`]: the host name, with `-rRANK`
//! under a launcher). A host left over on both sides then pairs by its host
//! name alone where that name has one report on each side, since a launcher
//! may give the same node another rank in another job.
//!
//! # The gate
//!
//! The new fleet passes when every paired host passes its own gate, and
//! no host of the baseline is missing from the new fleet. A missing host
//! fails the gate as a missing record does (a node that vanished is not a
//! node that passed); `--allow-missing` makes it a note. A host only in the
//! new fleet is listed, not judged. A host pair that cannot be compared (no
//! record in common, or reports of different schema majors) fails the gate
//! with the reason, and the other hosts are still judged; only when no
//! host pair can be compared is that an error ([`CompareError::Host`]), as
//! fleets without a host in common are ([`CompareError::NoHostInCommon`]).
//! Threshold rules are checked once against every host's records, so a rule
//! for benchmarks only some hosts ran is valid.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::{
    CompareError, CompareOptions, Comparison, check_options, check_rules, check_schema,
    compare_checked,
};
use crate::export::{Format, escape_markdown, write_comparison};
use crate::fleet::host_label;
use benchsuite_core::results::{Record, Report};

/// The result of [`compare_fleets`]: plain data, serialised as JSON by
/// `benchsuite compare --format json` on two fleet reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetComparison {
    /// Whether the new fleet passes the gate: every paired host passed and
    /// no baseline host is missing (unless allowed).
    pub passed: bool,
    /// One comparison per paired host, in the baseline's order.
    pub hosts: Vec<HostComparison>,
    /// Labels of the baseline's hosts absent from the new fleet.
    pub missing: Vec<String>,
    /// Whether missing hosts were allowed (`--allow-missing`).
    pub missing_allowed: bool,
    /// Labels of the new fleet's hosts absent from the baseline.
    pub added: Vec<String>,
    /// Paired hosts whose reports could not be compared; each fails the
    /// gate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomparable: Vec<IncomparableHost>,
}

/// A host present in both fleets whose two reports cannot be compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncomparableHost {
    /// The host's label in the baseline.
    pub host: String,
    /// Its label in the new fleet, where it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_label: Option<String>,
    /// Why (e.g. no record in common).
    pub why: String,
}

/// One host's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostComparison {
    /// The host's label in the baseline (`node1`, `node1-r0`).
    pub host: String,
    /// Its label in the new fleet, where it differs (another rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_label: Option<String>,
    /// The host's reports compared.
    pub comparison: Comparison,
}

impl HostComparison {
    /// `node1`, or `node1-r0 (new: node1-r1)` where the labels differ.
    pub fn name(&self) -> String {
        match &self.new_label {
            Some(n) => format!("{} (new: {n})", self.host),
            None => self.host.clone(),
        }
    }
}

impl FleetComparison {
    /// The gate; the CLI exits 1 when false.
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// The three-way answer: failed when the gate failed, else undecided
    /// when a host's comparison is, else passed.
    pub fn outcome(&self) -> super::Outcome {
        if !self.passed {
            super::Outcome::Failed
        } else if self
            .hosts
            .iter()
            .any(|h| h.comparison.outcome() == super::Outcome::Undecided)
        {
            super::Outcome::Undecided
        } else {
            super::Outcome::Passed
        }
    }

    /// The hosts that failed their gate.
    pub fn failed_hosts(&self) -> impl Iterator<Item = &HostComparison> {
        self.hosts.iter().filter(|h| !h.comparison.passed())
    }

    /// `fleet gate FAILED: 3 hosts compared, 1 failed (node2), 1 missing in
    /// new (node3), 1 added`.
    pub fn summary(&self) -> String {
        let verdict = match self.outcome() {
            super::Outcome::Passed => "fleet gate passed",
            super::Outcome::Failed => "fleet gate FAILED",
            super::Outcome::Undecided => "fleet gate UNDECIDED",
        };
        let n = self.hosts.len();
        let mut parts = vec![format!(
            "{n} host{} compared",
            if n == 1 { "" } else { "s" }
        )];
        let failed: Vec<&str> = self.failed_hosts().map(|h| h.host.as_str()).collect();
        if !failed.is_empty() {
            parts.push(format!("{} failed ({})", failed.len(), failed.join(", ")));
        }
        if !self.incomparable.is_empty() {
            let names: Vec<&str> = self.incomparable.iter().map(|h| h.host.as_str()).collect();
            parts.push(format!(
                "{} not comparable ({})",
                names.len(),
                names.join(", ")
            ));
        }
        if !self.missing.is_empty() {
            parts.push(format!(
                "{} missing in new ({}){}",
                self.missing.len(),
                self.missing.join(", "),
                if self.missing_allowed {
                    ", allowed"
                } else {
                    ""
                }
            ));
        }
        if !self.added.is_empty() {
            parts.push(format!(
                "{} added in new ({})",
                self.added.len(),
                self.added.join(", ")
            ));
        }
        format!("{verdict}: {}", parts.join(", "))
    }

    /// What fails the fleet gate, one line each: the hosts that failed
    /// (with their own summary), then the missing hosts.
    pub fn gate_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .failed_hosts()
            .map(|h| format!("FAIL {}: {}", h.name(), h.comparison.summary()))
            .collect();
        for h in &self.incomparable {
            let name = match &h.new_label {
                Some(n) => format!("{} (new: {n})", h.host),
                None => h.host.clone(),
            };
            lines.push(format!("FAIL {name}: not comparable: {}", h.why));
        }
        let tag = if self.missing_allowed {
            "allowed"
        } else {
            "FAIL"
        };
        for m in &self.missing {
            lines.push(format!(
                "{tag} {m}: missing in new: in the base fleet, absent from the new one"
            ));
        }
        lines
    }
}

/// Compares the hosts of the fleet `new` with those of the baseline fleet
/// `base` (each a fleet report's host reports). Pure: no I/O, no clock.
/// See the [module documentation](self) for pairing and the gate.
pub fn compare_fleets(
    base: &[Report],
    new: &[Report],
    options: &CompareOptions,
) -> Result<FleetComparison, CompareError> {
    check_options(options)?;
    let all: Vec<&Record> = base
        .iter()
        .chain(new)
        .flat_map(|r| r.records.iter())
        .collect();
    check_rules(&all, &options.rules)?;

    for (side, hosts) in [("base", base), ("new", new)] {
        if hosts.is_empty() {
            return Err(CompareError::EmptyFleet { side });
        }
    }
    let pairs = pair_hosts(base, new);
    if pairs.iter().all(Option::is_none) {
        let labels = |f: &[Report]| f.iter().map(host_label).collect::<Vec<_>>().join(", ");
        return Err(CompareError::NoHostInCommon {
            base: labels(base),
            new: labels(new),
        });
    }
    let mut out = FleetComparison {
        passed: false,
        hosts: Vec::new(),
        missing: Vec::new(),
        missing_allowed: options.allow.missing,
        added: Vec::new(),
        incomparable: Vec::new(),
    };
    let mut first_error = None;
    let mut used = vec![false; new.len()];
    for (b, pair) in base.iter().zip(&pairs) {
        let host = host_label(b);
        let Some(i) = *pair else {
            out.missing.push(host);
            continue;
        };
        used[i] = true;
        let n = &new[i];
        let new_label = Some(host_label(n)).filter(|l| *l != host);
        let baseline = [super::Baseline {
            name: &host,
            report: b,
        }];
        match check_schema(b, n).and_then(|()| compare_checked(&baseline, n, options, None)) {
            Ok(comparison) => out.hosts.push(HostComparison {
                host,
                new_label,
                comparison,
            }),
            Err(e) => {
                out.incomparable.push(IncomparableHost {
                    host: host.clone(),
                    new_label,
                    why: e.to_string(),
                });
                first_error.get_or_insert(CompareError::Host {
                    host,
                    why: Box::new(e),
                });
            }
        }
    }
    if out.hosts.is_empty()
        && let Some(e) = first_error
    {
        return Err(e);
    }
    out.added = new
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(n, _)| host_label(n))
        .collect();
    out.passed = out.hosts.iter().all(|h| h.comparison.passed())
        && out.incomparable.is_empty()
        && (out.missing.is_empty() || options.allow.missing);
    Ok(out)
}

/// For each baseline host, the index of its new host: the same label, else
/// the same host name where each side has one report of it.
fn pair_hosts(base: &[Report], new: &[Report]) -> Vec<Option<usize>> {
    let mut used = vec![false; new.len()];
    let mut pairs: Vec<Option<usize>> = base
        .iter()
        .map(|b| {
            let label = host_label(b);
            let i = (0..new.len()).find(|&i| !used[i] && host_label(&new[i]) == label)?;
            used[i] = true;
            Some(i)
        })
        .collect();
    let name = |r: &Report| r.host.hostname.clone().unwrap_or_default();
    let count = |reports: &[Report]| {
        let mut c: BTreeMap<String, usize> = BTreeMap::new();
        for r in reports {
            *c.entry(name(r)).or_default() += 1;
        }
        c
    };
    let (in_base, in_new) = (count(base), count(new));
    for (b, pair) in base.iter().zip(pairs.iter_mut()) {
        let host = name(b);
        if pair.is_some() || in_base[&host] != 1 || in_new.get(&host) != Some(&1) {
            continue;
        }
        if let Some(i) = (0..new.len()).find(|&i| !used[i] && name(&new[i]) == host) {
            used[i] = true;
            *pair = Some(i);
        }
    }
    pairs
}

/// Writes a fleet comparison in `format`: `table` and `markdown` give what
/// fails the gate first, then each host's comparison under its name, then
/// the fleet's summary line; `json` the whole [`FleetComparison`]. Other
/// formats return [`io::ErrorKind::InvalidInput`].
pub fn write_fleet_comparison(
    format: Format,
    c: &FleetComparison,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Json => {
            let text = benchsuite_core::text::to_json_pretty(c).map_err(io::Error::other)?;
            writeln!(out, "{text}")
        }
        // The hosts' names come from their reports: control characters
        // shown as `?` (and, in Markdown, markup escaped).
        Format::Table => crate::export::printable(out, |out| {
            let gate = c.gate_lines();
            for g in &gate {
                writeln!(out, "{g}")?;
            }
            if !gate.is_empty() {
                writeln!(out)?;
            }
            for h in &c.hosts {
                writeln!(out, "== host {} ==", h.name())?;
                write_comparison(Format::Table, &h.comparison, out)?;
                writeln!(out)?;
            }
            for a in &c.added {
                writeln!(out, "added in new: {a} (not in the base fleet, not judged)")?;
            }
            writeln!(out, "{}", c.summary())
        }),
        Format::Markdown => crate::export::printable(out, |out| {
            let mark = if c.passed { "✅" } else { "❌" };
            writeln!(out, "**{mark} {}**\n", c.summary())?;
            for g in c.gate_lines() {
                writeln!(out, "- {}", escape_markdown(&g))?;
            }
            for h in &c.hosts {
                writeln!(out, "\n### {}\n", escape_markdown(&h.name()))?;
                write_comparison(Format::Markdown, &h.comparison, out)?;
            }
            Ok(())
        }),
        f => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("format {f}: a fleet comparison is written as table, json or markdown"),
        )),
    }
}
