//! cuBLAS, loaded by this crate (see `libs`) and called through function
//! pointers: a handle bound to the case's stream with its own workspace,
//! and the two GEMM entry points `gpu.matmul` uses.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use benchsuite_core::BenchError;

use super::libs::{self, Loaded, Spec};
use super::rt::{DeviceBuffer, Gpu};

/// `cublasHandle_t`.
type Handle = *mut c_void;
/// `cublasStatus_t` (a C enum; 0 is success).
type Status = c_int;

/// `cublasOperation_t`: `CUBLAS_OP_N`.
pub(crate) const OP_N: c_int = 0;
/// CUBLAS_OP_T.
pub(crate) const OP_T: c_int = 1;
/// CUDA_R_8I and CUDA_R_32I (cudaDataType).
pub(crate) const R_8I: c_int = 3;
pub(crate) const R_32I: c_int = 10;
/// CUBLAS_COMPUTE_32I (cublasComputeType_t).
pub(crate) const COMPUTE_32I: c_int = 72;
/// `cudaDataType`: `CUDA_R_32F`.
pub(crate) const R_32F: c_int = 0;
/// `cudaDataType`: `CUDA_R_16F`.
pub(crate) const R_16F: c_int = 2;
/// `cudaDataType`: `CUDA_R_16BF`.
pub(crate) const R_16BF: c_int = 14;
/// `cublasComputeType_t`: `CUBLAS_COMPUTE_32F`.
pub(crate) const COMPUTE_32F: c_int = 68;
/// `cublasComputeType_t`: `CUBLAS_COMPUTE_32F_FAST_TF32`.
pub(crate) const COMPUTE_32F_FAST_TF32: c_int = 77;
/// `cublasGemmAlgo_t`: `CUBLAS_GEMM_DEFAULT`.
const GEMM_DEFAULT: c_int = -1;

type GemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;

type Dgemm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f64,
    *const f64,
    c_int,
    *const f64,
    c_int,
    *const f64,
    *mut f64,
    c_int,
) -> Status;

/// The cuBLAS entry points this crate uses; the prototypes of
/// `cublas_api.h`, the same in CUDA 12 and 13.
#[derive(Debug)]
pub(crate) struct Api {
    lib: Loaded,
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    set_workspace: unsafe extern "C" fn(Handle, *mut c_void, usize) -> Status,
    gemm_ex: GemmEx,
    dgemm: Dgemm,
}

/// Where cuBLAS lives and what it is called.
const SPEC: Spec = Spec {
    what: "cuBLAS",
    stem: "libcublas.so.",
    // libcublas needs libcublasLt of the same release.
    deps: &["libcublasLt.so."],
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

/// cuBLAS, loaded once per process (the newest major version the driver
/// can run), or why it cannot be.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let lib = libs::load(&SPEC, libs::driver_major())?;
        // SAFETY: each type is the prototype of that function in
        // cublas_api.h: handles and streams are opaque pointers, the
        // enums (cublasOperation_t, cudaDataType, cublasComputeType_t,
        // cublasGemmAlgo_t, cublasStatus_t) C ints.
        unsafe {
            Ok(Api {
                create: libs::symbol(&lib, "cuBLAS", "cublasCreate_v2")?,
                destroy: libs::symbol(&lib, "cuBLAS", "cublasDestroy_v2")?,
                set_stream: libs::symbol(&lib, "cuBLAS", "cublasSetStream_v2")?,
                set_workspace: libs::symbol(&lib, "cuBLAS", "cublasSetWorkspace_v2")?,
                gemm_ex: libs::symbol(&lib, "cuBLAS", "cublasGemmEx")?,
                dgemm: libs::symbol(&lib, "cuBLAS", "cublasDgemm_v2")?,
                lib,
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl Api {
    /// Where cuBLAS was loaded from (`libcublas.so.12`, or a full path).
    pub(crate) fn file(&self) -> &str {
        &self.lib.file
    }
}

/// `CUBLAS_STATUS_NOT_SUPPORTED (15)`.
pub(crate) fn status_name(s: Status) -> String {
    let name = match s {
        0 => "CUBLAS_STATUS_SUCCESS",
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => "unknown cuBLAS status",
    };
    format!("{name} ({s})")
}

fn check(what: &str, s: Status) -> Result<(), BenchError> {
    if s == 0 {
        Ok(())
    } else {
        Err(BenchError::Other(format!("{what}: {}", status_name(s))))
    }
}

/// A cuBLAS handle whose work goes to one stream and uses one workspace;
/// destroyed on drop (which waits for its work).
#[derive(Debug)]
pub(crate) struct Blas {
    api: &'static Api,
    handle: Handle,
}

// SAFETY: a cuBLAS handle may be used from any thread as long as no two
// threads use it at once; `Blas` is owned by one case, used through
// `&self` from the thread that runs the case, and not `Sync`.
unsafe impl Send for Blas {}

impl Blas {
    /// Creates a handle in `gpu`'s context, bound to its stream, with
    /// `workspace` as its workspace (cublasSetStream resets the workspace,
    /// so it is set second). The caller keeps `workspace` alive until the
    /// handle is dropped.
    pub(crate) fn new(gpu: &Gpu, workspace: &DeviceBuffer) -> Result<Blas, BenchError> {
        let api = api().map_err(BenchError::Skip)?;
        gpu.bind()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out-pointer; the context is current.
        check("cublasCreate", unsafe { (api.create)(&mut handle) })?;
        let blas = Blas { api, handle };
        // SAFETY: the handle is live and the stream belongs to the current
        // context and outlives the handle (the case drops the handle first).
        check("cublasSetStream", unsafe {
            (api.set_stream)(blas.handle, gpu.raw_stream() as *mut c_void)
        })?;
        // SAFETY: the workspace is device memory of `workspace.len()` bytes,
        // 256-byte aligned (cuMemAlloc), kept alive by the caller.
        check("cublasSetWorkspace", unsafe {
            (api.set_workspace)(blas.handle, workspace.ptr() as *mut c_void, workspace.len())
        })?;
        Ok(blas)
    }

    /// `cublasGemmEx` with alpha = 1, beta = 0: C = op(A)·B with N×N
    /// column-major matrices, ld = N, where op(A) is A (`transa` =
    /// [`OP_N`]) or Aᵀ ([`OP_T`]: the "TN" layout the int8 IMMA path
    /// needs). Scalars are f32 for the 32F compute types and i32 for
    /// [`COMPUTE_32I`], as cuBLAS requires.
    ///
    /// # Safety
    /// `a` and `b` must be device buffers of N×N elements of `ab`, `c` of
    /// N×N elements of `out`, alive until the queued GEMM has finished.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn gemm_ex(
        &self,
        n: c_int,
        transa: c_int,
        a: *const c_void,
        b: *const c_void,
        c: *mut c_void,
        ab: c_int,
        out: c_int,
        compute: c_int,
    ) -> Result<(), BenchError> {
        let (alpha_f, beta_f) = (1.0f32, 0.0f32);
        let (alpha_i, beta_i) = (1i32, 0i32);
        let (alpha, beta) = if compute == COMPUTE_32I {
            (
                &alpha_i as *const i32 as *const c_void,
                &beta_i as *const i32 as *const c_void,
            )
        } else {
            (
                &alpha_f as *const f32 as *const c_void,
                &beta_f as *const f32 as *const c_void,
            )
        };
        // SAFETY: the arguments follow cublasGemmEx's prototype (handle,
        // transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
        // beta, C, Ctype, ldc, computeType, algo); the scalars live on this
        // frame for the call (host pointer mode reads them before it
        // returns); the matrices are the caller's contract.
        check("cublasGemmEx", unsafe {
            (self.api.gemm_ex)(
                self.handle,
                transa,
                OP_N,
                n,
                n,
                n,
                alpha,
                a,
                ab,
                n,
                b,
                ab,
                n,
                beta,
                c,
                out,
                n,
                compute,
                GEMM_DEFAULT,
            )
        })
    }

    /// `cublasDgemm`, otherwise as [`Blas::gemm_ex`].
    ///
    /// # Safety
    /// As [`Blas::gemm_ex`], with f64 elements.
    pub(crate) unsafe fn dgemm(
        &self,
        n: c_int,
        a: *const f64,
        b: *const f64,
        c: *mut f64,
    ) -> Result<(), BenchError> {
        let (alpha, beta) = (1.0f64, 0.0f64);
        // SAFETY: as in `gemm_ex`.
        check("cublasDgemm", unsafe {
            (self.api.dgemm)(
                self.handle,
                OP_N,
                OP_N,
                n,
                n,
                n,
                &alpha,
                a,
                n,
                b,
                n,
                &beta,
                c,
                n,
            )
        })
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle came from cublasCreate and is destroyed once;
        // cublasDestroy waits for the handle's work. A failure (after a
        // device fault) leaves nothing more to release.
        let _ = unsafe { (self.api.destroy)(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_their_header_names() {
        assert_eq!(status_name(15), "CUBLAS_STATUS_NOT_SUPPORTED (15)");
        assert!(status_name(99).contains("unknown"));
    }

    #[test]
    fn enum_values_match_cudarc_s_bindings_of_the_headers() {
        use cudarc::cublas::sys as b;
        assert_eq!(OP_N, b::cublasOperation_t::CUBLAS_OP_N as c_int);
        assert_eq!(R_32F, b::cudaDataType::CUDA_R_32F as c_int);
        assert_eq!(R_16F, b::cudaDataType::CUDA_R_16F as c_int);
        assert_eq!(R_16BF, b::cudaDataType::CUDA_R_16BF as c_int);
        assert_eq!(
            COMPUTE_32F,
            b::cublasComputeType_t::CUBLAS_COMPUTE_32F as c_int
        );
        assert_eq!(
            COMPUTE_32F_FAST_TF32,
            b::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32 as c_int
        );
        assert_eq!(
            GEMM_DEFAULT,
            b::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT as c_int
        );
        for s in [1, 3, 7, 8, 11, 13, 14, 15, 16] {
            // Every name above is one of the header's statuses.
            let name = status_name(s);
            assert!(name.starts_with("CUBLAS_STATUS_"), "{name}");
        }
        assert_eq!(b::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED as c_int, 15);
        assert_eq!(
            b::cublasStatus_t::CUBLAS_STATUS_EXECUTION_FAILED as c_int,
            13
        );
    }
}
