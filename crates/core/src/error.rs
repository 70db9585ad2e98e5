//! Typed errors of the core library.
//!
//! Two families: [`ConfigError`] is the user's fault (a bad flag value, an
//! unknown benchmark) and is detected before anything runs; [`BenchError`] is
//! what a benchmark reports while it prepares or runs, and becomes a `failed`
//! record rather than aborting the whole run.

use std::io;

/// A text that is not the value asked for (a size, a duration, a
/// percentage, a rate, a threshold, an SLO...): the message says why and
/// what is accepted, and names no command-line flag, so a caller can put
/// its own flag or field before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

impl From<String> for ValueError {
    fn from(s: String) -> ValueError {
        ValueError(s)
    }
}

impl From<&str> for ValueError {
    fn from(s: &str) -> ValueError {
        ValueError(s.to_string())
    }
}

/// The message, as text (`e.contains("XB")`).
impl std::ops::Deref for ValueError {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Where a caller still carries messages as text.
impl From<ValueError> for String {
    fn from(e: ValueError) -> String {
        e.0
    }
}

/// A problem with the configuration the user asked for. Always detected
/// before the first benchmark starts.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A parameter value that does not parse or is out of bounds.
    #[error("invalid value `{value}` for parameter `{param}`: {reason}")]
    InvalidValue {
        /// Parameter name (`block`, `threads`, ...).
        param: String,
        /// The text the user gave.
        value: String,
        /// Why it was rejected, with a hint of what is accepted.
        reason: String,
    },
    /// A module option (`--opt KEY=VALUE`) that no selected benchmark
    /// declares.
    #[error(
        "unknown option `{key}`: the selected benchmarks take {valid} (see `benchsuite list`){hint}"
    )]
    UnknownOption {
        /// The key given.
        key: String,
        /// Comma-separated list of the options they declare.
        valid: String,
        /// `; it is read by mem.bandwidth, which is not selected`, or empty.
        hint: String,
    },
    /// A module option whose value does not parse.
    #[error("invalid value `{value}` for option `{key}`: {reason}")]
    InvalidOption {
        /// The key.
        key: String,
        /// The text given.
        value: String,
        /// Why it was rejected, with what is accepted.
        reason: String,
    },
    /// A parameter that no selected benchmark accepts.
    #[error(
        "unknown parameter `{param}`: valid parameters for the selected benchmarks are {valid}"
    )]
    UnknownParam {
        /// The parameter name given.
        param: String,
        /// Comma-separated list of accepted parameter names.
        valid: String,
    },
    /// A selector that matches no benchmark.
    #[error(
        "unknown benchmark `{selector}`: valid selectors are `all`, a module ({modules}) or a benchmark id (see `benchsuite list`)"
    )]
    UnknownSelector {
        /// The selector given.
        selector: String,
        /// Comma-separated module names.
        modules: String,
    },
    /// A sweep that would produce too many points.
    #[error(
        "the sweep expands to {points} points for `{bench}`, more than the limit of {limit}; narrow a range"
    )]
    SweepTooLarge {
        /// Benchmark id.
        bench: String,
        /// Number of points.
        points: usize,
        /// Limit.
        limit: usize,
    },
    /// Any other invalid setting (for example `--runs 0`).
    #[error("{0}")]
    Invalid(String),
}

/// An error raised by a benchmark while preparing or running a case. It is
/// recorded as a `failed` record (or `skipped`, for [`BenchError::Skip`]);
/// the run continues with the next point.
///
/// Which variant:
///
/// | the situation | variant | record |
/// |---|---|---|
/// | not possible here, and not a fault (an ISA the CPU lacks) | [`Skip`](BenchError::Skip) | skipped |
/// | possible, but not as asked here (too little space, a block size the operation cannot take): the message says what to change | [`Failed`](BenchError::Failed) | failed |
/// | an OS call failed | [`Io`](BenchError::Io) (via [`BenchError::io`]) | failed |
/// | another error value caused it (a parser's, a driver's) | [`Caused`](BenchError::Caused) (via [`BenchError::caused`]) | failed |
/// | the work ran, but its result is wrong | [`Verify`](BenchError::Verify) | failed |
/// | a fault with no error value beneath (a broken invariant, an impossible answer from the system) | [`Other`](BenchError::Other) | failed |
/// | Ctrl-C | [`Interrupted`](BenchError::Interrupted) | (the run stops) |
///
/// `Display` shows one level; the cause is [`std::error::Error::source`].
/// Records and the CLI show the whole chain (see [`error_chain`]), so
/// wrap a cause with [`BenchError::caused`] instead of formatting it into
/// the text.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An operating-system call failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error (its errno is kept).
        #[source]
        source: io::Error,
    },
    /// A result failed its correctness check (for example a copy whose
    /// destination does not match its source).
    #[error("verification failed: {0}")]
    Verify(String),
    /// The point cannot run as asked on this machine (too little space or
    /// memory, a block size the operation cannot use): the record is
    /// `failed` with this reason, which should say what to change. (Named
    /// `Unsupported` before 0.1; compare [`BenchError::Skip`], which is not
    /// a failure.)
    #[error("{0}")]
    Failed(String),
    /// This point cannot run here and that is not a failure (an ISA the CPU
    /// lacks, a file system without O_DIRECT): the record is `skipped` with
    /// this reason. Return it from `prepare`.
    #[error("{0}")]
    Skip(String),
    /// The run was interrupted (Ctrl-C) before this record finished.
    #[error("interrupted")]
    Interrupted,
    /// Something failed because of an underlying error of any type (a
    /// parser's, a driver's, a module's own error enum), kept as the source.
    #[error("{context}")]
    Caused {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A fault with no error value beneath it (a broken invariant, an
    /// impossible answer from the system). Not for a point that cannot run
    /// as asked ([`BenchError::Failed`]) or an error of another type
    /// ([`BenchError::caused`]).
    #[error("{0}")]
    Other(String),
}

impl BenchError {
    /// Wraps an [`io::Error`] with a short description of what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }

    /// Wraps the current `errno` (after a failed libc call).
    pub fn last_os_error(context: impl Into<String>) -> Self {
        Self::io(context, io::Error::last_os_error())
    }

    /// Wraps any error with a short description of what was being done.
    pub fn caused(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        BenchError::Caused {
            context: context.into(),
            source: source.into(),
        }
    }
}

/// An error and its causes on one line, outermost first, joined by `: `
/// (what a record's `reason` holds, and what the CLI prints). A cause whose
/// text its wrapper already ends with is not repeated.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !t.is_empty() && !out.ends_with(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = c.source();
    }
    out
}

/// A benchmark the [`Registry`](crate::Registry) refuses: which one, and
/// the rule of the plugin contract its [`Meta`](crate::Meta) breaks. The
/// same rules hold for built-in and embedded benchmarks, so a broken
/// declaration is refused where it is made instead of failing (or being
/// gated wrongly) at run time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("benchmark `{benchmark}` is refused: {rule}")]
pub struct RegistryError {
    /// The benchmark's id, as declared.
    pub benchmark: String,
    /// The rule it breaks.
    pub rule: ContractRule,
}

/// A rule of the plugin contract that [`Registry`](crate::Registry) checks
/// on every benchmark it is given (see [`Meta::check`](crate::Meta::check)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractRule {
    /// The id is not `module.name` (a module and a name around a dot).
    #[error("its id must be `module.name`: a module, a dot, then a name (like `os.syscall`)")]
    IdNotDotted,
    /// The id's module is not the module it is added to.
    #[error("its id must start with `{module}.`, the module it is added to")]
    WrongModule {
        /// The module it was added to.
        module: String,
    },
    /// No metric is declared.
    #[error("it declares no metric: a benchmark needs at least one, its headline, first")]
    NoMetrics,
    /// The first metric is not the headline.
    #[error(
        "its first metric `{first}` must be its headline (what `compare` gates first); mark the others secondary, derived or spread"
    )]
    HeadlineNotFirst {
        /// The first metric's name.
        first: String,
    },
    /// More than one metric is a headline.
    #[error(
        "it declares {} headline metrics ({}): exactly one, listed first; mark the others with `MetricSpec::secondary` (or derived, spread)",
        .names.len(),
        .names.join(", ")
    )]
    ManyHeadlines {
        /// The headline metrics' names, in declaration order.
        names: Vec<String>,
    },
    /// Two parameters share a name.
    #[error("it declares the parameter `{name}` twice: parameter names must be unique")]
    DuplicateParam {
        /// The repeated name.
        name: String,
    },
    /// Two metrics share a name.
    #[error("it declares the metric `{name}` twice: metric names must be unique")]
    DuplicateMetric {
        /// The repeated name.
        name: String,
    },
    /// Another benchmark with this id is already registered.
    #[error("another benchmark with this id is already registered")]
    DuplicateId,
}

/// Errors reading a result file (a JSON report): it cannot be read, does
/// not parse, is too large or has a newer schema. Comparing two reports
/// fails with `benchsuite_report::compare::CompareError`.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// File path.
        path: String,
        /// Cause.
        #[source]
        source: io::Error,
    },
    /// The file is not a benchsuite JSON report.
    #[error("{path} is not a valid benchsuite JSON report")]
    Parse {
        /// File path.
        path: String,
        /// Cause.
        #[source]
        source: serde_json::Error,
    },
    /// The file is larger than a report may be ([`crate::results::MAX_REPORT_BYTES`]).
    #[error(
        "{path} is {size}, over the {limit} a report file may have; benchsuite does not read it (write fewer records or samples per report, or one report per host)"
    )]
    TooLarge {
        /// File path.
        path: String,
        /// Its size as read (`over 256MiB` where it could not be known
        /// before reading).
        size: String,
        /// The limit, as shown.
        limit: String,
    },
    /// The report's schema is newer than this build understands.
    #[error(
        "{path} has schema version {found}, this benchsuite reads major version {supported}; upgrade benchsuite"
    )]
    UnsupportedSchema {
        /// File path.
        path: String,
        /// Version in the file.
        found: String,
        /// Major version this build reads.
        supported: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_level_and_the_chain_has_every_cause() {
        let e = BenchError::io(
            "open /scratch/f",
            io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(e.to_string(), "open /scratch/f");
        let chain = error_chain(&e);
        assert!(chain.starts_with("open /scratch/f: "), "{chain}");
        assert!(chain.contains("No such file"), "{chain}");
        let outer = BenchError::caused("worker 1", e);
        assert_eq!(outer.to_string(), "worker 1");
        assert!(error_chain(&outer).starts_with("worker 1: open /scratch/f: No such file"));
    }
}
