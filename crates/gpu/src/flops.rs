//! `gpu.flops` and `gpu.iops`: CUDA-core arithmetic throughput of
//! register-only kernels, against the derived peak; the `blocks` sweep is the
//! classic "cores used" experiment.

use std::time::Duration;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Finished, Meta, MetricSpec,
    ParamSpec, Point, Probe, Value, Work,
};

use crate::backend::{self, WgpuKind};
use crate::cuda::{DeviceBuffer, Gpu, Kernel, Timer, arg};
use crate::kernels::{self, CHAINS, UNROLL, emulate};
use crate::params;
use crate::peak::{self, Arith, FloatPrecision, IntPrecision};

/// Floating-point throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct Flops;

/// Integer throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct Iops;

/// The most blocks a grid may have (CUDA's grid x limit).
const MAX_BLOCKS: u64 = (1 << 31) - 1;

/// How long one launch should take once calibrated: long enough that the
/// ~1 µs gap between back-to-back launches is < 0.1%, short enough that a
/// 10 ms sample holds several.
const LAUNCH_TARGET: Duration = Duration::from_millis(2);

fn params(float: bool) -> Vec<ParamSpec> {
    let mut v = vec![
        if float {
            ParamSpec::choice_of(
                "precision",
                "f64 | f32 (FMA) | f16 | bf16 (packed half2 / bfloat162 FMA: two FMAs per lane)",
                FloatPrecision::F32,
            )
        } else {
            ParamSpec::choice_of(
                "precision",
                "i32 (IMAD: 32-bit multiply-add) | i8 (dp4a: four 8-bit products summed into 32 bits)",
                IntPrecision::I32,
            )
        },
        ParamSpec::count(
            "blocks",
            "thread blocks in the grid (0 = auto: SMs × the blocks one SM holds at once, full occupancy); each block runs on one SM, so 1..SMs is the \"cores used\" sweep: `sm` is the SM count of CUDA device 0 (`2sm`, `1..sm:x2,sm,2sm` puts the knee in the sweep)",
            0,
            MAX_BLOCKS,
            0,
        )
        .with_unit(params::SM_UNIT),
        ParamSpec::count(
            "threads_per_block",
            "threads per block (a multiple of 32, the warp size, uses every lane)",
            1,
            1024,
            256,
        ),
        params::device(float),
    ];
    if float {
        v.push(params::backend());
    }
    v
}

impl Benchmark for Flops {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.flops".into(),
            description: "GPU floating-point FMA throughput (f64/f32/f16/bf16) on the CUDA cores, against the derived peak".into(),
            params: params(true),
            metrics: vec![MetricSpec::ops_per_sec("flops", "FLOP/s")],
        }
    }

    /// Ready: whether CUDA or wgpu can run is decided per point in
    /// `prepare`, so a machine without CUDA can still run `backend=wgpu`.
    fn probe(&self, _ctx: &Context) -> Probe {
        Probe::Ready
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        validate(point)
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(backend::host_facts(ctx))
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        if !params::is_cuda(point) {
            if point.choice::<FloatPrecision>("precision")? != FloatPrecision::F32 {
                return Err(BenchError::Skip(
                    "backend=wgpu measures f32 only (WGSL has no portable f64, and f16 is an optional extension)".into(),
                ));
            }
            return backend::wgpu_case(ctx, point, WgpuKind::Flops);
        }
        prepare(point, true)
    }
}

impl Benchmark for Iops {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.iops".into(),
            description: "GPU integer throughput (i32 IMAD, i8 dp4a) on the CUDA cores, against the derived peak".into(),
            params: params(false),
            metrics: vec![MetricSpec::ops_per_sec("iops", "op/s")],
        }
    }

    fn probe(&self, _ctx: &Context) -> Probe {
        params::cuda_probe()
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        validate(point)
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(backend::host_facts(ctx))
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        prepare(point, false)
    }
}

/// The most threads a grid may have: each stores one value indexed by a
/// 32-bit thread id.
const MAX_THREADS: u64 = 1 << 31;

fn validate(point: &Point) -> Result<(), ConfigError> {
    let blocks = point.get("blocks").and_then(|v| v.as_u64()).unwrap_or(0);
    let threads = point
        .get("threads_per_block")
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    if blocks.saturating_mul(threads) > MAX_THREADS {
        return Err(params::invalid(
            "blocks",
            point,
            format!(
                "blocks × threads_per_block = {} threads, more than the {MAX_THREADS} this kernel indexes",
                blocks.saturating_mul(threads)
            ),
        ));
    }
    params::cuda_device(point).map(|_| ())
}

/// Operations one launch performs.
pub(crate) fn ops_per_launch(a: Arith, blocks: u64, threads: u64, n: u64) -> Option<u64> {
    blocks
        .checked_mul(threads)?
        .checked_mul(n)?
        .checked_mul(UNROLL * CHAINS * a.ops_per_lane_instruction())
}

/// Fields drop in declaration order: GPU resources before `gpu`, whose
/// stream they were used on.
struct ArithCase {
    kernel: Kernel,
    out: DeviceBuffer,
    timer: Timer,
    arith: Arith,
    blocks: u32,
    threads: u32,
    n: i32,
    b: u64,
    c: u64,
    ops: u64,
    about: About,
    gpu: Gpu,
}

fn prepare(point: &Point, float: bool) -> Result<Box<dyn Case>, BenchError> {
    let arith: Arith = if float {
        point.choice::<FloatPrecision>("precision")?.into()
    } else {
        point.choice::<IntPrecision>("precision")?.into()
    };
    let threads = point.u64("threads_per_block")? as u32;
    let gpu = Gpu::open(point.u64("device")? as usize, &[crate::cuda::libs::nvrtc])?;
    let info = gpu.info.clone();
    if info.cc < arith.min_cc() {
        return Err(BenchError::Skip(format!(
            "{} needs compute capability {}.{} or newer; device {} ({}) is {}",
            arith.instruction(),
            arith.min_cc().0,
            arith.min_cc().1,
            info.index,
            info.name,
            info.cc_string()
        )));
    }
    let name = kernels::arith_kernel_name(arith);
    let kernel = gpu.kernel(name, &kernels::arith_source(arith))?;
    let blocks = match point.u64("blocks")? {
        0 => {
            let per_sm = kernel.occupancy(threads)?;
            if per_sm == 0 {
                return Err(BenchError::Failed(format!(
                    "threads_per_block={threads} does not fit on one SM with this kernel"
                )));
            }
            per_sm * info.sms
        }
        b => b as u32,
    };
    let total_threads = blocks as u64 * threads as u64;
    let elem = if arith == Arith::F64 { 8 } else { 4 };
    let out = DeviceBuffer::new(&gpu, (total_threads * elem) as usize)?;
    let timer = Timer::new(&gpu)?;
    let (b, c) = kernels::arith_operands(arith);
    let mut case = ArithCase {
        kernel,
        out,
        timer,
        arith,
        blocks,
        threads,
        n: 3,
        b,
        c,
        ops: 0,
        about: About::default(),
        gpu,
    };

    // Check the arithmetic: a short launch, then the first and last
    // thread's values bit for bit against the host emulation.
    case.launch_once()?;
    case.gpu.sync()?;
    for tid in [0, total_threads - 1] {
        let mut got = vec![0u8; elem as usize];
        case.out.download((tid * elem) as usize, &mut got)?;
        let got = if elem == 8 {
            u64::from_le_bytes(got.try_into().unwrap_or_default())
        } else {
            u32::from_le_bytes(got.try_into().unwrap_or_default()) as u64
        };
        let want = emulate::thread_result(arith, tid as u32, case.n as u64, b, c);
        if got != want {
            return Err(BenchError::Verify(format!(
                "{name}: thread {tid} stored {got:#x}, the host emulation of the same arithmetic gives {want:#x}"
            )));
        }
    }

    // Calibrate the loop trips so one launch lasts about LAUNCH_TARGET.
    let mut n: i64 = 8;
    let t = loop {
        case.n = n as i32;
        let t = case.time_one()?;
        if t >= LAUNCH_TARGET / 10 || n >= i32::MAX as i64 / 8 {
            break t;
        }
        n *= 8;
    };
    let scaled = (n as f64 * LAUNCH_TARGET.as_secs_f64() / t.as_secs_f64().max(1e-7)).round();
    case.n = scaled.clamp(1.0, i32::MAX as f64) as i32;
    let launch_time = case.time_one()?;
    case.ops =
        ops_per_launch(arith, blocks as u64, threads as u64, case.n as u64).ok_or_else(|| {
            BenchError::Failed(
                "the work per launch overflows a 64-bit count; use fewer blocks".into(),
            )
        })?;

    describe(&mut case, float, launch_time);
    case.gpu.start_sampling();
    Ok(Box::new(case))
}

fn describe(case: &mut ArithCase, float: bool, launch_time: Duration) {
    let info = &case.gpu.info;
    let a = case.arith;
    let (metric, unit) = if float {
        ("flops", "FLOP/s")
    } else {
        ("iops", "op/s")
    };
    let sms_used = case.blocks.min(info.sms);
    match peak::cuda_core_rate(info.cc, a, info.fp32_to_fp64) {
        Some(_) if info.clock_khz == 0 => case
            .about
            .caveat("no theoretical peak: the driver reports no SM clock"),
        Some(_) if info.restricted(a.name()) => case.about.caveat(format!(
            "no theoretical peak: {} is an export variant whose {} rate differs from its compute capability's",
            info.name,
            a.name()
        )),
        Some(rate) => {
            case.about.peak = Some(peak::cuda_core_peak(
                metric, unit, a, &rate, sms_used, info.sms, info.clock_khz,
            ))
        }
        None => case.about.caveat(format!(
            "no theoretical peak: NVIDIA publishes no per-SM {} rate for compute capability {} (crates/gpu/src/peak.rs)",
            a.instruction(),
            info.cc_string()
        )),
    }
    if !case.threads.is_multiple_of(32) {
        case.about.caveat(format!(
            "threads_per_block={} is not a multiple of 32: the last warp of each block runs with idle lanes",
            case.threads
        ));
    }
    if a == Arith::F64 && info.fp32_to_fp64.is_some_and(|r| r >= 16) {
        case.about.note(format!(
            "this GPU runs FP64 at 1/{} of its FP32 rate (driver's ratio): a low f64 number here is the hardware, not an error",
            info.fp32_to_fp64.unwrap_or(0)
        ));
    }
    if case.blocks < info.sms {
        case.about.note(format!(
            "blocks={} < {} SMs: only {} SMs are busy; the peak counts those",
            case.blocks, info.sms, case.blocks
        ));
    }
    let per_op = if float {
        "one op = one floating-point operation: an FMA counts 2, a packed half2/bfloat162 FMA 4"
    } else if a == Arith::I8 {
        "one op = one 8-bit multiply or add: a dp4a counts 8 (four products, four additions)"
    } else {
        "one op = one 32-bit multiply or add: an IMAD counts 2"
    };
    case.about.note(format!(
        "{}; kernel {} ({}) compiled by NVRTC for {}",
        info.describe(),
        kernels::arith_kernel_name(a),
        a.instruction(),
        case.kernel.target
    ));
    case.about.note(format!(
        "{per_op}; a launch is {} blocks × {} threads × {} chains × {} × {} dependent steps = {} ops and takes {:.2} ms; time is measured by CUDA events around back-to-back launches",
        case.blocks,
        case.threads,
        CHAINS,
        case.n,
        UNROLL,
        case.ops,
        launch_time.as_secs_f64() * 1e3
    ));
    case.about.note(
        "the stored results of the first and last thread were checked bit for bit against a host emulation of the same arithmetic",
    );
    // `blocks=0` (auto) resolved to the grid that runs.
    case.about.resolved = vec![("blocks".into(), Value::Int(case.blocks as u64))];
}

impl ArithCase {
    fn launch_once(&self) -> Result<(), BenchError> {
        let mut out = self.out.ptr();
        let mut n = self.n;
        match self.arith {
            Arith::F64 => {
                let (mut b, mut c) = (f64::from_bits(self.b), f64::from_bits(self.c));
                let mut p = [arg(&mut out), arg(&mut b), arg(&mut c), arg(&mut n)];
                // SAFETY: fma_f64(double *out, double b, double c, int n):
                // the parameters match in order and type; `out` holds one
                // double per launched thread.
                unsafe {
                    self.kernel
                        .launch(&self.gpu, self.blocks, self.threads, &mut p)
                }
            }
            Arith::F32 => {
                let (mut b, mut c) = (f32::from_bits(self.b as u32), f32::from_bits(self.c as u32));
                let mut p = [arg(&mut out), arg(&mut b), arg(&mut c), arg(&mut n)];
                // SAFETY: fma_f32(float *out, float b, float c, int n): as
                // above, with one float per thread.
                unsafe {
                    self.kernel
                        .launch(&self.gpu, self.blocks, self.threads, &mut p)
                }
            }
            _ => {
                let (mut b, mut c) = (self.b as u32, self.c as u32);
                let mut p = [arg(&mut out), arg(&mut b), arg(&mut c), arg(&mut n)];
                // SAFETY: the packed and integer kernels are all
                // (u32 *out, u32 b, u32 c, int n), one u32 per thread.
                unsafe {
                    self.kernel
                        .launch(&self.gpu, self.blocks, self.threads, &mut p)
                }
            }
        }
    }

    fn time_one(&self) -> Result<Duration, BenchError> {
        self.timer.start(&self.gpu)?;
        self.launch_once()?;
        self.timer.stop(&self.gpu)
    }
}

impl Case for ArithCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.gpu.bind()?;
        self.timer.start(&self.gpu)?;
        for _ in 0..iters {
            self.launch_once()?;
        }
        let elapsed = self.timer.stop(&self.gpu)?;
        let ops = self
            .ops
            .checked_mul(iters)
            .ok_or_else(|| BenchError::Other("operation count overflow".into()))?;
        Ok(Work {
            ops,
            elapsed: Some(elapsed),
            ..Work::default()
        })
    }

    /// Frees everything through [`Gpu::finish`](crate::cuda::rt::Gpu::finish).
    fn finish(self: Box<Self>) -> Finished {
        let ArithCase {
            kernel,
            out,
            timer,
            mut about,
            mut gpu,
            ..
        } = *self;
        gpu.under_load(&mut about);
        let released = gpu.finish(|| drop((kernel, out, timer)));
        Finished::with(about, released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_per_launch_counts_two_per_fma_and_four_per_packed_fma() {
        let f32 = ops_per_launch(Arith::F32, 132, 256, 10).unwrap();
        assert_eq!(f32, 132 * 256 * 10 * UNROLL * CHAINS * 2);
        assert_eq!(ops_per_launch(Arith::F16, 132, 256, 10).unwrap(), 2 * f32);
        assert_eq!(
            ops_per_launch(Arith::I8, 1, 1, 1).unwrap(),
            UNROLL * CHAINS * 8
        );
        assert!(ops_per_launch(Arith::F64, MAX_BLOCKS, 1024, u64::MAX / 4).is_none());
    }

    #[test]
    fn a_grid_beyond_32_bit_thread_ids_is_a_usage_error() {
        let mut p = Point::default();
        p.set("blocks", Value::Int(1 << 30));
        p.set("threads_per_block", Value::Int(1024));
        p.set("backend", Value::Str("cuda".into()));
        let e = validate(&p).unwrap_err().to_string();
        assert!(
            e.contains("`blocks`") && e.contains("threads_per_block"),
            "{e}"
        );
        p.set("blocks", Value::Int(1 << 20));
        // Valid here; the device index is checked only where CUDA runs.
        if benchsuite_gpu_has_no_cuda() {
            assert!(validate(&p).is_ok());
        }
    }

    fn benchsuite_gpu_has_no_cuda() -> bool {
        crate::cuda::driver().is_err()
    }

    #[test]
    fn params_follow_the_contract_with_the_wgpu_backend() {
        let m = Flops.meta();
        let p = |n: &str| m.param(n).unwrap_or_else(|| panic!("{n}"));
        assert_eq!(p("precision").default, Value::Str("f32".into()));
        assert_eq!(p("blocks").default, Value::Int(0));
        assert_eq!(p("threads_per_block").default, Value::Int(256));
        assert_eq!(p("device").default, Value::Int(0));
        assert_eq!(p("backend").default, Value::Str("cuda".into()));
        assert_eq!(m.metrics[0].name, "flops");
        assert_eq!(m.metrics[0].unit, "FLOP/s");
        assert!(Iops.meta().param("backend").is_none());
    }
}
