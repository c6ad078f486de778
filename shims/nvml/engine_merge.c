/* Mock NVML engine: the overrides document (NVML.md §5) applied with the
 * overrides module's merge, and its 1 s reload (which also looks for a new
 * config.yaml, engine_image.c).  The boot merge of a devices[] entry over
 * device_defaults (§4) is nvimage/nvimage_merge.c's, shared with the image
 * compiler. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_internal.h"

bool eng_overrides_valid(const struct yl_node *doc, char *why, size_t size)
{
	/* The engine's reading: the shape and DeviceConfig's keys in each
	 * scope; values are read leniently, field by field. */
	static const struct ovr_rules engine = { .level = OVR_KEYS };

	return yl_is_null(doc) || ovr_validate(doc, &engine, why, size) == 0;
}

/* Put the boot values of the non-reloadable keys back. */
static int freeze(struct yl_node *n, const struct yl_node *base)
{
	for (size_t i = 0; ovr_frozen[i]; i++) {
		const struct yl_node *v = yl_path(base, ovr_frozen[i]), *cur;
		struct yl_node *c;

		if (!v)
			ovr_remove(n, ovr_frozen[i]);
		else if ((cur = yl_path(n, ovr_frozen[i])) && cur->kind == v->kind &&
			 cur->quoted == v->quoted && yl_equal(v, cur))
			continue;	/* untouched by the overrides: nothing to copy */
		else if (!(c = yl_clone(v)) || ovr_set(n, ovr_frozen[i], c) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* An overrides scope that ovr_merge would leave as it is. */
static bool inert(const struct yl_node *scope)
{
	return yl_is_null(scope) || scope->kind != YL_MAP || scope->n == 0;
}

/* Nothing in the overrides (ovr_apply's scopes for this device) nor in
 * the device state (eng_state_overlay's fields) changes d's base tree:
 * then the effective tree is the base itself, not a copy. */
static bool eff_is_base(const struct mdev *d)
{
	const struct yl_node *devs = yl_get(eng.overrides, "devices");
	unsigned idx;

	if (!inert(yl_get(eng.overrides, "all")) || d->st.set || d->st.ngi)
		return false;
	for (size_t i = 0; devs && devs->kind == YL_MAP && i < devs->n; i++)
		if (ovr_device_key(devs->kids[i]->key, &idx) && idx == d->prof_index &&
		    !inert(devs->kids[i]))
			return false;
	return true;
}

void eng_free_eff(struct mdev *d)
{
	if (d->eff != d->base)
		yl_free(d->eff);
	d->eff = NULL;
}

int eng_rebuild_device(struct mdev *d)
{
	struct yl_node *n;
	bool changed;

	if (eff_is_base(d)) {
		n = d->base;
	} else {
		if (!(n = yl_clone(d->base)))
			return -ENOMEM;
		if (ovr_apply(n, eng.overrides, d->prof_index) < 0 || freeze(n, d->base) < 0 ||
		    eng_state_overlay(d, n) < 0)
			goto err;
	}
	changed = !d->eff || !yl_equal(yl_get(d->eff, "failure"), yl_get(n, "failure"));
	/* mdev_str hands out interned copies, so the old tree can go now. */
	eng_free_eff(d);
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

/* Reads the overrides document when it changed (or when forced); true when
 * eng.overrides was replaced, so the devices need rebuilding. */
bool eng_overrides_reload(bool force)
{
	struct eng_file_id id = { 0 };
	struct yl_node *doc = NULL;
	double now = eng_now();
	struct stat st;
	char why[256];
	bool missing = false;

	if (!force && now - eng.overrides_checked < ENG_TTL_S)
		return false;
	eng.overrides_checked = now;
	if (!force)
		eng_config_reload();	/* a new config.yaml rebuilds the devices itself */
	if (stat(eng.overrides_path, &st) == 0) {
		id = (struct eng_file_id){ true, st.st_dev, st.st_ino, st.st_size, st.st_mtim };
	} else if (errno != ENOENT) {
		eng_debug("%s: %s (keeping the previous overrides)", eng.overrides_path,
			  strerror(errno));
		return false;
	}
	if (!force && same_file(&id, &eng.overrides_id))
		return false;
	eng.overrides_id = id;
	if (id.present) {
		doc = eng_load_yaml(eng.overrides_path, &missing);
		if (!doc && !missing) {
			eng_debug("%s: ignored (keeping the previous overrides)", eng.overrides_path);
			return false;
		}
		if (doc && !eng_overrides_valid(doc, why, sizeof(why))) {
			eng_debug("%s:%s: ignored (keeping the previous overrides)",
				  eng.overrides_path, why);
			yl_free(doc);
			return false;
		}
	}
	yl_free(eng.overrides);
	eng.overrides = doc;
	return true;
}

void eng_overrides_refresh(bool force)
{
	if (!eng_overrides_reload(force))
		return;
	for (unsigned i = 0; i < eng.ndev; i++)
		if (eng_rebuild_device(&eng_devs[i]) < 0)
			eng_debug("device %u: out of memory rebuilding its configuration", i);
}
