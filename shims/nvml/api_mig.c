/* MIG GPU instances: profiles, placements, remaining capacity, create
 * (with and without placement), destroy, list.  Every change is a
 * read-modify-write of the shared device state under its lock
 * (mdev_state_update), so two processes creating at once never take the
 * same slices.  Compute instances are in api_mig_ci.c. */
#include <stdio.h>
#include <string.h>

#include "devstate/devstate.h"
#include "shims/nvml/api_mig.h"

nvmlReturn_t mig_parent(nvmlDevice_t device, struct mdev **d, const struct mig_board **b)
{
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	if (mdev_is_mig(*d))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!(*b = mdev_mig_board(*d)))
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

/* MIG mode in force for the document g (the profile's when g sets none). */
bool mig_enabled(struct mdev *d, const struct ds_gpu *g)
{
	unsigned on = 0;

	if (g->set & DS_MIG)
		return g->mig_cur;
	nvml_key_feature(d, "mig.mode_current", &on);
	return on;
}

static bool overlaps(unsigned a, unsigned an, unsigned b, unsigned bn)
{
	return a < b + bn && b < a + an;
}

/* Where a GI of profile p can go in g: at `want` (or the first free
 * placement when want < 0).  INSUFFICIENT_RESOURCES when it cannot,
 * INVALID_ARGUMENT for a placement the profile does not have. */
nvmlReturn_t mig_gi_fit(const struct ds_gpu *g, const struct mig_gip *p, int want,
			unsigned *start)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n = mig_gip_placements(p, starts);
	unsigned same = 0;
	bool known = want < 0;

	for (unsigned i = 0; i < g->ngi; i++)
		same += g->gi[i].profile == p->index;
	for (unsigned i = 0; i < n; i++)
		known |= (int)starts[i] == want;
	if (!known)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (same >= p->count)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	for (unsigned i = 0; i < n; i++) {
		bool free_ = true;

		if (want >= 0 && (int)starts[i] != want)
			continue;
		for (unsigned k = 0; k < g->ngi && free_; k++)
			free_ = !overlaps(starts[i], p->mem_slices, g->gi[k].start, g->gi[k].size);
		if (free_) {
			*start = starts[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

/* Compute slices in use must leave room for the profile's (7 per GPU). */
static bool slices_left(const struct mig_board *b, const struct ds_gpu *g,
			const struct mig_gip *p)
{
	unsigned used = 0;

	for (unsigned i = 0; i < g->ngi; i++) {
		const struct mig_gip *q = mig_gip_by_index(b, g->gi[i].profile);

		used += q ? q->slices : 0;
	}
	return used + p->slices <= 7;
}

NVML_API(nvmlDeviceGetGpuInstanceProfileInfo, nvmlDevice_t device, unsigned profile,
	 nvmlGpuInstanceProfileInfo_t *info)
{
	const struct mig_board *b;
	const struct mig_gip *p;
	struct mdev *d;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

	if (rc)
		return rc;
	if (!info || profile >= MIG_GI_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!(p = mig_gip_by_index(b, profile)))
		return NVML_ERROR_NOT_SUPPORTED;
	*info = (nvmlGpuInstanceProfileInfo_t){ p->id, 0, p->slices, p->count, p->sm, p->ce,
						p->dec, p->enc, p->jpeg, p->ofa, p->mem_mib };
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetGpuInstanceProfileInfoV, nvmlDevice_t device, unsigned profile,
	 nvmlGpuInstanceProfileInfo_v2_t *info)
{
	nvmlGpuInstanceProfileInfo_t v1;
	nvmlGpuInstanceProfileInfo_v3_t *v3 = (void *)info;
	const struct mig_board *b;
	struct mdev *d;
	nvmlReturn_t rc;

	if (!info)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	if (info->version != NVML_GI_PROFILE_INFO_V2 && info->version != NVML_GI_PROFILE_INFO_V3)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if ((rc = nvmlDeviceGetGpuInstanceProfileInfo(device, profile, &v1)) ||
	    (rc = mig_parent(device, &d, &b)))
		return rc;
	if (info->version == NVML_GI_PROFILE_INFO_V2) {
		*info = (nvmlGpuInstanceProfileInfo_v2_t){ info->version, v1.id,
			v1.isP2pSupported, v1.sliceCount, v1.instanceCount,
			v1.multiprocessorCount, v1.copyEngineCount, v1.decoderCount,
			v1.encoderCount, v1.jpegCount, v1.ofaCount, v1.memorySizeMB, "" };
		snprintf(info->name, sizeof(info->name), "MIG %s",
			 mig_gip_by_index(b, profile)->name);
		return NVML_SUCCESS;
	}
	*v3 = (nvmlGpuInstanceProfileInfo_v3_t){ v3->version, v1.id, v1.sliceCount,
		v1.instanceCount, v1.multiprocessorCount, v1.copyEngineCount, v1.decoderCount,
		v1.encoderCount, v1.jpegCount, v1.ofaCount, v1.memorySizeMB, "", 0 };
	snprintf(v3->name, sizeof(v3->name), "MIG %s", mig_gip_by_index(b, profile)->name);
	return NVML_SUCCESS;
}

/* A profile by the id nvidia-smi shows (what create/placements take). */
static nvmlReturn_t gi_profile(nvmlDevice_t device, unsigned id, struct mdev **d,
			       const struct mig_board **b, const struct mig_gip **p)
{
	nvmlReturn_t rc = mig_parent(device, d, b);

	if (rc)
		return rc;
	if (!(*p = mig_gip_by_id(*b, id)))
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetGpuInstancePossiblePlacements_v2, nvmlDevice_t device,
	 unsigned profile_id, nvmlGpuInstancePlacement_t *placements, unsigned *count)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n;
	const struct mig_board *b;
	const struct mig_gip *p;
	struct mdev *d;
	nvmlReturn_t rc = gi_profile(device, profile_id, &d, &b, &p);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = mig_gip_placements(p, starts);
	if (!placements) {
		*count = n;
		return NVML_SUCCESS;
	}
	/* NVML's contract: a non-NULL array holds every placement (count is
	 * output only) */
	for (unsigned i = 0; i < n; i++)
		placements[i] = (nvmlGpuInstancePlacement_t){ starts[i], p->mem_slices };
	*count = n;
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetGpuInstancePossiblePlacements,
	   nvmlDeviceGetGpuInstancePossiblePlacements_v2);

NVML_API(nvmlDeviceGetGpuInstanceRemainingCapacity, nvmlDevice_t device,
	 unsigned profile_id, unsigned *count)
{
	const struct mig_board *b;
	const struct mig_gip *p;
	struct ds_gpu g;
	struct ds_gi gi = { 0 };
	struct mdev *d;
	unsigned n = 0, start;
	nvmlReturn_t rc = gi_profile(device, profile_id, &d, &b, &p);

	if (rc || (rc = mdev_state_get(d, &g)))
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_enabled(d, &g))
		return NVML_ERROR_NOT_SUPPORTED;
	/* how many more fit, placing each at its first free placement */
	while (slices_left(b, &g, p) && mig_gi_fit(&g, p, -1, &start) == NVML_SUCCESS) {
		gi.start = (uint8_t)start;
		gi.id = (uint8_t)mig_gi_id(start, p->mem_slices);
		gi.profile = (uint8_t)p->index, gi.size = (uint8_t)p->mem_slices;
		if (ds_gi_add(&g, &gi) < 0)
			break;
		n++;
	}
	*count = n;
	return NVML_SUCCESS;
}

struct gi_create {
	const struct mig_board *b;
	const struct mig_gip *p;
	int want;		/* placement start, -1: any */
	bool on;		/* MIG mode before the lock (profile default) */
	unsigned id;
};

static int gi_create_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	struct gi_create *c = arg;
	struct ds_gi gi = { 0 };
	unsigned start;
	nvmlReturn_t rc;

	(void)d;
	if (!((g->set & DS_MIG) ? g->mig_cur : c->on))
		return NVML_ERROR_NOT_SUPPORTED;
	if (!slices_left(c->b, g, c->p))
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	if ((rc = mig_gi_fit(g, c->p, c->want, &start)))
		return rc;
	gi.id = (uint8_t)mig_gi_id(start, c->p->mem_slices);
	gi.profile = (uint8_t)c->p->index;
	gi.start = (uint8_t)start, gi.size = (uint8_t)c->p->mem_slices;
	gi.serial = ++g->next_serial;
	if (ds_gi_add(g, &gi) < 0)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	c->id = gi.id;
	return NVML_SUCCESS;
}

static nvmlReturn_t gi_create(nvmlDevice_t device, unsigned profile_id, int want,
			      nvmlGpuInstance_t *out)
{
	struct gi_create c = { .want = want };
	struct ds_gpu g;
	struct mdev *d;
	nvmlReturn_t rc = gi_profile(device, profile_id, &d, &c.b, &c.p);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = mdev_state_get(d, &g)))
		return rc;
	g.set &= ~(unsigned)DS_MIG;
	c.on = mig_enabled(d, &g);
	if ((rc = mdev_state_update(d, gi_create_fn, &c)))
		return rc;
	*out = engine_gi_handle(d, c.id);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceCreateGpuInstance, nvmlDevice_t device, unsigned profile_id,
	 nvmlGpuInstance_t *gpu_instance)
{
	return gi_create(device, profile_id, -1, gpu_instance);
}

NVML_API(nvmlDeviceCreateGpuInstanceWithPlacement, nvmlDevice_t device, unsigned profile_id,
	 const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gpu_instance)
{
	if (!placement || placement->start >= MIG_MEM_SLICES)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	return gi_create(device, profile_id, (int)placement->start, gpu_instance);
}

static int gi_destroy_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	unsigned id = *(unsigned *)arg;
	struct ds_gi *gi = ds_gi_find(g, id);

	(void)d;
	if (!gi)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gi->nci)
		return NVML_ERROR_IN_USE;
	ds_gi_remove(g, id);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceDestroy, nvmlGpuInstance_t gpu_instance)
{
	struct mdev *d;
	unsigned gi;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!engine_gi_lookup(gpu_instance, &d, &gi))
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, gi_destroy_fn, &gi);
}

NVML_API(nvmlDeviceGetGpuInstances, nvmlDevice_t device, unsigned profile_id,
	 nvmlGpuInstance_t *instances, unsigned *count)
{
	const struct mig_board *b;
	const struct mig_gip *p;
	struct ds_gpu g;
	struct mdev *d;
	unsigned n = 0;
	nvmlReturn_t rc = gi_profile(device, profile_id, &d, &b, &p);

	if (rc || (rc = mdev_state_get(d, &g)))
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_enabled(d, &g))
		return NVML_ERROR_NOT_SUPPORTED;
	for (unsigned i = 0; i < g.ngi; i++) {
		if (g.gi[i].profile != p->index)
			continue;
		if (instances)	/* sized for the profile's instance count (NVML's contract) */
			instances[n] = engine_gi_handle(d, g.gi[i].id);
		n++;
	}
	*count = n;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetGpuInstanceById, nvmlDevice_t device, unsigned id,
	 nvmlGpuInstance_t *gpu_instance)
{
	const struct mig_board *b;
	struct ds_gpu g;
	struct mdev *d;
	nvmlReturn_t rc = mig_parent(device, &d, &b);

	if (rc || (rc = mdev_state_get(d, &g)))
		return rc;
	if (!gpu_instance)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_enabled(d, &g))
		return NVML_ERROR_NOT_SUPPORTED;
	if (!ds_gi_find(&g, id))
		return NVML_ERROR_NOT_FOUND;
	*gpu_instance = engine_gi_handle(d, id);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceGetInfo, nvmlGpuInstance_t gpu_instance, nvmlGpuInstanceInfo_t *info)
{
	const struct mig_gip *p;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	unsigned id;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!info || !engine_gi_lookup(gpu_instance, &d, &id) || mdev_state_get(d, &g) ||
	    !(gi = ds_gi_find(&g, id)) || !(p = mig_gip_by_index(mdev_mig_board(d), gi->profile)))
		return NVML_ERROR_INVALID_ARGUMENT;
	*info = (nvmlGpuInstanceInfo_t){ d, gi->id, p->id, { gi->start, gi->size } };
	return NVML_SUCCESS;
}
