/* MIG compute instances (profiles, placements, capacity, create, destroy,
 * list, info) and MIG device handles (by index, their parent, their GPU /
 * compute instance ids, attributes). */
#include <stdio.h>
#include <string.h>

#include "shims/nvml/api_mig.h"

/* A GPU instance handle that exists now, with its document and profile. */
static nvmlReturn_t gi_of(nvmlGpuInstance_t h, struct mdev **d, struct ds_gpu *g,
			  struct ds_gi **gi, const struct mig_gip **p)
{
	unsigned id;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!engine_gi_lookup(h, d, &id) || mdev_state_get(*d, g) ||
	    !(*gi = ds_gi_find(g, id)) || !(*p = mig_gip_by_index(mdev_mig_board(*d), (*gi)->profile)))
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

static void cip_info(const struct mig_gip *p, const struct mig_cip *c,
		     nvmlComputeInstanceProfileInfo_t *out)
{
	*out = (nvmlComputeInstanceProfileInfo_t){ c->index, c->slices, c->count, c->sm, p->ce,
						   p->dec, p->enc, p->jpeg, p->ofa };
}

NVML_API(nvmlGpuInstanceGetComputeInstanceProfileInfo, nvmlGpuInstance_t h, unsigned profile,
	 unsigned eng_profile, nvmlComputeInstanceProfileInfo_t *info)
{
	const struct mig_gip *p;
	struct mig_cip c;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	nvmlReturn_t rc = gi_of(h, &d, &g, &gi, &p);

	if (rc)
		return rc;
	if (!info || profile >= MIG_CI_PROFILE_COUNT || eng_profile != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_cip_get(mdev_mig_board(d), p, profile, &c))
		return NVML_ERROR_NOT_SUPPORTED;
	cip_info(p, &c, info);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceGetComputeInstanceProfileInfoV, nvmlGpuInstance_t h, unsigned profile,
	 unsigned eng_profile, nvmlComputeInstanceProfileInfo_v3_t *info)
{
	nvmlComputeInstanceProfileInfo_v3_t out;
	nvmlComputeInstanceProfileInfo_t v1;
	const struct mig_gip *p;
	struct mig_cip c;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	unsigned version;
	nvmlReturn_t rc;

	if (!info)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	version = info->version;
	if (version != NVML_CI_PROFILE_INFO_V2 && version != NVML_CI_PROFILE_INFO_V3)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if ((rc = nvmlGpuInstanceGetComputeInstanceProfileInfo(h, profile, eng_profile, &v1)) ||
	    (rc = gi_of(h, &d, &g, &gi, &p)))
		return rc;
	mig_cip_get(mdev_mig_board(d), p, profile, &c);
	out = (nvmlComputeInstanceProfileInfo_v3_t){ version, v1.id, v1.sliceCount,
		v1.instanceCount, v1.multiprocessorCount, v1.sharedCopyEngineCount,
		v1.sharedDecoderCount, v1.sharedEncoderCount, v1.sharedJpegCount,
		v1.sharedOfaCount, "", 0 };
	snprintf(out.name, sizeof(out.name), "MIG %s", c.name);
	/* a v2 caller's struct ends before capabilities */
	memcpy(info, &out, version == NVML_CI_PROFILE_INFO_V3 ? sizeof(out) : 136);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceGetComputeInstancePossiblePlacements, nvmlGpuInstance_t h,
	 unsigned profile, nvmlComputeInstancePlacement_t *placements, unsigned *count)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n;
	const struct mig_gip *p;
	struct mig_cip c;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	nvmlReturn_t rc = gi_of(h, &d, &g, &gi, &p);

	if (rc)
		return rc;
	if (!count || !mig_cip_get(mdev_mig_board(d), p, profile, &c))
		return NVML_ERROR_INVALID_ARGUMENT;
	n = mig_cip_placements(c.slices, p->slices, starts);
	/* NVML's contract: a non-NULL array holds every placement (count is
	 * output only; nvidia-smi passes it unset) */
	for (unsigned i = 0; placements && i < n; i++)
		placements[i] = (nvmlComputeInstancePlacement_t){ starts[i], c.slices };
	*count = n;
	return NVML_SUCCESS;
}

/* Where a CI of c fits in gi: at want, or the first free placement. */
static nvmlReturn_t ci_fit(const struct ds_gi *gi, const struct mig_gip *p,
			   const struct mig_cip *c, int want, unsigned *start)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n = mig_cip_placements(c->slices, p->slices, starts);
	bool known = want < 0;

	for (unsigned i = 0; i < n; i++)
		known |= (int)starts[i] == want;
	if (!known)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < n; i++) {
		bool free_ = want < 0 || (int)starts[i] == want;

		for (unsigned k = 0; k < gi->nci && free_; k++)
			free_ = starts[i] + c->slices <= gi->ci[k].start ||
				gi->ci[k].start + gi->ci[k].size <= starts[i];
		if (free_) {
			*start = starts[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

NVML_API(nvmlGpuInstanceGetComputeInstanceRemainingCapacity, nvmlGpuInstance_t h,
	 unsigned profile, unsigned *count)
{
	const struct mig_gip *p;
	struct ds_ci ci = { 0 };
	struct mig_cip c;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	unsigned n = 0, start;
	nvmlReturn_t rc = gi_of(h, &d, &g, &gi, &p);

	if (rc)
		return rc;
	if (!count || !mig_cip_get(mdev_mig_board(d), p, profile, &c))
		return NVML_ERROR_INVALID_ARGUMENT;
	for (ci.id = 0; ci.id < DS_MAX_CI && gi->nci < DS_MAX_CI; ci.id++) {
		if (ds_ci_find(gi, ci.id))
			continue;
		if (ci_fit(gi, p, &c, -1, &start))
			break;
		ci.start = (uint8_t)start, ci.size = (uint8_t)c.slices;
		if (ds_ci_add(gi, &ci) < 0)
			break;
		n++;
	}
	*count = n;
	return NVML_SUCCESS;
}

struct ci_create {
	unsigned gi, profile, id;
	int want;
};

static int ci_create_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	struct ci_create *r = arg;
	struct ds_gi *gi = ds_gi_find(g, r->gi);
	const struct mig_gip *p = gi ? mig_gip_by_index(mdev_mig_board(d), gi->profile) : NULL;
	struct ds_ci ci = { 0 };
	struct mig_cip c;
	unsigned start;
	nvmlReturn_t rc;

	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;	/* destroyed meanwhile */
	if (!mig_cip_get(mdev_mig_board(d), p, r->profile, &c))
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = ci_fit(gi, p, &c, r->want, &start)))
		return rc;
	while (ci.id < DS_MAX_CI && ds_ci_find(gi, ci.id))
		ci.id++;
	if (ci.id >= DS_MAX_CI)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	ci.profile = (uint8_t)c.index, ci.start = (uint8_t)start, ci.size = (uint8_t)c.slices;
	ci.serial = ++g->next_serial;
	if (ds_ci_add(gi, &ci) < 0)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	r->id = ci.id;
	return NVML_SUCCESS;
}

static nvmlReturn_t ci_create(nvmlGpuInstance_t h, unsigned profile, int want,
			      nvmlComputeInstance_t *out)
{
	struct ci_create r = { .profile = profile, .want = want };
	struct mdev *d;
	nvmlReturn_t rc;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!out || !engine_gi_lookup(h, &d, &r.gi))
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = mdev_state_update(d, ci_create_fn, &r)))
		return rc;
	*out = engine_ci_handle(d, r.gi, r.id);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceCreateComputeInstance, nvmlGpuInstance_t h, unsigned profile,
	 nvmlComputeInstance_t *ci)
{
	return ci_create(h, profile, -1, ci);
}

NVML_API(nvmlGpuInstanceCreateComputeInstanceWithPlacement, nvmlGpuInstance_t h,
	 unsigned profile, const nvmlComputeInstancePlacement_t *placement,
	 nvmlComputeInstance_t *ci)
{
	if (!placement || placement->start >= MIG_MEM_SLICES)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	return ci_create(h, profile, (int)placement->start, ci);
}

static int ci_destroy_fn(struct mdev *d, struct ds_gpu *g, void *arg)
{
	const unsigned *ids = arg;
	struct ds_gi *gi = ds_gi_find(g, ids[0]);

	(void)d;
	if (!gi || !ds_ci_find(gi, ids[1]))
		return NVML_ERROR_INVALID_ARGUMENT;
	ds_ci_remove(gi, ids[1]);
	return NVML_SUCCESS;
}

NVML_API(nvmlComputeInstanceDestroy, nvmlComputeInstance_t h)
{
	unsigned ids[2];
	struct mdev *d;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!engine_ci_lookup(h, &d, &ids[0], &ids[1]))
		return NVML_ERROR_INVALID_ARGUMENT;
	return mdev_state_update(d, ci_destroy_fn, ids);
}

NVML_API(nvmlGpuInstanceGetComputeInstances, nvmlGpuInstance_t h, unsigned profile,
	 nvmlComputeInstance_t *out, unsigned *count)
{
	const struct mig_gip *p;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	unsigned n = 0;
	nvmlReturn_t rc = gi_of(h, &d, &g, &gi, &p);

	if (rc)
		return rc;
	if (!count || profile >= MIG_CI_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < gi->nci; i++) {
		if (gi->ci[i].profile != profile)
			continue;
		if (out)	/* sized for the profile's instance count (NVML's contract) */
			out[n] = engine_ci_handle(d, gi->id, gi->ci[i].id);
		n++;
	}
	*count = n;
	return NVML_SUCCESS;
}

NVML_API(nvmlGpuInstanceGetComputeInstanceById, nvmlGpuInstance_t h, unsigned id,
	 nvmlComputeInstance_t *out)
{
	const struct mig_gip *p;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct mdev *d;
	nvmlReturn_t rc = gi_of(h, &d, &g, &gi, &p);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!ds_ci_find(gi, id))
		return NVML_ERROR_NOT_FOUND;
	*out = engine_ci_handle(d, gi->id, id);
	return NVML_SUCCESS;
}

NVML_API(nvmlComputeInstanceGetInfo_v2, nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info)
{
	unsigned gid, cid;
	struct ds_gpu g;
	struct ds_gi *gi;
	struct ds_ci *ci;
	struct mdev *d;

	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!info || !engine_ci_lookup(h, &d, &gid, &cid) || mdev_state_get(d, &g) ||
	    !(gi = ds_gi_find(&g, gid)) || !(ci = ds_ci_find(gi, cid)))
		return NVML_ERROR_INVALID_ARGUMENT;
	*info = (nvmlComputeInstanceInfo_t){ d, engine_gi_handle(d, gid), cid, ci->profile,
					     { ci->start, ci->size } };
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlComputeInstanceGetInfo, nvmlComputeInstanceGetInfo_v2);
