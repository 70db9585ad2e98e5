use benchsuite_core::host::Host;
use benchsuite_core::param::{Point, Value};
use benchsuite_core::results::{Metric, MetricRole, Record, RunConfigRecord};

use super::*;

/// A deterministic standard normal stream (xorshift and Box–Muller).
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// One build's pooled interleaved rounds: `rounds` rounds of 3 samples of
/// each `(id, unit, direction, centre, round_sd)`; each round's level is
/// `centre · exp(round_sd · z)` (the state a round ran in), its samples
/// within 0.1% of it.
fn pooled(
    noise: &mut Noise,
    rounds: usize,
    metrics: &[(&str, &str, Direction, f64, f64)],
    cpu: &str,
) -> Report {
    let records = metrics
        .iter()
        .map(|&(id, unit, direction, centre, sd)| {
            let mut samples = Vec::new();
            for _ in 0..rounds {
                let level = centre * (sd * noise.normal()).exp();
                samples.extend([level * 0.999, level, level * 1.001]);
            }
            let mut params = Point::default();
            params.set("threads", Value::Int(1));
            let metric = Metric {
                rounds: Some(vec![3; rounds]),
                role: Some(MetricRole::Headline),
                ..Metric::from_samples("value", unit, direction, &samples).unwrap()
            };
            Record {
                iters_per_sample: Some(1000),
                ..Record::ok(id, params, vec![metric])
            }
        })
        .collect();
    let mut host = Host::default();
    host.cpu.model = Some(cpu.into());
    Report {
        schema_version: "1.8".into(),
        tool_version: "0.1.0".into(),
        started_at: "2026-11-29T00:00:00Z".into(),
        host,
        cluster: None,
        config: RunConfigRecord::default(),
        progress: None,
        records,
    }
}

/// A noisy time (adjacent rounds 12% apart, as `os.call` on a 2-vCPU
/// guest), a quiet time (1%) and a noisy bandwidth (8%).
const METRICS: [(&str, &str, Direction, f64, f64); 3] = [
    ("os.call", "s", Direction::Lower, 1.4e-9, 0.12),
    ("os.syscall", "s", Direction::Lower, 1.2e-7, 0.01),
    ("mem.bandwidth", "B/s", Direction::Higher, 7e10, 0.08),
];

/// `n` A/A jobs of 15 pairs from the seed `seed` (each a base and a new
/// copy of one build).
fn aa_jobs(seed: u64, n: usize) -> Vec<(Report, Report)> {
    let mut noise = Noise(seed);
    (0..n)
        .map(|_| {
            (
                pooled(&mut noise, 15, &METRICS, "cpu"),
                pooled(&mut noise, 15, &METRICS, "cpu"),
            )
        })
        .collect()
}

fn fit(jobs: &[(Report, Report)]) -> Calibration {
    let names: Vec<String> = (0..jobs.len()).map(|i| format!("job{i}")).collect();
    let jobs: Vec<AaJob<'_>> = jobs
        .iter()
        .zip(&names)
        .map(|((b, n), name)| AaJob {
            name,
            base: b,
            new: n,
        })
        .collect();
    calibrate(&jobs, &CalibrateOptions::default()).unwrap()
}

fn threshold(c: &Calibration, id: &str) -> f64 {
    match c.thresholds.iter().find(|t| t.id == id).unwrap().threshold {
        Tolerance::Relative(v) => v,
        ref t => panic!("{t:?}"),
    }
}

/// The verdicts of `id` over held-out jobs judged by the paired rule at
/// these rules, with `new` scaled by `factor` (a planted change).
fn verdicts(
    jobs: &[(Report, Report)],
    rules: &[ThresholdRule],
    id: &str,
    factor: f64,
) -> Vec<Verdict> {
    let options = CompareOptions {
        paired: true,
        rules: rules.to_vec(),
        ..CompareOptions::default()
    };
    jobs.iter()
        .map(|(b, n)| {
            let mut n = n.clone();
            for r in n.records.iter_mut().filter(|r| r.id == id) {
                for s in &mut r.metrics[0].samples {
                    *s *= factor;
                }
            }
            let c = compare(b, &n, &options).unwrap();
            c.metrics.iter().find(|m| m.id == id).unwrap().verdict
        })
        .collect()
}

#[test]
fn a_noisy_metric_gets_a_threshold_its_pairs_decide_on_held_out_jobs_and_a_quiet_one_keeps_the_floor()
 {
    let c = fit(&aa_jobs(0x5eed, 12));
    assert_eq!((c.jobs, c.pairs, c.metrics_sharing), (12, (15, 15), 3));
    // The quiet metric needs less than the floor: not raised, no rule.
    let quiet = c.thresholds.iter().find(|t| t.id == "os.syscall").unwrap();
    assert!(!quiet.raised(), "{quiet:?}");
    assert_eq!(threshold(&c, "os.syscall"), 0.05);
    // The noisy ones are raised, to a size that follows from their noise:
    // a pair's difference has sd √2 · 12% ≈ 17%, 15 pairs an error of
    // ≈ 4.6% (Yuen, 10% trimmed); the threshold sits some 4–6 errors out.
    let call = threshold(&c, "os.call");
    assert!((0.15..0.40).contains(&call), "os.call {call}");
    let bw = threshold(&c, "mem.bandwidth");
    assert!((0.08..0.25).contains(&bw), "mem.bandwidth {bw}");
    let rules = c.rules();
    assert_eq!(rules.len(), 2, "{rules:?}");
    // Held out (other seeds): unchanged builds end undecided rarely at the
    // fitted thresholds, and in most jobs at 5%.
    let held = aa_jobs(0xfeed, 60);
    for id in ["os.call", "mem.bandwidth"] {
        let at_fit = verdicts(&held, &rules, id, 1.0);
        let undecided = at_fit.iter().filter(|v| **v == Verdict::Undecided).count();
        let regressed = at_fit.iter().filter(|v| **v == Verdict::Regressed).count();
        assert!(
            undecided <= 3,
            "{id}: {undecided} of 60 undecided at the fitted threshold"
        );
        assert!(regressed <= 2, "{id}: {regressed} of 60 regressed");
        let at_floor = verdicts(&held, &[], id, 1.0);
        let undecided = at_floor
            .iter()
            .filter(|v| **v == Verdict::Undecided)
            .count();
        assert!(
            undecided >= 30,
            "{id}: only {undecided} of 60 undecided at 5%"
        );
    }
    // A real change of twice the fitted threshold is still called.
    let slower = verdicts(&held, &rules, "os.call", (2.0 * call).exp());
    let called = slower.iter().filter(|v| **v == Verdict::Regressed).count();
    assert!(called >= 54, "{called} of 60");
    let slower = verdicts(&held, &rules, "mem.bandwidth", (-2.0 * bw).exp());
    let called = slower.iter().filter(|v| **v == Verdict::Regressed).count();
    assert!(called >= 54, "{called} of 60");
}

#[test]
fn the_file_names_each_raised_threshold_with_its_noise_and_the_others_as_comments() {
    let c = fit(&aa_jobs(7, 8));
    let text = c.to_toml("0.1.0");
    let call = format!("{}", Tolerance::Relative(threshold(&c, "os.call")));
    assert!(
        text.contains(&format!("\"os.call:value\" = \"{call}\"  # one pair")),
        "{text}"
    );
    assert!(text.contains("# \"os.syscall:value\": needs "), "{text}");
    assert!(text.contains("testbed = \"cpu\""), "{text}");
    assert!(
        text.contains("budget = 15\nundecided = \"3%\"\njobs = 8\n\n[thresholds]\n"),
        "{text}"
    );
}

#[test]
fn jobs_of_two_testbeds_or_no_jobs_are_refused() {
    let mut noise = Noise(3);
    let a = pooled(&mut noise, 15, &METRICS, "cpu A");
    let b = pooled(&mut noise, 15, &METRICS, "cpu B");
    let jobs = [
        AaJob {
            name: "j1",
            base: &a,
            new: &a,
        },
        AaJob {
            name: "j2",
            base: &b,
            new: &b,
        },
    ];
    let e = calibrate(&jobs, &CalibrateOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("j2 ran on another testbed than j1 (cpu.model"),
        "{e}"
    );
    assert_eq!(
        calibrate(&[], &CalibrateOptions::default()),
        Err(CalibrateError::Nothing)
    );
    let bad = CalibrateOptions {
        budget: 2,
        ..CalibrateOptions::default()
    };
    assert!(calibrate(&jobs[..1], &bad).is_err());
}
