/* Declared MIG layouts, in nvidia-mig-manager's shape, per GPU in the
 * profile (devices[].mig, else device_defaults.mig):
 *
 *   mig: {mig-enabled: true, mig-devices: {"1g.10gb": 7}}
 *
 * Applied at Stage to a GPU whose device state document does not exist
 * yet (first Stage, or after mokka-ctl reset), so what consumers did
 * since is never overwritten.  Each GPU instance gets its full compute
 * instance, as mig-manager creates them; instances go at the first free
 * placement in the order the profile lists them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "shims/nvml/mig_profiles.h"
#include "workers/gpudriver/mig.h"

static const cJSON *device_mig(const cJSON *root, int index)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices"), *d, *m;
	int pos = 0;

	cJSON_ArrayForEach(d, devs) {
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(d, "index");

		if ((cJSON_IsNumber(ix) ? (int)ix->valuedouble == index : pos == index) &&
		    (m = cJSON_GetObjectItemCaseSensitive(d, "mig")) &&
		    cJSON_GetObjectItemCaseSensitive(m, "mig-enabled"))
			return m;
		pos++;
	}
	m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "device_defaults"),
					     "mig");
	return cJSON_GetObjectItemCaseSensitive(m, "mig-enabled") ? m : NULL;
}

static double num(const cJSON *root, int index, const char *block, const char *key)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices"), *d, *v;
	int pos = 0;

	cJSON_ArrayForEach(d, devs) {
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(d, "index");

		if ((cJSON_IsNumber(ix) ? (int)ix->valuedouble == index : pos == index) &&
		    (v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, block), key)) &&
		    cJSON_IsNumber(v))
			return v->valuedouble;
		pos++;
	}
	v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(root, "device_defaults"), block), key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *arch_of(const cJSON *root, int index)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices"), *d, *v;
	int pos = 0;

	cJSON_ArrayForEach(d, devs) {
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(d, "index");

		if ((cJSON_IsNumber(ix) ? (int)ix->valuedouble == index : pos == index) &&
		    cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(d, "architecture")))
			return v->valuestring;
		pos++;
	}
	v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "device_defaults"),
					     "architecture");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One GPU instance of p with its full compute instance, first fit. */
static int add_one(const struct mig_board *b, struct ds_gpu *g, const struct mig_gip *p)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n = mig_gip_placements(p, starts), used = 0, same = 0;
	struct ds_gi gi = { 0 };
	struct ds_ci ci = { 0 };
	struct mig_cip c;

	for (unsigned i = 0; i < g->ngi; i++) {
		const struct mig_gip *q = mig_gip_by_index(b, g->gi[i].profile);

		used += q ? q->slices : 0;
		same += g->gi[i].profile == p->index;
	}
	if (used + p->slices > 7 || same >= p->count)
		return -ENOSPC;
	for (unsigned k = 0; k < n; k++) {
		bool free_ = true;

		for (unsigned i = 0; i < g->ngi && free_; i++)
			free_ = starts[k] + p->mem_slices <= g->gi[i].start ||
				g->gi[i].start + g->gi[i].size <= starts[k];
		if (!free_)
			continue;
		gi.id = (uint8_t)mig_gi_id(starts[k], p->mem_slices);
		gi.profile = (uint8_t)p->index, gi.start = (uint8_t)starts[k];
		gi.size = (uint8_t)p->mem_slices, gi.serial = ++g->next_serial;
		if (ds_gi_add(g, &gi) < 0)
			return -ENOSPC;
		for (unsigned idx = 0; idx < MIG_CI_PROFILE_COUNT; idx++)
			if (mig_cip_get(b, p, idx, &c) && c.slices == p->slices) {
				ci.profile = (uint8_t)idx, ci.size = (uint8_t)c.slices;
				ci.serial = ++g->next_serial;
				return ds_ci_add(ds_gi_find(g, gi.id), &ci);
			}
		return 0;
	}
	return -ENOSPC;
}

static int layout_of(const cJSON *root, const struct state_device *dv, const cJSON *m,
		     struct ds_gpu *g, struct sim_errors *errs)
{
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(m, "mig-enabled");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(m, "mig-devices"), *e;
	double id = num(root, dv->index, "pci", "device_id");
	double total = num(root, dv->index, "memory", "total_bytes");
	const struct mig_board *b = mig_board_guess((uint32_t)id, arch_of(root, dv->index),
						    (uint64_t)(total / (1 << 20)));

	memset(g, 0, sizeof(*g));
	g->set = DS_MIG;
	g->mig_cur = g->mig_pend = cJSON_IsTrue(en);
	if (!g->mig_cur)
		return 0;
	if (!b) {
		sim_error(errs, "mig", "GPU %d: mig-enabled, but the board is not MIG-capable", dv->index);
		return -EINVAL;
	}
	/* largest first, as nvidia-mig-parted places them (compile_mig.c
	 * checked the same order fits) */
	for (unsigned size = MIG_MEM_SLICES; size >= 1; size /= 2)
	cJSON_ArrayForEach(e, devs) {
		const struct mig_gip *p = mig_gip_by_name(b, e->string);

		if (!p || !cJSON_IsNumber(e) || e->valuedouble < 0) {
			sim_error(errs, "mig", "GPU %d: mig-devices: '%s' is no %s profile with a count",
				  dv->index, e->string, b->name);
			return -EINVAL;
		}
		if (p->mem_slices != size)
			continue;
		for (int k = 0; k < (int)e->valuedouble; k++)
			if (add_one(b, g, p) < 0) {
				sim_error(errs, "mig", "GPU %d: mig-devices: %d x %s do not fit on %s",
					  dv->index, (int)e->valuedouble, p->name, b->name);
				return -EINVAL;
			}
	}
	return 0;
}

int gd_mig_apply_layouts(const struct state *s, struct ds_store *st, struct sim_errors *errs)
{
	cJSON *root = s->profile_json ? cJSON_Parse(s->profile_json) : NULL;
	int first = 0, r;

	for (int i = 0; root && i < s->num_devices; i++) {
		const struct state_device *dv = &s->devices[i];
		const cJSON *m = device_mig(root, dv->index);
		struct ds_gpu g;

		if (!m || ds_lock(st) < 0)
			continue;
		if (ds_load(st, dv->uuid, &g) == -ENOENT) {
			if ((r = layout_of(root, dv, m, &g, errs)) == 0 &&
			    (r = ds_save(st, dv->uuid, &g)) < 0)
				sim_error(errs, "mig", "GPU %d: saving its layout: %s", dv->index,
					  strerror(-r));
			gd_first(&first, r);
		}
		ds_unlock(st);
	}
	cJSON_Delete(root);
	return first;
}
