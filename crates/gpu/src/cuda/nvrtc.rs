//! Compiling the CUDA C kernels at run time with NVRTC, for the device's own
//! architecture.
//!
//! The kernels are compiled to a CUBIN for `sm_XY` when this NVRTC knows
//! the device's compute capability: machine code the driver loads as is, so
//! a driver older than NVRTC is fine within one CUDA major version (minor-
//! version compatibility; `libs::load` never picks an NVRTC of a newer
//! major version than the driver's: a 12.x driver cannot load CUDA 13
//! code). For
//! a GPU newer than NVRTC, the newest `compute_XY` PTX it can emit is used
//! instead and the driver compiles it (which needs a driver at least as new
//! as NVRTC). Results are cached per process by (source, architecture).

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use benchsuite_core::BenchError;

use super::libs::{self, Loaded, Spec};

/// A compiled module image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Image {
    /// CUBIN bytes, or NUL-terminated PTX text.
    pub bytes: Vec<u8>,
    /// `sm_90` (CUBIN) or `compute_90` (PTX).
    pub target: String,
}

impl Image {
    /// True for machine code, false for PTX the driver must compile.
    pub(crate) fn is_cubin(&self) -> bool {
        self.target.starts_with("sm_")
    }
}

/// `nvrtcProgram`.
type Prog = *mut c_void;
/// `nvrtcResult` (a C enum; 0 is success).
type Res = c_int;

/// The NVRTC entry points this crate uses; the prototypes of `nvrtc.h`,
/// unchanged from CUDA 11.2 to 13.
#[derive(Debug)]
pub(crate) struct Api {
    lib: Loaded,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Res,
    num_archs: unsafe extern "C" fn(*mut c_int) -> Res,
    archs: unsafe extern "C" fn(*mut c_int) -> Res,
    create: unsafe extern "C" fn(
        *mut Prog,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Res,
    compile: unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> Res,
    log_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    log: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    cubin_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    cubin: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    ptx_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    ptx: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    destroy: unsafe extern "C" fn(*mut Prog) -> Res,
    error_string: unsafe extern "C" fn(Res) -> *const c_char,
}

/// Where NVRTC lives and what it is called.
const SPEC: Spec = Spec {
    what: "NVRTC",
    stem: "libnvrtc.so.",
    deps: &[],
    // NVRTC opens libnvrtc-builtins.so.<major>.<minor> from its own
    // directory when it compiles.
    runtime_deps: &["libnvrtc-builtins.so."],
    pip_dir: |m| if m >= 13 { "cu13" } else { "cuda_nvrtc" },
    pip_pkg: |m| {
        if m >= 13 {
            "nvidia-cuda-nvrtc"
        } else {
            "nvidia-cuda-nvrtc-cu12"
        }
    },
};

/// NVRTC, loaded once per process (the newest major version the driver
/// can run), or why it cannot be.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let lib = libs::load(&SPEC, libs::driver_major())?;
        // SAFETY: each type below is the prototype of that function in
        // nvrtc.h (nvrtcResult and the int/size_t out-parameters as
        // declared; nvrtcProgram is an opaque pointer).
        unsafe {
            Ok(Api {
                version: libs::symbol(&lib, "NVRTC", "nvrtcVersion")?,
                num_archs: libs::symbol(&lib, "NVRTC", "nvrtcGetNumSupportedArchs")?,
                archs: libs::symbol(&lib, "NVRTC", "nvrtcGetSupportedArchs")?,
                create: libs::symbol(&lib, "NVRTC", "nvrtcCreateProgram")?,
                compile: libs::symbol(&lib, "NVRTC", "nvrtcCompileProgram")?,
                log_size: libs::symbol(&lib, "NVRTC", "nvrtcGetProgramLogSize")?,
                log: libs::symbol(&lib, "NVRTC", "nvrtcGetProgramLog")?,
                cubin_size: libs::symbol(&lib, "NVRTC", "nvrtcGetCUBINSize")?,
                cubin: libs::symbol(&lib, "NVRTC", "nvrtcGetCUBIN")?,
                ptx_size: libs::symbol(&lib, "NVRTC", "nvrtcGetPTXSize")?,
                ptx: libs::symbol(&lib, "NVRTC", "nvrtcGetPTX")?,
                destroy: libs::symbol(&lib, "NVRTC", "nvrtcDestroyProgram")?,
                error_string: libs::symbol(&lib, "NVRTC", "nvrtcGetErrorString")?,
                lib,
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl Api {
    /// `nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)`.
    fn check(&self, what: &str, rc: Res) -> Result<(), String> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: nvrtcGetErrorString takes any value and returns a static
        // NUL-terminated string (or NULL).
        let p = unsafe { (self.error_string)(rc) };
        let name = if p.is_null() {
            "unknown error".to_string()
        } else {
            // SAFETY: as above: a static C string owned by NVRTC.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(format!("{what}: {name} ({rc})"))
    }

    /// Where NVRTC was loaded from (`libnvrtc.so.13`, or a full path).
    pub(crate) fn file(&self) -> &str {
        &self.lib.file
    }
}

/// NVRTC's version (major, minor), if it loads.
pub(crate) fn version() -> Option<(i32, i32)> {
    let api = api().ok()?;
    let (mut a, mut b) = (0, 0);
    // SAFETY: both are valid out-pointers for the call.
    let rc = unsafe { (api.version)(&mut a, &mut b) };
    (rc == 0).then_some((a, b))
}

/// The real architectures (`52`, ..., `90`, `100`, `120`) this NVRTC can
/// compile for.
pub(crate) fn supported_archs() -> Result<Vec<u32>, String> {
    let api = api()?;
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer.
    api.check("nvrtcGetNumSupportedArchs", unsafe {
        (api.num_archs)(&mut n)
    })?;
    let mut v = vec![0 as c_int; n.max(0) as usize];
    if !v.is_empty() {
        // SAFETY: `v` has room for the `n` entries NVRTC writes.
        api.check("nvrtcGetSupportedArchs", unsafe {
            (api.archs)(v.as_mut_ptr())
        })?;
    }
    Ok(v.into_iter().filter(|a| *a > 0).map(|a| a as u32).collect())
}

/// The target to compile for on a device of compute capability `cc`:
/// `sm_XY` when NVRTC supports it, else the newest `compute_XY` below it.
pub(crate) fn target_for(cc: (u32, u32), supported: &[u32]) -> Result<String, String> {
    let want = cc.0 * 10 + cc.1;
    if supported.contains(&want) {
        return Ok(format!("sm_{want}"));
    }
    supported
        .iter()
        .copied()
        .filter(|a| *a <= want)
        .max()
        .map(|a| format!("compute_{a}"))
        .ok_or_else(|| {
            format!(
                "this NVRTC cannot compile for compute capability {}.{} (it supports {:?}); use an NVRTC from a CUDA toolkit that knows the GPU",
                cc.0, cc.1, supported
            )
        })
}

/// Compiles `src` for a device of compute capability `cc`, once per process.
pub(crate) fn compile(name: &str, src: &str, cc: (u32, u32)) -> Result<Arc<Image>, BenchError> {
    let target = target_for(cc, &supported_archs().map_err(BenchError::Other)?)
        .map_err(BenchError::Other)?;
    compile_for(name, src, &target)
}

/// Compiles `src` for an explicit target (`sm_90` → CUBIN, `compute_90` →
/// PTX). A failed compilation has NVRTC's error and log as its cause.
pub(crate) fn compile_for(name: &str, src: &str, target: &str) -> Result<Arc<Image>, BenchError> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (src.to_string(), target.to_string());
    if let Some(img) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(img.clone());
    }
    let api = api().map_err(BenchError::Other)?;
    let img = Arc::new(compile_uncached(api, name, src, target)?);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, img.clone());
    Ok(img)
}

/// Compiled images by (source, target).
type Cache = HashMap<(String, String), Arc<Image>>;

/// An NVRTC program, destroyed on drop.
struct Program<'a> {
    api: &'a Api,
    prog: Prog,
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is
        // destroyed exactly once, here.
        let _ = unsafe { (self.api.destroy)(&mut self.prog) };
    }
}

impl Program<'_> {
    /// Reads one of NVRTC's sized outputs (log, CUBIN, PTX).
    fn output(
        &self,
        what: &str,
        size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
        get: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    ) -> Result<Vec<u8>, String> {
        let mut n = 0usize;
        // SAFETY: `self.prog` is a live program; `n` is a valid out-pointer.
        let rc = unsafe { size(self.prog, &mut n) };
        self.api.check(&format!("{what}Size"), rc)?;
        let mut buf = vec![0u8; n];
        if n > 0 {
            // SAFETY: `buf` has the `n` bytes NVRTC said it writes.
            self.api.check(what, unsafe {
                get(self.prog, buf.as_mut_ptr() as *mut c_char)
            })?;
        }
        Ok(buf)
    }
}

fn compile_uncached(api: &Api, name: &str, src: &str, target: &str) -> Result<Image, BenchError> {
    let leaf = |what: &str| BenchError::Other(what.to_string());
    let csrc = CString::new(src).map_err(|_| leaf("kernel source contains a NUL byte"))?;
    let cname = CString::new(format!("{name}.cu")).map_err(|_| leaf("bad kernel name"))?;
    let mut prog: Prog = std::ptr::null_mut();
    // SAFETY: `prog` is a valid out-pointer; the source and name are
    // NUL-terminated and outlive the call; no headers are passed.
    api.check("nvrtcCreateProgram", unsafe {
        (api.create)(
            &mut prog,
            csrc.as_ptr(),
            cname.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })
    .map_err(BenchError::Other)?;
    let prog = Program { api, prog };
    let opt =
        CString::new(format!("--gpu-architecture={target}")).map_err(|_| leaf("bad target"))?;
    let opts = [opt.as_ptr()];
    // SAFETY: `prog` is live; `opts` holds one NUL-terminated option that
    // outlives the call.
    let rc = unsafe { (api.compile)(prog.prog, opts.len() as c_int, opts.as_ptr()) };
    if let Err(e) = api.check("nvrtcCompileProgram", rc) {
        let log = prog
            .output("nvrtcGetProgramLog", api.log_size, api.log)
            .map(|l| {
                CStr::from_bytes_until_nul(&l)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| String::from_utf8_lossy(&l).into_owned())
            })
            .unwrap_or_default();
        return Err(BenchError::caused(
            format!(
                "NVRTC ({}) could not compile {name} for {target}",
                api.file()
            ),
            format!("{e}\n{}", log.trim()),
        ));
    }
    let bytes = if target.starts_with("sm_") {
        prog.output("nvrtcGetCUBIN", api.cubin_size, api.cubin)
    } else {
        // The PTX ends with NUL, which cuModuleLoadData needs.
        prog.output("nvrtcGetPTX", api.ptx_size, api.ptx)
    }
    .map_err(BenchError::Other)?;
    if bytes.is_empty() {
        return Err(BenchError::Other(format!(
            "NVRTC returned an empty image for {name} ({target})"
        )));
    }
    Ok(Image {
        bytes,
        target: target.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_device_arch_or_the_newest_ptx_below_it() {
        let s = [75, 80, 86, 89, 90];
        assert_eq!(target_for((9, 0), &s).unwrap(), "sm_90");
        assert_eq!(target_for((8, 6), &s).unwrap(), "sm_86");
        // A GPU newer than this NVRTC: PTX for the newest arch below it.
        assert_eq!(target_for((12, 0), &s).unwrap(), "compute_90");
        assert_eq!(target_for((8, 7), &s).unwrap(), "compute_86");
        let e = target_for((6, 1), &s).unwrap_err();
        assert!(e.contains("6.1"), "{e}");
    }

    #[test]
    fn a_syntax_error_comes_back_with_nvrtc_s_log() {
        if let Err(e) = libs::nvrtc() {
            benchsuite_core::testing::skip(benchsuite_core::testing::Capability::Nvrtc, &e);
            return;
        }
        let e = compile_for(
            "broken",
            "extern \"C\" __global__ void k() { int x = ; }",
            "sm_80",
        )
        .unwrap_err();
        let e = benchsuite_core::error_chain(&e);
        assert!(e.contains("broken") && e.contains("sm_80"), "{e}");
        assert!(e.contains("error"), "{e}");
    }
}
