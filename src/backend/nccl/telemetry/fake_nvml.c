/* A stand-in libnvidia-ml with one GPU and known readings, built by the telemetry tests to drive
 * the real loading, FFI and sampler code on machines without a GPU. It follows nvml.h's ABI for
 * the calls collbench makes; anything else is absent (nvml-wrapper reports a missing symbol).
 *
 * Readings: instant power 300 W (field 186), power usage 250 W, SM clock 1500 MHz, 55 C.
 * Counters advance by one "mark" per energy-counter read (one per point start or end):
 * energy 1000 mJ per mark; NVLink link l (4 links) 1000*(l+1) KiB sent and 500*(l+1) KiB
 * received per mark, so one point moves 10000 KiB out and 5000 KiB in, summed over links.
 * Built with -DPER_LINK, the summed read (scope UINT_MAX) is refused, as older drivers do. */

#include <limits.h>
#include <string.h>

enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3 };
enum { U32 = 1, U64 = 3 };
enum { LINKS = 4 };

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    int nvmlReturn;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        long long sllVal;
        int siVal;
        unsigned short usVal;
    } value;
} field_value;

static unsigned long long marks;
static int gpu = 1;

int nvmlInit_v2(void) { return OK; }
int nvmlShutdown(void) { return OK; }

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    if (index != 0) return INVALID_ARGUMENT;
    *device = &gpu;
    return OK;
}

int nvmlDeviceGetIndex(void *device, unsigned int *index) {
    (void)device;
    *index = 0;
    return OK;
}

int nvmlDeviceGetName(void *device, char *name, unsigned int length) {
    (void)device;
    if (length < 16) return INVALID_ARGUMENT;
    strcpy(name, "Fake GPU, rev 1");
    return OK;
}

int nvmlDeviceGetPowerUsage(void *device, unsigned int *mw) {
    (void)device;
    *mw = 250000;
    return OK;
}

int nvmlDeviceGetClockInfo(void *device, int type, unsigned int *mhz) {
    (void)device;
    if (type != 1) return NOT_SUPPORTED; /* NVML_CLOCK_SM */
    *mhz = 1500;
    return OK;
}

int nvmlDeviceGetTemperature(void *device, int sensor, unsigned int *c) {
    (void)device;
    (void)sensor;
    *c = 55;
    return OK;
}

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj) {
    (void)device;
    marks += 1;
    *mj = 1000 * marks;
    return OK;
}

/* KiB moved over link `link` (or all links) by `per_link_per_mark` per link and mark. */
static int nvlink(unsigned int scope, unsigned long long per_mark, field_value *v) {
    unsigned long long weight = 0;
    if (scope == UINT_MAX) {
#ifdef PER_LINK
        return NOT_SUPPORTED;
#endif
        weight = LINKS * (LINKS + 1) / 2;
    } else if (scope < LINKS) {
        weight = scope + 1;
    } else {
        return INVALID_ARGUMENT;
    }
    v->valueType = U64;
    v->value.ullVal = per_mark * weight * marks;
    return OK;
}

static int field(field_value *v) {
    switch (v->fieldId) {
    case 91: /* NVML_FI_DEV_NVLINK_LINK_COUNT */
        v->valueType = U32;
        v->value.uiVal = LINKS;
        return OK;
    case 138: /* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX */
        return nvlink(v->scopeId, 1000, v);
    case 139: /* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX */
        return nvlink(v->scopeId, 500, v);
    case 186: /* NVML_FI_DEV_POWER_INSTANT */
        if (v->scopeId != 0) return INVALID_ARGUMENT;
        v->valueType = U32;
        v->value.uiVal = 300000;
        return OK;
    default:
        return NOT_SUPPORTED;
    }
}

int nvmlDeviceGetFieldValues(void *device, int count, field_value *values) {
    if (device != &gpu || count <= 0) return INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) values[i].nvmlReturn = field(&values[i]);
    return OK;
}
