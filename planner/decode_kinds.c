/* The four Mokka kinds' specs (see decode.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "planner/decode_internal.h"

#define SUB(buf, ...) snprintf(buf, sizeof(buf), __VA_ARGS__)

int dc_profile(struct dctx *c, const struct pt *spec, struct pl_profile *p)
{
	const struct pt *defaults;
	int64_t npr = 0, gpn = 0;
	int rc;

	if (!spec || spec->kind != PT_MAP)
		return dc_bad(c, spec, "spec", "required mapping");
	if ((rc = dc_int(c, spec, "nodesPerRack", "spec.nodesPerRack", 1, 1024, true, &npr,
			 NULL)) < 0 ||
	    (rc = dc_int(c, spec, "gpusPerNode", "spec.gpusPerNode", 1, 64, true, &gpn,
			 NULL)) < 0 ||
	    (rc = dc_str(c, spec, "gpuProduct", "spec.gpuProduct", false, &p->gpu_product)) < 0)
		return rc;
	p->nodes_per_rack = (int)npr;
	p->gpus_per_node = (int)gpn;
	defaults = pt_get(spec, "defaults");
	if (defaults && defaults->kind != PT_MAP)
		return dc_bad(c, defaults, "spec.defaults", "must be a mapping");
	return dc_runtime(c, pt_get(defaults, "runtime"), "spec.defaults.runtime", &p->defaults);
}

static int dc_group(struct dctx *c, const struct pt *g, int i, struct pl_group *grp)
{
	char path[128];
	int64_t count = 0;
	int rc;

	if (g->kind != PT_MAP)
		return dc_bad(c, g, "spec.rackGroups", "[%d]: must be a mapping", i);
	SUB(path, "spec.rackGroups[%d].name", i);
	if ((rc = dc_str(c, g, "name", path, true, &grp->name)) < 0 ||
	    (rc = dc_dns_name(c, pt_get(g, "name"), path, grp->name, 63)) < 0)
		return rc;
	SUB(path, "spec.rackGroups[%d].profileRef", i);
	if (!pt_get(g, "profileRef") || pt_get(g, "profileRef")->kind != PT_MAP)
		return dc_bad(c, g, path, "required mapping");
	SUB(path, "spec.rackGroups[%d].profileRef.name", i);
	if ((rc = dc_str(c, pt_get(g, "profileRef"), "name", path, true, &grp->profile)) < 0)
		return rc;
	SUB(path, "spec.rackGroups[%d].count", i);
	if ((rc = dc_int(c, g, "count", path, 0, PL_MAX_RACKS, true, &count, NULL)) < 0)
		return rc;
	grp->count = (int)count;
	SUB(path, "spec.rackGroups[%d].nodeSelector", i);
	return dc_selector(c, g, "nodeSelector", path, &grp->selector);
}

int dc_inventory(struct dctx *c, const struct pt *spec, struct pl_inventory *inv)
{
	const struct pt *groups = pt_get(spec, "rackGroups");
	int rc;

	if (!spec || spec->kind != PT_MAP)
		return dc_bad(c, spec, "spec", "required mapping");
	if (!groups || groups->kind != PT_SEQ)
		return dc_bad(c, groups ? groups : spec, "spec.rackGroups", "required list");
	if (groups->n > 1024)
		return dc_bad(c, groups, "spec.rackGroups", "more than 1024 rack groups");
	inv->groups = pl_alloc(&c->w->arena, sizeof(*inv->groups) * (size_t)(groups->n + 1));
	if (!inv->groups)
		return -ENOMEM;
	for (int i = 0; i < groups->n; i++) {
		if ((rc = dc_group(c, groups->kids[i], i, &inv->groups[i])) < 0)
			return rc;
		inv->groups[i].prof = -1;
		if (pl_group_index(inv, inv->groups[i].name) >= 0) {
			char path[64];

			SUB(path, "spec.rackGroups[%d].name", i);
			return dc_bad(c, groups->kids[i], path, "duplicate rack group %s",
				      inv->groups[i].name);
		}
		inv->ngroups++;
	}
	return 0;
}

static const char *owner_uid(struct dctx *c, const struct pt *refs)
{
	for (int i = 0; refs && refs->kind == PT_SEQ && i < refs->n; i++) {
		const struct pt *r = refs->kids[i], *kind = pt_get(r, "kind"),
			*api = pt_get(r, "apiVersion"), *ctl = pt_get(r, "controller"),
			*uid = pt_get(r, "uid");

		if (kind && kind->kind == PT_SCALAR && !strcmp(kind->str, "SGPUInventory") &&
		    api && api->kind == PT_SCALAR && !strncmp(api->str, PL_API_GROUP "/",
							       strlen(PL_API_GROUP) + 1) &&
		    ctl && ctl->kind == PT_SCALAR && !strcmp(ctl->str, "true") &&
		    uid && uid->kind == PT_SCALAR)
			return pl_strdup(&c->w->arena, uid->str);
	}
	return NULL;
}

static int dc_rack_nodes(struct dctx *c, const struct pt *nodes, struct pl_rack *rk)
{
	char path[96];
	int rc, max = -1;

	if (!nodes)
		return 0;
	if (nodes->kind != PT_SEQ)
		return dc_bad(c, nodes, "spec.nodes", "must be a list");
	for (int i = 0; i < nodes->n; i++) {
		int64_t idx;

		SUB(path, "spec.nodes[%d].index", i);
		if ((rc = dc_int(c, nodes->kids[i], "index", path, 0, 1023, true, &idx, NULL)) < 0)
			return rc;
		max = idx > max ? (int)idx : max;
	}
	rk->nnodes = max + 1;
	rk->nodes = pl_alloc(&c->w->arena, sizeof(*rk->nodes) * (size_t)(max + 2));
	if (!rk->nodes)
		return -ENOMEM;
	for (int i = 0; i < nodes->n; i++) {
		const struct pt *ref = pt_get(nodes->kids[i], "nodeRef");
		int64_t idx = 0;
		struct pl_binding b = { 0 };

		dc_int(c, nodes->kids[i], "index", path, 0, 1023, true, &idx, NULL);
		if (!ref)
			continue;	/* a free coordinate */
		SUB(path, "spec.nodes[%d].nodeRef.name", i);
		if ((rc = dc_str(c, ref, "name", path, true, &b.name)) < 0)
			return rc;
		SUB(path, "spec.nodes[%d].nodeRef.uid", i);
		if ((rc = dc_str(c, ref, "uid", path, true, &b.uid)) < 0)
			return rc;
		if (rk->nodes[idx].name)
			return dc_bad(c, nodes->kids[i], path, "index %d listed twice", (int)idx);
		rk->nodes[idx] = b;
	}
	return 0;
}

int dc_rack(struct dctx *c, const struct pt *obj, struct pl_rack *rk)
{
	const struct pt *spec = pt_get(obj, "spec"), *pref;
	int64_t idx = 0, rev = 0, clique = 0;
	int rc;

	rk->owner_uid = owner_uid(c, pt_get(pt_get(obj, "metadata"), "ownerReferences"));
	rk->terminating = pt_get(pt_get(obj, "metadata"), "deletionTimestamp") != NULL;
	if (!spec || spec->kind != PT_MAP)
		return dc_bad(c, spec, "spec", "required mapping");
	pref = pt_get(spec, "profileRef");
	if ((rc = dc_str(c, pt_get(spec, "inventoryRef"), "name", "spec.inventoryRef.name",
			 true, &rk->inventory)) < 0 ||
	    (rc = dc_str(c, spec, "rackGroup", "spec.rackGroup", true, &rk->group)) < 0 ||
	    (rc = dc_int(c, spec, "rackIndex", "spec.rackIndex", 0, PL_MAX_RACKS, true, &idx,
			 NULL)) < 0 ||
	    (rc = dc_str(c, pref, "name", "spec.profileRef.name", false, &rk->profile)) < 0 ||
	    (rc = dc_int(c, pref, "revision", "spec.profileRef.revision", 0, INT64_MAX, false,
			 &rev, NULL)) < 0 ||
	    (rc = dc_str(c, spec, "fabricUUID", "spec.fabricUUID", false, &rk->fabric_uuid)) < 0 ||
	    (rc = dc_int(c, spec, "cliqueID", "spec.cliqueID", 0, 32767, false, &clique,
			 NULL)) < 0)
		return rc;
	rk->index = (int)idx;
	rk->profile_revision = rev;
	rk->clique_id = (int)clique;
	return dc_rack_nodes(c, pt_get(spec, "nodes"), rk);
}

int dc_policy(struct dctx *c, const struct pt *spec, struct pl_policy *p)
{
	const struct pt *t, *groups;
	int rc;

	if (!spec || spec->kind != PT_MAP)
		return dc_bad(c, spec, "spec", "required mapping");
	t = pt_get(spec, "targetRef");
	if (!t || t->kind != PT_MAP)
		return dc_bad(c, t ? t : spec, "spec.targetRef", "required mapping");
	if ((rc = dc_str(c, t, "name", "spec.targetRef.name", true, &p->inventory)) < 0)
		return rc;
	groups = pt_get(t, "rackGroups");
	if (groups) {
		if (groups->kind != PT_SEQ)
			return dc_bad(c, groups, "spec.targetRef.rackGroups", "must be a list");
		p->groups_present = true;
		p->groups = pl_alloc(&c->w->arena, sizeof(char *) * (size_t)(groups->n + 1));
		if (!p->groups)
			return -ENOMEM;
		for (int i = 0; i < groups->n; i++) {
			if (groups->kids[i]->kind != PT_SCALAR)
				return dc_bad(c, groups->kids[i], "spec.targetRef.rackGroups",
					      "[%d]: must be a string", i);
			p->groups[p->ngroups++] = pl_strdup(&c->w->arena, groups->kids[i]->str);
		}
	}
	if ((rc = dc_ilist(c, t, "rackIndexes", "spec.targetRef.rackIndexes", PL_MAX_RACKS,
			   &p->racks)) < 0 ||
	    (rc = dc_ilist(c, t, "nodeIndexes", "spec.targetRef.nodeIndexes", 1023,
			   &p->nodes)) < 0 ||
	    (rc = dc_ilist(c, t, "gpuIndexes", "spec.targetRef.gpuIndexes", 63, &p->gpus)) < 0)
		return rc;
	return dc_runtime(c, spec, "spec", &p->rt);
}
