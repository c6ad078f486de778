/* Status documents (apply with --subresource=status) and each assigned
 * Node's desired-state document (see emit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/em.h"
#include "planner/emit.h"

/* An unchanged condition keeps the transition time it already has. */
static const char *transition_time(struct pl_world *w, const struct pl_meta *m,
				   const struct pl_condition *c, const char *now)
{
	const char *prev = pl_kvs_get(&m->conds, c->type);
	size_t len = strlen(c->status);

	if (prev && !strncmp(prev, c->status, len) && prev[len] == '|')
		return prev + len + 1;
	(void)w;
	return now;
}

static void emit_conditions(struct em *m, struct pl_world *w, const struct pl_meta *meta,
			    const struct pl_condition *c, int n, const char *now)
{
	em_kseq(m, "conditions");
	for (int i = 0; i < n; i++) {
		em_map(m);
		em_kstr(m, "type", c[i].type);
		em_kstr(m, "status", c[i].status);
		em_kstr(m, "reason", c[i].reason);
		em_kstr(m, "message", c[i].message ? c[i].message : "");
		em_kint(m, "observedGeneration", meta->generation);
		em_kstr(m, "lastTransitionTime", transition_time(w, meta, &c[i], now));
		em_end_map(m);
	}
	em_end_seq(m);
}

static void head(struct em *m, const char *kind, const char *name)
{
	em_doc(m);
	em_map(m);
	em_kstr(m, "apiVersion", PL_API_VERSION);
	em_kstr(m, "kind", kind);
	em_kmap(m, "metadata");
	em_kstr(m, "name", name);
	em_end_map(m);
	em_kmap(m, "status");
}

static void tail(struct em *m)
{
	em_end_map(m);
	em_end_map(m);
	em_doc_end(m);
}

static struct pl_world *sort_world;
static int kind_sel;

static const char *name_of(int i)
{
	switch (kind_sel) {
	case 0: return sort_world->inventories[i].m.name;
	case 1: return sort_world->racks[i].m.name;
	case 2: return sort_world->policies[i].m.name;
	case 4: return sort_world->profiles[i].m.name;
	default: return sort_world->nodes[i].m.name;
	}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(name_of(*(const int *)a), name_of(*(const int *)b));
}

static int *sorted(struct pl_world *w, int kind, int n)
{
	int *v = malloc(sizeof(int) * (size_t)(n + 1));

	if (!v)
		return NULL;
	for (int i = 0; i < n; i++)
		v[i] = i;
	sort_world = w;
	kind_sel = kind;
	qsort(v, (size_t)n, sizeof(int), name_cmp);
	return v;
}

static void inventory_status(struct em *m, struct pl_world *w, int i, const char *now)
{
	struct pl_condition c[PL_INV_CONDITIONS];
	const struct pl_inventory *inv = &w->inventories[i];
	bool ready = true;

	pl_inventory_conditions(w, i, c);
	for (int k = 0; k < PL_INV_CONDITIONS; k++)
		ready &= !strcmp(c[k].status, "True");
	head(m, "SGPUInventory", inv->m.name);
	em_kint(m, "observedGeneration", inv->m.generation);
	em_kint(m, "racks", inv->admission == PL_R_ADMITTED ? inv->racks : 0);
	em_kstr(m, "phase", ready ? "Ready" : "NotReady");
	emit_conditions(m, w, &inv->m, c, PL_INV_CONDITIONS, now);
	tail(m);
}

static void rack_status(struct em *m, struct pl_world *w, int k, const char *now)
{
	struct pl_condition c;
	const struct pl_rack *rk = &w->racks[k];
	int bound = 0;

	for (int s = 0; s < rk->nnodes; s++)
		bound += rk->nodes[s].name != NULL;
	pl_rack_condition(w, k, &c);
	head(m, "SGPURack", rk->m.name);
	em_kint(m, "boundNodes", bound);
	em_kint(m, "logicalNodes", rk->nnodes);
	emit_conditions(m, w, &rk->m, &c, 1, now);
	tail(m);
}

static void policy_status(struct em *m, struct pl_world *w, int pi, const char *now)
{
	struct pl_condition c;
	const struct pl_policy *p = &w->policies[pi];

	pl_policy_condition(w, pi, &c);
	head(m, "SGPURuntimePolicy", p->m.name);
	em_kint(m, "observedGeneration", p->m.generation);
	if (p->reason == PL_R_ACCEPTED)
		em_kstr(m, "scope", pl_scope_name(p->scope));
	emit_conditions(m, w, &p->m, &c, 1, now);
	tail(m);
}

static void profile_status(struct em *m, struct pl_world *w, int i, const char *now)
{
	const struct pl_profile *p = &w->profiles[i];
	struct pl_condition c = {
		"Valid", p->invalid ? "False" : "True", p->invalid ? "InvalidSpec" : "Valid",
		p->invalid ? p->invalid : "the spec is valid",
	};

	head(m, "SGPURackProfile", p->m.name);
	em_kint(m, "observedGeneration", p->m.generation);
	emit_conditions(m, w, &p->m, &c, 1, now);
	tail(m);
}

int pl_emit_status(FILE *f, struct pl_world *w, const char *now)
{
	int *inv = sorted(w, 0, w->ninventories), *racks = sorted(w, 1, w->nracks);
	int *pol = sorted(w, 2, w->npolicies), *prof = sorted(w, 4, w->nprofiles);
	struct em m;
	int rc = -ENOMEM;

	if (inv && racks && pol && prof) {
		rc = em_open(&m, f);
		for (int i = 0; !rc && i < w->nprofiles; i++)
			profile_status(&m, w, prof[i], now);
		for (int i = 0; !rc && i < w->ninventories; i++)
			inventory_status(&m, w, inv[i], now);
		for (int i = 0; !rc && i < w->nracks; i++)
			if (w->racks[racks[i]].generated || w->racks[racks[i]].remove)
				rack_status(&m, w, racks[i], now);
		for (int i = 0; !rc && i < w->npolicies; i++)
			policy_status(&m, w, pol[i], now);
		rc = em_close(&m) ?: rc;
	}
	free(inv);
	free(racks);
	free(pol);
	free(prof);
	return rc;
}

int pl_state_nodes(struct pl_world *w, int **out)
{
	int *v = sorted(w, 3, w->nnodes), n = 0;

	if (!v)
		return -ENOMEM;
	for (int i = 0; i < w->nnodes; i++) {
		const struct pl_node *nd = &w->nodes[v[i]];

		if (nd->state == PL_N_BOUND && w->racks[nd->rack].generated)
			v[n++] = v[i];
	}
	*out = v;
	return n;
}
