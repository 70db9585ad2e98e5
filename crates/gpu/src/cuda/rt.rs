//! The small runtime the benchmarks use: a device with its own stream,
//! device and host buffers, CUDA-event timers and kernels.
//!
//! Hot paths (launches, copies) call the driver directly through
//! `cudarc::driver::result` with raw pointers: no per-call bookkeeping, as
//! nvbandwidth does. Every resource is freed on drop; cases drop them in
//! `finish` (through [`Gpu::finish`]) and then check the context's deferred
//! error state.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use benchsuite_core::{About, BenchError};
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use super::device::{self, DeviceInfo, describe};
use super::nvrtc::{self, Image};

/// Turns a driver error into a failed-record error naming the call, with
/// the driver's error as its cause.
pub(crate) fn cu(what: impl Into<String>) -> impl FnOnce(DriverError) -> BenchError {
    let what = what.into();
    move |e| BenchError::caused(what, CudaError(e))
}

/// A driver error, shown as `CUDA_ERROR_NO_DEVICE (no CUDA-capable device
/// is detected)` (cudarc's own `Display` is its `Debug`).
#[derive(Debug)]
pub(crate) struct CudaError(pub DriverError);

impl std::fmt::Display for CudaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe(self.0))
    }
}

impl std::error::Error for CudaError {}

/// One device, its (shared, primary) context and stream.
#[derive(Debug)]
pub(crate) struct Gpu {
    /// What the driver reports about the device.
    pub info: DeviceInfo,
    /// The device's primary context, retained for the life of the process.
    pub ctx: Arc<CudaContext>,
    /// A non-blocking stream every operation of the case goes through,
    /// created with the context and kept as long (cases run one at a
    /// time): a stream destroyed when a case is dropped, after its
    /// finish's check, could only report a failure into the next case.
    pub stream: Arc<CudaStream>,
    /// NVML sampling during the record (see [`Gpu::start_sampling`]), or
    /// why there is none; `None` before it starts.
    sampling: Option<Result<super::nvml::Sampler, String>>,
}

impl Gpu {
    /// Opens device `index` for a case that also needs the run-time
    /// libraries `libs` (`libs::nvrtc`, `libs::cublas`). A machine without
    /// a usable driver or device, or without one of `libs`, is a skip; each
    /// library is checked after the driver (no "NVRTC not found" on a
    /// machine without a driver) and before the context, so a record
    /// skipped for a missing library has created no context and allocated
    /// nothing on the device. An index past the last device is an error
    /// listing them.
    pub(crate) fn open(
        index: usize,
        libs: &[fn() -> Result<(), String>],
    ) -> Result<Gpu, BenchError> {
        let drv = device::driver().map_err(BenchError::Skip)?;
        check_driver_version(drv.version).map_err(BenchError::Skip)?;
        for lib in libs {
            lib().map_err(BenchError::Skip)?;
        }
        let info = drv.device(index).map_err(BenchError::Other)?.clone();
        let (ctx, stream) = context(index)?;
        // Errors a drop recorded after the last check: only the cleanup of
        // a case whose prepare had already failed leaves any (finish
        // releases everything before its check). They belong to that
        // failed record, not to this one; a sticky error of a broken
        // context is returned again by the next call anyway.
        let _stale = ctx.check_err();
        Ok(Gpu {
            info,
            ctx,
            stream,
            sampling: None,
        })
    }

    /// Makes the context current on this thread (the runner may call from
    /// a thread that has not used it yet).
    pub(crate) fn bind(&self) -> Result<(), BenchError> {
        self.ctx.bind_to_thread().map_err(cu("cuCtxSetCurrent"))
    }

    /// The raw stream handle.
    pub(crate) fn raw_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Waits for everything queued on the stream.
    pub(crate) fn sync(&self) -> Result<(), BenchError> {
        self.stream.synchronize().map_err(cu("cuStreamSynchronize"))
    }

    /// A case's finish: synchronises, runs `release` (drop every buffer,
    /// event, kernel) also when the synchronise failed, then returns the
    /// first error — the driver's failures to free land in this record, not
    /// in the next case's first call.
    pub(crate) fn finish(&self, release: impl FnOnce()) -> Result<(), BenchError> {
        let synced = self.sync();
        release();
        synced.and(self.check())
    }

    /// Starts reading the device's clocks, power, temperature and
    /// clock-event reasons through NVML on a thread of its own; call at the
    /// end of `prepare`, so setup (buffer fills, the check) is not sampled.
    pub(crate) fn start_sampling(&mut self) {
        self.sampling = Some(super::nvml::Sampler::start(&self.info.pci_bus_id));
    }

    /// Stops the sampling and says in `about` what it saw: the min/median/
    /// max of each reading, a caveat when power or temperature lowered the
    /// clocks, the peak at the median clock beside the peak at maximum
    /// clock; or that NVML was not there. Call in `finish`, before
    /// [`Gpu::finish`].
    pub(crate) fn under_load(&mut self, about: &mut About) {
        match self.sampling.take() {
            None => {}
            Some(Err(why)) => {
                about.note(format!("no clocks, power or temperature under load: {why}"))
            }
            Some(Ok(sampler)) => {
                let samples = sampler.stop();
                let mut load = super::nvml::under_load(&samples.list);
                load.every = samples.every;
                about.note(load.note());
                if let Some(n) = about
                    .peak
                    .as_ref()
                    .and_then(|p| super::nvml::peak_at_median_clock(p, &load))
                {
                    about.note(n);
                }
                if let Some(c) = load.caveat() {
                    about.caveat(c);
                }
            }
        }
    }

    /// Errors the driver recorded while freeing resources (drops cannot
    /// return them); call after dropping a case's buffers.
    pub(crate) fn check(&self) -> Result<(), BenchError> {
        self.ctx.check_err().map_err(cu("releasing GPU resources"))
    }

    /// Free device memory right now, in bytes.
    pub(crate) fn free_memory(&self) -> Result<u64, BenchError> {
        self.ctx
            .mem_get_info()
            .map(|(free, _)| free as u64)
            .map_err(cu("cuMemGetInfo"))
    }

    /// Compiles (once per process) and loads `name` from `src`.
    pub(crate) fn kernel(&self, name: &str, src: &str) -> Result<Kernel, BenchError> {
        super::libs::nvrtc().map_err(BenchError::Skip)?;
        let image = nvrtc::compile(name, src, self.info.cc)?;
        Kernel::load(self, &image, name)
    }
}

/// The oldest driver this crate runs on: CUDA 12.0 (NVIDIA driver 525).
/// NVRTC and cuBLAS are looked for as CUDA 12 or 13 libraries, and their
/// code does not load on an older driver.
pub(crate) const MIN_DRIVER: i32 = 12000;

/// Whether a driver of `cuDriverGetVersion` `version` can run this crate's
/// kernels and cuBLAS, or why not.
pub(crate) fn check_driver_version(version: i32) -> Result<(), String> {
    if version >= MIN_DRIVER {
        Ok(())
    } else {
        Err(format!(
            "the CUDA driver supports CUDA {}.{} only; the gpu benchmarks need a driver for CUDA 12.0 or newer (NVIDIA driver 525+)",
            version / 1000,
            (version % 1000) / 10
        ))
    }
}

/// The context and stream of one device.
type Shared = (Arc<CudaContext>, Arc<CudaStream>);

/// Retains the primary context of `index`, and creates its stream, once per
/// process: creating a context costs 100+ ms and a few hundred MB of device
/// memory, so sweep points share it.
fn context(index: usize) -> Result<Shared, BenchError> {
    static CTX: OnceLock<Mutex<HashMap<usize, Shared>>> = OnceLock::new();
    let mut map = CTX
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(c) = map.get(&index) {
        return Ok(c.clone());
    }
    let c = catch_unwind(|| CudaContext::new(index))
        .map_err(|_| BenchError::Other("the CUDA driver panicked creating a context".into()))?
        .map_err(cu(format!("creating a context on device {index}")))?;
    let stream = c.new_stream().map_err(cu("cuStreamCreate"))?;
    map.insert(index, (c.clone(), stream.clone()));
    Ok((c, stream))
}

/// Device memory from `cuMemAlloc`, freed on drop.
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    ptr: CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
    /// The case's stream, which the untimed uploads and downloads use so
    /// that they are ordered with the case's own work.
    stream: Arc<CudaStream>,
}

impl DeviceBuffer {
    /// Allocates `bytes` (at least 1) of device memory, 256-byte aligned.
    pub(crate) fn new(gpu: &Gpu, bytes: usize) -> Result<DeviceBuffer, BenchError> {
        gpu.bind()?;
        // SAFETY: the context is current; the memory is uninitialised bytes,
        // which is all this type exposes (raw pointers and byte copies).
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
            .map_err(cu(format!("cuMemAlloc of {bytes} bytes")))?;
        Ok(DeviceBuffer {
            ptr,
            bytes,
            ctx: gpu.ctx.clone(),
            stream: gpu.stream.clone(),
        })
    }

    /// The device address.
    pub(crate) fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The size asked for, in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// Copies `data` to `offset` on the case's stream and waits for the
    /// copy to land (untimed setup).
    ///
    /// Not `cuMemcpyHtoD`: that one runs on the legacy default stream,
    /// which a non-blocking stream does not wait for, and from pageable
    /// memory it may return before its DMA has reached the device, so a
    /// kernel queued next on the case's stream could read stale data.
    pub(crate) fn upload(&self, offset: usize, data: &[u8]) -> Result<(), BenchError> {
        assert!(offset + data.len() <= self.bytes, "upload out of bounds");
        self.ctx.bind_to_thread().map_err(cu("cuCtxSetCurrent"))?;
        // SAFETY: the destination range lies inside this allocation (checked
        // above) and `data` is a live host slice that outlives the copy: the
        // stream is synchronised before returning.
        unsafe {
            result::memcpy_htod_async(self.ptr + offset as u64, data, self.stream.cu_stream())
        }
        .map_err(cu("cuMemcpyHtoDAsync"))?;
        self.stream.synchronize().map_err(cu("cuStreamSynchronize"))
    }

    /// Copies from `offset` into `out` on the case's stream, after the
    /// work queued on it, and waits (untimed checks).
    pub(crate) fn download(&self, offset: usize, out: &mut [u8]) -> Result<(), BenchError> {
        assert!(offset + out.len() <= self.bytes, "download out of bounds");
        self.ctx.bind_to_thread().map_err(cu("cuCtxSetCurrent"))?;
        // SAFETY: the source range lies inside this allocation and `out` is a
        // live, exclusively borrowed host slice that outlives the copy: the
        // stream is synchronised before returning.
        unsafe {
            result::memcpy_dtoh_async(out, self.ptr + offset as u64, self.stream.cu_stream())
        }
        .map_err(cu("cuMemcpyDtoHAsync"))?;
        self.stream.synchronize().map_err(cu("cuStreamSynchronize"))
    }
}

/// Frees the memory (a case's finish drops its buffers before the error
/// check, see [`Gpu::finish`]); a failure is recorded in the context for
/// [`Gpu::check`].
impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: `ptr` came from cuMemAlloc and is freed once, here; cases
        // synchronise their stream before dropping buffers, so no queued
        // work still uses it (where that synchronise fails, the context has
        // failed and runs no more work).
        self.ctx.record_err(unsafe { result::free_sync(self.ptr) });
    }
}

/// Host memory for transfers: page-locked (`cuMemHostAlloc`, the DMA engine
/// reads it directly) or pageable (ordinary, page-aligned memory the driver
/// stages through its own pinned buffers).
#[derive(Debug)]
pub(crate) struct HostBuffer {
    ptr: *mut u8,
    bytes: usize,
    pinned: Option<Arc<CudaContext>>,
}

// SAFETY: the buffer owns its memory exclusively (like a Vec<u8>); the raw
// pointer is only dereferenced through &self/&mut self methods.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    /// Allocates `bytes` (at least 1), pinned or pageable, and touches every
    /// page so no first-touch fault lands in a timed copy.
    pub(crate) fn new(gpu: &Gpu, bytes: usize, pinned: bool) -> Result<HostBuffer, BenchError> {
        let n = bytes.max(1);
        let (ptr, ctx) = if pinned {
            gpu.bind()?;
            // SAFETY: the context is current; the returned memory is owned by
            // this buffer and freed with cuMemFreeHost on drop.
            let p = unsafe { result::malloc_host(n, sys::CU_MEMHOSTALLOC_PORTABLE) }
                .map_err(cu(format!("cuMemHostAlloc of {bytes} bytes")))?;
            (p as *mut u8, Some(gpu.ctx.clone()))
        } else {
            let layout = Self::layout(n)?;
            // SAFETY: the layout has a nonzero size.
            let p = unsafe { std::alloc::alloc(layout) };
            if p.is_null() {
                return Err(BenchError::Other(format!(
                    "cannot allocate {bytes} bytes of host memory"
                )));
            }
            (p, None)
        };
        // SAFETY: `ptr` points to `n` writable bytes just allocated; writing
        // them initialises the buffer and faults every page in now.
        unsafe { std::ptr::write_bytes(ptr, 0, n) };
        Ok(HostBuffer {
            ptr,
            bytes: n,
            pinned: ctx,
        })
    }

    fn layout(n: usize) -> Result<Layout, BenchError> {
        Layout::from_size_align(n, 4096)
            .map_err(|e| BenchError::caused(format!("host buffer of {n} bytes"), e))
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `bytes` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// The bytes, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        match &self.pinned {
            Some(ctx) => {
                ctx.record_err(ctx.bind_to_thread());
                // SAFETY: `ptr` came from cuMemHostAlloc and is freed once,
                // after the case synchronised its stream.
                ctx.record_err(unsafe { result::free_host(self.ptr as *mut c_void) });
            }
            None => {
                if let Ok(layout) = Self::layout(self.bytes) {
                    // SAFETY: allocated in `new` with this same layout.
                    unsafe { std::alloc::dealloc(self.ptr, layout) };
                }
            }
        }
    }
}

/// Two CUDA events bracketing work on a stream: device time, not host time.
/// Dropping it destroys the events (a failure is recorded in the context
/// for [`Gpu::check`]).
#[derive(Debug)]
pub(crate) struct Timer {
    start: CudaEvent,
    stop: CudaEvent,
}

impl Timer {
    /// Two timing events.
    pub(crate) fn new(gpu: &Gpu) -> Result<Timer, BenchError> {
        let ev = || {
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cu("cuEventCreate"))
        };
        Ok(Timer {
            start: ev()?,
            stop: ev()?,
        })
    }

    /// Records the start on `gpu`'s stream.
    pub(crate) fn start(&self, gpu: &Gpu) -> Result<(), BenchError> {
        self.start.record(&gpu.stream).map_err(cu("cuEventRecord"))
    }

    /// Records the end, waits for it and returns the time between the two
    /// (the events' resolution is about half a microsecond).
    pub(crate) fn stop(&self, gpu: &Gpu) -> Result<Duration, BenchError> {
        self.stop.record(&gpu.stream).map_err(cu("cuEventRecord"))?;
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(cu("cuEventElapsedTime"))?;
        Ok(Duration::from_secs_f64(f64::from(ms).max(0.0) / 1e3))
    }
}

/// A loaded kernel; dropping it unloads the module (a failure is recorded
/// in the context for [`Gpu::check`]).
#[derive(Debug)]
pub(crate) struct Kernel {
    /// The function (dropped before the module holding it).
    func: CudaFunction,
    /// The module holding the function.
    _module: Arc<CudaModule>,
    /// What NVRTC compiled for: `sm_90` (machine code) or `compute_90`
    /// (PTX the driver compiled).
    pub target: String,
}

impl Kernel {
    /// Loads `name` from a compiled image into `gpu`'s context.
    pub(crate) fn load(gpu: &Gpu, image: &Image, name: &str) -> Result<Kernel, BenchError> {
        let module = catch_unwind(AssertUnwindSafe(|| {
            gpu.ctx.load_module(Ptx::from_binary(image.bytes.clone()))
        }))
        .map_err(|_| BenchError::Other("the CUDA driver panicked loading a module".into()))?
        .map_err(|e| {
            let hint = if image.is_cubin() {
                ""
            } else {
                "; the kernel was compiled to PTX, which needs a driver at least as new as NVRTC"
            };
            BenchError::caused(
                format!("cuModuleLoadData ({}{hint})", image.target),
                CudaError(e),
            )
        })?;
        let func = module
            .load_function(name)
            .map_err(cu(format!("cuModuleGetFunction {name}")))?;
        Ok(Kernel {
            func,
            _module: module,
            target: image.target.clone(),
        })
    }

    /// Blocks of `threads` threads one SM holds at once for this kernel.
    pub(crate) fn occupancy(&self, threads: u32) -> Result<u32, BenchError> {
        self.func
            .occupancy_max_active_blocks_per_multiprocessor(threads, 0, None)
            .map_err(cu("cuOccupancyMaxActiveBlocksPerMultiprocessor"))
    }

    /// Queues the kernel on `gpu`'s stream.
    ///
    /// # Safety
    /// `params` must point to one value per kernel parameter, each of the
    /// type the kernel declares, alive until this call returns; pointers
    /// among them must address device memory the kernel may access for as
    /// long as it runs.
    pub(crate) unsafe fn launch(
        &self,
        gpu: &Gpu,
        grid: u32,
        block: u32,
        params: &mut [*mut c_void],
    ) -> Result<(), BenchError> {
        let func = self.func.cu_function();
        // SAFETY: forwarded from this function's contract; the function
        // handle is alive (the module is held by `self`).
        unsafe {
            result::launch_kernel(
                func,
                (grid, 1, 1),
                (block, 1, 1),
                0,
                gpu.raw_stream(),
                params,
            )
        }
        .map_err(cu("cuLaunchKernel"))
    }
}

/// A pointer to `v` as a kernel parameter.
pub(crate) fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_older_than_cuda_12_is_a_skip_reason_naming_its_version() {
        assert!(check_driver_version(12000).is_ok());
        assert!(check_driver_version(12020).is_ok());
        assert!(check_driver_version(13000).is_ok());
        let e = check_driver_version(11080).unwrap_err();
        assert!(e.contains("CUDA 11.8") && e.contains("12.0"), "{e}");
    }

    #[test]
    fn a_missing_library_is_a_skip_checked_after_the_driver_before_the_context() {
        let missing: fn() -> Result<(), String> = || Err("NVRTC not found: test".into());
        let reason = match Gpu::open(0, &[missing]) {
            Err(BenchError::Skip(r)) => r,
            other => panic!("expected a skip, got {other:?}"),
        };
        match device::driver() {
            // No driver here: its reason, not the library's.
            Err(no_driver) => assert_eq!(reason, no_driver),
            // A driver: the library's reason, before any context exists.
            Ok(_) => assert_eq!(reason, "NVRTC not found: test"),
        }
    }
}
