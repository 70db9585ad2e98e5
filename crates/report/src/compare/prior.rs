//! The prior between-run CV per module: how far the median of one run of
//! an unchanged build moves from run to run beyond its own samples' noise,
//! as measured on the project's 2-vCPU KVM guests.
//!
//! Against a single baseline this is all `compare` knows of the noise
//! between runs (the samples of two runs cannot show it); a history of two
//! or more baselines measures it instead, so it needs no prior. Measured
//! on the A/A traces in `benches/data/noise/` (see `docs/compare.md`):
//! each figure is the upper quartile, over the module's headline metrics on
//! both traced machines, of the spread of their run medians (the CV
//! between runs), rounded, so that a typical metric's prior is cautious,
//! not optimistic.

/// The prior between-run CV (0.03 = 3%) of a metric of benchmark `id`; a
/// latency tail (`tail`) has [`TAIL`]. A module without a measured figure
/// (an embedder's own) gets [`OTHER`].
pub fn prior_between_cv(id: &str, tail: bool) -> f64 {
    if tail {
        return TAIL;
    }
    let module = id.split('.').next().unwrap_or(id);
    PRIORS
        .iter()
        .find(|(m, _)| *m == module)
        .map_or(OTHER, |(_, cv)| *cv)
}

/// Per module.
pub const PRIORS: [(&str, f64); 6] = [
    // 0.2–0.5% for timers, calls and syscalls; 5–9% for thread and
    // process creation.
    ("os", 0.05),
    // 0.2–1.7% for flops, iops and prime; LINPACK's two states 8.7%.
    ("cpu", 0.02),
    ("mem", 0.08),
    ("disk", 0.18),
    // 4–20%, and net.latency's RTT 61–89%.
    ("net", 0.20),
    // Not traced (no GPU on the traced machines): a GPU's clocks hold
    // steadier than a shared VM's CPU; the CPU figure is the cautious one.
    ("gpu", 0.05),
];

/// Latency tails (p99, p99.9) of any module: the traces hold one tail
/// (`net.latency rtt.p99`, 83–106% between runs), too few to fit; a tail
/// moves more than its median, and 30% is a cautious floor, not a fit.
pub const TAIL: f64 = 0.30;

/// Modules with no measured figure.
pub const OTHER: f64 = 0.05;
