/* Typed getters for the planner's decoder (see decode_internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/decode_internal.h"

int dc_bad(struct dctx *c, const struct pt *at, const char *path, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(c->msg, sizeof(c->msg), "%s:%d: %s %s: %s: %s", c->d->source,
		 at ? at->line : c->obj->line, c->kind, c->name ? c->name : "(unnamed)",
		 path, why);
	return -EINVAL;
}

static const char *kind_name(const struct pt *n)
{
	return n->kind == PT_MAP ? "a mapping" : n->kind == PT_SEQ ? "a list" : "a scalar";
}

int dc_str(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   bool required, const char **out)
{
	const struct pt *v = pt_get(map, key);

	if (!v || (v->kind == PT_SCALAR && !v->quoted && (!strcmp(v->str, "null") || !v->len))) {
		if (required)
			return dc_bad(c, map, path, "required");
		return 0;
	}
	if (v->kind != PT_SCALAR)
		return dc_bad(c, v, path, "must be a string, got %s", kind_name(v));
	*out = pl_strndup(&c->w->arena, v->str, v->len);
	return *out ? 0 : -ENOMEM;
}

static int parse_int(const struct pt *v, int64_t *out)
{
	char *end;
	long long n;

	if (v->kind != PT_SCALAR || v->quoted || !v->len)
		return -EINVAL;
	errno = 0;
	n = strtoll(v->str, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = n;
	return 0;
}

int dc_int(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   int64_t min, int64_t max, bool required, int64_t *out, bool *present)
{
	const struct pt *v = pt_get(map, key);
	int64_t n;

	if (present)
		*present = false;
	if (!v) {
		if (required)
			return dc_bad(c, map, path, "required");
		return 0;
	}
	if (parse_int(v, &n) < 0)
		return dc_bad(c, v, path, "must be an integer, got %s%s%s",
			      v->kind == PT_SCALAR ? "\"" : "",
			      v->kind == PT_SCALAR ? v->str : kind_name(v),
			      v->kind == PT_SCALAR ? "\"" : "");
	if (n < min || n > max)
		return dc_bad(c, v, path, "%lld is out of range %lld..%lld", (long long)n,
			      (long long)min, (long long)max);
	*out = n;
	if (present)
		*present = true;
	return 0;
}

int dc_kvs(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   struct pl_kvs *out)
{
	const struct pt *m = pt_get(map, key);

	out->n = 0;
	if (!m || (m->kind == PT_SCALAR && !m->quoted && !strcmp(m->str, "null")))
		return 0;
	if (m->kind != PT_MAP)
		return dc_bad(c, m, path, "must be a mapping of strings, got %s", kind_name(m));
	out->v = pl_alloc(&c->w->arena, sizeof(*out->v) * (size_t)(m->n / 2 + 1));
	if (!out->v)
		return -ENOMEM;
	for (int i = 0; i + 1 < m->n; i += 2) {
		const struct pt *k = m->kids[i], *v = m->kids[i + 1];

		if (v->kind != PT_SCALAR)
			return dc_bad(c, v, path, "%s: must be a string, got %s", k->str,
				      kind_name(v));
		out->v[out->n].key = pl_strndup(&c->w->arena, k->str, k->len);
		out->v[out->n].val = pl_strndup(&c->w->arena, v->str, v->len);
		if (!out->v[out->n].key || !out->v[out->n].val)
			return -ENOMEM;
		out->n++;
	}
	return 0;
}

static const struct { const char *name; enum pl_sel_op op; } sel_ops[] = {
	{ "In", PL_SEL_IN }, { "NotIn", PL_SEL_NOT_IN },
	{ "Exists", PL_SEL_EXISTS }, { "DoesNotExist", PL_SEL_NOT_EXISTS },
};

static int dc_expression(struct dctx *c, const struct pt *e, const char *path,
			 struct pl_requirement *r)
{
	const struct pt *vals = pt_get(e, "values");
	const char *op = NULL;
	char sub[256];
	size_t i;
	int rc;

	if (e->kind != PT_MAP)
		return dc_bad(c, e, path, "must be a mapping");
	snprintf(sub, sizeof(sub), "%s.key", path);
	if ((rc = dc_str(c, e, "key", sub, true, &r->key)) < 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.operator", path);
	if ((rc = dc_str(c, e, "operator", sub, true, &op)) < 0)
		return rc;
	for (i = 0; i < sizeof(sel_ops) / sizeof(sel_ops[0]); i++)
		if (!strcmp(op, sel_ops[i].name))
			break;
	if (i == sizeof(sel_ops) / sizeof(sel_ops[0]))
		return dc_bad(c, pt_get(e, "operator"), sub,
			      "must be In, NotIn, Exists or DoesNotExist, got \"%s\"", op);
	r->op = sel_ops[i].op;
	snprintf(sub, sizeof(sub), "%s.values", path);
	if (vals && vals->kind != PT_SEQ)
		return dc_bad(c, vals, sub, "must be a list of strings");
	if ((r->op <= PL_SEL_NOT_IN) != (vals && vals->n > 0))
		return dc_bad(c, vals ? vals : e, sub, r->op <= PL_SEL_NOT_IN
			      ? "must list at least one value for In and NotIn"
			      : "must be empty for Exists and DoesNotExist");
	r->nvals = vals ? vals->n : 0;
	r->vals = pl_alloc(&c->w->arena, sizeof(char *) * (size_t)(r->nvals + 1));
	for (int k = 0; r->vals && k < r->nvals; k++) {
		if (vals->kids[k]->kind != PT_SCALAR)
			return dc_bad(c, vals->kids[k], sub, "[%d]: must be a string", k);
		r->vals[k] = pl_strndup(&c->w->arena, vals->kids[k]->str, vals->kids[k]->len);
	}
	return r->vals ? 0 : -ENOMEM;
}

int dc_selector(struct dctx *c, const struct pt *map, const char *key, const char *path,
		struct pl_selector *out)
{
	const struct pt *s = pt_get(map, key), *ml, *me;
	struct pl_kvs labels;
	char sub[256];
	int rc;

	out->n = 0;
	if (!s)
		return 0;
	if (s->kind != PT_MAP)
		return dc_bad(c, s, path, "must be a label selector mapping");
	snprintf(sub, sizeof(sub), "%s.matchLabels", path);
	if ((rc = dc_kvs(c, s, "matchLabels", sub, &labels)) < 0)
		return rc;
	me = pt_get(s, "matchExpressions");
	ml = pt_get(s, "matchLabels");
	(void)ml;
	if (me && me->kind != PT_SEQ)
		return dc_bad(c, me, path, "matchExpressions: must be a list");
	out->reqs = pl_alloc(&c->w->arena, sizeof(*out->reqs) *
			     (size_t)(labels.n + (me ? me->n : 0) + 1));
	if (!out->reqs)
		return -ENOMEM;
	for (int i = 0; i < labels.n; i++) {
		struct pl_requirement *r = &out->reqs[out->n++];

		r->key = labels.v[i].key;
		r->op = PL_SEL_IN;
		r->vals = pl_alloc(&c->w->arena, sizeof(char *));
		if (!r->vals)
			return -ENOMEM;
		r->vals[0] = labels.v[i].val;
		r->nvals = 1;
	}
	for (int i = 0; me && i < me->n; i++) {
		snprintf(sub, sizeof(sub), "%s.matchExpressions[%d]", path, i);
		if ((rc = dc_expression(c, me->kids[i], sub, &out->reqs[out->n++])) < 0)
			return rc;
	}
	return 0;
}

int dc_ilist(struct dctx *c, const struct pt *map, const char *key, const char *path,
	     int64_t max, struct pl_ilist *out)
{
	const struct pt *l = pt_get(map, key);
	char sub[256];

	*out = (struct pl_ilist){ 0 };
	if (!l)
		return 0;
	if (l->kind != PT_SEQ)
		return dc_bad(c, l, path, "must be a list of integers");
	out->present = true;
	out->v = pl_alloc(&c->w->arena, sizeof(int) * (size_t)(l->n + 1));
	if (!out->v)
		return -ENOMEM;
	for (int i = 0; i < l->n; i++) {
		int64_t v;

		snprintf(sub, sizeof(sub), "%s[%d]", path, i);
		if (parse_int(l->kids[i], &v) < 0)
			return dc_bad(c, l->kids[i], sub, "must be an integer");
		if (v < 0 || v > max)
			return dc_bad(c, l->kids[i], sub, "%lld is out of range 0..%lld",
				      (long long)v, (long long)max);
		out->v[out->n++] = (int)v;
	}
	return 0;
}

static int dc_field(struct dctx *c, const struct pt *sec, int f, const char *path,
		    struct pl_runtime *out)
{
	const struct pl_field_desc *d = &pl_fields[f];
	const struct pt *v = pt_get(sec, d->key);
	char sub[256];
	int64_t n;
	int rc;

	if (!v)
		return 0;
	snprintf(sub, sizeof(sub), "%s.%s.%s", path, d->section, d->key);
	if (d->type == PL_FT_BOOL) {
		if (v->kind != PT_SCALAR || v->quoted ||
		    (strcmp(v->str, "true") && strcmp(v->str, "false")))
			return dc_bad(c, v, sub, "must be true or false");
		n = !strcmp(v->str, "true");
	} else if (d->type == PL_FT_ENUM) {
		if (v->kind != PT_SCALAR)
			return dc_bad(c, v, sub, "must be a string");
		for (n = 0; d->names[n] && strcmp(d->names[n], v->str); n++)
			;
		if (!d->names[n])
			return dc_bad(c, v, sub, "unknown value \"%s\" (want %s%s%s)", v->str,
				      d->names[0], d->names[1] ? ", " : "",
				      d->names[1] ? d->names[1] : "");
	} else if ((rc = dc_int(c, sec, d->key, sub, d->min, d->max, true, &n, NULL)) < 0) {
		return rc;
	}
	out->v[f] = n;
	out->set |= 1u << f;
	return 0;
}

int dc_runtime(struct dctx *c, const struct pt *map, const char *path, struct pl_runtime *out)
{
	static const char *const sections[] = { "health", "modes", "telemetry" };
	int rc;

	*out = (struct pl_runtime){ 0 };
	if (!map)
		return 0;
	for (size_t s = 0; s < 3; s++) {
		const struct pt *sec = pt_get(map, sections[s]);

		if (!sec)
			continue;
		if (sec->kind != PT_MAP)
			return dc_bad(c, sec, path, "%s: must be a mapping", sections[s]);
		for (int i = 0; i + 1 < sec->n; i += 2) {
			int f;

			for (f = 0; f < PL_F_COUNT; f++)
				if (!strcmp(pl_fields[f].section, sections[s]) &&
				    !strcmp(pl_fields[f].key, sec->kids[i]->str))
					break;
			if (f == PL_F_COUNT)
				return dc_bad(c, sec->kids[i], path, "%s.%s: unknown field",
					      sections[s], sec->kids[i]->str);
			if ((rc = dc_field(c, sec, f, path, out)) < 0)
				return rc;
		}
	}
	return 0;
}

/* RFC 1123 label/subdomain characters, as Kubernetes names need. */
int dc_dns_name(struct dctx *c, const struct pt *at, const char *path, const char *s, size_t max)
{
	size_t len = strlen(s);

	if (!len || len > max)
		return dc_bad(c, at, path, "\"%s\": must be 1..%zu characters", s, max);
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
			  ((ch == '-' || ch == '.') && i && i + 1 < len);

		if (!ok)
			return dc_bad(c, at, path, "\"%s\": must be lower-case alphanumerics, "
				      "'-' or '.', starting and ending alphanumeric", s);
	}
	return 0;
}
