/* The projection onto a bound Node: exactly two labels and the compact
 * assignment annotation.  The annotation names the binding (inventory UID,
 * rack, coordinate, Node UID), so cleanup can tell its own projection from
 * anything else; values it does not recognise are reported, never
 * overwritten. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "planner/planner.h"

bool pl_node_projected(const struct pl_node *n)
{
	return pl_kvs_get(&n->labels, PL_LABEL_ASSIGNED) ||
	       pl_kvs_get(&n->annotations, PL_ANN_ASSIGNMENT);
}

/* A JSON string: names and UIDs are Kubernetes names, but escape anyway. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* Compact, fixed key order (the bytes are compared across passes). */
const char *pl_assignment_json(struct pl_world *w, int k, int s)
{
	const struct pl_rack *rk = &w->racks[k];
	char buf[2048], *out = NULL;	/* names <= 253 each: fits */
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	int bad;

	if (!f)
		return NULL;
	fputs("{\"inventory\":{\"name\":", f);
	json_str(f, rk->inventory);
	fputs(",\"uid\":", f);
	json_str(f, rk->owner_uid);
	fputs("},\"rack\":{\"name\":", f);
	json_str(f, rk->m.name);
	fputs(",\"group\":", f);
	json_str(f, rk->group);
	fprintf(f, ",\"index\":%d},\"profile\":{\"name\":", rk->index);
	json_str(f, rk->profile);
	fprintf(f, ",\"revision\":%lld},\"node\":{\"index\":%d,\"name\":",
		(long long)rk->profile_revision, s);
	json_str(f, rk->nodes[s].name);
	fputs(",\"uid\":", f);
	json_str(f, rk->nodes[s].uid);
	fputs("}}", f);
	fputc(0, f);
	bad = ferror(f);
	if (!fclose(f) && !bad)
		out = pl_strdup(&w->arena, buf);
	return out;
}

static const char *jstr(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool jint_is(const cJSON *o, const char *a, const char *b, int want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);

	return cJSON_IsNumber(v) && v->valuedouble == (double)want;
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

bool pl_annotation_names(const struct pl_world *w, const char *ann, int k, int s,
			 const char *node_uid)
{
	const struct pl_rack *rk = &w->racks[k];
	cJSON *root = cJSON_Parse(ann);
	bool ok;

	ok = root && same(jstr(root, "inventory", "uid"), rk->owner_uid) &&
	     same(jstr(root, "rack", "name"), rk->m.name) &&
	     jint_is(root, "node", "index", s) && same(jstr(root, "node", "uid"), node_uid);
	cJSON_Delete(root);
	return ok;
}

static void incompatible(struct pl_world *w, struct pl_node *n, const char *why)
{
	struct pl_inventory *inv = &w->inventories[w->racks[n->rack].inv];

	n->problem = why;
	inv->st.incompatible++;
	if (!inv->st.ex_incompatible)
		inv->st.ex_incompatible = pl_printf(&w->arena, "Node %s %s", n->m.name, why);
}

int pl_project(struct pl_world *w)
{
	char want[64];

	for (int ni = 0; ni < w->nnodes; ni++) {
		struct pl_node *n = &w->nodes[ni];
		const struct pl_rack *rk;
		const char *ann, *clique;

		if (n->state != PL_N_BOUND)
			continue;
		rk = &w->racks[n->rack];
		if (!rk->generated)
			continue;	/* kept racks: their Nodes stay as they are */
		ann = pl_kvs_get(&n->annotations, PL_ANN_ASSIGNMENT);
		clique = pl_kvs_get(&n->labels, PL_LABEL_CLIQUE);
		snprintf(want, sizeof(want), "%s.%d", rk->fabric_uuid, rk->clique_id);
		if (ann && !pl_annotation_names(w, ann, n->rack, n->slot, n->m.uid)) {
			incompatible(w, n, "has an sgpu-assignment annotation naming another binding");
			continue;
		}
		if (!ann && clique && strcmp(clique, want)) {
			incompatible(w, n, "has nvidia.com/gpu.clique set by another manager");
			continue;
		}
		if (pl_push_projection(w, ni, n->rack, n->slot) < 0)
			return -ENOMEM;
	}
	return 0;
}
