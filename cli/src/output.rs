//! Every file the CLI writes, atomically (see `benchsuite::atomic`), its
//! errors naming the flag that asked for it.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Result;

/// Writes `path` atomically: into a temporary file beside it, renamed over
/// it when complete, so a reader never sees half a report.
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
    benchsuite::atomic::replace_file(path, write).map_err(|e| {
        let what = format!("{flag} {e}");
        anyhow::Error::new(e.into_io()).context(what)
    })
}
