/* The planner's entry point and its first rule, admission: inventories are
 * admitted whole, oldest first, while the aggregate envelope (racks, rack
 * groups, logical Node slots) fits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

static struct pl_world *sort_world;

static int inv_cmp(const void *a, const void *b)
{
	const struct pl_inventory *x = &sort_world->inventories[*(const int *)a];
	const struct pl_inventory *y = &sort_world->inventories[*(const int *)b];

	return pl_meta_cmp(&x->m, &y->m);
}

static int index_names(struct pl_world *w)
{
	int rc = 0;

	for (int i = 0; i < w->nprofiles && !rc; i++)
		rc = pl_hmap_put(&w->profile_by_name, w->profiles[i].m.name,
				 strlen(w->profiles[i].m.name), i, NULL);
	for (int i = 0; i < w->ninventories && rc != -ENOMEM; i++)
		rc = pl_hmap_put(&w->inv_by_name, w->inventories[i].m.name,
				 strlen(w->inventories[i].m.name), i, NULL);
	for (int i = 0; i < w->nracks && rc != -ENOMEM; i++)
		rc = pl_hmap_put(&w->rack_by_name, w->racks[i].m.name,
				 strlen(w->racks[i].m.name), i, NULL);
	for (int i = 0; i < w->nnodes && rc != -ENOMEM; i++)
		rc = pl_hmap_put(&w->node_by_name, w->nodes[i].m.name,
				 strlen(w->nodes[i].m.name), i, NULL);
	/* a duplicate name (-EEXIST) keeps the first object; the decoder
	 * already refuses duplicates within one input */
	return rc == -ENOMEM ? rc : 0;
}

static void resolve_profiles(struct pl_world *w, struct pl_inventory *inv)
{
	for (int g = 0; g < inv->ngroups; g++) {
		struct pl_group *grp = &inv->groups[g];
		int p = pl_hmap_gets(&w->profile_by_name, grp->profile);

		grp->prof = -1;
		if (p < 0)
			grp->prof_problem = "not found";
		else if (w->profiles[p].invalid)
			grp->prof_problem = w->profiles[p].invalid;
		else
			grp->prof = p;
		if (grp->prof < 0) {
			inv->st.blocked++;
			if (!inv->st.ex_blocked)
				inv->st.ex_blocked = pl_printf(&w->arena,
					"rack group %s: SGPURackProfile %s: %s",
					grp->name, grp->profile, grp->prof_problem);
		}
	}
}

/* Logical Node slots of a group: its profile's, else those its existing
 * racks hold (a blocked group keeps its last racks). */
static int group_slots(struct pl_world *w, const struct pl_inventory *inv,
		       const struct pl_group *grp)
{
	int per_rack = 0;

	if (grp->prof >= 0)
		return grp->count * w->profiles[grp->prof].nodes_per_rack;
	for (int r = 0; r < w->nracks; r++) {
		const struct pl_rack *rk = &w->racks[r];

		if (rk->owner_uid && inv->m.uid && !strcmp(rk->owner_uid, inv->m.uid) &&
		    rk->group && !strcmp(rk->group, grp->name) && rk->nnodes > per_rack)
			per_rack = rk->nnodes;
	}
	return grp->count * per_rack;
}

int pl_admit(struct pl_world *w)
{
	int racks = 0, groups = 0, slots = 0;

	w->inv_order = malloc(sizeof(int) * (size_t)(w->ninventories + 1));
	if (!w->inv_order)
		return -ENOMEM;
	for (int i = 0; i < w->ninventories; i++)
		w->inv_order[i] = i;
	sort_world = w;
	qsort(w->inv_order, (size_t)w->ninventories, sizeof(int), inv_cmp);
	for (int k = 0; k < w->ninventories; k++) {
		struct pl_inventory *inv = &w->inventories[w->inv_order[k]];

		resolve_profiles(w, inv);
		if (inv->invalid) {
			inv->admission = PL_R_INVALID_SPEC;
			continue;
		}
		for (int g = 0; g < inv->ngroups; g++) {
			const char *bad = pl_selector_forbidden(&inv->groups[g].selector);

			if (bad && !inv->invalid)
				inv->invalid = pl_printf(&w->arena,
					"spec.rackGroups[%d].nodeSelector: may not reference %s "
					"(it is derived from placement)", g, bad);
		}
		if (inv->invalid) {
			inv->admission = PL_R_INVALID_SELECTOR;
			continue;
		}
		inv->racks = inv->slots = 0;
		for (int g = 0; g < inv->ngroups; g++) {
			inv->racks += inv->groups[g].count;
			inv->slots += group_slots(w, inv, &inv->groups[g]);
		}
		if (racks + inv->racks > PL_MAX_RACKS || groups + inv->ngroups > PL_MAX_GROUPS ||
		    slots + inv->slots > PL_MAX_SLOTS) {
			inv->admission = PL_R_CAPACITY;
			continue;
		}
		inv->admission = PL_R_ADMITTED;
		racks += inv->racks;
		groups += inv->ngroups;
		slots += inv->slots;
	}
	return 0;
}

int pl_plan(struct pl_world *w)
{
	int rc;

	if (w->planned)
		return -EALREADY;
	w->planned = true;
	rc = index_names(w);
	if (!rc)
		rc = pl_admit(w);
	if (!rc)
		rc = pl_materialize(w);
	if (!rc)
		rc = pl_bind(w);
	if (!rc)
		rc = pl_project(w);
	if (!rc)
		rc = pl_policies_plan(w);
	return rc;
}
