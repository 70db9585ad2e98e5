//! What differs between two runs' machines, builds and settings.

use std::fmt;

use benchsuite_core::results::Report;

/// The facts of the two reports' hosts, builds and run settings that can
/// move a number on their own, where they differ. Unknown (null) on either
/// side is not a difference; memory sizes within 2% are the same machine
/// (firmware and kernel reserve slightly different amounts).
pub(super) fn context_differences(base: &Report, new: &Report) -> Vec<String> {
    fn text<T: fmt::Display>(v: &Option<T>) -> Option<String> {
        v.as_ref().map(|v| v.to_string())
    }
    let (b, n) = (&base.host, &new.host);
    let mut out = Vec::new();
    let mut diff = |what: &str, x: Option<String>, y: Option<String>, why: &str| {
        if let (Some(x), Some(y)) = (x, y)
            && x != y
        {
            out.push(format!("{what}: {x} → {y}{why}"));
        }
    };
    diff("cpu.model", text(&b.cpu.model), text(&n.cpu.model), "");
    diff(
        "cpu.microarchitecture",
        text(&b.cpu.microarchitecture),
        text(&n.cpu.microarchitecture),
        "",
    );
    diff(
        "cpu.logical_cpus",
        text(&b.cpu.logical_cpus),
        text(&n.cpu.logical_cpus),
        "",
    );
    diff(
        "cpu.sockets",
        text(&b.cpu.sockets),
        text(&n.cpu.sockets),
        "",
    );
    diff(
        "cpu.governor",
        text(&b.cpu.governor),
        text(&n.cpu.governor),
        "",
    );
    let idle = |h: &benchsuite_core::Host| {
        h.cpu.idle.as_ref().map(|i| {
            let poll = i
                .halt_poll_ns
                .map(|ns| format!(", polls {ns} ns before halting"))
                .unwrap_or_default();
            format!(
                "{} driver, {} governor{poll}",
                i.driver.as_deref().unwrap_or("unknown"),
                i.governor.as_deref().unwrap_or("unknown")
            )
        })
    };
    diff(
        "cpu.idle",
        idle(b),
        idle(n),
        " (what waking an idle CPU costs: moves ping-pong, loopback and small-message figures)",
    );
    diff(
        "virtualization",
        text(&b.virtualization),
        text(&n.virtualization),
        "",
    );
    diff("kernel", text(&b.kernel), text(&n.kernel), "");
    if let (Some(x), Some(y)) = (b.memory_bytes, n.memory_bytes)
        && (x as f64 - y as f64).abs() > 0.02 * x.max(y) as f64
    {
        diff(
            "memory",
            Some(benchsuite_core::units::format_size(x)),
            Some(benchsuite_core::units::format_size(y)),
            "",
        );
    }
    let debug = if b.build.is_debug() || n.build.is_debug() {
        " (a debug build's numbers are not representative)"
    } else {
        ""
    };
    diff(
        "build.profile",
        Some(b.build.profile.clone()),
        Some(n.build.profile.clone()),
        debug,
    );
    diff(
        "benchsuite version",
        Some(base.tool_version.clone()),
        Some(new.tool_version.clone()),
        "",
    );
    let (bc, nc) = (&base.config, &new.config);
    diff(
        "quick",
        Some(bc.quick.to_string()),
        Some(nc.quick.to_string()),
        " (quick shrinks working sets and samples)",
    );
    diff(
        "min_sample_time",
        Some(benchsuite_core::units::format_seconds(bc.min_sample_time_s)),
        Some(benchsuite_core::units::format_seconds(nc.min_sample_time_s)),
        "",
    );
    let fewer = |b: usize, n: usize| {
        if n < b {
            " (fewer samples in new: a weaker gate, more changes come out undecided)"
        } else {
            ""
        }
    };
    diff(
        "rounds",
        Some(bc.rounds.to_string()),
        Some(nc.rounds.to_string()),
        fewer(bc.rounds, nc.rounds),
    );
    diff(
        "runs",
        Some(bc.runs.to_string()),
        Some(nc.runs.to_string()),
        fewer(bc.runs, nc.runs),
    );
    for (side, r) in [("base", base), ("new", new)] {
        if let Some(p) = r.progress {
            out.push(format!(
                "the {side} report is unfinished: {} of {} record steps ran (the run was interrupted, or this is the checkpoint of a run that was cut short)",
                p.done, p.planned
            ));
        }
    }
    out
}

/// What makes `base` another testbed than `new`: the CPU model,
/// microarchitecture, CPU count or sockets, where both sides know them.
/// Host names are not compared (CI runners of one machine type differ in
/// nothing else).
pub(crate) fn testbed_difference(base: &Report, new: &Report) -> Option<String> {
    fn text<T: fmt::Display>(v: &Option<T>) -> Option<String> {
        v.as_ref().map(|v| v.to_string())
    }
    let (b, n) = (&base.host.cpu, &new.host.cpu);
    [
        ("cpu.model", text(&b.model), text(&n.model)),
        (
            "cpu.microarchitecture",
            text(&b.microarchitecture),
            text(&n.microarchitecture),
        ),
        (
            "cpu.logical_cpus",
            text(&b.logical_cpus),
            text(&n.logical_cpus),
        ),
        ("cpu.sockets", text(&b.sockets), text(&n.sockets)),
    ]
    .into_iter()
    .find_map(|(what, x, y)| match (x, y) {
        (Some(x), Some(y)) if x != y => Some(format!("{what} {x}, new has {y}")),
        _ => None,
    })
}

/// The testbed a report ran on, as a person names it: `AMD EPYC 9B45
/// (Zen 5), 2 CPUs`.
pub(crate) fn testbed_name(r: &Report) -> String {
    let c = &r.host.cpu;
    let mut s = c.model.clone().unwrap_or_else(|| "unknown CPU".into());
    if let Some(u) = &c.microarchitecture {
        s.push_str(&format!(" ({u})"));
    }
    if let Some(n) = c.logical_cpus {
        s.push_str(&format!(", {n} CPUs"));
    }
    s
}
