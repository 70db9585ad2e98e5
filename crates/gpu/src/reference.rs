//! `benchsuite reference` for the GPU: the same point measured by PyTorch
//! (GEMMs, copies) or CuPy (launch latency) through `python3`, run between
//! our rounds like every other reference tool. The script is one program
//! for every point (`REFERENCE_PY`): it times the operation with CUDA
//! events (the launches with the host clock, as ours), takes the median of
//! 5 batches, prints `value=` in our metric's base unit and the SM clock
//! right after the timed batches (`sm_clock_mhz=`, from NVML through
//! `nvidia-smi`, in the tool's output beside our records' NVML notes).
//! Where python3 cannot import the package the run fails saying which one
//! to install.
//!
//! python3 runs isolated (`-I`): `-c` would put the working directory
//! first on `sys.path` (a `torch.py` there ran in place of PyTorch, its
//! version in the report), and `PYTHONPATH`, `PYTHONSTARTUP` and the
//! user's site-packages are not read either. The reference runner also
//! runs it (and its version probe) in a private directory of its own, and
//! finds `python3` only in `PATH`'s absolute directories. A package
//! installed with `pip install --user` is therefore not seen: install it
//! into python3's own environment, or a virtualenv whose `python3` comes
//! first on `PATH`.

use benchsuite_core::reference::{REFERENCE_SECS, number_after};
use benchsuite_core::{Point, Reference};

use crate::params::{CopyOp, Memory};
use crate::peak::Gemm;

/// The reference program; its arguments: `matmul PRECISION N DEVICE`,
/// `copy OP BYTES MEMORY DEVICE`, `launch OP DEVICE`.
pub(crate) const REFERENCE_PY: &str = r#"import statistics, subprocess, sys, time
what, dev, args = sys.argv[1], int(sys.argv[-1]), sys.argv[2:-1]
def need(pkg, pip):
    try:
        return __import__(pkg)
    except ImportError:
        sys.exit(f"{pkg} is not importable by python3 (run isolated, -I: not from PYTHONPATH or the user's site-packages): pip install {pip} into python3's environment or a virtualenv first on PATH")
def clock():
    try:
        return subprocess.run(["nvidia-smi", "-i", str(dev), "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:
        return f"unknown ({e})"
if what == "launch":
    cp = need("cupy", "cupy-cuda12x")
    cp.cuda.Device(dev).use()
    k = cp.RawKernel('extern "C" __global__ void empty() {}', "empty")
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for _ in range(100):
            k((1,), (1,), ())
        s.synchronize()
        t, end = [], time.perf_counter() + 1.0
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            k((1,), (1,), ())
            if args[0] == "launch":
                s.synchronize()
            t.append(time.perf_counter() - t0)
        s.synchronize()
    print(f"value={statistics.median(t)!r}")
    print(f"sm_clock_mhz={clock()}")
    sys.exit(0)
torch = need("torch", "torch")
d = torch.device("cuda", dev)
# Events record on the current device's stream: make it this one.
torch.cuda.set_device(d)
if what == "matmul":
    p, n = args[0], int(args[1])
    torch.backends.cuda.matmul.allow_tf32 = p == "tf32"
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f64": torch.float64}
    if p == "int8":
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device=d)
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device=d).t().contiguous().t()
        f = lambda: torch._int_mm(a, b)
    elif p == "fp8":
        a = (torch.rand(n, n, device=d) * 2 - 1).to(torch.float8_e4m3fn)
        b = (torch.rand(n, n, device=d) * 2 - 1).to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.ones((), device=d)
        f = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        a = torch.rand(n, n, device=d, dtype=dt[p]) * 2 - 1
        b = torch.rand(n, n, device=d, dtype=dt[p]) * 2 - 1
        f = lambda: a @ b
    per = 2 * n ** 3
else:
    op, size, mem = args[0], int(args[1]), args[2]
    dev_buf = lambda: torch.empty(size, dtype=torch.uint8, device=d)
    host_buf = lambda: torch.empty(size, dtype=torch.uint8, pin_memory=mem == "pinned")
    src, dst = (dev_buf(), dev_buf()) if op.startswith("d2d") else (host_buf(), dev_buf()) if op == "h2d" else (dev_buf(), host_buf())
    src.fill_(7)
    f = lambda: dst.copy_(src, non_blocking=True)
    per = 2 * size if op.startswith("d2d") else size
for _ in range(3):
    f()
torch.cuda.synchronize(d)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
def batch(k):
    s.record()
    for _ in range(k):
        f()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3
k = 1
while batch(k) < BATCH_SECS and k < 1 << 20:
    k *= 2
rates = [per * k / batch(k) for _ in range(5)]
print(f"value={statistics.median(rates)!r}")
print(f"sm_clock_mhz={clock()}")
"#;

/// Seconds one timed batch of the reference program lasts: five of them
/// are about one benchsuite round.
fn batch_secs() -> String {
    format!("{:.2}", REFERENCE_SECS as f64 / 10.0)
}

fn program() -> String {
    REFERENCE_PY.replace("BATCH_SECS", &batch_secs())
}

fn parse(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    number_after(out, "value=")
}

fn reference(package: &'static str, metric: &'static str, args: Vec<String>) -> Reference {
    // Isolated: see the module's docs.
    let mut argv = vec![
        "python3".to_string(),
        "-I".to_string(),
        "-c".to_string(),
        program(),
    ];
    argv.extend(args);
    let mut r = Reference::new("python3", package, argv, metric, parse);
    let import = if package == "python3-cupy" {
        "cupy"
    } else {
        "torch"
    };
    r.version_argv = vec![
        "python3".into(),
        "-I".into(),
        "-c".into(),
        format!("import {import} as m; print('{import}', m.__version__)"),
    ];
    r
}

fn device(point: &Point) -> String {
    point
        .get("device")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
        .to_string()
}

/// `torch.matmul` (`a @ b`; `torch._int_mm` for int8, `torch._scaled_mm`
/// with unit scales and bf16 out for fp8, B column-major for both).
pub(crate) fn matmul(point: &Point) -> Option<Reference> {
    let g: Gemm = point.choice("precision").ok()?;
    let n = point.get("n")?.as_u64()?;
    let mut r = reference(
        "python3-torch",
        "flops",
        vec!["matmul".into(), g.to_string(), n.to_string(), device(point)],
    );
    r.note = match g {
        Gemm::Int8 => Some("torch._int_mm is no fair int8 reference: on an H200 it ran 126 TOP/s with B row-major and 706 with B column-major (as here), where cublasGemmEx TN ran 1453".into()),
        Gemm::Fp8 => Some("torch._scaled_mm, unit scales, bf16 out, B column-major, default accumulation (1429 TFLOP/s on an H200; 1476 with use_fast_accum)".into()),
        _ => None,
    };
    Some(r)
}

/// A `copy_` between two torch tensors of `block` bytes (device, pinned or
/// pageable host), for every `gpu.bandwidth` op on the CUDA backend.
pub(crate) fn copy(point: &Point) -> Option<Reference> {
    if !crate::params::is_cuda(point) {
        return None;
    }
    let op: CopyOp = point.choice("op").ok()?;
    let block = point.get("block")?.as_u64()?;
    let mem: Memory = point.choice("memory").unwrap_or(Memory::Pinned);
    let mut r = reference(
        "python3-torch",
        "bandwidth",
        vec![
            "copy".into(),
            op.to_string(),
            block.to_string(),
            mem.to_string(),
            device(point),
        ],
    );
    if mem == Memory::Pageable && !op.is_d2d() {
        r.note =
            Some("torch times pageable copies with CUDA events, ours with the host clock".into());
    }
    Some(r)
}

/// CuPy's empty `RawKernel`: launch then synchronise (`launch`), or the
/// launch call alone (`launch_queue`); other latency ops have none.
pub(crate) fn launch(point: &Point) -> Option<Reference> {
    let op = point.get("op")?.as_str()?;
    if op != "launch" && op != "launch_queue" {
        return None;
    }
    Some(reference(
        "python3-cupy",
        "latency",
        vec!["launch".into(), op.into(), device(point)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::{Benchmark, Value};

    fn point(b: &dyn Benchmark, set: &[(&str, Value)]) -> Point {
        let mut p = Point::default();
        for s in b.meta().params {
            p.set(&s.name, s.default.clone());
        }
        for (k, v) in set {
            p.set(k, v.clone());
        }
        p
    }

    #[test]
    fn gpu_points_map_to_torch_and_cupy_one_program_each() {
        let p = point(&crate::Matmul, &[("precision", Value::Str("fp8".into()))]);
        let r = matmul(&p).unwrap();
        assert_eq!(&r.argv[..3], ["python3", "-I", "-c"]);
        assert_eq!(&r.argv[4..], ["matmul", "fp8", "8192", "0"]);
        assert_eq!(
            (r.tool, r.package, r.metric),
            ("python3", "python3-torch", "flops")
        );
        assert!(r.note.unwrap().contains("_scaled_mm"));
        assert!(r.argv[3].contains("torch._scaled_mm") && !r.argv[3].contains("BATCH_SECS"));
        let p = point(&crate::Matmul, &[("precision", Value::Str("int8".into()))]);
        assert!(
            matmul(&p)
                .unwrap()
                .note
                .unwrap()
                .contains("no fair int8 reference")
        );

        let p = point(&crate::Bandwidth, &[("op", Value::Str("h2d".into()))]);
        let r = copy(&p).unwrap();
        assert_eq!(&r.argv[4..], ["copy", "h2d", "268435456", "pinned", "0"]);
        assert_eq!(r.metric, "bandwidth");
        let p = point(&crate::Bandwidth, &[("backend", Value::Str("wgpu".into()))]);
        assert!(copy(&p).is_none());

        let p = point(&crate::Latency, &[("op", Value::Str("launch".into()))]);
        let r = launch(&p).unwrap();
        assert_eq!(&r.argv[4..], ["launch", "launch", "0"]);
        assert_eq!((r.package, r.metric), ("python3-cupy", "latency"));
        assert_eq!(&r.version_argv[..3], ["python3", "-I", "-c"]);
        assert!(r.version_argv[3].contains("import cupy"));
        let p = point(&crate::Latency, &[("op", Value::Str("d2h".into()))]);
        assert!(launch(&p).is_none());
    }

    #[test]
    fn the_program_prints_its_value_and_clock() {
        assert_eq!(parse("value=4.16e12\nsm_clock_mhz=1980\n"), Ok(4.16e12));
        assert!(parse("torch is not importable").is_err());
        let p = program();
        assert!(p.contains("sm_clock_mhz=") && p.contains("pip install"));
        // It is valid Python where python3 is installed.
        let ok = std::process::Command::new("python3")
            .args(["-c", &format!("import ast; ast.parse({:?})", p)])
            .status();
        if let Ok(s) = ok {
            assert!(s.success(), "the reference program does not parse");
        }
    }
}
