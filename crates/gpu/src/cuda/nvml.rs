//! NVLink facts through NVML (`libnvidia-ml.so.1`, shipped with the
//! driver), loaded at run time. The CUDA driver API does not describe
//! NVLink; NVML does. Best effort: without NVML the facts say so.

use std::ffi::{CString, c_char, c_int, c_uint, c_void};

use serde_json::{Value as Json, json};

use super::device::DeviceInfo;

/// NVML_NVLINK_MAX_LINKS in nvml.h (18 on Hopper).
const MAX_LINKS: c_uint = 18;
const NVML_SUCCESS: c_int = 0;

type Init = unsafe extern "C" fn() -> c_int;
type Shutdown = unsafe extern "C" fn() -> c_int;
type ByBusId = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> c_int;
type LinkState = unsafe extern "C" fn(*mut c_void, c_uint, *mut c_int) -> c_int;
type LinkVersion = unsafe extern "C" fn(*mut c_void, c_uint, *mut c_uint) -> c_int;

/// Per device: active NVLink links and NVML's version code of the first
/// active link, or why NVML could not tell.
pub(crate) fn nvlink_summary(devices: &[DeviceInfo]) -> Json {
    match query(devices) {
        Ok(v) => Json::Array(v),
        Err(e) => json!({ "unknown": e }),
    }
}

fn query(devices: &[DeviceInfo]) -> Result<Vec<Json>, String> {
    // SAFETY: loading NVML runs only its own initialisers; the handle lives
    // until the end of this function and every symbol is used before that.
    let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
        .map_err(|e| format!("NVML not loadable ({e})"))?;
    // SAFETY: the symbol types are the C prototypes in nvml.h:
    // nvmlInit_v2(void), nvmlShutdown(void),
    // nvmlDeviceGetHandleByPciBusId_v2(const char*, nvmlDevice_t*),
    // nvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned, nvmlEnableState_t*),
    // nvmlDeviceGetNvLinkVersion(nvmlDevice_t, unsigned, unsigned*);
    // nvmlReturn_t and nvmlEnableState_t are C enums (int).
    let (init, shutdown, by_bus, state, version) = unsafe {
        (
            *lib.get::<Init>(b"nvmlInit_v2\0")
                .map_err(|e| e.to_string())?,
            *lib.get::<Shutdown>(b"nvmlShutdown\0")
                .map_err(|e| e.to_string())?,
            *lib.get::<ByBusId>(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                .map_err(|e| e.to_string())?,
            *lib.get::<LinkState>(b"nvmlDeviceGetNvLinkState\0")
                .map_err(|e| e.to_string())?,
            *lib.get::<LinkVersion>(b"nvmlDeviceGetNvLinkVersion\0")
                .map_err(|e| e.to_string())?,
        )
    };
    // SAFETY: nvmlInit_v2 takes no arguments; it is reference counted and
    // paired with the nvmlShutdown below.
    let rc = unsafe { init() };
    if rc != NVML_SUCCESS {
        return Err(format!("nvmlInit_v2 returned {rc}"));
    }
    let mut out = Vec::new();
    for d in devices {
        let Ok(bus) = CString::new(d.pci_bus_id.as_str()) else {
            continue;
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: `bus` is a NUL-terminated string and `handle` a valid
        // out-pointer, both alive for the call.
        if unsafe { by_bus(bus.as_ptr(), &mut handle) } != NVML_SUCCESS {
            out.push(json!({ "index": d.index, "active_links": null }));
            continue;
        }
        let mut active = 0;
        let mut code = None;
        for link in 0..MAX_LINKS {
            let mut on: c_int = 0;
            // SAFETY: `handle` came from NVML above; `on` is a valid
            // out-pointer. Links the GPU lacks return an error code.
            if unsafe { state(handle, link, &mut on) } == NVML_SUCCESS && on == 1 {
                active += 1;
                if code.is_none() {
                    let mut v: c_uint = 0;
                    // SAFETY: as above, with `v` as the out-pointer.
                    if unsafe { version(handle, link, &mut v) } == NVML_SUCCESS {
                        code = Some(v);
                    }
                }
            }
        }
        out.push(json!({
            "index": d.index,
            "active_links": active,
            "nvml_version_code": code,
        }));
    }
    // SAFETY: pairs the successful nvmlInit_v2 above.
    unsafe { shutdown() };
    Ok(out)
}

/// NVML_CLOCK_SM and NVML_CLOCK_MEM (nvmlClockType_t).
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;
/// NVML_TEMPERATURE_GPU (nvmlTemperatureSensors_t).
const TEMPERATURE_GPU: c_uint = 0;

type ClockInfo = unsafe extern "C" fn(*mut c_void, c_uint, *mut c_uint) -> c_int;
type PowerUsage = unsafe extern "C" fn(*mut c_void, *mut c_uint) -> c_int;
type Temperature = unsafe extern "C" fn(*mut c_void, c_uint, *mut c_uint) -> c_int;
type EventReasons = unsafe extern "C" fn(*mut c_void, *mut u64) -> c_int;

/// Clock-event ("throttle") reason bits of `nvmlClocksEventReason*` in
/// nvml.h, with what a record says for each.
pub(crate) const REASONS: &[(u64, &str, Throttle)] = &[
    (0x1, "GPU idle", Throttle::No),
    (0x2, "applications clocks setting", Throttle::No),
    (0x4, "software power cap", Throttle::Power),
    // NVML: temperature too high, the external power brake, or power draw
    // too high; it does not say which.
    (
        0x8,
        "hardware slowdown (power or temperature)",
        Throttle::Power,
    ),
    (0x10, "sync boost", Throttle::No),
    (0x20, "software thermal slowdown", Throttle::Thermal),
    (0x40, "hardware thermal slowdown", Throttle::Thermal),
    (0x80, "hardware power brake", Throttle::Power),
    (0x100, "display clocks setting", Throttle::No),
];

/// What a clock-event reason means for the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Throttle {
    /// Not a slowdown under load (idle, a clocks setting, sync boost).
    No,
    /// The power limit (or the hardware's power brake) lowered the clocks.
    Power,
    /// Temperature lowered the clocks.
    Thermal,
}

/// One NVML reading; a field NVML does not report on this GPU is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    /// SM clock, MHz.
    pub sm_mhz: Option<u32>,
    /// Memory clock, MHz.
    pub mem_mhz: Option<u32>,
    /// Board power, W.
    pub power_w: Option<f64>,
    /// GPU temperature, °C.
    pub temp_c: Option<u32>,
    /// Clock-event reason bits.
    pub reasons: Option<u64>,
}

/// The NVML entry points the sampler calls, resolved once.
struct Api {
    shutdown: Shutdown,
    clock: ClockInfo,
    power: PowerUsage,
    temperature: Option<Temperature>,
    reasons: Option<EventReasons>,
    handle: *mut c_void,
    _lib: libloading::Library,
}

// SAFETY: NVML is thread-safe (nvml.h: "all NVML functions are thread
// safe"); the device handle is an opaque token valid until nvmlShutdown,
// which only `Drop` calls, after the sampling thread is joined.
unsafe impl Send for Api {}

impl Api {
    fn open(pci_bus_id: &str) -> Result<Api, String> {
        // SAFETY: as in `query`: NVML's initialisers only; the library is
        // kept in the returned value as long as its symbols.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML not loadable ({e})"))?;
        // SAFETY: the types are nvml.h's prototypes: nvmlDeviceGetClockInfo
        // (nvmlDevice_t, nvmlClockType_t, unsigned*), nvmlDeviceGetPowerUsage
        // (nvmlDevice_t, unsigned* mW), nvmlDeviceGetTemperature
        // (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*),
        // nvmlDeviceGetCurrentClocksEventReasons / ...ThrottleReasons
        // (nvmlDevice_t, unsigned long long*); enums are C ints.
        let api = unsafe {
            let init = *lib
                .get::<Init>(b"nvmlInit_v2\0")
                .map_err(|e| e.to_string())?;
            let by_bus = *lib
                .get::<ByBusId>(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                .map_err(|e| e.to_string())?;
            let shutdown = *lib
                .get::<Shutdown>(b"nvmlShutdown\0")
                .map_err(|e| e.to_string())?;
            let clock = *lib
                .get::<ClockInfo>(b"nvmlDeviceGetClockInfo\0")
                .map_err(|e| e.to_string())?;
            let power = *lib
                .get::<PowerUsage>(b"nvmlDeviceGetPowerUsage\0")
                .map_err(|e| e.to_string())?;
            // Deprecated in CUDA 13 and to go in 14: without it, no
            // temperature, the rest still sampled.
            let temperature = lib
                .get::<Temperature>(b"nvmlDeviceGetTemperature\0")
                .map(|s| *s)
                .ok();
            let reasons = lib
                .get::<EventReasons>(b"nvmlDeviceGetCurrentClocksEventReasons\0")
                .or_else(|_| {
                    lib.get::<EventReasons>(b"nvmlDeviceGetCurrentClocksThrottleReasons\0")
                })
                .map(|s| *s)
                .ok();
            let rc = init();
            if rc != NVML_SUCCESS {
                return Err(format!("nvmlInit_v2 returned {rc}"));
            }
            let bus = CString::new(pci_bus_id).map_err(|e| e.to_string())?;
            let mut handle: *mut c_void = std::ptr::null_mut();
            let rc = by_bus(bus.as_ptr(), &mut handle);
            if rc != NVML_SUCCESS {
                shutdown();
                return Err(format!(
                    "nvmlDeviceGetHandleByPciBusId_v2({pci_bus_id}) returned {rc}"
                ));
            }
            Api {
                shutdown,
                clock,
                power,
                temperature,
                reasons,
                handle,
                _lib: lib,
            }
        };
        Ok(api)
    }

    fn sample(&self) -> Sample {
        let u = |rc: c_int, v: c_uint| (rc == NVML_SUCCESS).then_some(v);
        let (mut sm, mut mem, mut mw, mut t, mut r) = (0, 0, 0, 0, 0u64);
        // SAFETY: `handle` is valid until `drop`; each out-pointer is a
        // local alive for its call.
        unsafe {
            let sm_rc = (self.clock)(self.handle, CLOCK_SM, &mut sm);
            let mem_rc = (self.clock)(self.handle, CLOCK_MEM, &mut mem);
            let p_rc = (self.power)(self.handle, &mut mw);
            let t_rc = self
                .temperature
                .map_or(-1, |f| f(self.handle, TEMPERATURE_GPU, &mut t));
            let r_rc = self.reasons.map(|f| f(self.handle, &mut r));
            Sample {
                sm_mhz: u(sm_rc, sm),
                mem_mhz: u(mem_rc, mem),
                power_w: u(p_rc, mw).map(|mw| f64::from(mw) / 1e3),
                temp_c: u(t_rc, t),
                reasons: (r_rc == Some(NVML_SUCCESS)).then_some(r),
            }
        }
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        // SAFETY: pairs the successful nvmlInit_v2 of `open`.
        unsafe { (self.shutdown)() };
    }
}

/// How often the sampler reads NVML at first: 10 Hz. The power reading
/// is a 1 s average (Ampere and later), and clocks settle over tens of
/// milliseconds; a 50 Hz waker beside the record is a third task on the
/// CPUs that feed the GPU (the reference runner measured what one costs a
/// 2-vCPU guest).
pub(crate) const PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

/// The most samples a record keeps (see [`Samples`]).
pub(crate) const MAX_SAMPLES: usize = 1024;

/// A record's samples, evenly spaced [`Samples::every`] apart, at most
/// [`MAX_SAMPLES`] of them however long the record runs (`--duration`):
/// when the list is full, every other sample is dropped and the period
/// doubles, so the spacing stays even and each part of the record weighs
/// the same.
#[derive(Debug, Clone)]
pub(crate) struct Samples {
    pub list: Vec<Sample>,
    /// The time between two samples (the last, taken at the end, aside).
    pub every: std::time::Duration,
}

impl Samples {
    pub(crate) fn new() -> Samples {
        Samples {
            list: Vec::new(),
            every: PERIOD,
        }
    }

    /// Adds the sample taken now, [`Samples::every`] after the last one.
    pub(crate) fn push(&mut self, s: Sample) {
        if self.list.len() >= MAX_SAMPLES {
            let mut i = 0;
            self.list.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.every *= 2;
        }
        self.list.push(s);
    }
}

/// A thread reading a device's clocks, power, temperature and clock-event
/// reasons every [`Samples::every`] while a record runs, asleep between
/// (until the period passes or the record ends): outside the timed calls,
/// which it does not touch (NVML reads the driver's counters, not the
/// stream).
#[derive(Debug)]
pub(crate) struct Sampler {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Samples>,
}

impl Sampler {
    /// Starts sampling the device at `pci_bus_id`, or says why NVML cannot.
    pub(crate) fn start(pci_bus_id: &str) -> Result<Sampler, String> {
        let api = Api::open(pci_bus_id)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("nvml-sampler".into())
            .spawn(move || {
                let mut out = Samples::new();
                loop {
                    out.push(api.sample());
                    match stopped.recv_timeout(out.every) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        _ => break,
                    }
                }
                out.push(api.sample());
                drop(api);
                out
            })
            .map_err(|e| format!("no sampling thread ({e})"))?;
        Ok(Sampler { stop, thread })
    }

    /// Stops the thread and returns its samples.
    pub(crate) fn stop(self) -> Samples {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_else(|_| Samples::new())
    }
}

/// Minimum, median and maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// The spread of the values present, `None` when there are none.
pub(crate) fn spread(values: impl Iterator<Item = f64>) -> Option<Spread> {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        min: v[0],
        median,
        max: v[n - 1],
    })
}

/// What a record's samples say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnderLoad {
    pub samples: usize,
    /// The time between two samples.
    pub every: std::time::Duration,
    pub sm_mhz: Option<Spread>,
    pub mem_mhz: Option<Spread>,
    pub power_w: Option<Spread>,
    pub temp_c: Option<Spread>,
    /// Each reason seen, with the fraction of samples that had it.
    pub reasons: Vec<(&'static str, Throttle, f64)>,
}

/// Summarises a record's samples, taken [`PERIOD`] apart (set
/// [`UnderLoad::every`] where they were thinned).
pub(crate) fn under_load(samples: &[Sample]) -> UnderLoad {
    let with_reasons = samples.iter().filter_map(|s| s.reasons).collect::<Vec<_>>();
    let reasons = REASONS
        .iter()
        .filter_map(|&(bit, name, kind)| {
            let n = with_reasons.iter().filter(|r| *r & bit != 0).count();
            (n > 0).then(|| (name, kind, n as f64 / with_reasons.len() as f64))
        })
        .collect();
    UnderLoad {
        samples: samples.len(),
        every: PERIOD,
        sm_mhz: spread(samples.iter().filter_map(|s| s.sm_mhz.map(f64::from))),
        mem_mhz: spread(samples.iter().filter_map(|s| s.mem_mhz.map(f64::from))),
        power_w: spread(samples.iter().filter_map(|s| s.power_w)),
        temp_c: spread(samples.iter().filter_map(|s| s.temp_c.map(f64::from))),
        reasons,
    }
}

impl UnderLoad {
    /// The record's note: `SM clock 1395/1755/1980 MHz, ...` (min/median/max).
    pub(crate) fn note(&self) -> String {
        let part = |what: &str, s: Option<Spread>, unit: &str, digits: usize| match s {
            Some(s) => format!(
                "{what} {:.digits$}/{:.digits$}/{:.digits$} {unit}",
                s.min, s.median, s.max
            ),
            None => format!("{what} not reported"),
        };
        let reasons = if self.reasons.is_empty() {
            "none".to_string()
        } else {
            self.reasons
                .iter()
                .map(|(n, _, f)| format!("{n} ({:.0}% of samples)", f * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "under load (NVML, {} samples every {} ms from a thread outside the timed calls, from the end of setup to teardown; min/median/max): {}, {}, {}, {}; clock-event reasons: {reasons}",
            self.samples,
            self.every.as_millis(),
            part("SM clock", self.sm_mhz, "MHz", 0),
            part("memory clock", self.mem_mhz, "MHz", 0),
            // nvmlDeviceGetPowerUsage: on Ampere and later (GA100 aside),
            // the average over the last second, not an instant reading.
            part("power (1 s average)", self.power_w, "W", 1),
            part("temperature", self.temp_c, "°C", 0),
        )
    }

    /// A caveat when power or temperature lowered the clocks during the
    /// record.
    pub(crate) fn caveat(&self) -> Option<String> {
        let hits: Vec<String> = self
            .reasons
            .iter()
            .filter(|(_, k, _)| *k != Throttle::No)
            .map(|(n, _, f)| format!("{n} in {:.0}% of samples", f * 100.0))
            .collect();
        if hits.is_empty() {
            return None;
        }
        let thermal = self.reasons.iter().any(|(_, k, _)| *k == Throttle::Thermal);
        let power = self.reasons.iter().any(|(_, k, _)| *k == Throttle::Power);
        let what = match (power, thermal) {
            (true, true) => "power and thermal",
            (true, false) => "power",
            _ => "thermal",
        };
        let clock = self
            .sm_mhz
            .map(|s| format!(" (SM clock median {:.0} MHz, max {:.0})", s.median, s.max))
            .unwrap_or_default();
        Some(format!(
            "{what} throttling while the record ran (NVML: {}){clock}: the GPU ran below its maximum clock, so the rate is below what the peak at maximum clock assumes",
            hits.join(", ")
        ))
    }
}

/// The peak at the median clock under load, as a note beside the peak at
/// maximum clock: the SM clock for arithmetic peaks (input `clock`, GHz),
/// the memory clock for the device-memory peak (input `memory clock`,
/// MHz); `None` for other peaks or without samples.
pub(crate) fn peak_at_median_clock(
    peak: &benchsuite_core::Peak,
    load: &UnderLoad,
) -> Option<String> {
    use benchsuite_core::units::format_si;
    let (what, max_mhz, median) = if let Some(c) = peak.inputs.get("clock") {
        ("SM", c.value * 1e3, load.sm_mhz?.median)
    } else if let Some(c) = peak.inputs.get("memory clock") {
        ("memory", c.value, load.mem_mhz?.median)
    } else {
        return None;
    };
    if max_mhz <= 0.0 {
        return None;
    }
    Some(format!(
        "peak at the median {what} clock under load ({median:.0} MHz): {}; at the maximum clock ({max_mhz:.0} MHz, the record's peak): {}",
        format_si(peak.value * median / max_mhz, &peak.unit),
        format_si(peak.value, &peak.unit)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(sm: u32, w: f64, reasons: u64) -> Sample {
        Sample {
            sm_mhz: Some(sm),
            mem_mhz: Some(2619),
            power_w: Some(w),
            temp_c: Some(60),
            reasons: Some(reasons),
        }
    }

    #[test]
    fn a_record_under_a_power_cap_gets_its_spread_and_a_caveat() {
        // The H200 under a bf16 GEMM: 1980 → 1395 MHz at 689 W.
        let samples = [
            s(1980, 300.0, 0),
            s(1395, 689.0, 0x4),
            s(1500, 680.0, 0x4),
            s(1395, 689.0, 0x4),
        ];
        let l = under_load(&samples);
        assert_eq!(l.samples, 4);
        let sm = l.sm_mhz.unwrap();
        assert_eq!((sm.min, sm.median, sm.max), (1395.0, 1447.5, 1980.0));
        assert_eq!(l.reasons, [("software power cap", Throttle::Power, 0.75)]);
        let n = l.note();
        assert!(
            n.contains("SM clock 1395/1448/1980 MHz")
                && n.contains("power (1 s average) 300.0/684.5/689.0 W")
                && n.contains("software power cap (75% of samples)")
                && n.contains("outside the timed calls"),
            "{n}"
        );
        let c = l.caveat().unwrap();
        assert!(
            c.starts_with("power throttling") && c.contains("median 1448 MHz"),
            "{c}"
        );
    }

    /// A long record (`--duration 1h`: 36,000 periods) keeps at most
    /// MAX_SAMPLES, still evenly spaced, and the note says how far apart.
    #[test]
    fn a_long_record_keeps_a_bounded_evenly_spaced_sample_list() {
        let periods = |d: std::time::Duration| (d.as_millis() / PERIOD.as_millis()) as u32;
        let mut samples = Samples::new();
        // Each sample is taken `every` after the last, as the thread
        // does; its clock field holds its time, in periods.
        let mut t = 0;
        while t <= 36_000 {
            samples.push(Sample {
                sm_mhz: Some(t),
                ..Sample::default()
            });
            assert!(samples.list.len() <= MAX_SAMPLES);
            t += periods(samples.every);
        }
        let stride = periods(samples.every);
        assert!(stride.is_power_of_two() && stride > 1, "{stride}");
        let times: Vec<u32> = samples.list.iter().map(|s| s.sm_mhz.unwrap()).collect();
        assert_eq!(times[0], 0);
        assert!(
            times.windows(2).all(|w| w[1] - w[0] == stride),
            "uneven: {:?}",
            &times[..8]
        );
        assert!(
            *times.last().unwrap() >= 36_000 - stride,
            "{}",
            times.last().unwrap()
        );
        let mut l = under_load(&samples.list);
        l.every = samples.every;
        assert!(
            l.note().contains(&format!(
                "{} samples every {} ms",
                samples.list.len(),
                samples.every.as_millis()
            )),
            "{}",
            l.note()
        );
    }

    #[test]
    fn idle_and_clock_settings_are_not_throttling_but_heat_is() {
        let l = under_load(&[s(1980, 100.0, 0x1 | 0x2 | 0x10)]);
        assert_eq!(l.reasons.len(), 3);
        assert_eq!(l.caveat(), None);
        let l = under_load(&[s(1700, 700.0, 0x40), s(1700, 700.0, 0x4)]);
        let c = l.caveat().unwrap();
        assert!(c.starts_with("power and thermal throttling"), "{c}");
        let l = under_load(&[s(1700, 700.0, 0x20)]);
        assert!(l.caveat().unwrap().starts_with("thermal throttling"));
        // Fields NVML does not report are said to be missing.
        let l = under_load(&[Sample::default()]);
        assert!(
            l.note().contains("power (1 s average) not reported"),
            "{}",
            l.note()
        );
        assert_eq!(l.caveat(), None);
    }

    #[test]
    fn both_peaks_are_shown_at_max_and_at_median_clock() {
        let peak = crate::peak::memory_peak(2_619_000, 5120);
        let l = under_load(&[s(1395, 689.0, 4)]);
        let n = peak_at_median_clock(&peak, &l).unwrap();
        assert!(
            n.contains("median memory clock under load (2619 MHz)"),
            "{n}"
        );
        let mut p = peak.clone();
        p.inputs.clear();
        p.inputs.insert(
            "clock".into(),
            benchsuite_core::results::PeakInput {
                value: 1.98,
                unit: "GHz".into(),
                source: "driver".into(),
            },
        );
        p.value = 66.9e12;
        p.unit = "FLOP/s".into();
        let n = peak_at_median_clock(&p, &l).unwrap();
        // 66.9 T × 1395 / 1980 = 47.1 T.
        assert!(
            n.contains("(1395 MHz): 47.134 TFLOP/s") && n.contains("(1980 MHz"),
            "{n}"
        );
        assert_eq!(peak_at_median_clock(&p, &under_load(&[])), None);
    }
}
