/*
 * A stand-in for the NVIDIA driver library (libcuda.so), for tests on
 * machines without a GPU. It answers the calls benchsuite makes to detect
 * devices -- cuInit, versions, device count, name, memory, attributes, error
 * strings -- with the figures of one H100 SXM5 80GB, and nothing else: any
 * other entry point is absent, as from a broken driver. It runs no GPU code.
 *
 * Environment:
 *   STUB_CUINIT_RC  the result cuInit returns (default 0 = CUDA_SUCCESS).
 */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;

CUresult cuInit(unsigned int flags) {
    const char *rc = getenv("STUB_CUINIT_RC");
    (void)flags;
    return rc ? atoi(rc) : 0;
}

CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = 0;
    return 0;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    (void)d;
    strncpy(name, "NVIDIA H100 80GB HBM3 (benchsuite test stub)", (size_t)len);
    if (len > 0) name[len - 1] = 0;
    return 0;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = (size_t)80 << 30;
    return 0;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d;
    switch (attr) {
    case 13: *v = 1980000; break;   /* CLOCK_RATE, kHz */
    case 16: *v = 132; break;       /* MULTIPROCESSOR_COUNT */
    case 18: *v = 0; break;         /* INTEGRATED */
    case 32: *v = 1; break;         /* ECC_ENABLED */
    case 33: *v = 0x19; break;      /* PCI_BUS_ID */
    case 34: *v = 0; break;         /* PCI_DEVICE_ID */
    case 36: *v = 2619000; break;   /* MEMORY_CLOCK_RATE, kHz */
    case 37: *v = 5120; break;      /* GLOBAL_MEMORY_BUS_WIDTH, bits */
    case 38: *v = 50 << 20; break;  /* L2_CACHE_SIZE */
    case 39: *v = 2048; break;      /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 50: *v = 0; break;         /* PCI_DOMAIN_ID */
    case 75: *v = 9; break;         /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = 0; break;         /* COMPUTE_CAPABILITY_MINOR */
    case 87: *v = 2; break;         /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
    default: *v = 0; break;
    }
    return 0;
}

static const char *name_of(CUresult e) {
    switch (e) {
    case 0: return "CUDA_SUCCESS";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 919: return "CUDA_ERROR_FABRIC_NOT_READY";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return 0;
    }
}

CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = name_of(e);
    return *s ? 0 : 1; /* CUDA_ERROR_INVALID_VALUE */
}

CUresult cuGetErrorString(CUresult e, const char **s) {
    *s = name_of(e) ? "stub error text" : 0;
    return *s ? 0 : 1;
}
