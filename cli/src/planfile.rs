//! Plan files (`benchsuite run -f plan.toml`): the library reads them
//! (`benchsuite::phase`); here the command line says which of its flags it
//! gave, since those win over the file.

use std::path::Path;

use anyhow::Result;
use benchsuite::RunConfig;
use benchsuite::phase::{Given, Phase, read_plan};

use crate::args::RunArgs;

/// Reads `path` into phases over `base` (the command line's
/// configuration); what the command line gave (`given`) wins over the file.
pub fn phases(path: &Path, given: &Given, base: &RunConfig) -> Result<Vec<Phase>> {
    Ok(read_plan(path, given, base)?)
}

/// Which of a plan file's settings `args` gave.
pub fn given(args: &RunArgs) -> Given {
    Given {
        quick: args.quick,
        selectors: args.selectors.clone(),
        runs: args.runs.is_some(),
        rounds: args.rounds.is_some(),
        duration: args.duration.is_some(),
        interval: args.interval.is_some(),
        min_sample_time: args.min_sample_time.is_some(),
        warmup: args.warmup.is_some(),
        slo: args.slo.is_some(),
    }
}
