//! Fleets: the reports of many hosts as one document, and which host is
//! slow.
//!
//! A fleet report ([`Fleet`]) is the hosts' reports side by side, each
//! unchanged (its `host`, `cluster` and records), under one
//! `schema_version`:
//!
//! ```text
//! { "schema_version": "1.5", "tool_version": "0.1.0",
//!   "hosts": [ {report of node1, rank 0}, {report of node2, rank 1}, ... ] }
//! ```
//!
//! A fleet report is read back with [`Fleet::read_hosts`], so fleets merge
//! with more hosts (`benchsuite merge fleet.json new/*.json`).
//!
//! [`Fleet::view`] is the fleet view: hosts are first grouped by the facts
//! that change numbers by design ([`Facts`]: CPU model, microcode, kernel,
//! memory size, governor), so a host that is *different* is told apart
//! from one that is *slow*. Then for every record key and its headline
//! metric (the record's first metric), within each group: the median of
//! the hosts' medians, the robust spread (1.4826 × the median absolute
//! deviation, "scaled MAD", which estimates σ for normal data and ignores
//! a few outliers), min and max; and the outlier hosts: those more than
//! 3 scaled MADs from the median in the metric's bad direction. A group of
//! fewer than 3 hosts is not judged. The spread used is at least 0.5% of the
//! median, so hosts equal to a few parts per thousand are never flagged.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use benchsuite_core::bench::Direction;
use benchsuite_core::error::ReportError;
use benchsuite_core::results::{
    Report, SCHEMA_MAJOR, SCHEMA_VERSION, Status, read_report_text, schema_major,
};
use benchsuite_core::units::format_value;

/// MAD → σ for normal data.
pub const MAD_SCALE: f64 = 1.4826;
/// How many scaled MADs beyond the median, in the bad direction, make an
/// outlier.
pub const OUTLIER_MADS: f64 = 3.0;
/// The smallest spread used, relative to the median.
pub const MIN_RELATIVE_SPREAD: f64 = 0.005;
/// The smallest gap, relative to the group median, that makes an outlier
/// (`compare`'s default threshold): hosts whose medians sit within a
/// fraction of a percent of each other have a tiny MAD, and 3 of them is
/// then run-to-run noise (a host 2.5% slower at one syscall), not a slow
/// host.
pub const MIN_GAP: f64 = 0.05;
/// The fewest hosts in a group for its outliers to be judged.
pub const MIN_HOSTS: usize = 3;

/// Many hosts' reports as one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fleet {
    /// The report schema of this build; every host's report has its major.
    pub schema_version: String,
    /// The benchsuite that merged them.
    pub tool_version: String,
    /// One report per host (per rank), as written.
    pub hosts: Vec<Report>,
}

/// Every version of `versions` is of the major this build reads.
fn check_majors<'a>(
    path: &str,
    versions: impl IntoIterator<Item = &'a String>,
) -> Result<(), ReportError> {
    for v in versions {
        if schema_major(v) != Some(SCHEMA_MAJOR) {
            return Err(ReportError::UnsupportedSchema {
                path: path.to_string(),
                found: v.clone(),
                supported: SCHEMA_MAJOR,
            });
        }
    }
    Ok(())
}

/// What a report file holds ([`Fleet::read_file`]).
// Made once per file read and matched at once: boxing the report would
// only add a step for every user.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ReportFile {
    /// One host's report.
    Report(Report),
    /// A fleet report's host reports, as merged.
    Fleet(Vec<Report>),
}

/// Why reports cannot form one fleet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    /// Nothing to merge.
    #[error("no reports to merge")]
    Empty,
    /// A report of another schema major than the first.
    #[error(
        "{path}: schema {found} is of another major version than {first_path} (schema {first}); merge reports of one major version"
    )]
    SchemaMajor {
        /// The file.
        path: String,
        /// Its schema version.
        found: String,
        /// The first file.
        first_path: String,
        /// Its schema version.
        first: String,
    },
    /// The same host and rank twice.
    #[error("{path}: {host} is already in {first_path}; each host (rank) may appear once")]
    Duplicate {
        /// The file.
        path: String,
        /// The host and rank, as labelled.
        host: String,
        /// The file that has it already.
        first_path: String,
    },
}

impl Fleet {
    /// Merges `(path, report)` pairs (the path only names a file in
    /// errors): all of one schema major, no host (and rank) twice.
    pub fn merge(reports: Vec<(String, Report)>) -> Result<Fleet, FleetError> {
        let Some((first_path, first)) = reports.first() else {
            return Err(FleetError::Empty);
        };
        let major = schema_major(&first.schema_version);
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for (path, r) in &reports {
            if schema_major(&r.schema_version) != major {
                return Err(FleetError::SchemaMajor {
                    path: path.clone(),
                    found: r.schema_version.clone(),
                    first_path: first_path.clone(),
                    first: first.schema_version.clone(),
                });
            }
            let label = host_label(r);
            if let Some(p) = seen.insert(label.clone(), path) {
                return Err(FleetError::Duplicate {
                    path: path.clone(),
                    host: describe(r),
                    first_path: p.to_string(),
                });
            }
        }
        Ok(Fleet {
            schema_version: SCHEMA_VERSION.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            hosts: reports.into_iter().map(|(_, r)| r).collect(),
        })
    }

    /// The host reports in the file at `path`: a report, or every host of
    /// a fleet report (so fleets merge with more hosts).
    pub fn read_hosts(path: &Path) -> Result<Vec<Report>, ReportError> {
        Ok(match Fleet::read_file(path)? {
            ReportFile::Report(r) => vec![r],
            ReportFile::Fleet(hosts) => hosts,
        })
    }

    /// What the JSON file at `path` holds: one report, or a fleet report's
    /// host reports (a document with `hosts`). The file is read once, at
    /// most [`MAX_REPORT_BYTES`](benchsuite_core::results::MAX_REPORT_BYTES), and a report is parsed once (a fleet
    /// report: once as a report, which it is not, and once as a fleet).
    pub fn read_file(path: &Path) -> Result<ReportFile, ReportError> {
        let text = read_report_text(path)?;
        Fleet::parse(&text, &path.display().to_string())
    }

    /// What the JSON text of the file `path` holds (see [`Fleet::read_file`]).
    fn parse(text: &str, path: &str) -> Result<ReportFile, ReportError> {
        if let Ok(r) = serde_json::from_str::<Report>(text) {
            return check_majors(path, std::iter::once(&r.schema_version))
                .map(|()| ReportFile::Report(r));
        }
        let fleet = match serde_json::from_str::<Fleet>(text) {
            Ok(f) => f,
            Err(source) => {
                // Neither: the error of what the document means to be.
                #[derive(Deserialize)]
                struct Probe {
                    #[serde(default)]
                    hosts: Option<serde::de::IgnoredAny>,
                }
                let is_fleet = serde_json::from_str::<Probe>(text).is_ok_and(|x| x.hosts.is_some());
                if !is_fleet {
                    // Report::from_json's error: a parse error, or a
                    // schema of another major.
                    return Report::from_json(text, path).map(ReportFile::Report);
                }
                return Err(ReportError::Parse {
                    path: path.to_string(),
                    source,
                });
            }
        };
        check_majors(
            path,
            std::iter::once(&fleet.schema_version)
                .chain(fleet.hosts.iter().map(|h| &h.schema_version)),
        )?;
        Ok(ReportFile::Fleet(fleet.hosts))
    }

    /// Serialises as pretty JSON.
    pub fn to_json(&self) -> String {
        benchsuite_core::text::to_json_pretty(self).expect("a fleet always serialises")
    }

    /// The fleet view: groups, and per record key and group the headline
    /// metric's statistics and outliers.
    pub fn view(&self) -> FleetView {
        let mut groups: Vec<HostGroup> = Vec::new();
        let mut group_of = Vec::with_capacity(self.hosts.len());
        for r in &self.hosts {
            let facts = Facts::of(r);
            let g = match groups.iter().position(|g| g.facts == facts) {
                Some(g) => g,
                None => {
                    groups.push(HostGroup {
                        facts,
                        hosts: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            groups[g].hosts.push(host_label(r));
            group_of.push(g);
        }
        // (key, group) → the metric's description and each host's median,
        // in first-seen order of keys.
        let mut order: Vec<(String, usize)> = Vec::new();
        let mut cells: BTreeMap<(String, usize), FleetRow> = BTreeMap::new();
        let mut values: BTreeMap<(String, usize), Vec<(String, f64)>> = BTreeMap::new();
        for (r, &g) in self.hosts.iter().zip(&group_of) {
            for rec in r.records.iter().filter(|x| x.status == Status::Ok) {
                let Some(m) = rec.metrics.first() else {
                    continue;
                };
                if !m.summary.median.is_finite() {
                    continue;
                }
                let k = (rec.requested_key(), g);
                if !cells.contains_key(&k) {
                    order.push(k.clone());
                    cells.insert(
                        k.clone(),
                        FleetRow {
                            key: k.0.clone(),
                            metric: m.name.clone(),
                            unit: m.unit.clone(),
                            direction: m.direction,
                            group: g + 1,
                            hosts: 0,
                            median: 0.0,
                            spread: 0.0,
                            min: 0.0,
                            max: 0.0,
                            outliers: Vec::new(),
                        },
                    );
                }
                if cells[&k].metric == m.name {
                    values
                        .entry(k)
                        .or_default()
                        .push((host_label(r), m.summary.median));
                }
            }
        }
        let rows = order
            .into_iter()
            .map(|k| {
                let mut row = cells.remove(&k).expect("every key has a row");
                row.fill(&values[&k]);
                row
            })
            .collect();
        FleetView { groups, rows }
    }
}

/// The label of a host's report: its host name, and `-rRANK` under a
/// launcher (the file name `--output-dir` gives it, without `.json`).
pub fn host_label(r: &Report) -> String {
    let host = r.host.hostname.as_deref().unwrap_or("unknown-host");
    match &r.cluster {
        Some(c) => format!("{host}-r{}", c.rank),
        None => host.to_string(),
    }
}

fn describe(r: &Report) -> String {
    let host = r.host.hostname.as_deref().unwrap_or("unknown-host");
    match &r.cluster {
        Some(c) => format!("host {host} rank {}", c.rank),
        None => format!("host {host}"),
    }
}

/// The facts that set hosts apart by design: hosts that differ in one are
/// in different groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// CPU microcode revision.
    pub microcode: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Total memory, rounded to GiB (identical machines differ by the
    /// few MiB firmware and kernel reserve).
    pub memory_gib: Option<u64>,
    /// CPU frequency governor.
    pub governor: Option<String>,
}

impl Facts {
    /// The facts of one report's host.
    pub fn of(r: &Report) -> Facts {
        let h = &r.host;
        Facts {
            cpu_model: h.cpu.model.clone(),
            microcode: h.cpu.microcode.clone(),
            kernel: h.kernel.clone(),
            memory_gib: h
                .memory_bytes
                .map(|b| (b as f64 / (1u64 << 30) as f64).round() as u64),
            governor: h.cpu.governor.clone(),
        }
    }
}

impl std::fmt::Display for Facts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        write!(
            f,
            "cpu {}, microcode {}, kernel {}, memory {}, governor {}",
            o(&self.cpu_model),
            o(&self.microcode),
            o(&self.kernel),
            self.memory_gib
                .map(|g| format!("{g} GiB"))
                .unwrap_or_else(|| "unknown".into()),
            o(&self.governor)
        )
    }
}

/// Hosts with the same [`Facts`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostGroup {
    /// What they share.
    pub facts: Facts,
    /// Their labels ([`host_label`]).
    pub hosts: Vec<String>,
}

/// The fleet view: see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetView {
    /// Host groups; group `n` in a row is `groups[n - 1]`.
    pub groups: Vec<HostGroup>,
    /// One row per record key and group.
    pub rows: Vec<FleetRow>,
}

/// One record key's headline metric across the hosts of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetRow {
    /// Record key (id and requested parameters).
    pub key: String,
    /// The headline metric (the record's first).
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// The host group, 1-based.
    pub group: usize,
    /// Hosts with an ok record.
    pub hosts: usize,
    /// Median of the hosts' medians.
    pub median: f64,
    /// 1.4826 × the median absolute deviation of the hosts' medians.
    pub spread: f64,
    /// Smallest host median.
    pub min: f64,
    /// Largest host median.
    pub max: f64,
    /// Hosts beyond 3 scaled MADs in the bad direction (none judged in a
    /// group of fewer than 3 hosts).
    pub outliers: Vec<Outlier>,
}

/// A host whose value is an outlier of its group, in the bad direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlier {
    /// The host's label.
    pub host: String,
    /// Its median.
    pub value: f64,
    /// How much worse than the group median, percent (positive).
    pub gap_percent: f64,
    /// How many scaled MADs from the median.
    pub mads: f64,
}

impl FleetRow {
    fn fill(&mut self, values: &[(String, f64)]) {
        let mut v: Vec<f64> = values.iter().map(|(_, x)| *x).collect();
        v.sort_by(f64::total_cmp);
        self.hosts = v.len();
        self.median = benchsuite_core::stats::percentile_sorted(&v, 0.5);
        let mut dev: Vec<f64> = v.iter().map(|x| (x - self.median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        self.spread = MAD_SCALE * benchsuite_core::stats::percentile_sorted(&dev, 0.5);
        self.min = v[0];
        self.max = v[v.len() - 1];
        if v.len() < MIN_HOSTS {
            return;
        }
        let scale = self.spread.max(MIN_RELATIVE_SPREAD * self.median.abs());
        if scale <= 0.0 {
            return;
        }
        for (host, x) in values {
            let worse = match self.direction {
                Direction::Higher => self.median - x,
                Direction::Lower => x - self.median,
            };
            if worse > OUTLIER_MADS * scale && worse >= MIN_GAP * self.median.abs() {
                self.outliers.push(Outlier {
                    host: host.clone(),
                    value: *x,
                    gap_percent: if self.median != 0.0 {
                        100.0 * worse / self.median.abs()
                    } else {
                        f64::INFINITY
                    },
                    mads: worse / scale,
                });
            }
        }
    }
}

impl FleetView {
    /// Every outlier host with the rows it is flagged in.
    pub fn outlier_hosts(&self) -> BTreeMap<&str, Vec<&FleetRow>> {
        let mut m: BTreeMap<&str, Vec<&FleetRow>> = BTreeMap::new();
        for r in &self.rows {
            for o in &r.outliers {
                m.entry(o.host.as_str()).or_default().push(r);
            }
        }
        m
    }

    /// Writes the view as a plain-text table; the hosts' names and facts
    /// (from their reports) with their control characters shown as `?`.
    pub fn write_table(&self, out: &mut dyn Write) -> io::Result<()> {
        crate::export::printable(out, |out| self.write_table_raw(out))
    }

    fn write_table_raw(&self, out: &mut dyn Write) -> io::Result<()> {
        let hosts: usize = self.groups.iter().map(|g| g.hosts.len()).sum();
        writeln!(
            out,
            "fleet: {hosts} host{} in {} group{} (hosts differing in cpu model, microcode, kernel, memory size or governor are grouped apart; outliers are judged within a group)",
            if hosts == 1 { "" } else { "s" },
            self.groups.len(),
            if self.groups.len() == 1 { "" } else { "s" },
        )?;
        for (i, g) in self.groups.iter().enumerate() {
            writeln!(out, "group {}: {}", i + 1, g.facts)?;
            writeln!(out, "  hosts: {}", g.hosts.join(", "))?;
        }
        writeln!(out)?;
        let header = [
            "record", "metric", "group", "hosts", "median", "spread", "min", "max", "outliers",
        ];
        let rows: Vec<[String; 9]> = self
            .rows
            .iter()
            .map(|r| {
                let f = |v: f64| format_value(v, &r.unit);
                let outliers = if r.hosts < MIN_HOSTS {
                    format!("(not judged: fewer than {MIN_HOSTS} hosts)")
                } else if r.outliers.is_empty() {
                    "-".into()
                } else {
                    r.outliers
                        .iter()
                        .map(|o| {
                            format!(
                                "{} {} ({:.1}% {})",
                                o.host,
                                f(o.value),
                                o.gap_percent,
                                match r.direction {
                                    Direction::Higher => "lower",
                                    Direction::Lower => "higher",
                                }
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                [
                    r.key.clone(),
                    r.metric.clone(),
                    r.group.to_string(),
                    r.hosts.to_string(),
                    f(r.median),
                    format!("±{}", f(r.spread)),
                    f(r.min),
                    f(r.max),
                    outliers,
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(width).enumerate() {
                if i + 1 == cells.len() {
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(w - c.chars().count() + 2));
                }
            }
            s
        };
        writeln!(out, "{}", line(&header.map(String::from)))?;
        for r in &rows {
            writeln!(out, "{}", line(r))?;
        }
        let flagged = self.outlier_hosts();
        writeln!(out)?;
        if flagged.is_empty() {
            writeln!(
                out,
                "no outlier host: none is beyond {OUTLIER_MADS} scaled MADs (1.4826 × MAD) of its group's median and at least {:.0}% worse",
                MIN_GAP * 100.0
            )?;
        } else {
            for (host, rows) in &flagged {
                writeln!(
                    out,
                    "outlier: {host} is slow in {} of {} rows of its group (beyond {OUTLIER_MADS} scaled MADs of the group median and at least {:.0}% worse)",
                    rows.len(),
                    self.rows
                        .iter()
                        .filter(|r| r.group == rows[0].group)
                        .count(),
                    MIN_GAP * 100.0
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use benchsuite_core::cluster::{Cluster, Launcher};
    use benchsuite_core::stats::Summary;

    /// The exporters' fixture as host `name`, rank `rank`, its samples
    /// scaled by `factor` (a little different on every host).
    fn host(name: &str, rank: u64, factor: f64) -> Report {
        let mut r = fixtures::report();
        r.host.hostname = Some(name.into());
        r.host.cpu.model = Some("Xeon Gold 6338".into());
        r.host.kernel = Some("6.8.0".into());
        r.host.memory_bytes = Some(256 << 30);
        r.cluster = Some(Cluster {
            launcher: Launcher::Slurm,
            job: Some("77".into()),
            step: Some("0".into()),
            rank,
            world_size: 7,
            node: Some(name.into()),
            local_rank: Some(0),
        });
        for rec in &mut r.records {
            for m in &mut rec.metrics {
                // Slower: times grow, rates shrink.
                let f = match m.direction {
                    Direction::Lower => factor,
                    Direction::Higher => 1.0 / factor,
                };
                for s in &mut m.samples {
                    *s *= f;
                }
                m.summary = Summary::new(&m.samples).unwrap();
            }
        }
        r
    }

    fn fleet() -> Vec<(String, Report)> {
        let factors = [1.0, 1.01, 0.99, 1.005, 0.995, 1.4];
        let mut v: Vec<(String, Report)> = factors
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let name = format!("node{i}");
                (format!("{name}.json"), host(&name, i as u64, *f))
            })
            .collect();
        // A different CPU, slower still: different, not slow.
        let mut other = host("node6", 6, 1.6);
        other.host.cpu.model = Some("EPYC 7763".into());
        v.push(("node6.json".into(), other));
        v
    }

    #[test]
    fn the_planted_slow_host_and_only_it_is_flagged() {
        let f = Fleet::merge(fleet()).unwrap();
        let view = f.view();
        assert_eq!(view.groups.len(), 2);
        assert_eq!(view.groups[0].hosts.len(), 6);
        assert_eq!(view.groups[1].hosts, vec!["node6-r6".to_string()]);
        let flagged = view.outlier_hosts();
        assert_eq!(
            flagged.keys().copied().collect::<Vec<_>>(),
            vec!["node5-r5"]
        );
        // Both ok records of group 1 flag it, with the gap.
        assert_eq!(flagged["node5-r5"].len(), 2);
        let row = view
            .rows
            .iter()
            .find(|r| r.key.starts_with("os.syscall") && r.group == 1)
            .unwrap();
        assert_eq!(row.hosts, 6);
        assert!((row.outliers[0].gap_percent - 39.7).abs() < 1.0, "{row:?}");
        let bw = view
            .rows
            .iter()
            .find(|r| r.key.starts_with("mem.bandwidth") && r.group == 1)
            .unwrap();
        assert_eq!(bw.direction, Direction::Higher);
        assert!(bw.min < bw.median && bw.median < bw.max);
        // The different host is alone in its group: not judged.
        let g2: Vec<_> = view.rows.iter().filter(|r| r.group == 2).collect();
        assert!(!g2.is_empty() && g2.iter().all(|r| r.outliers.is_empty()));
        let mut text = Vec::new();
        view.write_table(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("outlier: node5-r5"), "{text}");
        assert!(!text.contains("outlier: node6"), "{text}");
        assert!(text.contains("group 2: cpu EPYC 7763"), "{text}");
        // The fleet document keeps every report whole.
        let back: Fleet = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(back.hosts.len(), 7);
        assert_eq!(back.hosts[3].cluster.as_ref().unwrap().rank, 3);
    }

    #[test]
    fn a_fast_host_is_not_flagged() {
        let mut v = fleet();
        v.truncate(5);
        v.push(("fast.json".into(), host("fast", 9, 0.6)));
        assert!(Fleet::merge(v).unwrap().view().outlier_hosts().is_empty());
    }

    /// Hosts within a fraction of a percent of each other have a tiny MAD:
    /// a host 3% slower is beyond 3 of them, but it is noise, not a slow
    /// host; 8% slower is one.
    #[test]
    fn a_gap_under_min_gap_is_not_an_outlier() {
        let tight = [1.0, 1.001, 0.999, 1.0005, 0.9995];
        let with = |slow: f64| {
            let mut v: Vec<(String, Report)> = tight
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("n{i}.json"), host(&format!("n{i}"), i as u64, *f)))
                .collect();
            v.push(("slow.json".into(), host("slow", 5, slow)));
            Fleet::merge(v).unwrap().view()
        };
        let view = with(1.03);
        // 3% is beyond 3 scaled MADs here, so only MIN_GAP keeps it out.
        let row = &view.rows[0];
        let scale = row.spread.max(MIN_RELATIVE_SPREAD * row.median.abs());
        assert!(0.03 * row.median.abs() / 1.03 > OUTLIER_MADS * scale * 0.9);
        assert!(
            view.outlier_hosts().is_empty(),
            "{:?}",
            view.outlier_hosts()
        );
        let view = with(1.08);
        let flagged: Vec<&str> = view.outlier_hosts().keys().copied().collect();
        assert_eq!(flagged, ["slow-r5"]);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_file() {
        let mut v = fleet();
        let dup = v[2].1.clone();
        v.push(("again.json".into(), dup));
        let e = Fleet::merge(v).unwrap_err().to_string();
        assert_eq!(
            e,
            "again.json: host node2 rank 2 is already in node2.json; each host (rank) may appear once"
        );
        let mut v = fleet();
        v[4].1.schema_version = "2.0".into();
        let e = Fleet::merge(v).unwrap_err().to_string();
        assert!(
            e.starts_with("node4.json: schema 2.0 is of another major"),
            "{e}"
        );
        assert_eq!(Fleet::merge(Vec::new()).unwrap_err(), FleetError::Empty);
    }
}
