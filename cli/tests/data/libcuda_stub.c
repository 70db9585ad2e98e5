/*
 * A stand-in for the NVIDIA driver library (libcuda.so), for tests on
 * machines without a GPU. It runs no GPU code: it answers the detection
 * calls with the figures of one H100 SXM5 80GB and emulates, in host
 * memory, the driver calls benchsuite's copy paths make (context, streams,
 * device and pinned memory, asynchronous copies, timing events), so the
 * host side of gpu.bandwidth and gpu.latency runs end to end.
 *
 * The model:
 *   - "device memory" is host memory (aligned_alloc, 256-byte aligned as
 *     cuMemAlloc's); a CUdeviceptr is the host address. Every live
 *     allocation is in a table, and every copy's device range must lie
 *     inside one device allocation (else CUDA_ERROR_INVALID_VALUE, which a
 *     real driver may report as CUDA_ERROR_ILLEGAL_ADDRESS later: here an
 *     out-of-bounds copy fails at once, which is what a test wants).
 *   - pinned host memory (cuMemHostAlloc) is host memory too, kept in the
 *     same table with its kind, so cuMemFree on it (or cuMemFreeHost on
 *     device memory, or a double free) is CUDA_ERROR_INVALID_VALUE.
 *   - copies are synchronous memcpy: an "asynchronous" copy has completed
 *     when it returns, so stream/event/context synchronisation only checks
 *     its handle.
 *   - streams and events are heap handles in a table of live handles; a
 *     destroyed or unknown one is CUDA_ERROR_INVALID_HANDLE. The legacy
 *     (NULL, 0x1) and per-thread (0x2) default streams are accepted.
 *   - events record clock_gettime(CLOCK_MONOTONIC) at cuEventRecord;
 *     cuEventElapsedTime returns end - start in ms, and, as the real
 *     driver, CUDA_ERROR_INVALID_HANDLE when either event was never
 *     recorded or was created with CU_EVENT_DISABLE_TIMING.
 *   - one primary context (a static object), retained/released with a
 *     reference count; the current context is per thread, as the driver's.
 *     Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT when
 *     the calling thread has none, and every call except cuInit,
 *     cuDriverGetVersion and the error strings fails with
 *     CUDA_ERROR_NOT_INITIALIZED before a successful cuInit.
 *   - device memory: 80 GiB total; cuMemGetInfo's free is that less a
 *     512 MiB context reserve and the live device allocations.
 *
 * Absent on purpose (the kernel paths, which need NVRTC anyway): module
 * loading (cuModuleLoadData), kernels (cuLaunchKernel), occupancy queries.
 * A caller reaching one gets cudarc's "Missing symbol" panic.
 *
 * Environment:
 *   STUB_CUINIT_RC     the result cuInit returns (default 0 = CUDA_SUCCESS);
 *                      any other value leaves the driver uninitialised.
 *   STUB_CORRUPT_COPY  1: cuMemcpyDtoD(Async) writes the complement of the
 *                      last byte instead of the byte (a broken copy, which
 *                      the benchmarks' destination check must catch).
 *   STUB_FAIL          NAME or NAME:N: the Nth call (default the first) of
 *                      the emulated entry point NAME (e.g. cuMemFree_v2)
 *                      returns CUDA_ERROR_UNKNOWN (999) and does nothing,
 *                      to test each error path of the caller.
 *   STUB_REPORT        a file to which, when the process exits, the stub
 *                      writes what is still live, one `name=count` a line:
 *                      device_allocations, pinned_allocations, streams,
 *                      events, primary_context_refs, and errors (the calls
 *                      that returned an error other than the ones asked for
 *                      by STUB_CUINIT_RC), to check that every case frees
 *                      what it took.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;

enum {
    OK = 0,
    INVALID_VALUE = 1,       /* CUDA_ERROR_INVALID_VALUE */
    OUT_OF_MEMORY = 2,       /* CUDA_ERROR_OUT_OF_MEMORY */
    NOT_INITIALIZED = 3,     /* CUDA_ERROR_NOT_INITIALIZED */
    INVALID_DEVICE = 101,    /* CUDA_ERROR_INVALID_DEVICE */
    INVALID_CONTEXT = 201,   /* CUDA_ERROR_INVALID_CONTEXT */
    INVALID_HANDLE = 400,    /* CUDA_ERROR_INVALID_HANDLE */
    NOT_READY = 600,         /* CUDA_ERROR_NOT_READY */
};

#define TOTAL_MEM ((size_t)80 << 30)
#define CTX_RESERVE ((size_t)512 << 20)

/* ---- global state, under one spin lock ---------------------------------- */

static volatile char lock_flag;
static void lock(void) { while (__atomic_test_and_set(&lock_flag, __ATOMIC_ACQUIRE)) {} }
static void unlock(void) { __atomic_clear(&lock_flag, __ATOMIC_RELEASE); }

static int initialised;                 /* a cuInit returned CUDA_SUCCESS */
static int primary_refs;                /* cuDevicePrimaryCtxRetain count */
static struct { int device; } primary;  /* the one primary context */
static __thread CUcontext current;      /* the thread's current context */

#define NOT_INIT_GUARD() do { if (!initialised) return fail(NOT_INITIALIZED); } while (0)
#define CTX_GUARD()                                                            \
    do {                                                                       \
        if (!initialised) return fail(NOT_INITIALIZED);                             \
        if (current != (CUcontext)&primary || primary_refs <= 0)              \
            return fail(INVALID_CONTEXT);                                            \
    } while (0)

/* Live allocations: device memory and pinned host memory. */
enum kind { DEVICE = 1, PINNED = 2 };
struct alloc { uintptr_t base; size_t bytes; int kind; };
static struct alloc *allocs;
static size_t n_allocs, cap_allocs;
static size_t device_in_use;

static int add_alloc(uintptr_t base, size_t bytes, int kind) {
    if (n_allocs == cap_allocs) {
        size_t cap = cap_allocs ? 2 * cap_allocs : 64;
        struct alloc *a = realloc(allocs, cap * sizeof *a);
        if (!a) return 0;
        allocs = a;
        cap_allocs = cap;
    }
    allocs[n_allocs++] = (struct alloc){base, bytes, kind};
    if (kind == DEVICE) device_in_use += bytes;
    return 1;
}

/* Removes the allocation starting exactly at `base` of `kind`; 0 if none. */
static int remove_alloc(uintptr_t base, int kind) {
    for (size_t i = 0; i < n_allocs; i++) {
        if (allocs[i].base == base && allocs[i].kind == kind) {
            if (kind == DEVICE) device_in_use -= allocs[i].bytes;
            allocs[i] = allocs[--n_allocs];
            return 1;
        }
    }
    return 0;
}

/* Whether [p, p + n) lies inside one live device allocation. */
static int device_range_ok(CUdeviceptr p, size_t n) {
    for (size_t i = 0; i < n_allocs; i++) {
        const struct alloc *a = &allocs[i];
        if (a->kind == DEVICE && p >= a->base && p - a->base <= a->bytes &&
            n <= a->bytes - (size_t)(p - a->base))
            return 1;
    }
    return 0;
}

/* Live stream and event handles. */
#define MAX_HANDLES 4096
struct event { unsigned flags; int recorded; struct timespec at; };
static void *streams[MAX_HANDLES];
static struct event *events[MAX_HANDLES];

static int stream_ok(CUstream s) {
    if (s == 0 || s == (CUstream)0x1 || s == (CUstream)0x2) return 1; /* defaults */
    for (int i = 0; i < MAX_HANDLES; i++)
        if (streams[i] == s) return 1;
    return 0;
}

static int event_ok(CUevent e) {
    if (!e) return 0;
    for (int i = 0; i < MAX_HANDLES; i++)
        if (events[i] == e) return 1;
    return 0;
}

/* Calls that failed (a precondition the caller broke), for STUB_REPORT. */
static int errors;
static CUresult fail(CUresult r) {
    __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
    return r;
}

/* STUB_FAIL: whether this call of `fn` is the one to fail. */
static int injected(const char *fn) {
    static int calls;
    const char *spec = getenv("STUB_FAIL");
    if (!spec) return 0;
    size_t len = strcspn(spec, ":");
    if (strlen(fn) != len || strncmp(spec, fn, len) != 0) return 0;
    int nth = spec[len] == ':' ? atoi(spec + len + 1) : 1;
    return __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) == nth;
}
#define INJECT() do { if (injected(__func__)) return 999; } while (0)

/* STUB_REPORT: what is left when the process exits. */
__attribute__((destructor)) static void report(void) {
    const char *path = getenv("STUB_REPORT");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    size_t dev = 0, pinned = 0, s = 0, e = 0;
    lock();
    for (size_t i = 0; i < n_allocs; i++) {
        if (allocs[i].kind == DEVICE) dev++;
        else pinned++;
    }
    for (int i = 0; i < MAX_HANDLES; i++) {
        s += streams[i] != 0;
        e += events[i] != 0;
    }
    unlock();
    fprintf(f, "device_allocations=%zu\npinned_allocations=%zu\nstreams=%zu\nevents=%zu\n"
               "primary_context_refs=%d\nerrors=%d\n",
            dev, pinned, s, e, primary_refs, errors);
    fclose(f);
}

/* ---- initialisation, versions, devices ----------------------------------- */

/* cuInit: STUB_CUINIT_RC or success; only success initialises. */
CUresult cuInit(unsigned int flags) {
    const char *rc = getenv("STUB_CUINIT_RC");
    int r = rc ? atoi(rc) : 0;
    (void)flags;
    if (r == 0) initialised = 1;
    return r;
}

/* cuDriverGetVersion: CUDA 12.8 (works before cuInit, as documented). */
CUresult cuDriverGetVersion(int *v) {
    if (!v) return fail(INVALID_VALUE);
    *v = 12080;
    return OK;
}

/* cuDeviceGetCount: one device. */
CUresult cuDeviceGetCount(int *n) {
    NOT_INIT_GUARD();
    if (!n) return fail(INVALID_VALUE);
    *n = 1;
    return OK;
}

/* cuDeviceGet: ordinal 0 only. */
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    NOT_INIT_GUARD();
    if (!d) return fail(INVALID_VALUE);
    if (ordinal != 0) return fail(INVALID_DEVICE);
    *d = 0;
    return OK;
}

/* cuDeviceGetName: the H100's name, marked as this stub. */
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    NOT_INIT_GUARD();
    if (d != 0) return fail(INVALID_DEVICE);
    if (!name || len <= 0) return fail(INVALID_VALUE);
    strncpy(name, "NVIDIA H100 80GB HBM3 (benchsuite test stub)", (size_t)len);
    name[len - 1] = 0;
    return OK;
}

/* cuDeviceTotalMem_v2: 80 GiB. */
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    NOT_INIT_GUARD();
    if (d != 0) return fail(INVALID_DEVICE);
    if (!bytes) return fail(INVALID_VALUE);
    *bytes = TOTAL_MEM;
    return OK;
}

/* cuDeviceGetAttribute: an H100 SXM5's figures; 0 for the rest. */
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    NOT_INIT_GUARD();
    if (d != 0) return fail(INVALID_DEVICE);
    if (!v) return fail(INVALID_VALUE);
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
    default: *v = 0; break;         /* incl. 115 MEMORY_POOLS_SUPPORTED: no
                                       cuMemAllocAsync for cudarc */
    }
    return OK;
}

/* ---- the primary context -------------------------------------------------- */

/* cuDevicePrimaryCtxRetain: the static context, reference counted. */
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
    NOT_INIT_GUARD();
    INJECT();
    if (!pctx) return fail(INVALID_VALUE);
    if (d != 0) return fail(INVALID_DEVICE);
    lock();
    primary_refs++;
    unlock();
    *pctx = (CUcontext)&primary;
    return OK;
}

/* cuDevicePrimaryCtxRelease_v2: one retain less; more releases than
 * retains is CUDA_ERROR_INVALID_CONTEXT. */
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    CUresult r = OK;
    NOT_INIT_GUARD();
    INJECT();
    if (d != 0) return fail(INVALID_DEVICE);
    lock();
    if (primary_refs <= 0) r = fail(INVALID_CONTEXT);
    else primary_refs--;
    unlock();
    return r;
}

/* cuCtxGetCurrent: the thread's current context (NULL for none). */
CUresult cuCtxGetCurrent(CUcontext *pctx) {
    NOT_INIT_GUARD();
    INJECT();
    if (!pctx) return fail(INVALID_VALUE);
    *pctx = current;
    return OK;
}

/* cuCtxSetCurrent: NULL unbinds; anything but the primary context (retained)
 * is CUDA_ERROR_INVALID_CONTEXT. */
CUresult cuCtxSetCurrent(CUcontext ctx) {
    NOT_INIT_GUARD();
    INJECT();
    if (ctx && (ctx != (CUcontext)&primary || primary_refs <= 0)) return fail(INVALID_CONTEXT);
    current = ctx;
    return OK;
}

/* cuCtxGetDevice: device 0, with a current context. */
CUresult cuCtxGetDevice(CUdevice *d) {
    CTX_GUARD();
    INJECT();
    if (!d) return fail(INVALID_VALUE);
    *d = primary.device;
    return OK;
}

/* cuCtxSynchronize: all work is already done; needs a current context. */
CUresult cuCtxSynchronize(void) {
    CTX_GUARD();
    INJECT();
    return OK;
}

/* cuMemGetInfo_v2: free = 80 GiB - 512 MiB context reserve - live device
 * allocations; total = 80 GiB. */
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    CTX_GUARD();
    INJECT();
    if (!free_bytes || !total) return fail(INVALID_VALUE);
    lock();
    size_t used = CTX_RESERVE + device_in_use;
    unlock();
    *free_bytes = used < TOTAL_MEM ? TOTAL_MEM - used : 0;
    *total = TOTAL_MEM;
    return OK;
}

/* ---- streams --------------------------------------------------------------- */

/* cuStreamCreate: a live handle (flags ignored: every copy is synchronous). */
CUresult cuStreamCreate(CUstream *ps, unsigned int flags) {
    CTX_GUARD();
    INJECT();
    (void)flags;
    if (!ps) return fail(INVALID_VALUE);
    void *s = malloc(1);
    if (!s) return fail(OUT_OF_MEMORY);
    lock();
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (!streams[i]) {
            streams[i] = s;
            unlock();
            *ps = s;
            return OK;
        }
    }
    unlock();
    free(s);
    return fail(OUT_OF_MEMORY);
}

/* cuStreamDestroy_v2: an unknown handle or a default stream is
 * CUDA_ERROR_INVALID_HANDLE. */
CUresult cuStreamDestroy_v2(CUstream s) {
    NOT_INIT_GUARD();
    INJECT();
    lock();
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (s && streams[i] == s) {
            streams[i] = 0;
            unlock();
            free(s);
            return OK;
        }
    }
    unlock();
    return fail(INVALID_HANDLE);
}

/* cuStreamSynchronize: nothing is ever pending; checks the handle. */
CUresult cuStreamSynchronize(CUstream s) {
    NOT_INIT_GUARD();
    INJECT();
    lock();
    int ok = stream_ok(s);
    unlock();
    return ok ? OK : fail(INVALID_HANDLE);
}

/* ---- memory ------------------------------------------------------------------ */

static void *aligned(size_t bytes) {
    size_t rounded = (bytes + 255) & ~(size_t)255;
    return rounded < bytes ? 0 : aligned_alloc(256, rounded);
}

/* cuMemAlloc_v2: 256-byte aligned host memory, uninitialised; 0 bytes is
 * CUDA_ERROR_INVALID_VALUE, more than is free CUDA_ERROR_OUT_OF_MEMORY. */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
    CTX_GUARD();
    INJECT();
    if (!dptr || bytes == 0) return fail(INVALID_VALUE);
    lock();
    int fits = CTX_RESERVE + device_in_use + bytes <= TOTAL_MEM;
    unlock();
    if (!fits) return fail(OUT_OF_MEMORY);
    void *p = aligned(bytes);
    if (!p) return fail(OUT_OF_MEMORY);
    lock();
    int ok = add_alloc((uintptr_t)p, bytes, DEVICE);
    unlock();
    if (!ok) { free(p); return fail(OUT_OF_MEMORY); }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return OK;
}

/* cuMemFree_v2: only the start of a live device allocation, else
 * CUDA_ERROR_INVALID_VALUE (an unknown pointer, pinned memory, a double
 * free). */
CUresult cuMemFree_v2(CUdeviceptr p) {
    CTX_GUARD();
    INJECT();
    lock();
    int ok = remove_alloc((uintptr_t)p, DEVICE);
    unlock();
    if (!ok) return fail(INVALID_VALUE);
    free((void *)(uintptr_t)p);
    return OK;
}

/* cuMemHostAlloc: page-aligned host memory ("pinned"); flags ignored. */
CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
    CTX_GUARD();
    INJECT();
    (void)flags;
    if (!pp || bytes == 0) return fail(INVALID_VALUE);
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    void *p = rounded < bytes ? 0 : aligned_alloc(4096, rounded);
    if (!p) return fail(OUT_OF_MEMORY);
    lock();
    int ok = add_alloc((uintptr_t)p, bytes, PINNED);
    unlock();
    if (!ok) { free(p); return fail(OUT_OF_MEMORY); }
    *pp = p;
    return OK;
}

/* cuMemFreeHost: only memory from cuMemHostAlloc, else
 * CUDA_ERROR_INVALID_VALUE. */
CUresult cuMemFreeHost(void *p) {
    CTX_GUARD();
    INJECT();
    lock();
    int ok = remove_alloc((uintptr_t)p, PINNED);
    unlock();
    if (!ok) return fail(INVALID_VALUE);
    free(p);
    return OK;
}

/* The copies check the stream, that the device side lies inside a live
 * device allocation and that host pointers are not NULL (for a nonzero
 * count), then memcpy: done when they return. Needs a current context. */
static CUresult copy(void *dst, const void *src, size_t n, CUstream s,
                     CUdeviceptr dev_a, CUdeviceptr dev_b, int devs) {
    CTX_GUARD();
    lock();
    int ok = stream_ok(s) ? 1 : -1;
    if (ok > 0 && n > 0) {
        if ((devs >= 1 && !device_range_ok(dev_a, n)) ||
            (devs >= 2 && !device_range_ok(dev_b, n)) || !dst || !src)
            ok = 0;
    }
    unlock();
    if (ok < 0) return fail(INVALID_HANDLE);
    if (!ok) return fail(INVALID_VALUE);
    if (n) memmove(dst, src, n);
    return OK;
}

/* cuMemcpyHtoDAsync_v2: host -> device range. */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    INJECT();
    return copy((void *)(uintptr_t)dst, src, n, s, dst, 0, 1);
}

/* cuMemcpyDtoHAsync_v2: device range -> host. */
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    INJECT();
    return copy(dst, (const void *)(uintptr_t)src, n, s, src, 0, 1);
}

/* cuMemcpyDtoDAsync_v2: device range -> device range; STUB_CORRUPT_COPY=1
 * complements the last byte written. */
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    INJECT();
    CUresult r = copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, dst, src, 2);
    const char *corrupt = getenv("STUB_CORRUPT_COPY");
    if (r == OK && n > 0 && corrupt && atoi(corrupt) == 1) {
        unsigned char *d = (unsigned char *)(uintptr_t)dst;
        d[n - 1] = (unsigned char)~d[n - 1];
    }
    return r;
}

/* ---- events ------------------------------------------------------------------ */

/* cuEventCreate: a live, unrecorded event; needs a current context. */
CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
    CTX_GUARD();
    INJECT();
    if (!pe) return fail(INVALID_VALUE);
    struct event *e = calloc(1, sizeof *e);
    if (!e) return fail(OUT_OF_MEMORY);
    e->flags = flags;
    lock();
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (!events[i]) {
            events[i] = e;
            unlock();
            *pe = e;
            return OK;
        }
    }
    unlock();
    free(e);
    return fail(OUT_OF_MEMORY);
}

/* cuEventDestroy_v2: an unknown handle is CUDA_ERROR_INVALID_HANDLE. */
CUresult cuEventDestroy_v2(CUevent ev) {
    NOT_INIT_GUARD();
    INJECT();
    lock();
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (ev && events[i] == ev) {
            events[i] = 0;
            unlock();
            free(ev);
            return OK;
        }
    }
    unlock();
    return fail(INVALID_HANDLE);
}

/* cuEventRecord: the monotonic clock now (all earlier work on the stream
 * is done, so the event completes at once). */
CUresult cuEventRecord(CUevent ev, CUstream s) {
    NOT_INIT_GUARD();
    INJECT();
    lock();
    int ok = event_ok(ev) && stream_ok(s);
    if (ok) {
        struct event *e = ev;
        clock_gettime(CLOCK_MONOTONIC, &e->at);
        e->recorded = 1;
    }
    unlock();
    return ok ? OK : fail(INVALID_HANDLE);
}

/* cuEventSynchronize / cuEventQuery: complete (an unrecorded event counts
 * as complete, as documented); checks the handle. */
CUresult cuEventSynchronize(CUevent ev) {
    NOT_INIT_GUARD();
    INJECT();
    lock();
    int ok = event_ok(ev);
    unlock();
    return ok ? OK : fail(INVALID_HANDLE);
}

CUresult cuEventQuery(CUevent ev) { return cuEventSynchronize(ev); }

/* cuEventElapsedTime: end - start in ms. CUDA_ERROR_INVALID_HANDLE for an
 * unknown event, one never recorded, or one created with
 * CU_EVENT_DISABLE_TIMING (2), as the driver documents. (Its
 * CUDA_ERROR_NOT_READY, for a recorded event whose work is still running,
 * cannot happen here: work is done when queued.) */
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    NOT_INIT_GUARD();
    INJECT();
    if (!ms) return fail(INVALID_VALUE);
    lock();
    int ok = event_ok(start) && event_ok(end);
    struct event *a = start, *b = end;
    if (ok && (!a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2))) ok = 0;
    double d = 0;
    if (ok)
        d = (double)(b->at.tv_sec - a->at.tv_sec) * 1e3 +
            (double)(b->at.tv_nsec - a->at.tv_nsec) / 1e6;
    unlock();
    if (!ok) return fail(INVALID_HANDLE);
    *ms = (float)d;
    return OK;
}

CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
    return cuEventElapsedTime(ms, start, end);
}

/* ---- error strings ------------------------------------------------------------ */

static const char *name_of(CUresult e, const char **text) {
    switch (e) {
    case 0: *text = "no error"; return "CUDA_SUCCESS";
    case 1: *text = "invalid argument"; return "CUDA_ERROR_INVALID_VALUE";
    case 2: *text = "out of memory"; return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: *text = "initialization error"; return "CUDA_ERROR_NOT_INITIALIZED";
    case 100: *text = "no CUDA-capable device is detected"; return "CUDA_ERROR_NO_DEVICE";
    case 101: *text = "invalid device ordinal"; return "CUDA_ERROR_INVALID_DEVICE";
    case 201: *text = "invalid device context"; return "CUDA_ERROR_INVALID_CONTEXT";
    case 400: *text = "invalid resource handle"; return "CUDA_ERROR_INVALID_HANDLE";
    case 600: *text = "device not ready"; return "CUDA_ERROR_NOT_READY";
    case 919: *text = "stub error text"; return "CUDA_ERROR_FABRIC_NOT_READY";
    case 999: *text = "unknown error"; return "CUDA_ERROR_UNKNOWN";
    default: *text = 0; return 0;
    }
}

/* cuGetErrorName / cuGetErrorString: the codes this stub returns and those
 * the tests inject; an unknown code is CUDA_ERROR_INVALID_VALUE. */
CUresult cuGetErrorName(CUresult e, const char **s) {
    const char *text;
    if (!s) return INVALID_VALUE;
    *s = name_of(e, &text);
    return *s ? OK : INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
    if (!s) return INVALID_VALUE;
    name_of(e, s);
    return *s ? OK : INVALID_VALUE;
}
