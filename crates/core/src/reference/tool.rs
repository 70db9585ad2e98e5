//! How a reference tool is found (absolute PATH entries only) and started
//! (a private directory, no secrets), and its version probed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{PipeTail, Reference, Stopped, ToolProcess};

/// The first line a tool's version probe (`argv`) prints, made printable
/// and at most [`VERSION_CHARS`] characters; why there is none otherwise:
/// the probe failed (a `python3 -c "import torch ..."` without torch exits
/// 1 printing `Traceback ...`, which is no version), ran past `timeout`
/// (killed with what it started), or printed nothing.
///
/// It runs as a tool does ([`tool_command`]): in a private directory of
/// its own (the probe of a Python package imports it, and from the
/// working directory a planted `torch.py` would run), without secrets in
/// its environment, its output read with a bound.
pub(super) fn probe_version(
    argv: &[String],
    timeout: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<String, String> {
    let shown = super::shell_join(argv);
    let dir = Scratch::create(&std::env::temp_dir(), &[])?;
    let mut c = tool_command(argv, dir.path())?;
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = ToolProcess::spawn(c).map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let out = child
        .child_mut()
        .stdout
        .take()
        .map(|p| PipeTail::read(p, VERSION_KEPT));
    let err = child
        .child_mut()
        .stderr
        .take()
        .map(|p| PipeTail::read(p, VERSION_KEPT));
    let status = match child.wait(Instant::now() + timeout, cancelled) {
        Ok(s) => s,
        Err(Stopped::TimedOut) => {
            return Err(format!(
                "`{shown}` gave no answer in {} s; killed",
                timeout.as_secs_f64()
            ));
        }
        Err(Stopped::Cancelled) => return Err(format!("`{shown}` stopped: interrupted")),
        Err(Stopped::Wait(e)) => return Err(format!("waiting for `{shown}`: {e}")),
    };
    let grace_ends = Instant::now() + PIPE_GRACE.min(timeout);
    let text = [out, err]
        .into_iter()
        .flatten()
        .filter_map(|t| t.get(grace_ends.saturating_duration_since(Instant::now())))
        .collect::<Vec<_>>()
        .join("\n");
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    let line = |l: &str| {
        let mut l: String = crate::text::printable(l)
            .chars()
            .take(VERSION_CHARS)
            .collect();
        if l.chars().count() == VERSION_CHARS {
            l.push('…');
        }
        l
    };
    if !status.success() {
        // Its last line says why (a Python exception's last line names it).
        return Err(match lines().next_back() {
            Some(l) => format!("`{shown}` exited with {status}: {}", line(l)),
            None => format!("`{shown}` exited with {status}"),
        });
    }
    lines()
        .next()
        .map(line)
        .ok_or_else(|| format!("`{shown}` printed nothing"))
}

/// The most characters of a version recorded.
const VERSION_CHARS: usize = 200;

/// The path of `program` on `PATH`, if it is there: an executable file in
/// one of `PATH`'s absolute directories. A relative entry (`.`, `bin`, or
/// an empty one, which means the working directory) is skipped: a tool
/// runs by name from where the system puts programs, never from wherever
/// benchsuite happens to run (a `python3` or `fio` planted there). A
/// program named with a `/` is taken as it is, made absolute.
pub(super) fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = std::path::absolute(program).ok()?;
        return runnable(&p).then_some(p);
    }
    absolute_path_dirs()
        .into_iter()
        .map(|d| d.join(program))
        .find(|p| runnable(p))
}

/// `PATH`'s absolute directories, in order.
pub(super) fn absolute_path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH").map_or_else(Vec::new, |paths| {
        std::env::split_paths(&paths)
            .filter(|d| d.is_absolute())
            .collect()
    })
}

/// A command for `argv` (its program found by [`find_program`]) that runs
/// in `dir`, with `PATH` cut to its absolute directories: what the tool
/// itself runs by name (taskset its tool, Python's `nvidia-smi`) is not
/// looked for in `dir` either; and without benchsuite's secrets
/// ([`super::SECRET_ENV`]) in its environment.
pub(super) fn tool_command(argv: &[String], dir: &Path) -> Result<Command, String> {
    let program = find_program(&argv[0]).ok_or_else(|| {
        format!(
            "{} is not on PATH (its directories that are absolute)",
            argv[0]
        )
    })?;
    let mut c = Command::new(program);
    c.args(&argv[1..]).current_dir(dir);
    // A tool is not ours to trust with a secret: it could log its
    // environment, or run what does.
    for k in super::SECRET_ENV {
        c.env_remove(k);
    }
    if let Some(path) = std::env::var_os("PATH") {
        let dirs = absolute_path_dirs();
        if std::env::split_paths(&path).count() != dirs.len()
            && let Ok(joined) = std::env::join_paths(dirs)
        {
            c.env("PATH", joined);
        }
    }
    Ok(c)
}

/// How long a tool's output may stay open after the tool exited.
pub(super) const PIPE_GRACE: Duration = Duration::from_secs(5);

/// The most of a version probe's output read.
const VERSION_KEPT: usize = 4 << 10;

/// A scratch directory for a tool's input and output files, removed with
/// everything in it when dropped, or by [`crate::scratch::remove_all`] when
/// the process exits without unwinding (a second signal).
pub(super) struct Scratch(crate::scratch::ScratchDir);

impl Scratch {
    /// Creates `benchsuite-ref-PID-RANDOM` in [`Reference::scratch_in`]
    /// (else the temporary directory), exclusively and private (mode
    /// 0700: nobody else can put a name in it), and writes the
    /// reference's input files into it.
    pub(super) fn new(r: &Reference) -> Result<Scratch, String> {
        let parent = r.scratch_in.clone().unwrap_or_else(std::env::temp_dir);
        Scratch::create(&parent, &r.inputs)
    }

    /// Creates `benchsuite-ref-PID-RANDOM` in `parent`, private, holding
    /// `inputs` (name, contents).
    pub(super) fn create(parent: &Path, inputs: &[(String, String)]) -> Result<Scratch, String> {
        let dir = crate::scratch::ScratchDir::new(parent, "benchsuite-ref").map_err(|e| {
            format!(
                "cannot create a scratch directory in {}: {e}",
                parent.display()
            )
        })?;
        let scratch = Scratch(dir);
        for (name, text) in inputs {
            let path = scratch.path().join(name);
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(scratch)
    }

    pub(super) fn path(&self) -> &Path {
        self.0.path()
    }
}
