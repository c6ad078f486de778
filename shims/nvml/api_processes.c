/* Running processes from the profile's processes[] ({pid, type C|G, name,
 * used_memory_mib}); MPS lists are empty.  The same lists feed export
 * table slots 213-215. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "shims/nvml/nvml_types.h"

nvmlReturn_t nvml_process_list(struct mdev *d, char type, unsigned *count,
			       void *entries, size_t stride,
			       void (*fill)(void *entry, unsigned pid,
					    unsigned long long bytes,
					    const char *name))
{
	char key[64];
	const char *t, *name;
	uint32_t pid;
	uint64_t mib;
	size_t total = mdev_len(d, "processes");
	unsigned n = 0, cap;

	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	cap = entries ? *count : 0;
	for (size_t i = 0; i < total; i++) {
		snprintf(key, sizeof(key), "processes[%zu].type", i);
		if (!mdev_str(d, key, &t) || !strchr(t, type))
			continue;
		if (n < cap) {
			snprintf(key, sizeof(key), "processes[%zu].pid", i);
			if (!mdev_u32(d, key, &pid))
				pid = 0;
			snprintf(key, sizeof(key), "processes[%zu].used_memory_mib", i);
			if (!mdev_u64(d, key, &mib))
				mib = 0;
			snprintf(key, sizeof(key), "processes[%zu].name", i);
			if (!mdev_str(d, key, &name))
				name = "";
			fill((char *)entries + (size_t)n * stride, pid, mib << 20, name);
		}
		n++;
	}
	*count = n;
	return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

static void fill_v1(void *entry, unsigned pid, unsigned long long bytes, const char *name)
{
	*(nvmlProcessInfo_v1_t *)entry = (nvmlProcessInfo_v1_t){ pid, bytes };
}

/* Not a MIG device: no GPU or compute instance. */
static void fill_v2(void *entry, unsigned pid, unsigned long long bytes, const char *name)
{
	*(nvmlProcessInfo_t *)entry = (nvmlProcessInfo_t){ pid, bytes, 0xffffffffu, 0xffffffffu };
}

static nvmlReturn_t processes(nvmlDevice_t device, char type, unsigned *count,
			      void *infos, size_t stride,
			      void (*fill)(void *, unsigned, unsigned long long, const char *))
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_process_list(d, type, count, infos, stride, fill);
}

#define PROCESS_GETTERS(base, type) \
	NVML_API(base##_v3, nvmlDevice_t device, unsigned *count, nvmlProcessInfo_t *infos) \
	{ \
		return processes(device, type, count, infos, sizeof(*infos), fill_v2); \
	} \
	NVML_ALIAS(base##_v2, base##_v3); \
	NVML_API(base, nvmlDevice_t device, unsigned *count, nvmlProcessInfo_v1_t *infos) \
	{ \
		return processes(device, type, count, infos, sizeof(*infos), fill_v1); \
	} \
	NVML_ALIAS(base##_v1, base)

PROCESS_GETTERS(nvmlDeviceGetComputeRunningProcesses, 'C');
PROCESS_GETTERS(nvmlDeviceGetGraphicsRunningProcesses, 'G');
PROCESS_GETTERS(nvmlDeviceGetMPSComputeRunningProcesses, 'M');
