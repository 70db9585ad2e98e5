//! `compare --interleave BASE_BIN NEW_BIN -- RUN_ARGS`: the flags; the
//! rounds are `benchsuite::compare::interleave`'s.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use benchsuite::Report;
use benchsuite::compare::interleave::{self, Builds};

use crate::args::CompareArgs;

/// Runs the two builds' rounds and returns their pooled reports (written
/// to `--interleave-dir` too). Ctrl-C reaches the running build too (one
/// process group): it ends its round, and then this one exits 130 without
/// judging half a comparison.
pub fn run(bins: &[PathBuf], args: &CompareArgs) -> Result<(Report, Report)> {
    let [base_bin, new_bin] = bins else {
        bail!("--interleave takes two binaries: BASE_BIN NEW_BIN");
    };
    for a in &args.run_args {
        let flag = a.split('=').next().unwrap_or(a);
        if ["-o", "--output", "--format", "--rounds", "--duration"].contains(&flag) {
            bail!(
                "{a} after `--`: --interleave sets each run's -o, --format and --rounds itself (and a --duration time series has no rounds to pair)"
            );
        }
    }
    if !args.interleave_dir.is_dir() {
        bail!(
            "--interleave-dir {}: not a directory",
            args.interleave_dir.display()
        );
    }
    let cancel = Arc::new(AtomicBool::new(false));
    crate::output::install_ctrlc(&cancel);
    let builds = Builds {
        base: base_bin,
        new: new_bin,
        rounds: args.rounds,
        run_args: &args.run_args,
    };
    let Some((base, new)) = interleave::run(&builds, &cancel)? else {
        eprintln!("interrupted: nothing compared");
        std::process::exit(130);
    };
    for (name, r) in [("base", &base), ("new", &new)] {
        let path = args.interleave_dir.join(format!("interleave-{name}.json"));
        crate::output::replace_file_as("--interleave-dir", &path, |w| {
            serde_json::to_writer_pretty(&mut *w, r)?;
            writeln!(w)
        })?;
        eprintln!("{name} report: {}", path.display());
    }
    Ok((base, new))
}
