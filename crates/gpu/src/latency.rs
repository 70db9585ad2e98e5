//! `gpu.latency`: the round trip of an empty kernel launch and of small
//! copies, as the host sees it.

use std::time::Instant;

use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Finished, Meta, MetricSpec,
    ParamSpec, Point, Probe, Work,
};
use cudarc::driver::result;

use crate::backend;
use crate::cuda::{DeviceBuffer, Gpu, HostBuffer, Kernel, cu};
use crate::kernels::MEMORY_SOURCE;
use crate::params::{self, Memory};

/// Launch and small-copy latency; see the crate docs.
#[derive(Debug, Default)]
pub struct Latency;

/// The largest `block` (a latency test, not a bandwidth one).
const MAX_BLOCK: u64 = 64 << 20;

benchsuite_core::choice_enum! {
    /// The `op` parameter: what one timed operation is.
    enum Op {
        /// An empty kernel, then a synchronise.
        Launch = "launch",
        /// The launch call alone, back to back.
        LaunchQueue = "launch_queue",
        /// A host-to-device copy, then a synchronise.
        H2d = "h2d",
        /// A device-to-host copy, then a synchronise.
        D2h = "d2h",
        /// A device-to-device copy, then a synchronise.
        D2d = "d2d",
    }
}

impl Benchmark for Latency {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.latency".into(),
            description: "GPU round trips seen from the host: empty-kernel launch + synchronise, launch call cost, small copies".into(),
            params: vec![
                ParamSpec::choice_of(
                    "op",
                    "launch: an empty 1-thread kernel then cuStreamSynchronize, per op | launch_queue: back-to-back launches, latency = the launch call alone | h2d | d2h | d2d: a copy of `block` bytes then synchronise",
                    Op::Launch,
                ),
                ParamSpec::size("block", "bytes per copy for h2d/d2h/d2d", 1, MAX_BLOCK, 4),
                ParamSpec::choice_of(
                    "memory",
                    "host memory for h2d/d2h: pinned | pageable",
                    Memory::Pinned,
                ),
                params::device(false),
            ],
            metrics: vec![
                MetricSpec::latency("latency"),
                MetricSpec::time_per_op("time_per_op").derived(),
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
        Some(backend::host_facts(ctx))
    }

    /// CuPy's empty kernel launch by python3 (`launch`, `launch_queue`).
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::launch(point)
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let op: Op = point.choice("op")?;
        let block = point.u64("block")? as usize;
        let pinned = point.choice::<Memory>("memory")? == Memory::Pinned;
        let libs: &[fn() -> Result<(), String>] = match op {
            Op::Launch | Op::LaunchQueue => &[crate::cuda::libs::nvrtc],
            _ => &[],
        };
        let gpu = Gpu::open(point.u64("device")? as usize, libs)?;
        let bufs = match op {
            Op::Launch | Op::LaunchQueue => Bufs::Launch(gpu.kernel("empty", MEMORY_SOURCE)?),
            Op::H2d => {
                let host = HostBuffer::new(&gpu, block, pinned)?;
                let dst = DeviceBuffer::new(&gpu, block)?;
                Bufs::H2d { dst, host }
            }
            Op::D2h => {
                let src = DeviceBuffer::new(&gpu, block)?;
                let host = HostBuffer::new(&gpu, block, pinned)?;
                Bufs::D2h { src, host }
            }
            Op::D2d => {
                let src = DeviceBuffer::new(&gpu, block)?;
                let dst = DeviceBuffer::new(&gpu, block)?;
                Bufs::D2d { src, dst }
            }
        };
        let mut about = About::default();
        about.note(gpu.info.describe());
        about.note(match op {
            Op::Launch => "one op = cuLaunchKernel of an empty kernel (1 block × 1 thread) + cuStreamSynchronize: launch to completion as the host sees it".into(),
            Op::LaunchQueue => "one op = one cuLaunchKernel call of an empty kernel, back to back; latency is the call alone, time_per_op includes draining the queue at the end of each batch".into(),
            _ => format!(
                "one op = a {} copy of {} ({}) + cuStreamSynchronize",
                match op { Op::H2d => "host-to-device", Op::D2h => "device-to-host", _ => "device-to-device" },
                format_size(block as u64),
                if op == Op::D2d { "cuMemcpyDtoDAsync" } else if pinned { "pinned host memory" } else { "pageable host memory" }
            ),
        });
        about.note(
            "latency: the host clock around each operation (HDR histogram); the context spins while it waits, CUDA's default with fewer contexts than CPUs",
        );
        let mut case = LatencyCase {
            op,
            block,
            bufs,
            about,
            gpu,
        };
        // One untimed operation: first-launch costs stay out of the samples.
        case.once()?;
        case.gpu.sync()?;
        case.gpu.start_sampling();
        Ok(Box::new(case))
    }
}

/// What each op holds; fields drop in declaration order.
enum Bufs {
    /// `launch`, `launch_queue`: the empty kernel.
    Launch(Kernel),
    /// `h2d`.
    H2d { dst: DeviceBuffer, host: HostBuffer },
    /// `d2h`.
    D2h { src: DeviceBuffer, host: HostBuffer },
    /// `d2d`.
    D2d {
        src: DeviceBuffer,
        dst: DeviceBuffer,
    },
}

/// Fields drop in declaration order: buffers before `gpu`.
struct LatencyCase {
    op: Op,
    block: usize,
    bufs: Bufs,
    about: About,
    gpu: Gpu,
}

impl LatencyCase {
    /// Queues one operation (without waiting).
    fn once(&mut self) -> Result<(), BenchError> {
        let n = self.block;
        let stream = self.gpu.raw_stream();
        match &mut self.bufs {
            // SAFETY: empty() takes no parameters.
            Bufs::Launch(k) => unsafe { k.launch(&self.gpu, 1, 1, &mut []) },
            Bufs::H2d { dst, host } => {
                // SAFETY: both buffers hold `n` bytes and outlive the copy;
                // every op is synchronised before the next touches them.
                unsafe { result::memcpy_htod_async(dst.ptr(), &host.as_slice()[..n], stream) }
                    .map_err(cu("cuMemcpyHtoDAsync"))
            }
            Bufs::D2h { src, host } => {
                // SAFETY: as above.
                unsafe {
                    result::memcpy_dtoh_async(&mut host.as_mut_slice()[..n], src.ptr(), stream)
                }
                .map_err(cu("cuMemcpyDtoHAsync"))
            }
            Bufs::D2d { src, dst } => {
                // SAFETY: both device ranges hold `n` bytes and outlive the copy.
                unsafe { result::memcpy_dtod_async(dst.ptr(), src.ptr(), n, stream) }
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
                .map_err(|e| BenchError::caused("latency histogram", e))?;
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
    fn finish(self: Box<Self>) -> Finished {
        let LatencyCase {
            bufs,
            mut about,
            mut gpu,
            ..
        } = *self;
        gpu.under_load(&mut about);
        let released = gpu.finish(|| drop(bufs));
        Finished::with(about, released)
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
