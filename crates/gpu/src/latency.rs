//! `gpu.latency`: the round trip of an empty kernel launch and of small
//! copies, as the host sees it.

use std::time::Instant;

use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::units::format_size;
use benchsuite_core::{
    BenchError, Benchmark, Case, ConfigError, Context, Meta, MetricSpec, ParamSpec, Point, Probe,
    Work,
};
use cudarc::driver::result;

use crate::cuda::{DeviceBuffer, Gpu, HostBuffer, Kernel, cu};
use crate::kernels::MEMORY_SOURCE;
use crate::params;

/// Launch and small-copy latency; see the crate docs.
#[derive(Debug, Default)]
pub struct Latency;

/// `op` choices.
pub(crate) const OPS: &[&str] = &["launch", "launch_queue", "h2d", "d2h", "d2d"];

/// The largest `block` (a latency test, not a bandwidth one).
const MAX_BLOCK: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Launch,
    LaunchQueue,
    H2d,
    D2h,
    D2d,
}

impl Benchmark for Latency {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.latency",
            description: "GPU round trips seen from the host: empty-kernel launch + synchronise, launch call cost, small copies",
            params: vec![
                ParamSpec::choice(
                    "op",
                    "launch: an empty 1-thread kernel then cuStreamSynchronize, per op | launch_queue: back-to-back launches, latency = the launch call alone | h2d | d2h | d2d: a copy of `block` bytes then synchronise",
                    OPS,
                    "launch",
                ),
                ParamSpec::size("block", "bytes per copy for h2d/d2h/d2d", 1, MAX_BLOCK, 4),
                ParamSpec::choice(
                    "memory",
                    "host memory for h2d/d2h: pinned | pageable",
                    &["pinned", "pageable"],
                    "pinned",
                ),
                params::device(false),
            ],
            metrics: vec![
                MetricSpec::latency("latency"),
                MetricSpec::time_per_op("time_per_op"),
            ],
        }
    }

    fn probe(&self, _ctx: &Context) -> Probe {
        params::cuda_probe()
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        params::cuda_device(point).map(|_| ())
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(params::host_facts(ctx))
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let op = match point.str("op")? {
            "launch" => Op::Launch,
            "launch_queue" => Op::LaunchQueue,
            "h2d" => Op::H2d,
            "d2h" => Op::D2h,
            "d2d" => Op::D2d,
            o => return Err(BenchError::Other(format!("unknown op {o}"))),
        };
        let block = point.u64("block")? as usize;
        let pinned = point.str("memory")? == "pinned";
        let libs: &[fn() -> Result<(), String>] = match op {
            Op::Launch | Op::LaunchQueue => &[crate::cuda::libs::nvrtc],
            _ => &[],
        };
        let gpu = Gpu::open(point.u64("device")? as usize, libs)?;
        let mut case = LatencyCase {
            op,
            block,
            kernel: None,
            src: None,
            dst: None,
            host: None,
            notes: vec![gpu.info.describe()],
            gpu,
        };
        match op {
            Op::Launch | Op::LaunchQueue => {
                case.kernel = Some(case.gpu.kernel("empty", MEMORY_SOURCE)?);
            }
            Op::H2d => {
                case.host = Some(HostBuffer::new(&case.gpu, block, pinned)?);
                case.dst = Some(DeviceBuffer::new(&case.gpu, block)?);
            }
            Op::D2h => {
                case.src = Some(DeviceBuffer::new(&case.gpu, block)?);
                case.host = Some(HostBuffer::new(&case.gpu, block, pinned)?);
            }
            Op::D2d => {
                case.src = Some(DeviceBuffer::new(&case.gpu, block)?);
                case.dst = Some(DeviceBuffer::new(&case.gpu, block)?);
            }
        }
        case.notes.push(match op {
            Op::Launch => "one op = cuLaunchKernel of an empty kernel (1 block × 1 thread) + cuStreamSynchronize: launch to completion as the host sees it".into(),
            Op::LaunchQueue => "one op = one cuLaunchKernel call of an empty kernel, back to back; latency is the call alone, time_per_op includes draining the queue at the end of each batch".into(),
            _ => format!(
                "one op = a {} copy of {} ({}) + cuStreamSynchronize",
                match op { Op::H2d => "host-to-device", Op::D2h => "device-to-host", _ => "device-to-device" },
                format_size(block as u64),
                if op == Op::D2d { "cuMemcpyDtoDAsync" } else if pinned { "pinned host memory" } else { "pageable host memory" }
            ),
        });
        case.notes.push(
            "latency: the host clock around each operation (HDR histogram); the context spins while it waits, CUDA's default with fewer contexts than CPUs".into(),
        );
        // One untimed operation: first-launch costs stay out of the samples.
        case.once()?;
        case.gpu.sync()?;
        Ok(Box::new(case))
    }
}

/// Fields drop in declaration order: buffers before `gpu`.
struct LatencyCase {
    op: Op,
    block: usize,
    kernel: Option<Kernel>,
    src: Option<DeviceBuffer>,
    dst: Option<DeviceBuffer>,
    host: Option<HostBuffer>,
    notes: Vec<String>,
    gpu: Gpu,
}

impl LatencyCase {
    /// Queues one operation (without waiting).
    fn once(&mut self) -> Result<(), BenchError> {
        let n = self.block;
        let stream = self.gpu.raw_stream();
        match self.op {
            Op::Launch | Op::LaunchQueue => {
                let Some(k) = &self.kernel else {
                    return Err(BenchError::Other("latency case not prepared".into()));
                };
                // SAFETY: empty() takes no parameters.
                unsafe { k.launch(&self.gpu, 1, 1, &mut []) }
            }
            Op::H2d => {
                let (Some(h), Some(d)) = (&self.host, &self.dst) else {
                    return Err(BenchError::Other("latency case not prepared".into()));
                };
                // SAFETY: both buffers hold `n` bytes and outlive the copy;
                // every op is synchronised before the next touches them.
                unsafe { result::memcpy_htod_async(d.ptr(), &h.as_slice()[..n], stream) }
                    .map_err(cu("cuMemcpyHtoDAsync"))
            }
            Op::D2h => {
                let (Some(h), Some(s)) = (&mut self.host, &self.src) else {
                    return Err(BenchError::Other("latency case not prepared".into()));
                };
                // SAFETY: as above.
                unsafe { result::memcpy_dtoh_async(&mut h.as_mut_slice()[..n], s.ptr(), stream) }
                    .map_err(cu("cuMemcpyDtoHAsync"))
            }
            Op::D2d => {
                let (Some(s), Some(d)) = (&self.src, &self.dst) else {
                    return Err(BenchError::Other("latency case not prepared".into()));
                };
                // SAFETY: both device ranges hold `n` bytes and outlive the copy.
                unsafe { result::memcpy_dtod_async(d.ptr(), s.ptr(), n, stream) }
                    .map_err(cu("cuMemcpyDtoDAsync"))
            }
        }
    }
}

impl Case for LatencyCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.gpu.bind()?;
        let mut h = new_latency_histogram();
        for _ in 0..iters {
            let t0 = Instant::now();
            self.once()?;
            if self.op != Op::LaunchQueue {
                self.gpu.sync()?;
            }
            let ns = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            h.record(ns.max(1))
                .map_err(|e| BenchError::Other(format!("latency histogram: {e}")))?;
        }
        if self.op == Op::LaunchQueue {
            self.gpu.sync()?;
        }
        Ok(Work {
            ops: iters,
            latency: Some(h),
            ..Work::default()
        })
    }

    /// Frees everything through [`Gpu::finish`](crate::cuda::rt::Gpu::finish).
    fn teardown(&mut self) -> Result<(), BenchError> {
        self.gpu.finish(|| {
            self.src = None;
            self.dst = None;
            self.host = None;
            self.kernel = None;
        })
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::Value;

    #[test]
    fn latency_is_the_headline_and_time_per_op_follows() {
        let m = Latency.meta();
        assert_eq!(m.metrics[0].name, "latency");
        assert_eq!(m.metrics[1].name, "time_per_op");
        assert_eq!(m.param("op").unwrap().default, Value::Str("launch".into()));
    }
}
