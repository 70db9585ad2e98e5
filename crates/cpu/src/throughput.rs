//! `cpu.flops` and `cpu.iops`: arithmetic throughput of register-only
//! kernels on a team of threads, against the derived peak.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use benchsuite_core::team::{Placement, Team, allowed_cpus};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, Context, Meta, MetricSpec, ParamSpec, Point,
    TeamCase, Value, Work, error_chain,
};

use crate::kernel::{
    FloatPrecision, FlopsMix, IntPrecision, IsaChoice, Kernel, PeakModel, flops_mix_kernel,
    iops_kernel,
};
use crate::peak::{Overrides, cpus_used, kernel_peak};

/// The most threads a point may ask for: far above any CPU count, so
/// oversubscription can be shown, but bounded so a typo cannot create a
/// million threads.
pub const MAX_THREADS: u64 = 1024;

/// Floating-point throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct Flops;

/// Integer throughput; see the crate docs.
#[derive(Debug, Default)]
pub struct Iops;

/// Logical CPUs this process may use (the default thread count).
pub(crate) fn cpu_count() -> u64 {
    allowed_cpus().len().max(1) as u64
}

/// `threads`, shared by every cpu benchmark.
pub(crate) fn threads_param(default: u64, help: &'static str) -> ParamSpec {
    ParamSpec::count("threads", help, 1, MAX_THREADS, default.min(MAX_THREADS))
        .with_smoke(Value::Int(1))
}

/// `pin`, shared by every cpu benchmark.
pub(crate) fn pin_param(default: bool) -> ParamSpec {
    ParamSpec::flag(
        "pin",
        "pin thread i to the i-th allowed CPU (wrapping around when oversubscribed); off leaves placement to the scheduler",
        default,
    )
}

fn params<P: Choice>(default: P) -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice_of("precision", "element type of the arithmetic", default),
        ParamSpec::choice_of(
            "isa",
            "instruction set: auto = the widest this CPU has (avx512 > avx2 > sse2 > scalar); a level the CPU lacks is a skipped record",
            IsaChoice::Auto,
        ),
        threads_param(
            cpu_count(),
            "threads, each running the kernel on its own registers (default: every allowed CPU; more than the CPUs oversubscribes)",
        ),
        pin_param(true),
    ]
}

impl Benchmark for Flops {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::peak::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "cpu.flops".into(),
            description: "floating-point throughput of register-only FMA kernels (f64/f32/f16/bf16) against the derived peak".into(),
            params: {
                let mut p = params(FloatPrecision::F64);
                p.insert(
                    1,
                    ParamSpec::choice_of(
                        "mix",
                        "fma: FMAs only, against the FMA units' peak (the vendor's figure); fma_add: FMAs and adds 1:1 (f64/f32, AVX-512), against the bound of the FMA units and the FP adders beside them (AMD Zen 2-5 have two; 48 f64 flop/cycle on Zen 5)",
                        FlopsMix::Fma,
                    ),
                );
                p
            },
            metrics: vec![MetricSpec::ops_per_sec("flops", "flop/s")],
        }
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        prepare(ctx, point, true)
    }

    /// `likwid-bench -t peakflops*` at the same precision, ISA and threads.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::likwid::peakflops(point, crate::likwid::auto_isa())
    }
}

impl Benchmark for Iops {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::peak::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "cpu.iops".into(),
            description: "integer throughput (i8/i16 dot products, i32/i64 multiplies) of register-only kernels against the derived peak".into(),
            params: params(IntPrecision::I32),
            metrics: vec![MetricSpec::ops_per_sec("iops", "op/s")],
        }
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        prepare(ctx, point, false)
    }
}

fn placement(pin: bool) -> Placement {
    if pin {
        Placement::Pinned
    } else {
        Placement::Unpinned
    }
}

/// Caveats about how threads are placed, shared by the cpu benchmarks.
pub(crate) fn placement_caveats(threads: usize, pin: bool, about: &mut About) {
    let cpus = allowed_cpus().len();
    if threads > cpus {
        about.caveat(format!(
            "oversubscribed: {threads} threads on {cpus} CPUs; the scheduler time-slices them, so the total cannot exceed what {cpus} CPUs do and each thread gets about {:.0}% of one",
            100.0 * cpus as f64 / threads as f64
        ));
    }
    if !pin {
        about.caveat("pin=off: threads are placed by the scheduler and may migrate or share a CPU");
    }
}

fn prepare(ctx: &Context, point: &Point, float: bool) -> Result<Box<dyn Case>, BenchError> {
    let isa_req = point.choice::<IsaChoice>("isa")?.isa();
    let kernel = if float {
        flops_mix_kernel(point.choice("precision")?, point.choice("mix")?, isa_req)
    } else {
        iops_kernel(point.choice("precision")?, isa_req)
    }?;
    let threads = point.u64("threads")? as usize;
    let pin = point.bool("pin")?;
    let overrides = Overrides::from_options(&ctx.options)?;
    let placement = placement(pin);

    // Facts go to `notes`, caveats to `caveats`.
    let mut about = About::default();
    about.note(describe(&kernel, isa_req.is_none()));
    if float
        && kernel.peak_model == PeakModel::Fma
        && let Some((mix, fma)) =
            crate::peak::fma_add_bound(kernel.width_bits, kernel.ops_per_instr)
    {
        about.note(format!(
            "two peaks on this core: the FMA units' {fma:.0} flop/cycle (this record's peak, the vendor's figure), and {mix:.0} flop/cycle when FP adds issue on the adders beside them (mix=fma_add measures that)"
        ));
    }
    placement_caveats(threads, pin, &mut about);
    let (metric, unit) = if float {
        ("flops", "flop/s")
    } else {
        ("iops", "op/s")
    };
    let cpus = cpus_used(threads, placement);
    about.peak = match kernel_peak(&kernel, metric, unit, threads, &cpus, &overrides) {
        Ok(p) => {
            if p.inputs.get("GHz").is_some_and(|g| g.source == "measured") {
                about.note(
                    "peak uses the clock measured with a dependent integer add chain (1 cycle per add) on the same cores; pass --opt cpu-ghz=N to use a known clock instead",
                );
            }
            Some(p)
        }
        Err(why) => {
            about.caveat(format!("no theoretical peak: {}", error_chain(&why)));
            None
        }
    };
    // Kernel passes per thread per iteration; set below, before any batch.
    let passes = Arc::new(AtomicU64::new(1));
    let p = passes.clone();
    let team = Team::new(
        threads,
        placement,
        |_| Ok(()),
        move |_: &mut (), iters| {
            Ok(Work::ops(
                kernel.run(iters.saturating_mul(p.load(Ordering::Relaxed))),
            ))
        },
    )?;
    let k = passes_per_iteration(&team, &kernel, threads)?;
    passes.store(k, Ordering::Relaxed);
    if threads > allowed_cpus().len() {
        about.note(format!(
            "one iteration = {k} kernel passes per thread, so that waking and collecting {threads} threads stays under 1% of a batch"
        ));
    }
    Ok(TeamCase::boxed(team, about))
}

/// Kernel passes per thread in one iteration, so that one iteration of the
/// whole team lasts at least 100× the team's start/stop synchronisation
/// (measured with empty batches). With many threads, and more so with more
/// threads than CPUs, waking and collecting them costs milliseconds; without
/// this, the runner's 10 ms batches would time mostly the synchronisation.
fn passes_per_iteration(team: &Team, kernel: &Kernel, threads: usize) -> Result<u64, BenchError> {
    let mut sync = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        team.run(0)?;
        sync = sync.min(t0.elapsed().as_secs_f64());
    }
    let n = 1000;
    let t0 = Instant::now();
    std::hint::black_box(kernel.run(n));
    let per_pass = (t0.elapsed().as_secs_f64() / n as f64).max(1e-9);
    // Threads beyond the CPUs run in turns ("waves").
    let waves = threads.div_ceil(allowed_cpus().len().max(1)) as f64;
    Ok(((100.0 * sync) / (per_pass * waves)).ceil().clamp(1.0, 1e9) as u64)
}

fn describe(k: &Kernel, auto: bool) -> String {
    format!(
        "kernel: {} ({}{}), {} independent accumulator chains in registers, no memory traffic; counting: {}",
        k.instruction,
        k.isa,
        if auto { ", picked by isa=auto" } else { "" },
        k.chains,
        k.counting
    )
}
