/* MIG device handles: one per compute instance, enumerated per GPU in
 * (GPU instance id, compute instance id) order; their parent, ids and
 * attributes.  The handle is an engine device, so the identity and memory
 * getters answer for it (name "<board> MIG <profile>", MIG- UUID, the
 * instance's memory). */
#include <stdio.h>
#include <unistd.h>

#include "shims/nvml/api_mig.h"

/* MIG on: max_gpu_instances (what NVML answers); off: 0. */
NVML_API(nvmlDeviceGetMaxMigDeviceCount, nvmlDevice_t device, unsigned *count)
{
	const struct mig_board *b;
	struct ds_gpu g;
	struct mdev *d;
	uint32_t max = 0;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

	if (rc || (rc = mdev_state_get(d, &g)))
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	mdev_u32(d, "mig.max_gpu_instances", &max);
	*count = mig_enabled(d, &g) ? max : 0;
	return NVML_SUCCESS;
}

/* As the driver's access checks make it: where /dev/nvidia-caps exists (a
 * container given some MIG devices), a MIG device is visible only with its
 * compute instance's access node there; elsewhere (the node) all are. */
static bool visible(struct mdev *d, unsigned gi, unsigned ci)
{
	char path[64];
	unsigned minor = mdev_minor(d);

	if (minor >= DS_CAPS_GPUS || access("/dev/nvidia-caps", F_OK) != 0)
		return true;
	snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%u", ds_ci_minor(minor, gi, ci));
	return access(path, F_OK) == 0;
}

NVML_API(nvmlDeviceGetMigDeviceHandleByIndex, nvmlDevice_t device, unsigned index,
	 nvmlDevice_t *mig)
{
	const struct mig_board *b;
	struct ds_gpu g;
	struct mdev *d;
	unsigned n = 0;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

	if (rc || (rc = mdev_state_get(d, &g)))
		return rc;
	if (!mig)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_enabled(d, &g))
		return NVML_ERROR_NOT_SUPPORTED;
	for (unsigned i = 0; i < g.ngi; i++) {
		for (unsigned j = 0; j < g.gi[i].nci; j++) {
			if (!visible(d, g.gi[i].id, g.gi[i].ci[j].id) || n++ != index)
				continue;
			*mig = mdev_mig_device(d, g.gi[i].id, g.gi[i].ci[j].id);
			return *mig ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

NVML_API(nvmlDeviceIsMigDeviceHandle, nvmlDevice_t device, unsigned *is_mig)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!is_mig)
		return NVML_ERROR_INVALID_ARGUMENT;
	*is_mig = mdev_is_mig(d);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, nvmlDevice_t mig,
	 nvmlDevice_t *device)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(mig, &d);

	if (rc)
		return rc;
	if (!device || !mdev_is_mig(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = mdev_parent(d);
	return NVML_SUCCESS;
}

#define MIG_ID_GETTER(fn, getter) \
	NVML_API(fn, nvmlDevice_t device, unsigned *id) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		if (rc) \
			return rc; \
		if (!id) \
			return NVML_ERROR_INVALID_ARGUMENT; \
		if (!mdev_is_mig(d)) \
			return NVML_ERROR_NOT_SUPPORTED; \
		*id = getter(d); \
		return NVML_SUCCESS; \
	}

MIG_ID_GETTER(nvmlDeviceGetGpuInstanceId, mdev_gi_id)
MIG_ID_GETTER(nvmlDeviceGetComputeInstanceId, mdev_ci_id)

/* The full GPU's attributes are its whole MIG geometry (7 slices); a MIG
 * device's are its GPU and compute instance's. */
NVML_API(nvmlDeviceGetAttributes_v2, nvmlDevice_t device, nvmlDeviceAttributes_t *a)
{
	const struct mig_gip *p;
	const struct mig_board *b;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct ds_ci *ci;
	struct mig_cip c;
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!a)
		return NVML_ERROR_INVALID_ARGUMENT;
	b = mdev_mig_board(d);
	if (!mdev_is_mig(d)) {
		if (!b || !(p = mig_gip_by_index(b, 4)))
			return NVML_ERROR_NOT_SUPPORTED;
		*a = (nvmlDeviceAttributes_t){ p->sm, p->ce, p->dec, p->enc, p->jpeg, p->ofa,
					       p->slices, p->slices, p->mem_mib };
		return NVML_SUCCESS;
	}
	if ((rc = mdev_state_get(d, &g)))
		return rc;
	if (!(gi = ds_gi_find(&g, mdev_gi_id(d))) || !(ci = ds_ci_find(gi, mdev_ci_id(d))) ||
	    !(p = mig_gip_by_index(b, gi->profile)) || !mig_cip_get(b, p, ci->profile, &c))
		return NVML_ERROR_INVALID_ARGUMENT;
	*a = (nvmlDeviceAttributes_t){ c.sm, p->ce, p->dec, p->enc, p->jpeg, p->ofa,
				       p->slices, c.slices, p->mem_mib };
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetAttributes, nvmlDeviceGetAttributes_v2);
