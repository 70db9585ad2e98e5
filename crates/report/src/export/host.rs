//! `benchsuite info`: the host facts as labelled lines.

use std::io::{self, Write};

use benchsuite_core::Host;

/// Writes `host` as `info` prints it: one labelled line per fact,
/// `unknown` where a fact could not be read (never a guess).
pub fn write_host(host: &Host, out: &mut dyn Write) -> io::Result<()> {
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let num = |v: Option<usize>| v.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
    let c = &host.cpu;
    writeln!(out, "hostname        {}", opt(&host.hostname))?;
    writeln!(out, "os / arch       {} / {}", host.os, host.arch)?;
    writeln!(out, "kernel          {}", opt(&host.kernel))?;
    writeln!(out, "virtualization  {}", opt(&host.virtualization))?;
    writeln!(out, "cpu model       {}", opt(&c.model))?;
    writeln!(out, "cpu vendor      {}", opt(&c.vendor))?;
    if c.family.is_some() {
        let hex = |v: Option<u32>| v.map(|n| format!("{n:#x}")).unwrap_or_else(|| "?".into());
        writeln!(
            out,
            "cpu id          family {}, model {}, stepping {}, microcode {}{}",
            hex(c.family),
            hex(c.model_id),
            c.stepping
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into()),
            opt(&c.microcode),
            c.microarchitecture
                .as_ref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "cpus            {} logical, {} physical cores, {} sockets",
        num(c.logical_cpus),
        num(c.physical_cores),
        num(c.sockets)
    )?;
    let mhz = |v: Option<f64>| {
        v.map(|m| format!("{m:.0} MHz"))
            .unwrap_or_else(|| "unknown".into())
    };
    writeln!(
        out,
        "frequency       base {}, max {}, governor {}",
        mhz(c.base_mhz),
        mhz(c.max_mhz),
        opt(&c.governor)
    )?;
    writeln!(out, "simd            {}", c.simd.join(" "))?;
    for cache in &c.caches {
        writeln!(
            out,
            "cache L{} {:<11} {}{}",
            cache.level,
            cache.kind,
            benchsuite_core::units::format_size(cache.size_bytes),
            cache
                .shared_by
                .map(|n| format!(" (shared by {n} cpus)"))
                .unwrap_or_default()
        )?;
    }
    let size = |v: Option<u64>| {
        v.map(benchsuite_core::units::format_size)
            .unwrap_or_else(|| "unknown".into())
    };
    writeln!(
        out,
        "memory          {} ({} available)",
        size(host.memory_bytes),
        size(host.memory_available_bytes)
    )?;
    for (module, facts) in &host.extra {
        writeln!(out, "{module:<15} {facts}")?;
    }
    writeln!(
        out,
        "build           benchsuite {} ({}, {})",
        host.build.version, host.build.profile, host.build.target
    )?;
    let unknown = host.unknown_fields();
    if !unknown.is_empty() {
        writeln!(
            out,
            "unknown         {} (reported as null in JSON, never guessed)",
            unknown.join(", ")
        )?;
    }
    Ok(())
}
