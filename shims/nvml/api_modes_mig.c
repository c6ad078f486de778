/* Device modes (persistence, display, compute, operation, virtualization,
 * accounting) with their setters, and MIG mode.  Setters write the shared
 * device state (mdev_state_update), which every getter reads back through
 * the device's tree.  MIG instances: api_mig*.c. */
#include <string.h>

#include "shims/nvml/api_mig.h"

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

/* ---- setters ----------------------------------------------------------- */

struct set_u8 {
	unsigned field;
	unsigned value;
};

static int set_field_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	const struct set_u8 *s = arg;

	(void)d;
	switch (s->field) {
	case DS_PM: g->pm = (uint8_t)s->value; break;
	case DS_CM: g->cm = (uint8_t)s->value; break;
	case DS_ACCT: g->acct = (uint8_t)s->value; break;
	default: return NVML_ERROR_INVALID_ARGUMENT;
	}
	g->set |= s->field;
	return NVML_SUCCESS;
}

/* A setter of a full GPU (MIG device handles take none of these). */
static nvmlReturn_t set_field(nvmlDevice_t device, unsigned field, unsigned value, unsigned max)
{
	struct set_u8 s = { field, value };
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (mdev_is_mig(d))
		return NVML_ERROR_NOT_SUPPORTED;
	if (value > max)
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, set_field_fn, &s);
}

NVML_API(nvmlDeviceSetPersistenceMode, nvmlDevice_t device, unsigned mode)
{
	return set_field(device, DS_PM, mode, 1);
}

/* EXCLUSIVE_THREAD is deprecated and refused, as by the real driver. */
NVML_API(nvmlDeviceSetComputeMode, nvmlDevice_t device, unsigned mode)
{
	if (mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_NOT_SUPPORTED;
	return set_field(device, DS_CM, mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
}

NVML_API(nvmlDeviceSetAccountingMode, nvmlDevice_t device, unsigned mode)
{
	return set_field(device, DS_ACCT, mode, 1);
}

/* No process ever ran on a simulated GPU: nothing to clear. */
NVML_API(nvmlDeviceClearAccountingPids, nvmlDevice_t device)
{
	struct mdev *d;

	return nvml_dev(device, &d);
}

/* ---- MIG mode ------------------------------------------------------------ */

NVML_API(nvmlDeviceGetMigMode, nvmlDevice_t device, unsigned *current, unsigned *pending)
{
	const struct mig_board *b;
	struct mdev *d;
	unsigned cur;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

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

struct mig_mode {
	unsigned mode, cur, pend;	/* requested; in force before the lock */
	bool immediate;
};

static int set_mig_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	struct mig_mode *m = arg;

	(void)d;
	if (!(g->set & DS_MIG))
		g->mig_cur = (uint8_t)m->cur;
	if (!m->mode && g->ngi)
		return NVML_ERROR_IN_USE;	/* instances first */
	g->mig_pend = (uint8_t)m->mode;
	if (m->immediate)
		g->mig_cur = g->mig_pend;
	g->set |= DS_MIG;
	m->cur = g->mig_cur;
	return NVML_SUCCESS;
}

/* On bare metal the driver resets the idle GPU itself and the mode is
 * current at once (activation SUCCESS).  With mig.activation: reset (a
 * pass-through VM, where the reset is not exposed) the mode stays pending
 * until the GPU is reset: activation RESET_REQUIRED. */
NVML_API(nvmlDeviceSetMigMode, nvmlDevice_t device, unsigned mode, nvmlReturn_t *status)
{
	struct mig_mode m = { .mode = mode };
	const char *act;
	const struct mig_board *b;
	struct mdev *d;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

	if (rc)
		return rc;
	if (mode > 1 || !status)
		return NVML_ERROR_INVALID_ARGUMENT;
	m.immediate = !mdev_str(d, "mig.activation", &act) || strcmp(act, "reset") != 0;
	if ((rc = nvmlDeviceGetMigMode(device, &m.cur, &m.pend)) ||
	    (rc = mdev_state_update(d, set_mig_fn, &m)))
		return rc;
	*status = m.cur == mode ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
	return NVML_SUCCESS;
}
