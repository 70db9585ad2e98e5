//! `gpu.flops precision=f32 backend=wgpu`: a WGSL shader of independent
//! `fma()` chains.
//!
//! Each invocation keeps [`CHAINS`] accumulators and runs
//! `loops × UNROLL` dependent FMAs on each, so the hardware always has
//! `CHAINS` independent FMAs in flight per invocation (enough to hide FMA
//! latency on GPUs, and on the 8-wide SIMD llvmpipe generates). The loop
//! count, multiplier and addend come from a uniform buffer, so the compiler
//! can neither fold the loop nor know the values; the sum of the chains is
//! written to a storage buffer, so nothing is dead code. The result is
//! checked against the same recurrence computed on the host after the run.

use std::num::NonZeroUsize;

use benchsuite_core::{About, BenchError, Case, Context, Finished, Point, Value, Work};

use super::gpu::{Gpu, Stamps, Timer, device_index, is_software, param_u32, timed_batch};
use crate::peak::FloatPrecision;

/// Independent accumulators per invocation.
const CHAINS: usize = 8;
/// FMA statements per chain in one loop iteration.
const UNROLL: usize = 4;
/// Loop iterations per invocation (the uniform `loops`).
const LOOPS: u32 = 1024;
/// FLOPs one invocation performs: an FMA counts 2.
const FLOP_PER_INVOCATION: u64 = LOOPS as u64 * (UNROLL * CHAINS) as u64 * 2;
#[cfg(test)]
pub(super) const FLOP_PER_INVOCATION_FOR_TESTS: u64 = FLOP_PER_INVOCATION;
/// Invocations `blocks=0` aims for on a GPU: 2^21 fills every current GPU
/// several times over (an H100 holds about 2^18 resident threads); wgpu
/// does not expose the number of compute units to size it exactly.
const AUTO_GPU_INVOCATIONS: u64 = 1 << 21;
/// Workgroups per host CPU `blocks=0` uses on a CPU adapter (llvmpipe runs
/// one workgroup per worker thread; a few per CPU balance the load).
const AUTO_CPU_WORKGROUPS_PER_CPU: u64 = 4;
/// Outputs compared with the host reference after the run.
const VERIFY_SAMPLES: u64 = 64;

/// The shader's uniform block.
#[derive(Debug, Clone, Copy)]
struct FmaParams {
    loops: u32,
    mul: f32,
    add: f32,
    start: f32,
}

impl FmaParams {
    /// `mul` is chosen so `mul^(loops × UNROLL) = 1/2`: the accumulators
    /// neither overflow nor reach a fixed point, so the result depends on
    /// the number of FMAs actually executed.
    fn new() -> Self {
        let steps = f64::from(LOOPS) * UNROLL as f64;
        FmaParams {
            loops: LOOPS,
            mul: 0.5f64.powf(1.0 / steps) as f32,
            // Small enough that the fixed point `add / (1 - mul)` (about
            // 0.006) stays far below the accumulators' values (0.5..2).
            add: 1.0 / 1_048_576.0,
            start: 1.0,
        }
    }

    fn bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&self.loops.to_le_bytes());
        b[4..8].copy_from_slice(&self.mul.to_le_bytes());
        b[8..12].copy_from_slice(&self.add.to_le_bytes());
        b[12..16].copy_from_slice(&self.start.to_le_bytes());
        b
    }

    /// What invocation `gid` writes, computed on the host.
    fn reference(&self, gid: u32) -> f32 {
        let x = self.start + (gid % 1024) as f32 * 0.001;
        let mut a: [f32; CHAINS] = std::array::from_fn(|k| x + k as f32 * 0.125);
        for _ in 0..self.loops {
            for _ in 0..UNROLL {
                for v in &mut a {
                    *v = v.mul_add(self.mul, self.add);
                }
            }
        }
        ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    }
}

/// The WGSL source for a workgroup of `wg` invocations.
fn shader(wg: u32) -> String {
    let decls: String = (0..CHAINS)
        .map(|k| format!("    var a{k} = x + {:.3};\n", k as f32 * 0.125))
        .collect();
    let mut body = String::new();
    for _ in 0..UNROLL {
        for k in 0..CHAINS {
            body.push_str(&format!("        a{k} = fma(a{k}, m, c);\n"));
        }
    }
    format!(
        "struct Params {{ loops: u32, mul: f32, add: f32, start: f32 }}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let x = p.start + f32(gid.x % 1024u) * 0.001;
{decls}    let m = p.mul;
    let c = p.add;
    for (var i = 0u; i < p.loops; i = i + 1u) {{
{body}    }}
    out[gid.x] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}}
"
    )
}

struct FlopsCase {
    gpu: Gpu,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    _uniform: wgpu::Buffer,
    out: wgpu::Buffer,
    timer: Option<Timer>,
    /// Why timestamps are not used, when they are not.
    wall_reason: Option<String>,
    params: FmaParams,
    blocks: u32,
    wg: u32,
    auto_blocks: bool,
    flop_per_dispatch: u64,
    ran: bool,
}

pub(super) fn prepare(ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
    let precision: FloatPrecision = point.choice("precision")?;
    if precision != FloatPrecision::F32 {
        return Err(BenchError::Skip(format!(
            "the wgpu backend measures f32 only (precision={precision}): WGSL has no f64, and f16 needs the optional shader-f16 feature, not implemented"
        )));
    }
    let wg = param_u32(point, "threads_per_block")?;
    let blocks_param = param_u32(point, "blocks")?;
    let gpu = Gpu::open(device_index(point)?, wgpu::Features::TIMESTAMP_QUERY)?;
    let lim = &gpu.limits;
    let max_wg = lim
        .max_compute_invocations_per_workgroup
        .min(lim.max_compute_workgroup_size_x);
    if wg == 0 || wg > max_wg {
        return Err(BenchError::Failed(format!(
            "threads_per_block={wg}: {} allows 1..{max_wg} invocations per workgroup (wgpu limits max_compute_invocations_per_workgroup and max_compute_workgroup_size_x)",
            gpu.info.name
        )));
    }
    let max_groups = lim.max_compute_workgroups_per_dimension;
    let blocks = if blocks_param == 0 {
        let groups = if is_software(&gpu.info) {
            let cpus = ctx.host.cpu.logical_cpus.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
            });
            cpus as u64 * AUTO_CPU_WORKGROUPS_PER_CPU
        } else {
            AUTO_GPU_INVOCATIONS.div_ceil(u64::from(wg))
        };
        groups.clamp(1, u64::from(max_groups)) as u32
    } else {
        blocks_param
    };
    if blocks > max_groups {
        return Err(BenchError::Failed(format!(
            "blocks={blocks}: {} allows at most {max_groups} workgroups in one dispatch (wgpu limit max_compute_workgroups_per_dimension)",
            gpu.info.name
        )));
    }
    let invocations = u64::from(blocks) * u64::from(wg);
    let out_bytes = invocations * 4;
    let max_bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
    if out_bytes > max_bind {
        return Err(BenchError::Failed(format!(
            "blocks × threads_per_block = {invocations} invocations need a {out_bytes}-byte result buffer; {} binds at most {max_bind} bytes: use fewer blocks",
            gpu.info.name
        )));
    }

    let pipeline = gpu.pipeline("fma", &shader(wg))?;
    let params = FmaParams::new();
    let uniform = gpu.buffer(
        "fma params",
        16,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    gpu.queue.write_buffer(&uniform, 0, &params.bytes());
    let out = gpu.buffer(
        "fma out",
        out_bytes,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let bind_group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("fma"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: out.as_entire_binding(),
            },
        ],
    });
    gpu.check("setting up the FMA shader")?;
    let timer = Timer::new(&gpu, false);
    let wall_reason = timer.is_none().then(|| {
        format!(
            "{} does not support timestamp queries (TIMESTAMP_QUERY)",
            gpu.info.name
        )
    });
    let mut case = FlopsCase {
        gpu,
        pipeline,
        bind_group,
        _uniform: uniform,
        out,
        timer,
        wall_reason,
        params,
        blocks,
        wg,
        auto_blocks: blocks_param == 0,
        flop_per_dispatch: invocations * FLOP_PER_INVOCATION,
        ran: false,
    };
    // One untimed dispatch: compiles the pipeline in the driver and shows
    // whether the timestamps work; if they do not, use the wall clock.
    if let Err(e) = case.run(1) {
        if case.timer.is_none() {
            return Err(e);
        }
        case.timer = None;
        case.wall_reason = Some(benchsuite_core::error_chain(&e));
        case.run(1)?;
    }
    Ok(Box::new(case))
}

impl FlopsCase {
    /// One batch of `iters` dispatches, and the timestamps when timed.
    fn batch(&mut self, iters: u64) -> Result<(Work, Stamps), BenchError> {
        let ops = self.flop_per_dispatch.checked_mul(iters).ok_or_else(|| {
            BenchError::Other(format!(
                "a batch of {iters} dispatches overflows the FLOP counter"
            ))
        })?;
        let mut enc = self.gpu.encoder();
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("fma"),
                timestamp_writes: self.timer.as_ref().map(Timer::pass_writes),
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            for _ in 0..iters {
                pass.dispatch_workgroups(self.blocks, 1, 1);
            }
        }
        if let Some(t) = &self.timer {
            t.resolve(&mut enc);
        }
        let idx = self.gpu.queue.submit([enc.finish()]);
        self.gpu.wait(Some(idx))?;
        self.gpu.check("running the FMA shader")?;
        let stamps = match &self.timer {
            Some(t) => Some(t.read(&self.gpu)?),
            None => None,
        };
        self.ran = true;
        Ok((Work::ops(ops), stamps))
    }
}

impl FlopsCase {
    /// Waits for the device, then checks sampled results against the host
    /// reference (when anything ran).
    fn verify(&self) -> Result<(), BenchError> {
        self.gpu.finish()?;
        if !self.ran {
            return Ok(());
        }
        let invocations = u64::from(self.blocks) * u64::from(self.wg);
        let data = self.gpu.read_back(&self.out, invocations * 4)?;
        let step = (invocations / VERIFY_SAMPLES).max(1);
        let mut checked: Vec<u64> = (0..invocations).step_by(step as usize).collect();
        checked.push(invocations - 1);
        for gid in checked {
            let i = gid as usize * 4;
            let got = f32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
            let want = self.params.reference(gid as u32);
            let tol = 1e-3 * want.abs().max(1.0);
            if !got.is_finite() || (got - want).abs() > tol {
                return Err(BenchError::Verify(format!(
                    "the FMA shader's invocation {gid} wrote {got}, the host computes {want}: the shader did not run the FMAs it was counted for"
                )));
            }
        }
        Ok(())
    }

    /// The record's notes, caveats and resolved `blocks`.
    fn about(&self) -> About {
        let mut about = self.gpu.about();
        let n = &mut about.notes;
        n.push(format!(
            "one op = one f32 floating-point operation (an FMA counts 2); each of the {} workgroups × {} invocations runs {CHAINS} independent fma() chains × {UNROLL} unrolled × {LOOPS} loop iterations = {FLOP_PER_INVOCATION} FLOP per invocation, {} FLOP per dispatch; one batch iteration is one dispatch, all of a batch in one compute pass and one submission",
            self.blocks, self.wg, self.flop_per_dispatch
        ));
        if self.auto_blocks {
            n.push(if is_software(&self.gpu.info) {
                format!(
                    "blocks=0 chose {} workgroups: {AUTO_CPU_WORKGROUPS_PER_CPU} per host CPU for a CPU adapter",
                    self.blocks
                )
            } else {
                format!(
                    "blocks=0 chose {} workgroups ({AUTO_GPU_INVOCATIONS} invocations): wgpu does not report the compute-unit count, and this fills any current GPU several times",
                    self.blocks
                )
            });
        }
        n.push(match (&self.timer, &self.wall_reason) {
            (Some(t), _) => t.note("at the beginning and end of the batch's compute pass"),
            (None, reason) => format!(
                "time: the runner's wall clock around encode + submit + wait ({}); it includes the submission overhead",
                reason.as_deref().unwrap_or("no timestamps")
            ),
        });
        about.resolved = vec![("blocks".into(), Value::Int(u64::from(self.blocks)))];
        about
    }
}

impl Case for FlopsCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        timed_batch(|| self.batch(iters))
    }

    /// Verifies the results (untimed) and releases the device.
    fn finish(self: Box<Self>) -> Finished {
        let about = self.about();
        Finished::with(about, self.verify())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_depends_on_the_fma_count() {
        let p = FmaParams::new();
        let full = p.reference(7);
        let short = FmaParams {
            loops: LOOPS - 8,
            ..p
        }
        .reference(7);
        assert!(full.is_finite() && full > 0.0, "{full}");
        // 32 FMAs fewer per chain must be outside the verification tolerance.
        assert!(
            (full - short).abs() > 1e-3 * full.abs().max(1.0),
            "{full} {short}"
        );
        assert!(shader(64).contains("@workgroup_size(64)"));
        assert_eq!(shader(64).matches("fma(").count(), CHAINS * UNROLL);
    }
}
