/* Mock NVML engine: where the profile comes from, and its live reload.
 *
 * Init reads config.yaml (its bytes name it) and the compiled image
 * beside it (nvimage/, written by mokka-worker-gpudriver); when the image
 * is valid and was compiled from exactly these bytes, the profile and
 * every device's boot-merged base come ready from it, so no process
 * parses YAML or merges trees.  Otherwise (no image: an older root, a
 * hand-written config.yaml, a bad or foreign image) the bytes are parsed
 * and merged here, as before.
 *
 * Live (issue 14): at the overrides' once-a-second check, a config.yaml
 * with another identity (stat) and other bytes replaces each device's
 * base and the profile's top level, so a client that stays initialised
 * sees new power limits, failures or telemetry at its next call.  What
 * names a device (enumeration, UUID, bus id, minor, MIG geometry) stays as
 * init found it, as a real driver's does until the node restarts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_internal.h"
#include "fileio/fileio.h"
#include "nvimage/nvimage.h"

static void file_id(const char *path, struct eng_file_id *id)
{
	struct stat st;

	*id = (struct eng_file_id){ 0 };
	if (stat(path, &st) == 0)
		*id = (struct eng_file_id){ true, st.st_dev, st.st_ino, st.st_size, st.st_mtim };
}

static bool same_id(const struct eng_file_id *a, const struct eng_file_id *b)
{
	return a->present == b->present && (!a->present ||
		(a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
		 a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec));
}

/* Every tree of the image beside config.yaml, when it was compiled from
 * src and is valid throughout (else none: parse). */
static void image_open(const char *src, size_t len)
{
	char path[PATH_MAX], why[200], *buf;
	const char *slash = strrchr(eng.config_path, '/');
	int n = slash ? snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - eng.config_path),
				 eng.config_path, NVI_NAME)
		      : snprintf(path, sizeof(path), "%s", NVI_NAME);
	struct nvi img;
	size_t ilen;
	int r;

	if (n < 0 || (size_t)n >= sizeof(path))
		return;
	r = fileio_read(path, NVI_MAX_SIZE, &buf, &ilen, why, sizeof(why));
	if (r == -ENOENT)
		return;	/* an older root or a hand-made config: parse */
	if (r < 0) {
		eng_debug("%s (parsing %s instead)", why, eng.config_path);
		return;
	}
	if ((r = nvi_open(&img, buf, ilen, why, sizeof(why))) == 0 && !nvi_matches(&img, src, len))
		r = -ESTALE;
	if (r == 0 && !(eng.trees = calloc(nvi_tree_count(&img), sizeof(*eng.trees))))
		r = -ENOMEM;
	for (size_t k = 0; r == 0 && k < nvi_tree_count(&img); k++, eng.ntrees = k)
		r = nvi_tree(&img, k, &eng.trees[k], why, sizeof(why));
	if (r < 0) {
		eng_debug("%s: %s; parsing %s instead", path,
			  r == -ESTALE ? "compiled from other bytes than" : r == -ENOMEM ?
			  "out of memory" : why, eng.config_path);
		eng_image_drop();
	} else {
		eng_debug("%s: %zu trees, compiled from %s as it is", path, eng.ntrees,
			  eng.config_path);
	}
	nvi_close(&img);
	free(buf);
}

/* eng.profile (and eng.trees when the image serves) from config.yaml now. */
int eng_profile_load(void)
{
	struct yl_error err;
	char *buf, why[300];
	size_t len;
	int r;

	file_id(eng.config_path, &eng.config_id);
	r = fileio_read(eng.config_path, YL_MAX_INPUT, &buf, &len, why, sizeof(why));
	if (r < 0) {
		eng_debug("%s", why);
		return ENG_ERROR_DRIVER_NOT_LOADED;
	}
	eng.config_hash = nvi_hash(buf, len);
	eng.config_size = len;
	image_open(buf, len);
	if (eng.trees) {
		eng.profile = eng.trees[0];
		eng.trees[0] = NULL;
	} else if (!(eng.profile = yl_parse(buf, len, &err))) {
		yl_error_format(&err, why, sizeof(why));
		eng_debug("%s:%s", eng.config_path, why);
	}
	free(buf);
	return eng.profile ? ENG_SUCCESS : ENG_ERROR_DRIVER_NOT_LOADED;
}

int eng_device_base(size_t pos, struct yl_node **out)
{
	*out = NULL;
	if (eng.trees && pos + 1 < eng.ntrees) {	/* each base is handed out once */
		*out = eng.trees[pos + 1];
		eng.trees[pos + 1] = NULL;
	}
	if (!*out)
		return nvi_device_base(eng.profile, pos, out);
	return 0;
}

void eng_image_drop(void)
{
	for (size_t k = 0; eng.trees && k < eng.ntrees; k++)
		yl_free(eng.trees[k]);
	free(eng.trees);
	eng.trees = NULL;
	eng.ntrees = 0;
}

/* devices[] position of the entry whose index is idx (devices without an
 * index are keyed by position, as eng_build_devices keys them). */
static bool entry_pos(const struct yl_node *profile, unsigned idx, size_t *pos)
{
	const struct yl_node *list = yl_get(profile, "devices");
	uint64_t v;

	for (size_t i = 0; list && list->kind == YL_SEQ && i < list->n; i++) {
		if (list->kids[i]->kind != YL_MAP)
			continue;
		if (!yl_u64(yl_get(list->kids[i], "index"), &v))
			v = i;
		if (v == idx) {
			*pos = i;
			return true;
		}
	}
	return false;
}

/* A new base for d; its effective tree is rebuilt over it (the fault
 * state survives when its failure block did not change). */
static void swap_base(struct mdev *d, struct yl_node *base)
{
	struct yl_node *old = d->base;

	d->base = base;
	if (d->eff != old)
		yl_free(old);	/* else eng_rebuild_device frees it with the old eff */
	if (eng_rebuild_device(d) < 0)
		eng_debug("device %u: out of memory rebuilding its configuration", d->index);
}

static void apply_new(struct yl_node *old_profile)
{
	for (unsigned i = 0; i < eng.ndev; i++) {
		struct yl_node *base = NULL;
		size_t pos;

		if (!entry_pos(eng.profile, eng_devs[i].prof_index, &pos) ||
		    eng_device_base(pos, &base) < 0 || !base) {
			eng_debug("device %u: not in the new %s (keeping its configuration)",
				  i, eng.config_path);
			continue;
		}
		swap_base(&eng_devs[i], base);
	}
	yl_free(old_profile);
	if (eng_topology_overlay() < 0)
		eng_debug("out of memory applying the topology to the new configuration");
	eng.state_gen++;	/* MIG devices rebuild over their GPU's new tree */
}

/* Under eng_lock, at the overrides' check (ENG_TTL_S). */
void eng_config_reload(void)
{
	struct eng_file_id id;
	struct yl_node *old = eng.profile;
	uint64_t old_hash = eng.config_hash;
	size_t old_size = eng.config_size;

	file_id(eng.config_path, &id);
	if (same_id(&id, &eng.config_id))
		return;
	eng.profile = NULL;
	if (eng_profile_load() != ENG_SUCCESS || eng.profile->kind != YL_MAP) {
		eng_debug("%s: unreadable or no profile (keeping the previous one)",
			  eng.config_path);
		yl_free(eng.profile);
		eng_image_drop();
		eng.profile = old;
		eng.config_hash = old_hash;
		eng.config_size = old_size;
		return;	/* config_id moved on: not read again until it changes */
	}
	if (eng.config_hash == old_hash && eng.config_size == old_size) {
		yl_free(eng.profile);	/* the same bytes (touched, or re-staged) */
		eng.profile = old;
	} else {
		eng_debug("%s: changed; %u device(s) reconfigured", eng.config_path, eng.ndev);
		apply_new(old);
	}
	eng_image_drop();
}
