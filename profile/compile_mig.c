/* Declared MIG layouts (nvidia-mig-manager's shape, per GPU):
 *
 *   device_defaults|devices[]:
 *     mig: {mig-enabled: true, mig-devices: {"1g.10gb": 7}}
 *
 * checked when the profile compiles, so a layout that names a profile the
 * board lacks, or does not fit, is refused with its line and column (the
 * last good state stays) instead of failing gpudriver's Stage, which
 * applies it (workers/gpudriver/mig_layout.c).  The board comes from the
 * GPU's pci.device_id and memory.total_bytes, as the mock NVML finds it. */
#include <errno.h>
#include <string.h>

#include "profile/compile_internal.h"
#include "profile/yaml_tree.h"
#include "shims/nvml/mig_profiles.h"

static const struct ynode *at(const struct ynode *map, const char *a, const char *b)
{
	const struct ynode *n = map && map->kind == YNODE_MAP ? ytree_map_get(map, a) : NULL;

	return b && n && n->kind == YNODE_MAP ? ytree_map_get(n, b) : b ? NULL : n;
}

/* The entry's value, else device_defaults'. */
static uint64_t num(const struct ynode *entry, const struct ynode *dd, const char *a,
		    const char *b)
{
	uint64_t v = 0;

	if (ytree_uint(at(entry, a, b), &v) < 0)
		ytree_uint(at(dd, a, b), &v);
	return v;
}

static const char *arch(const struct ynode *entry, const struct ynode *dd)
{
	const struct ynode *a = at(entry, "architecture", NULL);

	if (!a || a->kind != YNODE_SCALAR)
		a = at(dd, "architecture", NULL);
	return a && a->kind == YNODE_SCALAR ? a->str : NULL;
}

/* Greedy first fit, as Stage places them: memory slices free, compute
 * slices left (7), the profile's instance count. */
static bool place(const struct mig_gip *p, unsigned *mem, unsigned *compute, unsigned *count)
{
	unsigned starts[MIG_MAX_PLACEMENTS], n = mig_gip_placements(p, starts);
	unsigned span = (1u << p->mem_slices) - 1;

	if (*compute + p->slices > 7 || *count >= p->count)
		return false;
	for (unsigned k = 0; k < n; k++)
		if (!(*mem & (span << starts[k]))) {
			*mem |= span << starts[k];
			*compute += p->slices;
			++*count;
			return true;
		}
	return false;
}

/* Each size class (memory slices 8, 4, 2, 1) in the order listed. */
static int check_layout(struct cctx *c, const struct ynode *mig, const struct mig_board *b,
			const char *path)
{
	const struct ynode *en = ytree_map_get(mig, "mig-enabled");
	const struct ynode *devs = ytree_map_get(mig, "mig-devices");
	unsigned mem = 0, compute = 0, count[MIG_GI_PROFILE_COUNT] = { 0 };
	bool on = false;

	if (!en)
		return 0;
	if (ytree_bool(en, &on) < 0)
		return cc_fail(c, en, path, "mig-enabled: want true or false, got %s", cc_text(en));
	if (!on)
		return 0;
	if (!b)
		return cc_fail(c, en, path, "mig-enabled on a board without MIG (no MIG geometry "
			       "for its pci.device_id and memory)");
	if (devs && devs->kind != YNODE_MAP)
		return cc_fail(c, devs, path, "mig-devices: want a mapping of profile name to count");
	/* largest first, as nvidia-mig-parted places them */
	for (unsigned size = MIG_MEM_SLICES; size >= 1; size /= 2)
	for (size_t i = 0; devs && i < ytree_map_size(devs); i++) {
		const struct ynode *k = ytree_map_key(devs, i), *v = ytree_map_value(devs, i);
		const struct mig_gip *p = mig_gip_by_name(b, k->str);
		uint64_t n;

		if (!p)
			return cc_fail(c, k, path, "mig-devices: '%s' is no MIG profile of the %s",
				       k->str, b->name);
		if (ytree_uint(v, &n) < 0 || n > 7)
			return cc_fail(c, v, path, "mig-devices: '%s': want a count 0..7, got %s",
				       k->str, cc_text(v));
		if (p->mem_slices != size)
			continue;
		for (uint64_t j = 0; j < n; j++)
			if (!place(p, &mem, &compute, &count[p->index]))
				return cc_fail(c, v, path, "mig-devices: %llu x %s do not fit on the "
					       "%s with the larger ones", (unsigned long long)n,
					       p->name, b->name);
	}
	return 0;
}

int compile_mig(struct cctx *c, const struct ynode *root)
{
	const struct ynode *dd = ytree_map_get(root, "device_defaults");
	const struct ynode *list = ytree_map_get(root, "devices");
	char path[KEY_PATH_MAX];
	int rc;

	for (size_t i = 0; list && list->kind == YNODE_SEQ && i < list->n; i++) {
		const struct ynode *e = list->kids[i], *mig = at(e, "mig", NULL);
		const struct mig_board *b;

		if (!mig || mig->kind != YNODE_MAP || !ytree_map_get(mig, "mig-enabled"))
			mig = at(dd, "mig", NULL);
		if (!mig || mig->kind != YNODE_MAP)
			continue;
		b = mig_board_guess((uint32_t)num(e, dd, "pci", "device_id"), arch(e, dd),
				    num(e, dd, "memory", "total_bytes") >> 20);
		cc_join_index(path, "devices", i);
		if ((rc = check_layout(c, mig, b, path)) < 0)
			return rc;
	}
	return 0;
}
