//! Node acceptance: may this node take work?
//!
//! A [`Baseline`] holds, per machine type ([`MachineType`]: CPU model,
//! logical CPUs, memory, GPU models), the band each gated metric of a
//! healthy node falls in, built from the fleet's own runs
//! ([`Baseline::build`]: the median of the runs, and a bound in the bad
//! direction at 3 scaled MADs of their spread or a 5% margin, whichever is
//! wider), plus [`Rule`]s an operator adds (`>= 3.8 TB/s`, `>= 90% of
//! baseline`, `ok`), each with a severity and a next step.
//!
//! [`check`] judges one node's report alone (a Slurm prolog has one
//! node): every band and rule ends [`Grade::Pass`], [`Grade::Warn`] or
//! [`Grade::Fail`] with the measured value, the bound and the reason.
//! The verdict is a function of the report: a value whose 95% interval
//! crosses a bound is *borderline* and judged `Warn`, never a coin flip
//! between pass and fail; a record the report lacks, or one that failed
//! or was skipped, fails (a missing measurement is not a pass).

mod baseline;
mod check;
mod model;
mod quantity;
#[cfg(test)]
mod tests;

pub use baseline::{
    BAND_MADS, Band, BandValues, Baseline, Bound, BuildOptions, DEFAULT_MARGIN,
    MIN_RUNS_FOR_SPREAD, MachineBaseline, MachineType, PERCENT_MARGIN_PP, Requirement, Rule,
};
pub use check::{
    NodeCheck, RuleResult, check, check_names, defective_nodes, npd_message, records_to_remeasure,
    remeasured,
};
pub use model::{AcceptanceError, BASELINE_FORMAT, Grade, Severity};
pub use quantity::{format_quantity, parse_quantity};
