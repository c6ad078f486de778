/* The profile's "accelerators" (a Mokka extension): cards of other vendors
 * beside the NVIDIA GPUs, e.g. an AMD Instinct or a MetaX card.  They are
 * PCI functions only (the PCI plan puts them on the bus, pcibus renders
 * them, NFD announces pci-<vendor>.present), never NVML devices.
 *
 *   accelerators:
 *   - name: "AMD Instinct MI300X"    # for people
 *     vendor_id: 0x1002
 *     device_id: 0x74a1
 *     subsystem_vendor_id: 0x1002    # default: vendor_id
 *     subsystem_device_id: 0x74a1    # default: device_id
 *     class: 0x120000                # default: processing accelerator
 *     driver: amdgpu
 *     count: 2                       # default: 1, or len(bus_ids)
 *     numa_node: 1                   # default: -1 (the first root)
 *     bus_ids: ["0000:d1:00.0", "0000:d2:00.0"]   # default: 0000:d0+n:00.0 */
#include <stdio.h>
#include <string.h>

#include "profile/compile_internal.h"

#define ACCEL_CLASS 0x120000		/* processing accelerator */
#define ACCEL_AUTO_BUS 0xd0

static int get_u(struct cctx *c, const struct ynode *e, const char *key, const char *base,
		 uint64_t hi, uint64_t dflt, uint64_t *out)
{
	const struct ynode *n = cc_lookup(e, key);
	char path[KEY_PATH_MAX];

	*out = dflt;
	if (!n)
		return 0;
	cc_join_key(path, base, key);
	return cc_get_u64(c, n, path, hi, out);
}

/* The root complex of a NUMA node: the first listed on it, else none. */
static int numa_root(const struct state *s, int numa)
{
	for (int i = 0; numa >= 0 && i < s->num_roots; i++)
		if (s->roots[i].numa_node == numa)
			return i;
	return -1;
}

static int one(struct cctx *c, const struct ynode *e, const char *base, struct state *s)
{
	struct state_accel a = { .numa_node = -1, .root = -1 };
	const struct ynode *ids = cc_lookup(e, "bus_ids"), *n;
	uint64_t v, sv, sd, cls, count;
	int64_t numa = -1;
	char path[KEY_PATH_MAX];
	int rc;

	cc_join_key(path, base, "driver");
	if ((rc = cc_get_str(c, cc_lookup(e, "driver"), path, a.driver, sizeof(a.driver))) < 0)
		return rc;
	if (!a.driver[0] || !cc_all_chars(a.driver, "abcdefghijklmnopqrstuvwxyz0123456789_-"))
		return cc_fail(c, e, path, "want a driver name of [a-z0-9_-] (amdgpu, metax, ...)");
	if (!cc_lookup(e, "vendor_id") || !cc_lookup(e, "device_id"))
		return cc_fail(c, e, base, "vendor_id and device_id are required");
	if ((rc = get_u(c, e, "vendor_id", base, 0xfffe, 0, &v)) < 0)
		return rc;
	a.vendor_id = (uint16_t)v;
	if ((rc = get_u(c, e, "device_id", base, 0xffff, 0, &v)) < 0 ||
	    (rc = get_u(c, e, "subsystem_vendor_id", base, 0xffff, a.vendor_id, &sv)) < 0 ||
	    (rc = get_u(c, e, "subsystem_device_id", base, 0xffff, v, &sd)) < 0 ||
	    (rc = get_u(c, e, "class", base, 0xffffff, ACCEL_CLASS, &cls)) < 0 ||
	    (rc = get_u(c, e, "count", base, STATE_MAX_ACCELS,
			ids && ids->kind == YNODE_SEQ ? ids->n : 1, &count)) < 0)
		return rc;
	if (a.vendor_id == 0x10de)
		return cc_fail(c, cc_lookup(e, "vendor_id"), base, "NVIDIA GPUs are devices:, "
			       "not accelerators:");
	a.device_id = (uint16_t)v;
	a.subsys_vendor_id = (uint16_t)sv;
	a.subsys_device_id = (uint16_t)sd;
	a.class_code = (uint32_t)cls;
	if ((n = cc_lookup(e, "numa_node"))) {
		cc_join_key(path, base, "numa_node");
		if ((rc = cc_get_int(c, n, path, -1, 1023, &numa)) < 0)
			return rc;
	}
	a.numa_node = (int)numa;
	a.root = numa_root(s, a.numa_node);
	for (uint64_t k = 0; k < count; k++) {
		if (s->num_accels == STATE_MAX_ACCELS)
			return cc_fail(c, e, base, "more than %d accelerators", STATE_MAX_ACCELS);
		if (ids && ids->kind == YNODE_SEQ && k < ids->n) {
			char key[KEY_PATH_MAX];

			cc_join_key(key, base, "bus_ids");
			cc_join_index(path, key, (size_t)k);
			if ((rc = cc_get_bdf(c, ids->kids[k], path, a.bus_id, sizeof(a.bus_id))) < 0)
				return rc;
		} else
			snprintf(a.bus_id, sizeof(a.bus_id), "0000:%02x:00.0",
				 ACCEL_AUTO_BUS + s->num_accels);
		s->accels[s->num_accels++] = a;
	}
	return 0;
}

int compile_accel(struct cctx *c, const struct ynode *root, struct state *s)
{
	const struct ynode *list = cc_lookup(root, "accelerators");
	char base[KEY_PATH_MAX];
	int rc;

	s->num_accels = 0;
	if (!list || ytree_is_null(list))
		return 0;
	if (list->kind != YNODE_SEQ)
		return cc_fail(c, list, "accelerators", "expected a list");
	for (size_t i = 0; i < list->n; i++) {
		cc_join_index(base, "accelerators", i);
		if ((rc = one(c, list->kids[i], base, s)) < 0)
			return rc;
	}
	return 0;
}
