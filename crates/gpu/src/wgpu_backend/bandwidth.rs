//! `gpu.bandwidth backend=wgpu`: copies of `block` bytes.
//!
//! - `d2d_kernel`: a WGSL copy shader (16-byte `vec4<u32>` loads and stores
//!   when `block` is a multiple of 16, else 4-byte words), grid-stride;
//! - `d2d_memcpy`: `copy_buffer_to_buffer` between two device buffers;
//! - `h2d`: `Queue::write_buffer` from an ordinary host `Vec<u8>` (wgpu
//!   copies it into its own mapped staging memory, then the device copies it
//!   into the destination buffer);
//! - `d2h`: a copy into a `MAP_READ` buffer, mapped and copied into an
//!   ordinary host `Vec<u8>`.
//!
//! The source holds a known pattern and the destination starts zeroed; after
//! the run (untimed, in `finish`) the destination is compared word by word
//! with the pattern, so a copy that did not happen or moved the wrong bytes
//! fails the record.

use std::num::NonZeroU64;

use benchsuite_core::{About, BenchError, Case, Context, Finished, Point, Work};

use super::gpu::{Gpu, Stamps, Timer, device_index, timed_batch};
use crate::params::{CopyOp as Op, Memory};

/// Invocations per workgroup of the copy shader (lowered to the adapter's
/// limit when that is smaller).
const COPY_WG: u32 = 256;

/// Word `i` of the verification pattern: distinct from its neighbours and
/// from zero almost everywhere, so a missing, shifted or partial copy shows.
fn pattern_word(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9E37_79B1) ^ 0x5A5A_A5A5 ^ ((i as u64 >> 32) as u32)
}

/// `len` bytes of the pattern (`len` a multiple of 4).
pub(super) fn pattern(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    for i in 0..len / 4 {
        v.extend_from_slice(&pattern_word(i).to_le_bytes());
    }
    v
}

/// Checks that `got` is the pattern; the error names the first wrong word
/// and how many are wrong.
pub(crate) fn verify_pattern(got: &[u8], what: &str) -> Result<(), BenchError> {
    if !got.len().is_multiple_of(4) {
        return Err(BenchError::Verify(format!(
            "{what}: {} bytes is not a whole number of 4-byte words",
            got.len()
        )));
    }
    let mut wrong = 0usize;
    let mut first = None;
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        if v != pattern_word(i) {
            wrong += 1;
            first.get_or_insert((i, v));
        }
    }
    match first {
        None => Ok(()),
        Some((i, v)) => Err(BenchError::Verify(format!(
            "{what}: {wrong} of {} words differ from the source, the first at byte offset {} (0x{v:08x}, expected 0x{:08x})",
            got.len() / 4,
            i * 4,
            pattern_word(i)
        ))),
    }
}

/// The copy shader bound to one source and destination, in chunks no larger
/// than the adapter can bind at once.
struct CopyKernel {
    pipeline: wgpu::ComputePipeline,
    /// One bind group and workgroup count per chunk.
    chunks: Vec<(wgpu::BindGroup, u32)>,
    elem: u64,
    wg: u32,
}

impl CopyKernel {
    /// `binding_cap` lowers the adapter's binding limit (tests use it to
    /// exercise chunking with small buffers).
    fn new(
        gpu: &Gpu,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        block: u64,
        binding_cap: Option<u64>,
    ) -> Result<Self, BenchError> {
        let lim = &gpu.limits;
        let wg = COPY_WG
            .min(lim.max_compute_invocations_per_workgroup)
            .min(lim.max_compute_workgroup_size_x);
        let (elem, ty) = if block.is_multiple_of(16) {
            (16u64, "vec4<u32>")
        } else {
            (4u64, "u32")
        };
        let wgsl = format!(
            "@group(0) @binding(0) var<storage, read> src: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{ty}>;

@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {{
    let n = arrayLength(&dst);
    let stride = groups.x * {wg}u;
    for (var i = gid.x; i < n; i = i + stride) {{
        dst[i] = src[i];
    }}
}}
"
        );
        let pipeline = gpu.pipeline("copy", &wgsl)?;
        // Chunk offsets must be multiples of the binding offset alignment
        // (a power of two) and of the element size.
        let align = u64::from(lim.min_storage_buffer_offset_alignment).max(elem);
        let max_binding = binding_cap.map_or(lim.max_storage_buffer_binding_size, |c| {
            c.min(lim.max_storage_buffer_binding_size)
        });
        let max_chunk = max_binding / align * align;
        if max_chunk == 0 {
            return Err(BenchError::Failed(format!(
                "{} cannot bind a storage buffer of {align} bytes",
                gpu.info.name
            )));
        }
        let chunk = block.min(max_chunk);
        let layout = pipeline.get_bind_group_layout(0);
        let mut chunks = Vec::new();
        let mut offset = 0;
        while offset < block {
            let size = chunk.min(block - offset);
            let binding = |buffer| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: NonZeroU64::new(size),
                })
            };
            let bg = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("copy"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: binding(src),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: binding(dst),
                    },
                ],
            });
            let groups = (size / elem)
                .div_ceil(u64::from(wg))
                .clamp(1, u64::from(lim.max_compute_workgroups_per_dimension));
            chunks.push((bg, groups as u32));
            offset += size;
        }
        gpu.check("binding the copy shader")?;
        Ok(CopyKernel {
            pipeline,
            chunks,
            elem,
            wg,
        })
    }
}

/// What each op holds besides the device.
enum Buffers {
    Kernel {
        _src: wgpu::Buffer,
        dst: wgpu::Buffer,
        kernel: CopyKernel,
    },
    Memcpy {
        src: wgpu::Buffer,
        dst: wgpu::Buffer,
    },
    Upload {
        host: Vec<u8>,
        dst: wgpu::Buffer,
    },
    Download {
        src: wgpu::Buffer,
        readback: wgpu::Buffer,
        host: Vec<u8>,
    },
}

pub(super) struct BandwidthCase {
    gpu: Gpu,
    op: Op,
    block: u64,
    /// The `memory` asked for (wgpu has no such distinction: see the notes).
    memory: Memory,
    buffers: Buffers,
    timer: Option<Timer>,
    ran: bool,
}

pub(super) fn prepare(ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
    Ok(Box::new(prepare_case(ctx, point, None)?))
}

/// [`prepare`] without the box (tests reach into the case), with the copy
/// shader's binding size capped at `binding_cap` bytes when given.
fn prepare_case(
    ctx: &Context,
    point: &Point,
    binding_cap: Option<u64>,
) -> Result<BandwidthCase, BenchError> {
    let _ = ctx;
    let op: Op = point.choice("op")?;
    let block = point.u64("block")?;
    let memory: Memory = point.choice("memory")?;
    if block == 0 || !block.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
        // A limit of the API, like a missing ISA: skipped, so a size sweep
        // from 1 byte runs on with the sizes wgpu can copy.
        return Err(BenchError::Skip(format!(
            "block={block}: the wgpu backend copies whole 4-byte words (wgpu COPY_BUFFER_ALIGNMENT), so block must be a multiple of 4 bytes"
        )));
    }
    let mut wanted = wgpu::Features::TIMESTAMP_QUERY;
    if op == Op::D2dMemcpy {
        wanted |= wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
    }
    let gpu = Gpu::open(device_index(point)?, wanted)?;
    if block > gpu.limits.max_buffer_size {
        return Err(BenchError::Failed(format!(
            "block={block}: {} allows buffers of at most {} bytes (wgpu limit max_buffer_size)",
            gpu.info.name, gpu.limits.max_buffer_size
        )));
    }
    let len = usize::try_from(block)
        .map_err(|_| BenchError::Failed(format!("block={block} does not fit host memory")))?;
    use wgpu::BufferUsages as U;
    let buffers = match op {
        Op::D2dKernel => {
            let src = gpu.buffer("src", block, U::STORAGE | U::COPY_DST);
            let dst = gpu.buffer("dst", block, U::STORAGE | U::COPY_SRC | U::COPY_DST);
            gpu.queue.write_buffer(&src, 0, &pattern(len));
            let kernel = CopyKernel::new(&gpu, &src, &dst, block, binding_cap)?;
            Buffers::Kernel {
                _src: src,
                dst,
                kernel,
            }
        }
        Op::D2dMemcpy => {
            let src = gpu.buffer("src", block, U::COPY_SRC | U::COPY_DST);
            let dst = gpu.buffer("dst", block, U::COPY_SRC | U::COPY_DST);
            gpu.queue.write_buffer(&src, 0, &pattern(len));
            Buffers::Memcpy { src, dst }
        }
        Op::H2d => Buffers::Upload {
            host: pattern(len),
            dst: gpu.buffer("dst", block, U::COPY_SRC | U::COPY_DST),
        },
        Op::D2h => {
            let src = gpu.buffer("src", block, U::COPY_SRC | U::COPY_DST);
            gpu.queue.write_buffer(&src, 0, &pattern(len));
            Buffers::Download {
                src,
                readback: gpu.buffer("readback", block, U::MAP_READ | U::COPY_DST),
                host: vec![0; len],
            }
        }
    };
    // The initial writes must land before the first timed batch.
    gpu.queue.submit(std::iter::empty::<wgpu::CommandBuffer>());
    gpu.wait(None)?;
    gpu.check("allocating and filling the buffers")?;
    let timer = match op {
        Op::D2dKernel => Timer::new(&gpu, false),
        Op::D2dMemcpy => Timer::new(&gpu, true),
        // The host side is part of these transfers: only the wall clock
        // around the whole call measures them.
        Op::H2d | Op::D2h => None,
    };
    let mut case = BandwidthCase {
        gpu,
        op,
        block,
        memory,
        buffers,
        timer,
        ran: false,
    };
    // One untimed copy checks the timestamps; when they do not work the
    // wall clock is used (and the notes say so).
    if let Err(e) = case.run(1) {
        if case.timer.is_none() {
            return Err(e);
        }
        case.timer = None;
        case.run(1)?;
    }
    Ok(case)
}

impl BandwidthCase {
    fn copy_bytes(&self) -> u64 {
        if self.op.is_d2d() {
            2 * self.block
        } else {
            self.block
        }
    }

    /// One batch of `iters` copies, and the timestamps when timed.
    fn batch(&mut self, iters: u64) -> Result<(Work, Stamps), BenchError> {
        let bytes = self.copy_bytes().checked_mul(iters).ok_or_else(|| {
            BenchError::Other(format!(
                "a batch of {iters} copies overflows the byte counter"
            ))
        })?;
        match self.op {
            Op::D2dKernel | Op::D2dMemcpy => self.run_device(iters)?,
            Op::H2d => self.run_upload(iters)?,
            Op::D2h => self.run_download(iters)?,
        }
        self.gpu.check("copying")?;
        let stamps = match &self.timer {
            Some(t) => Some(t.read(&self.gpu)?),
            None => None,
        };
        self.ran = true;
        Ok((Work::ops_bytes(iters, bytes), stamps))
    }

    /// Encodes, submits and waits for `iters` device-side copies.
    fn run_device(&mut self, iters: u64) -> Result<(), BenchError> {
        let mut enc = self.gpu.encoder();
        match &self.buffers {
            Buffers::Kernel { kernel, .. } => {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("copy"),
                    timestamp_writes: self.timer.as_ref().map(Timer::pass_writes),
                });
                pass.set_pipeline(&kernel.pipeline);
                for _ in 0..iters {
                    for (bg, groups) in &kernel.chunks {
                        pass.set_bind_group(0, bg, &[]);
                        pass.dispatch_workgroups(*groups, 1, 1);
                    }
                }
            }
            Buffers::Memcpy { src, dst } => {
                if let Some(t) = &self.timer {
                    t.stamp(&mut enc, 0);
                }
                for _ in 0..iters {
                    enc.copy_buffer_to_buffer(src, 0, dst, 0, self.block);
                }
                if let Some(t) = &self.timer {
                    t.stamp(&mut enc, 1);
                }
            }
            Buffers::Upload { .. } | Buffers::Download { .. } => {
                return Err(BenchError::Other("not a device-side copy".into()));
            }
        }
        if let Some(t) = &self.timer {
            t.resolve(&mut enc);
        }
        let idx = self.gpu.queue.submit([enc.finish()]);
        self.gpu.wait(Some(idx))
    }

    /// `iters` uploads: each `write_buffer` is flushed by its own submit;
    /// at most two are in flight, which bounds wgpu's staging memory to two
    /// blocks.
    fn run_upload(&self, iters: u64) -> Result<(), BenchError> {
        let Buffers::Upload { host, dst } = &self.buffers else {
            return Err(BenchError::Other("not an upload".into()));
        };
        let mut previous = None;
        for _ in 0..iters {
            self.gpu.queue.write_buffer(dst, 0, host);
            let idx = self
                .gpu
                .queue
                .submit(std::iter::empty::<wgpu::CommandBuffer>());
            if let Some(p) = previous.replace(idx) {
                self.gpu.wait(Some(p))?;
            }
        }
        self.gpu.wait(previous)
    }

    /// `iters` downloads, each copied on into the host vector.
    fn run_download(&mut self, iters: u64) -> Result<(), BenchError> {
        let Buffers::Download {
            src,
            readback,
            host,
        } = &mut self.buffers
        else {
            return Err(BenchError::Other("not a download".into()));
        };
        for _ in 0..iters {
            let mut enc = self.gpu.encoder();
            enc.copy_buffer_to_buffer(src, 0, readback, 0, self.block);
            self.gpu.queue.submit([enc.finish()]);
            self.gpu.map_read(readback)?;
            {
                let view = readback
                    .get_mapped_range(..)
                    .map_err(|e| BenchError::caused("reading the mapped buffer", e))?;
                host.copy_from_slice(&view);
            }
            readback.unmap();
        }
        std::hint::black_box(&host);
        Ok(())
    }
}

impl BandwidthCase {
    /// Waits for the device, then compares the destination with the source
    /// pattern (when anything ran).
    fn verify(&self) -> Result<(), BenchError> {
        self.gpu.finish()?;
        if !self.ran {
            return Ok(());
        }
        let what = format!("{} copy of {} bytes", self.op, self.block);
        match &self.buffers {
            Buffers::Kernel { dst, .. }
            | Buffers::Memcpy { dst, .. }
            | Buffers::Upload { dst, .. } => {
                let data = self.gpu.read_back(dst, self.block)?;
                verify_pattern(&data, &what)
            }
            Buffers::Download { host, .. } => verify_pattern(host, &what),
        }
    }

    /// The record's notes and caveats.
    fn about(&self) -> About {
        let mut about = self.gpu.about();
        let n = &mut about.notes;
        n.push(match &self.buffers {
            Buffers::Kernel { kernel, .. } => format!(
                "op d2d_kernel: a WGSL copy shader, {}-byte loads and stores, {} invocations per workgroup, {}; a batch is one compute pass in one submission",
                kernel.elem,
                kernel.wg,
                match kernel.chunks.len() {
                    1 => "one dispatch per copy".to_string(),
                    n => format!(
                        "{n} dispatches per copy, one per chunk the adapter can bind at once"
                    ),
                }
            ),
            Buffers::Memcpy { .. } => "op d2d_memcpy: copy_buffer_to_buffer between two device buffers; a batch is one submission".into(),
            Buffers::Upload { .. } => "op h2d: Queue::write_buffer from an ordinary host Vec<u8> (wgpu copies it into its mapped staging memory, then the device copies it into the destination), one submit per copy, at most two in flight".into(),
            Buffers::Download { .. } => "op d2h: copy_buffer_to_buffer into a MAP_READ buffer, map it, and copy it into an ordinary host Vec<u8>; one copy at a time".into(),
        });
        n.push(if self.op.is_d2d() {
            "bytes: a device-to-device copy of N bytes counts 2N (N read + N written); host<->device copies count N".into()
        } else {
            "bytes: a host<->device copy of N bytes counts N; device-to-device copies count 2N (read + write)".into()
        });
        if !self.op.is_d2d() {
            n.push(format!(
                "memory={}: wgpu has no pinned/pageable host memory distinction; the same path runs for both, with the host side in an ordinary heap buffer",
                self.memory
            ));
        }
        n.push(match &self.timer {
            Some(t) if self.op == Op::D2dKernel => {
                t.note("at the beginning and end of the batch's compute pass")
            }
            Some(t) => t.note("written before the first and after the last copy of the batch"),
            None if self.op.is_d2d() => "time: the runner's wall clock around encode + submit + wait (the adapter's timestamp queries are unavailable or unusable here); it includes the submission overhead".into(),
            None => "time: the runner's wall clock around the whole batch, host-side copies, submits and waits included".into(),
        });
        n.push(
            "verified: after the run the destination is read back and compared word by word with the source pattern".into(),
        );
        about
    }
}

impl Case for BandwidthCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        timed_batch(|| self.batch(iters))
    }

    /// Verifies the destination (untimed) and releases the device.
    fn finish(self: Box<Self>) -> Finished {
        let about = self.about();
        Finished::with(about, self.verify())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_detects_a_corrupted_copy() {
        let good = pattern(4096);
        verify_pattern(&good, "copy").unwrap();
        let mut bad = good.clone();
        bad[1234] ^= 0x10;
        let e = verify_pattern(&bad, "copy").unwrap_err();
        assert!(matches!(e, BenchError::Verify(_)), "{e}");
        assert!(e.to_string().contains("byte offset 1232"), "{e}");
        assert!(e.to_string().contains("1 of 1024 words"), "{e}");
        // A copy that never happened (zeroed destination) and one shifted
        // by a word both fail.
        assert!(verify_pattern(&vec![0; 4096], "copy").is_err());
        let mut shifted = vec![0u8; 4];
        shifted.extend_from_slice(&good[..4092]);
        assert!(verify_pattern(&shifted, "copy").is_err());
        assert!(verify_pattern(&good[..4093], "copy").is_err());
    }

    /// A destination corrupted on the device after the timed copies fails
    /// the record in finish.
    #[test]
    fn finish_detects_a_corrupted_device_copy() {
        let Some(ctx) = crate::wgpu_backend::tests::ctx_with_adapter() else {
            return;
        };
        for op in ["d2d_kernel", "d2d_memcpy", "h2d"] {
            let point = crate::wgpu_backend::tests::bandwidth_point(op, 64 * 1024);
            let mut case = prepare_case(&ctx, &point, None).unwrap();
            case.run(2).unwrap();
            let dst = match &case.buffers {
                Buffers::Kernel { dst, .. }
                | Buffers::Memcpy { dst, .. }
                | Buffers::Upload { dst, .. } => dst,
                Buffers::Download { .. } => unreachable!(),
            };
            case.gpu.queue.write_buffer(dst, 40_000, &[0xEE; 4]);
            let e = Box::new(case)
                .finish()
                .error
                .expect("a corrupted copy fails");
            assert!(
                matches!(e, BenchError::Verify(_)) && e.to_string().contains("byte offset 40000"),
                "{op}: {e}"
            );
        }
        // d2h: the host copy is what gets verified.
        let point = crate::wgpu_backend::tests::bandwidth_point("d2h", 4096);
        let mut case = prepare_case(&ctx, &point, None).unwrap();
        case.run(1).unwrap();
        if let Buffers::Download { host, .. } = &mut case.buffers {
            host[100] ^= 1;
        }
        let e = Box::new(case)
            .finish()
            .error
            .expect("a corrupted copy fails");
        assert!(e.to_string().contains("byte offset 100"), "{e}");
    }

    /// A block larger than the adapter binds at once is copied in chunks,
    /// each a dispatch over its own binding, and all of it arrives.
    #[test]
    fn the_copy_shader_covers_a_block_in_chunks() {
        let Some(ctx) = crate::wgpu_backend::tests::ctx_with_adapter() else {
            return;
        };
        let point = crate::wgpu_backend::tests::bandwidth_point("d2d_kernel", 100_000);
        let mut case = prepare_case(&ctx, &point, Some(32 * 1024)).unwrap();
        let Buffers::Kernel { kernel, .. } = &case.buffers else {
            unreachable!()
        };
        assert_eq!(kernel.chunks.len(), 4);
        case.run(2).unwrap();
        let finished = Box::new(case).finish();
        assert!(finished.error.is_none(), "{:?}", finished.error);
    }
}
