/* Device modes (persistence, display, compute, operation, virtualization)
 * and MIG.  MIG is never enabled on the simulated devices: no MIG device
 * handles exist. */
#include "shims/nvml/nvml_types.h"

#define FEATURE_GETTER(fn, key) \
	NVML_API(fn, nvmlDevice_t device, unsigned *state) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		return rc ? rc : nvml_key_feature(d, key, state); \
	}

FEATURE_GETTER(nvmlDeviceGetPersistenceMode, "persistence_mode")
FEATURE_GETTER(nvmlDeviceGetDisplayMode, "display.mode")
FEATURE_GETTER(nvmlDeviceGetDisplayActive, "display.active")

/* An enum-valued key through a name table. */
static nvmlReturn_t enum_key(nvmlDevice_t device, const char *key,
			     const struct nvml_name_value *tab, unsigned *out)
{
	struct mdev *d;
	int v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_enum(d, key, tab, &v)))
		return rc;
	*out = (unsigned)v;
	return NVML_SUCCESS;
}

static const struct nvml_name_value compute_modes[] = {
	{ "default", NVML_COMPUTEMODE_DEFAULT },
	{ "exclusive_thread", NVML_COMPUTEMODE_EXCLUSIVE_THREAD },
	{ "prohibited", NVML_COMPUTEMODE_PROHIBITED },
	{ "exclusive_process", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS },
	{ NULL, 0 }
};

NVML_API(nvmlDeviceGetComputeMode, nvmlDevice_t device, unsigned *mode)
{
	return enum_key(device, "compute_mode", compute_modes, mode);
}

static const struct nvml_name_value operation_modes[] = {
	{ "all_on", NVML_GOM_ALL_ON }, { "compute", NVML_GOM_COMPUTE },
	{ "low_dp", NVML_GOM_LOW_DP }, { NULL, 0 }
};

/* nvidia-smi --query-gpu=gom.current (gom.pending) passes only the one
 * pointer it wants. */
NVML_API(nvmlDeviceGetGpuOperationMode, nvmlDevice_t device, unsigned *current,
	 unsigned *pending)
{
	unsigned c, p;
	nvmlReturn_t rc;

	if (!current && !pending)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = enum_key(device, "gpu_operation_mode.current", operation_modes, &c)))
		return rc;
	if (enum_key(device, "gpu_operation_mode.pending", operation_modes, &p))
		p = c;
	if (current)
		*current = c;
	if (pending)
		*pending = p;
	return NVML_SUCCESS;
}

static const struct nvml_name_value virtualization_modes[] = {
	{ "none", NVML_GPU_VIRTUALIZATION_MODE_NONE },
	{ "passthrough", NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH },
	{ "vgpu", NVML_GPU_VIRTUALIZATION_MODE_VGPU },
	{ "host_vgpu", NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU },
	{ "host_vsga", NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA },
	{ NULL, 0 }
};

/* Bare metal unless the profile says otherwise. */
NVML_API(nvmlDeviceGetVirtualizationMode, nvmlDevice_t device, unsigned *mode)
{
	nvmlReturn_t rc = enum_key(device, "virtualization.mode", virtualization_modes, mode);

	if (rc == NVML_ERROR_NOT_SUPPORTED) {
		*mode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
		rc = NVML_SUCCESS;
	}
	return rc;
}

static const struct nvml_name_value host_vgpu_modes[] = {
	{ "non_sriov", NVML_HOST_VGPU_MODE_NON_SRIOV },
	{ "sriov", NVML_HOST_VGPU_MODE_SRIOV }, { NULL, 0 }
};

NVML_API(nvmlDeviceGetHostVgpuMode, nvmlDevice_t device, unsigned *mode)
{
	return enum_key(device, "virtualization.host_vgpu_mode", host_vgpu_modes, mode);
}

/* ---- MIG --------------------------------------------------------------- */

/* MIG-capable: the profile carries a mig block with instances to offer. */
static nvmlReturn_t mig_device(nvmlDevice_t device, struct mdev **d)
{
	uint32_t max = 0;
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	if (!mdev_u32(*d, "mig.max_gpu_instances", &max) || max == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetMigMode, nvmlDevice_t device, unsigned *current, unsigned *pending)
{
	struct mdev *d;
	unsigned cur;
	nvmlReturn_t rc = mig_device(device, &d);

	if (rc)
		return rc;
	if (!current || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_feature(d, "mig.mode_current", &cur)))
		return rc;
	if (nvml_key_feature(d, "mig.mode_pending", pending))
		*pending = cur;
	*current = cur;
	return NVML_SUCCESS;
}

/* NVML answers 0 while MIG is disabled. */
NVML_API(nvmlDeviceGetMaxMigDeviceCount, nvmlDevice_t device, unsigned *count)
{
	struct mdev *d;
	unsigned on = 0;
	uint32_t max = 0;
	nvmlReturn_t rc = mig_device(device, &d);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvml_key_feature(d, "mig.mode_current", &on);
	mdev_u32(d, "mig.max_gpu_instances", &max);
	*count = on ? max : 0;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetMigDeviceHandleByIndex, nvmlDevice_t device, unsigned index,
	 nvmlDevice_t *mig)
{
	struct mdev *d;
	nvmlReturn_t rc = mig_device(device, &d);

	if (rc)
		return rc;
	return mig ? NVML_ERROR_NOT_FOUND : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_API(nvmlDeviceIsMigDeviceHandle, nvmlDevice_t device, unsigned *is_mig)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!is_mig)
		return NVML_ERROR_INVALID_ARGUMENT;
	*is_mig = 0;
	return NVML_SUCCESS;
}

/* Every valid handle is a full GPU, never a MIG device. */
NVML_API(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, nvmlDevice_t mig,
	 nvmlDevice_t *device)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(mig, &d);

	return rc ? rc : NVML_ERROR_INVALID_ARGUMENT;
}

#define NOT_A_MIG_DEVICE(fn) \
	NVML_API(fn, nvmlDevice_t device, unsigned *id) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		if (rc) \
			return rc; \
		return id ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT; \
	}

NOT_A_MIG_DEVICE(nvmlDeviceGetGpuInstanceId)
NOT_A_MIG_DEVICE(nvmlDeviceGetComputeInstanceId)
