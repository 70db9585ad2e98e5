#!/usr/bin/env python3
"""Reference figures for the gpu.* side-by-side checks, from PyTorch and/or
CuPy (whichever is installed), measured the way benchsuite measures: CUDA
events around a batch of back-to-back operations, 5 samples, the median.

Byte counting matches gpu.bandwidth: a device-to-device copy of N bytes
counts 2N (read + write), a host<->device copy N. A GEMM counts 2*N^3.

Usage: python3 crates/gpu/tests/reference_torch_cupy.py [DEVICE]
Prints one JSON object per line: {"what", "tool", "value", "unit"}.
"""

import json
import statistics
import sys

MIB = 1 << 20
BLOCK = 256 * MIB  # gpu.bandwidth's default block
GEMM_N = 8192  # gpu.matmul's default n


def emit(what, tool, value, unit):
    print(json.dumps({"what": what, "tool": tool, "value": value, "unit": unit}), flush=True)


def median_time(event_pair, sync, fn, iters, samples=5, warm=3):
    for _ in range(warm):
        fn()
    sync()
    times = []
    for _ in range(samples):
        start, end = event_pair()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start_end_seconds(start, end) / iters)
    return statistics.median(times)


def start_end_seconds(start, end):
    # torch: start.elapsed_time(end); cupy: cupy.cuda.get_elapsed_time(start, end); both in ms.
    if hasattr(start, "elapsed_time"):
        return start.elapsed_time(end) / 1e3
    import cupy

    return cupy.cuda.get_elapsed_time(start, end) / 1e3


def torch_refs(dev):
    import torch

    torch.cuda.set_device(dev)
    ev = lambda: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    sync = torch.cuda.synchronize
    a = torch.empty(BLOCK, dtype=torch.uint8, device="cuda").random_(0, 255)
    b = torch.empty_like(a)
    t = median_time(ev, sync, lambda: b.copy_(a), 20)
    emit("d2d copy 256MiB (Tensor.copy_ = cudaMemcpyAsync D2D)", "torch", 2 * BLOCK / t, "B/s")

    h = torch.empty(BLOCK, dtype=torch.uint8).pin_memory()
    t = median_time(ev, sync, lambda: b.copy_(h, non_blocking=True), 10)
    emit("h2d pinned 256MiB", "torch", BLOCK / t, "B/s")
    t = median_time(ev, sync, lambda: h.copy_(b, non_blocking=True), 10)
    emit("d2h pinned 256MiB", "torch", BLOCK / t, "B/s")
    hp = torch.empty(BLOCK, dtype=torch.uint8)  # pageable: time by the host clock
    import time

    for name, fn in [("h2d", lambda: b.copy_(hp)), ("d2h", lambda: hp.copy_(b))]:
        fn()
        sync()
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            sync()
            ts.append((time.perf_counter() - t0) / 5)
        emit(f"{name} pageable 256MiB", "torch", BLOCK / statistics.median(ts), "B/s")

    for dtype, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16"), (torch.float64, "f64")]:
        x = torch.randn(GEMM_N, GEMM_N, device="cuda", dtype=dtype)
        y = torch.randn_like(x)
        c = torch.empty_like(x)
        t = median_time(ev, sync, lambda: torch.mm(x, y, out=c), 10 if dtype != torch.float64 else 2)
        emit(f"matmul {name} n={GEMM_N}", "torch", 2 * GEMM_N**3 / t, "FLOP/s")
    # TF32 for float32 matmuls: PyTorch 2.9+ spells it fp32_precision (and
    # deprecates allow_tf32); older versions reject the new name.
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.allow_tf32 = True
    x = torch.randn(GEMM_N, GEMM_N, device="cuda", dtype=torch.float32)
    y = torch.randn_like(x)
    c = torch.empty_like(x)
    t = median_time(ev, sync, lambda: torch.mm(x, y, out=c), 10)
    emit(f"matmul tf32 n={GEMM_N}", "torch", 2 * GEMM_N**3 / t, "FLOP/s")


def cupy_refs(dev):
    import cupy as cp
    import cupyx
    import numpy as np

    cp.cuda.Device(dev).use()
    stream = cp.cuda.Stream(non_blocking=True)
    ev = lambda: (cp.cuda.Event(), cp.cuda.Event())
    rt = cp.cuda.runtime
    with stream:
        a = cp.random.randint(0, 255, BLOCK, dtype=cp.uint8)
        b = cp.empty_like(a)
        stream.synchronize()

        def memcpy():
            rt.memcpyAsync(b.data.ptr, a.data.ptr, BLOCK, rt.memcpyDeviceToDevice, stream.ptr)

        # Events record on the current stream (this one).
        t = median_time(ev, stream.synchronize, memcpy, 20)
        emit("d2d copy 256MiB (cudaMemcpyAsync D2D)", "cupy", 2 * BLOCK / t, "B/s")
        # An elementwise copy kernel over 16-byte elements (the d2d_kernel counterpart).
        a4 = a.view(cp.complex128)
        b4 = b.view(cp.complex128)
        copy_k = cp.ElementwiseKernel("complex128 x", "complex128 y", "y = x", "bs_copy16")
        t = median_time(ev, stream.synchronize, lambda: copy_k(a4, b4), 20)
        emit("d2d copy kernel 256MiB (ElementwiseKernel, 16 B/elem)", "cupy", 2 * BLOCK / t, "B/s")

        h = cupyx.empty_pinned((BLOCK,), dtype=np.uint8)
        h[:] = 1

        def h2d():
            rt.memcpyAsync(b.data.ptr, h.ctypes.data, BLOCK, rt.memcpyHostToDevice, stream.ptr)

        def d2h():
            rt.memcpyAsync(h.ctypes.data, b.data.ptr, BLOCK, rt.memcpyDeviceToHost, stream.ptr)

        t = median_time(ev, stream.synchronize, h2d, 10)
        emit("h2d pinned 256MiB", "cupy", BLOCK / t, "B/s")
        t = median_time(ev, stream.synchronize, d2h, 10)
        emit("d2h pinned 256MiB", "cupy", BLOCK / t, "B/s")


def main():
    dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    for name, fn in [("torch", torch_refs), ("cupy", cupy_refs)]:
        try:
            fn(dev)
        except ImportError as e:
            print(json.dumps({"tool": name, "skipped": str(e)}), flush=True)
        except Exception as e:  # report and go on with the other tool
            print(json.dumps({"tool": name, "error": repr(e)}), flush=True)


if __name__ == "__main__":
    main()
