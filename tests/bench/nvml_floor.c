/* The benchmark floor: a libnvidia-ml.so.1 that only enumerates.  It
 * exports the nine entry points nvidia-smi 535 needs to list GPUs and get
 * through plain/-q startup (NVML.md sections 0, 2.3 and 8): InitWithFlags,
 * Shutdown, InternalGetExportTable (a table whose size word is 0, so no
 * slot is ever called), DeviceGetCount_v2, DeviceGetHandleByIndex_v2,
 * DeviceGetName, DeviceGetUUID, EventSetCreate and EventSetFree.
 * Everything else is absent, so nvidia-smi prints "Function Not Found"
 * for it.  The GPU count comes from $NVML_FLOOR_GPUS (default 8).
 *
 * Build: cc -O2 -shared -fPIC -o libnvidia-ml.so.1 nvml_floor.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7

#define MAX_GPUS 64

static unsigned ngpus;
static int inits;
static char dev[MAX_GPUS];		/* handles point into this */
static const unsigned long long table[1] = { 0 };	/* size word 0 */
static char evset;

nvmlReturn_t nvmlInitWithFlags(unsigned flags)
{
	const char *e = getenv("NVML_FLOOR_GPUS");

	ngpus = e ? (unsigned)atoi(e) : 8;
	if (ngpus > MAX_GPUS)
		ngpus = MAX_GPUS;
	inits++;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (inits == 0)
		return NVML_ERROR_UNINITIALIZED;
	inits--;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInternalGetExportTable(const void **table_out, const void *guid)
{
	if (!table_out || !guid)
		return NVML_ERROR_INVALID_ARGUMENT;
	*table_out = table;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = ngpus;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= ngpus || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &dev[index];
	return NVML_SUCCESS;
}

static int index_of(const void *device)
{
	const char *p = device;

	if (p < dev || p >= dev + ngpus)
		return -1;
	return (int)(p - dev);
}

static nvmlReturn_t put(char *buf, unsigned len, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(void *device, char *name, unsigned len)
{
	if (index_of(device) < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	return put(name, len, "NVIDIA Floor GPU");
}

nvmlReturn_t nvmlDeviceGetUUID(void *device, char *uuid, unsigned len)
{
	char s[64];
	int i = index_of(device);

	if (i < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(s, sizeof(s), "GPU-f100f100-0000-0000-0000-%012d", i);
	return put(uuid, len, s);
}

nvmlReturn_t nvmlEventSetCreate(void **set)
{
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	*set = &evset;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(void *set)
{
	return NVML_SUCCESS;
}
