//! Property-based fuzzing in the normal test run: the parsers a user's
//! text reaches (sizes, durations, percentages, sweep lists, `compare`
//! thresholds) and the report loader (`compare` on arbitrary bytes, on
//! mutated reports, on deep and large JSON) return an error, never panic.
//!
//! Each `proptest!` block runs `CASES` generated inputs per test (the
//! closing note of issue 14 counts them); a panic fails the test with the
//! shrunk input.

use benchsuite_core::sweep::parse_values;
use benchsuite_core::units::{format_size, parse_duration, parse_percent, parse_size};
use benchsuite_core::{ParamSpec, Report};
use benchsuite_report::CompareOptions;
use benchsuite_report::compare::{ThresholdRule, Tolerance, compare};
use proptest::prelude::*;

const CASES: u32 = 4096;

fn base() -> &'static str {
    include_str!("fixtures/report-1.0.json")
}

/// Text that looks like what users type: digits, units, separators, and
/// the odd byte that is not.
fn user_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-zA-Z.,:=+*_% -]{0,24}",
        "[0-9]{1,30}(\\.[0-9]{0,10})?(k|K|M|G|T|P|E|KiB|MiB|GiB|TiB|ms|us|µs|ns|s|m|h|%|pp)?",
        "[0-9]{1,5}(\\.\\.|-)[0-9]{1,5}(K|M)?(:[*x+]?[0-9]{0,3})?",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn unit_parsers_never_panic(t in user_text()) {
        let _ = parse_size(&t);
        let _ = parse_duration(&t);
        let _ = parse_percent(&t);
        let _ = Tolerance::parse(&t);
        let _ = ThresholdRule::parse(&t);
    }

    #[test]
    fn sweep_lists_never_panic_and_stay_in_bounds(t in user_text()) {
        let size = ParamSpec::size("block", "bytes", 512, 1 << 30, 4096);
        if let Ok(vs) = parse_values(&size, &t) {
            for v in vs {
                let b = v.as_u64().expect("a size is an integer");
                prop_assert!((512..=1 << 30).contains(&b), "{t:?} gave {b}");
            }
        }
        let count = ParamSpec::count("threads", "threads", 1, 1024, 1);
        if let Ok(vs) = parse_values(&count, &t) {
            prop_assert!(vs.len() <= 100_000, "{t:?} expanded to {} values", vs.len());
        }
        let choice = ParamSpec::choice("op", "op", &["read", "write"], "read");
        let _ = parse_values(&choice, &t);
    }

    #[test]
    fn sizes_round_trip_through_their_display(b in 0u64..(1 << 50)) {
        let shown = format_size(b);
        if let Ok(back) = parse_size(&shown) {
            // Two decimals of a binary unit: within 0.5% (exact for whole units).
            let err = (back as f64 - b as f64).abs() / (b.max(1) as f64);
            prop_assert!(err < 0.005, "{b} shown {shown} read {back}");
        }
    }

    #[test]
    fn the_loader_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = Report::from_json(&text, "fuzz.json");
    }

    #[test]
    fn mutated_reports_load_or_fail_and_compare_never_panics(
        cut in 0usize..4000,
        flips in prop::collection::vec((0usize..4000, any::<u8>()), 0..6),
    ) {
        let mut b = base().as_bytes().to_vec();
        for (at, byte) in flips {
            let i = at % b.len();
            b[i] = byte;
        }
        if cut < b.len() && cut % 3 == 0 {
            b.truncate(cut);
        }
        let text = String::from_utf8_lossy(&b);
        if let Ok(r) = Report::from_json(&text, "fuzz.json") {
            let good = Report::from_json(base(), "base.json").unwrap();
            let _ = compare(&good, &r, &CompareOptions::default());
            let _ = compare(&r, &good, &CompareOptions::default());
            let _ = compare(&r, &r, &CompareOptions::default());
        }
    }
}

/// Any finite `f64`, with the ends of the range (±MAX, ±1e308, the
/// smallest subnormal, zeros) and ordinary values drawn often.
fn finite_f64() -> impl Strategy<Value = f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO,
        prop::sample::select(vec![
            f64::MAX,
            f64::MIN,
            1e308,
            -1e308,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            0.0,
            -0.0,
            1.0,
        ]),
        1e-9..1e-6f64,
    ]
}

/// A metric's samples: a few arbitrary finite values, or one repeated
/// (zero variance).
fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        prop::collection::vec(finite_f64(), 0..12),
        (finite_f64(), 0usize..8).prop_map(|(x, n)| vec![x; n]),
    ]
}

/// The fixture's report with these samples (and, `rounds`, one round per
/// sample and a p99 per sample), started at `at`.
fn with_samples(xs: &[f64], rounds: bool, at: &str) -> Report {
    let mut r = Report::from_json(base(), "base.json").unwrap();
    r.started_at = at.into();
    let m = &mut r.records[0].metrics[0];
    m.samples = xs.to_vec();
    if rounds {
        m.rounds = Some(vec![1; xs.len()]);
        m.tails = Some(benchsuite_core::results::SampleTails {
            p99: Some(xs.iter().rev().copied().collect()),
            p99_9: None,
        });
    }
    r
}

/// A comparison every number of which a reader can take: every judged
/// metric's figures are finite (a NaN or an infinity is written as `null`
/// in JSON), and its JSON reads back.
fn assert_judged_figures_are_finite(
    c: &benchsuite_report::compare::Comparison,
) -> Result<(), TestCaseError> {
    use benchsuite_report::compare::Verdict;
    for m in c.metrics.iter().filter(|m| m.verdict != Verdict::NotJudged) {
        let mut v = vec![m.base_median, m.new_median];
        v.extend(m.change);
        v.extend(m.interval.into_iter().flatten());
        v.extend(m.noise);
        v.extend(m.unchanged_above);
        prop_assert!(
            v.iter().all(|x| x.is_finite()),
            "{} {:?}: {v:?}",
            m.metric,
            m.verdict
        );
    }
    // Every comparison's JSON reads back, a side without samples (its
    // median NaN, written as null) included.
    let text = serde_json::to_string(c).unwrap();
    let back: Result<benchsuite_report::compare::Comparison, _> = serde_json::from_str(&text);
    prop_assert!(back.is_ok(), "{text}");
    prop_assert!([0, 1, 3].contains(&c.outcome().exit_code()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    /// `compare` on arbitrary finite samples (issue 37: ±1e308 panicked in
    /// the t CDF): one baseline, a history, paired rounds, fleets and the
    /// fleet view; a verdict or "not judged" with its reason, never a panic.
    #[test]
    fn compare_judges_arbitrary_finite_samples_or_says_why_not(
        a in samples(), b in samples(), c in samples(), rounds in any::<bool>(),
    ) {
        use benchsuite_report::compare::{Baseline, compare_fleets, compare_history};
        let old = with_samples(&a, rounds, "2026-01-01T00:00:00Z");
        let base = with_samples(&b, rounds, "2026-01-02T00:00:00Z");
        let new = with_samples(&c, rounds, "2026-01-03T00:00:00Z");
        let paired = CompareOptions { paired: true, ..CompareOptions::default() };
        for options in [CompareOptions::default(), paired] {
            assert_judged_figures_are_finite(&compare(&base, &new, &options).unwrap())?;
            assert_judged_figures_are_finite(&compare(&new, &base, &options).unwrap())?;
        }
        let history = [
            Baseline { name: "old", report: &old },
            Baseline { name: "base", report: &base },
        ];
        let h = compare_history(&history, &new, &CompareOptions::default()).unwrap();
        assert_judged_figures_are_finite(&h)?;
        let f = compare_fleets(
            std::slice::from_ref(&base),
            std::slice::from_ref(&new),
            &CompareOptions::default(),
        )
        .unwrap();
        prop_assert!([0, 1, 3].contains(&f.outcome().exit_code()));
        let mut hosts = Vec::new();
        for (i, r) in [old, base, new].into_iter().enumerate() {
            let mut r = r;
            r.host.hostname = Some(format!("node{i}"));
            hosts.push((format!("{i}.json"), r));
        }
        let _ = benchsuite_report::fleet::Fleet::merge(hosts).unwrap().view();
    }
}

#[test]
fn deep_json_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"a\":"] {
        let deep = open.repeat(200_000);
        let e = Report::from_json(&deep, "deep.json").unwrap_err();
        assert!(e.to_string().contains("deep.json"), "{e}");
    }
}

#[test]
fn a_large_report_loads_and_compares() {
    // 20 000 records with 100 samples each: a large fleet report.
    let mut r = Report::from_json(base(), "base.json").unwrap();
    let one = r.records[0].clone();
    r.records = (0..20_000)
        .map(|i| {
            let mut x = one.clone();
            x.params.set("i", benchsuite_core::Value::Int(i));
            if let Some(m) = x.metrics.first_mut() {
                m.samples = (0..100).map(|k| 1.0 + k as f64 * 1e-3).collect();
            }
            x
        })
        .collect();
    let text = r.to_json();
    assert!(text.len() > 10 << 20, "{} bytes", text.len());
    let back = Report::from_json(&text, "large.json").unwrap();
    assert_eq!(back.records.len(), 20_000);
    let c = compare(&back, &back, &CompareOptions::default()).unwrap();
    assert_eq!(
        c.metrics.len(),
        back.records.len() * back.records[0].metrics.len()
    );
    assert!(c.passed, "a report against itself passes");
}

/// A fleet file of two hosts (the fixture under two names), as `merge`
/// writes it.
fn fleet_text() -> String {
    let a = Report::from_json(base(), "a.json").unwrap();
    let mut b = a.clone();
    b.host.hostname = Some("other-host".into());
    let fleet =
        benchsuite_report::fleet::Fleet::merge(vec![("a".into(), a), ("b".into(), b)]).unwrap();
    fleet.to_json()
}

/// Applies byte edits (xor at an index) to `text`.
fn mutate(text: &str, edits: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for (at, x) in edits {
        let i = at.index(bytes.len());
        bytes[i] ^= x;
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// `merge` and `compare` read a file that may be a host's report or a
    /// fleet: mangled fleet files load or fail naming the file, never
    /// panic, and whatever loads merges again.
    #[test]
    fn mutated_fleet_files_load_or_fail_naming_the_file(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
    ) {
        use benchsuite_report::fleet::{Fleet, ReportFile};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.json");
        std::fs::write(&path, mutate(&fleet_text(), &edits)).unwrap();
        match Fleet::read_file(&path) {
            Err(e) => prop_assert!(e.to_string().contains("fleet.json"), "{e}"),
            Ok(ReportFile::Fleet(f)) => {
                let hosts: Vec<(String, Report)> =
                    f.into_iter().map(|r| ("x".to_string(), r)).collect();
                let _ = Fleet::merge(hosts);
            }
            Ok(ReportFile::Report(_)) => {}
        }
        let _ = Fleet::read_hosts(&path);
    }

    /// `report` reads reports back from a page (`read_embedded`): a mangled
    /// page is `None`, an error or reports, never a panic.
    #[test]
    fn mutated_pages_read_back_or_fail(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
    ) {
        let r = Report::from_json(base(), "a.json").unwrap();
        let page = benchsuite_report::export::html::render(&[("a.json".into(), r)]);
        let bytes = mutate(&page, &edits);
        let text = String::from_utf8_lossy(&bytes);
        let _ = benchsuite_report::export::html::read_embedded(&text);
    }

    #[test]
    fn arbitrary_text_is_not_a_page(t in any::<String>()) {
        let _ = benchsuite_report::export::html::read_embedded(&t);
        let marked = format!(r#"<script type="application/json" id="benchsuite-reports">{t}"#);
        let _ = benchsuite_report::export::html::read_embedded(&marked);
    }
}

#[test]
fn a_page_gives_back_the_reports_it_embeds() {
    let r = Report::from_json(base(), "a.json").unwrap();
    let page = benchsuite_report::export::html::render(&[("a.json".into(), r.clone())]);
    let back = benchsuite_report::export::html::read_embedded(&page)
        .expect("a page embeds its reports")
        .unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].records.len(), r.records.len());
}
