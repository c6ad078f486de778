/* The planner's world: growable arrays of decoded objects, their arena, and
 * the small pure rules every stage shares (ordering, label selectors, the
 * runtime field table). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

static const char *const health_names[] = { "Healthy", "Failed", NULL };
static const char *const compute_names[] = { "Default", "ExclusiveProcess",
	"Prohibited", NULL };

const struct pl_field_desc pl_fields[PL_F_COUNT] = {
	[PL_F_HEALTH] = { "health", "state", PL_FT_ENUM, 0, 1, health_names },
	[PL_F_XID] = { "health", "xid", PL_FT_INT, 0, 65535, NULL },
	[PL_F_PERSISTENCE] = { "modes", "persistence", PL_FT_BOOL, 0, 1, NULL },
	[PL_F_COMPUTE] = { "modes", "computeMode", PL_FT_ENUM, 0, 2, compute_names },
	[PL_F_ECC] = { "modes", "ecc", PL_FT_BOOL, 0, 1, NULL },
	[PL_F_DRAW] = { "telemetry", "drawMilliWatts", PL_FT_INT, 0, 10000000, NULL },
	[PL_F_TEMP] = { "telemetry", "temperatureCelsius", PL_FT_INT, -50, 200, NULL },
	[PL_F_UTIL_GPU] = { "telemetry", "gpuUtilizationPercent", PL_FT_INT, 0, 100, NULL },
	[PL_F_UTIL_MEM] = { "telemetry", "memoryUtilizationPercent", PL_FT_INT, 0, 100, NULL },
};

void pl_runtime_apply(struct pl_runtime *base, const struct pl_runtime *top)
{
	for (int f = 0; f < PL_F_COUNT; f++) {
		if (top->set & (1u << f)) {
			base->v[f] = top->v[f];
			base->set |= 1u << f;
		}
	}
}

const char *pl_kvs_get(const struct pl_kvs *kvs, const char *key)
{
	for (int i = 0; i < kvs->n; i++)
		if (!strcmp(kvs->v[i].key, key))
			return kvs->v[i].val;
	return NULL;
}

static bool req_matches(const struct pl_requirement *r, const struct pl_kvs *labels)
{
	const char *v = pl_kvs_get(labels, r->key);
	bool in = false;

	switch (r->op) {
	case PL_SEL_EXISTS:
		return v != NULL;
	case PL_SEL_NOT_EXISTS:
		return v == NULL;
	case PL_SEL_IN:
	case PL_SEL_NOT_IN:
		for (int i = 0; v && i < r->nvals; i++)
			in |= !strcmp(v, r->vals[i]);
		return r->op == PL_SEL_IN ? in : !in;
	}
	return false;
}

bool pl_selector_matches(const struct pl_selector *sel, const struct pl_kvs *labels)
{
	for (int i = 0; i < sel->n; i++)
		if (!req_matches(&sel->reqs[i], labels))
			return false;
	return true;
}

/* Labels the control plane derives from placement: selecting on them would
 * make placement depend on itself. */
const char *pl_selector_forbidden(const struct pl_selector *sel)
{
	for (int i = 0; i < sel->n; i++)
		if (!strcmp(sel->reqs[i].key, PL_LABEL_ASSIGNED) ||
		    !strcmp(sel->reqs[i].key, PL_LABEL_CLIQUE))
			return sel->reqs[i].key;
	return NULL;
}

static int strcmp0(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

int pl_meta_cmp(const struct pl_meta *a, const struct pl_meta *b)
{
	int c = strcmp0(a->created, b->created);

	if (!c)
		c = strcmp0(a->name, b->name);
	return c ? c : strcmp0(a->uid, b->uid);
}

void pl_world_init(struct pl_world *w)
{
	memset(w, 0, sizeof(*w));
}

void pl_world_free(struct pl_world *w)
{
	free(w->profiles);
	free(w->inventories);
	free(w->racks);
	free(w->policies);
	free(w->nodes);
	free(w->inv_order);
	free(w->slots);
	free(w->projections);
	free(w->assigned);
	free(w->cell_policies);
	pl_hmap_free(&w->profile_by_name);
	pl_hmap_free(&w->node_by_name);
	pl_hmap_free(&w->rack_by_name);
	pl_hmap_free(&w->inv_by_name);
	pl_hmap_free(&w->policy_cells);
	pl_hmap_free(&w->sel_index);
	free(w->sel_masks);
	pl_arena_free(&w->arena);
	memset(w, 0, sizeof(*w));
}

static void *push(void **arr, int *n, int *cap, size_t size)
{
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		void *p = realloc(*arr, (size_t)ncap * size);

		if (!p)
			return NULL;
		*arr = p;
		*cap = ncap;
	}
	void *slot = (char *)*arr + (size_t)(*n)++ * size;
	memset(slot, 0, size);
	return slot;
}

#define PUSH(w, field, n, cap) \
	push((void **)&(w)->field, &(w)->n, &(w)->cap, sizeof(*(w)->field))

struct pl_profile *pl_add_profile(struct pl_world *w)
{
	struct pl_profile *p = PUSH(w, profiles, nprofiles, cap_profiles);

	if (p)
		p->m.order = w->nprofiles - 1;
	return p;
}

struct pl_inventory *pl_add_inventory(struct pl_world *w)
{
	struct pl_inventory *p = PUSH(w, inventories, ninventories, cap_inventories);

	if (p)
		p->m.order = w->ninventories - 1;
	return p;
}

struct pl_rack *pl_add_rack(struct pl_world *w)
{
	struct pl_rack *p = PUSH(w, racks, nracks, cap_racks);

	if (p) {
		p->m.order = w->nracks - 1;
		p->inv = -1;
		p->gidx = -1;
	}
	return p;
}

struct pl_policy *pl_add_policy(struct pl_world *w)
{
	struct pl_policy *p = PUSH(w, policies, npolicies, cap_policies);

	if (p) {
		p->m.order = w->npolicies - 1;
		p->inv = -1;
	}
	return p;
}

struct pl_node *pl_add_node(struct pl_world *w)
{
	struct pl_node *p = PUSH(w, nodes, nnodes, cap_nodes);

	if (p) {
		p->m.order = w->nnodes - 1;
		p->rack = p->slot = -1;
	}
	return p;
}

int pl_push_projection(struct pl_world *w, int node, int rack, int slot)
{
	struct pl_projection *p = PUSH(w, projections, nprojections, cap_projections);

	if (!p)
		return -ENOMEM;
	*p = (struct pl_projection){ .node = node, .rack = rack, .slot = slot };
	return 0;
}

int pl_group_index(const struct pl_inventory *inv, const char *name)
{
	for (int g = 0; g < inv->ngroups; g++)
		if (!strcmp(inv->groups[g].name, name))
			return g;
	return -1;
}
