/* SGPURacks, Node projections, deletions (see emit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/em.h"
#include "planner/emit.h"

static struct pl_world *sort_world;

static int rack_cmp(const void *a, const void *b)
{
	return strcmp(sort_world->racks[*(const int *)a].m.name,
		      sort_world->racks[*(const int *)b].m.name);
}

static int proj_cmp(const void *a, const void *b)
{
	const struct pl_projection *x = a, *y = b;

	return strcmp(sort_world->nodes[x->node].m.name, sort_world->nodes[y->node].m.name);
}

/* Racks the apply stream carries: ours, not yet deletable. */
static bool rack_listed(const struct pl_rack *rk)
{
	bool bound = false;

	if (rk->foreign || !rk->owner_uid || (rk->inv < 0 && !rk->remove))
		return false;
	for (int s = 0; s < rk->nnodes; s++)
		bound |= rk->nodes[s].name != NULL;
	return rk->generated || rk->keep || (rk->remove && bound);
}

static int sorted_racks(struct pl_world *w, int **out, bool (*want)(const struct pl_rack *))
{
	int *v = malloc(sizeof(int) * (size_t)(w->nracks + 1)), n = 0;

	if (!v)
		return -ENOMEM;
	for (int k = 0; k < w->nracks; k++)
		if (want(&w->racks[k]))
			v[n++] = k;
	sort_world = w;
	qsort(v, (size_t)n, sizeof(int), rack_cmp);
	*out = v;
	return n;
}

static void emit_rack(struct em *m, struct pl_world *w, const struct pl_rack *rk)
{
	const struct pl_inventory *inv = rk->inv >= 0 ? &w->inventories[rk->inv] : NULL;
	char uuid[37];

	em_doc(m);
	em_map(m);
	em_kstr(m, "apiVersion", PL_API_VERSION);
	em_kstr(m, "kind", "SGPURack");
	em_kmap(m, "metadata");
	em_kstr(m, "name", rk->m.name);
	em_kmap(m, "labels");
	em_kstr(m, "mokka.nvidia.com/inventory", rk->inventory);
	em_kstr(m, "mokka.nvidia.com/rack-group", rk->group);
	em_end_map(m);
	em_kseq(m, "finalizers");
	em_str(m, "mokka.nvidia.com/rack-cleanup");
	em_end_seq(m);
	em_kseq(m, "ownerReferences");
	em_map(m);
	em_kstr(m, "apiVersion", PL_API_VERSION);
	em_kstr(m, "kind", "SGPUInventory");
	em_kstr(m, "name", inv ? inv->m.name : rk->inventory);
	em_kstr(m, "uid", rk->owner_uid);
	em_kbool(m, "controller", 1);
	em_kbool(m, "blockOwnerDeletion", 1);
	em_end_map(m);
	em_end_seq(m);
	em_end_map(m);
	em_kmap(m, "spec");
	em_kmap(m, "inventoryRef");
	em_kstr(m, "name", rk->inventory);
	em_kstr(m, "uid", rk->owner_uid);
	em_end_map(m);
	em_kstr(m, "rackGroup", rk->group);
	em_kint(m, "rackIndex", rk->index);
	if (rk->profile) {
		em_kmap(m, "profileRef");
		em_kstr(m, "name", rk->profile);
		em_kint(m, "revision", rk->profile_revision);
		em_end_map(m);
	}
	pl_uuid(uuid, rk->owner_uid, "rack", rk->group, rk->index, -1, -1);
	em_kstr(m, "rackUUID", uuid);
	em_kstr(m, "fabricUUID", rk->fabric_uuid);
	if (rk->clique_id)
		em_kint(m, "cliqueID", rk->clique_id);
	em_kseq(m, "nodes");
	for (int s = 0; s < rk->nnodes; s++) {
		if (rk->remove && !rk->nodes[s].name)
			continue;
		em_map(m);
		em_kint(m, "index", s);
		if (rk->nodes[s].name) {
			em_kmap(m, "nodeRef");
			em_kstr(m, "name", rk->nodes[s].name);
			em_kstr(m, "uid", rk->nodes[s].uid);
			em_end_map(m);
		}
		em_end_map(m);
	}
	em_end_seq(m);
	em_end_map(m);
	em_end_map(m);
	em_doc_end(m);
}

static void emit_projection(struct em *m, struct pl_world *w, const struct pl_projection *p)
{
	const struct pl_node *n = &w->nodes[p->node];
	char clique[64];

	em_doc(m);
	em_map(m);
	em_kstr(m, "apiVersion", "v1");
	em_kstr(m, "kind", "Node");
	em_kmap(m, "metadata");
	em_kstr(m, "name", n->m.name);
	em_kstr(m, "uid", n->m.uid);	/* apply precondition: this exact Node */
	if (p->rack >= 0) {
		const struct pl_rack *rk = &w->racks[p->rack];

		snprintf(clique, sizeof(clique), "%s.%d", rk->fabric_uuid, rk->clique_id);
		em_kmap(m, "labels");
		em_kstr(m, PL_LABEL_ASSIGNED, "true");
		em_kstr(m, PL_LABEL_CLIQUE, clique);
		em_end_map(m);
		em_kmap(m, "annotations");
		em_kstr(m, PL_ANN_ASSIGNMENT, pl_assignment_json(w, p->rack, p->slot));
		em_end_map(m);
	}
	em_end_map(m);
	em_end_map(m);
	em_doc_end(m);
}

int pl_emit_apply(FILE *f, struct pl_world *w)
{
	struct pl_projection *proj;
	struct em m;
	int *racks, n, rc;

	n = sorted_racks(w, &racks, rack_listed);
	if (n < 0)
		return n;
	proj = malloc(sizeof(*proj) * (size_t)(w->nprojections + 1));
	if (!proj) {
		free(racks);
		return -ENOMEM;
	}
	if (w->nprojections)
		memcpy(proj, w->projections, sizeof(*proj) * (size_t)w->nprojections);
	sort_world = w;
	qsort(proj, (size_t)w->nprojections, sizeof(*proj), proj_cmp);
	rc = em_open(&m, f);
	for (int i = 0; !rc && i < n; i++)
		emit_rack(&m, w, &w->racks[racks[i]]);
	for (int i = 0; !rc && i < w->nprojections; i++)
		emit_projection(&m, w, &proj[i]);
	rc = em_close(&m) ?: rc;
	free(proj);
	free(racks);
	return rc;
}

static bool rack_deletable(const struct pl_rack *rk)
{
	return rk->remove && !rack_listed(rk) && rk->owner_uid;
}

int pl_emit_deletes(FILE *f, struct pl_world *w)
{
	int *racks, n = sorted_racks(w, &racks, rack_deletable);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		fprintf(f, "sgpuracks.mokka.nvidia.com/%s\n", w->racks[racks[i]].m.name);
	free(racks);
	return ferror(f) ? -EIO : 0;
}
