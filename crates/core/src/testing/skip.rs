//! Tests that cannot run here say so, and CI can forbid it: [`skip`] and
//! the [`Capability`] a test lacks.

use std::fmt;
use std::io::Write;
use std::path::Path;

/// What a test needs from the machine it runs on; its name is the one
/// `BENCHSUITE_REQUIRE` and the skip log use ([`Capability::name`]).
///
/// Most are things a machine can be given (root, a package, a kernel
/// feature); the last four, `two-cpus`, `cuda`, `nvrtc` and `no-openblas`,
/// are about the machine's hardware or what it must lack, which a CI
/// machine of ours cannot provide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// `linux`: Linux, with `/proc` (mount table, limits, processes).
    Linux,
    /// `loopback-127`: any address in 127.0.0.0/8 works as a local source
    /// address (Linux routes the whole /8 to `lo`; macOS only 127.0.0.1).
    Loopback127,
    /// `tmpfs`: may mount a tmpfs (root or CAP_SYS_ADMIN, and `mount`).
    Tmpfs,
    /// `loop`: may attach loop devices (root and `losetup`).
    Loop,
    /// `dm`: device-mapper over a loop device (a kernel with
    /// device-mapper, `/dev/mapper/control`, root and `dmsetup`).
    Dm,
    /// `netns`: may make network namespaces joined by veth pairs (root or
    /// CAP_NET_ADMIN and `ip`; for Slurm in namespaces also `unshare`,
    /// `nsenter`, `mount` and `getent`).
    Netns,
    /// `iperf3`: the `iperf3` binary, to compare throughput with.
    Iperf3,
    /// `fio`: the `fio` binary, to run `disk.io`'s reference end to end
    /// (Debian's fio).
    Fio,
    /// `python3`: a `python3` on PATH, which the GPU references run
    /// (Debian's python3).
    Python3,
    /// `slurm`: a Slurm started for the test on this host: root,
    /// `munged`, `slurmctld`, `slurmd`, `srun`, `sinfo`, `squeue`,
    /// `scancel` (Debian's slurmctld, slurmd and munge).
    Slurm,
    /// `chromium`: a headless `chromium` or `chromium-browser` on PATH.
    Chromium,
    /// `cc`: a C compiler (`$CC`, else `cc`) that builds a shared library.
    Cc,
    /// `man`: `man -l` renders a page (Debian's man-db).
    Man,
    /// `openblas`: an optimised LAPACK loads (OpenBLAS or MKL; Debian's
    /// libopenblas0-pthread).
    Openblas,
    /// `prometheus-client`: a `python3` that imports `prometheus_client`
    /// (Debian's python3-prometheus-client).
    PrometheusClient,
    /// `stress-ng`: the `stress-ng` binary, a neighbour that loads a CPU
    /// (Debian's stress-ng).
    StressNg,
    /// `vulkan`: a wgpu adapter, i.e. a Vulkan driver (Mesa's lavapipe
    /// where there is no GPU: mesa-vulkan-drivers and libvulkan1).
    Vulkan,
    /// `openat2`: the kernel has `openat2` with `RESOLVE_NO_SYMLINKS`
    /// (Linux 5.6 and later).
    Openat2,
    /// `mem-under-640g`: the host's memory size is known and below 640 GB,
    /// so cpu.linpack's largest `n` (200 000: 16·n² bytes) cannot fit.
    MemUnder640g,
    /// `no-cuda`: no CUDA here (no driver or device, NVRTC or cuBLAS):
    /// the checks of what a machine without CUDA reports.
    NoCuda,
    /// `two-cpus`: this process may run on at least two CPUs (hardware).
    TwoCpus,
    /// `cuda`: an NVIDIA GPU and its CUDA driver (hardware).
    Cuda,
    /// `nvrtc`: the CUDA runtime compiler library (a CUDA toolkit, or
    /// pip's nvidia-cuda-nvrtc on `LD_LIBRARY_PATH`).
    Nvrtc,
    /// `second-user`: the tests run as root and `setpriv` (util-linux) can
    /// run a command as another user (uid 65534).
    SecondUser,
    /// `no-openblas`: no optimised LAPACK loads: the check of the skip
    /// reason that says what to install (CI installs OpenBLAS).
    NoOpenblas,
}

/// Every capability and its name: the one table both ways go through.
const NAMES: &[(Capability, &str)] = &[
    (Capability::Linux, "linux"),
    (Capability::Loopback127, "loopback-127"),
    (Capability::Tmpfs, "tmpfs"),
    (Capability::Loop, "loop"),
    (Capability::Dm, "dm"),
    (Capability::Netns, "netns"),
    (Capability::Iperf3, "iperf3"),
    (Capability::Fio, "fio"),
    (Capability::Python3, "python3"),
    (Capability::Slurm, "slurm"),
    (Capability::Chromium, "chromium"),
    (Capability::Cc, "cc"),
    (Capability::Man, "man"),
    (Capability::Openblas, "openblas"),
    (Capability::PrometheusClient, "prometheus-client"),
    (Capability::StressNg, "stress-ng"),
    (Capability::Vulkan, "vulkan"),
    (Capability::Openat2, "openat2"),
    (Capability::MemUnder640g, "mem-under-640g"),
    (Capability::NoCuda, "no-cuda"),
    (Capability::TwoCpus, "two-cpus"),
    (Capability::Cuda, "cuda"),
    (Capability::Nvrtc, "nvrtc"),
    (Capability::SecondUser, "second-user"),
    (Capability::NoOpenblas, "no-openblas"),
];

impl Capability {
    /// Its name in `BENCHSUITE_REQUIRE` and the skip log (`dm`).
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, n)| *n)
            .expect("every capability is in NAMES")
    }

    /// The capability called `name`, if one is.
    pub fn from_name(name: &str) -> Option<Capability> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
    }

    /// Every capability, in the order of the docs.
    pub fn all() -> impl Iterator<Item = Capability> {
        NAMES.iter().map(|(c, _)| *c)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Says that this test cannot run here for want of `capability`, and why;
/// the caller then returns (or leaves out the part that needs it).
///
/// The test harness counts a test that returns early as passed and hides
/// its stderr, so a test that needs root, a tool or a device and returns
/// without it would pass silently where it never ran. This prints
/// `skipped [capability]: reason` to stderr, and two environment variables
/// make it something CI can check:
///
/// - `BENCHSUITE_REQUIRE`: capabilities this machine is known to have,
///   comma-separated by [`Capability::name`] (`tmpfs,loop,netns`), or
///   `all`, less any named with a leading `-` (`all,-cuda,-two-cpus`). A
///   skip for one of them panics instead: the test fails, saying the
///   capability is required here but unavailable, and why. An unknown name
///   panics too, so a typo cannot quietly require nothing. `.ci/run` sets
///   it to what its machine has after its `apt-get install`. Unset (the
///   default): nothing is required.
/// - `BENCHSUITE_SKIP_LOG`: a file each skip appends one line to,
///   `[capability] test-binary test-name: reason`, in one `O_APPEND`
///   write, so tests in parallel threads or processes never interleave
///   within a line. `.ci/run` prints it at the end. Unset or empty (the
///   default): no file.
///
/// ```no_run
/// use benchsuite_core::testing::{Capability, skip};
/// # fn chromium() -> Option<&'static str> { None }
/// #[test]
/// fn the_page_renders() {
///     let Some(browser) = chromium() else {
///         skip(Capability::Chromium, "neither `chromium` nor `chromium-browser` is on PATH");
///         return;
///     };
///     // ...
/// }
/// ```
///
/// # Panics
///
/// Where `BENCHSUITE_REQUIRE` requires the capability, where it names an
/// unknown capability, and where `BENCHSUITE_SKIP_LOG` cannot be appended
/// to.
#[track_caller]
pub fn skip(capability: Capability, reason: &str) {
    let require = std::env::var("BENCHSUITE_REQUIRE").ok();
    let log = std::env::var_os("BENCHSUITE_SKIP_LOG").filter(|p| !p.is_empty());
    skip_with(
        capability,
        reason,
        require.as_deref(),
        log.as_deref().map(Path::new),
    );
}

/// [`skip`] with its environment given.
#[track_caller]
fn skip_with(capability: Capability, reason: &str, require: Option<&str>, log: Option<&Path>) {
    if let Some(list) = require {
        match required(list, capability) {
            Err(e) => panic!("{e}"),
            Ok(true) => panic!(
                "capability `{capability}` is required here (BENCHSUITE_REQUIRE={list}) but unavailable: {reason}"
            ),
            Ok(false) => {}
        }
    }
    eprintln!("skipped [{capability}]: {reason}");
    if let Some(path) = log {
        let line = log_line(capability, reason, &test_binary(), &test_name());
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            // One write of the whole line: O_APPEND makes it land whole at
            // the end, whoever else appends.
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!(
                "BENCHSUITE_SKIP_LOG={}: cannot append the skip: {e}",
                path.display()
            );
        }
    }
}

/// Whether `list` (`BENCHSUITE_REQUIRE`'s value) requires `capability`;
/// `Err` naming an unknown capability.
fn required(list: &str, capability: Capability) -> Result<bool, String> {
    let mut all = false;
    let (mut named, mut excluded) = (false, false);
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "all" {
            all = true;
            continue;
        }
        let (minus, name) = match item.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, item),
        };
        let c = Capability::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = NAMES.iter().map(|(_, n)| *n).collect();
            format!(
                "BENCHSUITE_REQUIRE={list}: no capability is called `{name}` (known: all, {})",
                known.join(", ")
            )
        })?;
        if c == capability {
            if minus {
                excluded = true;
            } else {
                named = true;
            }
        }
    }
    Ok(named || (all && !excluded))
}

/// One line of the skip log: `[capability] binary test: reason`, the
/// reason on the same line.
fn log_line(capability: Capability, reason: &str, binary: &str, test: &str) -> String {
    let reason = reason.replace(['\n', '\r'], " ");
    format!("[{capability}] {binary} {test}: {reason}\n")
}

/// The test binary's name without cargo's hash (`faults`, not
/// `faults-0123456789abcdef`).
fn test_binary() -> String {
    let exe = std::env::current_exe().ok();
    let name = exe
        .as_deref()
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "?".into());
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem.to_string()
        }
        _ => name,
    }
}

/// The test's name: the harness names each test's thread after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn names_go_both_ways_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Capability::all() {
            assert_eq!(Capability::from_name(c.name()), Some(c));
            assert!(seen.insert(c.name()), "{c} twice");
            assert!(
                c.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{c}"
            );
        }
        assert_eq!(Capability::from_name("all"), None);
    }

    #[test]
    fn a_list_requires_what_it_names_and_all_less_exclusions() {
        use Capability::*;
        assert_eq!(required("tmpfs, loop ,dm", Loop), Ok(true));
        assert_eq!(required("tmpfs,loop", Dm), Ok(false));
        assert_eq!(required("", Dm), Ok(false));
        assert_eq!(required("all", Cuda), Ok(true));
        assert_eq!(required("all,-cuda,-two-cpus", Cuda), Ok(false));
        assert_eq!(required("all,-cuda", Dm), Ok(true));
        let e = required("tmpfs,dmm", Tmpfs).unwrap_err();
        assert!(
            e.contains("`dmm`") && e.contains("known: all, linux"),
            "{e}"
        );
    }

    #[test]
    #[should_panic(
        expected = "capability `dm` is required here (BENCHSUITE_REQUIRE=loop,dm) but unavailable: no /dev/mapper/control"
    )]
    fn a_required_capability_panics_saying_why() {
        skip_with(
            Capability::Dm,
            "no /dev/mapper/control",
            Some("loop,dm"),
            None,
        );
    }

    #[test]
    #[should_panic(expected = "no capability is called `chromum`")]
    fn an_unknown_required_name_panics_at_any_skip() {
        skip_with(Capability::Cc, "no cc", Some("chromum"), None);
    }

    fn scratch_file(name: &str) -> std::path::PathBuf {
        let p =
            std::env::temp_dir().join(format!("benchsuite-skip-{name}-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_skip_not_required_appends_one_line_naming_test_capability_and_reason() {
        let log = scratch_file("line");
        skip_with(
            Capability::Chromium,
            "not on PATH\n(apt-get install chromium)",
            Some("dm"),
            Some(&log),
        );
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        let me = format!(
            "{} testing::skip::tests::a_skip_not_required_appends_one_line_naming_test_capability_and_reason",
            test_binary()
        );
        assert_eq!(
            text,
            format!("[chromium] {me}: not on PATH (apt-get install chromium)\n")
        );
    }

    #[test]
    fn parallel_skips_never_interleave_within_a_line() {
        let log = scratch_file("parallel");
        let reason = "x".repeat(3000);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (log, reason) = (&log, &reason);
                std::thread::Builder::new()
                    .name(format!("t{t}"))
                    .spawn_scoped(s, move || {
                        for _ in 0..50 {
                            skip_with(Capability::Loop, reason, None, Some(log));
                        }
                    })
                    .unwrap();
            }
        });
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 400);
        for l in lines {
            let (head, tail) = l.split_once(": ").unwrap();
            assert!(head.starts_with("[loop] ") && head.contains(" t"), "{head}");
            assert_eq!(tail, reason);
        }
    }

    #[test]
    fn the_binary_name_loses_cargo_s_hash() {
        let name = test_binary();
        assert!(name.starts_with("benchsuite_core"), "{name}");
        assert!(!name.contains('-'), "{name}");
    }

    /// Runs only as the child of the test below (which sets
    /// `BENCHSUITE_SKIP_SELFTEST`): a real skip, reading the real
    /// environment.
    #[test]
    fn child_skips_for_want_of_cc() {
        if std::env::var_os("BENCHSUITE_SKIP_SELFTEST").is_some() {
            skip(Capability::Cc, "no C compiler (selftest)");
        }
    }

    #[test]
    fn the_environment_requires_and_logs() {
        let child = |require: Option<&str>, log: &Path| {
            let mut c = Command::new(std::env::current_exe().unwrap());
            c.args([
                "--exact",
                "testing::skip::tests::child_skips_for_want_of_cc",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BENCHSUITE_SKIP_SELFTEST", "1")
            .env("BENCHSUITE_SKIP_LOG", log)
            .env_remove("BENCHSUITE_REQUIRE");
            if let Some(r) = require {
                c.env("BENCHSUITE_REQUIRE", r);
            }
            c.output().unwrap()
        };
        let log = scratch_file("env");
        let out = child(Some("openblas,vulkan"), &log);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("skipped [cc]: no C compiler (selftest)"),
            "{err}"
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.starts_with("[cc] benchsuite_core ")
                && text.ends_with(": no C compiler (selftest)\n")
                && text.lines().count() == 1,
            "{text}"
        );

        let out = child(Some("all,-dm"), &log);
        let all = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{all}");
        assert!(
            all.contains(
                "capability `cc` is required here (BENCHSUITE_REQUIRE=all,-dm) but unavailable: no C compiler (selftest)"
            ),
            "{all}"
        );
        // A failure is not logged as a skip.
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
        std::fs::remove_file(&log).unwrap();
    }
}
