//! cuBLASLt (`libcublasLt.so.13`/`.12`), loaded at run time like cuBLAS,
//! for the one GEMM plain cuBLAS cannot do: FP8 (`cublasLtMatmul` with
//! e4m3 inputs). FP8 GEMMs have a fixed layout rule: A transposed, B not
//! ("TN"), both column-major; C and D here bf16, f32 compute and scale
//! type, unit scales (no scale pointers, which cuBLASLt reads as 1).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use benchsuite_core::BenchError;

use super::blas::{COMPUTE_32F, OP_N, OP_T, R_16BF, R_32F, status_name};
use super::libs::{self, Loaded, Spec};
use super::rt::{DeviceBuffer, Gpu};

type Handle = *mut c_void;
type Desc = *mut c_void;
type Layout = *mut c_void;
type Pref = *mut c_void;
type Status = c_int;

/// CUBLAS_STATUS_NOT_SUPPORTED.
const NOT_SUPPORTED: Status = 15;

/// CUDA_R_8F_E4M3 (cudaDataType).
pub(crate) const R_8F_E4M3: c_int = 28;
/// cublasLtMatmulDescAttributes_t: CUBLASLT_MATMUL_DESC_TRANSA, _TRANSB,
/// _FAST_ACCUM.
pub(crate) const DESC_TRANSA: c_int = 3;
pub(crate) const DESC_TRANSB: c_int = 4;
pub(crate) const DESC_FAST_ACCUM: c_int = 25;
/// CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES.
pub(crate) const PREF_MAX_WORKSPACE_BYTES: c_int = 1;

/// cublasLtMatmulHeuristicResult_t: the algorithm (`uint64_t data[8]`),
/// its workspace size, state, waves count and four reserved ints.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Heuristic {
    algo: [u64; 8],
    workspace_size: usize,
    state: Status,
    waves: f32,
    reserved: [c_int; 4],
}

type MatmulFn = unsafe extern "C" fn(
    Handle,
    Desc,
    *const c_void,
    *const c_void,
    Layout,
    *const c_void,
    Layout,
    *const c_void,
    *const c_void,
    Layout,
    *mut c_void,
    Layout,
    *const [u64; 8],
    *mut c_void,
    usize,
    *mut c_void,
) -> Status;

type HeuristicFn = unsafe extern "C" fn(
    Handle,
    Desc,
    Layout,
    Layout,
    Layout,
    Layout,
    Pref,
    c_int,
    *mut Heuristic,
    *mut c_int,
) -> Status;

/// The cuBLASLt entry points used.
#[derive(Debug)]
pub(crate) struct Api {
    lib: Loaded,
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    desc_create: unsafe extern "C" fn(*mut Desc, c_int, c_int) -> Status,
    desc_destroy: unsafe extern "C" fn(Desc) -> Status,
    desc_set: unsafe extern "C" fn(Desc, c_int, *const c_void, usize) -> Status,
    layout_create: unsafe extern "C" fn(*mut Layout, c_int, u64, u64, i64) -> Status,
    layout_destroy: unsafe extern "C" fn(Layout) -> Status,
    pref_create: unsafe extern "C" fn(*mut Pref) -> Status,
    pref_destroy: unsafe extern "C" fn(Pref) -> Status,
    pref_set: unsafe extern "C" fn(Pref, c_int, *const c_void, usize) -> Status,
    heuristic: HeuristicFn,
    matmul: MatmulFn,
}

const SPEC: Spec = Spec {
    what: "cuBLASLt",
    stem: "libcublasLt.so.",
    deps: &[],
    runtime_deps: &[],
    pip_dir: |m| if m >= 13 { "cu13" } else { "cublas" },
    pip_pkg: |m| {
        if m >= 13 {
            "nvidia-cublas"
        } else {
            "nvidia-cublas-cu12"
        }
    },
};

/// cuBLASLt, loaded once, or why it cannot be.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let lib = libs::load(&SPEC, libs::driver_major())?;
        let w = "cuBLASLt";
        // SAFETY: the types are cublasLt.h's prototypes: handles,
        // descriptors, layouts and preferences are opaque pointers, enums
        // C ints, cublasLtMatrixLayoutCreate takes (uint64 rows, uint64
        // cols, int64 ld), cublasLtMatmulAlgo_t is uint64_t[8].
        unsafe {
            Ok(Api {
                create: libs::symbol(&lib, w, "cublasLtCreate")?,
                destroy: libs::symbol(&lib, w, "cublasLtDestroy")?,
                desc_create: libs::symbol(&lib, w, "cublasLtMatmulDescCreate")?,
                desc_destroy: libs::symbol(&lib, w, "cublasLtMatmulDescDestroy")?,
                desc_set: libs::symbol(&lib, w, "cublasLtMatmulDescSetAttribute")?,
                layout_create: libs::symbol(&lib, w, "cublasLtMatrixLayoutCreate")?,
                layout_destroy: libs::symbol(&lib, w, "cublasLtMatrixLayoutDestroy")?,
                pref_create: libs::symbol(&lib, w, "cublasLtMatmulPreferenceCreate")?,
                pref_destroy: libs::symbol(&lib, w, "cublasLtMatmulPreferenceDestroy")?,
                pref_set: libs::symbol(&lib, w, "cublasLtMatmulPreferenceSetAttribute")?,
                heuristic: libs::symbol(&lib, w, "cublasLtMatmulAlgoGetHeuristic")?,
                matmul: libs::symbol(&lib, w, "cublasLtMatmul")?,
                lib,
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl Api {
    /// The file loaded.
    pub(crate) fn file(&self) -> &str {
        &self.lib.file
    }
}

/// Whether cuBLASLt loads.
pub(crate) fn present() -> Result<(), String> {
    api().map(|_| ())
}

fn check(what: &str, s: Status) -> Result<(), BenchError> {
    if s == 0 {
        Ok(())
    } else {
        Err(BenchError::Other(format!("{what}: {}", status_name(s))))
    }
}

/// The layout of one N×N matrix: (type, rows, cols, ld) as passed to
/// `cublasLtMatrixLayoutCreate`, for A, B, C and D of the FP8 GEMM
/// D = Aᵀ·B (A stored K×M, B K×N, C and D M×N, all column-major, M = N =
/// K = n).
pub(crate) fn fp8_layouts(n: u64) -> [(c_int, u64, u64, i64); 4] {
    let ld = n as i64;
    [
        (R_8F_E4M3, n, n, ld),
        (R_8F_E4M3, n, n, ld),
        (R_16BF, n, n, ld),
        (R_16BF, n, n, ld),
    ]
}

/// (transa, transb) of the FP8 GEMM: "TN".
pub(crate) const FP8_TRANS: (c_int, c_int) = (OP_T, OP_N);

/// One planned FP8 GEMM: the handle, its descriptors and the algorithm
/// cuBLASLt's heuristic chose. Everything is destroyed on drop, layouts
/// and descriptor before the handle.
#[derive(Debug)]
pub(crate) struct Fp8Gemm {
    api: &'static Api,
    layouts: Vec<Layout>,
    desc: Desc,
    pref: Pref,
    handle: Handle,
    algo: Heuristic,
    workspace: (u64, usize),
    stream: *mut c_void,
}

// SAFETY: the handles are used from one thread at a time (the runner
// moves a case between threads but never shares it); cuBLASLt handles are
// not tied to the creating thread.
unsafe impl Send for Fp8Gemm {}

impl Fp8Gemm {
    /// Plans D = Aᵀ·B for N×N matrices on `gpu`'s stream with `workspace`;
    /// `fast_accum` sets CUBLASLT_MATMUL_DESC_FAST_ACCUM (about 3% faster
    /// on an H200, fewer exact partial sums).
    pub(crate) fn new(
        gpu: &Gpu,
        n: u64,
        workspace: &DeviceBuffer,
        fast_accum: bool,
    ) -> Result<Fp8Gemm, BenchError> {
        let api = api().map_err(BenchError::Skip)?;
        gpu.bind()?;
        let mut g = Fp8Gemm {
            api,
            layouts: Vec::new(),
            desc: std::ptr::null_mut(),
            pref: std::ptr::null_mut(),
            handle: std::ptr::null_mut(),
            algo: Heuristic::default(),
            workspace: (workspace.ptr(), workspace.len()),
            stream: gpu.raw_stream() as *mut c_void,
        };
        // SAFETY: each call gets valid out-pointers and the objects made
        // above it; attribute buffers are locals of the size passed, read
        // during the call. On an error `g` is dropped, destroying what was
        // made (null members are skipped).
        unsafe {
            check("cublasLtCreate", (api.create)(&mut g.handle))?;
            check(
                "cublasLtMatmulDescCreate",
                (api.desc_create)(&mut g.desc, COMPUTE_32F, R_32F),
            )?;
            let (ta, tb) = FP8_TRANS;
            let fast: i8 = fast_accum.into();
            for (attr, p, len) in [
                (DESC_TRANSA, &ta as *const c_int as *const c_void, 4),
                (DESC_TRANSB, &tb as *const c_int as *const c_void, 4),
                (DESC_FAST_ACCUM, &fast as *const i8 as *const c_void, 1),
            ] {
                check(
                    "cublasLtMatmulDescSetAttribute",
                    (api.desc_set)(g.desc, attr, p, len),
                )?;
            }
            for (ty, rows, cols, ld) in fp8_layouts(n) {
                let mut l: Layout = std::ptr::null_mut();
                check(
                    "cublasLtMatrixLayoutCreate",
                    (api.layout_create)(&mut l, ty, rows, cols, ld),
                )?;
                g.layouts.push(l);
            }
            check(
                "cublasLtMatmulPreferenceCreate",
                (api.pref_create)(&mut g.pref),
            )?;
            let ws = workspace.len() as u64;
            check(
                "cublasLtMatmulPreferenceSetAttribute",
                (api.pref_set)(
                    g.pref,
                    PREF_MAX_WORKSPACE_BYTES,
                    &ws as *const u64 as *const c_void,
                    8,
                ),
            )?;
            let mut found: c_int = 0;
            let l = &g.layouts;
            // No algorithm at all is CUBLAS_STATUS_NOT_SUPPORTED (15), not
            // a count of 0: a skip, as the count would be.
            let rc = (api.heuristic)(
                g.handle,
                g.desc,
                l[0],
                l[1],
                l[2],
                l[3],
                g.pref,
                1,
                &mut g.algo,
                &mut found,
            );
            if rc != NOT_SUPPORTED {
                check("cublasLtMatmulAlgoGetHeuristic", rc)?;
            }
            if rc == NOT_SUPPORTED || found < 1 {
                return Err(BenchError::Skip(
                    "cuBLASLt has no FP8 algorithm for this GEMM on this GPU (cublasLtMatmulAlgoGetHeuristic found none)".into(),
                ));
            }
        }
        Ok(g)
    }

    /// Queues D = Aᵀ·B (C = D, beta = 0).
    ///
    /// # Safety
    /// `a` and `b` must be device buffers of N×N e4m3 bytes, `d` of N×N
    /// bf16, alive until the queued GEMM has finished.
    pub(crate) unsafe fn run(
        &self,
        a: *const c_void,
        b: *const c_void,
        d: *mut c_void,
    ) -> Result<(), BenchError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let l = &self.layouts;
        // SAFETY: the plan's objects are alive (`self`); the scalars live
        // on this frame for the call (host pointer mode); the workspace is
        // the case's, which outlives the plan; the matrices are the
        // caller's contract.
        check("cublasLtMatmul", unsafe {
            (self.api.matmul)(
                self.handle,
                self.desc,
                &alpha as *const f32 as *const c_void,
                a,
                l[0],
                b,
                l[1],
                &beta as *const f32 as *const c_void,
                d,
                l[2],
                d,
                l[3],
                &self.algo.algo,
                self.workspace.0 as *mut c_void,
                self.workspace.1,
                self.stream,
            )
        })
    }
}

impl Drop for Fp8Gemm {
    fn drop(&mut self) {
        // SAFETY: each object was made by this plan and is destroyed once;
        // null ones (a failed `new`) are skipped.
        unsafe {
            for l in self.layouts.drain(..) {
                let _ = (self.api.layout_destroy)(l);
            }
            if !self.pref.is_null() {
                let _ = (self.api.pref_destroy)(self.pref);
            }
            if !self.desc.is_null() {
                let _ = (self.api.desc_destroy)(self.desc);
            }
            if !self.handle.is_null() {
                let _ = (self.api.destroy)(self.handle);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_runs_tn_with_e4m3_inputs_and_bf16_outputs() {
        assert_eq!(FP8_TRANS, (1, 0));
        let l = fp8_layouts(8192);
        assert_eq!(l[0], (28, 8192, 8192, 8192));
        assert_eq!(l[1].0, R_8F_E4M3);
        assert_eq!((l[2].0, l[3].0), (14, 14));
        // cublasLtMatmulHeuristicResult_t is 96 bytes in cublasLt.h.
        assert_eq!(std::mem::size_of::<Heuristic>(), 96);
        assert_eq!((DESC_TRANSA, DESC_TRANSB, DESC_FAST_ACCUM), (3, 4, 25));
    }
}
