//! `--rounds`: each later round of a record is pooled into the first.

use crate::caveat::Caveat;
use crate::results::{Record, Report, SampleTails, Status};
use crate::stats::{LatencySummary, Summary};

use super::measure::{Hists, noisy_warning, over_peak_warning};

/// Adds one more round of a record to what the earlier rounds gave: samples
/// pooled and summarised again, latency histograms added, warnings and notes
/// merged. A round that did not run fails the record, naming the round.
pub(super) fn merge_round(slot: &mut (Record, Hists), new: Record, new_hists: Hists, round: usize) {
    let (rec, hists) = slot;
    if rec.status != Status::Ok {
        return;
    }
    if new.status != Status::Ok {
        rec.status = Status::Failed;
        rec.reason = Some(format!(
            "round {round}: {}",
            new.reason.as_deref().unwrap_or("did not run")
        ));
        return;
    }
    for (i, m) in rec.metrics.iter_mut().enumerate() {
        let Some(j) = new.metrics.iter().position(|x| x.name == m.name) else {
            continue;
        };
        let before = m.samples.len();
        let nm = &new.metrics[j];
        m.samples.extend_from_slice(&nm.samples);
        let sizes = m.rounds.get_or_insert_with(|| vec![before]);
        sizes.push(nm.samples.len());
        m.tails = match (m.tails.take(), &nm.tails) {
            (Some(a), Some(b)) => {
                let join = |x: Option<Vec<f64>>, y: &Option<Vec<f64>>| match (x, y) {
                    (Some(mut x), Some(y)) => {
                        x.extend_from_slice(y);
                        Some(x)
                    }
                    _ => None,
                };
                let t = SampleTails {
                    p99: join(a.p99, &b.p99),
                    p99_9: join(a.p99_9, &b.p99_9),
                };
                (t.p99.is_some() || t.p99_9.is_some()).then_some(t)
            }
            _ => None,
        };
        if let Ok(sum) = Summary::new(&m.samples) {
            m.summary = sum;
        }
        if let (Some(Some(h)), Some(Some(nh))) = (hists.get_mut(i), new_hists.get(j)) {
            // Both histograms auto-resize, so adding cannot fail on range.
            let _ = h.add(nh);
            m.latency = LatencySummary::from_histogram_ns(h);
        }
    }
    // An open-loop point: the rounds' achieved rates averaged (rounds of
    // one point run the same schedule for about as long).
    if let (Some(a), Some(b)) = (&mut rec.load, new.load) {
        let n = round as f64;
        a.achieved = (a.achieved * (n - 1.0) + b.achieved) / n;
        a.saturated = a.achieved < a.offered * (1.0 - crate::openloop::SATURATION_TOLERANCE);
    }
    // Noise and efficiency warnings are about the pooled samples now.
    let stale = |w: &Caveat| w.is_about_samples();
    rec.warnings.retain(|w| !stale(w));
    for w in new.warnings {
        if !stale(&w) && !rec.warnings.contains(&w) {
            rec.warnings.push(w);
        }
    }
    for n in new.notes {
        if !rec.notes.contains(&n) {
            rec.notes.push(n);
        }
    }
    for m in &rec.metrics {
        rec.warnings
            .extend(noisy_warning(&m.name, &m.summary, m.samples.len()));
        rec.warnings.extend(states_warning(m));
    }
    if let Some(l) = rec.load.filter(|l| l.saturated) {
        rec.warnings.push(Caveat::Saturated {
            offered: l.offered,
            achieved: l.achieved,
        });
    }
    if let Some(pk) = &mut rec.peak
        && let Some(m) = rec.metrics.iter().find(|m| m.name == pk.metric)
    {
        let eff = m.summary.median / pk.value;
        if eff.is_finite() {
            pk.efficiency = Some(eff);
            if eff > 1.0 {
                rec.warnings.push(over_peak_warning(&pk.metric, eff));
            }
        }
    }
}

/// Pools records of one point that were measured in separate runs (one
/// per round, interleaved with something else, as `benchsuite reference`
/// does) the way `--rounds` pools the rounds of a plan: samples pooled and
/// summarised again, warnings and notes merged. Latency percentiles stay
/// those of the first round (a record does not keep its histograms).
pub fn pool_rounds(records: impl IntoIterator<Item = Record>) -> Option<Record> {
    let mut it = records.into_iter();
    let mut slot: (Record, Hists) = (it.next()?, Vec::new());
    for (i, r) in it.enumerate() {
        merge_round(&mut slot, r, Vec::new(), i + 2);
    }
    Some(slot.0)
}

/// Two machine states among a metric's rounds (see
/// [`crate::stats::two_states`]), judged on the round medians where there
/// are four rounds or more, else on the samples; a headline-or-secondary
/// metric only once (a derived one repeats it).
fn states_warning(m: &crate::results::Metric) -> Option<Caveat> {
    if m.role.is_some_and(|r| !r.gated_by_default()) {
        return None;
    }
    let sizes = m.rounds.as_deref()?;
    let mut medians = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &k in sizes {
        medians.push(crate::stats::median(m.samples.get(at..at + k)?));
        at += k;
    }
    let (low, high) = if medians.len() >= 4 {
        crate::stats::two_states(&medians)?
    } else {
        crate::stats::two_states(&m.samples)?
    };
    let cut = (low * high).sqrt();
    Some(Caveat::States {
        metric: m.name.clone(),
        low,
        high,
        unit: m.unit.clone(),
        low_rounds: medians.iter().filter(|v| **v < cut).count(),
        rounds: medians.len(),
    })
}

/// Whole runs of one build (one report per round, interleaved with
/// another build's, as `compare --interleave` runs them) as one report:
/// each record's rounds pooled as [`pool_rounds`] pools them, and
/// `config.rounds` the number of runs. `Err` names a record of the first
/// run that a later run lacks.
pub fn pool_reports(runs: Vec<Report>) -> Result<Report, crate::error::ValueError> {
    pool_reports_text(runs).map_err(Into::into)
}

fn pool_reports_text(runs: Vec<Report>) -> Result<Report, String> {
    let n = runs.len();
    let mut it = runs.into_iter();
    let Some(mut first) = it.next() else {
        return Err("no run to pool".into());
    };
    let later: Vec<Report> = it.collect();
    let mut records = Vec::with_capacity(first.records.len());
    for rec in std::mem::take(&mut first.records) {
        let key = rec.requested_key();
        let mut all: Vec<Record> = vec![rec];
        for r in &later {
            match r.records.iter().find(|x| x.requested_key() == key) {
                Some(x) => all.push(x.clone()),
                None => {
                    return Err(format!(
                        "{key} ran in its first round but not in a later one"
                    ));
                }
            }
        }
        records.extend(pool_rounds(all));
    }
    first.records = records;
    first.config.rounds = n;
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::latency_histogram;
    use crate::testing as fixtures;
    use hdrhistogram::Histogram;

    fn hist(values_ns: &[u64]) -> Histogram<u64> {
        let mut h = latency_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn a_round_pools_samples_histograms_and_efficiency() {
        // mem.bandwidth: bandwidth 2.4/2.5/2.6 GB/s against a 5 GB/s peak,
        // and a latency metric.
        let first = fixtures::fixture_report().records[1].clone();
        let mut second = first.clone();
        second.metrics[0].samples = vec![5.4e9, 5.5e9, 5.6e9];
        second.warnings = vec![Caveat::text("a caveat of round 2")];
        let mut slot = (first, vec![None, Some(hist(&[1000, 1000]))]);
        merge_round(&mut slot, second, vec![None, Some(hist(&[3000]))], 2);
        let (r, _) = &slot;
        assert_eq!(r.status, Status::Ok);
        let bw = &r.metrics[0];
        assert_eq!(bw.samples.len(), 6);
        assert_eq!(bw.summary.median, (2.6e9 + 5.4e9) / 2.0);
        // The spread between rounds is noise now, and said so.
        assert!(
            r.warnings
                .iter()
                .any(|w| matches!(w, Caveat::Noisy { metric, n: 6, .. } if metric == "bandwidth")),
            "{:?}",
            r.warnings
        );
        assert!(r.warnings.contains(&Caveat::text("a caveat of round 2")));
        // Two rounds at 2.5 and 5.5 GB/s: two machine states, named.
        let states = r
            .warnings
            .iter()
            .find(|w| matches!(w, Caveat::States { .. }))
            .unwrap_or_else(|| panic!("{:?}", r.warnings));
        assert!(
            matches!(states, Caveat::States { low_rounds: 1, rounds: 2, metric, .. } if metric == "bandwidth"),
            "{states:?}"
        );
        assert!(
            states
                .to_string()
                .contains("two states, 2.500 GB/s and 5.500 GB/s"),
            "{states}"
        );
        let eff = r.peak.as_ref().unwrap().efficiency.unwrap();
        assert!((eff - 0.8).abs() < 1e-12, "{eff}");
        let lat = r.metrics[1].latency.as_ref().unwrap();
        assert_eq!(lat.count, 3);
        assert!(lat.max >= 2.9e-6, "{lat:?}");
    }

    #[test]
    fn a_failed_round_fails_the_record_naming_the_round() {
        let first = fixtures::fixture_report().records[0].clone();
        let failed = Record::failed("os.syscall", first.params.clone(), "boom");
        let mut slot = (first, Vec::new());
        merge_round(&mut slot, failed, Vec::new(), 3);
        assert_eq!(slot.0.status, Status::Failed);
        assert_eq!(slot.0.reason.as_deref(), Some("round 3: boom"));
    }
}
