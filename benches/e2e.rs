//! Real CI jobs recorded end to end (`scripts/record-confirm.sh`): each a
//! screen run of the new build and the real `benchsuite compare HISTORY…
//! NEW --thresholds FILE --confirm BASE NEW` it got, with its exit code,
//! its comparison and its wall time, in `benches/data/e2e/MACHINE/`.
//!
//! What the CLI decided is recorded, so its rates are read, not
//! simulated; [`rescreen`] judges each job's screen again with the code
//! of today, so a change to the screen's rule shows against the record.

use std::io::Read;
use std::path::{Path, PathBuf};

use benchsuite_core::results::Report;
use benchsuite_report::compare::{
    Baseline, CompareOptions, Comparison, ThresholdRule, compare_history,
};

/// One recorded job.
#[derive(Debug, Clone)]
pub struct E2eJob {
    /// `job07`.
    pub name: String,
    /// A planted build (`true`) or a copy of the base build (A/A).
    pub planted: bool,
    /// The screen run of the new build.
    pub new: Report,
    /// What `compare --confirm` wrote (`--format json`).
    pub comparison: Comparison,
    /// Its exit code.
    pub rc: i32,
    /// Its wall time in seconds (the screen run not included).
    pub wall_s: f64,
    /// The history it was judged against (paths relative to the machine's
    /// directory), oldest first.
    pub history: Vec<String>,
}

/// One machine's recording.
#[derive(Debug, Clone)]
pub struct E2eRecording {
    /// The directory's name.
    pub name: String,
    /// Where it is.
    pub dir: PathBuf,
    /// The thresholds file the jobs gated with, as rules.
    pub rules: Vec<ThresholdRule>,
    /// The undecided share the thresholds were fitted at (5% in files
    /// written before `calibrate` recorded it, its default then).
    pub undecided: f64,
    /// The jobs in the order they ran.
    pub jobs: Vec<E2eJob>,
    /// Screen runs with `stress-ng --cpu 2` beside them, and what the
    /// screen said of each.
    pub stress: Vec<(Report, Comparison)>,
}

/// The recordings of the repository: `benches/data/e2e/`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/e2e")
}

fn gunzip(p: &Path) -> Result<String, String> {
    let f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(s)
}

fn json<T: serde::de::DeserializeOwned>(p: &Path) -> Result<T, String> {
    serde_json::from_str(&gunzip(p)?).map_err(|e| format!("{}: {e}", p.display()))
}

fn text(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The rules of a thresholds file (`benchsuite calibrate`'s output), and
/// the undecided share it was fitted at.
pub fn read_rules(p: &Path) -> Result<(Vec<ThresholdRule>, f64), String> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        undecided: Option<String>,
        #[serde(default)]
        thresholds: std::collections::BTreeMap<String, String>,
    }
    let f: File = toml::from_str(&text(p)?).map_err(|e| format!("{}: {e}", p.display()))?;
    let undecided = match f
        .undecided
        .as_deref()
        .map(benchsuite_core::units::parse_percent)
    {
        None => 0.05,
        Some(Ok(u)) => u,
        Some(Err(e)) => return Err(format!("{}: undecided: {e}", p.display())),
    };
    let rules = f
        .thresholds
        .iter()
        .map(|(k, v)| ThresholdRule::parse(&format!("{k}={v}")))
        .collect::<Result<_, _>>()?;
    Ok((rules, undecided))
}

/// Loads every machine under `dir`.
pub fn load(dir: &Path) -> Result<Vec<E2eRecording>, String> {
    let entries = crate::confirm::sorted_entries;
    let mut out = Vec::new();
    for d in entries(dir)?.into_iter().filter(|p| p.is_dir()) {
        // Which base runs each job was judged against: the history runs,
        // then each A/A job's screen run, the newest 10 before it.
        let list: Vec<String> = text(&d.join("hist.list"))?
            .lines()
            .map(str::to_string)
            .collect();
        let history_runs = list.iter().filter(|l| l.starts_with("history/")).count();
        let mut jobs = Vec::new();
        let mut seen_aa = 0;
        for j in entries(&d)?.into_iter().filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("job"))
        }) {
            let planted = text(&j.join("kind"))?.trim() == "planted";
            let upto = history_runs + seen_aa;
            let history = list[upto.saturating_sub(10)..upto].to_vec();
            if !planted {
                seen_aa += 1;
            }
            jobs.push(E2eJob {
                name: j.file_name().unwrap_or_default().to_string_lossy().into(),
                planted,
                new: crate::confirm::read_gz(&j.join("new.json.gz"))?,
                comparison: json(&j.join("compare.json.gz"))?,
                rc: text(&j.join("rc"))?
                    .trim()
                    .parse()
                    .map_err(|e| format!("{}: rc: {e}", j.display()))?,
                wall_s: text(&j.join("wall_s"))?
                    .trim()
                    .parse()
                    .map_err(|e| format!("{}: wall_s: {e}", j.display()))?,
                history,
            });
        }
        let mut stress = Vec::new();
        for k in 1.. {
            let run = d.join(format!("stress/s{k}.json.gz"));
            if !run.is_file() {
                break;
            }
            stress.push((
                crate::confirm::read_gz(&run)?,
                json(&d.join(format!("stress/s{k}-compare.json.gz")))?,
            ));
        }
        let (rules, undecided) = read_rules(&d.join("perf-thresholds.toml"))?;
        out.push(E2eRecording {
            name: d.file_name().unwrap_or_default().to_string_lossy().into(),
            rules,
            undecided,
            dir: d,
            jobs,
            stress,
        });
    }
    Ok(out)
}

/// Judges job `job`'s screen again with today's code: its screen run
/// against the history it had, at the recording's thresholds.
pub fn rescreen(rec: &E2eRecording, job: &E2eJob) -> Result<Comparison, String> {
    let mut reports = Vec::new();
    for h in &job.history {
        reports.push(crate::confirm::read_gz(&rec.dir.join(format!("{h}.gz")))?);
    }
    let baselines: Vec<Baseline<'_>> = reports
        .iter()
        .zip(&job.history)
        .map(|(r, name)| Baseline { name, report: r })
        .collect();
    let options = CompareOptions {
        rules: rec.rules.clone(),
        ..CompareOptions::default()
    };
    compare_history(&baselines, &job.new, &options).map_err(|e| e.to_string())
}

/// The A/A jobs a recording's thresholds were calibrated from: the
/// directories under `calibration/`, or those `calibration.list` names
/// (one per line, relative to the recording), each holding
/// `interleave-{base,new}.json.gz`; none if it keeps neither.
pub fn calibration_jobs(rec: &E2eRecording) -> Result<Vec<(String, Report, Report)>, String> {
    let list = rec.dir.join("calibration.list");
    let dirs: Vec<PathBuf> = if list.is_file() {
        text(&list)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| rec.dir.join(l.trim()))
            .collect()
    } else {
        let dir = rec.dir.join("calibration");
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    dirs.iter()
        .map(|d| {
            Ok((
                d.display().to_string(),
                crate::confirm::read_gz(&d.join("interleave-base.json.gz"))?,
                crate::confirm::read_gz(&d.join("interleave-new.json.gz"))?,
            ))
        })
        .collect()
}

/// The base build's runs of a recording in the order they ran (its
/// `hist.list`: the history, then each A/A job's screen run), as one
/// machine's series: unplanted runs for `benchsuite history`, recorded
/// after its method was chosen on `benches/data/noise/`.
pub fn base_runs(rec: &E2eRecording) -> Result<crate::trace::Machine, String> {
    let mut runs = Vec::new();
    for l in text(&rec.dir.join("hist.list"))?.lines() {
        runs.push(crate::confirm::read_gz(&rec.dir.join(format!("{l}.gz")))?);
    }
    Ok(crate::trace::Machine {
        name: rec.name.clone(),
        runs,
    })
}
