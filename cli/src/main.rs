//! The `benchsuite` binary: every built-in module behind the ready `main`
//! (`benchsuite::main_with`), which parses, runs and maps the outcome to
//! an exit code.
//!
//! Exit codes: 0 ok, 1 the `compare` gate failed (a regression, or a
//! benchmark of the baseline failed, skipped, missing or not judged in the
//! new report; or a failure under `run --strict`), 2 usage or runtime
//! error, 128 + the signal's number when SIGINT (130), SIGTERM (143) or
//! SIGHUP (129) ended it (see `interrupt`).

fn main() -> std::process::ExitCode {
    benchsuite::main_with(benchsuite::registry())
}
