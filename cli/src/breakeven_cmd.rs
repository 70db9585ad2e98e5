//! `benchsuite breakeven`: the local-vs-remote break-even transfer size,
//! from measured reports (see `benchsuite_report::breakeven`).

use std::io::Write as _;
use std::path::Path;

use anyhow::{Result, anyhow, bail};
use benchsuite::Report;
use benchsuite::breakeven::{self, Input};
use benchsuite::units::parse_size;

use crate::command_args::BreakevenArgs;

fn wants(flag: &str, spec: Option<&str>) -> Result<Vec<(String, String)>> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    spec.split(',')
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| anyhow!("{flag} {spec}: expected NAME=VALUE[,NAME=VALUE...]"))
        })
        .collect()
}

fn load(flag: &str, path: &Path) -> Result<(String, Report)> {
    let r = Report::read(path).map_err(|e| anyhow!("{flag}: {e:#}"))?;
    Ok((path.display().to_string(), r))
}

fn pick(
    what: &'static str,
    (file, report): &(String, Report),
    id: &str,
    want: &[(String, String)],
    metric: &str,
) -> Result<Input> {
    let record = breakeven::find(report, id, want).ok_or_else(|| {
        let filter = if want.is_empty() {
            String::new()
        } else {
            format!(
                " with {}",
                want.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        anyhow!("{file}: no ok `{id}` record{filter} (needed for the {what})")
    })?;
    breakeven::input(what, file, record, metric).map_err(|e| anyhow!(e))
}

pub fn cmd_breakeven(args: &BreakevenArgs) -> Result<i32> {
    if !(args.events.is_finite() && args.events >= 0.0) {
        bail!("--events {}: expected a non-negative number", args.events);
    }
    let bytes = parse_size(&args.bytes).map_err(|e| anyhow!("--bytes {}: {e}", args.bytes))? as f64;
    let cpu = wants("--cpu", args.cpu.as_deref())?;
    let disk = wants("--disk", args.disk.as_deref())?;
    let local = load("--local", &args.local)?;
    let remote = load("--remote", &args.remote)?;
    let net = load("--net", &args.net)?;
    // One event means one max_prime: the remote CPU record must count the
    // same events as the local one.
    let local_cpu = breakeven::find(&local.1, "cpu.prime", &cpu);
    let mut remote_cpu = cpu.clone();
    if let Some(mp) = local_cpu.and_then(|r| r.params.get("max_prime")) {
        remote_cpu.retain(|(k, _)| k != "max_prime");
        remote_cpu.push(("max_prime".into(), mp.to_string()));
    }
    // One direction: a bidirectional record adds both.
    let up = [("direction".to_string(), "up".to_string())];
    let inputs = [
        pick("local CPU", &local, "cpu.prime", &cpu, "events")?,
        pick("local I/O", &local, "disk.io", &disk, "bandwidth")?,
        pick("remote CPU", &remote, "cpu.prime", &remote_cpu, "events")?,
        pick("remote I/O", &remote, "disk.io", &disk, "bandwidth")?,
        pick(
            "network throughput",
            &net,
            "net.tcp_throughput",
            &up,
            "throughput",
        )?,
        pick("connection setup", &net, "net.connect", &[], "connect")?,
    ];
    let b = breakeven::solve(args.events, bytes, inputs);
    let text = match args.format.as_str() {
        "json" => format!("{}\n", benchsuite_core::text::to_json_pretty(&b)?),
        "table" => breakeven::render(&b),
        other => bail!("--format {other}: expected table or json"),
    };
    // `print!` would panic on a closed stdout; a write error is returned.
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(0)
}
