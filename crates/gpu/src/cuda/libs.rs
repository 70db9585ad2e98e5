//! Finding the CUDA libraries before anything calls into them.
//!
//! The driver (`libcuda.so.1`) comes with the NVIDIA driver and is always in
//! the loader's cache when a driver is installed; cudarc loads it lazily
//! and **panics** when it is missing, so every entry point first asks
//! [`driver`], which answers with a skip reason instead.
//!
//! NVRTC and cuBLAS belong to a CUDA toolkit (or to pip's wheels, which
//! PyTorch installs: `nvidia-cuda-nvrtc-cu12` / `nvidia-cublas-cu12` put
//! them in `site-packages/nvidia/{cuda_nvrtc,cublas}/lib`, the CUDA 13
//! wheels in `site-packages/nvidia/cu13/lib`), often in a directory the
//! loader does not search, and under the soname of their CUDA major
//! version (`libnvrtc.so.12`, `libnvrtc.so.13`). cudarc's own loader knows
//! neither those directories nor CUDA 13's sonames, so this crate opens
//! both libraries itself ([`load`]) and calls them through function
//! pointers (`nvrtc.rs`, `blas.rs`): the newest major version the driver
//! can run (CUDA 13 code needs a CUDA 13 driver, 580 or newer), by soname
//! through the loader first, then by full path from the usual places.
//! Otherwise the skip reason says what to install and which directory to
//! put on `LD_LIBRARY_PATH`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
/// usual places once.
pub(crate) fn nvrtc() -> Result<(), String> {
    super::nvrtc::api().map(|_| ())
}

/// Whether cuBLAS can be loaded; searches the usual places once.
pub(crate) fn cublas() -> Result<(), String> {
    super::blas::api().map(|_| ())
}

/// CUDA major versions whose NVRTC and cuBLAS this crate can use, newest
/// first (the C APIs it calls are the same in both).
pub(crate) const MAJORS: &[u32] = &[13, 12];

/// A versioned CUDA library to look for.
#[derive(Debug)]
pub(crate) struct Spec {
    /// `NVRTC`, for messages.
    pub what: &'static str,
    /// The soname without its major version: `libnvrtc.so.`.
    pub stem: &'static str,
    /// Libraries of the same release it links against, loaded first by
    /// path when it is loaded by path (`libcublasLt.so.`).
    pub deps: &'static [&'static str],
    /// Libraries it opens itself at run time from its own directory,
    /// preloaded by path (`libnvrtc-builtins.so.13.0` for NVRTC 13): any
    /// file of the directory named `<prefix><major>.`.
    pub runtime_deps: &'static [&'static str],
    /// The `site-packages/nvidia/<dir>/lib` directory of the pip wheel of
    /// a major version.
    pub pip_dir: fn(u32) -> &'static str,
    /// The pip package of a major version.
    pub pip_pkg: fn(u32) -> &'static str,
}

/// A library loaded for the life of the process (never unloaded, so the
/// function pointers taken from it stay valid).
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The library.
    pub lib: libloading::Library,
    /// What was opened: a soname the loader found, or a full path.
    pub file: String,
    /// Its dependencies loaded by path, kept loaded with it.
    _deps: Vec<libloading::Library>,
}

/// The CUDA major version the driver supports (`12` for a 12.x driver),
/// when a driver is there.
pub(crate) fn driver_major() -> Option<u32> {
    super::device::driver()
        .ok()
        .map(|d| (d.version / 1000).max(0) as u32)
}

/// The major versions to try, newest first: those the driver can run
/// (all of [`MAJORS`] without a driver: compiling needs none).
pub(crate) fn usable_majors(driver_major: Option<u32>) -> Vec<u32> {
    MAJORS
        .iter()
        .copied()
        .filter(|m| driver_major.is_none_or(|d| *m <= d))
        .collect()
}

/// Loads the newest usable major version of `spec`: by soname through the
/// loader, else by full path from [`search_dirs`].
pub(crate) fn load(spec: &Spec, driver_major: Option<u32>) -> Result<Loaded, String> {
    let majors = usable_majors(driver_major);
    if majors.is_empty() {
        return Err(format!(
            "{} not loaded: the CUDA driver runs CUDA {}.x code at most, and this crate uses the CUDA {} libraries, which need a newer driver",
            spec.what,
            driver_major.unwrap_or(0),
            MAJORS
                .iter()
                .rev()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    let mut failures = Vec::new();
    for &major in &majors {
        let name = format!("{}{major}", spec.stem);
        // SAFETY: loading a CUDA library runs its initialisers, which only
        // set up the library's own state; it stays loaded for the life of
        // the process.
        if let Ok(lib) = unsafe { libloading::Library::new(&name) } {
            return Ok(Loaded {
                lib,
                file: name,
                _deps: Vec::new(),
            });
        }
        let Some(dir) = search_dirs((spec.pip_dir)(major))
            .into_iter()
            .find(|d| d.join(&name).is_file())
        else {
            continue;
        };
        match load_from(spec, &dir, &name, major) {
            Ok(l) => return Ok(l),
            Err(e) => failures.push(e),
        }
    }
    if let Some(e) = failures.into_iter().next() {
        return Err(e);
    }
    let names: Vec<String> = majors.iter().map(|m| format!("{}{m}", spec.stem)).collect();
    let pkgs: Vec<&str> = majors.iter().map(|m| (spec.pip_pkg)(*m)).collect();
    let dirs: Vec<String> = majors
        .iter()
        .map(|m| format!("site-packages/nvidia/{}/lib", (spec.pip_dir)(*m)))
        .collect();
    let driver = match driver_major {
        Some(d) if d < MAJORS[0] => format!(" (this driver runs CUDA {d}.x code at most)"),
        _ => String::new(),
    };
    Err(format!(
        "{} not found: {} is not on the loader's path nor in the usual places{driver}; install the CUDA toolkit or `pip install {}`, then set LD_LIBRARY_PATH to the directory holding it (e.g. /usr/local/cuda/lib64, or {})",
        spec.what,
        names.join(" or "),
        pkgs.join("` or `"),
        dirs.join(" or ")
    ))
}

/// Loads `name` (and its dependencies) by full path from `dir`.
fn load_from(spec: &Spec, dir: &Path, name: &str, major: u32) -> Result<Loaded, String> {
    let mut deps = Vec::new();
    let mut paths: Vec<PathBuf> = spec
        .deps
        .iter()
        .map(|d| dir.join(format!("{d}{major}")))
        .filter(|p| p.is_file())
        .collect();
    for prefix in spec.runtime_deps {
        let want = format!("{prefix}{major}.");
        let mut found: Vec<PathBuf> = read_dir_names(dir)
            .into_iter()
            .filter(|n| n.starts_with(&want))
            .map(|n| dir.join(n))
            .collect();
        found.sort();
        paths.extend(found);
    }
    for path in paths {
        // SAFETY: as in `load`: a CUDA library's initialisers, kept loaded.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => deps.push(lib),
            Err(e) => {
                return Err(format!(
                    "{} found in {} but {} cannot be loaded ({e}); set LD_LIBRARY_PATH to that directory",
                    spec.what,
                    dir.display(),
                    path.display()
                ));
            }
        }
    }
    let path = dir.join(name);
    // SAFETY: as in `load`.
    match unsafe { libloading::Library::new(&path) } {
        Ok(lib) => Ok(Loaded {
            lib,
            file: path.display().to_string(),
            _deps: deps,
        }),
        Err(e) => Err(format!(
            "{} found at {} but it cannot be loaded ({e}); set LD_LIBRARY_PATH to {}",
            spec.what,
            path.display(),
            dir.display()
        )),
    }
}

/// Resolves symbol `name` of `lib` as a `T`.
///
/// # Safety
/// `T` must be the C type of the symbol (a function pointer type matching
/// its prototype).
pub(crate) unsafe fn symbol<T: Copy>(lib: &Loaded, what: &str, name: &str) -> Result<T, String> {
    // SAFETY: forwarded from this function's contract; the library stays
    // loaded for the life of the process (see `Loaded`).
    unsafe { lib.lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("{what} found at {} but it has no {name} ({e})", lib.file))
}

/// Where CUDA libraries usually live, most specific first: `$CUDA_HOME`,
/// `$CUDA_PATH`, `/usr/local/cuda*`, `/opt/cuda`, then the `nvidia/<pkg>/lib`
/// directory of pip wheels in an active virtualenv or conda env, in
/// `~/.local`, in the environments whose `bin` is on `PATH` and in the
/// system Python's site- and dist-packages.
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
    // The environment of every `bin` directory on PATH: an un-activated
    // virtualenv whose python3 is on PATH (e.g. /opt/torch/.venv/bin).
    if let Some(path) = std::env::var_os("PATH") {
        for prefix in path_prefixes(&path) {
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
        }
    }
    // A relative directory would be resolved against the current one: a
    // library planted there would be loaded. Only absolute ones count.
    prefixes.retain(|p| p.is_absolute());
    dirs.retain(|d| d.is_absolute());
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

/// The prefix of each absolute `…/bin` directory of a PATH value; a
/// relative entry (`bin`, `.venv/bin`, an empty one) names a directory
/// under wherever benchsuite happens to run, and is ignored.
fn path_prefixes(path: &std::ffi::OsStr) -> Vec<PathBuf> {
    std::env::split_paths(path)
        .filter(|bin| bin.is_absolute() && bin.ends_with("bin"))
        .filter_map(|bin| bin.parent().map(Path::to_path_buf))
        .collect()
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
    fn relative_path_entries_are_not_searched() {
        let path = std::ffi::OsStr::new("bin:.venv/bin::/opt/torch/.venv/bin:/usr/bin:lib/x/bin");
        assert_eq!(
            path_prefixes(path),
            [PathBuf::from("/opt/torch/.venv"), PathBuf::from("/usr")]
        );
        // Whatever the environment, every directory searched is absolute.
        assert!(search_dirs("cublas").iter().all(|d| d.is_absolute()));
    }

    #[test]
    fn a_missing_driver_is_a_reason_not_a_panic() {
        match driver() {
            Ok(()) => {}
            Err(e) => assert!(e.starts_with("no CUDA driver"), "{e}"),
        }
    }

    #[test]
    fn only_majors_the_driver_runs_are_tried_newest_first() {
        assert_eq!(usable_majors(None), vec![13, 12]);
        assert_eq!(usable_majors(Some(13)), vec![13, 12]);
        // A CUDA 12 driver (535..575) cannot load CUDA 13 code.
        assert_eq!(usable_majors(Some(12)), vec![12]);
        assert!(usable_majors(Some(11)).is_empty());
    }

    const NOWHERE: Spec = Spec {
        what: "Nothing",
        stem: "libbenchsuite-no-such-lib.so.",
        deps: &[],
        runtime_deps: &[],
        pip_dir: |m| if m >= 13 { "cu13" } else { "no_such" },
        pip_pkg: |m| {
            if m >= 13 {
                "nvidia-no-such"
            } else {
                "nvidia-no-such-cu12"
            }
        },
    };

    #[test]
    fn a_library_found_nowhere_names_every_soname_package_and_directory() {
        let e = load(&NOWHERE, None).unwrap_err();
        for want in [
            "Nothing not found",
            "libbenchsuite-no-such-lib.so.13 or libbenchsuite-no-such-lib.so.12",
            "`pip install nvidia-no-such` or `nvidia-no-such-cu12`",
            "LD_LIBRARY_PATH",
            "site-packages/nvidia/cu13/lib",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        let e = load(&NOWHERE, Some(12)).unwrap_err();
        assert!(!e.contains(".so.13") && e.contains("CUDA 12.x"), "{e}");
        let e = load(&NOWHERE, Some(11)).unwrap_err();
        assert!(e.contains("CUDA 11.x") && e.contains("newer driver"), "{e}");
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
