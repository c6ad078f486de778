/* SGPURuntimePolicy evaluation: target validation, scope, conflicts (same
 * scope, a common GPU, a common field: the older policy wins, UID breaks
 * ties, the loser is rejected whole) and the effective state of a GPU
 * (profile defaults, then accepted policies broad to narrow).
 * Accepted policies are indexed by (inventory, group, rack) cells so a
 * conflict check or a GPU's evaluation visits only the policies that can
 * select it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

static const char *const scope_names[] = { "Inventory", "RackGroup", "Rack", "Node", "GPU" };

static int group_npr(const struct pl_world *w, const struct pl_group *grp)
{
	return grp->prof >= 0 ? w->profiles[grp->prof].nodes_per_rack : 0;
}

static int group_gpn(const struct pl_world *w, const struct pl_group *grp)
{
	return grp->prof >= 0 ? w->profiles[grp->prof].gpus_per_node : 0;
}

static bool selects(const struct pl_ilist *l, int v)
{
	if (!l->present)
		return true;
	for (int i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

/* Some index of l below limit (absent list: any index below limit). */
static bool any_below(const struct pl_ilist *l, int limit)
{
	if (!l->present)
		return limit > 0;
	for (int i = 0; i < l->n; i++)
		if (l->v[i] < limit)
			return true;
	return false;
}

static const char *check_list(struct pl_world *w, const struct pl_policy *p,
			      const struct pl_ilist *l, const char *field,
			      int (*limit)(const struct pl_world *, const struct pl_group *))
{
	const struct pl_inventory *inv = &w->inventories[p->inv];

	if (l->present && !l->n)
		return pl_printf(&w->arena, "spec.targetRef.%s is empty and selects no GPU", field);
	for (int i = 0; l->present && i < l->n; i++) {
		bool found = false;

		for (int g = 0; g < inv->ngroups && !found; g++)
			if ((p->group_mask >> g) & 1)
				found = l->v[i] < limit(w, &inv->groups[g]);
		if (!found)
			return pl_printf(&w->arena,
				"spec.targetRef.%s[%d]: index %d selects no GPU in the selected "
				"rack groups of SGPUInventory %s", field, i, l->v[i], inv->m.name);
	}
	return NULL;
}

static int group_count(const struct pl_world *w, const struct pl_group *grp)
{
	(void)w;
	return grp->count;
}

static const char *validate(struct pl_world *w, struct pl_policy *p)
{
	const struct pl_inventory *inv = &w->inventories[p->inv];
	const char *why;

	if (p->invalid)
		return p->invalid;
	p->group_mask = inv->ngroups >= 64 ? ~0ull : (1ull << inv->ngroups) - 1;
	if (p->groups_present) {
		if (!p->ngroups)
			return "spec.targetRef.rackGroups is empty and selects no GPU";
		p->group_mask = 0;
		for (int i = 0; i < p->ngroups; i++) {
			int g = pl_group_index(inv, p->groups[i]);

			if (g < 0)
				return pl_printf(&w->arena,
					"spec.targetRef.rackGroups[%d]: rack group %s is not "
					"declared by SGPUInventory %s", i, p->groups[i], inv->m.name);
			p->group_mask |= 1ull << g;
		}
	}
	why = check_list(w, p, &p->racks, "rackIndexes", group_count);
	if (!why)
		why = check_list(w, p, &p->nodes, "nodeIndexes", group_npr);
	if (!why)
		why = check_list(w, p, &p->gpus, "gpuIndexes", group_gpn);
	return why;
}

static enum pl_scope scope_of(const struct pl_policy *p)
{
	if (p->gpus.present)
		return PL_SCOPE_GPU;
	if (p->nodes.present)
		return PL_SCOPE_NODE;
	if (p->racks.present)
		return PL_SCOPE_RACK;
	return p->groups_present ? PL_SCOPE_GROUP : PL_SCOPE_INVENTORY;
}

/* Whether p and q select a common GPU within group g. */
static bool overlap_in(const struct pl_world *w, const struct pl_policy *p,
		       const struct pl_policy *q, const struct pl_group *grp)
{
	const struct pl_ilist *a[3] = { &p->racks, &p->nodes, &p->gpus };
	const struct pl_ilist *b[3] = { &q->racks, &q->nodes, &q->gpus };
	int limit[3] = { grp->count, group_npr(w, grp), group_gpn(w, grp) };

	for (int ax = 0; ax < 3; ax++) {
		bool common = false;

		if (!a[ax]->present) {
			common = any_below(b[ax], limit[ax]);
		} else {
			for (int i = 0; i < a[ax]->n && !common; i++)
				common = a[ax]->v[i] < limit[ax] && selects(b[ax], a[ax]->v[i]);
		}
		if (!common)
			return false;
	}
	return true;
}

/* The binary key of a (inventory, group, rack) cell: 12 bytes. */
int pl_cell_key(char *buf, size_t size, int inv, int g, int r)
{
	int v[3] = { inv, g, r };

	if (size < sizeof(v))
		return -1;
	memcpy(buf, v, sizeof(v));
	return (int)sizeof(v);
}

static int cell_add(struct pl_world *w, int inv, int g, int r, int pol)
{
	char buf[48];
	int len = pl_cell_key(buf, sizeof(buf), inv, g, r);
	int head = pl_hmap_get(&w->policy_cells, buf, (size_t)len);
	int at = w->ncell_policies;

	if (at + 1 > w->cap_cell_policies) {
		int ncap = w->cap_cell_policies ? w->cap_cell_policies * 2 : 1024;
		int *p = realloc(w->cell_policies, sizeof(int) * 2 * (size_t)ncap);

		if (!p)
			return -ENOMEM;
		w->cell_policies = p;
		w->cap_cell_policies = ncap;
	}
	w->cell_policies[2 * at] = pol;
	w->cell_policies[2 * at + 1] = head;	/* linked list, newest first */
	w->ncell_policies++;
	if (head >= 0)
		return pl_hmap_set(&w->policy_cells, buf, (size_t)len, at);
	char *key = pl_strndup(&w->arena, buf, (size_t)len);

	return key ? pl_hmap_put(&w->policy_cells, key, (size_t)len, at, NULL) : -ENOMEM;
}

static int cell_head(const struct pl_world *w, int inv, int g, int r)
{
	char buf[48];
	int len = pl_cell_key(buf, sizeof(buf), inv, g, r);

	return pl_hmap_get(&w->policy_cells, buf, (size_t)len);
}

/* Index an accepted policy: per rack when it lists racks, else per group
 * (rack -1); every group also lists it under rack -2 for broad checks. */
static int index_policy(struct pl_world *w, int pi)
{
	const struct pl_policy *p = &w->policies[pi];
	const struct pl_inventory *inv = &w->inventories[p->inv];
	int rc = 0;

	for (int g = 0; g < inv->ngroups && !rc; g++) {
		if (!((p->group_mask >> g) & 1))
			continue;
		rc = cell_add(w, p->inv, g, -2, pi);
		if (!p->racks.present) {
			if (!rc)
				rc = cell_add(w, p->inv, g, -1, pi);
			continue;
		}
		for (int i = 0; i < p->racks.n && !rc; i++)
			if (p->racks.v[i] < inv->groups[g].count)
				rc = cell_add(w, p->inv, g, p->racks.v[i], pi);
	}
	return rc;
}

/* The first accepted policy p conflicts with, or -1. */
static int find_conflict(struct pl_world *w, int pi, int *stamp, int *field)
{
	const struct pl_policy *p = &w->policies[pi];
	const struct pl_inventory *inv = &w->inventories[p->inv];

	for (int g = 0; g < inv->ngroups; g++) {
		/* a short rack list visits its racks' cells and the whole-group
		 * cell; anything broader visits every policy of the group */
		bool narrow = p->racks.present && p->racks.n < 64;
		int nlists = narrow ? p->racks.n + 1 : 1;

		if (!((p->group_mask >> g) & 1))
			continue;
		for (int h = 0; h < nlists; h++) {
			int at = h == 0 ? cell_head(w, p->inv, g, narrow ? -1 : -2)
				: p->racks.v[h - 1] < inv->groups[g].count
				? cell_head(w, p->inv, g, p->racks.v[h - 1]) : -1;

			for (; at >= 0; at = w->cell_policies[2 * at + 1]) {
				int qi = w->cell_policies[2 * at];
				const struct pl_policy *q = &w->policies[qi];
				uint32_t common = p->rt.set & q->rt.set;

				/* once per (policy, group): overlap is per group */
				if (stamp[qi] == pi * 64 + g + 1 || q->scope != p->scope || !common)
					continue;
				stamp[qi] = pi * 64 + g + 1;
				if (!overlap_in(w, p, q, &inv->groups[g]))
					continue;
				*field = __builtin_ctz(common);
				return qi;
			}
		}
	}
	return -1;
}

static struct pl_world *sort_world;

/* Older creationTimestamp first; the UID breaks ties (seed 002). */
static int pol_cmp(const void *a, const void *b)
{
	const struct pl_meta *x = &sort_world->policies[*(const int *)a].m;
	const struct pl_meta *y = &sort_world->policies[*(const int *)b].m;
	int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");

	if (!c)
		c = strcmp(x->uid ? x->uid : "", y->uid ? y->uid : "");
	return c ? c : strcmp(x->name, y->name);
}

static int decide(struct pl_world *w, int pi, int *stamp)
{
	struct pl_policy *p = &w->policies[pi];
	int field, qi;

	p->inv = pl_hmap_gets(&w->inv_by_name, p->inventory);
	if (p->inv < 0) {
		p->reason = PL_R_TARGET_NOT_FOUND;
		p->message = pl_printf(&w->arena, "SGPUInventory %s does not exist", p->inventory);
		return 0;
	}
	p->scope = scope_of(p);
	p->message = validate(w, p);
	if (p->message) {
		p->reason = PL_R_INVALID_TARGET;
		return 0;
	}
	qi = find_conflict(w, pi, stamp, &field);
	if (qi >= 0) {
		p->reason = PL_R_CONFLICTED;
		p->message = pl_printf(&w->arena,
			"older SGPURuntimePolicy %s (%s scope) sets %s.%s for some of the same GPUs",
			w->policies[qi].m.name, scope_names[p->scope],
			pl_fields[field].section, pl_fields[field].key);
		return 0;
	}
	p->reason = PL_R_ACCEPTED;
	p->message = pl_printf(&w->arena, "applies to %s scope of SGPUInventory %s",
			       scope_names[p->scope], p->inventory);
	return index_policy(w, pi);
}

int pl_policies_plan(struct pl_world *w)
{
	int *order = malloc(sizeof(int) * (size_t)(w->npolicies + 1));
	int *stamp = calloc((size_t)w->npolicies + 1, sizeof(int));
	int rc = 0;

	if (!order || !stamp) {
		free(order);
		free(stamp);
		return -ENOMEM;
	}
	for (int i = 0; i < w->npolicies; i++)
		order[i] = i;
	sort_world = w;
	qsort(order, (size_t)w->npolicies, sizeof(int), pol_cmp);
	for (int k = 0; k < w->npolicies && !rc; k++)
		rc = decide(w, order[k], stamp);
	free(order);
	free(stamp);
	return rc;
}

const char *pl_scope_name(enum pl_scope s)
{
	return scope_names[s];
}
