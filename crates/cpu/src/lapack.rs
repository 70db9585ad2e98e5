//! The system's optimised LAPACK, loaded at run time for `cpu.linpack`'s
//! `solver=lapack` (and `auto`): OpenBLAS or Intel MKL, whose `dgetrf_` /
//! `dgetrs_` are called through the Fortran ABI (every argument by pointer,
//! 32-bit integers, column-major, a hidden length after the `trans`
//! string).
//!
//! The generic `liblapack.so.3` is never loaded: on Debian it may be the
//! netlib reference LAPACK over the reference BLAS, which is unblocked and
//! unvectorised and would measure the library rather than the CPU. Only
//! libraries that are optimised by construction are tried, in [`candidates`]
//! order. An OpenBLAS built with 64-bit integers (`USE64BITINT` in its
//! configuration) is refused, since the calls pass 32-bit ones; MKL's
//! single dynamic library is switched to its 32-bit (LP64) interface.
//!
//! The library is loaded once per process and never unloaded, so the
//! function pointers kept in [`Lapack`] stay valid.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use faer::{MatMut, MatRef};

/// `dgetrf_(m, n, a, lda, ipiv, info)`.
type Dgetrf = unsafe extern "C" fn(
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    ipiv: *mut c_int,
    info: *mut c_int,
);
/// `dgetrs_(trans, n, nrhs, a, lda, ipiv, b, ldb, info, trans_len)`.
type Dgetrs = unsafe extern "C" fn(
    trans: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *const f64,
    lda: *const c_int,
    ipiv: *const c_int,
    b: *mut f64,
    ldb: *const c_int,
    info: *mut c_int,
    trans_len: usize,
);
/// `openblas_set_num_threads(int)`, `MKL_Set_Num_Threads(int)`.
type SetThreads = unsafe extern "C" fn(c_int);
/// `openblas_get_num_threads(void)`, `MKL_Get_Max_Threads(void)`.
type GetThreads = unsafe extern "C" fn() -> c_int;
/// `char *openblas_get_config(void)`.
type OpenblasConfig = unsafe extern "C" fn() -> *const c_char;
/// `void MKL_Get_Version_String(char *buf, int len)`.
type MklVersion = unsafe extern "C" fn(*mut c_char, c_int);
/// `int MKL_Set_Interface_Layer(int)`.
type MklInterface = unsafe extern "C" fn(c_int) -> c_int;

/// `MKL_INTERFACE_LP64` of mkl_service.h: 32-bit integers.
const MKL_INTERFACE_LP64: c_int = 0;

/// Stack of the thread that calls the library. OpenBLAS's parallel
/// `dgetrf` keeps tables sized by its thread limit on the caller's stack,
/// and overflowed a 2 MiB stack (Rust's default for spawned threads) at
/// N = 200 with Debian's OpenBLAS 0.3.21; this is address space, committed
/// only as used.
pub(crate) const CALLER_STACK: usize = 64 << 20;

/// The package that provides an optimised LAPACK on Debian and Ubuntu.
pub(crate) const INSTALL: &str = "apt install libopenblas0-pthread";

/// Whose library it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    /// OpenBLAS (its LAPACK is bundled and uses its own BLAS).
    OpenBlas,
    /// Intel MKL's single dynamic library.
    Mkl,
}

impl Vendor {
    /// `OpenBLAS`, for notes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Vendor::OpenBlas => "OpenBLAS",
            Vendor::Mkl => "MKL",
        }
    }
}

/// The files to try, in order: OpenBLAS by soname (the pthread build's
/// names of Fedora first, as its plain `libopenblas.so.0` is the serial
/// build; on Debian `libopenblas.so.0` is the alternatives link), then
/// Debian's own directories of the threaded builds, then MKL.
pub(crate) fn candidates() -> Vec<(String, Vendor)> {
    let dir = format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH);
    vec![
        ("libopenblasp.so.0".into(), Vendor::OpenBlas),
        ("libopenblaso.so.0".into(), Vendor::OpenBlas),
        ("libopenblas.so.0".into(), Vendor::OpenBlas),
        (
            format!("{dir}/openblas-pthread/libopenblas.so.0"),
            Vendor::OpenBlas,
        ),
        (
            format!("{dir}/openblas-openmp/libopenblas.so.0"),
            Vendor::OpenBlas,
        ),
        ("libmkl_rt.so.2".into(), Vendor::Mkl),
        ("libmkl_rt.so".into(), Vendor::Mkl),
    ]
}

/// An optimised LAPACK, loaded for the life of the process.
#[derive(Debug)]
pub(crate) struct Lapack {
    /// Kept loaded: the function pointers below point into it.
    _lib: libloading::Library,
    /// Whose it is.
    pub vendor: Vendor,
    /// What was opened: a soname the loader found, or a full path.
    pub opened: String,
    /// The file the loader mapped, links resolved, when it can tell.
    pub file: Option<PathBuf>,
    /// `openblas_get_config()` or MKL's version string.
    pub version: Option<String>,
    /// OpenBLAS: the kernel set it runs (`openblas_get_corename()`:
    /// `Haswell`, `SkylakeX`, `Zen`...).
    pub core: Option<String>,
    dgetrf: Dgetrf,
    dgetrs: Dgetrs,
    set_threads: Option<SetThreads>,
    get_threads: Option<GetThreads>,
}

/// The first optimised LAPACK of [`candidates`] that loads, searched once
/// per process; otherwise why none was usable (what was tried, what to
/// install).
pub(crate) fn load() -> Result<&'static Lapack, &'static str> {
    static LAPACK: OnceLock<Result<Lapack, String>> = OnceLock::new();
    LAPACK
        .get_or_init(|| {
            let mut tried = Vec::new();
            for (name, vendor) in candidates() {
                match open(&name, vendor) {
                    Ok(l) => return Ok(l),
                    Err(why) => tried.push(format!("{name} ({why})")),
                }
            }
            Err(format!(
                "no optimised LAPACK found (tried {}; the generic liblapack.so.3 is not used, as it may be the slow netlib reference); install one: {INSTALL}",
                tried.join(", ")
            ))
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Resolves `name` in `lib` as a `T`.
///
/// # Safety
/// `T` must be the function pointer type of the symbol's C prototype.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: forwarded from the contract; the pointer is only used while
    // `lib` stays loaded (for the life of the process, see `Lapack`).
    unsafe { lib.get::<T>(name.as_bytes()) }.ok().map(|s| *s)
}

fn open(name: &str, vendor: Vendor) -> Result<Lapack, String> {
    // SAFETY: loading OpenBLAS or MKL runs their initialisers, which set up
    // only the library's own state (OpenBLAS starts its thread pool).
    let lib = unsafe { libloading::Library::new(name) }.map_err(|_| "not found".to_string())?;
    // SAFETY: the types are the Fortran-ABI prototypes of LAPACK's
    // dgetrf/dgetrs with 32-bit integers, as OpenBLAS and MKL (LP64)
    // export them.
    let (dgetrf, dgetrs) = unsafe {
        (
            symbol::<Dgetrf>(&lib, "dgetrf_"),
            symbol::<Dgetrs>(&lib, "dgetrs_"),
        )
    };
    let (Some(dgetrf), Some(dgetrs)) = (dgetrf, dgetrs) else {
        return Err("no dgetrf_/dgetrs_".into());
    };
    let (set_threads, get_threads, version, core) = match vendor {
        Vendor::OpenBlas => {
            // SAFETY: prototypes of cblas.h: `void
            // openblas_set_num_threads(int)`, `int
            // openblas_get_num_threads(void)`, `char
            // *openblas_get_config(void)`.
            let (set, get, config) = unsafe {
                (
                    symbol::<SetThreads>(&lib, "openblas_set_num_threads"),
                    symbol::<GetThreads>(&lib, "openblas_get_num_threads"),
                    symbol::<OpenblasConfig>(&lib, "openblas_get_config"),
                )
            };
            let version = config.and_then(|f| {
                // SAFETY: openblas_get_config takes nothing and returns a
                // pointer to a static NUL-terminated string (or NULL).
                let p = unsafe { f() };
                // SAFETY: checked non-null; the string is static.
                (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            });
            if version
                .as_deref()
                .is_some_and(|v| v.contains("USE64BITINT"))
            {
                return Err("built with 64-bit integers (USE64BITINT)".into());
            }
            // SAFETY: `char *openblas_get_corename(void)` (cblas.h).
            let corename = unsafe { symbol::<OpenblasConfig>(&lib, "openblas_get_corename") };
            let core = corename.and_then(|f| {
                // SAFETY: takes nothing, returns a static NUL-terminated
                // string (or NULL).
                let p = unsafe { f() };
                (!p.is_null()).then(|| {
                    // SAFETY: checked non-null; the string is static.
                    unsafe { CStr::from_ptr(p) }
                        .to_string_lossy()
                        .trim()
                        .to_string()
                })
            });
            (set, get, version, core)
        }
        Vendor::Mkl => {
            // SAFETY: prototypes of mkl_service.h: `int
            // MKL_Set_Interface_Layer(int)`, `void MKL_Set_Num_Threads(int)`,
            // `int MKL_Get_Max_Threads(void)`, `void
            // MKL_Get_Version_String(char *, int)`.
            let (layer, set, get, ver) = unsafe {
                (
                    symbol::<MklInterface>(&lib, "MKL_Set_Interface_Layer"),
                    symbol::<SetThreads>(&lib, "MKL_Set_Num_Threads"),
                    symbol::<GetThreads>(&lib, "MKL_Get_Max_Threads"),
                    symbol::<MklVersion>(&lib, "MKL_Get_Version_String"),
                )
            };
            if let Some(layer) = layer {
                // SAFETY: takes an int; called before any computation, as
                // mkl_service.h requires.
                let got = unsafe { layer(MKL_INTERFACE_LP64) };
                if got != MKL_INTERFACE_LP64 {
                    return Err("its 32-bit (LP64) interface cannot be selected".into());
                }
            }
            let version = ver.map(|f| {
                let mut buf = [0 as c_char; 256];
                // SAFETY: the buffer holds `len` bytes; MKL writes at most
                // that many.
                unsafe { f(buf.as_mut_ptr(), buf.len() as c_int - 1) };
                // SAFETY: zero-initialised and written at most len-1 bytes
                // of it, so a NUL ends it.
                unsafe { CStr::from_ptr(buf.as_ptr()) }
                    .to_string_lossy()
                    .trim()
                    .to_string()
            });
            (set, get, version, None)
        }
    };
    Ok(Lapack {
        file: mapped_file(dgetrf as *const c_void),
        _lib: lib,
        vendor,
        opened: name.to_string(),
        version,
        core,
        dgetrf,
        dgetrs,
        set_threads,
        get_threads,
    })
}

/// The file the loader mapped the code at `addr` from, links resolved.
fn mapped_file(addr: *const c_void) -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is a function of a loaded library; dladdr only reads
    // the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success dli_fname is the loader's NUL-terminated name of
    // the object, valid while it stays loaded (for the process).
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    std::fs::canonicalize(name.as_ref()).ok()
}

/// A 32-bit LAPACK integer, or why `what` does not fit.
fn int(what: &str, v: usize) -> Result<c_int, String> {
    c_int::try_from(v).map_err(|_| format!("{what} = {v} does not fit LAPACK's 32-bit integers"))
}

/// Column stride of a column-major matrix with unit row stride, as LAPACK's
/// leading dimension (at least the row count).
fn leading_dim(
    what: &str,
    rows: usize,
    row_stride: isize,
    col_stride: isize,
) -> Result<c_int, String> {
    if row_stride != 1 || col_stride < rows.max(1) as isize {
        return Err(format!(
            "{what} is not column-major with a leading dimension of at least {rows} (strides {row_stride}, {col_stride})"
        ));
    }
    int(what, col_stride as usize)
}

/// OpenBLAS kernel sets (`openblas_get_corename()`, lower case) that use
/// AVX-512.
const AVX512_CORES: [&str; 3] = ["skylakex", "cooperlake", "sapphirerapids"];

impl Lapack {
    /// What runs and from where, for notes: `OpenBLAS dgetrf/dgetrs from
    /// libopenblas.so.0 (→ /usr/lib/x86_64-linux-gnu/openblas-pthread/…),
    /// kernels Haswell`.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!("{} dgetrf/dgetrs from {}", self.vendor.name(), self.opened);
        if let Some(f) = &self.file
            && f.to_string_lossy() != self.opened
        {
            s.push_str(&format!(" (→ {})", f.display()));
        }
        if let Some(core) = &self.core {
            s.push_str(&format!(", kernels {core}"));
            if let Ok(pinned) = std::env::var("OPENBLAS_CORETYPE") {
                s.push_str(&format!(" (OPENBLAS_CORETYPE={pinned})"));
            }
        }
        s
    }

    /// Why OpenBLAS's kernels are narrower than this CPU, if they are: its
    /// kernel set does not use AVX-512 on a CPU that has it (an image that
    /// pins `OPENBLAS_CORETYPE=Haswell`, as some do for newer AMD parts, or
    /// a build that predates the CPU). On the Zen 5 guest this ran 105
    /// GFLOP/s where OpenBLAS's own choice (SkylakeX) ran 157 and faer 146
    /// (issue 40).
    pub(crate) fn narrow_kernels(&self) -> Option<String> {
        let core = self.core.as_deref()?;
        if !cpu_has_avx512() || AVX512_CORES.contains(&core.to_ascii_lowercase().as_str()) {
            return None;
        }
        Some(match std::env::var("OPENBLAS_CORETYPE") {
            Ok(pinned) => format!(
                "OpenBLAS runs its {core} kernels (OPENBLAS_CORETYPE={pinned} is set) on this AVX-512 CPU; unset OPENBLAS_CORETYPE (or set it to SkylakeX) for its AVX-512 kernels, or ask for solver=lapack to measure these"
            ),
            Err(_) => format!(
                "OpenBLAS runs its {core} kernels on this AVX-512 CPU (a build without AVX-512 kernels for it); a newer OpenBLAS, or OPENBLAS_CORETYPE=SkylakeX, gives its AVX-512 kernels; ask for solver=lapack to measure these"
            ),
        })
    }

    /// Asks the library to use `threads` threads; returns the count it says
    /// it will use, when it can say.
    pub(crate) fn set_threads(&self, threads: usize) -> Option<usize> {
        let n = c_int::try_from(threads).unwrap_or(c_int::MAX);
        if let Some(set) = self.set_threads {
            // SAFETY: takes an int and only sets the library's thread count.
            unsafe { set(n) };
        }
        // SAFETY: takes nothing and reads the library's thread count.
        let got = self.get_threads.map(|get| unsafe { get() })?;
        usize::try_from(got).ok()
    }

    /// LU with partial pivoting of the square `a` in place (`dgetrf`);
    /// `ipiv` receives the 1-based pivot rows.
    pub(crate) fn factor(&self, a: MatMut<'_, f64>, ipiv: &mut [c_int]) -> Result<(), String> {
        let n = a.nrows();
        if a.ncols() != n || ipiv.len() < n {
            return Err(format!(
                "dgetrf: a {}×{} matrix with {} pivots",
                a.nrows(),
                a.ncols(),
                ipiv.len()
            ));
        }
        let m = int("N", n)?;
        let lda = leading_dim("A", n, a.row_stride(), a.col_stride())?;
        let mut info: c_int = 0;
        // SAFETY: `a` is an n×n column-major matrix with leading dimension
        // lda ≥ n, borrowed mutably for the call; ipiv has at least n
        // entries; the scalars live on this stack frame.
        unsafe {
            (self.dgetrf)(&m, &m, a.as_ptr_mut(), &lda, ipiv.as_mut_ptr(), &mut info);
        }
        match info {
            0 => Ok(()),
            i if i < 0 => Err(format!("dgetrf: argument {} was illegal", -i)),
            i => Err(format!(
                "dgetrf: U({i},{i}) is exactly zero: the matrix is singular"
            )),
        }
    }

    /// Solves A·X = B in place in `b` from `factor`'s result (`dgetrs`,
    /// no transpose).
    pub(crate) fn solve(
        &self,
        lu: MatRef<'_, f64>,
        ipiv: &[c_int],
        b: MatMut<'_, f64>,
    ) -> Result<(), String> {
        let n = lu.nrows();
        if lu.ncols() != n || ipiv.len() < n || b.nrows() != n {
            return Err(format!(
                "dgetrs: a {}×{} factor, {} pivots and {} right-hand-side rows",
                lu.nrows(),
                lu.ncols(),
                ipiv.len(),
                b.nrows()
            ));
        }
        let nn = int("N", n)?;
        let nrhs = int("NRHS", b.ncols())?;
        let lda = leading_dim("A", n, lu.row_stride(), lu.col_stride())?;
        let ldb = leading_dim("B", n, b.row_stride(), b.col_stride())?;
        let trans = b'N' as c_char;
        let mut info: c_int = 0;
        // SAFETY: `lu` is the n×n factor (read only), ipiv its n pivots,
        // `b` an n×nrhs column-major matrix with leading dimension ldb ≥ n
        // borrowed mutably for the call; `trans` is one character, passed
        // with its hidden length 1; the scalars live on this stack frame.
        unsafe {
            (self.dgetrs)(
                &trans,
                &nn,
                &nrhs,
                lu.as_ptr(),
                &lda,
                ipiv.as_ptr(),
                b.as_ptr_mut(),
                &ldb,
                &mut info,
                1,
            );
        }
        if info == 0 {
            Ok(())
        } else {
            Err(format!("dgetrs: argument {} was illegal", -info))
        }
    }
}

/// Whether this CPU runs AVX-512 (F).
fn cpu_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    #[test]
    fn the_generic_liblapack_is_never_a_candidate() {
        for (name, _) in candidates() {
            assert!(!name.contains("liblapack"), "{name}");
        }
    }

    #[test]
    fn a_small_system_is_solved_where_a_library_loads() {
        std::thread::Builder::new()
            .stack_size(CALLER_STACK)
            // The test's name, for a skip to say which test it was.
            .name(std::thread::current().name().unwrap_or_default().into())
            .spawn(small_system)
            .unwrap()
            .join()
            .unwrap();
    }

    fn small_system() {
        let lapack = match load() {
            Ok(l) => l,
            Err(why) => {
                benchsuite_core::testing::skip(benchsuite_core::testing::Capability::Openblas, why);
                return;
            }
        };
        // [[2, 1], [4, 3]]·x = [3, 7] → x = [1, 1]; pivoting swaps rows.
        let mut a = Mat::from_fn(2, 2, |i, j| [[2.0, 1.0], [4.0, 3.0]][i][j]);
        let mut b = Mat::from_fn(2, 1, |i, _| [3.0, 7.0][i]);
        let mut ipiv = [0; 2];
        lapack.factor(a.as_mut(), &mut ipiv).unwrap();
        assert_eq!(ipiv[0], 2, "the larger first-column entry is the pivot");
        lapack.solve(a.as_ref(), &ipiv, b.as_mut()).unwrap();
        assert!((b[(0, 0)] - 1.0).abs() < 1e-12 && (b[(1, 0)] - 1.0).abs() < 1e-12);
        // A singular matrix is an error naming the zero pivot.
        let mut s = Mat::<f64>::zeros(3, 3);
        let e = lapack.factor(s.as_mut(), &mut [0; 3]).unwrap_err();
        assert!(e.contains("singular"), "{e}");
        assert!(lapack.describe().contains(lapack.vendor.name()));
    }
}
