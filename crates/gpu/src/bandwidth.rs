//! `gpu.bandwidth`: device-to-device copies (a copy kernel, `cuMemcpyDtoD`)
//! and host<->device copies (pinned or pageable host memory), from one byte
//! (launch and latency cost) to gigabytes (bandwidth).

use benchsuite_core::units::format_size;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Finished, Meta, MetricSpec,
    ParamSpec, Peak, Point, Probe, Value, Work,
};
use cudarc::driver::result;

use crate::backend::{self, WgpuKind};
use crate::cuda::{DeviceBuffer, Gpu, HostBuffer, Kernel, Timer, arg, cu};
use crate::kernels::MEMORY_SOURCE;
use crate::params::{self, CopyOp as Op, Memory};
use crate::peak;

/// Device-memory and host-link bandwidth; see the crate docs.
#[derive(Debug, Default)]
pub struct Bandwidth;

/// Largest `block` accepted by the parser; the real bound is the device's
/// memory, checked in `validate`.
const MAX_BLOCK: u64 = 1 << 40;

/// Threads per block of the copy kernel.
const COPY_THREADS: u32 = 256;

/// Verification and pattern chunk (bounded host memory for any block).
const CHUNK: usize = 64 << 20;

impl Benchmark for Bandwidth {
    fn meta(&self) -> Meta {
        Meta {
            id: "gpu.bandwidth".into(),
            description: "GPU memory copies: device-to-device (copy kernel, cuMemcpy) and host<->device (pinned, pageable), 1 B to GiBs, against the HBM/PCIe peak".into(),
            params: vec![
                ParamSpec::choice_of(
                    "op",
                    "d2d_kernel (copy kernel) | d2d_memcpy (cuMemcpyDtoD) | h2d | d2h (cuMemcpy across the host link)",
                    Op::D2dKernel,
                ),
                ParamSpec::size(
                    "block",
                    "bytes per copy: small blocks show the per-copy launch/latency cost, large ones the bandwidth (device-to-device needs 2 × block of device memory)",
                    1,
                    MAX_BLOCK,
                    256 << 20,
                )
                .with_smoke(Value::Int(64 << 10)),
                ParamSpec::choice_of(
                    "memory",
                    "host memory for h2d/d2h: pinned (page-locked, cuMemHostAlloc; DMA reads it directly) | pageable (ordinary memory the driver stages through its own pinned buffers)",
                    Memory::Pinned,
                ),
                params::device(true),
                params::backend(),
            ],
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::time_per_op("time_per_op").derived(),
            ],
        }
    }

    /// Ready: CUDA or wgpu is decided per point in `prepare`.
    fn probe(&self, _ctx: &Context) -> Probe {
        Probe::Ready
    }

    fn validate(&self, ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let Some(info) = params::cuda_device(point)? else {
            return Ok(());
        };
        let op = point.choice("op").unwrap_or(Op::D2dKernel);
        let block = point.get("block").and_then(|v| v.as_u64()).unwrap_or(0);
        check_fits(op, block, info, ctx.host.memory_bytes)
            .map_err(|reason| params::invalid("block", point, reason))
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(backend::host_facts(ctx))
    }

    /// A torch `copy_` of the same bytes by python3.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::reference::copy(point)
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        if !params::is_cuda(point) {
            return backend::wgpu_case(ctx, point, WgpuKind::Bandwidth);
        }
        prepare(point, crate::cuda::device::virtualized(&ctx.host))
    }
}

/// The most blocks one launch of the copy kernel gets: 2^20 blocks of
/// [`COPY_THREADS`] threads copy 4 GiB, a few milliseconds, so the launch
/// gap of a chunked copy is under 0.1% and the grid far below CUDA's
/// 2^31 - 1 blocks.
pub(crate) const COPY_MAX_GRID: u32 = 1 << 20;

/// The launches of the copy kernel for `block` bytes, as (first 16-byte
/// vector, blocks of [`COPY_THREADS`] threads): one vector per thread over
/// the whole buffer, split into launches of at most `max_grid` blocks. The
/// first launch starts at vector 0 and its threads 0..15 copy the tail
/// under 16 bytes, so a block under 16 bytes is one launch of one block.
pub(crate) fn copy_launches(block: u64, max_grid: u32) -> Vec<(u64, u32)> {
    const _: () = assert!(COPY_THREADS >= 16, "the tail needs 16 threads");
    let per_block = u64::from(COPY_THREADS);
    let per_launch = u64::from(max_grid.max(1)) * per_block;
    let vectors = block / 16;
    let mut out = Vec::new();
    let mut first = 0;
    loop {
        let n = (vectors - first).min(per_launch);
        // At most max_grid, so it fits u32.
        out.push((first, n.div_ceil(per_block).max(1) as u32));
        first += n;
        if first >= vectors {
            return out;
        }
    }
}

/// Whether `block` fits the device (and the host, for host copies).
pub(crate) fn check_fits(
    op: Op,
    block: u64,
    info: &crate::cuda::DeviceInfo,
    host_memory: Option<u64>,
) -> Result<(), String> {
    let need = op.device_bytes(block);
    if need > info.memory_bytes {
        return Err(format!(
            "{} needs {} of device memory{}, more than the {} of device {} ({})",
            format_size(block),
            params::gib(need),
            if op.is_d2d() {
                " (source and destination)"
            } else {
                ""
            },
            params::gib(info.memory_bytes),
            info.index,
            info.name
        ));
    }
    if let Some(host) = host_memory.filter(|h| !op.is_d2d() && block > *h) {
        return Err(format!(
            "{} of host buffer is more than this machine's {} of memory",
            format_size(block),
            params::gib(host)
        ));
    }
    Ok(())
}

/// The byte at `offset` of the test pattern: a per-8-byte hash, so a copy
/// to the wrong place or a stale buffer is caught.
pub(crate) fn fill_pattern(buf: &mut [u8], offset: u64) {
    debug_assert_eq!(offset % 8, 0);
    for (k, chunk) in buf.chunks_mut(8).enumerate() {
        let w = splitmix(offset / 8 + k as u64).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The first offset where `got` differs from the pattern at `offset`.
pub(crate) fn check_pattern(got: &[u8], offset: u64) -> Option<u64> {
    let mut want = vec![0u8; got.len()];
    fill_pattern(&mut want, offset);
    got.iter()
        .zip(&want)
        .position(|(a, b)| a != b)
        .map(|i| offset + i as u64)
}

/// What each op copies between; fields drop in declaration order.
enum Bufs {
    /// `d2d_kernel`.
    Kernel {
        src: DeviceBuffer,
        dst: DeviceBuffer,
        kernel: Kernel,
    },
    /// `d2d_memcpy`.
    Memcpy {
        src: DeviceBuffer,
        dst: DeviceBuffer,
    },
    /// `h2d`.
    Upload { dst: DeviceBuffer, host: HostBuffer },
    /// `d2h`.
    Download { src: DeviceBuffer, host: HostBuffer },
}

/// Fields drop in declaration order: buffers before `gpu`.
struct CopyCase {
    op: Op,
    block: usize,
    timer: Timer,
    bufs: Bufs,
    /// `d2d_kernel`: (first vector, blocks) per launch, see `copy_launches`.
    launches: Vec<(u64, u32)>,
    /// Pageable host copies are timed by the host clock (see `run`).
    wall_clock: bool,
    about: About,
    gpu: Gpu,
}

fn prepare(point: &Point, virtualized: bool) -> Result<Box<dyn Case>, BenchError> {
    let op: Op = point.choice("op")?;
    let block = point.u64("block")?;
    let pinned = point.choice::<Memory>("memory")? == Memory::Pinned;
    let libs: &[fn() -> Result<(), String>] = if op == Op::D2dKernel {
        &[crate::cuda::libs::nvrtc]
    } else {
        &[]
    };
    let gpu = Gpu::open(point.u64("device")? as usize, libs)?;
    let info = gpu.info.clone();
    check_fits(op, block, &info, None).map_err(BenchError::Failed)?;
    let free = gpu.free_memory()?;
    if op.device_bytes(block) > free {
        return Err(BenchError::Failed(format!(
            "{} needs {} of device memory but only {} is free on device {}",
            format_size(block),
            params::gib(op.device_bytes(block)),
            params::gib(free),
            info.index
        )));
    }
    let block = usize::try_from(block).map_err(|_| {
        BenchError::Failed("block does not fit this machine's address space".into())
    })?;
    let timer = Timer::new(&gpu)?;
    let mut launches = Vec::new();
    let bufs = match op {
        Op::D2dKernel | Op::D2dMemcpy => {
            let src = DeviceBuffer::new(&gpu, block)?;
            let dst = DeviceBuffer::new(&gpu, block)?;
            if op == Op::D2dKernel {
                let kernel = gpu.kernel("copy", MEMORY_SOURCE)?;
                launches = copy_launches(block as u64, COPY_MAX_GRID);
                Bufs::Kernel { src, dst, kernel }
            } else {
                Bufs::Memcpy { src, dst }
            }
        }
        Op::H2d => {
            let host = HostBuffer::new(&gpu, block, pinned)?;
            let dst = DeviceBuffer::new(&gpu, block)?;
            Bufs::Upload { dst, host }
        }
        Op::D2h => {
            let src = DeviceBuffer::new(&gpu, block)?;
            let host = HostBuffer::new(&gpu, block, pinned)?;
            Bufs::Download { src, host }
        }
    };
    let mut case = CopyCase {
        op,
        block,
        timer,
        bufs,
        launches,
        wall_clock: !op.is_d2d() && !pinned,
        about: About::default(),
        gpu,
    };

    // Fill the source, copy once, check the destination: outside any timed
    // region, and it warms the path (page mappings, the kernel's first
    // launch) before the runner's own warm-up.
    case.fill_source()?;
    case.copy_once()?;
    case.gpu.sync()?;
    case.verify()?;
    describe(&mut case, pinned, virtualized);
    case.gpu.start_sampling();
    Ok(Box::new(case))
}

fn describe(case: &mut CopyCase, pinned: bool, virtualized: bool) {
    let info = &case.gpu.info;
    let block = case.block as u64;
    case.about.note(info.describe());
    case.about.note(match case.op {
        Op::D2dKernel | Op::D2dMemcpy => format!(
            "bytes counted once per direction: a device-to-device copy of {} counts {} ({} read + {} written, as STREAM copy and the memory peak count)",
            format_size(block),
            format_size(2 * block),
            format_size(block),
            format_size(block)
        ),
        Op::H2d | Op::D2h => format!(
            "bytes counted once per direction: a {} copy of {} counts {}",
            if case.op == Op::H2d { "host-to-device" } else { "device-to-host" },
            format_size(block),
            format_size(block)
        ),
    });
    case.about.note(match &case.bufs {
        Bufs::Kernel { kernel, .. } => copy_kernel_note(&kernel.target, block, &case.launches),
        Bufs::Memcpy { .. } => "cuMemcpyDtoDAsync on a non-blocking stream".to_string(),
        Bufs::Upload { .. } | Bufs::Download { .. } => format!(
            "cuMemcpy{}Async with {} host memory",
            if case.op == Op::H2d { "HtoD" } else { "DtoH" },
            if pinned {
                "pinned (cuMemHostAlloc)"
            } else {
                "pageable"
            }
        ),
    });
    case.about.note(if case.wall_clock {
        "time: the host clock around a batch of back-to-back copies and a final stream synchronise (pageable copies are staged by the host, so device events would miss part of the work)"
    } else {
        "time: CUDA events around a batch of back-to-back copies"
    });
    case.about.note(
        "the destination was checked byte for byte against the source pattern after one untimed copy",
    );
    match peak_for(case.op, block, info, virtualized) {
        Ok(p) => case.about.peak = Some(p),
        Err(w) => case.about.caveat(w),
    }
}

/// What the copy kernel is and how it was launched, for the record.
pub(crate) fn copy_kernel_note(target: &str, block: u64, launches: &[(u64, u32)]) -> String {
    let blocks: u64 = launches.iter().map(|&(_, b)| u64::from(b)).sum();
    let tail = block % 16;
    format!(
        "copy kernel (NVRTC, {target}): one 16-byte vector (uint4) per thread over the whole buffer, no loop; {blocks} blocks × {COPY_THREADS} threads in {} launch{} of at most {COPY_MAX_GRID} blocks{}",
        launches.len(),
        if launches.len() == 1 { "" } else { "es" },
        if tail == 0 {
            String::new()
        } else {
            format!(
                "; the first launch's threads 0..{} copy the {tail}-byte tail",
                tail - 1
            )
        }
    )
}

/// The peak a copy is measured against, or why none applies: device
/// memory for device copies whose buffers are well beyond the L2 cache,
/// the PCIe link for host copies (in a virtual machine the GPU's own link,
/// see `PcieLink::usable`); none for a GPU whose host link is a coherent
/// NVLink (GH200: ~450 GB/s per direction, 7× a PCIe Gen5 x16 link).
pub(crate) fn peak_for(
    op: Op,
    block: u64,
    info: &crate::cuda::DeviceInfo,
    virtualized: bool,
) -> Result<Peak, String> {
    if op.is_d2d() {
        if block < 2 * info.l2_bytes {
            return Err(format!(
                "source and destination ({}) {} the {} L2 cache: this measures the L2 at least in part, not device memory alone, so no device-memory peak applies; use block ≥ {} for device memory",
                format_size(2 * block),
                if 2 * block <= info.l2_bytes {
                    "fit in"
                } else {
                    "are not much larger than"
                },
                format_size(info.l2_bytes),
                format_size(2 * info.l2_bytes)
            ));
        }
        if info.mem_clock_khz == 0 || info.bus_width_bits == 0 {
            return Err(
                "no device-memory peak: the driver reports no memory clock or bus width".into(),
            );
        }
        return Ok(peak::memory_peak(info.mem_clock_khz, info.bus_width_bits));
    }
    if info.integrated {
        return Err("integrated GPU: host and device share memory, so no link peak applies".into());
    }
    if info.host_page_tables {
        return Err("the host link is a cache-coherent NVLink, not PCIe (the driver reports that the GPU uses the host's page tables, as on Grace Hopper's NVLink-C2C), so no PCIe peak applies".into());
    }
    info.pcie
        .as_ref()
        .and_then(|l| {
            let (gts, width) = l.usable(!virtualized);
            peak::pcie_peak(gts, width)
        })
        .ok_or_else(|| {
            format!(
                "no link peak: the PCIe link of {} is not readable in sysfs",
                info.pci_bus_id
            )
        })
}

impl CopyCase {
    fn fill_source(&mut self) -> Result<(), BenchError> {
        let src = match &mut self.bufs {
            Bufs::Upload { host, .. } => {
                for (i, c) in host.as_mut_slice().chunks_mut(CHUNK).enumerate() {
                    fill_pattern(c, (i * CHUNK) as u64);
                }
                None
            }
            Bufs::Kernel { src, .. } | Bufs::Memcpy { src, .. } | Bufs::Download { src, .. } => {
                Some(src)
            }
        };
        if let Some(src) = src {
            let mut buf = vec![0u8; CHUNK.min(self.block)];
            let mut off = 0;
            while off < self.block {
                let n = CHUNK.min(self.block - off);
                fill_pattern(&mut buf[..n], off as u64);
                src.upload(off, &buf[..n])?;
                off += n;
            }
        }
        Ok(())
    }

    fn verify(&self) -> Result<(), BenchError> {
        let bad = match &self.bufs {
            Bufs::Kernel { dst, .. } | Bufs::Memcpy { dst, .. } | Bufs::Upload { dst, .. } => {
                let mut buf = vec![0u8; CHUNK.min(self.block)];
                let mut off = 0;
                let mut bad = None;
                while off < self.block && bad.is_none() {
                    let n = CHUNK.min(self.block - off);
                    dst.download(off, &mut buf[..n])?;
                    bad = check_pattern(&buf[..n], off as u64);
                    off += n;
                }
                bad
            }
            Bufs::Download { host, .. } => host
                .as_slice()
                .chunks(CHUNK)
                .enumerate()
                .find_map(|(i, c)| check_pattern(c, (i * CHUNK) as u64)),
        };
        match bad {
            None => Ok(()),
            Some(at) => Err(BenchError::Verify(format!(
                "after one {} copy of {} the destination differs from the source at byte {at}",
                self.op,
                format_size(self.block as u64)
            ))),
        }
    }

    fn copy_once(&mut self) -> Result<(), BenchError> {
        let n = self.block;
        let stream = self.gpu.raw_stream();
        match &mut self.bufs {
            Bufs::Kernel { src, dst, kernel } => {
                for &(first, grid) in &self.launches {
                    let (mut s, mut d, mut f, mut len) = (src.ptr(), dst.ptr(), first, n as u64);
                    let mut p = [arg(&mut s), arg(&mut d), arg(&mut f), arg(&mut len)];
                    // SAFETY: copy(const u8 *src, u8 *dst, u64 first, u64
                    // nbytes): the parameters match in order and type; both
                    // buffers hold `n` bytes (the kernel touches no byte at
                    // or past `nbytes`) and stay allocated until finish,
                    // which synchronises the stream first.
                    unsafe { kernel.launch(&self.gpu, grid, COPY_THREADS, &mut p) }?;
                }
                Ok(())
            }
            Bufs::Memcpy { src, dst } => {
                // SAFETY: both device ranges hold `n` bytes and outlive the
                // queued copy (finish synchronises before freeing).
                unsafe { result::memcpy_dtod_async(dst.ptr(), src.ptr(), n, stream) }
                    .map_err(cu("cuMemcpyDtoDAsync"))
            }
            Bufs::Upload { dst, host } => {
                // SAFETY: the host buffer holds `n` bytes and is neither
                // written nor freed while copies are queued (runs end with a
                // synchronise); the device range holds `n` bytes.
                unsafe { result::memcpy_htod_async(dst.ptr(), &host.as_slice()[..n], stream) }
                    .map_err(cu("cuMemcpyHtoDAsync"))
            }
            Bufs::Download { src, host } => {
                // SAFETY: as above; the host buffer is not read by the host
                // until the stream has been synchronised.
                unsafe {
                    result::memcpy_dtoh_async(&mut host.as_mut_slice()[..n], src.ptr(), stream)
                }
                .map_err(cu("cuMemcpyDtoHAsync"))
            }
        }
    }
}

impl Case for CopyCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.gpu.bind()?;
        if !self.wall_clock {
            self.timer.start(&self.gpu)?;
        }
        for _ in 0..iters {
            self.copy_once()?;
        }
        let elapsed = if self.wall_clock {
            self.gpu.sync()?;
            None
        } else {
            Some(self.timer.stop(&self.gpu)?)
        };
        Ok(Work {
            ops: iters,
            bytes: iters * self.op.counted_bytes(self.block as u64),
            elapsed,
            ..Work::default()
        })
    }

    /// Frees everything through [`Gpu::finish`](crate::cuda::rt::Gpu::finish).
    fn finish(self: Box<Self>) -> Finished {
        let CopyCase {
            timer,
            bufs,
            mut about,
            mut gpu,
            ..
        } = *self;
        gpu.under_load(&mut about);
        let released = gpu.finish(|| drop((bufs, timer)));
        Finished::with(about, released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::device::tests::h100;
    use benchsuite_core::Choice;

    #[test]
    fn a_device_copy_counts_both_directions_a_host_copy_one() {
        assert_eq!(Op::D2dKernel.counted_bytes(1 << 20), 2 << 20);
        assert_eq!(Op::D2dMemcpy.counted_bytes(1), 2);
        assert_eq!(Op::H2d.counted_bytes(1 << 20), 1 << 20);
        assert_eq!(Op::D2h.counted_bytes(7), 7);
        for o in Op::NAMES {
            assert_eq!(Op::from_name(o).map(Op::name), Some(*o));
        }
    }

    #[test]
    fn the_copy_launches_cover_every_vector_once_and_the_tail() {
        // Under 16 bytes: one block, whose threads 0..15 copy the tail.
        assert_eq!(copy_launches(0, COPY_MAX_GRID), [(0, 1)]);
        assert_eq!(copy_launches(1, COPY_MAX_GRID), [(0, 1)]);
        assert_eq!(copy_launches(15, COPY_MAX_GRID), [(0, 1)]);
        // One vector per thread: n/256 blocks, rounded up.
        assert_eq!(copy_launches(16 * 256 * 3, COPY_MAX_GRID), [(0, 3)]);
        assert_eq!(copy_launches(16 * 256 * 3 + 1, COPY_MAX_GRID), [(0, 3)]);
        assert_eq!(copy_launches(16 * 256 * 3 + 16, COPY_MAX_GRID), [(0, 4)]);
        // 256 MiB: 65536 blocks in one launch (grid = n/256, the measured
        // 4.16 TB/s on an H200), not one resident wave.
        assert_eq!(copy_launches(256 << 20, COPY_MAX_GRID), [(0, 65536)]);
        // 4 GiB is one launch of 2^20 blocks; 4 GiB + 17 B two, the second
        // with the last vector (the tail is the first launch's).
        assert_eq!(copy_launches(4 << 30, COPY_MAX_GRID), [(0, 1 << 20)]);
        assert_eq!(
            copy_launches((4 << 30) + 17, COPY_MAX_GRID),
            [(0, 1 << 20), (1 << 28, 1)]
        );
        // Any size: each launch under CUDA's grid limit, the vectors
        // covered exactly once, in order.
        for (block, max) in [(1u64 << 40, COPY_MAX_GRID), (12345 * 16 + 9, 7), (4096, 1)] {
            let l = copy_launches(block, max);
            let mut next = 0;
            for &(first, grid) in &l {
                assert_eq!(first, next, "{block} {max}");
                assert!(grid >= 1 && grid <= max && grid <= i32::MAX as u32);
                next = (first + u64::from(grid) * u64::from(COPY_THREADS)).min(block / 16);
            }
            assert_eq!(next, block / 16, "{block} {max}");
            assert_eq!(l[0].0, 0, "the tail launch");
        }
        assert!(copy_launches(1 << 40, COPY_MAX_GRID).len() == 256);
    }

    #[test]
    fn the_record_says_what_the_copy_kernel_is() {
        let n = copy_kernel_note("sm_90", 256 << 20, &copy_launches(256 << 20, COPY_MAX_GRID));
        assert!(
            n.contains("one 16-byte vector (uint4) per thread")
                && n.contains("65536 blocks × 256 threads in 1 launch ")
                && !n.contains("tail"),
            "{n}"
        );
        let n = copy_kernel_note("sm_90", 4099, &copy_launches(4099, COPY_MAX_GRID));
        assert!(n.contains("threads 0..2 copy the 3-byte tail"), "{n}");
        let n = copy_kernel_note("sm_90", 8 << 30, &copy_launches(8 << 30, COPY_MAX_GRID));
        assert!(n.contains("in 2 launches"), "{n}");
    }

    #[test]
    fn a_block_larger_than_the_device_is_refused_before_allocating() {
        let d = h100();
        let e = check_fits(Op::D2dKernel, 64 << 30, &d, None).unwrap_err();
        assert!(
            e.contains("128.0 GiB") && e.contains("source and destination"),
            "{e}"
        );
        assert!(e.contains("NVIDIA H100"), "{e}");
        assert!(check_fits(Op::D2dKernel, 32 << 30, &d, None).is_ok());
        // A host copy needs the block once on the device, once on the host.
        assert!(check_fits(Op::H2d, 64 << 30, &d, None).is_ok());
        let e = check_fits(Op::H2d, 64 << 30, &d, Some(16 << 30)).unwrap_err();
        assert!(e.contains("host"), "{e}");
    }

    #[test]
    fn peaks_apply_beyond_the_l2_and_across_the_link() {
        let d = h100();
        let e = peak_for(Op::D2dKernel, 16 << 20, &d, false).unwrap_err();
        assert!(e.contains("fit in") && e.contains("L2"), "{e}");
        let e = peak_for(Op::D2dMemcpy, 64 << 20, &d, false).unwrap_err();
        assert!(e.contains("not much larger"), "{e}");
        let p = peak_for(Op::D2dKernel, 256 << 20, &d, false).unwrap();
        assert!((p.value / 3.352e12 - 1.0).abs() < 0.002, "{}", p.value);
        let p = peak_for(Op::H2d, 1, &d, false).unwrap();
        assert!((p.value / 63.02e9 - 1.0).abs() < 0.001, "{}", p.value);
        assert_eq!(p.inputs["lanes"].source, "sysfs");
        // Behind a Gen4 port the link is Gen4, except that a VM's port is
        // emulated and the GPU's own Gen5 link counts.
        let mut g4 = d.clone();
        if let Some(l) = g4.pcie.as_mut() {
            l.port_gts = Some(16.0);
        }
        let p = peak_for(Op::H2d, 1, &g4, false).unwrap();
        assert!((p.value / 31.51e9 - 1.0).abs() < 0.001, "{}", p.value);
        let p = peak_for(Op::H2d, 1, &g4, true).unwrap();
        assert!((p.value / 63.02e9 - 1.0).abs() < 0.001, "{}", p.value);
        let mut j = d.clone();
        j.integrated = true;
        assert!(
            peak_for(Op::D2h, 1, &j, false)
                .unwrap_err()
                .contains("integrated")
        );
        j.integrated = false;
        // Grace Hopper: the sysfs PCIe link is not the path host copies
        // take (NVLink-C2C is), so it is no bound for them.
        j.host_page_tables = true;
        let e = peak_for(Op::H2d, 1 << 30, &j, false).unwrap_err();
        assert!(e.contains("NVLink") && e.contains("no PCIe peak"), "{e}");
        // Device copies still have the memory peak.
        assert!(peak_for(Op::D2dKernel, 256 << 20, &j, false).is_ok());
        j.host_page_tables = false;
        j.pcie = None;
        assert!(
            peak_for(Op::D2h, 1, &j, false)
                .unwrap_err()
                .contains("sysfs")
        );
    }

    #[test]
    fn the_pattern_is_position_dependent_and_checks_catch_a_shift() {
        let mut a = vec![0u8; 4096 + 5];
        fill_pattern(&mut a, 0);
        assert_eq!(check_pattern(&a, 0), None);
        // The same bytes read at another offset do not match.
        assert!(check_pattern(&a[8..], 0).is_some());
        let mut b = a.clone();
        b[1000] ^= 1;
        assert_eq!(check_pattern(&b, 0), Some(1000));
        // Filling in chunks equals filling at once.
        let mut c = vec![0u8; 4096 + 5];
        let (x, y) = c.split_at_mut(2048);
        fill_pattern(x, 0);
        fill_pattern(y, 2048);
        assert_eq!(a, c);
        assert!(
            a.iter().filter(|&&v| v == 0).count() < 64,
            "a mostly nonzero pattern"
        );
    }

    #[test]
    fn the_contract_params_and_metrics_are_declared() {
        let m = Bandwidth.meta();
        for p in ["op", "block", "memory", "device", "backend"] {
            assert!(m.param(p).is_some(), "{p}");
        }
        assert_eq!(m.metrics[0].name, "bandwidth");
        assert_eq!(m.metrics[1].name, "time_per_op");
        let smoke = m.param("block").unwrap().smoke_value().as_u64().unwrap();
        assert!(smoke <= 1 << 20);
    }
}
