//! The driver and its devices: found once per process, described once.
//!
//! Detection needs no CUDA context: `cuInit`, `cuDeviceGet*` and
//! `cuDeviceGetAttribute` only, so `validate` and `host_facts` are cheap and
//! allocate nothing on the GPU.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::OnceLock;

use benchsuite_core::Choice;
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use serde_json::{Value as Json, json};

use super::libs;
use crate::peak::{self, Arith};

/// What the driver reports about one device.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeviceInfo {
    /// Ordinal (`device` parameter).
    pub index: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Maximum SM clock in kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`).
    pub clock_khz: u32,
    /// Memory clock in kHz.
    pub mem_clock_khz: u32,
    /// Memory bus width in bits.
    pub bus_width_bits: u32,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// The driver's FP32:FP64 throughput ratio.
    pub fp32_to_fp64: Option<u32>,
    /// An integrated GPU (Jetson, GH200's coherent memory is not this).
    pub integrated: bool,
    /// ECC enabled.
    pub ecc: bool,
    /// The GPU reads pageable host memory through the host's own page
    /// tables (Address Translation Services,
    /// `PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`): its host link is a
    /// cache-coherent NVLink (Grace Hopper's NVLink-C2C, POWER9's NVLink),
    /// not PCIe, so no PCIe peak applies to its host copies.
    pub host_page_tables: bool,
    /// PCI address `dddd:bb:dd.0`.
    pub pci_bus_id: String,
    /// The PCIe link, from sysfs.
    pub pcie: Option<PcieLink>,
}

/// A PCIe link as the kernel reports it in sysfs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PcieLink {
    /// The GPU's maximum transfer rate, in GT/s.
    pub max_gts: f64,
    /// The GPU's maximum width.
    pub max_width: u32,
    /// The upstream port's (the parent bridge's) maximum rate, where sysfs
    /// has one.
    pub port_gts: Option<f64>,
    /// The upstream port's maximum width.
    pub port_width: Option<u32>,
    /// The current rate (GPUs train down when idle).
    pub current_gts: Option<f64>,
    /// The current width.
    pub current_width: Option<u32>,
}

/// The driver and every device it sees.
#[derive(Debug, Clone)]
pub(crate) struct Driver {
    /// `cuDriverGetVersion`, e.g. 12040 for CUDA 12.4.
    pub version: i32,
    /// Devices by ordinal.
    pub devices: Vec<DeviceInfo>,
}

impl Driver {
    /// `12.4` for 12040.
    pub(crate) fn version_string(&self) -> String {
        format!("{}.{}", self.version / 1000, (self.version % 1000) / 10)
    }

    /// The device `index`, or an error listing the devices there are.
    pub(crate) fn device(&self, index: usize) -> Result<&DeviceInfo, String> {
        self.devices
            .get(index)
            .ok_or_else(|| format!("there is no CUDA device {index}: {}", self.list()))
    }

    /// `this machine has 2 CUDA devices: 0 = NVIDIA H100 ..., 1 = ...`.
    pub(crate) fn list(&self) -> String {
        let names: Vec<String> = self
            .devices
            .iter()
            .map(|d| format!("{} = {}", d.index, d.name))
            .collect();
        format!(
            "this machine has {} CUDA device{}: {}",
            self.devices.len(),
            if self.devices.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    }
}

/// The driver, detected once per process, or why it cannot be used
/// (`no CUDA driver: ...`, `no CUDA device: ...`). Never panics: a missing
/// library is checked first and a misbehaving one is caught.
pub(crate) fn driver() -> Result<&'static Driver, String> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            libs::driver()?;
            catch_unwind(AssertUnwindSafe(detect)).unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(format!("the CUDA driver library is unusable: {msg}"))
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
pub(crate) fn describe(e: DriverError) -> String {
    match e.error_string() {
        Ok(s) => format!("{:?} ({})", e.0, s.to_string_lossy()),
        Err(_) => format!("{:?}", e.0),
    }
}

/// Why `cuInit` failed with `code` (`text`: its name and description), with
/// the fix for the failures a first run on a new machine meets.
pub(crate) fn init_failure(code: i32, text: &str) -> String {
    match code {
        // CUDA_ERROR_NO_DEVICE
        100 => format!(
            "no CUDA device: the NVIDIA driver is installed but sees no GPU (check `nvidia-smi` and CUDA_VISIBLE_DEVICES; cuInit: {text})"
        ),
        // CUDA_ERROR_STUB_LIBRARY
        34 => format!(
            "no CUDA driver: the libcuda.so found is the toolkit's stub, not the driver's; remove the stubs directory from LD_LIBRARY_PATH (cuInit: {text})"
        ),
        // CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_FABRIC_NOT_READY
        802 | 919 => format!(
            "the CUDA driver cannot start: the system is not ready, a driver daemon it needs is not running (cuInit: {text}); on an NVSwitch system (HGX/DGX H100, H200, B200) start the NVIDIA Fabric Manager (`systemctl start nvidia-fabricmanager`, of the driver's version) and wait until it is up"
        ),
        // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        803 => format!(
            "the CUDA driver cannot start: libcuda and the NVIDIA kernel module are different versions (cuInit: {text}); reboot after a driver upgrade, and in a container use the host's driver libraries (NVIDIA container toolkit) rather than a libcuda bundled in the image"
        ),
        // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
        804 => format!(
            "the CUDA driver cannot start: the libcuda loaded is a CUDA forward-compatibility package, which runs on data-center GPUs only (cuInit: {text}); remove its directory (cuda-compat) from LD_LIBRARY_PATH"
        ),
        // CUDA_ERROR_UNKNOWN: on a fresh install nearly always the UVM
        // module, which nvidia-smi does not need.
        999 => format!(
            "the CUDA driver cannot start: cuInit: {text}; usually the nvidia-uvm kernel module is not loaded or /dev/nvidia-uvm is missing (`sudo modprobe nvidia-uvm`; in a container, run it with the NVIDIA container toolkit)"
        ),
        _ => format!("the CUDA driver cannot start: cuInit: {text}"),
    }
}

/// `cuInit(0)`, called through a pointer typed as returning a plain `int`,
/// and on failure the code with its name and description.
///
/// cudarc's bindings (CUDA 12.8 headers) return every driver result as a
/// Rust enum, and a value outside that enum is undefined behaviour. A newer
/// driver can return codes the 12.8 enum lacks, and `cuInit` is where a
/// machine's set-up problems surface (the CUDA 13 headers add
/// `CUDA_ERROR_FABRIC_NOT_READY` = 919 and
/// `CUDA_ERROR_INSUFFICIENT_LOADER_VERSION` = 227). The calls made through
/// cudarc after a successful `cuInit` fail, if at all, with long-standing
/// codes (out of memory, launch failures).
fn raw_init() -> Result<(), (i32, String)> {
    type Init = unsafe extern "C" fn(c_uint) -> c_int;
    // SAFETY: `driver()` checked that the library loads, so `culib` opens
    // it (it panics only when no candidate loads, and that panic would be
    // caught by `driver`).
    let lib = unsafe { sys::culib() };
    // SAFETY: `CUresult cuInit(unsigned int Flags)` in cuda.h; CUresult is
    // a C enum, an int.
    let init = unsafe { lib.get::<Init>(b"cuInit\0") }
        .map_err(|e| (-1, format!("libcuda has no cuInit ({e})")))?;
    // SAFETY: cuInit takes flags (0 is the only valid value) and may be
    // called any number of times.
    let rc = unsafe { (*init)(0) };
    if rc == 0 {
        return Ok(());
    }
    Err((rc, error_text(lib, rc)))
}

/// `CUDA_ERROR_SYSTEM_NOT_READY (system not yet initialized) = 802`, for
/// any code, known to the bindings or not.
fn error_text(lib: &libloading::Library, code: c_int) -> String {
    type Text = unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int;
    let get = |name: &[u8]| -> Option<String> {
        // SAFETY: cuGetErrorName and cuGetErrorString are both
        // `CUresult f(CUresult error, const char **pStr)` in cuda.h.
        let f = unsafe { lib.get::<Text>(name) }.ok()?;
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: `p` is a valid out-pointer; an unknown code makes the
        // call fail (and leaves `p` NULL), which is checked.
        let rc = unsafe { (*f)(code, &mut p) };
        if rc != 0 || p.is_null() {
            return None;
        }
        // SAFETY: on success `p` points to a static NUL-terminated string
        // owned by the driver.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    match (get(b"cuGetErrorName\0"), get(b"cuGetErrorString\0")) {
        (Some(n), Some(s)) => format!("{n} ({s}) = {code}"),
        (Some(n), None) => format!("{n} = {code}"),
        _ => format!("CUDA error {code}, unknown to this driver's error table"),
    }
}

fn detect() -> Result<Driver, String> {
    if let Err((code, text)) = raw_init() {
        return Err(init_failure(code, &text));
    }
    let mut version = 0;
    // SAFETY: `version` is a valid out-pointer for the duration of the call.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| format!("cuDriverGetVersion: {}", describe(e)))?;
    let count =
        result::device::get_count().map_err(|e| format!("cuDeviceGetCount: {}", describe(e)))?;
    if count <= 0 {
        return Err("no CUDA device: the NVIDIA driver sees no GPU (check `nvidia-smi`, and CUDA_VISIBLE_DEVICES)".into());
    }
    let devices = (0..count as usize)
        .map(info)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("reading device attributes: {}", describe(e)))?;
    Ok(Driver { version, devices })
}

fn info(index: usize) -> Result<DeviceInfo, DriverError> {
    let dev = result::device::get(index as i32)?;
    // SAFETY: `dev` was just returned by cuDeviceGet for a valid ordinal.
    let attr = |a: Attr| unsafe { result::device::get_attribute(dev, a) };
    let u = |a: Attr| attr(a).map(|v| v.max(0) as u32);
    // Attributes only peaks and facts use: 0 (unknown) rather than a failed
    // detection if a driver stops reporting one (CUDA 13 deprecates the
    // clock attributes).
    let opt = |a: Attr| u(a).unwrap_or(0);
    let name = result::device::get_name(dev)?;
    // SAFETY: as above.
    let memory_bytes = unsafe { result::device::total_mem(dev) }? as u64;
    let domain = opt(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    let bus = opt(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    let slot = opt(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    let pci_bus_id = format!("{domain:04x}:{bus:02x}:{slot:02x}.0");
    Ok(DeviceInfo {
        index,
        name,
        cc: (
            u(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            u(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sms: u(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_khz: opt(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        mem_clock_khz: opt(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        bus_width_bits: opt(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        memory_bytes,
        l2_bytes: opt(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as u64,
        max_threads_per_sm: opt(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        fp32_to_fp64: u(Attr::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
            .ok()
            .filter(|r| *r > 0),
        integrated: opt(Attr::CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0,
        ecc: opt(Attr::CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0,
        host_page_tables: opt(
            Attr::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
        ) != 0,
        pcie: pcie_link(std::path::Path::new("/sys/bus/pci/devices").join(&pci_bus_id)),
        pci_bus_id,
    })
}

/// Parses a sysfs link speed: `16.0 GT/s PCIe` → 16.0 (`8 GT/s`, `2.5 GT/s`).
pub(crate) fn parse_gts(s: &str) -> Option<f64> {
    s.split_whitespace().next()?.parse().ok()
}

/// Reads the link of the PCI device at `dev` (a sysfs device directory)
/// and the maximum of its upstream port (the parent directory) where that
/// has one.
pub(crate) fn pcie_link(dev: PathBuf) -> Option<PcieLink> {
    let read = |p: &std::path::Path, f: &str| std::fs::read_to_string(p.join(f)).ok();
    let dev = std::fs::canonicalize(&dev).unwrap_or(dev);
    let max_gts = parse_gts(&read(&dev, "max_link_speed")?)?;
    let max_width: u32 = read(&dev, "max_link_width")?.trim().parse().ok()?;
    let up = dev.parent();
    Some(PcieLink {
        max_gts,
        max_width,
        port_gts: up.and_then(|u| read(u, "max_link_speed").and_then(|s| parse_gts(&s))),
        port_width: up.and_then(|u| read(u, "max_link_width").and_then(|s| s.trim().parse().ok())),
        current_gts: read(&dev, "current_link_speed").and_then(|s| parse_gts(&s)),
        current_width: read(&dev, "current_link_width").and_then(|s| s.trim().parse().ok()),
    })
}

impl PcieLink {
    /// The link's usable maximum (GT/s, lanes): the slower and narrower of
    /// the GPU's and its upstream port's, or the GPU's own when the port is
    /// not to be trusted. In a virtual machine the parent bridge is the
    /// hypervisor's emulated root port, whose advertised link (QEMU's is
    /// 16 GT/s x32, older ones 2.5 GT/s x1) says nothing about the
    /// physical slot, while the GPU's own capability is read from the
    /// passed-through device.
    pub(crate) fn usable(&self, trust_port: bool) -> (f64, u32) {
        let (mut gts, mut width) = (self.max_gts, self.max_width);
        if trust_port {
            if let Some(g) = self.port_gts.filter(|g| *g > 0.0) {
                gts = gts.min(g);
            }
            if let Some(w) = self.port_width.filter(|w| *w > 0) {
                width = width.min(w);
            }
        }
        (gts, width)
    }
}

/// Whether the host is a virtual machine (then PCIe bridges are
/// emulated), from the runner's host facts.
pub(crate) fn virtualized(host: &benchsuite_core::Host) -> bool {
    host.virtualization.as_deref().is_some_and(|v| v != "none")
}

impl DeviceInfo {
    /// `9.0`.
    pub(crate) fn cc_string(&self) -> String {
        format!("{}.{}", self.cc.0, self.cc.1)
    }

    /// A one-line description for notes.
    pub(crate) fn describe(&self) -> String {
        format!(
            "device {} = {} (compute capability {}, {} SMs at up to {} MHz, {:.1} GiB)",
            self.index,
            self.name,
            self.cc_string(),
            self.sms,
            self.clock_khz / 1000,
            self.memory_bytes as f64 / (1u64 << 30) as f64
        )
    }

    /// Export-restricted variants whose compute is slower than the
    /// compute capability implies (H20; H800's FP64), for which a
    /// table-derived peak would be wrong.
    pub(crate) fn restricted(&self, what: &str) -> bool {
        let n = self.name.to_ascii_uppercase();
        let h20 = n
            .match_indices("H20")
            .any(|(i, _)| !n[i + 3..].starts_with(|c: char| c.is_ascii_digit()));
        h20 || (n.contains("H800") && what == "f64")
    }

    /// The device facts for the report's host section; `virtualized`: see
    /// [`PcieLink::usable`].
    pub(crate) fn facts(&self, virtualized: bool) -> Json {
        let flops = |a: Arith| {
            peak::cuda_core_rate(self.cc, a, self.fp32_to_fp64)
                .filter(|_| !self.restricted(a.name()) && self.clock_khz > 0)
                .map(|r| {
                    peak::cuda_core_peak(
                        "flops",
                        "FLOP/s",
                        a,
                        &r,
                        self.sms,
                        self.sms,
                        self.clock_khz,
                    )
                    .value
                })
        };
        let gemm = |g: peak::Gemm| {
            peak::gemm_rate(self.cc, g, self.fp32_to_fp64)
                .filter(|_| !self.restricted(g.name()) && self.clock_khz > 0)
                .map(|r| peak::gemm_peak(g, &r, self.sms, self.clock_khz).value)
        };
        json!({
            "index": self.index,
            "name": self.name,
            "compute_capability": self.cc_string(),
            "sms": self.sms,
            "max_sm_clock_mhz": self.clock_khz / 1000,
            "memory_clock_mhz": self.mem_clock_khz / 1000,
            "memory_bus_width_bits": self.bus_width_bits,
            "memory_bytes": self.memory_bytes,
            "l2_cache_bytes": self.l2_bytes,
            "max_threads_per_sm": self.max_threads_per_sm,
            "fp32_to_fp64_ratio": self.fp32_to_fp64,
            "integrated": self.integrated,
            "ecc": self.ecc,
            "host_link_coherent_nvlink": self.host_page_tables,
            "pci_bus_id": self.pci_bus_id,
            "pcie": self.pcie.as_ref().map(|l| {
                let (gts, width) = l.usable(!virtualized);
                json!({
                    "max_gen": peak::pcie_gen(l.max_gts),
                    "max_gts": l.max_gts,
                    "max_width": l.max_width,
                    "port_max_gts": l.port_gts,
                    "port_max_width": l.port_width,
                    "current_gen": l.current_gts.and_then(peak::pcie_gen),
                    "current_width": l.current_width,
                    "peak_bytes_per_sec_per_direction": peak::pcie_bandwidth(gts, width),
                })
            }),
            "peaks": {
                "memory_bytes_per_sec": (self.mem_clock_khz > 0 && self.bus_width_bits > 0)
                    .then(|| peak::memory_bandwidth(self.mem_clock_khz, self.bus_width_bits)),
                "memory_formula": "memory clock × bus width × 2 / 8",
                "flops_f64": flops(Arith::F64),
                "flops_f32": flops(Arith::F32),
                "flops_f16": flops(Arith::F16),
                "flops_bf16": flops(Arith::Bf16),
                "iops_i32": flops(Arith::I32),
                "flops_formula": "SMs × results per clock per SM × 2 × max SM clock (crates/gpu/src/peak.rs)",
                "tensor_flops_f16": gemm(peak::Gemm::F16),
                "tensor_flops_bf16": gemm(peak::Gemm::Bf16),
                "tensor_flops_tf32": gemm(peak::Gemm::Tf32),
                "gemm_flops_f64": gemm(peak::Gemm::F64),
                "tensor_ops_int8": gemm(peak::Gemm::Int8),
                "tensor_flops_fp8": gemm(peak::Gemm::Fp8),
            },
        })
    }
}

/// The module's host facts: the driver and every device, or why CUDA is
/// not usable here.
pub(crate) fn host_facts(virtualized: bool) -> Json {
    match driver() {
        Ok(d) => json!({
            "cuda_driver_version": d.version_string(),
            "nvrtc": match super::nvrtc::api() {
                Ok(api) => json!({
                    "version": super::nvrtc::version().map(|(a, b)| format!("{a}.{b}")),
                    "library": api.file(),
                }),
                Err(e) => Json::from(e),
            },
            "cublas": match super::blas::api() {
                Ok(api) => json!({ "library": api.file() }),
                Err(e) => Json::from(e),
            },
            "nvlink": super::nvml::nvlink_summary(&d.devices),
            "devices": d.devices.iter().map(|i| i.facts(virtualized)).collect::<Vec<_>>(),
        }),
        Err(reason) => json!({ "cuda": null, "reason": reason }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An H100 SXM as the driver describes it.
    pub(crate) fn h100() -> DeviceInfo {
        DeviceInfo {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            cc: (9, 0),
            sms: 132,
            clock_khz: 1_980_000,
            mem_clock_khz: 2_619_000,
            bus_width_bits: 5120,
            memory_bytes: 85_031_714_816,
            l2_bytes: 52_428_800,
            max_threads_per_sm: 2048,
            fp32_to_fp64: Some(2),
            integrated: false,
            ecc: true,
            host_page_tables: false,
            pci_bus_id: "0000:19:00.0".into(),
            pcie: Some(PcieLink {
                max_gts: 32.0,
                max_width: 16,
                port_gts: Some(32.0),
                port_width: Some(16),
                current_gts: Some(32.0),
                current_width: Some(16),
            }),
        }
    }

    #[test]
    fn facts_carry_the_derived_peaks() {
        let f = h100().facts(false);
        assert_eq!(f["compute_capability"], "9.0");
        assert_eq!(f["sms"], 132);
        assert_eq!(f["pcie"]["max_gen"], 5);
        let bw = f["peaks"]["memory_bytes_per_sec"].as_f64().unwrap();
        assert!((bw / 3.352e12 - 1.0).abs() < 0.002, "{bw}");
        let f32 = f["peaks"]["flops_f32"].as_f64().unwrap();
        assert!((f32 / 66.9e12 - 1.0).abs() < 0.005, "{f32}");
        assert!(f["peaks"]["tensor_flops_bf16"].as_f64().unwrap() > 1e15);
    }

    #[test]
    fn h200_facts_derive_its_hbm3e_peak_from_the_driver_s_attributes() {
        // H200 SXM: the same GH100 (132 SMs, cc 9.0) with six HBM3e stacks.
        let d = DeviceInfo {
            name: "NVIDIA H200".into(),
            mem_clock_khz: 3_201_000,
            bus_width_bits: 6144,
            memory_bytes: 150_754_820_096,
            ..h100()
        };
        let f = d.facts(false);
        let bw = f["peaks"]["memory_bytes_per_sec"].as_f64().unwrap();
        // 3201 MHz × 2 × 6144 bit / 8 = 4.92 TB/s: not below the 4.8 TB/s
        // datasheet, so a measured copy cannot overshoot the derived peak.
        assert!((bw / 4.917e12 - 1.0).abs() < 0.002 && bw >= 4.8e12, "{bw}");
        // The compute peaks are the H100's: same SMs, same clock.
        assert_eq!(
            f["peaks"]["flops_f32"],
            h100().facts(false)["peaks"]["flops_f32"]
        );
        assert_eq!(f["host_link_coherent_nvlink"], false);
    }

    #[test]
    fn export_variants_get_no_table_peak() {
        let mut d = h100();
        d.name = "NVIDIA H20".into();
        assert!(d.restricted("bf16"));
        assert!(d.facts(false)["peaks"]["tensor_flops_bf16"].is_null());
        d.name = "NVIDIA H200".into();
        assert!(!d.restricted("bf16"));
        d.name = "NVIDIA H800 PCIe".into();
        assert!(d.restricted("f64") && !d.restricted("f32"));
    }

    #[test]
    fn the_device_list_names_every_device() {
        let d = Driver {
            version: 12040,
            devices: vec![h100(), DeviceInfo { index: 1, ..h100() }],
        };
        assert_eq!(d.version_string(), "12.4");
        let e = d.device(3).unwrap_err();
        assert!(
            e.contains("no CUDA device 3") && e.contains("2 CUDA devices"),
            "{e}"
        );
        assert!(
            e.contains("0 = NVIDIA H100") && e.contains("1 = NVIDIA H100"),
            "{e}"
        );
        assert!(d.device(1).is_ok());
    }

    #[test]
    fn cuinit_failures_say_what_to_fix_and_keep_the_skip_prefixes() {
        let no_dev = init_failure(100, "CUDA_ERROR_NO_DEVICE = 100");
        assert!(
            no_dev.starts_with("no CUDA device") && no_dev.contains("= 100"),
            "{no_dev}"
        );
        assert!(init_failure(34, "x").starts_with("no CUDA driver"));
        // HGX H100/H200 without the fabric manager: 802, or 919
        // (CUDA_ERROR_FABRIC_NOT_READY, which cudarc's 12.8 enum lacks).
        for code in [802, 919] {
            let e = init_failure(code, "y");
            assert!(
                e.starts_with("the CUDA driver") && e.contains("nvidia-fabricmanager"),
                "{e}"
            );
        }
        assert!(init_failure(803, "z").contains("reboot"));
        assert!(init_failure(804, "z").contains("LD_LIBRARY_PATH"));
        assert!(init_failure(999, "z").contains("nvidia-uvm"));
        let other = init_failure(4242, "CUDA error 4242, unknown");
        assert!(
            other.starts_with("the CUDA driver cannot start") && other.contains("4242"),
            "{other}"
        );
    }

    #[test]
    fn sysfs_link_speeds_parse() {
        assert_eq!(parse_gts("16.0 GT/s PCIe\n"), Some(16.0));
        assert_eq!(parse_gts("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_gts("Unknown"), None);
    }

    #[test]
    fn a_pcie_link_is_read_from_a_sysfs_tree() {
        let root = std::env::temp_dir().join(format!("bs-gpu-sysfs-{}", std::process::id()));
        let up = root.join("0000:00:01.0");
        let dev = up.join("0000:01:00.0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(up.join("max_link_speed"), "16.0 GT/s PCIe\n").unwrap();
        std::fs::write(up.join("max_link_width"), "16\n").unwrap();
        std::fs::write(dev.join("max_link_speed"), "32.0 GT/s PCIe\n").unwrap();
        std::fs::write(dev.join("max_link_width"), "16\n").unwrap();
        std::fs::write(dev.join("current_link_speed"), "2.5 GT/s PCIe\n").unwrap();
        std::fs::write(dev.join("current_link_width"), "16\n").unwrap();
        let l = pcie_link(dev).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!((l.max_gts, l.port_gts), (32.0, Some(16.0)));
        // A Gen5 GPU in a Gen4 slot runs at Gen4.
        assert_eq!(l.usable(true), (16.0, 16));
        // In a VM the parent is an emulated port: the GPU's own link counts.
        assert_eq!(l.usable(false), (32.0, 16));
        assert_eq!(l.current_gts, Some(2.5));
    }

    #[test]
    fn without_a_driver_detection_says_why() {
        if libs::driver().is_err() {
            let e = driver().unwrap_err();
            assert!(e.starts_with("no CUDA driver"), "{e}");
            let f = host_facts(false);
            assert!(f["reason"].as_str().unwrap().contains("no CUDA driver"));
        }
    }
}
