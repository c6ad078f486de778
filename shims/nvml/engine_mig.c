/* MIG devices and instance handles.  A MIG device (one compute instance)
 * is a struct mdev of its own, with the parent's tree plus its name,
 * memory and MIG- UUID, so every NVML getter works on its handle.  GPU and
 * compute instance handles are small static records keyed by (GPU, ids):
 * the same instance always has the same handle in a process, and a handle
 * whose instance another process destroyed stops validating. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

#define MIG_SLOTS (DS_MAX_GI * DS_MAX_CI)

struct eng_gi {
	struct mdev *dev;
	unsigned gi;
};

struct eng_ci {
	struct mdev *dev;
	unsigned gi, ci;
};

static struct eng_gi gi_handles[ENG_MAX_DEVICES][DS_MAX_GI];
static struct eng_ci ci_handles[ENG_MAX_DEVICES][DS_MAX_GI][DS_MAX_CI];
/* Any handle handed out since the last teardown: clearing the tables
 * touches every page of them, most processes never ask for one. */
static bool handles_used;

bool mdev_is_mig(const struct mdev *d)
{
	return d && d->parent;
}

struct mdev *mdev_parent(struct mdev *d)
{
	return d->parent ? d->parent : d;
}

unsigned mdev_gi_id(const struct mdev *d)
{
	return d->gi_id;
}

unsigned mdev_ci_id(const struct mdev *d)
{
	return d->ci_id;
}

bool eng_is_mig_handle(const void *h)
{
	uintptr_t p = (uintptr_t)h;

	for (unsigned i = 0; i < eng.ndev; i++) {
		uintptr_t b = (uintptr_t)eng_devs[i].migs;

		if (b && p >= b && p < b + MIG_SLOTS * sizeof(struct mdev))
			return (p - b) % sizeof(struct mdev) == 0 &&
			       ((const struct mdev *)h)->parent != NULL;
	}
	return false;
}

void eng_mig_teardown(void)
{
	for (unsigned i = 0; i < ENG_MAX_DEVICES; i++) {
		struct mdev *m = eng_devs[i].migs;

		for (unsigned j = 0; m && j < MIG_SLOTS; j++)
			yl_free(m[j].eff);
		free(m);
		eng_devs[i].migs = NULL;
	}
	if (!handles_used)
		return;
	memset(gi_handles, 0, sizeof(gi_handles));
	memset(ci_handles, 0, sizeof(ci_handles));
	handles_used = false;
}

uint64_t eng_gi_mem_mib(const struct mdev *d, const struct ds_gi *gi)
{
	const struct mig_gip *p = mig_gip_by_index(d->board, gi->profile);

	return p ? p->mem_mib : 0;
}

void engine_mig_uuid(const struct mdev *parent, unsigned gi, unsigned ci, uint32_t serial,
		     char *out, size_t size)
{
	ds_mig_uuid(parent->uuid, gi, ci, serial, out, size);
}

static int put(struct yl_node *t, const char *path, const char *text)
{
	struct yl_node *v = yl_new_scalar(text);

	if (!v || ovr_set(t, path, v) < 0) {
		yl_free(v);
		return -ENOMEM;
	}
	return 0;
}

/* The MIG device's tree: the parent's, with its own name and memory. */
static int build(struct mdev *m)
{
	struct mdev *p = m->parent;
	struct ds_gi *gi = ds_gi_find(&p->st, m->gi_id);
	struct ds_ci *ci = gi ? ds_ci_find(gi, m->ci_id) : NULL;
	const struct mig_gip *gp = gi ? mig_gip_by_index(p->board, gi->profile) : NULL;
	const char *pname = yl_text(yl_path(p->eff, "name"));
	struct mig_cip cp;
	struct yl_node *t;
	char buf[160];
	int r = 0;

	if (!ci || !gp || !p->st.mig_cur || !mig_cip_get(p->board, gp, ci->profile, &cp))
		return -ENOENT;
	if (!(t = yl_clone(p->eff)))
		return -ENOMEM;
	snprintf(buf, sizeof(buf), "%s MIG %s", pname ? pname : "NVIDIA", cp.name);
	r |= put(t, "name", buf);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)gp->mem_mib << 20);
	r |= put(t, "memory.total_bytes", buf);
	r |= put(t, "memory.free_bytes", buf);
	r |= put(t, "memory.used_bytes", "0");
	r |= put(t, "memory.reserved_bytes", "0");
	r |= put(t, "mig.mode_current", "disabled");
	r |= put(t, "mig.mode_pending", "disabled");
	if (r) {
		yl_free(t);
		return -ENOMEM;
	}
	engine_mig_uuid(p, m->gi_id, m->ci_id, ci->serial, m->uuid, sizeof(m->uuid));
	yl_free(m->eff);
	m->eff = t;
	m->built_gen = eng.state_gen;
	return 0;
}

bool eng_mig_ready(struct mdev *m)
{
	if (m->built_gen == eng.state_gen && m->eff)
		return true;
	yl_free(m->eff);
	m->eff = NULL;
	return build(m) == 0;
}

/* Under eng_lock. */
static struct mdev *mig_slot(struct mdev *p, unsigned gi, unsigned ci)
{
	struct mdev *m;

	if (gi >= DS_MAX_GI || ci >= DS_MAX_CI)
		return NULL;
	if (!p->migs && !(p->migs = calloc(MIG_SLOTS, sizeof(struct mdev))))
		return NULL;
	m = &p->migs[gi * DS_MAX_CI + ci];
	if (!m->parent) {
		m->parent = p;
		m->gi_id = gi, m->ci_id = ci;
		m->index = p->index, m->prof_index = p->prof_index, m->minor = p->minor;
		m->numa_node = p->numa_node;
		memcpy(m->bus_id, p->bus_id, sizeof(m->bus_id));
		memcpy(m->cpu_affinity, p->cpu_affinity, sizeof(m->cpu_affinity));
	}
	return m;
}

struct mdev *mdev_mig_device(struct mdev *parent, unsigned gi, unsigned ci)
{
	struct mdev *m = NULL;

	eng_lock();
	if (eng.refs && eng_dev_ready(parent) && !parent->parent) {
		m = mig_slot(parent, gi, ci);
		if (m && !eng_mig_ready(m))
			m = NULL;
	}
	eng_unlock();
	return m;
}

static int dev_slot(const struct mdev *d)
{
	ptrdiff_t i = d - eng_devs;

	return i >= 0 && i < ENG_MAX_DEVICES ? (int)i : -1;
}

void *engine_gi_handle(struct mdev *d, unsigned gi)
{
	int i = dev_slot(d);
	struct eng_gi *h;

	if (i < 0 || gi >= DS_MAX_GI)
		return NULL;
	h = &gi_handles[i][gi];
	h->dev = d, h->gi = gi;
	handles_used = true;
	return h;
}

void *engine_ci_handle(struct mdev *d, unsigned gi, unsigned ci)
{
	int i = dev_slot(d);
	struct eng_ci *h;

	if (i < 0 || gi >= DS_MAX_GI || ci >= DS_MAX_CI)
		return NULL;
	h = &ci_handles[i][gi][ci];
	h->dev = d, h->gi = gi, h->ci = ci;
	handles_used = true;
	return h;
}

/* The instance must exist now (state refreshed) on an enabled MIG GPU. */
static bool gi_exists(struct mdev *d, unsigned gi, struct ds_gi **out)
{
	struct ds_gi *g;

	if (!eng_dev_ready(d) || !d->st.mig_cur || !(g = ds_gi_find(&d->st, gi)))
		return false;
	if (out)
		*out = g;
	return true;
}

bool engine_gi_lookup(const void *h, struct mdev **d, unsigned *gi)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)gi_handles;
	const struct eng_gi *e = h;
	bool ok;

	if (p < b || p >= b + sizeof(gi_handles) || (p - b) % sizeof(struct eng_gi))
		return false;
	eng_lock();
	ok = eng.refs && e->dev && gi_exists(e->dev, e->gi, NULL);
	eng_unlock();
	if (ok)
		*d = e->dev, *gi = e->gi;
	return ok;
}

bool engine_ci_lookup(const void *h, struct mdev **d, unsigned *gi, unsigned *ci)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)ci_handles;
	const struct eng_ci *e = h;
	struct ds_gi *g;
	bool ok;

	if (p < b || p >= b + sizeof(ci_handles) || (p - b) % sizeof(struct eng_ci))
		return false;
	eng_lock();
	ok = eng.refs && e->dev && gi_exists(e->dev, e->gi, &g) && ds_ci_find(g, e->ci);
	eng_unlock();
	if (ok)
		*d = e->dev, *gi = e->gi, *ci = e->ci;
	return ok;
}
