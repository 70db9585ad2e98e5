//! Where a token comes from: `--token`, `--token-file` or the
//! environment ([`TOKEN_ENV`]), as `serve`, `run --peer` and
//! `--rendezvous` take it. A token file readable by others, and a token on
//! the command line, are warned about.

use std::path::Path;

/// The environment variable holding the token.
pub const TOKEN_ENV: &str = "BENCHSUITE_TOKEN";

/// A token that cannot be read; the message names the flag or variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenError(pub String);

macro_rules! fail {
    ($($t:tt)*) => { return Err(TokenError(format!($($t)*))) };
}

/// The most bytes read from a `--token-file` (its first line must fit).
const TOKEN_FILE_MAX: u64 = 64 * 1024;

/// Where the token came from, for messages (never the token itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--token` (or `--opt token=`).
    Flag,
    /// `--token-file`.
    File,
    /// The environment ([`TOKEN_ENV`]).
    Env,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Flag => "--token",
            Source::File => "--token-file",
            Source::Env => TOKEN_ENV,
        })
    }
}

/// The token from its sources: `--token` or `--token-file` (clap refuses
/// both at once), either of which overrides `BENCHSUITE_TOKEN`; the
/// environment is read only when `use_env`. `--token` is accepted with a
/// warning that it is visible in `ps`.
pub fn resolve(
    flag: Option<&str>,
    file: Option<&Path>,
    use_env: bool,
) -> Result<Option<(String, Source)>, TokenError> {
    if let Some(t) = flag {
        eprintln!(
            "warning: --token puts the token on the command line, where other users of this machine can read it (ps, /proc) and shell history keeps it; use {TOKEN_ENV}=... or --token-file PATH instead"
        );
        if t.is_empty() {
            fail!("--token is empty: give a non-empty token");
        }
        return Ok(Some((t.to_string(), Source::Flag)));
    }
    if let Some(path) = file {
        return read_file(path).map(|t| Some((t, Source::File)));
    }
    if !use_env {
        return Ok(None);
    }
    match std::env::var(TOKEN_ENV) {
        Ok(t) if t.is_empty() => {
            fail!("{TOKEN_ENV} is set but empty: give a non-empty token, or unset it")
        }
        Ok(t) => Ok(Some((t, Source::Env))),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => fail!("{TOKEN_ENV} is not valid UTF-8"),
    }
}

/// The first line of `path`, its line ending removed; an error naming the
/// file if it cannot be read or the line is empty. Warns when other users
/// may read the file.
fn read_file(path: &Path) -> Result<String, TokenError> {
    use std::io::{BufRead, Read};
    let shown = path.display();
    let f = std::fs::File::open(path)
        .map_err(|e| TokenError(format!("--token-file {shown}: cannot read the token: {e}")))?;
    #[cfg(unix)]
    if let Ok(meta) = f.metadata() {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if meta.is_file() && mode & 0o077 != 0 {
            eprintln!(
                "warning: --token-file {shown} may be read by other users (mode {:o}); chmod 600 it",
                mode & 0o777
            );
        }
    }
    let mut line = String::new();
    std::io::BufReader::new(f.take(TOKEN_FILE_MAX))
        .read_line(&mut line)
        .map_err(|e| TokenError(format!("--token-file {shown}: cannot read the token: {e}")))?;
    let token = line
        .strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(&line);
    if token.is_empty() {
        fail!("--token-file {shown}: the first line is empty; put the token on it");
    }
    Ok(token.to_string())
}
