//! Benchmarks built from data known only at run time (one per discovered
//! device, per entry of a config file): their id, description, metric,
//! reported-value key, parameter and option names are `String`s made with
//! `format!`, held by the benchmark and handed out as owned `Cow`s, never
//! leaked, and they reach the report as they were made.

use std::borrow::Cow;

use benchsuite_core::bench::MetricSource;
use benchsuite_core::runner::{Silent, run};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Direction, Finished, Meta, MetricRole, MetricSpec,
    OptionSpec, ParamSpec, Point, Registry, RunConfig, Status, Value, Work,
};

/// One "discovered device": everything it declares is named after it.
struct Device {
    id: String,
    description: String,
    bandwidth: String,
    temperature: String,
    depth: String,
    path: String,
}

impl Device {
    fn discovered(index: usize) -> Self {
        Device {
            id: format!("devices.dev{index}"),
            description: format!("device #{index}, found at run time"),
            bandwidth: format!("dev{index}_bandwidth"),
            temperature: format!("dev{index}_temperature"),
            depth: format!("dev{index}_depth"),
            path: format!("dev{index}-path"),
        }
    }
}

impl Benchmark for Device {
    fn meta(&self) -> Meta {
        Meta {
            id: self.id.clone().into(),
            description: self.description.clone().into(),
            params: vec![
                ParamSpec::count(
                    self.depth.clone(),
                    format!("queue depth of {}", self.id),
                    1,
                    64,
                    8,
                )
                .with_smoke(Value::Int(2)),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec(self.bandwidth.clone()),
                MetricSpec {
                    name: self.temperature.clone().into(),
                    unit: "°C".into(),
                    direction: Direction::Lower,
                    source: MetricSource::Reported(self.temperature.clone().into()),
                    role: MetricRole::Secondary,
                },
            ],
        }
    }

    fn options(&self) -> Vec<OptionSpec> {
        vec![OptionSpec::text(
            self.path.clone(),
            format!("where {} lives", self.id),
        )]
    }

    fn prepare(&self, _: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let depth = point.u64(&self.depth)?;
        Ok(Box::new(DeviceCase {
            temperature: self.temperature.clone(),
            depth: self.depth.clone(),
            resolved_depth: depth * 2,
            sum: 0,
        }))
    }
}

struct DeviceCase {
    temperature: String,
    depth: String,
    resolved_depth: u64,
    sum: u64,
}

impl Case for DeviceCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        for i in 0..iters {
            self.sum = std::hint::black_box(self.sum.wrapping_add(i));
        }
        let mut w = Work::ops_bytes(iters, iters * 64);
        w.values.insert(self.temperature.clone().into(), 41.5);
        Ok(w)
    }

    fn finish(self: Box<Self>) -> Finished {
        // A parameter named at run time resolves like any other.
        About {
            resolved: vec![(self.depth.into(), Value::Int(self.resolved_depth))],
            ..About::default()
        }
        .into()
    }
}

#[test]
fn a_benchmark_named_at_run_time_registers_runs_and_reports_its_names() {
    let mut registry = Registry::new();
    for index in 0..2 {
        let device = Device::discovered(index);
        // Nothing is 'static here: the names are the benchmark's own strings.
        let meta = device.meta();
        assert!(matches!(meta.id, Cow::Owned(_)), "{:?}", meta.id);
        assert!(matches!(meta.metrics[0].name, Cow::Owned(_)));
        assert!(matches!(meta.params[0].name, Cow::Owned(_)));
        registry.register(Box::new(device)).unwrap();
    }
    // The module made from a runtime id's prefix.
    assert_eq!(registry.modules().len(), 1);
    assert_eq!(registry.modules()[0].name, "devices");

    let config = RunConfig::smoke_test("devices", &[])
        .to_builder()
        .option("dev1-path", "/dev/fake1")
        .build()
        .unwrap();
    let report = run(&registry, &config, &mut Silent).unwrap();
    assert_eq!(report.records.len(), 2);
    for (index, record) in report.records.iter().enumerate() {
        assert_eq!(record.status, Status::Ok, "{:?}", record.reason);
        assert_eq!(record.id, format!("devices.dev{index}"));
        let names: Vec<&str> = record.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                format!("dev{index}_bandwidth"),
                format!("dev{index}_temperature")
            ]
        );
        assert_eq!(record.metrics[0].unit, "B/s");
        let temperature = &record.metrics[1];
        assert_eq!(temperature.unit, "°C");
        assert!(
            temperature.samples.iter().all(|&v| v == 41.5),
            "{:?}",
            temperature.samples
        );
        // The smoke value as requested, and the value the case resolved.
        let depth = format!("dev{index}_depth");
        assert_eq!(record.params.get(&depth), Some(&Value::Int(4)));
        assert_eq!(
            record.requested_params().get(&depth),
            Some(&Value::Int(2)),
            "{record:?}"
        );
    }
    assert_eq!(
        report.config.options.get("dev1-path").map(String::as_str),
        Some("/dev/fake1")
    );

    // `benchsuite list --format json` describes them by the same names.
    let catalog = benchsuite_core::catalog::catalog(&registry, None, None);
    let b = &catalog.benchmarks[1];
    assert_eq!(b.id, "devices.dev1");
    assert_eq!(b.module, "devices");
    assert_eq!(b.description, "device #1, found at run time");
    assert_eq!(b.params[0].name, "dev1_depth");
    assert_eq!(b.params[0].help, "queue depth of devices.dev1");
    assert_eq!(b.metrics[1].name, "dev1_temperature");
    assert_eq!(b.options[0].name, "dev1-path");
}
