//! The prior between-run CV per module: how far the median of one run of
//! an unchanged build moves from run to run beyond its own samples' noise,
//! as measured on the project's 2-vCPU KVM guests.
//!
//! Against a single baseline this is all `compare` knows of the noise
//! between runs (the samples of two runs cannot show it); a history of two
//! or more baselines measures it instead, so it needs no prior. Measured
//! on the A/A traces in `benches/data/noise/` (see `docs/compare.md`):
//! each figure is the upper quartile, over the module's gated metrics, of
//! the between-run CV seen on the traced machines, so that a typical
//! metric's prior is conservative, not optimistic.

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
    ("os", 0.05),
    ("cpu", 0.05),
    ("mem", 0.05),
    ("disk", 0.15),
    ("net", 0.20),
    // Not traced (no GPU on the traced machines): a GPU's clocks hold
    // steadier than a shared VM's CPU; the CPU figure is the cautious one.
    ("gpu", 0.05),
];

/// Latency tails (p99, p99.9) of any module.
pub const TAIL: f64 = 0.30;

/// Modules with no measured figure.
pub const OTHER: f64 = 0.05;
