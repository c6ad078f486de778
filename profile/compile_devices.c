/* Profile compiler: devices[] entries merged over device_defaults, with
 * identity (index, minor, UUID), PCI, PCIe link and memory checks. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/compile_internal.h"

#define HEX "0123456789abcdefABCDEF"

/* Where a merged value came from, so errors name the right line. */
struct pick {
	const struct ynode *node;
	char path[KEY_PATH_MAX];
};

static bool zero_or_empty(const struct ynode *n)
{
	uint64_t v;

	return ytree_is_null(n) || (n->kind == YNODE_SCALAR &&
		(n->len == 0 || (ytree_uint(n, &v) == 0 && v == 0)));
}

/* Scalars and pci.* merge field by field: a set device value wins (the
 * reference cannot tell zero from unset, nor can we). */
static void pick_field(const struct ynode *dev, const char *dev_path,
		       const struct ynode *def, const char *key, struct pick *p)
{
	const struct ynode *v = cc_lookup(dev, key);

	if (zero_or_empty(v) && def) {
		v = cc_lookup(def, key);
		dev_path = "device_defaults";
	}
	p->node = v;
	cc_join_key(p->path, dev_path, key);
}

/* memory, bar1_memory, fabric... are replaced wholesale by a device block. */
static void pick_in_block(const struct ynode *dev, const char *dev_path,
			  const struct ynode *def, const char *block,
			  const char *key, struct pick *p)
{
	const struct ynode *b = cc_lookup(dev, block);
	char tmp[KEY_PATH_MAX];

	if (ytree_is_null(b)) {
		b = def ? cc_lookup(def, block) : NULL;
		dev_path = "device_defaults";
	}
	p->node = cc_lookup(b, key);
	cc_join_key(tmp, dev_path, block);
	cc_join_key(p->path, tmp, key);
}

static int device_pci(struct cctx *c, const struct ynode *dev, const char *dp,
		      const struct ynode *def, struct dev_build *b)
{
	struct pick p;
	uint64_t v = 0;
	int rc;

	pick_field(dev, dp, def, "pci.device_id", &p);
	if (!ytree_is_null(p.node) &&
	    (rc = cc_get_u64(c, p.node, p.path, UINT32_MAX, &v)) < 0)
		return rc;
	/* An absent id still names an NVIDIA function. */
	b->d.vendor_id = v ? (uint16_t)(v & 0xffff) : 0x10de;
	b->d.device_id = (uint16_t)(v >> 16);

	v = 0;
	pick_field(dev, dp, def, "pci.subsystem_id", &p);
	if (!ytree_is_null(p.node) &&
	    (rc = cc_get_u64(c, p.node, p.path, UINT32_MAX, &v)) < 0)
		return rc;
	b->d.subsys_vendor_id = (uint16_t)(v & 0xffff);
	if (!b->d.subsys_vendor_id)
		b->d.subsys_vendor_id = b->d.vendor_id;
	b->d.subsys_device_id = (uint16_t)(v >> 16);

	pick_field(dev, dp, def, "pci.bus_id", &p);
	b->bus = p.node;
	snprintf(b->bus_path, sizeof(b->bus_path), "%s", p.path);
	/* Every GPU sits on the PCI bus: workers key their files on it. */
	if (ytree_is_null(p.node))
		return cc_fail(c, dev, p.path, "missing (required, e.g. \"0000:1a:00.0\")");
	return cc_get_bdf(c, p.node, p.path, b->d.bus_id, sizeof(b->d.bus_id));
}

static bool valid_width(int64_t w)
{
	static const int widths[] = { 1, 2, 4, 8, 16, 32 };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (w == widths[i])
			return true;
	return false;
}

/* pcie is not merged per device (reference rule): defaults only. */
static int device_pcie(struct cctx *c, const struct ynode *def,
		       struct state_pcie_link *l)
{
	static const struct {
		const char *key;
		bool width;
		size_t off;
	} keys[] = {
		{ "max_link_gen", false, offsetof(struct state_pcie_link, max_gen) },
		{ "current_link_gen", false, offsetof(struct state_pcie_link, cur_gen) },
		{ "max_link_width", true, offsetof(struct state_pcie_link, max_width) },
		{ "current_link_width", true, offsetof(struct state_pcie_link, cur_width) },
	};
	const struct ynode *pcie = cc_lookup(def, "pcie");
	char path[KEY_PATH_MAX];
	int64_t v;
	int rc;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct ynode *n = cc_lookup(pcie, keys[i].key);

		if (ytree_is_null(n))
			continue;
		cc_join_key(path, "device_defaults.pcie", keys[i].key);
		rc = cc_get_int(c, n, path, 1, keys[i].width ? 32 : 6, &v);
		if (rc < 0)
			return rc;
		if (keys[i].width && !valid_width(v))
			return cc_fail(c, n, path, "invalid link width %lld (want 1, 2, 4, 8, 16 or 32)",
				       (long long)v);
		*(int *)((char *)l + keys[i].off) = (int)v;
	}
	if (!l->cur_gen)
		l->cur_gen = l->max_gen;
	if (!l->cur_width)
		l->cur_width = l->max_width;
	if (l->max_gen && l->cur_gen > l->max_gen)
		return cc_fail(c, cc_lookup(pcie, "current_link_gen"),
			       "device_defaults.pcie.current_link_gen",
			       "Gen%d exceeds max_link_gen Gen%d", l->cur_gen, l->max_gen);
	if (l->max_width && l->cur_width > l->max_width)
		return cc_fail(c, cc_lookup(pcie, "current_link_width"),
			       "device_defaults.pcie.current_link_width",
			       "x%d exceeds max_link_width x%d", l->cur_width, l->max_width);
	return 0;
}

static int device_memory(struct cctx *c, const struct ynode *dev, const char *dp,
			 const struct ynode *def, struct state_device *d)
{
	struct pick p;
	int rc;

	pick_in_block(dev, dp, def, "memory", "total_bytes", &p);
	if (!ytree_is_null(p.node)) {
		rc = cc_get_u64(c, p.node, p.path, UINT64_MAX, &d->memory_total_bytes);
		if (rc < 0)
			return rc;
		if (!d->memory_total_bytes)
			return cc_fail(c, p.node, p.path, "memory size must be greater than 0");
	}
	pick_in_block(dev, dp, def, "bar1_memory", "total_bytes", &p);
	if (ytree_is_null(p.node))
		return 0;
	return cc_get_u64(c, p.node, p.path, UINT64_MAX, &d->bar1_total_bytes);
}

static int device_strings(struct cctx *c, const struct ynode *dev, const char *dp,
			  const struct ynode *def, struct state_device *d)
{
	const struct {
		const char *key;
		char *buf;
		size_t size;
	} keys[] = {
		{ "name", d->name, sizeof(d->name) },
		{ "serial", d->serial, sizeof(d->serial) },
		{ "architecture", d->architecture, sizeof(d->architecture) },
	};
	struct pick p;
	int rc;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		pick_field(dev, dp, def, keys[i].key, &p);
		rc = cc_get_str(c, p.node, p.path, keys[i].buf, keys[i].size);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;	/* field separator */
}

/* A stable UUID from what identifies the board in the profile, so every
 * node compiling the same profile reports the same ids. */
static void default_uuid(struct state_device *d)
{
	char idx[32];
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };

	snprintf(idx, sizeof(idx), "%d:%04x:%04x", d->index, d->device_id,
		 d->vendor_id);
	for (int i = 0; i < 2; i++) {
		h[i] = fnv1a(h[i], d->name);
		h[i] = fnv1a(h[i], d->serial);
		h[i] = fnv1a(h[i], d->bus_id);
		h[i] = fnv1a(h[i], idx);
	}
	snprintf(d->uuid, sizeof(d->uuid), "GPU-%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(h[0] >> 32), (unsigned)(h[0] >> 16) & 0xffff,
		 (unsigned)h[0] & 0xffff, (unsigned)(h[1] >> 48),
		 (unsigned long long)(h[1] & 0xffffffffffffull));
}

static int device_identity(struct cctx *c, const struct ynode *dev, const char *dp,
			   size_t pos, struct state_device *d)
{
	char path[KEY_PATH_MAX];
	const struct ynode *n;
	int64_t v = (int64_t)pos;
	int rc;

	cc_join_key(path, dp, "index");
	n = cc_lookup(dev, "index");
	if (!ytree_is_null(n) &&
	    (rc = cc_get_int(c, n, path, 0, STATE_MAX_DEVICES - 1, &v)) < 0)
		return rc;
	d->index = (int)v;

	cc_join_key(path, dp, "minor_number");
	n = cc_lookup(dev, "minor_number");
	/* 255 is /dev/nvidiactl's minor. */
	if (!ytree_is_null(n) && (rc = cc_get_int(c, n, path, 0, 254, &v)) < 0)
		return rc;
	d->minor = (int)v;

	cc_join_key(path, dp, "uuid");
	n = cc_lookup(dev, "uuid");
	rc = cc_get_str(c, n, path, d->uuid, sizeof(d->uuid));
	if (rc < 0 || !d->uuid[0])
		return rc;
	if (strncmp(d->uuid, "GPU-", 4) || !d->uuid[4] || !cc_all_chars(d->uuid + 4, HEX "-") ||
	    !state_valid_path_component(d->uuid))
		return cc_fail(c, n, path, "invalid GPU UUID '%.64s' (want GPU-<hex digits and dashes>)",
			       d->uuid);
	return 0;
}

static int compile_device(struct cctx *c, const struct ynode *dev, size_t pos,
			  const struct ynode *def, struct dev_build *b)
{
	char dp[KEY_PATH_MAX];
	int rc;

	cc_join_index(dp, "devices", pos);
	b->entry = dev;
	if (dev->kind != YNODE_MAP)
		return cc_fail(c, dev, dp, "expected a mapping, got %s", cc_text(dev));
	if ((rc = device_identity(c, dev, dp, pos, &b->d)) < 0 ||
	    (rc = device_strings(c, dev, dp, def, &b->d)) < 0 ||
	    (rc = device_pci(c, dev, dp, def, b)) < 0 ||
	    (rc = device_pcie(c, def, &b->d.pcie)) < 0 ||
	    (rc = device_memory(c, dev, dp, def, &b->d)) < 0)
		return rc;
	b->d.numa_node = -1;
	b->d.root = -1;
	if (!b->d.uuid[0])
		default_uuid(&b->d);
	return 0;
}

static int by_index(const void *a, const void *b)
{
	return ((const struct dev_build *)a)->d.index -
	       ((const struct dev_build *)b)->d.index;
}

/* Pairwise uniqueness of index, minor, uuid and BDF (n <= 64). */
static int check_unique(struct cctx *c, const struct dev_build *b, int n)
{
	char path[KEY_PATH_MAX];

	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++) {
			const struct state_device *x = &b[i].d, *y = &b[j].d;

			if (x->index == y->index)
				return cc_fail(c, cc_lookup(b[i].entry, "index"), "devices.index",
					       "duplicate device index %d", x->index);
			if (x->minor == y->minor)
				return cc_fail(c, b[i].entry, "devices.minor_number",
					       "devices with index %d and %d share minor number %d",
					       y->index, x->index, x->minor);
			if (!strcmp(x->uuid, y->uuid)) {
				snprintf(path, sizeof(path), "devices(index %d).uuid", x->index);
				return cc_fail(c, cc_lookup(b[i].entry, "uuid"), path,
					       "duplicate UUID '%s'", x->uuid);
			}
			if (x->bus_id[0] && !strcmp(x->bus_id, y->bus_id))
				return cc_fail(c, b[i].bus, b[i].bus_path,
					       "duplicate PCI address '%s' (also used by the device with index %d)",
					       x->bus_id, y->index);
		}
	return 0;
}

int compile_devices(struct cctx *c, const struct ynode *root,
		    struct dev_build *b, int *count)
{
	const struct ynode *devs = cc_lookup(root, "devices");
	const struct ynode *def = cc_lookup(root, "device_defaults");
	int rc;

	if (ytree_is_null(devs) || devs->n == 0)
		return cc_fail(c, devs ? devs : root, "devices",
			       "at least one device is required");
	if (devs->n > STATE_MAX_DEVICES)
		return cc_fail(c, devs, "devices", "%zu devices listed, at most %d supported",
			       devs->n, STATE_MAX_DEVICES);
	if (ytree_is_null(def))
		def = NULL;
	for (size_t i = 0; i < devs->n; i++) {
		rc = compile_device(c, devs->kids[i], i, def, &b[i]);
		if (rc < 0)
			return rc;
	}
	*count = (int)devs->n;
	qsort(b, devs->n, sizeof(*b), by_index);
	return check_unique(c, b, *count);
}
