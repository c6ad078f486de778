/* Builders for the planner's unit tests: Kubernetes objects as YAML text,
 * a world decoded from them, planned, and the plan's outputs as strings. */
#ifndef MOKKA_TESTS_PLANNER_FIXTURE_H
#define MOKKA_TESTS_PLANNER_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "planner/decode.h"
#include "planner/emit.h"

static inline char *fx_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *fx_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	cr_assert(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	return s;
}

/* nodesPerRack, gpusPerNode, extra spec lines (indented 2) */
static inline char *fx_profile(const char *name, int gen, int npr, int gpn, const char *extra)
{
	return fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURackProfile\n"
		      "metadata: {name: %s, uid: prof-%s, generation: %d, "
		      "creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
		      "spec:\n  nodesPerRack: %d\n  gpusPerNode: %d\n%s\n",
		      name, name, gen, npr, gpn, extra ? extra : "");
}

/* groups: YAML flow list text, e.g. "[{name: g, profileRef: {name: p}, count: 1}]" */
static inline char *fx_inventory(const char *name, const char *uid, const char *ts,
				 const char *groups)
{
	return fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPUInventory\n"
		      "metadata: {name: %s, uid: %s, generation: 1, creationTimestamp: \"%s\"}\n"
		      "spec:\n  rackGroups: %s\n", name, uid, ts, groups);
}

/* labels: flow mapping body, e.g. "pool: a"; eligible adds sgpu-node=true */
static inline char *fx_node(const char *name, const char *uid, const char *ts, int eligible,
			    const char *labels, const char *annotations)
{
	return fx_fmt("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  uid: %s\n"
		      "  creationTimestamp: \"%s\"\n  labels: {%s%s%s}\n  annotations: {%s}\n",
		      name, uid, ts, eligible ? "mokka.nvidia.com/sgpu-node: \"true\"" : "",
		      eligible && labels && *labels ? ", " : "", labels ? labels : "",
		      annotations ? annotations : "");
}

/* An SGPURack as the control plane wrote it; nodes: flow list of
 * {index, nodeRef: {name, uid}}. */
static inline char *fx_rack(const char *inv, const char *inv_uid, const char *group, int index,
			    const char *nodes)
{
	return fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURack\n"
		      "metadata:\n  name: %s-%s-%d\n  ownerReferences: [{apiVersion: "
		      "mokka.nvidia.com/v1alpha1, kind: SGPUInventory, name: %s, uid: %s, "
		      "controller: true}]\nspec:\n  inventoryRef: {name: %s, uid: %s}\n"
		      "  rackGroup: %s\n  rackIndex: %d\n  nodes: %s\n",
		      inv, group, index, inv, inv_uid, inv, inv_uid, group, index, nodes);
}

static inline char *fx_policy(const char *name, const char *uid, const char *ts,
			      const char *target, const char *fields)
{
	return fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURuntimePolicy\n"
		      "metadata: {name: %s, uid: %s, generation: 1, creationTimestamp: \"%s\"}\n"
		      "spec:\n  targetRef: %s\n%s\n", name, uid, ts, target, fields);
}

/* Concatenate NULL-terminated parts (freeing them). */
static inline char *fx_cat(char *first, ...)
{
	size_t len = 0;
	char *out = calloc(1, 1), *p;
	va_list ap;

	va_start(ap, first);
	for (p = first; p; p = va_arg(ap, char *)) {
		size_t n = strlen(p);

		out = realloc(out, len + n + 1);
		memcpy(out + len, p, n + 1);
		len += n;
		free(p);
	}
	va_end(ap);
	return out;
}

struct fx {
	struct pl_world w;
	struct pl_decoder d;
};

/* Decode and plan; the decode must succeed. */
static inline void fx_plan(struct fx *f, char *yaml)
{
	memset(f, 0, sizeof(*f));
	pl_world_init(&f->w);
	f->d.w = &f->w;
	f->d.source = "test.yaml";
	cr_assert_eq(pl_decode(&f->d, yaml, strlen(yaml)), 0, "decode: %s", f->d.err);
	free(yaml);
	cr_assert_eq(pl_plan(&f->w), 0);
}

static inline void fx_free(struct fx *f)
{
	pl_decoder_free(&f->d);
	pl_world_free(&f->w);
}

static inline struct pl_node *fx_get_node(struct fx *f, const char *name)
{
	int i = pl_hmap_gets(&f->w.node_by_name, name);

	cr_assert(i >= 0, "no node %s", name);
	return &f->w.nodes[i];
}

static inline struct pl_rack *fx_get_rack(struct fx *f, const char *name)
{
	int i = pl_hmap_gets(&f->w.rack_by_name, name);

	cr_assert(i >= 0, "no rack %s", name);
	return &f->w.racks[i];
}

/* The name of the node bound at rack/slot, or "" */
static inline const char *fx_bound(struct fx *f, const char *rack, int slot)
{
	struct pl_rack *rk = fx_get_rack(f, rack);

	return slot < rk->nnodes && rk->nodes[slot].name ? rk->nodes[slot].name : "";
}

static inline struct pl_inventory *fx_get_inv(struct fx *f, const char *name)
{
	int i = pl_hmap_gets(&f->w.inv_by_name, name);

	cr_assert(i >= 0, "no inventory %s", name);
	return &f->w.inventories[i];
}

/* One inventory condition by type. */
static inline struct pl_condition fx_cond(struct fx *f, const char *inv, const char *type)
{
	struct pl_condition c[PL_INV_CONDITIONS];
	int i = pl_hmap_gets(&f->w.inv_by_name, inv);

	pl_inventory_conditions(&f->w, i, c);
	for (int k = 0; k < PL_INV_CONDITIONS; k++)
		if (!strcmp(c[k].type, type))
			return c[k];
	cr_assert_fail("no condition %s", type);
	return c[0];
}

static inline struct pl_policy *fx_get_policy(struct fx *f, const char *name)
{
	for (int i = 0; i < f->w.npolicies; i++)
		if (!strcmp(f->w.policies[i].m.name, name))
			return &f->w.policies[i];
	cr_assert_fail("no policy %s", name);
	return NULL;
}

/* Projection documents for a node: 1 = projected, -1 = removal, 0 = none. */
static inline int fx_projection(struct fx *f, const char *node)
{
	for (int i = 0; i < f->w.nprojections; i++)
		if (!strcmp(f->w.nodes[f->w.projections[i].node].m.name, node))
			return f->w.projections[i].rack >= 0 ? 1 : -1;
	return 0;
}

static inline char *fx_emit(struct fx *f, int (*fn)(FILE *, struct pl_world *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	cr_assert(m);
	cr_assert_eq(fn(m, &f->w), 0);
	fclose(m);
	return buf;
}

#define GROUP(name, prof, count, sel) \
	"{name: " name ", profileRef: {name: " prof "}, count: " #count sel "}"
#define POOL(p) ", nodeSelector: {matchLabels: {pool: " p "}}"

#endif
