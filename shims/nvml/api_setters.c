/* Setters of power, clocks and ECC over the shared device state
 * (mdev_state_update): the power limit bounded by the board's min/max,
 * application clocks from the supported table, locked graphics/memory
 * clocks, auto boost, ECC mode (pending until the GPU is reset), and the
 * GPU reset itself (mokka_reset_gpu: pending ECC and MIG modes become
 * current; refused while MIG instances exist), which nvidia-smi -r reaches
 * through the export table. */
#include <stdio.h>

#include "shims/nvml/api_mig.h"

typedef struct {
	unsigned version;
	unsigned char powerScope;
	unsigned powerValueMw;
} nvmlPowerValue_v2_t;
#define NVML_POWER_VALUE_V2 NVML_STRUCT_VERSION(sizeof(nvmlPowerValue_v2_t), 2)

/* A full GPU (setters do not apply to MIG device handles). */
static nvmlReturn_t full_gpu(nvmlDevice_t device, struct mdev **d)
{
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	return mdev_is_mig(*d) ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

struct pair {
	unsigned field, a, b;
};

static int set_pair_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	const struct pair *p = arg;

	(void)d;
	switch (p->field) {
	case DS_PL: g->pl_mw = p->a; break;
	case DS_AC: g->ac_mem = p->a, g->ac_gr = p->b; break;
	case DS_LGC: g->lgc_min = p->a, g->lgc_max = p->b; break;
	case DS_LMC: g->lmc_min = p->a, g->lmc_max = p->b; break;
	case DS_BOOST: g->boost = (uint8_t)p->a; break;
	default: return NVML_ERROR_INVALID_ARGUMENT;
	}
	g->set |= p->field;
	return NVML_SUCCESS;
}

static int unset_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	(void)d;
	g->set &= ~*(unsigned *)arg;
	return NVML_SUCCESS;
}

static nvmlReturn_t unset(nvmlDevice_t device, unsigned field)
{
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	return rc ? rc : mdev_state_update(d, unset_fn, &field);
}

/* ---- power ------------------------------------------------------------- */

NVML_API(nvmlDeviceSetPowerManagementLimit, nvmlDevice_t device, unsigned mw)
{
	struct pair p = { DS_PL, mw, 0 };
	uint32_t lo, hi;
	bool b;
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if ((mdev_bool(d, "power.management_supported", &b) && !b) ||
	    !mdev_u32(d, "power.min_limit_mw", &lo) || !mdev_u32(d, "power.max_limit_mw", &hi))
		return NVML_ERROR_NOT_SUPPORTED;
	if (mw < lo || mw > hi)
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, set_pair_fn, &p);
}

NVML_API(nvmlDeviceSetPowerManagementLimit_v2, nvmlDevice_t device, nvmlPowerValue_v2_t *v)
{
	if (!v)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	if (v->version != NVML_POWER_VALUE_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (v->powerScope != 0)	/* GPU scope only: no module limit is simulated */
		return NVML_ERROR_NOT_SUPPORTED;
	return nvmlDeviceSetPowerManagementLimit(device, v->powerValueMw);
}

/* ---- clocks ------------------------------------------------------------ */

/* mem/graphics pair from the supported table (when the profile has one),
 * else each within its max clock. */
static bool supported_pair(struct mdev *d, unsigned mem, unsigned gr)
{
	size_t n = mdev_len(d, "supported_clocks.memory_clocks");
	char key[128];
	uint32_t v;

	if (n == 0)
		return mdev_u32(d, "clocks.memory_max", &v) && mem <= v &&
		       mdev_u32(d, "clocks.graphics_max", &v) && gr <= v;
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "supported_clocks.memory_clocks[%zu].freq_mhz", i);
		if (!mdev_u32(d, key, &v) || v != mem)
			continue;
		snprintf(key, sizeof(key), "supported_clocks.memory_clocks[%zu].graphics_clocks", i);
		for (size_t k = 0, m = mdev_len(d, key); k < m; k++) {
			char g[160];

			snprintf(g, sizeof(g), "%s[%zu]", key, k);
			if (mdev_u32(d, g, &v) && v == gr)
				return true;
		}
	}
	return false;
}

NVML_API(nvmlDeviceSetApplicationsClocks, nvmlDevice_t device, unsigned mem_mhz,
	 unsigned graphics_mhz)
{
	struct pair p = { DS_AC, mem_mhz, graphics_mhz };
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if (!mdev_has(d, "clocks.graphics_app"))
		return NVML_ERROR_NOT_SUPPORTED;
	if (!supported_pair(d, mem_mhz, graphics_mhz))
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, set_pair_fn, &p);
}

NVML_API(nvmlDeviceResetApplicationsClocks, nvmlDevice_t device)
{
	return unset(device, DS_AC);
}

static nvmlReturn_t lock_clocks(nvmlDevice_t device, unsigned field, const char *max_key,
				unsigned lo, unsigned hi)
{
	struct pair p = { field, lo, hi };
	uint32_t max;
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if (!mdev_u32(d, max_key, &max))
		return NVML_ERROR_NOT_SUPPORTED;
	if (lo > hi || hi > max || hi == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, set_pair_fn, &p);
}

NVML_API(nvmlDeviceSetGpuLockedClocks, nvmlDevice_t device, unsigned min_mhz, unsigned max_mhz)
{
	return lock_clocks(device, DS_LGC, "clocks.graphics_max", min_mhz, max_mhz);
}

NVML_API(nvmlDeviceResetGpuLockedClocks, nvmlDevice_t device)
{
	return unset(device, DS_LGC);
}

NVML_API(nvmlDeviceSetMemoryLockedClocks, nvmlDevice_t device, unsigned min_mhz,
	 unsigned max_mhz)
{
	return lock_clocks(device, DS_LMC, "clocks.memory_max", min_mhz, max_mhz);
}

NVML_API(nvmlDeviceResetMemoryLockedClocks, nvmlDevice_t device)
{
	return unset(device, DS_LMC);
}

/* Auto boost exists where the profile says so (clocks.auto_boost, default
 * clocks.auto_boost_default); data-center boards have none. */
NVML_API(nvmlDeviceGetAutoBoostedClocksEnabled, nvmlDevice_t device, unsigned *enabled,
	 unsigned *default_enabled)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!enabled || !default_enabled)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_feature(d, "clocks.auto_boost", enabled)))
		return rc;
	if (nvml_key_feature(d, "clocks.auto_boost_default", default_enabled))
		*default_enabled = *enabled;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceSetAutoBoostedClocksEnabled, nvmlDevice_t device, unsigned enabled)
{
	struct pair p = { DS_BOOST, enabled, 0 };
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if (!mdev_has(d, "clocks.auto_boost"))
		return NVML_ERROR_NOT_SUPPORTED;
	if (enabled > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, set_pair_fn, &p);
}

NVML_API(nvmlDeviceSetDefaultAutoBoostedClocksEnabled, nvmlDevice_t device, unsigned enabled,
	 unsigned flags)
{
	(void)flags;
	return nvmlDeviceSetAutoBoostedClocksEnabled(device, enabled);
}

/* ---- ECC and reset ---------------------------------------------------- */

struct modes {
	unsigned ecc, ecc_pend, mig, mig_pend, want;
};

static int set_ecc_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	const struct modes *m = arg;

	(void)d;
	if (!(g->set & DS_ECC))
		g->ecc_cur = (uint8_t)m->ecc;
	g->ecc_pend = (uint8_t)m->want;
	g->set |= DS_ECC;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceSetEccMode, nvmlDevice_t device, unsigned ecc)
{
	struct modes m = { .want = ecc };
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if (ecc > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (nvml_key_feature(d, "ecc.mode_current", &m.ecc))
		return NVML_ERROR_NOT_SUPPORTED;
	return mdev_state_update(d, set_ecc_fn, &m);
}

static int reset_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	const struct modes *m = arg;

	(void)d;
	if (g->ngi)
		return NVML_ERROR_IN_USE;
	if (!(g->set & DS_ECC))
		g->ecc_cur = (uint8_t)m->ecc, g->ecc_pend = (uint8_t)m->ecc_pend;
	if (!(g->set & DS_MIG))
		g->mig_cur = (uint8_t)m->mig, g->mig_pend = (uint8_t)m->mig_pend;
	if (g->ecc_cur != g->ecc_pend)
		g->ecc_cur = g->ecc_pend, g->set |= DS_ECC;
	if (g->mig_cur != g->mig_pend)
		g->mig_cur = g->mig_pend, g->set |= DS_MIG;
	/* a reset drops the clocks set since boot */
	g->set &= ~(unsigned)(DS_AC | DS_LGC | DS_LMC);
	return NVML_SUCCESS;
}

/* What a GPU reset does to the state (nvidia-smi -r): pending modes apply,
 * clock settings go; refused (IN_USE) while GPU instances exist. */
nvmlReturn_t mokka_reset_gpu(nvmlDevice_t device);
nvmlReturn_t mokka_reset_gpu(nvmlDevice_t device)
{
	struct modes m = { 0 };
	struct mdev *d;
	nvmlReturn_t rc = full_gpu(device, &d);

	if (rc)
		return rc;
	if (nvml_key_feature(d, "ecc.mode_current", &m.ecc) == NVML_SUCCESS &&
	    nvml_key_feature(d, "ecc.mode_pending", &m.ecc_pend))
		m.ecc_pend = m.ecc;
	if (nvml_key_feature(d, "mig.mode_current", &m.mig) == NVML_SUCCESS &&
	    nvml_key_feature(d, "mig.mode_pending", &m.mig_pend))
		m.mig_pend = m.mig;
	return mdev_state_update(d, reset_fn, &m);
}
