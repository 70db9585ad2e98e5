//! Reference tools: how to measure one sweep point with the single-purpose
//! tool benchsuite claims to match (fio, iperf3, sockperf, sysbench,
//! `perf bench`), and what the comparison found.
//!
//! A [`Reference`] is plain data made by
//! [`Benchmark::reference`](crate::Benchmark::reference): the exact command
//! line, an optional server to start first, the metric it corresponds to
//! and a parser for the tool's output. Nothing here runs a process, so a
//! test can check the command line of every point without the tool
//! installed; `benchsuite reference` runs them. A record then carries a
//! [`ReferenceResult`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bench::Direction;

/// How long one run of a reference tool lasts, in seconds, where the tool
/// takes a duration (fio `--runtime`, iperf3 `-t`, sysbench `--time`):
/// comparable to the time one benchsuite round takes for the same point.
pub const REFERENCE_SECS: u64 = 4;

/// Parses a reference tool's standard output into the value of the metric
/// it corresponds to, in that metric's base unit (B/s, s, op/s, event/s).
pub type ParseFn = fn(&str) -> Result<f64, String>;

/// How to measure one sweep point with a reference tool.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The tool's name (`fio`, `iperf3`).
    pub tool: &'static str,
    /// The Debian package that provides it (`apt install PACKAGE`).
    pub package: &'static str,
    /// The exact command line, program first.
    pub argv: Vec<String>,
    /// A server to start before `argv` and kill (by its PID) after it
    /// (`iperf3 -s -1 -p PORT`, `sockperf sr`).
    pub server_argv: Option<Vec<String>>,
    /// The name of our metric the tool's number corresponds to.
    pub metric: &'static str,
    /// Turns the tool's standard output into that metric's value.
    pub parse: ParseFn,
    /// A command line that prints the tool's version.
    pub version_argv: Vec<String>,
    /// Files the tool creates that must be removed after each run (fio's
    /// scratch files).
    pub cleanup: Vec<std::path::PathBuf>,
    /// A known reason the tool's number may mislead on this point; the
    /// record carries it.
    pub note: Option<String>,
}

impl Reference {
    /// A reference with no server, no files to clean up and no note.
    pub fn new(
        tool: &'static str,
        package: &'static str,
        argv: Vec<String>,
        metric: &'static str,
        parse: ParseFn,
    ) -> Reference {
        Reference {
            tool,
            package,
            version_argv: vec![tool.to_string(), "--version".to_string()],
            argv,
            server_argv: None,
            metric,
            parse,
            cleanup: Vec::new(),
            note: None,
        }
    }

    /// The command line as one shell-quoted string, for reports.
    pub fn command(&self) -> String {
        shell_join(&self.argv)
    }
}

/// Joins an argv into one line a shell would split back into it.
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=./:,@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Makes an argv from string slices.
pub fn argv<S: AsRef<str>>(parts: impl IntoIterator<Item = S>) -> Vec<String> {
    parts.into_iter().map(|s| s.as_ref().to_string()).collect()
}

/// What running a reference tool beside a record found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceResult {
    /// The tool (`fio`).
    pub tool: String,
    /// Its version, as it prints it (null where it could not be read).
    pub version: Option<String>,
    /// The exact command line that ran (shell-quoted).
    pub command: String,
    /// The metric of the record it compares with.
    pub metric: String,
    /// Median of the tool's rounds, in `unit` (null when none succeeded).
    pub median: Option<f64>,
    /// Unit of `median` and `rounds`: the metric's base unit.
    pub unit: String,
    /// Direction-aware ratio of the medians: above 1 means benchsuite did
    /// better (more throughput, less latency); null when either side has
    /// no median (the tool is missing or failed, the record did not run).
    /// Read it with `note`, which says where the tool measures something
    /// slightly different.
    pub ratio: Option<f64>,
    /// The tool's value in each round, in the order they ran (interleaved
    /// with benchsuite's own rounds).
    pub rounds: Vec<f64>,
    /// Why there is no ratio (`not installed: apt install fio`, a round's
    /// error, `perf bench unavailable: ...`), or what to know about the
    /// tool's number at this point (a known difference or misbehaviour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The direction-aware ratio of our median to the tool's: above 1 means
/// benchsuite did better. None unless both are finite and positive.
pub fn ratio(ours: f64, tool: f64, direction: Direction) -> Option<f64> {
    if !(ours.is_finite() && tool.is_finite() && ours > 0.0 && tool > 0.0) {
        return None;
    }
    Some(match direction {
        Direction::Higher => ours / tool,
        Direction::Lower => tool / ours,
    })
}

/// The median of some values (None for none).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The number after `key` on the first line of `text` that contains it
/// (`events per second:   1234.5` → 1234.5), for tools that print text.
pub fn number_after(text: &str, key: &str) -> Result<f64, String> {
    let line = text
        .lines()
        .find(|l| l.contains(key))
        .ok_or_else(|| format!("no `{key}` in the output"))?;
    let rest = &line[line.find(key).unwrap_or(0) + key.len()..];
    rest.split(|c: char| c.is_whitespace() || c == ':' || c == '=')
        .filter(|w| !w.is_empty())
        .find_map(|w| w.parse::<f64>().ok())
        .ok_or_else(|| format!("no number after `{key}` in: {}", line.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_direction_aware() {
        assert_eq!(ratio(2.0, 1.0, Direction::Higher), Some(2.0));
        assert_eq!(ratio(2.0, 1.0, Direction::Lower), Some(0.5));
        assert_eq!(ratio(0.0, 1.0, Direction::Lower), None);
        assert_eq!(ratio(f64::NAN, 1.0, Direction::Higher), None);
    }

    #[test]
    fn median_and_number_after() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let out = "CPU speed:\n    events per second:  1234.56\n";
        assert_eq!(number_after(out, "events per second"), Ok(1234.56));
        assert!(number_after(out, "latency").is_err());
    }

    #[test]
    fn shell_join_quotes_what_needs_it() {
        let a = argv(["fio", "--name=x y", "--bs=4096", "it's"]);
        assert_eq!(shell_join(&a), r"fio '--name=x y' --bs=4096 'it'\''s'");
    }
}
