/* Durable bindings (SGPURack.spec.nodes[].nodeRef).  A binding stays while
 * its Node (same name and UID) is eligible and still matches the group;
 * otherwise its exact projection is removed first (the binding is kept,
 * draining, while the Node still carries an annotation naming it) and only
 * then cleared.  New Nodes, oldest first (creation time, name, UID), fill
 * the free coordinates in rack/index order; existing bindings never move. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

static const char *note(struct pl_world *w, const char *old, const char *fmt,
			const char *a, const char *b)
{
	return old ? old : pl_printf(&w->arena, fmt, a, b ? b : "");
}

static bool binding_valid(struct pl_world *w, const struct pl_rack *rk, int s,
			  const struct pl_node *n)
{
	const struct pl_inventory *inv;
	const struct pl_group *grp;
	int g;

	if (rk->remove || rk->inv < 0)
		return false;
	inv = &w->inventories[rk->inv];
	if (!n->m.uid || strcmp(n->m.uid, rk->nodes[s].uid ? rk->nodes[s].uid : ""))
		return false;		/* gone, or replaced under the same name */
	if (rk->keep && inv->admission != PL_R_ADMITTED)
		return true;		/* rejected inventory: bindings unchanged */
	if (!n->eligible)
		return false;
	g = pl_group_index(inv, rk->group);
	if (g < 0)
		return false;
	grp = &inv->groups[g];
	if (grp->prof >= 0 && s >= w->profiles[grp->prof].nodes_per_rack)
		return false;		/* the profile shrank the rack */
	return pl_selector_matches(&grp->selector, &n->labels);
}

static void drain_or_clear(struct pl_world *w, int k, int s, int ni)
{
	struct pl_rack *rk = &w->racks[k];
	struct pl_node *n = ni >= 0 ? &w->nodes[ni] : NULL;
	const char *ann = n ? pl_kvs_get(&n->annotations, PL_ANN_ASSIGNMENT) : NULL;

	/* only the exact Node: a same-name replacement is left alone */
	if (n && n->m.uid && rk->nodes[s].uid && !strcmp(n->m.uid, rk->nodes[s].uid) &&
	    n->state != PL_N_BOUND && n->state != PL_N_DRAINING && ann &&
	    pl_annotation_names(w, ann, k, s, rk->nodes[s].uid)) {
		/* remove the exact projection before the binding goes */
		n->state = PL_N_DRAINING;
		n->rack = k;
		n->slot = s;
		pl_push_projection(w, ni, -1, -1);
		if (rk->inv >= 0) {
			struct pl_inventory *inv = &w->inventories[rk->inv];

			inv->st.draining++;
			inv->st.ex_draining = note(w, inv->st.ex_draining,
				"Node %s: removing the projection of %s", n->m.name, rk->m.name);
		}
		return;
	}
	rk->nodes[s].name = rk->nodes[s].uid = NULL;
}

static void check_rack(struct pl_world *w, int k)
{
	struct pl_rack *rk = &w->racks[k];

	for (int s = 0; s < rk->nnodes; s++) {
		int ni = pl_hmap_gets(&w->node_by_name, rk->nodes[s].name);
		struct pl_node *n = ni >= 0 ? &w->nodes[ni] : NULL;

		if (!rk->nodes[s].name)
			continue;
		if (n && n->state == PL_N_BOUND && binding_valid(w, rk, s, n)) {
			/* bound twice: the rack whose name sorts first keeps it */
			struct pl_rack *other = &w->racks[n->rack];

			if (strcmp(rk->m.name, other->m.name) > 0) {
				rk->nodes[s].name = rk->nodes[s].uid = NULL;
				continue;
			}
			other->nodes[n->slot].name = other->nodes[n->slot].uid = NULL;
		} else if (!n || !binding_valid(w, rk, s, n)) {
			drain_or_clear(w, k, s, ni);
			continue;
		}
		n->state = PL_N_BOUND;
		n->rack = k;
		n->slot = s;
	}
}

/* Free coordinates of every usable group, in rack then index order. */
static int collect_slots(struct pl_world *w)
{
	int total = 0, used = 0;

	for (int i = 0; i < w->ninventories; i++)
		if (w->inventories[i].admission == PL_R_ADMITTED)
			total += w->inventories[i].slots;
	w->slots = malloc(sizeof(int) * 2 * (size_t)(total + 1));
	if (!w->slots)
		return -ENOMEM;
	for (int i = 0; i < w->ninventories; i++) {
		struct pl_inventory *inv = &w->inventories[i];

		for (int g = 0; inv->admission == PL_R_ADMITTED && g < inv->ngroups; g++) {
			struct pl_group *grp = &inv->groups[g];
			int npr = grp->prof >= 0 ? w->profiles[grp->prof].nodes_per_rack : 0;

			grp->first_slot = used;
			for (int r = 0; npr && r < grp->count; r++) {
				char *name = pl_rack_name(&w->arena, inv->m.name, grp->name, r);
				int k = name ? pl_hmap_gets(&w->rack_by_name, name) : -1;

				if (k < 0 || !w->racks[k].generated || w->racks[k].inv != i)
					continue;
				for (int s = 0; s < npr && used < total; s++)
					if (!w->racks[k].nodes[s].name) {
						w->slots[2 * used] = k;
						w->slots[2 * used + 1] = s;
						used++;
					}
			}
			grp->nslots = used - grp->first_slot;
		}
	}
	w->nslots = used;
	return 0;
}

/* Index the admitted groups' selectors by the labels they require, so a
 * Node is checked only against groups that can match it. */
static int index_selectors(struct pl_world *w)
{
	w->nag = 0;
	w->sel_always = 0;
	for (int k = 0; k < w->ninventories; k++) {
		const struct pl_inventory *inv = &w->inventories[w->inv_order[k]];

		for (int g = 0; inv->admission == PL_R_ADMITTED && g < inv->ngroups; g++) {
			const struct pl_selector *sel = &inv->groups[g].selector;
			const struct pl_requirement *in = NULL;
			int bit = w->nag++;

			w->ag_inv[bit] = w->inv_order[k];
			w->ag_g[bit] = g;
			for (int r = 0; r < sel->n && !in; r++)
				if (sel->reqs[r].op == PL_SEL_IN)
					in = &sel->reqs[r];
			if (!in) {
				w->sel_always |= 1ull << bit;
				continue;
			}
			for (int v = 0; v < in->nvals; v++) {
				size_t kl = strlen(in->key), vl = strlen(in->vals[v]);
				char *key = pl_alloc(&w->arena, kl + vl + 2);
				int at, rc;
				uint64_t *masks;

				if (!key)
					return -ENOMEM;
				memcpy(key, in->key, kl);
				memcpy(key + kl + 1, in->vals[v], vl);
				at = pl_hmap_get(&w->sel_index, key, kl + vl + 1);
				if (at < 0) {
					masks = realloc(w->sel_masks, sizeof(*masks) * (w->sel_index.n + 1));
					if (!masks)
						return -ENOMEM;
					w->sel_masks = masks;
					at = (int)w->sel_index.n;
					masks[at] = 0;
					rc = pl_hmap_put(&w->sel_index, key, kl + vl + 1, at, NULL);
					if (rc < 0)
						return rc;
				}
				w->sel_masks[at] |= 1ull << bit;
			}
		}
	}
	return 0;
}

static uint64_t candidate_groups(const struct pl_world *w, const struct pl_node *n)
{
	uint64_t mask = w->sel_always;
	char key[1024];

	for (int i = 0; i < n->labels.n; i++) {
		size_t kl = strlen(n->labels.v[i].key), vl = strlen(n->labels.v[i].val);
		int at;

		if (kl + vl + 1 >= sizeof(key))
			continue;	/* longer than any valid label */
		memcpy(key, n->labels.v[i].key, kl + 1);
		memcpy(key + kl + 1, n->labels.v[i].val, vl);
		at = pl_hmap_get(&w->sel_index, key, kl + vl + 1);
		if (at >= 0)
			mask |= w->sel_masks[at];
	}
	return mask;
}

int pl_group_match(struct pl_world *w, int ni, int *inv_out, int *group_out, int *nmatch)
{
	const struct pl_node *n = &w->nodes[ni];
	uint64_t mask = candidate_groups(w, n);

	*nmatch = 0;
	for (; mask; mask &= mask - 1) {
		int bit = __builtin_ctzll(mask), i = w->ag_inv[bit], g = w->ag_g[bit];

		if (!pl_selector_matches(&w->inventories[i].groups[g].selector, &n->labels))
			continue;
		if (!(*nmatch)++) {
			*inv_out = i;
			*group_out = g;
		}
	}
	return *nmatch;
}

static void conflict(struct pl_world *w, int ni)
{
	struct pl_node *n = &w->nodes[ni];

	n->state = PL_N_CONFLICT;
	for (int i = 0; i < w->ninventories; i++) {
		struct pl_inventory *inv = &w->inventories[i];

		for (int g = 0; inv->admission == PL_R_ADMITTED && g < inv->ngroups; g++) {
			if (!pl_selector_matches(&inv->groups[g].selector, &n->labels))
				continue;
			inv->st.conflict++;
			inv->st.ex_conflict = note(w, inv->st.ex_conflict,
				"Node %s matches the selectors of more than one rack group%s",
				n->m.name, "");
			break;
		}
	}
}

static void assign(struct pl_world *w, int ni)
{
	struct pl_node *n = &w->nodes[ni];
	const char *clique = pl_kvs_get(&n->labels, PL_LABEL_CLIQUE);
	int i = -1, g = -1, nmatch;
	struct pl_group *grp;

	if (pl_node_projected(n) || clique) {
		n->state = PL_N_INCOMPATIBLE;
		n->problem = pl_node_projected(n)
			? "carries a Mokka projection that names no live binding"
			: "has nvidia.com/gpu.clique set by another manager";
	}
	if (!pl_group_match(w, ni, &i, &g, &nmatch)) {
		if (n->state != PL_N_INCOMPATIBLE)
			n->state = PL_N_UNMATCHED;
		return;
	}
	if (nmatch > 1)
		return conflict(w, ni);
	grp = &w->inventories[i].groups[g];
	if (n->state == PL_N_INCOMPATIBLE) {
		struct pl_inventory *inv = &w->inventories[i];

		inv->st.incompatible++;
		inv->st.ex_incompatible = note(w, inv->st.ex_incompatible, "Node %s %s",
					       n->m.name, n->problem);
		return;
	}
	if (!grp->nslots) {
		struct pl_inventory *inv = &w->inventories[i];

		n->state = PL_N_PENDING;
		inv->st.pending++;
		inv->st.ex_pending = note(w, inv->st.ex_pending,
			"Node %s waits for a free coordinate in rack group %s",
			n->m.name, grp->name);
		return;
	}
	n->rack = w->slots[2 * grp->first_slot];
	n->slot = w->slots[2 * grp->first_slot + 1];
	grp->first_slot++;
	grp->nslots--;
	n->state = PL_N_BOUND;
	w->racks[n->rack].nodes[n->slot].name = n->m.name;
	w->racks[n->rack].nodes[n->slot].uid = n->m.uid;
	w->assigned[w->nassigned++] = ni;
}

static struct pl_world *sort_world;

static int node_cmp(const void *a, const void *b)
{
	return pl_meta_cmp(&sort_world->nodes[*(const int *)a].m,
			   &sort_world->nodes[*(const int *)b].m);
}

/* Place the unbound eligible Nodes among nodes[first..]. */
static int place(struct pl_world *w, int first)
{
	int *cand = malloc(sizeof(int) * (size_t)(w->nnodes - first + 1)), nc = 0;
	int *grown = realloc(w->assigned, sizeof(int) * (size_t)(w->nassigned + w->nnodes - first + 1));

	if (!cand || !grown) {
		free(cand);
		if (grown)
			w->assigned = grown;
		return -ENOMEM;
	}
	w->assigned = grown;
	for (int ni = first; ni < w->nnodes; ni++)
		if (w->nodes[ni].eligible && w->nodes[ni].state == PL_N_IGNORED)
			cand[nc++] = ni;
	sort_world = w;
	qsort(cand, (size_t)nc, sizeof(int), node_cmp);
	for (int c = 0; c < nc; c++)
		assign(w, cand[c]);
	free(cand);
	return 0;
}

int pl_bind(struct pl_world *w)
{
	int rc;

	for (int k = 0; k < w->nracks; k++)
		if (w->racks[k].generated || w->racks[k].keep || w->racks[k].remove)
			check_rack(w, k);
	rc = collect_slots(w);
	if (!rc)
		rc = index_selectors(w);
	return rc ? rc : place(w, 0);
}

int pl_plan_new_nodes(struct pl_world *w, int first_new)
{
	int start = w->nprojections, rc;

	for (int ni = first_new; ni < w->nnodes; ni++)
		if (pl_hmap_put(&w->node_by_name, w->nodes[ni].m.name,
				strlen(w->nodes[ni].m.name), ni, NULL) == -ENOMEM)
			return -ENOMEM;
	rc = place(w, first_new);
	for (int a = 0; !rc && a < w->nassigned; a++)
		if (w->assigned[a] >= first_new)
			rc = pl_push_projection(w, w->assigned[a], w->nodes[w->assigned[a]].rack,
						w->nodes[w->assigned[a]].slot);
	(void)start;
	return rc;
}
