//! The subcommands.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use benchsuite::export::{self, Format};
use benchsuite::{Host, Registry, Report};

use benchsuite_core::text::printable;

use crate::args::{Cli, Command, CompareArgs, ConvertArgs, InfoArgs, ListArgs, ServeArgs};
use crate::config;
use crate::output::{keep_verdict, replace_file, write_report};

/// The exit status: 0 ok, 1 regression (or a failure under `--strict`),
/// 128 + the signal that interrupted it (`crate::interrupt`). Errors (exit 2) are returned as `Err`.
pub fn run(cli: Cli, registry: &Registry) -> Result<i32> {
    match cli.command {
        Command::Run(a) => {
            // Rank 0's meeting point (--rendezvous) outlives the run's error.
            let mut pairing = None;
            let result = crate::config::run_settings(
                &a,
                registry,
                std::io::stdout().is_terminal(),
                std::io::stderr().is_terminal(),
            )
            .and_then(|s| crate::run::cmd_run(s, registry, &mut pairing));
            benchsuite_fleet::Pairing::end(pairing, result, |e| {
                if crate::output::is_broken_pipe(&e) {
                    Err(e)
                } else {
                    eprintln!(
                        "error: {}",
                        printable(&crate::output::with_flags(&format!("{e:#}")))
                    );
                    Ok(2)
                }
            })
        }
        Command::Reference(a) => crate::reference_cmd::cmd_reference(&a, registry),
        Command::Compare(a) => cmd_compare(&a, registry),
        Command::List(a) => cmd_list(&a, registry),
        Command::Info(a) => cmd_info(&a, registry),
        Command::Serve(a) => cmd_serve(&a),
        Command::Convert(a) => cmd_convert(&a),
        Command::Schema => cmd_schema(),
        Command::Merge(a) => crate::fleet_cmd::cmd_merge(&a, registry),
        Command::Breakeven(a) => crate::breakeven_cmd::cmd_breakeven(&a),
        Command::Report(a) => crate::report_cmd::cmd_report(&a, registry),
        Command::History(a) => crate::history_cmd::cmd_history(&a, registry),
        Command::Calibrate(a) => crate::calibrate_cmd::cmd_calibrate(&a, registry),
        Command::Baseline(a) => crate::acceptance_cmd::cmd_baseline(&a, registry),
        Command::Check(a) => crate::acceptance_cmd::cmd_check(&a, registry),
        Command::Completions(a) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(a.shell, &mut cmd, "benchsuite", &mut io::stdout().lock());
            Ok(0)
        }
        Command::Man(a) => cmd_man(&a.out_dir),
    }
}

/// Writes `benchsuite.1` and one page per subcommand (`benchsuite-run.1`)
/// into `dir`, each atomically.
fn cmd_man(dir: &std::path::Path) -> Result<i32> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--out-dir {}: cannot create it: {e}", dir.display()))?;
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut pages = vec![("benchsuite".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        let name = format!("benchsuite-{}", sub.get_name());
        // The page's title and usage name the whole command.
        let sub = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("benchsuite {}", sub.get_name()));
        pages.push((name, sub));
    }
    for (name, page) in &pages {
        let path = dir.join(format!("{name}.1"));
        crate::output::replace_file_as("--out-dir", &path, |w| {
            clap_mangen::Man::new(page.clone()).render(w)
        })?;
    }
    eprintln!("{} man pages written to {}", pages.len(), dir.display());
    Ok(0)
}

/// Prints the JSON Schema of the report.
fn cmd_schema() -> Result<i32> {
    // Serialised first, so a closed pipe is a plain io::Error (success).
    let text = serde_json::to_string_pretty(&benchsuite::schema::json_schema())?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(0)
}

fn cmd_compare(args: &CompareArgs, registry: &Registry) -> Result<i32> {
    let mut options = config::compare_options(args)?;
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    if !format.writes_comparison() {
        anyhow::bail!(
            "--format {format} is for reports, not comparisons: compare writes table, json, csv or md (use `benchsuite convert NEW.json --format {format}` for a dashboard)"
        );
    }
    // Reports before schema 1.6 carry no metric roles: the benchmarks'
    // declarations give them.
    if let Some(bins) = &args.interleave {
        let (mut base, mut new) = crate::interleave::run(bins, args)?;
        registry.fill_roles(&mut base);
        registry.fill_roles(&mut new);
        if let Some(path) = &args.thresholds {
            crate::calibrate_cmd::drop_unused_file_rules(&mut options.rules, path, &[&base, &new])?;
        }
        let options = benchsuite::compare::CompareOptions {
            paired: true,
            ..options
        };
        let cmp = benchsuite::compare::compare(&base, &new, &options)?;
        return write_comparison(args, format, &cmp);
    }
    if args.confirm.is_some() {
        crate::interleave::check_run_args(&args.run_args)?;
        if args.budget < 3 {
            anyhow::bail!(
                "--budget {}: a confirmation needs at least 3 pairs to judge paired differences",
                args.budget
            );
        }
    } else if !args.run_args.is_empty() {
        anyhow::bail!(
            "arguments after `--` ({}) are for the runs of --interleave or --confirm",
            args.run_args.join(" ")
        );
    }
    if args.confirm.is_none()
        && let Some(t) = args.round_timeout
    {
        anyhow::bail!(
            "--round-timeout {} s: limits the rounds of --interleave or --confirm, and neither is given",
            t.as_secs_f64()
        );
    }
    use benchsuite::fleet::{Fleet, ReportFile};
    let (history_paths, new_path) =
        benchsuite::compare::history::inputs(&args.reports, args.baseline_dir.as_deref())?;
    let read = |path: &PathBuf| -> Result<ReportFile> {
        let mut file = Fleet::read_file(path)?;
        if let ReportFile::Report(r) = &mut file {
            registry.fill_roles(r);
        }
        Ok(file)
    };
    let mut history = Vec::with_capacity(history_paths.len());
    for p in &history_paths {
        history.push((p.display().to_string(), read(p)?));
    }
    let new = read(&new_path)?;
    let (history, new) = match (history.as_slice(), new) {
        ([(_, ReportFile::Fleet(b))], ReportFile::Fleet(n)) => {
            if args.confirm.is_some() {
                anyhow::bail!(
                    "--confirm measures two builds on this machine: it confirms a comparison of one host's reports, not of fleets"
                );
            }
            // Host by host: crates/report/src/compare/fleet.rs.
            if !matches!(format, Format::Table | Format::Json | Format::Markdown) {
                anyhow::bail!(
                    "--format {format}: a fleet comparison is written as table, json or md"
                );
            }
            let cmp = benchsuite::compare::compare_fleets(b, &n, &options)?;
            let code = cmp.outcome().exit_code();
            let write = |w: &mut dyn Write| {
                crate::output::for_people(format, w, |w| {
                    benchsuite::compare::write_fleet_comparison(format, &cmp, w)
                })
            };
            let written = match &args.output {
                Some(path) => replace_file(path, write),
                None => (|| {
                    let mut out = io::stdout().lock();
                    write(&mut out)?;
                    out.flush()?;
                    Ok(())
                })(),
            };
            keep_verdict(code, written)?;
            return Ok(code);
        }
        (_, ReportFile::Report(n)) => {
            let mut reports = Vec::with_capacity(history.len());
            for (name, f) in history {
                match f {
                    ReportFile::Report(r) => reports.push((name, r)),
                    ReportFile::Fleet(_) => anyhow::bail!(
                        "{name} is a fleet report and {} one host's report: compare two fleets (benchsuite merge), or reports of one host",
                        new_path.display()
                    ),
                }
            }
            (reports, n)
        }
        (_, ReportFile::Fleet(_)) => anyhow::bail!(
            "{} is a fleet report: compare it with one baseline fleet report (a history of fleets is not supported; merge each run's hosts and compare the newest two)",
            new_path.display()
        ),
    };
    let baselines: Vec<benchsuite::compare::Baseline<'_>> = history
        .iter()
        .map(|(name, report)| benchsuite::compare::Baseline { name, report })
        .collect();
    if let Some(path) = &args.thresholds {
        let reports: Vec<&benchsuite::Report> =
            history.iter().map(|(_, r)| r).chain([&new]).collect();
        crate::calibrate_cmd::drop_unused_file_rules(&mut options.rules, path, &reports)?;
        let file = crate::calibrate_cmd::read_thresholds(path)?;
        let here = benchsuite::compare::calibrate::testbed(&new);
        if let Some(t) = file.testbed.as_deref().filter(|t| *t != here) {
            eprintln!(
                "warning: --thresholds {} was fitted on {} ({} A/A jobs) and this report ran on {}: its thresholds may not fit this machine's noise",
                path.display(),
                printable(t),
                file.jobs.map_or_else(|| "?".to_string(), |j| j.to_string()),
                printable(&here)
            );
        }
        if let (Some(b), Some(_)) = (file.budget, &args.confirm)
            && b != args.budget
        {
            eprintln!(
                "warning: --thresholds {} was fitted for --budget {b}, this job's is {}",
                path.display(),
                args.budget
            );
        }
    }
    let mut cmp = benchsuite::compare::compare_history(&baselines, &new, &options)?;
    for e in &cmp.excluded {
        // A baseline's host facts are a foreign report's text.
        let e: String = e
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        eprintln!(
            "warning: left out of the history: {} (--allow-mixed-hosts keeps it)",
            printable(&e.to_string())
        );
    }
    let mut interrupted = false;
    if let Some(bins) = &args.confirm {
        (cmp, interrupted) = crate::interleave::confirm(bins, args, &cmp, &new, &options)?;
    }
    let code = write_comparison(args, format, &cmp)?;
    if interrupted {
        eprintln!(
            "interrupted ({}): the confirmation stopped; the verdicts of its last look are written, and the exit code is the signal's",
            crate::interrupt::name()
        );
        return Ok(crate::interrupt::exit_code());
    }
    Ok(code)
}

/// Writes a comparison to `-o` or stdout; the exit code is the gate's,
/// whatever becomes of stdout.
fn write_comparison(
    args: &CompareArgs,
    format: Format,
    cmp: &benchsuite::compare::Comparison,
) -> Result<i32> {
    let code = cmp.outcome().exit_code();
    let table = export::TableOptions {
        verbose: args.verbose,
    };
    let written = (|| -> Result<()> {
        match &args.output {
            Some(path) => replace_file(path, |w| {
                crate::output::for_people(format, w, |w| {
                    export::write_comparison_with(format, cmp, &table, w)
                })
            })?,
            None => {
                let mut out = io::stdout().lock();
                crate::output::for_people(format, &mut out, |w| {
                    export::write_comparison_with(format, cmp, &table, w)
                })?;
                out.flush()?;
            }
        }
        Ok(())
    })();
    keep_verdict(code, written)?;
    Ok(code)
}

fn cmd_convert(args: &ConvertArgs) -> Result<i32> {
    let format = config::output_format(
        args.format.as_deref(),
        args.output.as_deref(),
        io::stdout().is_terminal(),
    )?;
    let mut report = Report::read(&args.report)?;
    // A report written before tokens were redacted still holds one.
    if let Some(t) = report.config.options.get_mut("token") {
        *t = benchsuite::bench::REDACTED.to_string();
    }
    let table = export::TableOptions {
        verbose: args.verbose,
    };
    let written = write_report(&report, format, args.output.as_deref(), &table)?;
    if !written.is_empty() {
        eprintln!("{} records{written}", report.records.len());
    }
    Ok(0)
}

fn cmd_list(args: &ListArgs, registry: &Registry) -> Result<i32> {
    let mut out = io::stdout().lock();
    let ids: Vec<_> = registry
        .select(&args.selectors)
        .map(|v| v.iter().map(|b| b.meta().id).collect())
        .or_else(|e| {
            if args.selectors.is_empty() {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })?;
    let wanted: Vec<&str> = ids.iter().map(|id| id.as_ref()).collect();
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    if !matches!(format, Format::Table | Format::Json) {
        anyhow::bail!("--format {format}: list writes table or json");
    }
    // What a run would ask each benchmark: can it run here?
    let ctx = args
        .probe
        .then(|| benchsuite::RunConfig::default().context(Arc::new(Host::detect())));
    if format == Format::Json {
        let ids = (!args.selectors.is_empty()).then_some(wanted.as_slice());
        let catalog = benchsuite::catalog::catalog(registry, ids, ctx.as_ref());
        writeln!(out, "{}", serde_json::to_string_pretty(&catalog)?)?;
        return Ok(0);
    }
    benchsuite::export::list::write_list(
        registry,
        &wanted,
        !args.selectors.is_empty(),
        ctx.as_ref(),
        &mut out,
    )?;
    Ok(0)
}

fn cmd_info(args: &InfoArgs, registry: &Registry) -> Result<i32> {
    let format = match &args.format {
        Some(f) => config::parse_format("--format", f)?,
        None => Format::Table,
    };
    let mut host = Host::detect();
    // What the modules report about their hardware (GPU, NIC, the disk
    // under the scratch directory), as a run records it in host.extra.
    if let Some(dir) = &args.scratch_dir
        && !std::fs::metadata(dir).is_ok_and(|m| m.is_dir())
    {
        anyhow::bail!("--scratch-dir {}: not a directory", dir.display());
    }
    let cfg = benchsuite::RunConfig::quick()
        .to_builder()
        .scratch_dir(args.scratch_dir.clone())
        .build()?;
    let ctx = cfg.context(Arc::new(host.clone()));
    host.extra = benchsuite::runner::module_facts(registry, &ctx);
    let mut out = io::stdout().lock();
    if format == Format::Json {
        writeln!(out, "{}", benchsuite_core::text::to_json_pretty(&host)?)?;
        return Ok(0);
    }
    benchsuite::export::host::write_host(
        &host,
        benchsuite::export::facts::terminal_width(),
        &mut out,
    )?;
    Ok(0)
}

fn cmd_serve(args: &ServeArgs) -> Result<i32> {
    use std::net::{SocketAddr, ToSocketAddrs};
    let bind: SocketAddr = args
        .bind
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "invalid value `{}` for --bind: expected ADDR:PORT, e.g. 127.0.0.1:{} or [::1]:{}",
                args.bind,
                benchsuite_net::DEFAULT_PORT,
                benchsuite_net::DEFAULT_PORT
            )
        })?;
    // --no-auth: nobody needs a token, so nobody may reach it but this
    // machine.
    if args.no_auth && !bind.ip().is_loopback() {
        anyhow::bail!(
            "--no-auth is refused on {bind}: only a loopback address may go without a token \
             (any host that reaches {bind} could use this machine's network); set {} or give --token-file PATH",
            config::TOKEN_ENV
        );
    }
    let token = config::resolve_token(
        args.token.as_ref(),
        args.token_file.as_deref(),
        !args.no_auth,
    )?;
    if args.no_auth && std::env::var_os(config::TOKEN_ENV).is_some() {
        eprintln!(
            "benchsuite serve: note: {} is set but ignored: --no-auth",
            config::TOKEN_ENV
        );
    }
    let source = token.as_ref().map(|(_, s)| *s);
    let mut cfg = benchsuite_net::ServerConfig::new(bind, token.map(|(t, _)| t));
    cfg.log = true;
    cfg.echo_cpu = args.echo_cpu;
    // The configuration's own checks first (a public address without a
    // token, a CPU this process may not use), then the rule of `serve`:
    // a token also on loopback, unless --no-auth.
    cfg.check()?;
    if source.is_none() && !args.no_auth {
        anyhow::bail!(
            "benchsuite serve requires a token, also on {bind}: any user of this machine could use the server otherwise; \
             set {} or give --token-file PATH (clients then use the same token), or pass --no-auth to accept anyone on this machine",
            config::TOKEN_ENV
        );
    }
    let echo_cpu = args.echo_cpu;
    benchsuite_net::serve(cfg, |addr| {
        eprintln!(
            "benchsuite serve: listening on {addr} (TCP; UDP tests on ephemeral ports), protocol version {}, {}{}; Ctrl-C to stop",
            benchsuite_net::PROTOCOL_VERSION,
            match source {
                Some(s) => format!("token required (from {s})"),
                None => "no token (--no-auth: anyone on this machine may use it)".to_string(),
            },
            echo_cpu
                .map(|c| format!(", echo threads pinned to CPU {c}"))
                .unwrap_or_default()
        );
        eprintln!(
            "benchsuite serve: clients run `benchsuite run net --peer {addr}`{}",
            if source.is_some() {
                format!(
                    " with the same token in {} or --token-file",
                    config::TOKEN_ENV
                )
            } else {
                String::new()
            }
        );
    })?;
    eprintln!("benchsuite serve: stopped");
    Ok(0)
}
