/* nvimage: the boot merge of a devices[] entry over device_defaults (the
 * reference's field rules, NVML.md §4), shared by the library (parsing
 * fallback) and the image compiler so both build the same trees, and the
 * image's hash.  libc only (compiled into the glibc-only mock NVML). */
#include <errno.h>
#include <string.h>

#include "nvimage/nvimage.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Copied from the entry when non-empty. */
static const char *const boot_scalars[] = {
	"name", "serial", "brand", "board_part_number", "vbios_version", "architecture",
};
/* Merged field by field (a zero field keeps the default). */
static const char *const boot_fields[] = { "pci", "platform" };
/* Replaced wholesale when the entry has them. */
static const char *const boot_blocks[] = {
	"memory", "bar1_memory", "power", "thermal", "clocks", "clocks_throttle_reasons",
	"utilization", "ecc", "dynamic_metrics", "failure", "fabric", "nvlink_error",
	"processes",
};

/* Go's zero value: unset, "", or a plain 0. */
static bool zero_value(const struct yl_node *n)
{
	uint64_t v;

	return yl_is_null(n) || (n->kind == YL_SCALAR &&
		(n->len == 0 || (!n->quoted && yl_u64(n, &v) && v == 0)));
}

static int set_clone(struct yl_node *map, const char *key, const struct yl_node *v)
{
	struct yl_node *c = yl_clone(v);

	if (!c || yl_map_set(map, key, c) < 0) {
		yl_free(c);
		return -ENOMEM;
	}
	return 0;
}

/* map[key] as a mapping, replacing whatever else is there. */
static struct yl_node *ensure_map(struct yl_node *map, const char *key)
{
	struct yl_node *m = yl_get(map, key);

	if (m && m->kind == YL_MAP)
		return m;
	m = yl_new(YL_MAP);
	if (!m || yl_map_set(map, key, m) < 0) {
		yl_free(m);
		return NULL;
	}
	return m;
}

static struct yl_node *boot_merge(const struct yl_node *defaults, const struct yl_node *entry)
{
	struct yl_node *r = defaults ? yl_clone(defaults) : yl_new(YL_MAP);

	for (size_t i = 0; r && i < N(boot_scalars); i++) {
		const struct yl_node *v = yl_get(entry, boot_scalars[i]);

		if (v && v->kind == YL_SCALAR && v->len && set_clone(r, boot_scalars[i], v) < 0)
			goto err;
	}
	for (size_t i = 0; r && i < N(boot_fields); i++) {
		const struct yl_node *src = yl_get(entry, boot_fields[i]);
		struct yl_node *dst;

		if (!src || src->kind != YL_MAP)
			continue;
		if (!(dst = ensure_map(r, boot_fields[i])))
			goto err;
		for (size_t j = 0; j < src->n; j++)
			if (!zero_value(src->kids[j]) &&
			    set_clone(dst, src->kids[j]->key, src->kids[j]) < 0)
				goto err;
	}
	for (size_t i = 0; r && i < N(boot_blocks); i++) {
		const struct yl_node *v = yl_get(entry, boot_blocks[i]);

		if (!yl_is_null(v) && set_clone(r, boot_blocks[i], v) < 0)
			goto err;
	}
	return r;
err:
	yl_free(r);
	return NULL;
}

int nvi_device_base(const struct yl_node *profile, size_t pos, struct yl_node **out)
{
	const struct yl_node *defaults = yl_get(profile, "device_defaults");
	const struct yl_node *e = yl_at(yl_get(profile, "devices"), pos);

	*out = NULL;
	if (!e || e->kind != YL_MAP)
		return 0;
	if (defaults && defaults->kind != YL_MAP)
		defaults = NULL;
	*out = boot_merge(defaults, e);
	return *out ? 0 : -ENOMEM;
}

/* Eight bytes a step: the library hashes config.yaml and checks the
 * image at every init, so this is on the init path. */
uint64_t nvi_hash(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0x6d6f6b6b616e7669ull ^ (len * 0x9e3779b97f4a7c15ull), w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, p, len);
	h = (h ^ w ^ ((uint64_t)len << 56)) * 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}
