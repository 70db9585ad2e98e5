//! Every registered benchmark, checked once: its declaration is sound and it
//! runs at its smoke point through the real runner (ripgrep's tests over
//! `FLAGS`, fio's `check_engine_ops`).

use std::collections::BTreeSet;

use benchsuite_core::runner::{Silent, run};
use benchsuite_core::{MetricSource, Status};
use benchsuite_tests::fast_config;

#[test]
fn every_declaration_is_sound() {
    let registry = benchsuite::registry();
    let mut ids = BTreeSet::new();
    for module in registry.modules() {
        for b in &module.benchmarks {
            let meta = b.meta();
            assert!(ids.insert(meta.id.clone()), "duplicate id {}", meta.id);
            assert_eq!(
                meta.module(),
                module.name,
                "{} is listed under module {}",
                meta.id,
                module.name
            );
            assert!(
                !meta.description.is_empty(),
                "{} has no description",
                meta.id
            );
            assert!(!meta.metrics.is_empty(), "{} declares no metric", meta.id);
            let mut names = BTreeSet::new();
            for p in &meta.params {
                assert!(
                    names.insert(p.name.as_ref()),
                    "{}: parameter {} declared twice",
                    meta.id,
                    p.name
                );
                p.kind
                    .check(&p.name, &p.default)
                    .unwrap_or_else(|e| panic!("{}: default: {e}", meta.id));
                p.kind
                    .check(&p.name, p.smoke_value())
                    .unwrap_or_else(|e| panic!("{}: smoke value: {e}", meta.id));
                assert!(
                    !p.help.is_empty(),
                    "{}: parameter {} has no help",
                    meta.id,
                    p.name
                );
            }
            for m in &meta.metrics {
                if m.source == MetricSource::TimePerOp || m.source == MetricSource::Latency {
                    assert_eq!(m.unit, "s", "{}: {} is a time", meta.id, m.name);
                }
            }
        }
    }
    assert!(
        ids.iter().any(|id| id.starts_with("os.")),
        "the os module registers benchmarks"
    );
}

#[test]
fn every_benchmark_runs_at_its_smoke_point() {
    let registry = benchsuite::registry();
    let cfg = fast_config().to_builder().smoke(true).build().unwrap();
    let report = run(&registry, &cfg, &mut Silent).unwrap();
    benchsuite_tests::assert_valid(&report);
    assert_eq!(report.records.len(), registry.benchmarks().count());
    // Metrics a case reports itself (loss, reordering, jitter) may be 0.
    let may_be_zero: BTreeSet<(String, String)> = registry
        .benchmarks()
        .flat_map(|b| {
            let meta = b.meta();
            meta.metrics
                .iter()
                .filter(|m| m.source.reported_key().is_some())
                .map(|m| (meta.id.to_string(), m.name.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    for r in &report.records {
        match r.status {
            Status::Ok => {}
            Status::Skipped => {
                assert!(
                    !r.reason.as_deref().unwrap_or("").is_empty(),
                    "{} skipped without a reason",
                    r.key()
                );
                continue;
            }
            Status::Failed => panic!("{} failed: {:?}", r.key(), r.reason),
        }
        assert!(!r.metrics.is_empty());
        for m in &r.metrics {
            let med = m.summary.median;
            let zero_ok = may_be_zero.contains(&(r.id.clone(), m.name.clone()));
            assert!(
                med.is_finite() && (med > 0.0 || (zero_ok && med == 0.0)),
                "{} {}: median {med}",
                r.key(),
                m.name
            );
            if m.unit == "s" {
                assert!(
                    med < 10.0,
                    "{} {}: {med} s per operation is implausible",
                    r.key(),
                    m.name
                );
            }
        }
    }
}
