//! What both wgpu cases stand on: the process's instance and adapters, an
//! opened adapter ([`Gpu`]: device, queue and the errors wgpu reported),
//! its timestamps ([`Timer`]), the timing of one batch and the parameters
//! both read. Below the cases (`flops.rs`, `bandwidth.rs`) and the entry
//! points in `mod.rs`.

use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use benchsuite_core::{About, BenchError, Caveat, Point, Work};

/// The longest a batch may keep the device busy before waiting for it counts
/// as a hang (a lost device or a driver bug) and fails the record.
const WAIT_LIMIT: Duration = Duration::from_secs(300);

/// What to install when no adapter exists, shown in skip reasons.
const NO_ADAPTER_HINT: &str = "no wgpu adapter found (Vulkan, Metal or DX12): install a GPU driver with Vulkan support, or Mesa's software Vulkan driver (Debian: mesa-vulkan-drivers libvulkan1) to run the GPU path on the CPU";

/// The process-wide wgpu instance: creating one loads the Vulkan loader and
/// its drivers, which costs tens of milliseconds, so it is made once.
fn instance() -> &'static wgpu::Instance {
    static INSTANCE: OnceLock<wgpu::Instance> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
    })
}

/// Every adapter wgpu can see, in its enumeration order, enumerated once
/// per process: each enumeration walks every installed Vulkan driver (and
/// Mesa's device-select layer prints a libwayland complaint each time on a
/// machine without `XDG_RUNTIME_DIR`), and the set does not change during a
/// run. wgpu allows several devices from one adapter.
fn adapters() -> &'static [wgpu::Adapter] {
    static ADAPTERS: OnceLock<Vec<wgpu::Adapter>> = OnceLock::new();
    ADAPTERS
        .get_or_init(|| pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all())))
}

/// Adapter number `index`, or why it cannot be had (none at all, or the
/// index is out of range: the message lists the adapters there are).
pub(super) fn select_adapter(index: usize) -> Result<wgpu::Adapter, String> {
    let all = adapters();
    if all.is_empty() {
        return Err(NO_ADAPTER_HINT.into());
    }
    if index >= all.len() {
        let list: Vec<String> = all
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{i}: {}", describe(&a.get_info())))
            .collect();
        return Err(format!(
            "device={index}: no such wgpu adapter; the adapters are {}",
            list.join("; ")
        ));
    }
    Ok(all[index].clone())
}

/// One line naming an adapter: name, API, device type and driver.
pub(crate) fn describe(info: &wgpu::AdapterInfo) -> String {
    let kind = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU (software)",
        wgpu::DeviceType::Other => "other",
    };
    let mut driver = info.driver.clone();
    if !info.driver_info.is_empty() {
        if !driver.is_empty() {
            driver.push(' ');
        }
        driver.push_str(&info.driver_info);
    }
    if driver.is_empty() {
        driver = "unknown".into();
    }
    format!("{} ({}, {kind}, driver {driver})", info.name, info.backend)
}

/// True for a CPU adapter or a known software rasteriser, whose numbers
/// measure the CPU running a driver, not a GPU.
pub(crate) fn is_software(info: &wgpu::AdapterInfo) -> bool {
    let name = format!("{} {}", info.name, info.driver).to_ascii_lowercase();
    info.device_type == wgpu::DeviceType::Cpu
        || [
            "llvmpipe",
            "lavapipe",
            "swiftshader",
            "basic render driver",
            "softpipe",
        ]
        .iter()
        .any(|s| name.contains(s))
}

/// An opened adapter: device, queue, and the errors wgpu reported.
pub(super) struct Gpu {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) info: wgpu::AdapterInfo,
    pub(super) limits: wgpu::Limits,
    /// Validation, out-of-memory and internal errors wgpu raised since the
    /// last [`Gpu::check`]; wgpu's default handler would panic instead.
    errors: Arc<Mutex<Vec<String>>>,
}

impl Gpu {
    /// Opens adapter `index` with the adapter's own limits and those of
    /// `wanted` features it supports.
    pub(super) fn open(index: usize, wanted: wgpu::Features) -> Result<Gpu, BenchError> {
        let adapter = select_adapter(index).map_err(|reason| {
            if reason == NO_ADAPTER_HINT {
                BenchError::Skip(reason)
            } else {
                BenchError::Failed(reason)
            }
        })?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("benchsuite"),
            required_features: wanted & adapter.features(),
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            BenchError::caused(format!("cannot open wgpu adapter {}", describe(&info)), e)
        })?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        Ok(Gpu {
            device,
            queue,
            info,
            limits,
            errors,
        })
    }

    /// The device's enabled features.
    pub(super) fn features(&self) -> wgpu::Features {
        self.device.features()
    }

    /// Fails with the errors wgpu reported since the last check, if any.
    pub(super) fn check(&self, what: &str) -> Result<(), BenchError> {
        let errors = match self.errors.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => vec!["the error log was poisoned by a panic".into()],
        };
        if errors.is_empty() {
            Ok(())
        } else {
            Err(BenchError::Other(format!(
                "{what} on {}: {}",
                self.info.name,
                errors.join("; ")
            )))
        }
    }

    /// Blocks until submission `idx` (or all submitted work) has finished
    /// and its callbacks ran.
    pub(super) fn wait(&self, idx: Option<wgpu::SubmissionIndex>) -> Result<(), BenchError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: idx,
                timeout: Some(WAIT_LIMIT),
            })
            .map(|_| ())
            .map_err(|e| BenchError::caused(format!("waiting for {} to finish", self.info.name), e))
    }

    /// Maps a `MAP_READ` buffer and waits until it is mapped.
    pub(super) fn map_read(&self, buf: &wgpu::Buffer) -> Result<(), BenchError> {
        let (tx, rx) = mpsc::channel();
        buf.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait(None)?;
        match rx.try_recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(BenchError::caused(
                format!("mapping a buffer of {} for reading", self.info.name),
                e,
            )),
            Err(_) => Err(BenchError::Other(format!(
                "mapping a buffer of {} did not complete after the device went idle",
                self.info.name
            ))),
        }
    }

    /// Reads `len` bytes from the start of a `COPY_SRC` buffer back to the
    /// host (untimed: used for verification).
    pub(super) fn read_back(&self, src: &wgpu::Buffer, len: u64) -> Result<Vec<u8>, BenchError> {
        let staging = self.buffer(
            "readback",
            len,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut enc = self.encoder();
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, len);
        let idx = self.queue.submit([enc.finish()]);
        self.wait(Some(idx))?;
        self.map_read(&staging)?;
        let data = staging
            .get_mapped_range(..)
            .map_err(|e| BenchError::caused("reading back a buffer", e))?
            .to_vec();
        staging.unmap();
        self.check("reading back a buffer")?;
        Ok(data)
    }

    /// A new buffer (errors surface at the next [`Gpu::check`]).
    pub(super) fn buffer(&self, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    /// A new command encoder.
    pub(super) fn encoder(&self) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
    }

    /// A compute pipeline from WGSL source, entry point `main`, with the
    /// layout derived from the shader.
    pub(super) fn pipeline(
        &self,
        label: &str,
        wgsl: &str,
    ) -> Result<wgpu::ComputePipeline, BenchError> {
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        self.check(&format!("compiling the {label} shader"))?;
        Ok(pipeline)
    }

    /// The notes and caveats every record of this adapter carries.
    pub(super) fn about(&self) -> About {
        let mut about = About::default();
        about.note(format!("adapter: {} (wgpu backend)", describe(&self.info)));
        about.note("no theoretical peak: wgpu exposes neither the compute units nor the clocks or memory bus of an adapter, so none can be derived honestly");
        if is_software(&self.info) {
            about.caveat(Caveat::text(format!(
                "software renderer: {} runs the shaders on the host CPU; this number is an end-to-end correctness check of the GPU code path, NOT a GPU measurement",
                self.info.name
            )));
        }
        about
    }

    /// Waits for the device to go idle (a case's finish).
    pub(super) fn finish(&self) -> Result<(), BenchError> {
        self.wait(None)?;
        self.check("finishing")
    }
}

/// GPU timestamps around a compute pass or a span of commands: two queries,
/// resolved and read back after the batch.
pub(super) struct Timer {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period: f32,
}

impl Timer {
    /// A timer when the device has `TIMESTAMP_QUERY` (and, with `inside_encoder`,
    /// `TIMESTAMP_QUERY_INSIDE_ENCODERS`), else `None`.
    pub(super) fn new(gpu: &Gpu, inside_encoder: bool) -> Option<Timer> {
        let mut need = wgpu::Features::TIMESTAMP_QUERY;
        if inside_encoder {
            need |= wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        }
        if !gpu.features().contains(need) {
            return None;
        }
        let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = gpu.buffer(
            "timestamps",
            16,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        );
        let readback = gpu.buffer(
            "timestamps readback",
            16,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        Some(Timer {
            set,
            resolve,
            readback,
            period: gpu.queue.get_timestamp_period(),
        })
    }

    /// Timestamp writes at the beginning and the end of a compute pass.
    pub(super) fn pass_writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// A timestamp written into the command stream (`index` 0 = start,
    /// 1 = end); needs `inside_encoder`.
    pub(super) fn stamp(&self, enc: &mut wgpu::CommandEncoder, index: u32) {
        enc.write_timestamp(&self.set, index);
    }

    /// Records the resolve and the copy to the readback buffer.
    pub(super) fn resolve(&self, enc: &mut wgpu::CommandEncoder) {
        enc.resolve_query_set(&self.set, 0..2, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, 16);
    }

    /// The interval between the two timestamps, after the batch finished:
    /// `Ok(Err(why))` when the pair is unusable (end not after start, as a
    /// counter narrower than 64 bits gives when it wraps mid-batch).
    pub(super) fn read(&self, gpu: &Gpu) -> Result<Result<Duration, String>, BenchError> {
        gpu.map_read(&self.readback)?;
        let ticks = {
            let view = self
                .readback
                .get_mapped_range(..)
                .map_err(|e| BenchError::caused("reading timestamps", e))?;
            let word = |i: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&view[i * 8..i * 8 + 8]);
                u64::from_le_bytes(b)
            };
            (word(0), word(1))
        };
        self.readback.unmap();
        let (start, end) = ticks;
        let ns = end.wrapping_sub(start) as f64 * f64::from(self.period);
        if end <= start || !ns.is_finite() || ns <= 0.0 {
            return Ok(Err(format!(
                "timestamp queries returned no usable interval (start {start}, end {end} ticks)"
            )));
        }
        Ok(Ok(Duration::from_secs_f64(ns * 1e-9)))
    }

    /// The note naming this clock.
    pub(super) fn note(&self, what: &str) -> String {
        format!(
            "time: GPU timestamp queries {what} (tick {} ns); the runner uses this device time, not its wall clock",
            self.period
        )
    }
}

/// What a timed batch read from its timestamps: `None` without a timer,
/// else the interval or why it is unusable.
pub(super) type Stamps = Option<Result<Duration, String>>;

/// Runs a batch (`batch` returns its work and, with a timer, the
/// timestamps read back) and sets [`Work::elapsed`] from the timestamps.
/// A batch whose timestamp pair is unusable is run once more: the batches
/// are idempotent, and a narrow counter wraps rarely enough that a second
/// wrap in a row means the timestamps do not work.
pub(super) fn timed_batch(
    mut batch: impl FnMut() -> Result<(Work, Stamps), BenchError>,
) -> Result<Work, BenchError> {
    let mut why = String::new();
    for _ in 0..2 {
        let (mut work, stamps) = batch()?;
        match stamps {
            None => return Ok(work),
            Some(Ok(d)) => {
                work.elapsed = Some(d);
                return Ok(work);
            }
            Some(Err(e)) => why = e,
        }
    }
    Err(BenchError::Other(format!("{why}, twice in a row")))
}

/// An integer parameter as `usize`/`u32`, naming it when it does not fit.
pub(super) fn param_u32(point: &Point, name: &str) -> Result<u32, BenchError> {
    let v = point.u64(name)?;
    u32::try_from(v).map_err(|_| {
        BenchError::Failed(format!(
            "{name}={v} is too large for the wgpu backend (at most {})",
            u32::MAX
        ))
    })
}

/// The `device` parameter (adapter index).
pub(super) fn device_index(point: &Point) -> Result<usize, BenchError> {
    let v = point.u64("device")?;
    usize::try_from(v).map_err(|_| BenchError::Failed(format!("device={v}: no such wgpu adapter")))
}
