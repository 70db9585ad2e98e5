//! The machine states a metric was seen in, named in its note.

use benchsuite_core::results::Metric;

/// The machine states a metric was seen in: in the baselines' run
/// medians (four runs or more), or among the new run's samples.
pub(super) fn states_note(b: &Metric, older: &[&Metric], n: &Metric) -> Option<String> {
    let show = |(lo, hi): (f64, f64)| {
        format!(
            "{} and {}",
            benchsuite_core::units::format_value(lo, &b.unit),
            benchsuite_core::units::format_value(hi, &b.unit)
        )
    };
    let mut runs = vec![benchsuite_core::stats::median(&b.samples)];
    runs.extend(
        older
            .iter()
            .map(|m| benchsuite_core::stats::median(&m.samples)),
    );
    let history = (runs.len() >= 4)
        .then(|| benchsuite_core::stats::two_states(&runs))
        .flatten()
        .map(|s| {
            format!(
                "the {} baseline runs hold two states, {}: a switch between them cannot be told from a regression by one run",
                runs.len(),
                show(s)
            )
        });
    let new = benchsuite_core::stats::two_states(&n.samples)
        .map(|s| format!("new's samples hold two states, {}", show(s)));
    match (history, new) {
        (None, None) => None,
        (h, n) => Some(h.into_iter().chain(n).collect::<Vec<_>>().join("; ")),
    }
}
