//! `benchsuite list`: the modules, their benchmarks, parameters, metrics
//! and options, and (with a context) whether each can run here.

use std::io::{self, Write};

use benchsuite_core::{Context, Registry};

/// Writes the catalog as `list` prints it: every module, or with
/// `selected` only those with a benchmark in `wanted`; with `ctx`, each
/// benchmark's probe (`here: can run` or why it would skip).
pub fn write_list(
    registry: &Registry,
    wanted: &[&str],
    selected: bool,
    ctx: Option<&Context>,
    out: &mut dyn Write,
) -> io::Result<()> {
    for m in registry.modules() {
        let benches: Vec<_> = m
            .benchmarks
            .iter()
            .filter(|b| wanted.contains(&b.meta().id.as_ref()))
            .collect();
        if benches.is_empty() && selected {
            continue;
        }
        writeln!(out, "{}  {}", m.name, m.description)?;
        if m.benchmarks.is_empty() {
            writeln!(out, "    (no benchmarks yet)")?;
        }
        for b in benches {
            let meta = b.meta();
            writeln!(out, "  {:<22} {}", meta.id, meta.description)?;
            for p in &meta.params {
                writeln!(
                    out,
                    "      {:<10} {:<28} default {:<10} {}",
                    p.name,
                    p.kind.describe(),
                    p.kind.display(&p.default),
                    p.help
                )?;
            }
            let metrics: Vec<String> = meta
                .metrics
                .iter()
                .map(|m| format!("{} [{}]", m.name, m.unit))
                .collect();
            writeln!(out, "      metrics: {}", metrics.join(", "))?;
            for o in b.options() {
                writeln!(
                    out,
                    "      --opt {:<22} {}",
                    format!("{}=...", o.name),
                    o.help
                )?;
            }
            if let Some(ctx) = ctx {
                match benchsuite_core::catalog::describe(b.as_ref(), Some(ctx)).probe {
                    Some(p) if !p.ready => {
                        writeln!(out, "      here: skipped: {}", p.reason.unwrap_or_default())?
                    }
                    _ => writeln!(out, "      here: can run")?,
                }
            }
        }
    }
    Ok(())
}
