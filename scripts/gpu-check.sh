#!/usr/bin/env bash
# gpu-check.sh — the checks of the H200 follow-up that need a GPU, in
# under five minutes once built:
#   1. d2d_kernel / d2d_memcpy at 256 MiB, 1 GiB and 4 GiB (goal ≥ 0.98,
#      and ≥ 85% of the derived memory peak);
#   2. int8 (cublasGemmEx TN) and fp8 (cuBLASLt TN) GEMMs at n = 8192,
#      with bf16 beside them, their status, layout note and efficiency;
#   3. blocks=sm resolving to the SM count, and the NVML clocks, power and
#      throttling notes of every record.
#
#   cargo build --release -p benchsuite    # once (or set BENCHSUITE=...)
#   scripts/gpu-check.sh [OUT_DIR]
#
# Needs python3 (standard library only). Writes the JSON reports to OUT_DIR
# (default ./gpu-check) and prints a summary.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BENCHSUITE:-$root/target/release/benchsuite}
[ -x "$bin" ] || bin=${CARGO_TARGET_DIR:-$root/target}/release/benchsuite
if [ ! -x "$bin" ]; then
    echo "no benchsuite binary: run 'cargo build --release -p benchsuite' or set BENCHSUITE" >&2
    exit 2
fi
out=${1:-gpu-check}
mkdir -p "$out"

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv || true

run() { # name, benchsuite arguments...
    local name=$1
    shift
    echo "== $name: benchsuite $*" >&2
    "$bin" run "$@" --format json >"$out/$name.json"
}

run copies gpu.bandwidth --param op=d2d_kernel,d2d_memcpy --param block=256M,1G,4G
run gemm gpu.matmul --param precision=bf16,int8,fp8 --param n=8192
run knee gpu.flops --param precision=f32 --param blocks=64,128,sm,2sm

python3 - "$out" <<'PY'
import json, sys

out = sys.argv[1]

def records(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)["records"]

def median(r):
    m = (r.get("metrics") or [{}])[0]
    return (m.get("summary") or {}).get("median")

def line(r, keys):
    p = r["params"]
    head = " ".join(f"{k}={p.get(k)}" for k in keys)
    if r["status"] != "ok":
        return f"{head}: {r['status']}: {r.get('reason')}"
    peak = r.get("peak") or {}
    eff = peak.get("efficiency")
    eff = f", {eff * 100:.1f}% of peak {peak['value'] / 1e12:.3f} T" if eff else ""
    return f"{head}: {median(r) / 1e12:.3f} T{eff}"

def load_notes(r):
    for n in r.get("notes", []):
        if "under load" in n or "peak at the median" in n or "no clocks" in n:
            print("      " + n)
    for w in r.get("warnings", []):
        text = w.get("message") or w.get("text") or json.dumps(w)
        print("      caveat: " + text)

print("\n== copies (TB/s, bytes read + written)")
copies = records("copies")
by = {}
for r in copies:
    print("  " + line(r, ["op", "block"]))
    load_notes(r)
    if r["status"] == "ok":
        by[(r["params"]["op"], r["params"]["block"])] = median(r)
for block in sorted({b for _, b in by}):
    k, m = by.get(("d2d_kernel", block)), by.get(("d2d_memcpy", block))
    if k and m:
        verdict = "ok" if k / m >= 0.98 else "BELOW 0.98"
        print(f"  d2d_kernel/d2d_memcpy at {block >> 20} MiB: {k / m:.3f} ({verdict})")
for r in copies:
    if r["params"]["op"] == "d2d_kernel":
        for n in r.get("notes", []):
            if n.startswith("copy kernel"):
                print("  kernel: " + n)
                break
        break

print("\n== GEMMs, n = 8192 (TFLOP/s; int8 in TOP/s)")
for r in records("gemm"):
    print("  " + line(r, ["precision", "n"]))
    for n in r.get("notes", []):
        if n.startswith("cuBLAS"):
            print("      " + n)
    load_notes(r)

print("\n== blocks=sm (f32 FMA, TFLOP/s)")
for r in records("knee"):
    print("  " + line(r, ["blocks"]))
PY
