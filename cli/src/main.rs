//! The `benchsuite` binary: parse, run, map the outcome to an exit code.
//!
//! Exit codes: 0 ok, 1 the `compare` gate failed (a regression, or a
//! benchmark of the baseline failed, skipped, missing or not judged in the
//! new report; or a failure under `run --strict`), 2 usage or runtime
//! error, 128 + the signal's number when SIGINT (130), SIGTERM (143) or
//! SIGHUP (129) ended it (see `interrupt`).

mod app;
mod args;
mod breakeven;
mod config;
mod fleet;
mod history_cmd;
mod interleave;
mod interrupt;
mod output;
mod planfile;
mod progress;
mod reference;
mod report_cmd;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Every report's `host.build` says what `--version` says.
    benchsuite::host::BuildInfo::set_program_text(
        env!("BENCHSUITE_FEATURES"),
        env!("BENCHSUITE_COMMIT"),
    );
    let cli = match args::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version print to stdout and succeed; usage
            // errors print clap's message and exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match app::run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error prints one level; `{:#}` joins the chain.
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
