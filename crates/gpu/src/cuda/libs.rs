//! Finding the CUDA libraries before cudarc touches them.
//!
//! cudarc loads `libcuda`, `libnvrtc` and `libcublas` lazily and **panics**
//! when one is missing, so every entry point of this crate first asks the
//! matching function here, which answers with a skip reason instead.
//!
//! The driver (`libcuda.so.1`) comes with the NVIDIA driver and is always in
//! the loader's cache when a driver is installed. NVRTC and cuBLAS belong to
//! the CUDA toolkit (or to pip's `nvidia-cuda-nvrtc-cu12` and
//! `nvidia-cublas-cu12`, which PyTorch installs), often in a directory the
//! loader does not search. When the plain `dlopen` fails, the well-known
//! places below are searched; a library found there is loaded by its full
//! path and kept loaded, and cudarc's later `dlopen("libnvrtc.so.12")` then
//! finds it by its soname (glibc matches already-loaded objects by soname).
//! Otherwise the skip reason says which directory to put on
//! `LD_LIBRARY_PATH`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Libraries loaded by full path, kept loaded for the life of the process.
static PRELOADED: Mutex<Vec<libloading::Library>> = Mutex::new(Vec::new());

/// Why the driver cannot be used, when its library is absent.
pub(crate) const NO_DRIVER: &str = "no CUDA driver: libcuda.so.1 was not found (install the NVIDIA driver; in a container, run it with the NVIDIA container toolkit, e.g. `docker run --gpus all`)";

/// Whether the CUDA driver library can be loaded.
pub(crate) fn driver() -> Result<(), String> {
    static DRIVER: OnceLock<bool> = OnceLock::new();
    // SAFETY: is_culib_present only dlopens the candidate names and closes
    // them again; it runs no library code besides the loader's.
    let present = *DRIVER.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(NO_DRIVER.into())
    }
}

/// Whether NVRTC (the run-time CUDA C compiler) can be loaded; searches the
/// usual places once when the loader alone cannot find it.
pub(crate) fn nvrtc() -> Result<(), String> {
    static NVRTC: OnceLock<Result<(), String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            // SAFETY: as in `driver`: only dlopen/dlclose of candidate names.
            let present = || unsafe { cudarc::nvrtc::sys::is_culib_present() };
            find(
                "NVRTC",
                &["libnvrtc.so.12"],
                "cuda_nvrtc",
                "nvidia-cuda-nvrtc-cu12",
                present,
            )
        })
        .clone()
}

/// Whether cuBLAS can be loaded; searches the usual places once.
pub(crate) fn cublas() -> Result<(), String> {
    static CUBLAS: OnceLock<Result<(), String>> = OnceLock::new();
    CUBLAS
        .get_or_init(|| {
            // SAFETY: as in `driver`: only dlopen/dlclose of candidate names.
            let present = || unsafe { cudarc::cublas::sys::is_culib_present() };
            // libcublas needs libcublasLt from the same release: load it first.
            find(
                "cuBLAS",
                &["libcublasLt.so.12", "libcublas.so.12"],
                "cublas",
                "nvidia-cublas-cu12",
                present,
            )
        })
        .clone()
}

/// Checks `present`; if false, looks for `files` (the last one is the
/// library itself, earlier ones its dependencies) in [`search_dirs`], loads
/// them by path and checks again.
fn find(
    what: &str,
    files: &[&str],
    pip_dir: &str,
    pip_pkg: &str,
    present: impl Fn() -> bool,
) -> Result<(), String> {
    if present() {
        return Ok(());
    }
    let main = files[files.len() - 1];
    let Some(dir) = search_dirs(pip_dir)
        .into_iter()
        .find(|d| d.join(main).is_file())
    else {
        return Err(format!(
            "{what} not found: {main} is not on the loader's path; install the CUDA toolkit or `pip install {pip_pkg}`, then set LD_LIBRARY_PATH to the directory holding {main} (e.g. /usr/local/cuda/lib64, or site-packages/nvidia/{pip_dir}/lib)"
        ));
    };
    let mut kept = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
    for f in files {
        let path = dir.join(f);
        if !path.is_file() {
            continue;
        }
        // SAFETY: loading a CUDA library runs its initialisers, which only
        // set up the library's own state; the handle is kept for the life
        // of the process, so nothing it exports is unloaded while in use.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => kept.push(lib),
            Err(e) => {
                return Err(format!(
                    "{what} found at {} but it cannot be loaded ({e}); set LD_LIBRARY_PATH to {}",
                    path.display(),
                    dir.display()
                ));
            }
        }
    }
    if present() {
        Ok(())
    } else {
        Err(format!(
            "{what} found in {} but not usable by soname; set LD_LIBRARY_PATH to that directory",
            dir.display()
        ))
    }
}

/// Where CUDA libraries usually live, most specific first: `$CUDA_HOME`,
/// `$CUDA_PATH`, `/usr/local/cuda*`, `/opt/cuda`, then the `nvidia/<pkg>/lib`
/// directory of pip wheels in an active virtualenv or conda env, in
/// `~/.local` and in the system Python's site- and dist-packages.
pub(crate) fn search_dirs(pip_dir: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(Path::new(&v).join("lib64"));
            dirs.push(Path::new(&v).join("lib"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/sbsa-linux/lib"));
    // Versioned toolkits, newest first (cuda-12.9 before cuda-12.4).
    let mut versioned: Vec<PathBuf> = read_dir_names("/usr/local")
        .into_iter()
        .filter(|n| n.starts_with("cuda-"))
        .map(|n| Path::new("/usr/local").join(n).join("lib64"))
        .collect();
    versioned.sort_by_key(|p| std::cmp::Reverse(version_key(p)));
    dirs.extend(versioned);
    dirs.push(PathBuf::from("/opt/cuda/lib64"));
    // Python environments holding pip's nvidia-* wheels.
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            prefixes.push(PathBuf::from(v));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        prefixes.push(Path::new(&home).join(".local"));
    }
    prefixes.push(PathBuf::from("/usr/local"));
    prefixes.push(PathBuf::from("/usr"));
    prefixes.push(PathBuf::from("/opt/conda"));
    for prefix in prefixes {
        let lib = prefix.join("lib");
        for py in read_dir_names(&lib)
            .into_iter()
            .filter(|n| n.starts_with("python3"))
        {
            for pkgs in ["site-packages", "dist-packages"] {
                dirs.push(
                    lib.join(&py)
                        .join(pkgs)
                        .join("nvidia")
                        .join(pip_dir)
                        .join("lib"),
                );
            }
        }
        // Debian's system Python keeps packages in lib/python3/dist-packages.
        dirs.push(
            lib.join("python3/dist-packages/nvidia")
                .join(pip_dir)
                .join("lib"),
        );
        // conda installs the toolkit libraries straight into lib/.
        dirs.push(lib);
    }
    dirs.dedup();
    dirs
}

fn read_dir_names(dir: impl AsRef<Path>) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `/usr/local/cuda-12.4/lib64` → `[12, 4]`, for newest-first ordering.
fn version_key(p: &Path) -> Vec<u32> {
    p.parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("cuda-"))
        .map(|v| v.split('.').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_toolkits_sort_newest_first() {
        let mut v = [
            PathBuf::from("/usr/local/cuda-12.4/lib64"),
            PathBuf::from("/usr/local/cuda-12.10/lib64"),
            PathBuf::from("/usr/local/cuda-11.8/lib64"),
        ];
        v.sort_by_key(|p| std::cmp::Reverse(version_key(p)));
        assert_eq!(v[0], PathBuf::from("/usr/local/cuda-12.10/lib64"));
        assert_eq!(v[2], PathBuf::from("/usr/local/cuda-11.8/lib64"));
    }

    #[test]
    fn search_dirs_cover_the_toolkit_and_pip() {
        let d = search_dirs("cuda_nvrtc");
        assert!(d.contains(&PathBuf::from("/usr/local/cuda/lib64")));
        assert!(
            d.iter().any(|p| p.ends_with("nvidia/cuda_nvrtc/lib")),
            "{d:?}"
        );
    }

    #[test]
    fn a_missing_driver_is_a_reason_not_a_panic() {
        match driver() {
            Ok(()) => {}
            Err(e) => assert!(e.starts_with("no CUDA driver"), "{e}"),
        }
    }

    #[test]
    fn a_missing_nvrtc_or_cublas_names_the_fix() {
        for r in [nvrtc(), cublas()] {
            if let Err(e) = r {
                assert!(e.contains("LD_LIBRARY_PATH"), "{e}");
            }
        }
    }
}
