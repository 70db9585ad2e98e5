/* A stand-in for libnvidia-ml.so.1 (NVML) for tests on machines without a
   GPU: one device whose SM clock reads 1980 MHz on the first sample and
   1395 MHz after (the H200 under a bf16 GEMM), memory clock 2619 MHz,
   689 W, 61 °C, and the clock-event reasons in STUB_NVML_REASONS (a C
   integer, e.g. 0x4 for the software power cap; 0 when unset). NVLink
   queries answer "not supported". */
#include <stdlib.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3

static int the_device;
static int inits;
static int sm_reads;

nvmlReturn_t nvmlInit_v2(void) { inits++; return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { inits--; return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **device) {
    if (!bus || !device) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &the_device;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(void *device, int type, unsigned *clock) {
    if (device != &the_device || !clock) return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
    case 1: *clock = sm_reads++ == 0 ? 1980 : 1395; return NVML_SUCCESS;
    case 2: *clock = 2619; return NVML_SUCCESS;
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *device, unsigned *mw) {
    if (device != &the_device || !mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = 689000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *device, int sensor, unsigned *c) {
    if (device != &the_device || sensor != 0 || !c) return NVML_ERROR_INVALID_ARGUMENT;
    *c = 61;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *device, unsigned long long *r) {
    if (device != &the_device || !r) return NVML_ERROR_INVALID_ARGUMENT;
    const char *e = getenv("STUB_NVML_REASONS");
    *r = e ? strtoull(e, NULL, 0) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(void *device, unsigned link, int *on) {
    (void)device; (void)link; (void)on;
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(void *device, unsigned link, unsigned *v) {
    (void)device; (void)link; (void)v;
    return NVML_ERROR_NOT_SUPPORTED;
}
