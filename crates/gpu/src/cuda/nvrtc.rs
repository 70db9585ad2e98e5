//! Compiling the CUDA C kernels at run time with NVRTC, for the device's own
//! architecture.
//!
//! The kernels are compiled to a CUBIN for `sm_XY` when this NVRTC knows
//! the device's compute capability: machine code the driver loads as is, so
//! a driver older than NVRTC is fine (CUDA minor-version compatibility). For
//! a GPU newer than NVRTC, the newest `compute_XY` PTX it can emit is used
//! instead and the driver compiles it (which needs a driver at least as new
//! as NVRTC). Results are cached per process by (source, architecture).

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::result as nr;
use cudarc::nvrtc::sys;

use super::libs;

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

/// NVRTC's version (major, minor), if it loads.
pub(crate) fn version() -> Option<(i32, i32)> {
    libs::nvrtc().ok()?;
    catch_unwind(|| {
        let (mut a, mut b) = (0, 0);
        // SAFETY: both are valid out-pointers for the call.
        let rc = unsafe { sys::nvrtcVersion(&mut a, &mut b) };
        (rc == sys::nvrtcResult::NVRTC_SUCCESS).then_some((a, b))
    })
    .ok()
    .flatten()
}

/// The real architectures (`52`, ..., `90`, `100`, `120`) this NVRTC can
/// compile for.
pub(crate) fn supported_archs() -> Result<Vec<u32>, String> {
    libs::nvrtc()?;
    catch_unwind(|| {
        let mut n = 0;
        // SAFETY: `n` is a valid out-pointer.
        unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
            .result()
            .map_err(|e| format!("nvrtcGetNumSupportedArchs: {e:?}"))?;
        let mut v = vec![0i32; n.max(0) as usize];
        // SAFETY: `v` has room for the `n` entries NVRTC writes.
        unsafe { sys::nvrtcGetSupportedArchs(v.as_mut_ptr()) }
            .result()
            .map_err(|e| format!("nvrtcGetSupportedArchs: {e:?}"))?;
        Ok(v.into_iter().filter(|a| *a > 0).map(|a| a as u32).collect())
    })
    .unwrap_or_else(|_| Err("NVRTC panicked while listing its architectures".into()))
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
pub(crate) fn compile(name: &str, src: &str, cc: (u32, u32)) -> Result<Arc<Image>, String> {
    libs::nvrtc()?;
    let target = target_for(cc, &supported_archs()?)?;
    compile_for(name, src, &target)
}

/// Compiles `src` for an explicit target (`sm_90` → CUBIN, `compute_90` →
/// PTX). Errors carry NVRTC's log.
pub(crate) fn compile_for(name: &str, src: &str, target: &str) -> Result<Arc<Image>, String> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (src.to_string(), target.to_string());
    if let Some(img) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(img.clone());
    }
    libs::nvrtc()?;
    let img = catch_unwind(AssertUnwindSafe(|| compile_uncached(name, src, target)))
        .unwrap_or_else(|_| Err(format!("NVRTC panicked compiling {name}")))?;
    let img = Arc::new(img);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, img.clone());
    Ok(img)
}

/// Compiled images by (source, target).
type Cache = HashMap<(String, String), Arc<Image>>;

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is
        // destroyed exactly once, here.
        let _ = unsafe { nr::destroy_program(self.0) };
    }
}

fn compile_uncached(name: &str, src: &str, target: &str) -> Result<Image, String> {
    let csrc = CString::new(src).map_err(|_| "kernel source contains a NUL byte".to_string())?;
    let cname = CString::new(format!("{name}.cu")).map_err(|_| "bad kernel name".to_string())?;
    let prog = Program(
        nr::create_program(&csrc, Some(&cname))
            .map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?,
    );
    let opts = [format!("--gpu-architecture={target}")];
    // SAFETY: `prog.0` is a live program; the options are plain strings.
    if let Err(e) = unsafe { nr::compile_program(prog.0, &opts) } {
        // SAFETY: as above; the log is NUL-terminated by NVRTC.
        let log = unsafe { nr::get_program_log(prog.0) }
            .map(|l| {
                // SAFETY: the buffer holds NVRTC's NUL-terminated log.
                unsafe { CStr::from_ptr(l.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        return Err(format!(
            "NVRTC could not compile {name} for {target}: {e:?}\n{}",
            log.trim()
        ));
    }
    let bytes = if target.starts_with("sm_") {
        let mut size = 0usize;
        // SAFETY: `size` is a valid out-pointer; `prog.0` compiled.
        unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) }
            .result()
            .map_err(|e| format!("nvrtcGetCUBINSize: {e:?}"))?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes NVRTC writes.
        unsafe { sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut c_char) }
            .result()
            .map_err(|e| format!("nvrtcGetCUBIN: {e:?}"))?;
        buf
    } else {
        // SAFETY: `prog.0` compiled; get_ptx sizes the buffer itself and the
        // PTX it returns ends with NUL, which cuModuleLoadData needs.
        let ptx = unsafe { nr::get_ptx(prog.0) }.map_err(|e| format!("nvrtcGetPTX: {e:?}"))?;
        ptx.into_iter().map(|c| c as u8).collect()
    };
    if bytes.is_empty() {
        return Err(format!(
            "NVRTC returned an empty image for {name} ({target})"
        ));
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
        if libs::nvrtc().is_err() {
            eprintln!("skipped: {}", libs::nvrtc().unwrap_err());
            return;
        }
        let e = compile_for(
            "broken",
            "extern \"C\" __global__ void k() { int x = ; }",
            "sm_80",
        )
        .unwrap_err();
        assert!(e.contains("broken") && e.contains("sm_80"), "{e}");
        assert!(e.contains("error"), "{e}");
    }
}
