//! `disk.io`: the benchmark descriptor. The untimed set-up that builds its
//! case, step by step, is in `prepare.rs`; the case itself in `case.rs`.

use benchsuite_core::{BenchError, Benchmark, Case, ConfigError, Context, Meta, MetricSpec, Point};

use crate::prepare::{SPACE_CHECK_OPTION, prepare};
use crate::settings::{Settings, declare};
use crate::target::{self, Phase, Refusal};

/// Sequential or random reads and writes with a chosen block, queue depth,
/// thread count, engine and cache mode. See the crate docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskIo;

impl Benchmark for DiskIo {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        vec![
            benchsuite_core::OptionSpec::bool(
                SPACE_CHECK_OPTION,
                "off skips the free-space check before files are laid out",
            ),
            benchsuite_core::OptionSpec {
                name: crate::target::ALLOW_OVERWRITE_OPTION.into(),
                help: "PATH[,PATH...]: lets write tests overwrite these existing files or block devices in place (--allow-overwrite=PATH); on authorises a single target".into(),
                check: crate::target::check_allow_overwrite,
                secret: false,
                role: benchsuite_core::OptionRole::Plain,
            },
        ]
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "disk.io".into(),
            description: "file I/O like fio: seq/random read/write, MB/s, IOPS and completion-latency percentiles (O_DIRECT by default)".into(),
            params: declare(),
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::ops_per_sec("iops", "IO/s").derived(),
                MetricSpec::latency("latency").secondary(),
            ],
        }
    }

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let s = Settings::from_point(point)?;
        match target::examine(ctx, &s, Phase::Plan) {
            Err(Refusal::Usage(e)) => Err(e),
            Err(Refusal::Changed(reason)) => Err(ConfigError::InvalidValue {
                param: "dir".into(),
                value: target::path(ctx, &s).display().to_string(),
                reason,
            }),
            // A target that cannot be examined (a --scratch-dir that does
            // not exist) fails its record in `prepare`, as any I/O error.
            Ok(_) | Err(Refusal::Io(_)) => Ok(()),
        }
    }

    /// The mount and block device under the scratch directory (the
    /// default target); each record's notes name its own target's.
    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::device::facts(&ctx.scratch_dir))
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let s = Settings::from_point(point)
            .map_err(|e| BenchError::caused("reading the point's parameters", e))?;
        prepare(ctx, &s)
    }

    /// fio with the same pattern, block, depth, jobs, cache mode and file.
    fn reference(&self, ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::fio::reference(ctx, point)
    }
}
