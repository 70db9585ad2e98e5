//! The CUDA path end to end on a machine without a GPU: a stand-in driver
//! library (`tests/data/libcuda_stub.c`, built here with the C compiler)
//! answers the detection calls with one H100 SXM's figures and emulates in
//! host memory the context, stream, memory, copy and event calls of the
//! copy paths; it has no modules or kernels. Through the real dynamic
//! loading this checks the device facts and derived peaks, the usage errors
//! that need a device (block larger than its memory, an unknown device
//! index), the skip reasons of a driver that cannot start — including a
//! result code newer than the bindings know — and of missing NVRTC/cuBLAS
//! (before any context is created); then that every host copy and copy
//! latency point runs, verifies and frees everything it took, that a
//! corrupted copy fails verification, that each record carries the NVML
//! readings of a stand-in `libnvidia-ml.so.1` (`tests/data/libnvml_stub.c`)
//! or says NVML is absent, that the 8-bit GEMMs take the TN layout and
//! pass their host check through cuBLAS/cuBLASLt stand-ins
//! (`tests/data/libcublas_stub.c`, which compute on the host), and that a driver call failing at
//! any point fails that record alone, never the process or the next
//! record.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchsuite_core::testing::{Capability, skip};

/// Builds the stub as `libcuda.so` in `dir`; `None` (the test skips,
/// capability `cc`) where no C compiler builds it.
fn build_stub(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libcuda_stub.c");
    let out = dir.join("libcuda.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ok = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip(
            Capability::Cc,
            &format!("no C compiler ({cc}) builds the stub driver"),
        );
        return None;
    }
    Some(out)
}

/// Builds the NVML stand-in as `libnvidia-ml.so.1` in `dir`; `false` (the
/// caller skips) where no C compiler is installed.
fn build_nvml_stub(dir: &Path) -> bool {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libnvml_stub.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libnvidia-ml.so.1"))
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
}

/// What the stub found still live at exit (its `STUB_REPORT` file).
fn leftovers(file: &Path) -> std::collections::HashMap<String, i64> {
    let text = std::fs::read_to_string(file).expect("the stub wrote its report");
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a count")))
        .collect()
}

/// Asserts that a run left nothing allocated in the stub and broke none of
/// the driver's preconditions: no device or pinned memory, no events, at
/// most the one stream per device that lives as long as its context.
fn assert_clean(file: &Path, what: &str) {
    let left = leftovers(file);
    for k in [
        "device_allocations",
        "pinned_allocations",
        "events",
        "errors",
    ] {
        assert_eq!(left[k], 0, "{what}: {k} left: {left:?}");
    }
    assert!(left["streams"] <= 1, "{what}: {left:?}");
}

fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
        _ => dir.display().to_string(),
    };
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchsuite"));
    c.args(args)
        .env("LD_LIBRARY_PATH", path)
        .env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn usage_error(o: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_stub_driver_is_detected_checked_and_survived() {
    if !cfg!(target_os = "linux") {
        skip(
            Capability::Linux,
            "the stub driver is a Linux shared library",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if build_stub(dir.path()).is_none() {
        return;
    }
    let d = dir.path();

    // Device facts and peaks derived from the driver's attributes.
    let host = json(&run(d, &[], &["info", "--format", "json"]));
    let dev = &host["extra"]["gpu"]["devices"][0];
    assert_eq!(
        dev["name"], "NVIDIA H100 80GB HBM3 (benchsuite test stub)",
        "{host}"
    );
    assert_eq!(dev["compute_capability"], "9.0");
    assert_eq!(dev["sms"], 132);
    let peaks = &dev["peaks"];
    // 2619 MHz × 5120 bit × 2 / 8 = 3.352 TB/s (H100 SXM datasheet: 3.35).
    assert_eq!(peaks["memory_bytes_per_sec"].as_f64(), Some(3.35232e12));
    // 132 SMs × 128 FP32 lanes × 2 × 1.98 GHz = 66.9 TFLOPS (datasheet 67).
    assert_eq!(peaks["flops_f32"].as_f64(), Some(66.90816e12));
    assert_eq!(host["extra"]["gpu"]["cuda_driver_version"], "12.8");

    // Usage errors that need the device, before anything is allocated.
    usage_error(
        &run(d, &[], &["run", "gpu.bandwidth", "--param", "block=1T"]),
        &["--param block", "80.0 GiB", "device 0"],
    );
    usage_error(
        &run(d, &[], &["run", "gpu.flops", "--param", "device=1"]),
        &["--param device", "1 CUDA device: 0 = NVIDIA H100 80GB HBM3"],
    );

    // `blocks=sm` is the SM count the driver reports (132 here): the
    // "cores used" sweep has its knee; 128 and 132 are both points.
    let report = json(&run(
        d,
        &[],
        &[
            "run",
            "gpu.iops",
            "--param",
            "blocks=1..sm:x2,sm,2sm",
            "--quick",
            "--format",
            "json",
        ],
    ));
    let blocks: Vec<u64> = report["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["params"]["blocks"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [1, 2, 4, 8, 16, 32, 64, 128, 132, 264], "{report}");
    // Without a device, `sm` stands for 1 and the record skips saying
    // why: a GPU plan runs on any machine instead of stopping.
    let report = json(&run(
        d,
        &[("STUB_CUINIT_RC", "100")],
        &[
            "run",
            "gpu.iops",
            "--param",
            "blocks=sm",
            "--quick",
            "--format",
            "json",
        ],
    ));
    let rec = &report["records"][0];
    assert_eq!(rec["status"], "skipped", "{report}");
    assert_eq!(rec["params"]["blocks"].as_u64(), Some(1), "{report}");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap_or("")
            .contains("no CUDA device"),
        "{report}"
    );

    // Where NVRTC and cuBLAS are not installed (as on CI): every default
    // point (kernels, cuBLAS) is skipped saying which, and none created a
    // context first. (With NVRTC, the kernel points would reach the stub's
    // missing cuModuleLoadData and fail.)
    let rep = d.join("default.report");
    let report = json(&run(
        d,
        &[("STUB_REPORT", rep.to_str().unwrap())],
        &["run", "gpu", "--quick", "--format", "json"],
    ));
    let records = report["records"].as_array().unwrap();
    assert!(records.len() >= 5, "{report}");
    if !report.to_string().contains("NVRTC not found") {
        skip(
            Capability::NoCuda,
            "the NVRTC checks: this machine has NVRTC or cuBLAS",
        );
    } else {
        for r in records {
            assert_eq!(r["status"], "skipped", "{r}");
            let reason = r["reason"].as_str().unwrap();
            let lib = if r["id"] == "gpu.matmul" {
                "cuBLAS not found"
            } else {
                "NVRTC not found"
            };
            assert!(reason.contains(lib), "{r}");
        }
        assert_eq!(leftovers(&rep)["primary_context_refs"], 0);
        assert_clean(&rep, "skipped records");
    }

    // A driver that cannot start: skipped, with the fix. 919 is newer than
    // the CUDA 12.8 bindings' result enum.
    for (rc, needle) in [
        ("100", "no CUDA device"),
        ("919", "nvidia-fabricmanager"),
        ("999", "nvidia-uvm"),
        ("12345", "CUDA error 12345"),
    ] {
        let report = json(&run(
            d,
            &[("STUB_CUINIT_RC", rc)],
            &["run", "gpu.latency", "--quick", "--format", "json"],
        ));
        let r = &report["records"][0];
        assert_eq!(r["status"], "skipped", "{rc}: {r}");
        assert!(r["reason"].as_str().unwrap().contains(needle), "{rc}: {r}");
    }
}

fn records(report: &serde_json::Value) -> &Vec<serde_json::Value> {
    report["records"].as_array().expect("records")
}

/// The median of metric `name` of record `r`.
fn median(r: &serde_json::Value, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == name))
        .and_then(|m| m["summary"]["median"].as_f64())
        .unwrap_or_else(|| panic!("no {name} median: {r}"))
}

#[test]
fn host_copies_run_verify_and_free_everything_through_the_emulated_driver() {
    if !cfg!(target_os = "linux") {
        skip(
            Capability::Linux,
            "the stub driver is a Linux shared library",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if build_stub(dir.path()).is_none() {
        return;
    }
    let d = dir.path();
    let rep = d.join("copies.report");
    let rep_env = ("STUB_REPORT", rep.to_str().unwrap());

    // Every copy path, pinned and pageable, 1 B to 1 MiB: ok, checked
    // byte for byte in prepare, a bandwidth above zero and below what a
    // host memcpy can do, and everything freed.
    let args = [
        "run",
        "gpu.bandwidth",
        "--param",
        "op=d2d_memcpy,h2d,d2h",
        "--param",
        "memory=pinned,pageable",
        "--param",
        "block=1,1K,1M",
        "--quick",
        "--format",
        "json",
    ];
    let report = json(&run(d, &[rep_env], &args));
    let rs = records(&report);
    assert_eq!(rs.len(), 18, "{report}");
    for r in rs {
        assert_eq!(r["status"], "ok", "{r}");
        let bw = median(r, "bandwidth");
        assert!(bw > 0.0 && bw < 1e12, "bandwidth {bw}: {r}");
        assert!(median(r, "time_per_op") > 0.0, "{r}");
        let notes = r["notes"].to_string();
        assert!(notes.contains("checked byte for byte"), "{r}");
        let pageable_host =
            r["params"]["memory"] == "pageable" && r["params"]["op"] != "d2d_memcpy";
        assert_eq!(notes.contains("the host clock"), pageable_host, "{r}");
    }
    assert_clean(&rep, "gpu.bandwidth");

    // Copy round trips: a latency above zero and below a second.
    let report = json(&run(
        d,
        &[rep_env],
        &[
            "run",
            "gpu.latency",
            "--param",
            "op=h2d,d2h,d2d",
            "--quick",
            "--format",
            "json",
        ],
    ));
    assert_eq!(records(&report).len(), 3, "{report}");
    for r in records(&report) {
        assert_eq!(r["status"], "ok", "{r}");
        let l = median(r, "latency");
        assert!(l > 0.0 && l < 1.0, "latency {l}: {r}");
    }
    assert_clean(&rep, "gpu.latency");

    // Without NVML every record says it had no clocks under load.
    let notes = records(&report)
        .iter()
        .map(|r| r["notes"].to_string())
        .collect::<String>();
    assert!(
        notes.contains("no clocks, power or temperature under load: NVML not loadable"),
        "{report}"
    );

    // With the NVML stand-in: each record carries the min/median/max of
    // its samples, and a power cap during the record is a caveat naming
    // it, with the peak at the median clock beside the peak at maximum.
    assert!(build_nvml_stub(d), "the C compiler built the CUDA stub");
    let one = [
        "run",
        "gpu.bandwidth",
        "--param",
        "op=h2d,d2d_memcpy",
        "--param",
        "block=128M",
        "--quick",
        "--format",
        "json",
    ];
    for reasons in ["0", "0x4"] {
        let report = json(&run(d, &[rep_env, ("STUB_NVML_REASONS", reasons)], &one));
        for r in records(&report) {
            assert_eq!(r["status"], "ok", "{r}");
            let notes = r["notes"].to_string();
            // The stand-in's first SM clock read is 1980 MHz, the others
            // 1395: the median depends on how many samples a record took
            // (one every 100 ms, and one at each end).
            assert!(
                notes.contains("under load (NVML")
                    && notes.contains("SM clock 1395/")
                    && notes.contains("/1980 MHz")
                    && notes.contains("power (1 s average) 689.0/689.0/689.0 W")
                    && notes.contains("temperature 61/61/61 °C"),
                "{r}"
            );
            let caveats = r["warnings"].to_string();
            assert_eq!(
                caveats.contains("power throttling"),
                reasons == "0x4",
                "{r}"
            );
            if r["params"]["op"] == "d2d_memcpy" {
                assert!(
                    notes.contains("peak at the median memory clock under load (2619 MHz)"),
                    "{r}"
                );
            }
        }
        assert_clean(&rep, "gpu.bandwidth with NVML");
    }

    // A device copy that gets its last byte wrong fails verification,
    // naming that byte; host copies in the same run are unaffected.
    let report = json(&run(
        d,
        &[("STUB_CORRUPT_COPY", "1")],
        &[
            "run",
            "gpu.bandwidth",
            "--param",
            "op=d2d_memcpy,h2d",
            "--param",
            "block=1,1M",
            "--quick",
            "--format",
            "json",
        ],
    ));
    for r in records(&report) {
        let block = r["params"]["block"].as_u64().unwrap();
        if r["params"]["op"] == "d2d_memcpy" {
            assert_eq!(r["status"], "failed", "{r}");
            let reason = r["reason"].as_str().unwrap();
            assert!(reason.contains("verification failed"), "{r}");
            assert!(reason.contains("d2d_memcpy copy"), "{r}");
            assert!(reason.ends_with(&format!("at byte {}", block - 1)), "{r}");
        } else {
            assert_eq!(r["status"], "ok", "{r}");
        }
    }

    // A driver call failing, wherever it happens, fails that record alone
    // (with the call's name), and what the record took is still freed. The
    // releases are the regression cases: their failures used to surface
    // as the next record's error (`cuStreamCreate`), because the events
    // and stream were freed when the case was dropped, after its check.
    let two = [
        "run",
        "gpu.bandwidth",
        "--param",
        "op=d2h,d2d_memcpy",
        "--param",
        "block=1K",
        "--quick",
        "--format",
        "json",
    ];
    for (call, failed, needle) in [
        (
            "cuEventDestroy_v2:1",
            0,
            "teardown: releasing GPU resources",
        ),
        (
            "cuEventDestroy_v2:3",
            1,
            "teardown: releasing GPU resources",
        ),
        ("cuMemFree_v2:2", 1, "teardown: releasing GPU resources"),
        ("cuMemAlloc_v2:2", 1, "cuMemAlloc of 1024 bytes"),
        ("cuMemHostAlloc", 0, "cuMemHostAlloc of 1024 bytes"),
        ("cuMemcpyDtoDAsync_v2:3", 1, "cuMemcpyDtoDAsync"),
        ("cuEventElapsedTime", 0, "cuEventElapsedTime"),
        ("cuStreamSynchronize:3", 0, "teardown: cuStreamSynchronize"),
    ] {
        let report = json(&run(d, &[("STUB_FAIL", call)], &two));
        let rs = records(&report);
        assert_eq!(rs.len(), 2, "{call}: {report}");
        for (i, r) in rs.iter().enumerate() {
            if i == failed {
                assert_eq!(r["status"], "failed", "{call}: {r}");
                let reason = r["reason"].as_str().unwrap();
                assert!(
                    reason.contains(needle) && reason.contains("CUDA_ERROR_UNKNOWN"),
                    "{call}: {r}"
                );
            } else {
                assert_eq!(r["status"], "ok", "{call}: {r}");
            }
        }
    }
}

/// Builds the cuBLAS and cuBLASLt stand-ins (`tests/data/libcublas_stub.c`)
/// as `libcublas.so.12` and `libcublasLt.so.12` in `dir`.
fn build_blas_stubs(dir: &Path) -> bool {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libcublas_stub.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    [
        ("libcublas.so.12", None),
        ("libcublasLt.so.12", Some("-DLT")),
    ]
    .into_iter()
    .all(|(name, define)| {
        let mut c = Command::new(&cc);
        c.args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(dir.join(name));
        c.args(define).arg(&src).arg("-lm");
        c.status().is_ok_and(|s| s.success())
    })
}

#[test]
fn eight_bit_gemms_take_the_tn_layout_and_pass_the_host_check() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if build_stub(dir.path()).is_none() {
        return;
    }
    let d = dir.path();
    assert!(build_blas_stubs(d), "the C compiler built the CUDA stub");
    let rep = d.join("gemm.report");
    // The stand-ins compute int8 (cublasGemmEx) and fp8 (cublasLtMatmul)
    // GEMMs on the host, in the TN layout only, and refuse the rest: so an
    // 8-bit record that is ok called the TN path, and its entries matched
    // the host's own computation of Aᵀ·B.
    let report = json(&run(
        d,
        &[("STUB_REPORT", rep.to_str().unwrap())],
        &[
            "run",
            "gpu.matmul",
            "--param",
            "precision=int8,fp8,bf16",
            "--param",
            "n=64",
            "--quick",
            "--format",
            "json",
        ],
    ));
    let rs = records(&report);
    assert_eq!(rs.len(), 3, "{report}");
    for r in rs {
        let notes = r["notes"].to_string();
        match r["params"]["precision"].as_str().unwrap() {
            "int8" => {
                assert_eq!(r["status"], "ok", "{r}");
                assert!(
                    notes.contains("CUBLAS_COMPUTE_32I") && notes.contains("TN: A transposed"),
                    "{r}"
                );
                // 1979 TOP/s at 1830 MHz is 8192 per SM per clock; the stub
                // H100 runs at 1980 MHz: 132 × 8192 × 1.98 GHz.
                let peak = r["peak"]["value"].as_f64().unwrap();
                assert!((peak / 2.14106112e15 - 1.0).abs() < 1e-9, "{r}");
            }
            "fp8" => {
                assert_eq!(r["status"], "ok", "{r}");
                assert!(
                    notes.contains("cublasLtMatmul")
                        && notes.contains("CUDA_R_8F_E4M3")
                        && notes.contains("FAST_ACCUM off"),
                    "{r}"
                );
                assert!(r["peak"]["value"].as_f64().is_some(), "{r}");
            }
            _ => {
                // Not emulated: the failure names the call and status.
                assert_eq!(r["status"], "failed", "{r}");
                let reason = r["reason"].as_str().unwrap();
                assert!(reason.contains("CUBLAS_STATUS_NOT_SUPPORTED"), "{r}");
            }
        }
    }
    assert_clean(&rep, "gpu.matmul");
}
