//! `benchsuite baseline` and `benchsuite check`: node acceptance against a
//! per-machine-type baseline (see `benchsuite::acceptance`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use benchsuite::acceptance::{
    Baseline, BuildOptions, Grade, NodeCheck, check, check_names, defective_nodes, npd_message,
};
use benchsuite::fleet::Fleet;
use benchsuite_core::text::printable_line;

use crate::command_args::{BaselineArgs, CheckArgs, CheckFormat};
use crate::output::{Output, keep_verdict, replace_file};

/// The arguments of each measuring run after `--`, minus those `check`
/// sets itself.
fn check_run_args(run_args: &[String]) -> Result<()> {
    for a in run_args {
        let flag = a.split('=').next().unwrap_or(a);
        if ["-o", "--output", "--format", "--only", "--output-dir"].contains(&flag) {
            bail!("{a} after `--`: check --measure sets each run's -o, --format and --only itself");
        }
    }
    Ok(())
}

/// One `benchsuite run` of this binary into `dir/NAME.json`, restricted to
/// `only` when given; its report.
fn measure_once(
    dir: &Path,
    name: &str,
    run_args: &[String],
    only: &[String],
) -> Result<benchsuite::Report> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("--measure: cannot find this benchsuite's path: {e}"))?;
    let path = dir.join(format!("{name}.json"));
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("run");
    if run_args.is_empty() {
        cmd.args(["--profile", "health"]);
    } else {
        cmd.args(run_args);
    }
    for k in only {
        cmd.arg("--only").arg(k);
    }
    if !run_args.iter().any(|a| a == "--no-progress") {
        cmd.arg("--no-progress");
    }
    cmd.arg("-o").arg(&path);
    cmd.stdout(std::process::Stdio::null());
    let out = cmd
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| anyhow::anyhow!("--measure: cannot run {}: {e}", exe.display()))?;
    if !out.status.success() || !path.is_file() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| l.starts_with("error"))
            .or_else(|| err.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        bail!(
            "--measure: `benchsuite run` failed ({}): {}",
            out.status,
            printable_line(line)
        );
    }
    match Fleet::read_file(&path)? {
        benchsuite::fleet::ReportFile::Report(r) => Ok(r),
        benchsuite::fleet::ReportFile::Fleet(_) => bail!("--measure: the run wrote a fleet report"),
    }
}

/// Measures this node, judges it, and measures again what did not pass.
fn measure_and_check(
    args: &CheckArgs,
    baseline: &Baseline,
    registry: &benchsuite::Registry,
) -> Result<NodeCheck> {
    check_run_args(&args.run_args)?;
    // A signal (Ctrl-C, SIGTERM, SIGHUP) ends the check between steps: no
    // verdict, the scratch directory removed, exit 128 + the signal.
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::interrupt::install(&cancel);
    let cancelled = || cancel.load(std::sync::atomic::Ordering::SeqCst);
    let stop_if_cancelled = |scratch: benchsuite::scratch::ScratchDir| {
        if cancelled() {
            drop(scratch);
            eprintln!("interrupted ({}): no verdict", crate::interrupt::name());
            std::process::exit(crate::interrupt::exit_code());
        }
        scratch
    };
    let scratch =
        benchsuite::scratch::ScratchDir::new(&std::env::temp_dir(), "benchsuite-check")
            .map_err(|e| anyhow::anyhow!("--measure: cannot create a scratch directory: {e}"))?;
    let started = std::time::Instant::now();
    let measured = measure_once(scratch.path(), "m0", &args.run_args, &[]);
    let mut scratch = stop_if_cancelled(scratch);
    let mut report = measured?;
    registry.fill_roles(&mut report);
    let first = check(baseline, &report)?;
    let mut again = Vec::new();
    let mut current = first.clone();
    for k in 1..=args.retries {
        let keys = benchsuite::acceptance::records_to_remeasure(&current, &report);
        if keys.is_empty() {
            break;
        }
        eprintln!(
            "check: {} record(s) did not pass; measuring them again in {} s ({k}/{})",
            keys.len(),
            args.wait.as_secs_f64(),
            args.retries
        );
        let until = std::time::Instant::now() + args.wait;
        while std::time::Instant::now() < until && !cancelled() {
            std::thread::sleep(std::time::Duration::from_millis(50).min(args.wait));
        }
        scratch = stop_if_cancelled(scratch);
        let measured = measure_once(scratch.path(), &format!("m{k}"), &args.run_args, &keys);
        scratch = stop_if_cancelled(scratch);
        let mut r = measured?;
        registry.fill_roles(&mut r);
        let mut c = check(baseline, &r)?;
        // Only the records measured again speak (the others are missing
        // from this report by design).
        c.results.retain(|x| keys.contains(&x.record));
        again.push(c);
        current = benchsuite::acceptance::remeasured(&first, &again);
        // Only what still did not pass is measured again.
        report = r;
    }
    eprintln!(
        "check: measured in {:.1} s ({} time(s))",
        started.elapsed().as_secs_f64(),
        again.len() + 1
    );
    Ok(current)
}

fn margin(text: &str) -> Result<f64> {
    match benchsuite::compare::Tolerance::parse(text) {
        Ok(benchsuite::compare::Tolerance::Relative(x)) if x < 1.0 => Ok(x),
        Ok(_) => bail!("--margin `{text}`: give a percentage below 100% (`5%`)"),
        Err(e) => bail!("--margin {e}"),
    }
}

/// Every node's report in `inputs` (fleet reports give all their hosts),
/// each with the file it came from.
fn read_nodes(inputs: &[PathBuf]) -> Result<Vec<(PathBuf, benchsuite::Report)>> {
    let mut out = Vec::new();
    for path in crate::history_cmd::files(inputs)? {
        for r in Fleet::read_hosts(&path)? {
            out.push((path.clone(), r));
        }
    }
    Ok(out)
}

/// Reads a baseline file; a parse error names the flag, file and line.
fn read_baseline(path: &Path) -> Result<Baseline> {
    crate::output::read_toml("--baseline", path)
}

/// Writes `text` to `output` or stdout.
fn emit(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(path) => replace_file(path, |w| w.write_all(text.as_bytes())),
        None => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}

/// Builds (or merges) the baseline; 0 on success.
pub fn cmd_baseline(args: &BaselineArgs, registry: &benchsuite::Registry) -> Result<i32> {
    let options = BuildOptions {
        margin: margin(&args.margin)?,
        ..BuildOptions::default()
    };
    if let (Some(out), None) = (&args.output, &args.merge)
        && out.exists()
    {
        bail!(
            "-o {}: it exists; give --merge {} to rebuild it keeping its rules, edits and other machine types, or remove it first",
            out.display(),
            out.display()
        );
    }
    let previous = args
        .merge
        .as_deref()
        .map(|p| crate::output::read_toml::<Baseline>("--merge", p).map(|b| (p, b)));
    let previous = previous.transpose()?;
    let mut reports: Vec<benchsuite::Report> = read_nodes(&args.inputs)?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    for r in &mut reports {
        registry.fill_roles(r);
    }
    let built = Baseline::build(&reports, &options)?;
    for m in &built.machines {
        eprintln!(
            "{}: {} band(s) from {} run(s) of {} host(s){}",
            printable_line(&m.name),
            m.bands.len(),
            m.runs,
            m.hosts.len(),
            if m.runs < benchsuite::acceptance::MIN_RUNS_FOR_SPREAD {
                " (fewer than 3 runs: the bands are the margin alone; add runs to learn the spread)"
            } else {
                ""
            }
        );
    }
    let baseline = match previous {
        Some((path, old)) => {
            if old.format != benchsuite::acceptance::BASELINE_FORMAT {
                bail!(
                    "--merge {}: baseline format {}; this benchsuite writes format {}",
                    path.display(),
                    old.format,
                    benchsuite::acceptance::BASELINE_FORMAT
                );
            }
            let (merged, replaced, kept) = built.merge_into(old);
            eprintln!(
                "merged into {}: {} machine type(s) rebuilt, {} kept as they were, {} rule(s) kept",
                path.display(),
                replaced.len(),
                kept.len(),
                merged.rules.len()
            );
            merged
        }
        None => built,
    };
    emit(args.output.as_deref(), &baseline.to_toml())?;
    Ok(0)
}

/// The registry's benchmarks and their metrics, for rules' names.
fn known(registry: &benchsuite::Registry) -> Vec<(String, Vec<String>)> {
    registry
        .benchmarks()
        .map(|b| {
            let m = b.meta();
            (
                m.id.to_string(),
                m.metrics.iter().map(|x| x.name.to_string()).collect(),
            )
        })
        .collect()
}

/// Every host of `hosts` judged by the baseline at `path` (its rules
/// checked against the registry first), for `merge --baseline`.
pub(crate) fn judge_hosts(
    path: &Path,
    hosts: Vec<benchsuite::Report>,
    registry: &benchsuite::Registry,
) -> Result<Vec<NodeCheck>> {
    let baseline = read_baseline(path)?;
    let name = path.display();
    check_names(&baseline, &known(registry))
        .map_err(|e| anyhow::anyhow!("--baseline {name}: {e}"))?;
    hosts
        .into_iter()
        .map(|mut r| {
            registry.fill_roles(&mut r);
            check(&baseline, &r).map_err(|e| {
                anyhow::anyhow!(
                    "{}: --baseline {name}: {e}",
                    printable_line(&benchsuite::fleet::host_label(&r))
                )
            })
        })
        .collect()
}

/// The fleet's acceptance summary after `merge`'s view: the counts, then
/// each defective node with its drain reason; the exit code (1 when a
/// node FAILs).
pub(crate) fn write_fleet_summary(out: &mut dyn Write, checks: &[NodeCheck]) -> Result<i32> {
    let mut counts = [0; 3];
    for c in checks {
        counts[c.grade as usize] += 1;
    }
    writeln!(
        out,
        "\nacceptance: {} node(s), {} PASS, {} WARN, {} FAIL",
        checks.len(),
        counts[0],
        counts[1],
        counts[2]
    )?;
    let defective = defective_nodes(checks);
    if !defective.is_empty() {
        writeln!(out, "defective nodes:")?;
        for c in &defective {
            writeln!(
                out,
                "  {}\t{}",
                printable_line(&c.node),
                c.drain_reason().unwrap_or_default()
            )?;
        }
    }
    Ok(if defective.is_empty() { 0 } else { 1 })
}

/// Judges every node; exit 0 when none FAILs (WARN included), 1 when one
/// does, 2 (an error) when the baseline cannot judge a report.
pub fn cmd_check(args: &CheckArgs, registry: &benchsuite::Registry) -> Result<i32> {
    if args.max_length < 10 {
        bail!("--max-length {}: give 10 or more", args.max_length);
    }
    let baseline = read_baseline(&args.baseline)?;
    let name = args.baseline.display();
    check_names(&baseline, &known(registry))
        .map_err(|e| anyhow::anyhow!("--baseline {name}: {e}"))?;
    let mut checks = Vec::new();
    if args.measure {
        checks.push(
            measure_and_check(args, &baseline, registry)
                .map_err(|e| anyhow::anyhow!("--baseline {name}: {e:#}"))?,
        );
    }
    for (path, mut r) in read_nodes(&args.inputs)? {
        registry.fill_roles(&mut r);
        let c = check(&baseline, &r)
            .map_err(|e| anyhow::anyhow!("{}: --baseline {name}: {e}", path.display()))?;
        checks.push(c);
    }
    let worst = checks.iter().map(|c| c.grade).max().unwrap_or(Grade::Pass);
    let code = worst.exit_code();
    let text = match args.format {
        CheckFormat::Table => table(&checks),
        CheckFormat::Json => {
            benchsuite_core::text::to_json_pretty(&checks).expect("verdicts serialise") + "\n"
        }
        CheckFormat::Slurm => defective_nodes(&checks)
            .iter()
            .map(|c| {
                format!(
                    "{}\t{}\n",
                    printable_line(&c.node),
                    c.drain_reason().unwrap_or_default()
                )
            })
            .collect(),
        CheckFormat::Npd => npd_message(&checks, args.max_length) + "\n",
    };
    if args.format == CheckFormat::Table {
        let [p, w, f] = checks.iter().fold([0; 3], |mut a, c| {
            a[c.grade as usize] += 1;
            a
        });
        eprintln!(
            "{} node(s): {p} PASS, {w} WARN, {f} FAIL{}",
            checks.len(),
            if f > 0 {
                format!(
                    "; defective: {}",
                    defective_nodes(&checks)
                        .iter()
                        .map(|c| printable_line(&c.host).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                String::new()
            }
        );
    }
    Ok(
        match keep_verdict(code, emit(args.output.as_deref(), &text))? {
            Output::Written(()) => code,
            Output::StdoutClosed(c) => c,
        },
    )
}

/// The table: per node, a line per result, then the next steps of those
/// that did not pass.
fn table(checks: &[NodeCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        s.push_str(&format!(
            "{} ({}): {}\n",
            printable_line(&c.host),
            printable_line(&c.machine),
            c.grade
        ));
        for r in &c.results {
            let what = match (r.kind, &r.metric) {
                ("band", Some(m)) => format!("{} {m}", r.record),
                _ => r.rule.clone(),
            };
            s.push_str(&format!(
                "  {:<4}  {}: {}\n",
                r.grade.as_str(),
                printable_line(&what),
                printable_line(&r.reason),
            ));
        }
        let next: Vec<_> = c.problems();
        if !next.is_empty() {
            s.push_str("  next:\n");
            for r in next {
                if let Some(n) = &r.next {
                    s.push_str(&format!(
                        "    {} {}: {}\n",
                        r.grade.as_str(),
                        printable_line(&r.record),
                        printable_line(n)
                    ));
                }
            }
        }
    }
    s
}
