//! `benchsuite info`: the host facts as labelled lines.

use std::io::{self, Write};

use benchsuite_core::Host;
use benchsuite_core::units::format_size;

use super::facts::{flatten, wrap};

/// The width of the label column.
const LABEL: usize = 24;

/// The host facts as (label, text) rows, as `info` and the HTML report's
/// host section show them: `unknown` where a fact of the host could not
/// be read (never a guess); the modules' facts (`host.extra`: disk, GPU,
/// network) one labelled row each.
pub fn rows(host: &Host) -> Vec<(String, String)> {
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let num = |v: Option<usize>| v.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
    let c = &host.cpu;
    let mut r: Vec<(String, String)> = vec![
        ("hostname".into(), opt(&host.hostname)),
        ("os / arch".into(), format!("{} / {}", host.os, host.arch)),
        ("kernel".into(), opt(&host.kernel)),
        ("virtualization".into(), opt(&host.virtualization)),
        ("cpu model".into(), opt(&c.model)),
        ("cpu vendor".into(), opt(&c.vendor)),
    ];
    if c.family.is_some() {
        let hex = |v: Option<u32>| v.map(|n| format!("{n:#x}")).unwrap_or_else(|| "?".into());
        r.push((
            "cpu id".into(),
            format!(
                "family {}, model {}, stepping {}, microcode {}{}",
                hex(c.family),
                hex(c.model_id),
                c.stepping.map_or_else(|| "?".into(), |n| n.to_string()),
                opt(&c.microcode),
                c.microarchitecture
                    .as_ref()
                    .map(|u| format!(" ({u})"))
                    .unwrap_or_default()
            ),
        ));
    }
    r.push((
        "cpus".into(),
        format!(
            "{} logical, {} physical cores, {} sockets",
            num(c.logical_cpus),
            num(c.physical_cores),
            num(c.sockets)
        ),
    ));
    let mhz = |v: Option<f64>| v.map_or_else(|| "unknown".into(), |m| format!("{m:.0} MHz"));
    r.push((
        "frequency".into(),
        format!(
            "base {}, max {}, governor {}",
            mhz(c.base_mhz),
            mhz(c.max_mhz),
            opt(&c.governor)
        ),
    ));
    if let Some(i) = &c.idle {
        let poll = i
            .halt_poll_ns
            .map(|ns| match ns {
                0 => ", an idle vCPU halts at once (guest_halt_poll_ns 0)".to_string(),
                _ => format!(", an idle vCPU polls up to {ns} ns before halting"),
            })
            .unwrap_or_default();
        r.push((
            "cpu idle".into(),
            format!(
                "driver {}, governor {}{poll}; states {}",
                opt(&i.driver),
                opt(&i.governor),
                if i.states.is_empty() {
                    "none".into()
                } else {
                    i.states.join(", ")
                }
            ),
        ));
    }
    r.push(("simd".into(), c.simd.join(" ")));
    for cache in &c.caches {
        r.push((
            format!("cache L{} {}", cache.level, cache.kind),
            format!(
                "{}{}",
                format_size(cache.size_bytes),
                cache
                    .shared_by
                    .map(|n| format!(" (shared by {n} cpus)"))
                    .unwrap_or_default()
            ),
        ));
    }
    let size = |v: Option<u64>| v.map_or_else(|| "unknown".into(), format_size);
    r.push((
        "memory".into(),
        format!(
            "{} ({} available)",
            size(host.memory_bytes),
            size(host.memory_available_bytes)
        ),
    ));
    for (module, facts) in &host.extra {
        r.extend(flatten(module, facts));
    }
    let b = &host.build;
    let mut build = format!("benchsuite {} ({}, {}", b.version, b.profile, b.target);
    if !b.features.is_empty() {
        build += &format!(", features {}", b.features.join(" "));
    }
    if let Some(c) = &b.commit {
        build += &format!(", commit {c}");
    }
    r.push(("build".into(), build + ")"));
    let unknown = host.unknown_fields();
    if !unknown.is_empty() {
        r.push((
            "unknown".into(),
            format!(
                "{} (reported as null in JSON, never guessed)",
                unknown.join(", ")
            ),
        ));
    }
    r
}

/// Writes `host` as `info` prints it: [`rows`], each wrapped so that no
/// line is longer than `width` characters.
pub fn write_host(host: &Host, width: usize, out: &mut dyn Write) -> io::Result<()> {
    for (label, text) in rows(host) {
        for line in wrap(&label, &text, LABEL, width) {
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    Ok(())
}
