/* Device enumeration: counts, handle lookups, index and minor number. */
#include <string.h>

#include "shims/nvml/nvml_types.h"

NVML_API(nvmlDeviceGetCount_v2, unsigned *count)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = engine_device_count();
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetCount, nvmlDeviceGetCount_v2);
NVML_ALIAS(nvmlDeviceGetCount_v1, nvmlDeviceGetCount_v2);

/* A found device goes out only while it is not lost (NVML.md §6). */
static nvmlReturn_t hand_out(struct mdev *d, nvmlDevice_t *device,
			     nvmlReturn_t missing)
{
	nvmlReturn_t rc;

	if (!d)
		return missing;
	rc = mdev_lost(d);
	if (rc == NVML_SUCCESS)
		*device = d;
	return rc;
}

NVML_API(nvmlDeviceGetHandleByIndex_v2, unsigned index, nvmlDevice_t *device)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!device)
		return NVML_ERROR_INVALID_ARGUMENT;
	return hand_out(engine_device(index), device, NVML_ERROR_INVALID_ARGUMENT);
}
NVML_ALIAS(nvmlDeviceGetHandleByIndex, nvmlDeviceGetHandleByIndex_v2);
NVML_ALIAS(nvmlDeviceGetHandleByIndex_v1, nvmlDeviceGetHandleByIndex_v2);

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned index,
					       nvmlDevice_t *mig);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned length);

/* A MIG device's UUID names its handle too (drivers since R470; the device
 * plugin's health check finds a MIG device's GPU and instances this way):
 * the MIG devices this process can see, GPU by GPU. */
static nvmlReturn_t mig_by_uuid(const char *uuid, nvmlDevice_t *device)
{
	unsigned n = engine_device_count();
	char u[96];

	if (strncmp(uuid, "MIG-", 4) != 0)
		return NVML_ERROR_NOT_FOUND;
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t gpu, mig;

		if (nvmlDeviceGetHandleByIndex_v2(i, &gpu) != NVML_SUCCESS)
			continue;
		for (unsigned k = 0; nvmlDeviceGetMigDeviceHandleByIndex(gpu, k, &mig) == NVML_SUCCESS; k++) {
			if (nvmlDeviceGetUUID(mig, u, sizeof(u)) == NVML_SUCCESS && !strcmp(u, uuid)) {
				*device = mig;
				return NVML_SUCCESS;
			}
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

NVML_API(nvmlDeviceGetHandleByUUID, const char *uuid, nvmlDevice_t *device)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = hand_out(engine_device_by_uuid(uuid), device, NVML_ERROR_NOT_FOUND);
	return rc == NVML_ERROR_NOT_FOUND ? mig_by_uuid(uuid, device) : rc;
}

NVML_API(nvmlDeviceGetHandleByPciBusId_v2, const char *bus_id, nvmlDevice_t *device)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!bus_id || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	return hand_out(engine_device_by_bus_id(bus_id), device, NVML_ERROR_NOT_FOUND);
}
NVML_ALIAS(nvmlDeviceGetHandleByPciBusId, nvmlDeviceGetHandleByPciBusId_v2);
NVML_ALIAS(nvmlDeviceGetHandleByPciBusId_v1, nvmlDeviceGetHandleByPciBusId_v2);

NVML_API(nvmlDeviceGetHandleBySerial, const char *serial, nvmlDevice_t *device)
{
	const char *s;
	struct mdev *found = NULL;
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!serial || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < engine_device_count(); i++) {
		struct mdev *d = engine_device(i);

		if (!d || !mdev_str(d, "serial", &s) || strcmp(s, serial))
			continue;
		if (found)	/* a multi-GPU board: NVML refuses to pick one */
			return NVML_ERROR_INVALID_ARGUMENT;
		found = d;
	}
	return hand_out(found, device, NVML_ERROR_NOT_FOUND);
}

NVML_API(nvmlDeviceGetIndex, nvmlDevice_t device, unsigned *index)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = mdev_index(d);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetMinorNumber, nvmlDevice_t device, unsigned *minor)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = mdev_minor(d);
	return NVML_SUCCESS;
}

/* Two GPUs share a board when it is a multi-GPU board and the board serial
 * matches (GB200 superchips carry one serial for both GPUs). */
NVML_API(nvmlDeviceOnSameBoard, nvmlDevice_t device1, nvmlDevice_t device2,
	 int *on_same_board)
{
	struct mdev *a, *b;
	const char *sa, *sb;
	nvmlReturn_t rc = nvml_dev(device1, &a);

	if (rc || (rc = nvml_dev(device2, &b)))
		return rc;
	if (!on_same_board)
		return NVML_ERROR_INVALID_ARGUMENT;
	*on_same_board = a == b || (mdev_str(a, "serial", &sa) &&
				    mdev_str(b, "serial", &sb) && !strcmp(sa, sb));
	return NVML_SUCCESS;
}

NVML_API(nvmlGetExcludedDeviceCount, unsigned *count)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

NVML_API(nvmlGetExcludedDeviceInfoByIndex, unsigned index, void *info)
{
	nvmlReturn_t rc = nvml_ready();

	return rc ? rc : NVML_ERROR_INVALID_ARGUMENT;	/* there are none */
}

/* The names before NVML 11 (go-nvml still looks them up). */
NVML_ALIAS(nvmlGetBlacklistDeviceCount, nvmlGetExcludedDeviceCount);
NVML_ALIAS(nvmlGetBlacklistDeviceInfoByIndex, nvmlGetExcludedDeviceInfoByIndex);
