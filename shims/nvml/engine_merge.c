/* Mock NVML engine: the boot merge of a devices[] entry over
 * device_defaults (the reference's field rules, NVML.md §4), the deep
 * merge of the overrides document (§5), and its 1 s reload. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_internal.h"

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
/* Not hot-reloadable: the overrides never change these. */
static const char *const frozen[] = {
	"name", "architecture", "brand", "compute_capability", "bar1_memory",
};
/* DeviceConfig's keys (profile/compile_schema.c device_config_f): the
 * overrides document may only name these under all and devices. */
static const char *const device_config_keys[] = {
	"name", "brand", "serial", "board_part_number", "vbios_version", "architecture",
	"compute_capability", "num_gpu_cores", "inforom", "memory", "bar1_memory", "pci",
	"pcie", "power", "thermal", "fan", "clocks", "clocks_throttle_reasons",
	"supported_clocks", "performance_state", "utilization", "encoder_stats",
	"fbc_stats", "ecc", "retired_pages", "remapped_rows", "display",
	"persistence_mode", "compute_mode", "mig", "gpu_operation_mode", "driver_model",
	"accounting", "virtualization", "gsp_firmware", "features", "grace_superchip",
	"cpu", "topology", "processes", "dynamic_metrics", "gpm", "failure", "fabric",
	"nvlink_error", "platform",
};

static bool in(const char *const *set, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(set[i], s))
			return true;
	return false;
}

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

struct yl_node *eng_boot_merge(const struct yl_node *defaults, const struct yl_node *entry)
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

int eng_deep_merge(struct yl_node *dst, const struct yl_node *src)
{
	if (yl_is_null(src) || src->kind != YL_MAP || dst->kind != YL_MAP)
		return 0;
	for (size_t i = 0; i < src->n; i++) {
		const struct yl_node *s = src->kids[i];
		struct yl_node *d = yl_get(dst, s->key);
		int rc;

		if (d && d->kind == YL_MAP && s->kind == YL_MAP)
			rc = eng_deep_merge(d, s);
		else	/* scalars, lists and null replace */
			rc = set_clone(dst, s->key, s);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool check_subtree(const struct yl_node *n, const char *where, char *why, size_t size)
{
	if (yl_is_null(n))
		return true;
	if (n->kind != YL_MAP) {
		snprintf(why, size, "%u:%u: %s: expected a mapping", n->line, n->col, where);
		return false;
	}
	for (size_t i = 0; i < n->n; i++) {
		if (!in(device_config_keys, N(device_config_keys), n->kids[i]->key)) {
			snprintf(why, size, "%u:%u: %s.%.60s: unknown field", n->kids[i]->line,
				 n->kids[i]->col, where, n->kids[i]->key);
			return false;
		}
	}
	return true;
}

/* "<index>" keys of overrides.devices: decimal, no sign, no junk. */
static bool device_key(const char *k, unsigned *index)
{
	unsigned long v = 0;

	if (!*k || strspn(k, "0123456789") != strlen(k) || strlen(k) > 4)
		return false;
	sscanf(k, "%lu", &v);
	*index = (unsigned)v;
	return true;
}

bool eng_overrides_valid(const struct yl_node *doc, char *why, size_t size)
{
	if (yl_is_null(doc))
		return true;
	if (doc->kind != YL_MAP) {
		snprintf(why, size, "%u:%u: expected a mapping", doc->line, doc->col);
		return false;
	}
	for (size_t i = 0; i < doc->n; i++) {
		const struct yl_node *v = doc->kids[i];
		uint64_t ver;
		unsigned idx;

		if (!strcmp(v->key, "version")) {
			if (!yl_u64(v, &ver) || ver != 1) {
				snprintf(why, size, "%u:%u: version: want 1", v->line, v->col);
				return false;
			}
		} else if (!strcmp(v->key, "all")) {
			if (!check_subtree(v, "all", why, size))
				return false;
		} else if (!strcmp(v->key, "devices")) {
			if (!yl_is_null(v) && v->kind != YL_MAP) {
				snprintf(why, size, "%u:%u: devices: expected a mapping", v->line, v->col);
				return false;
			}
			for (size_t j = 0; !yl_is_null(v) && j < v->n; j++) {
				char where[32];

				if (!device_key(v->kids[j]->key, &idx)) {
					snprintf(why, size, "%u:%u: devices: key '%.20s' is not an index",
						 v->kids[j]->line, v->kids[j]->col, v->kids[j]->key);
					return false;
				}
				snprintf(where, sizeof(where), "devices.%u", idx);
				if (!check_subtree(v->kids[j], where, why, size))
					return false;
			}
		} else {
			snprintf(why, size, "%u:%u: %.60s: unknown field", v->line, v->col, v->key);
			return false;
		}
	}
	return true;
}

/* Put the boot values of the non-reloadable keys back. */
static int freeze(struct yl_node *n, const struct yl_node *base)
{
	const struct yl_node *bus = yl_path(base, "pci.bus_id");
	struct yl_node *pci;

	for (size_t i = 0; i < N(frozen); i++) {
		const struct yl_node *v = yl_get(base, frozen[i]);

		if (!v)
			yl_map_remove(n, frozen[i]);
		else if (set_clone(n, frozen[i], v) < 0)
			return -ENOMEM;
	}
	if (!bus) {
		yl_map_remove(yl_get(n, "pci"), "bus_id");
		return 0;
	}
	pci = ensure_map(n, "pci");
	return pci ? set_clone(pci, "bus_id", bus) : -ENOMEM;
}

int eng_rebuild_device(struct mdev *d)
{
	const struct yl_node *devs = yl_get(eng.overrides, "devices");
	struct yl_node *n = yl_clone(d->base);
	bool changed;
	unsigned idx;

	if (!n)
		return -ENOMEM;
	if (eng_deep_merge(n, yl_get(eng.overrides, "all")) < 0)
		goto err;
	for (size_t j = 0; devs && j < devs->n; j++)
		if (device_key(devs->kids[j]->key, &idx) && idx == d->prof_index &&
		    eng_deep_merge(n, devs->kids[j]) < 0)
			goto err;
	if (freeze(n, d->base) < 0)
		goto err;
	changed = !d->eff || !yl_equal(yl_get(d->eff, "failure"), yl_get(n, "failure"));
	/* mdev_str hands out interned copies, so the old tree can go now. */
	yl_free(d->eff);
	d->eff = n;
	if (changed)
		eng_fault_configure(d, true);
	return 0;
err:
	yl_free(n);
	return -ENOMEM;
}

static bool same_file(const struct eng_file_id *a, const struct eng_file_id *b)
{
	return a->present == b->present && (!a->present ||
		(a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
		 a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec));
}

void eng_overrides_refresh(bool force)
{
	struct eng_file_id id = { 0 };
	struct yl_node *doc = NULL;
	double now = eng_now();
	struct stat st;
	char why[256];
	bool missing = false;

	if (!force && now - eng.overrides_checked < ENG_TTL_S)
		return;
	eng.overrides_checked = now;
	if (stat(eng.overrides_path, &st) == 0) {
		id = (struct eng_file_id){ true, st.st_dev, st.st_ino, st.st_size, st.st_mtim };
	} else if (errno != ENOENT) {
		eng_debug("%s: %s (keeping the previous overrides)", eng.overrides_path,
			  strerror(errno));
		return;
	}
	if (!force && same_file(&id, &eng.overrides_id))
		return;
	eng.overrides_id = id;
	if (id.present) {
		doc = eng_load_yaml(eng.overrides_path, &missing);
		if (!doc && !missing) {
			eng_debug("%s: ignored (keeping the previous overrides)", eng.overrides_path);
			return;
		}
		if (doc && !eng_overrides_valid(doc, why, sizeof(why))) {
			eng_debug("%s:%s: ignored (keeping the previous overrides)",
				  eng.overrides_path, why);
			yl_free(doc);
			return;
		}
	}
	yl_free(eng.overrides);
	eng.overrides = doc;
	for (unsigned i = 0; i < eng.ndev; i++)
		if (eng_rebuild_device(&eng_devs[i]) < 0)
			eng_debug("device %u: out of memory rebuilding its configuration", i);
}
