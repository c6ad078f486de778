/* The desired-state document of one assigned Node: its coordinate, its
 * GPUs' identities and effective runtime state.  mokka-supervisor
 * --state-source controlplane:FILE|DIR reads it (profile/controlplane*.c). */
#include <errno.h>
#include <string.h>

#include "planner/em.h"
#include "planner/emit.h"

static void emit_runtime(struct em *m, const struct pl_runtime *rt)
{
	const char *open = NULL;

	em_kmap(m, "runtime");
	for (int f = 0; f < PL_F_COUNT; f++) {
		const struct pl_field_desc *d = &pl_fields[f];

		if (!(rt->set & (1u << f)))
			continue;
		if (!open || strcmp(open, d->section)) {
			if (open)
				em_end_map(m);
			em_kmap(m, d->section);
			open = d->section;
		}
		if (d->type == PL_FT_ENUM)
			em_kstr(m, d->key, d->names[rt->v[f]]);
		else if (d->type == PL_FT_BOOL)
			em_kbool(m, d->key, (int)rt->v[f]);
		else
			em_kint(m, d->key, rt->v[f]);
	}
	if (open)
		em_end_map(m);
	em_end_map(m);
}

static void emit_gpus(struct em *m, struct pl_world *w, const struct pl_rack *rk, int k,
		      int slot, int ngpus)
{
	char uuid[41], serial[14];
	struct pl_runtime rt;

	em_kseq(m, "gpus");
	for (int g = 0; g < ngpus; g++) {
		pl_gpu_uuid(uuid, rk->owner_uid, rk->group, rk->index, slot, g);
		pl_gpu_serial(serial, rk->owner_uid, rk->group, rk->index, slot, g);
		pl_gpu_runtime(w, k, slot, g, &rt);
		em_map(m);
		em_kint(m, "index", g);
		em_kstr(m, "uuid", uuid);
		em_kstr(m, "serial", serial);
		emit_runtime(m, &rt);
		em_end_map(m);
	}
	em_end_seq(m);
}

int pl_emit_node_state(FILE *f, struct pl_world *w, int ni)
{
	const struct pl_node *n = &w->nodes[ni];
	const struct pl_rack *rk;
	int prof, ngpus = 0;
	char rack_uuid[37];
	struct em m;
	int rc;

	if (n->state != PL_N_BOUND)
		return -ENOENT;
	rk = &w->racks[n->rack];
	prof = pl_hmap_gets(&w->profile_by_name, rk->profile);
	if (prof >= 0)
		ngpus = w->profiles[prof].gpus_per_node;
	pl_uuid(rack_uuid, rk->owner_uid, "rack", rk->group, rk->index, -1, -1);
	rc = em_open(&m, f);
	em_doc(&m);
	em_map(&m);
	em_kstr(&m, "apiVersion", PL_API_VERSION);
	em_kstr(&m, "kind", "SGPUNodeState");
	em_kmap(&m, "metadata");
	em_kstr(&m, "name", n->m.name);
	em_end_map(&m);
	em_kmap(&m, "spec");
	em_kmap(&m, "nodeRef");
	em_kstr(&m, "name", n->m.name);
	em_kstr(&m, "uid", n->m.uid);
	em_end_map(&m);
	em_kmap(&m, "inventoryRef");
	em_kstr(&m, "name", rk->inventory);
	em_kstr(&m, "uid", rk->owner_uid);
	em_end_map(&m);
	em_kmap(&m, "rack");
	em_kstr(&m, "name", rk->m.name);
	em_kstr(&m, "group", rk->group);
	em_kint(&m, "index", rk->index);
	em_kstr(&m, "uuid", rack_uuid);
	em_end_map(&m);
	em_kint(&m, "nodeIndex", n->slot);
	em_kmap(&m, "profileRef");
	em_kstr(&m, "name", rk->profile);
	em_kint(&m, "revision", rk->profile_revision);
	em_end_map(&m);
	if (prof >= 0)
		em_kstr(&m, "gpuProduct", w->profiles[prof].gpu_product);
	em_kmap(&m, "fabric");
	em_kstr(&m, "clusterUUID", rk->fabric_uuid);
	em_kint(&m, "cliqueID", rk->clique_id);
	em_end_map(&m);
	emit_gpus(&m, w, rk, n->rack, n->slot, ngpus);
	em_end_map(&m);
	em_end_map(&m);
	em_doc_end(&m);
	return em_close(&m) ?: rc;
}
