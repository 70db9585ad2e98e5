//! The CUDA path end to end on a machine without a GPU: a stand-in driver
//! library (`tests/data/libcuda_stub.c`, built here with the C compiler)
//! answers the detection calls with one H100 SXM's figures and lacks every
//! other entry point. Through the real dynamic loading this checks the
//! device facts and derived peaks, the usage errors that need a device
//! (block larger than its memory, an unknown device index), the skip
//! reasons of a driver that cannot start — including a result code newer
//! than the bindings know — and that a driver missing the functions a case
//! needs fails that record, never the process.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds the stub as `libcuda.so` in `dir`; `None` (the test skips) where
/// no C compiler is installed.
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
        eprintln!("skipped: no C compiler ({cc}) to build the stub driver");
        return None;
    }
    Some(out)
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

    // The stub has no context functions: each record fails with the
    // reason, the run goes on and exits 0 (no --strict).
    let report = json(&run(d, &[], &["run", "gpu", "--quick", "--format", "json"]));
    let records = report["records"].as_array().unwrap();
    assert!(records.len() >= 5, "{report}");
    for r in records {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(r["reason"].as_str().unwrap().contains("CUDA driver"), "{r}");
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
