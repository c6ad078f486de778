/* Materialization: every admitted rack group with a usable profile expands
 * into count SGPURacks named <inventory>-<group>-<index>.  Existing racks
 * keep their bindings; a rack this control plane does not own is reported,
 * never overwritten; a rack whose declaration is gone is drained, then
 * deleted; a group whose profile is missing keeps its last racks as they
 * are. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

static int owner_inventory(struct pl_world *w, const struct pl_rack *rk)
{
	int i;

	if (!rk->owner_uid)
		return -1;
	/* the owner's name is on the rack; its UID must still match */
	i = pl_hmap_gets(&w->inv_by_name, rk->inventory);
	if (i >= 0 && w->inventories[i].m.uid && !strcmp(w->inventories[i].m.uid, rk->owner_uid))
		return i;
	for (i = 0; i < w->ninventories; i++)
		if (w->inventories[i].m.uid && !strcmp(w->inventories[i].m.uid, rk->owner_uid))
			return i;
	return -1;
}

static void classify_existing(struct pl_world *w, struct pl_rack *rk)
{
	struct pl_inventory *inv;
	int g;

	rk->inv = owner_inventory(w, rk);
	if (!rk->owner_uid)
		return;			/* not ours: never touched, never listed */
	if (rk->inv < 0 || rk->terminating) {
		/* its inventory is gone, or someone deleted it: its finalizer
		 * holds it until its Nodes are clean */
		rk->remove = true;
		return;
	}
	inv = &w->inventories[rk->inv];
	if (inv->admission != PL_R_ADMITTED) {
		rk->keep = true;	/* rejected inventories keep their last racks */
		return;
	}
	g = rk->group ? pl_group_index(inv, rk->group) : -1;
	rk->gidx = g;
	if (g < 0 || rk->index < 0 || rk->index >= inv->groups[g].count ||
	    strcmp(rk->m.name, pl_rack_name(&w->arena, inv->m.name, rk->group, rk->index)))
		rk->remove = true;	/* shrunk or removed from the declaration */
	else if (inv->groups[g].prof < 0)
		rk->keep = true;	/* blocked group: last materialized state */
	else
		rk->generated = true;
}

/* Size a generated rack's slots to the profile; slots past it stay only
 * while their old binding drains (bind.c). */
static int shape_rack(struct pl_world *w, struct pl_rack *rk, const struct pl_inventory *inv,
		      const struct pl_group *grp)
{
	const struct pl_profile *p = &w->profiles[grp->prof];
	int n = rk->nnodes > p->nodes_per_rack ? rk->nnodes : p->nodes_per_rack;
	char fabric[37];

	if (n != rk->nnodes) {
		struct pl_binding *b = pl_alloc(&w->arena, sizeof(*b) * (size_t)n);

		if (!b)
			return -ENOMEM;
		if (rk->nnodes)
			memcpy(b, rk->nodes, sizeof(*b) * (size_t)rk->nnodes);
		rk->nodes = b;
		rk->nnodes = n;
	}
	rk->profile = p->m.name;
	rk->profile_revision = p->m.generation;
	rk->inventory = inv->m.name;
	rk->group = grp->name;
	pl_fabric_uuid(fabric, inv->m.uid, grp->name, rk->index);
	rk->fabric_uuid = pl_strdup(&w->arena, fabric);
	rk->clique_id = pl_clique_id(inv->m.uid, grp->name, rk->index);
	return rk->fabric_uuid ? 0 : -ENOMEM;
}

static int expand_group(struct pl_world *w, int i, int g)
{
	struct pl_inventory *inv = &w->inventories[i];
	struct pl_group *grp = &inv->groups[g];

	for (int r = 0; r < grp->count; r++) {
		char *name = pl_rack_name(&w->arena, inv->m.name, grp->name, r);
		int k = name ? pl_hmap_gets(&w->rack_by_name, name) : -1;
		struct pl_rack *rk;

		if (!name)
			return -ENOMEM;
		if (k >= 0 && w->racks[k].inv != i) {
			w->racks[k].foreign = true;
			inv->st.foreign++;
			if (!inv->st.ex_foreign)
				inv->st.ex_foreign = pl_printf(&w->arena,
					"SGPURack %s exists and is not owned by this inventory",
					name);
			continue;
		}
		if (k < 0) {
			if (grp->prof < 0)
				continue;	/* blocked: no new racks */
			rk = pl_add_rack(w);
			if (!rk)
				return -ENOMEM;
			k = w->nracks - 1;
			rk->m.name = name;
			rk->owner_uid = inv->m.uid;
			rk->inv = i;
			rk->index = r;
			rk->gidx = g;
			rk->generated = true;
			if (pl_hmap_put(&w->rack_by_name, name, strlen(name), k, NULL) == -ENOMEM)
				return -ENOMEM;
		}
		rk = &w->racks[k];
		if (rk->generated && shape_rack(w, rk, inv, grp) < 0)
			return -ENOMEM;
	}
	return 0;
}

int pl_materialize(struct pl_world *w)
{
	int nexisting = w->nracks, rc;

	for (int k = 0; k < nexisting; k++)
		classify_existing(w, &w->racks[k]);
	for (int k = 0; k < w->ninventories; k++) {
		int i = w->inv_order[k];

		if (w->inventories[i].admission != PL_R_ADMITTED)
			continue;
		for (int g = 0; g < w->inventories[i].ngroups; g++) {
			rc = expand_group(w, i, g);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}
