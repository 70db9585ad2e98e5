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
