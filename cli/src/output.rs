//! Where output goes and what survives it: every file the CLI writes,
//! atomically (see `benchsuite::atomic`), its errors naming the flag that
//! asked for it; and the exit code that a closed stdout must not change.

use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

use std::borrow::Cow;

use anyhow::Result;
use benchsuite::Report;
use benchsuite::export::{self, Format, GhaTool};

/// The flag that sets each setting the library's text names by its type
/// and field in backticks (`` `RunConfig::runs` ``;
/// `benchsuite_core::text::rename_settings`).
pub(crate) fn flag_of(setting: &str) -> Option<&'static str> {
    Some(match setting {
        "RunConfig::runs" => "--runs",
        "RunConfig::rounds" | "Builds::rounds" => "--rounds",
        "RunConfig::duration" => "--duration",
        "RunConfig::interval" => "--interval",
        "RunConfig::min_sample_time" => "--min-sample-time",
        "RunConfig::warmup" => "--warmup",
        "RunConfig::slo" => "--slo",
        "RunConfig::quick" => "--quick",
        "CompareOptions::threshold" => "--threshold",
        "CompareOptions::allow.mixed_hosts" => "--allow-mixed-hosts",
        "CompareOptions::between_run" => "--between-run-cv",
        "Builds::round_timeout" => "--round-timeout",
        _ => return None,
    })
}

/// `text` from the library with its setting names as this command line's
/// flags.
pub(crate) fn with_flags(text: &str) -> Cow<'_, str> {
    benchsuite_core::text::rename_settings(text, &flag_of)
}

/// Writes what `write` writes to `out`; in the formats people read (table,
/// Markdown) with the library's setting names as flags ([`with_flags`]).
/// JSON, CSV and the rest keep the library's names: they are data.
pub(crate) fn for_people(
    format: Format,
    out: &mut dyn Write,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if !matches!(format, Format::Table | Format::Markdown) {
        return write(out);
    }
    let mut buf = Vec::new();
    write(&mut buf)?;
    match String::from_utf8(buf) {
        Ok(text) => out.write_all(with_flags(&text).as_bytes()),
        Err(e) => out.write_all(e.as_bytes()),
    }
}

/// Writes `path` atomically: into a temporary file beside it, renamed over
/// it when complete, so a reader never sees half a report. A device or a
/// FIFO (`-o /dev/stdout`) is written in place, a link's target by the same
/// rules; see `benchsuite::atomic::replace_file`.
pub(crate) fn replace_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    replace_file_as("-o", path, write)
}

/// [`replace_file`], its errors naming the option `flag` (`--output-dir`).
pub(crate) fn replace_file_as(
    flag: &str,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    benchsuite::atomic::replace_file(path, write).map_err(|e| flagged(flag, e))
}

/// Fails before measuring, not after, if `flag`'s `path` cannot be
/// written; creates nothing, so a run that fails (or is killed) before its
/// first write leaves nothing behind.
pub(crate) fn check_writable(flag: &str, path: &Path) -> Result<()> {
    benchsuite::atomic::check_writable(path).map_err(|e| flagged(flag, e))
}

/// `FLAG PATH: what went wrong`, with the system's error beneath where
/// there is one.
fn flagged(flag: &str, e: benchsuite::atomic::AtomicError) -> anyhow::Error {
    let what = format!("{flag} {e}");
    match e.into_source() {
        Some(io) => anyhow::Error::new(io).context(what),
        None => anyhow::Error::msg(what),
    }
}

/// What became of a command's output when its exit code was already
/// decided.
pub(crate) enum Output<T> {
    /// Written in full.
    Written(T),
    /// Stdout was closed by its reader (`| head -1`): the output stops,
    /// the exit code stays.
    StdoutClosed(i32),
}

/// A verdict outlives its output. `main` treats a broken pipe as success,
/// which is right for output that carries no verdict (`run | head` read
/// what it wanted); where the exit code *is* the answer (`compare`,
/// `--strict`) a reader that closed stdout early must not turn a failed
/// gate into exit 0. `code` is the exit code decided before writing.
pub(crate) fn keep_verdict<T>(code: i32, written: Result<T>) -> Result<Output<T>> {
    match written {
        Ok(w) => Ok(Output::Written(w)),
        Err(e) if is_broken_pipe(&e) => Ok(Output::StdoutClosed(code)),
        Err(e) => Err(e),
    }
}

/// Whether `e` is, or was caused by, a closed stdout (EPIPE).
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == ErrorKind::BrokenPipe)
}

/// The files `-o FILE` stands for: FILE itself, or for `gha` one file per
/// github-action-benchmark tool, named from FILE as a prefix.
pub(crate) fn output_files(format: Format, file: &Path) -> Vec<(PathBuf, Option<GhaTool>)> {
    if format.writes_one_stream() {
        vec![(file.to_path_buf(), None)]
    } else {
        GhaTool::BOTH.map(|t| (t.path(file), Some(t))).to_vec()
    }
}

/// Writes the report to `file` (or stdout) and returns what to add to the
/// closing summary line: `; written to FILE`.
pub(crate) fn write_report(
    report: &Report,
    format: Format,
    file: Option<&Path>,
    table: &export::TableOptions,
) -> Result<String> {
    let Some(file) = file else {
        let mut out = io::stdout().lock();
        for_people(format, &mut out, |w| {
            export::write_report_with(format, report, table, w)
        })?;
        out.flush()?;
        return Ok(String::new());
    };
    let mut written = Vec::new();
    for (path, tool) in output_files(format, file) {
        replace_file(&path, |w| match tool {
            Some(t) => export::write_gha(t, report, w),
            None => for_people(format, w, |w| {
                export::write_report_with(format, report, table, w)
            }),
        })?;
        written.push(match tool {
            Some(t) => {
                let n = t.count(report);
                if n == 0 {
                    eprintln!(
                        "note: {} is empty (no ok metric where {} is better); github-action-benchmark rejects an empty file, so give it only the other one",
                        path.display(),
                        if t == GhaTool::BiggerIsBetter { "higher" } else { "lower" },
                    );
                }
                let entries = if n == 1 { "entry" } else { "entries" };
                format!("{} ({n} {entries}, tool {})", path.display(), t.tool_name())
            }
            None => path.display().to_string(),
        });
    }
    Ok(format!("; written to {}", written.join(" and ")))
}

/// Reads a TOML file a flag names (`--acks FILE`, `--thresholds FILE`);
/// an error names the flag, the file and the line.
pub fn read_toml<T: serde::de::DeserializeOwned>(flag: &str, path: &Path) -> Result<T> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{flag} {name}: cannot read it: {e}"))?;
    toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| {
                format!(
                    " line {}",
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                )
            })
            .unwrap_or_default();
        anyhow::anyhow!("{flag} {name}:{line}: {}", e.message().trim())
    })
}
