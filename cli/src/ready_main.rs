//! The ready `main` (feature `cli`): the whole `benchsuite` command line
//! over any [`Registry`], for the `benchsuite` binary and for an
//! embedder's own benchmark binary (criterion's `criterion_main!`, divan's
//! `divan::main()`).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::Registry;

/// Runs the `benchsuite` command line over `registry` with this process's
/// arguments, and returns the exit code for `main` to return: `run`,
/// `list`, `compare` (also `--interleave` and `--confirm` of two builds of
/// this binary), `report`, `convert`, `info`, `reference` and the rest,
/// with the benchmarks of `registry` where the `benchsuite` binary has the
/// built-in ones. An embedder's benchmark binary is then
///
/// ```no_run
/// # fn my_benchmarks() -> Vec<Box<dyn benchsuite::Benchmark>> { vec![] }
/// fn main() -> std::process::ExitCode {
///     let mut registry = benchsuite::Registry::new(); // or benchsuite::registry(): the built-in ones too
///     for b in my_benchmarks() {
///         registry.register(b).expect("my benchmarks keep the contract");
///     }
///     benchsuite::main_with(registry)
/// }
/// ```
///
/// and `cargo run --release -- run myapp.hash --param size=4K,64K -o
/// new.json` measures, `compare base.json new.json` gates. As a
/// `[[bench]]` target with `harness = false`, `cargo bench -- run ...`
/// does the same. See docs/embedding.md.
///
/// Exit codes, as `benchsuite`'s: 0 ok; 1 the `compare` gate failed (a
/// regression, or a benchmark of the baseline failed, skipped, missing or
/// not judged in the new report; or a failure under `run --strict`); 2
/// usage or runtime error (the error and its causes on stderr); 3 a
/// comparison left something undecided; 128 + the signal's number when
/// SIGINT (130), SIGTERM (143) or SIGHUP (129) ended it.
pub fn main_with(registry: Registry) -> ExitCode {
    main_with_args(registry, std::env::args_os())
}

/// [`main_with`] with the given arguments, the first being the program's
/// name (as `std::env::args_os()` gives them).
pub fn main_with_args<I, T>(registry: Registry, args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // Every report's `host.build` says what `--version` says.
    crate::host::BuildInfo::set_program_text(
        env!("BENCHSUITE_FEATURES"),
        env!("BENCHSUITE_COMMIT"),
    );
    let cli = match crate::args::Cli::try_parse_from(cargo_bench_args(args)) {
        Ok(c) => c,
        Err(e) => {
            // --help and --version print to stdout and succeed; usage
            // errors print clap's message and exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match crate::app::run(cli, &registry) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) if crate::output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error prints one level; `{:#}` joins the chain. Its
            // text may quote a report or a peer (serde's `unknown variant`,
            // a host name): control characters and bidi overrides escaped.
            eprintln!(
                "error: {}",
                benchsuite_core::text::printable(&crate::output::with_flags(&format!("{e:#}")))
            );
            ExitCode::from(2)
        }
    }
}

/// `cargo bench` runs a `harness = false` target as `BIN [ARGS] --bench`:
/// the flag is cargo's, not ours, and `cargo bench` alone is `run` (the
/// quick pass over every registered benchmark).
fn cargo_bench_args<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.iter().skip(1).any(|a| a == "--bench") {
        let program = args.remove(0);
        args.retain(|a| a != "--bench");
        if args.is_empty() {
            args.push("run".into());
        }
        args.insert(0, program);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        cargo_bench_args(list.iter().copied())
    }

    #[test]
    fn cargo_bench_s_flag_is_dropped_and_alone_means_run() {
        assert_eq!(args(&["b", "--bench"]), ["b", "run"]);
        assert_eq!(
            args(&["b", "run", "myapp.hash", "--bench"]),
            ["b", "run", "myapp.hash"]
        );
        // Without it, nothing changes (no subcommand is clap's usage error).
        assert_eq!(args(&["b"]), ["b"]);
        assert_eq!(args(&["b", "list"]), ["b", "list"]);
    }
}
