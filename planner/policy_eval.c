/* A GPU's effective runtime state: its profile's defaults.runtime, then
 * every accepted policy that selects it, broadest scope first, so a
 * narrower scope overrides a broader one field by field.  Policies of one
 * scope never set a common field for a common GPU (conflicts are rejected),
 * so their order within a scope cannot matter; it is fixed anyway. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

#define PL_EVAL_MAX 256

static const struct pl_world *sort_world;

static int by_scope(const void *a, const void *b)
{
	const struct pl_policy *p = &sort_world->policies[*(const int *)a];
	const struct pl_policy *q = &sort_world->policies[*(const int *)b];

	if (p->scope != q->scope)
		return p->scope < q->scope ? -1 : 1;
	return pl_meta_cmp(&p->m, &q->m);
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

static int gather(const struct pl_world *w, int inv, int g, int r, int slot, int gpu,
		  int *out, int n)
{
	char buf[48];
	int len = pl_cell_key(buf, sizeof(buf), inv, g, r);

	for (int at = pl_hmap_get(&w->policy_cells, buf, (size_t)len); at >= 0 && n < PL_EVAL_MAX;
	     at = w->cell_policies[2 * at + 1]) {
		int pi = w->cell_policies[2 * at];
		const struct pl_policy *p = &w->policies[pi];

		if (selects(&p->nodes, slot) && selects(&p->gpus, gpu))
			out[n++] = pi;
	}
	return n;
}

int pl_gpu_runtime(const struct pl_world *w, int k, int slot, int gpu, struct pl_runtime *out)
{
	const struct pl_rack *rk = &w->racks[k];
	int prof = pl_hmap_gets(&w->profile_by_name, rk->profile);
	int pols[PL_EVAL_MAX], n = 0, g;

	memset(out, 0, sizeof(*out));
	if (prof >= 0)
		*out = w->profiles[prof].defaults;
	if (rk->inv < 0)
		return 0;
	g = rk->gidx >= 0 ? rk->gidx : pl_group_index(&w->inventories[rk->inv], rk->group);
	if (g < 0)
		return 0;
	n = gather(w, rk->inv, g, -1, slot, gpu, pols, n);
	n = gather(w, rk->inv, g, rk->index, slot, gpu, pols, n);
	sort_world = w;
	qsort(pols, (size_t)n, sizeof(int), by_scope);
	for (int i = 0; i < n; i++)
		pl_runtime_apply(out, &w->policies[pols[i]].rt);
	return n;
}
