/* mokka-plan's decoder: dispatch by kind, metadata (see decode.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "planner/decode_internal.h"

/* The conditions already in status, so an unchanged condition keeps its
 * lastTransitionTime.  Best effort: anything malformed is ignored. */
static int dc_conditions(struct dctx *c, struct pl_meta *m)
{
	const struct pt *l = pt_get(pt_get(c->obj, "status"), "conditions");

	if (!l || l->kind != PT_SEQ)
		return 0;
	m->conds.v = pl_alloc(&c->w->arena, sizeof(*m->conds.v) * (size_t)(l->n + 1));
	if (!m->conds.v)
		return -ENOMEM;
	for (int i = 0; i < l->n; i++) {
		const struct pt *t = pt_get(l->kids[i], "type"), *s = pt_get(l->kids[i], "status"),
			*ts = pt_get(l->kids[i], "lastTransitionTime");

		if (!t || !s || !ts || t->kind != PT_SCALAR || s->kind != PT_SCALAR ||
		    ts->kind != PT_SCALAR)
			continue;
		m->conds.v[m->conds.n].key = pl_strdup(&c->w->arena, t->str);
		m->conds.v[m->conds.n].val = pl_printf(&c->w->arena, "%s|%s", s->str, ts->str);
		m->conds.n++;
	}
	return 0;
}

static int dc_meta(struct dctx *c, struct pl_meta *m, bool need_uid)
{
	const struct pt *md = pt_get(c->obj, "metadata");
	int64_t gen = 0;
	int rc;

	if (!md || md->kind != PT_MAP)
		return dc_bad(c, md, "metadata", "required mapping");
	if ((rc = dc_str(c, md, "name", "metadata.name", true, &m->name)) < 0)
		return rc;
	c->name = m->name;
	if ((rc = dc_dns_name(c, pt_get(md, "name"), "metadata.name", m->name, 253)) < 0)
		return rc;
	if ((rc = dc_str(c, md, "uid", "metadata.uid", need_uid, &m->uid)) < 0 ||
	    (rc = dc_str(c, md, "creationTimestamp", "metadata.creationTimestamp", false,
			 &m->created)) < 0 ||
	    (rc = dc_int(c, md, "generation", "metadata.generation", 0, INT64_MAX, false,
			 &gen, NULL)) < 0)
		return rc;
	m->generation = gen;
	return dc_conditions(c, m);
}

/* A spec error: fatal when strict, else the object is invalid. */
static int soft(struct dctx *c, int rc, const char **invalid)
{
	if (rc != -EINVAL || c->d->strict)
		return rc;
	*invalid = pl_strdup(&c->w->arena, strchr(c->msg, ' ') ? strchr(c->msg, ' ') + 1 : c->msg);
	c->d->nwarnings++;
	if (c->d->warn)
		c->d->warn(c->d->warn_ctx, c->msg);
	return 0;
}

static int add_name(struct dctx *c, struct pl_hmap *seen, const char *name)
{
	int rc = pl_hmap_put(seen, name, strlen(name), 0, NULL);

	if (rc == -EEXIST)
		return dc_bad(c, NULL, "metadata.name", "duplicate %s", c->kind);
	return rc;
}

static int do_profile(struct dctx *c)
{
	struct pl_profile *p = pl_add_profile(c->w);
	int rc;

	if (!p)
		return -ENOMEM;
	if ((rc = dc_meta(c, &p->m, false)) < 0)
		return rc;
	return soft(c, dc_profile(c, pt_get(c->obj, "spec"), p), &p->invalid);
}

static int do_inventory(struct dctx *c)
{
	struct pl_inventory *inv = pl_add_inventory(c->w);
	int rc;

	if (!inv)
		return -ENOMEM;
	if ((rc = dc_meta(c, &inv->m, true)) < 0)
		return rc;
	return soft(c, dc_inventory(c, pt_get(c->obj, "spec"), inv), &inv->invalid);
}

static int do_rack(struct dctx *c)
{
	struct pl_rack *rk = pl_add_rack(c->w);
	const char *why = NULL;
	int rc;

	if (!rk)
		return -ENOMEM;
	if ((rc = dc_meta(c, &rk->m, false)) < 0)
		return rc;
	rc = soft(c, dc_rack(c, c->obj, rk), &why);
	if (why)
		rk->owner_uid = NULL;	/* unreadable: never overwritten */
	return rc;
}

static int do_policy(struct dctx *c)
{
	struct pl_policy *p = pl_add_policy(c->w);
	int rc;

	if (!p)
		return -ENOMEM;
	if ((rc = dc_meta(c, &p->m, false)) < 0)
		return rc;
	return soft(c, dc_policy(c, pt_get(c->obj, "spec"), p), &p->invalid);
}

static int do_node(struct dctx *c)
{
	struct pl_node *n = pl_add_node(c->w);
	const struct pt *md;
	const char *v;
	int rc;

	if (!n)
		return -ENOMEM;
	if ((rc = dc_meta(c, &n->m, true)) < 0)
		return rc;
	md = pt_get(c->obj, "metadata");
	if ((rc = dc_kvs(c, md, "labels", "metadata.labels", &n->labels)) < 0 ||
	    (rc = dc_kvs(c, md, "annotations", "metadata.annotations", &n->annotations)) < 0)
		return rc;
	v = pl_kvs_get(&n->labels, PL_LABEL_NODE);
	n->eligible = v && !strcmp(v, "true");
	return 0;
}

static const struct kind_row {
	const char *kind, *api;		/* api: the group/version prefix */
	int (*decode)(struct dctx *c);
	size_t seen_off;
} kinds[] = {
	{ "SGPURackProfile", PL_API_GROUP "/", do_profile, 0 },
	{ "SGPUInventory", PL_API_GROUP "/", do_inventory, 1 },
	{ "SGPURack", PL_API_GROUP "/", do_rack, 2 },
	{ "SGPURuntimePolicy", PL_API_GROUP "/", do_policy, 3 },
	{ "Node", "v1", do_node, 4 },
};

struct stream_ctx {
	struct pl_decoder *d;
};

static int on_object(const struct pt *obj, void *arg)
{
	struct stream_ctx *s = arg;
	struct dctx c = { .d = s->d, .w = s->d->w, .kind = "object", .obj = obj };
	const char *kind = NULL, *api = NULL;
	int rc;

	if (obj->kind != PT_MAP) {
		snprintf(s->d->err, sizeof(s->d->err), "%s:%d: not a Kubernetes object (a mapping)",
			 s->d->source, obj->line);
		return -EINVAL;
	}
	/* the name, when readable, for every message from here on */
	const struct pt *nm = pt_get(pt_get(obj, "metadata"), "name");

	if (nm && nm->kind == PT_SCALAR)
		c.name = nm->str;
	if ((rc = dc_str(&c, obj, "kind", "kind", true, &kind)) < 0 ||
	    (rc = dc_str(&c, obj, "apiVersion", "apiVersion", true, &api)) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kind, kinds[i].kind))
			continue;
		c.kind = kinds[i].kind;
		if (strncmp(api, kinds[i].api, strlen(kinds[i].api)) ||
		    (!strcmp(kinds[i].api, "v1") && strcmp(api, "v1"))) {
			rc = dc_bad(&c, pt_get(obj, "apiVersion"), "apiVersion",
				    "\"%s\" is not %s%s", api, kinds[i].api,
				    kinds[i].api[strlen(kinds[i].api) - 1] == '/' ? "v1alpha1" : "");
			goto out;
		}
		s->d->nobjects++;
		rc = kinds[i].decode(&c);
		if (!rc)
			rc = add_name(&c, &s->d->seen[kinds[i].seen_off], c.name);
		goto out;
	}
	s->d->nignored++;	/* other kinds (kubectl get all) are not ours */
	return 0;
out:
	if (rc == -EINVAL)
		snprintf(s->d->err, sizeof(s->d->err), "%s", c.msg);
	return rc;
}

int pl_decode(struct pl_decoder *d, const char *buf, size_t len)
{
	struct stream_ctx s = { .d = d };
	char err[512];
	int rc;

	d->err[0] = 0;
	rc = pt_stream(buf, len, on_object, &s, err, sizeof(err));
	if (rc == -EINVAL && !d->err[0])
		snprintf(d->err, sizeof(d->err), "%s: %s", d->source, err);
	if (rc == -ENOMEM && !d->err[0])
		snprintf(d->err, sizeof(d->err), "%s: out of memory", d->source);
	return rc;
}

void pl_decoder_free(struct pl_decoder *d)
{
	for (int i = 0; i < 5; i++)
		pl_hmap_free(&d->seen[i]);
}
