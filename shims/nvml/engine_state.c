/* The engine's side of the shared device state store (devstate/): where it
 * is, reloading every GPU's document when the store's counter moved (one
 * atomic load per call when nothing did), the read-modify-write behind
 * every setter, and the overlay of a document on a device's effective
 * tree, so every getter (ours and the other api_*.c files') reports what
 * a setter stored.
 *
 * The store: $MOCK_NVML_STATE_DIR, else state/ beside the engine config
 * (R/driver/config/state), so a container that mounts the config
 * directory shares the node's state. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

int eng_state_locate(void)
{
	const char *v = getenv("MOCK_NVML_STATE_DIR");
	char dir[PATH_MAX];
	char *slash;
	int n;

	eng.store.dirfd = eng.store.lockfd = -1;
	eng.state_checked = -1e9;
	if (v && *v) {
		n = snprintf(eng.state_dir, sizeof(eng.state_dir), "%s", v);
	} else {
		snprintf(dir, sizeof(dir), "%s", eng.config_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		n = snprintf(eng.state_dir, sizeof(eng.state_dir), "%s/state", dir);
	}
	return n > 0 && (size_t)n < sizeof(eng.state_dir) ? 0 : -ENAMETOOLONG;
}

void eng_state_close(void)
{
	ds_close(&eng.store);
}

static void reload_all(void)
{
	static struct ds_gpu g;

	eng.state_gen++;
	for (unsigned i = 0; i < eng.ndev; i++) {
		struct mdev *d = &eng_devs[i];
		int r = ds_load(&eng.store, d->uuid, &g);

		if (r < 0 && r != -ENOENT)
			eng_debug("%s/%s.state: unreadable (%s), read as empty", eng.state_dir,
				  d->uuid, strerror(-r));
		if (!memcmp(&g, &d->st, sizeof(g)))
			continue;	/* this GPU's document did not change: its tree stands */
		d->st = g;
		if (eng_rebuild_device(d) < 0)
			eng_debug("device %u: out of memory rebuilding its configuration", i);
	}
}

/* Under eng_lock.  A store that does not exist yet is looked for again at
 * most once per ENG_TTL_S (a writer in this process opens it at once). */
void eng_state_refresh(void)
{
	uint64_t seq;

	if (!ds_is_open(&eng.store)) {
		double now = eng_now();

		if (now - eng.state_checked < ENG_TTL_S)
			return;
		eng.state_checked = now;
		if (ds_open(&eng.store, eng.state_dir, false) < 0)
			return;
		eng.state_loaded = false;
	}
	seq = ds_seq(&eng.store);
	if (eng.state_loaded && seq == eng.state_seq)
		return;
	eng.state_seq = seq;
	eng.state_loaded = true;
	reload_all();
}

const char *engine_state_dir(void)
{
	return eng.state_dir;
}

int mdev_state_get(struct mdev *d, struct ds_gpu *out)
{
	int rc = ENG_SUCCESS;

	eng_lock();
	if (!eng.refs)
		rc = ENG_ERROR_UNINITIALIZED;
	else if (!eng_dev_ready(d))
		rc = ENG_ERROR_INVALID_ARGUMENT;
	else
		*out = (d->parent ? d->parent : d)->st;
	eng_unlock();
	return rc;
}

const struct mig_board *mdev_mig_board(struct mdev *d)
{
	return d->parent ? d->parent->board : d->board;
}

static int store_for_write(void)
{
	int r;

	if (ds_is_open(&eng.store))
		return 0;
	r = ds_open(&eng.store, eng.state_dir, true);
	if (r < 0) {
		eng_debug("%s: cannot open the device state store: %s", eng.state_dir,
			  strerror(-r));
		return r == -EACCES || r == -EPERM || r == -EROFS ? ENG_ERROR_NO_PERMISSION
								   : ENG_ERROR_UNKNOWN;
	}
	eng.state_loaded = false;
	return 0;
}

int mdev_state_update(struct mdev *d, mdev_update_fn fn, void *arg)
{
	struct ds_gpu g;
	int rc, r;

	eng_lock();
	if (!eng.refs) {
		rc = ENG_ERROR_UNINITIALIZED;
		goto out;
	}
	if (!eng_dev_ready(d) || d->parent) {
		rc = ENG_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	if ((rc = store_for_write()))
		goto out;
	if ((r = ds_lock(&eng.store)) < 0) {
		rc = r == -EBADF ? ENG_ERROR_NO_PERMISSION : ENG_ERROR_UNKNOWN;
		goto out;
	}
	r = ds_load(&eng.store, d->uuid, &g);	/* fresh: another process may have written */
	if (r < 0 && r != -ENOENT)
		eng_debug("%s: unreadable state document (%s), starting empty", d->uuid,
			  strerror(-r));
	rc = fn(d, &g, arg);
	if (rc == ENG_SUCCESS && (r = ds_save(&eng.store, d->uuid, &g)) < 0) {
		eng_debug("%s: saving its state: %s", d->uuid, strerror(-r));
		rc = r == -EACCES || r == -EPERM || r == -EROFS ? ENG_ERROR_NO_PERMISSION
								 : ENG_ERROR_UNKNOWN;
	}
	ds_unlock(&eng.store);
	eng_state_refresh();
out:
	eng_unlock();
	return rc;
}

/* ---- the overlay ---------------------------------------------------- */

static int put(struct yl_node *tree, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int put(struct yl_node *tree, const char *path, const char *fmt, ...)
{
	char text[64];
	struct yl_node *v;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!(v = yl_new_scalar(text)))
		return -ENOMEM;
	if (ovr_set(tree, path, v) < 0) {
		yl_free(v);
		return -ENOMEM;
	}
	return 0;
}

static const char *onoff(unsigned v)
{
	return v ? "enabled" : "disabled";
}

static const char *const compute_mode_names[] = {
	"default", "exclusive_thread", "prohibited", "exclusive_process",
};

/* Locked clocks hold the current clock inside [min, max]. */
static int clamp_clock(struct yl_node *tree, const char *path, uint32_t lo, uint32_t hi)
{
	uint64_t v;

	if (!yl_u64(yl_path(tree, path), &v))
		return 0;
	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	return put(tree, path, "%llu", (unsigned long long)v);
}

/* MIG instances take their memory from the parent's free memory. */
static int mig_memory(struct mdev *d, struct yl_node *tree)
{
	uint64_t total = 0, reserved = 0, used = 0, mib = 0;

	for (unsigned i = 0; i < d->st.ngi; i++)
		mib += eng_gi_mem_mib(d, &d->st.gi[i]);
	if (!mib || !yl_u64(yl_path(tree, "memory.total_bytes"), &total))
		return 0;
	yl_u64(yl_path(tree, "memory.reserved_bytes"), &reserved);
	yl_u64(yl_path(tree, "memory.used_bytes"), &used);
	used += mib << 20;
	if (used + reserved > total)
		used = total > reserved ? total - reserved : 0;
	if (put(tree, "memory.used_bytes", "%llu", (unsigned long long)used) < 0)
		return -ENOMEM;
	return put(tree, "memory.free_bytes", "%llu",
		   (unsigned long long)(total - reserved - used));
}

int eng_state_overlay(struct mdev *d, struct yl_node *tree)
{
	const struct ds_gpu *g = &d->st;
	int r = 0;

	if (g->set & DS_PM)
		r |= put(tree, "persistence_mode", "%s", onoff(g->pm));
	if (g->set & DS_CM)
		r |= put(tree, "compute_mode", "%s", compute_mode_names[g->cm & 3]);
	if (g->set & DS_PL) {
		r |= put(tree, "power.limit_mw", "%u", g->pl_mw);
		r |= put(tree, "power.enforced_limit_mw", "%u", g->pl_mw);
	}
	if (g->set & DS_AC) {
		r |= put(tree, "clocks.memory_app", "%u", g->ac_mem);
		r |= put(tree, "clocks.graphics_app", "%u", g->ac_gr);
		r |= put(tree, "clocks.sm_app", "%u", g->ac_gr);
	}
	if (g->set & DS_LGC) {
		r |= clamp_clock(tree, "clocks.graphics_current", g->lgc_min, g->lgc_max);
		r |= clamp_clock(tree, "clocks.sm_current", g->lgc_min, g->lgc_max);
	}
	if (g->set & DS_LMC)
		r |= clamp_clock(tree, "clocks.memory_current", g->lmc_min, g->lmc_max);
	if (g->set & DS_ECC) {
		r |= put(tree, "ecc.mode_current", "%s", onoff(g->ecc_cur));
		r |= put(tree, "ecc.mode_pending", "%s", onoff(g->ecc_pend));
	}
	if (g->set & DS_MIG) {
		r |= put(tree, "mig.mode_current", "%s", onoff(g->mig_cur));
		r |= put(tree, "mig.mode_pending", "%s", onoff(g->mig_pend));
	}
	if (g->set & DS_ACCT)
		r |= put(tree, "accounting.mode", "%s", onoff(g->acct));
	if (g->set & DS_BOOST)
		r |= put(tree, "clocks.auto_boost", "%s", onoff(g->boost));
	if (g->ngi)
		r |= mig_memory(d, tree);
	return r ? -ENOMEM : 0;
}
