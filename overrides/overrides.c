/* The runtime overrides document: parse, shape check, scopes and dotted
 * paths, the effective per-device view and the injected Xid. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"

static struct yl_node *fresh_doc(void)
{
	struct yl_node *doc = yl_new(YL_MAP), *v = ovr_plain("1");

	if (!doc || !v || yl_map_set(doc, "version", v) < 0) {
		yl_free(doc);
		yl_free(v);
		return NULL;
	}
	return doc;
}

struct yl_node *ovr_parse(const char *buf, size_t len, char *err, size_t errlen)
{
	struct yl_error e;
	struct yl_node *doc = yl_parse(buf, len, &e);

	if (!doc) {
		yl_error_format(&e, err, errlen);
		return NULL;
	}
	if (yl_is_null(doc)) {
		yl_free(doc);
		if (!(doc = fresh_doc()))
			snprintf(err, errlen, "out of memory");
	}
	return doc;
}

bool ovr_device_key(const char *k, unsigned *index)
{
	size_t n = strlen(k);

	/* As the engine: decimal digits only, at most 4. */
	if (!n || n > 4 || strspn(k, "0123456789") != n)
		return false;
	*index = (unsigned)strtoul(k, NULL, 10);
	return true;
}

static int fail(const struct yl_node *at, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(const struct yl_node *at, char *err, size_t errlen, const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%u:%u: %s", at ? at->line : 1, at ? at->col : 1, why);
	return -EINVAL;
}

static bool map_or_null(const struct yl_node *n)
{
	return yl_is_null(n) || n->kind == YL_MAP;
}

int ovr_check_shape(const struct yl_node *doc, char *err, size_t errlen)
{
	uint64_t ver;
	unsigned idx;

	if (doc->kind != YL_MAP)
		return fail(doc, err, errlen, "expected a mapping of version, all and devices");
	for (size_t i = 0; i < doc->n; i++) {
		const struct yl_node *v = doc->kids[i];

		if (!strcmp(v->key, "version")) {
			if (!yl_u64(v, &ver) || ver != 1)
				return fail(v, err, errlen, "version: want 1");
		} else if (!strcmp(v->key, "all")) {
			if (!map_or_null(v))
				return fail(v, err, errlen, "all: expected a mapping");
		} else if (!strcmp(v->key, "devices")) {
			if (!map_or_null(v))
				return fail(v, err, errlen, "devices: expected a mapping");
			for (size_t j = 0; !yl_is_null(v) && j < v->n; j++) {
				if (!ovr_device_key(v->kids[j]->key, &idx))
					return fail(v->kids[j], err, errlen,
						    "devices: key '%.20s' is not a GPU index",
						    v->kids[j]->key);
				if (!map_or_null(v->kids[j]))
					return fail(v->kids[j], err, errlen,
						    "devices.%u: expected a mapping", idx);
			}
		} else {
			return fail(v, err, errlen, "%.60s: unknown field (want version, all "
				    "or devices)", v->key);
		}
	}
	return 0;
}

/* map[key] as a mapping, replacing whatever else is there. */
static struct yl_node *ensure_map(struct yl_node *map, const char *key)
{
	struct yl_node *m = yl_get(map, key);

	if (m && m->kind == YL_MAP)
		return m;
	if (!(m = yl_new(YL_MAP)) || yl_map_set(map, key, m) < 0) {
		yl_free(m);
		return NULL;
	}
	return m;
}

struct yl_node *ovr_scope(struct yl_node *doc, int index, bool create)
{
	struct yl_node *devs;
	char key[16];

	if (index < 0) {
		struct yl_node *all = yl_get(doc, "all");
		return all && all->kind == YL_MAP ? all : create ? ensure_map(doc, "all") : NULL;
	}
	snprintf(key, sizeof(key), "%d", index);
	devs = yl_get(doc, "devices");
	if (!devs || devs->kind != YL_MAP) {
		if (!create || !(devs = ensure_map(doc, "devices")))
			return NULL;
	}
	/* An existing key may be spelled "02": match by value, as the engine. */
	for (size_t i = 0; i < devs->n; i++) {
		unsigned idx;
		if (ovr_device_key(devs->kids[i]->key, &idx) && (int)idx == index &&
		    devs->kids[i]->kind == YL_MAP)
			return devs->kids[i];
	}
	return create ? ensure_map(devs, key) : NULL;
}

int ovr_set(struct yl_node *scope, const char *path, struct yl_node *val)
{
	char key[128];
	const char *dot;

	/* Checked whole first: a bad path creates nothing. */
	if (!*path || path[0] == '.' || path[strlen(path) - 1] == '.' || strstr(path, ".."))
		goto inval;
	while ((dot = strchr(path, '.'))) {
		size_t n = (size_t)(dot - path);

		if (!n || n >= sizeof(key))
			goto inval;
		memcpy(key, path, n);
		key[n] = '\0';
		if (!(scope = ensure_map(scope, key))) {
			yl_free(val);
			return -ENOMEM;
		}
		path = dot + 1;
	}
	if (!*path || strlen(path) >= sizeof(key))
		goto inval;
	if (yl_map_set(scope, path, val) < 0) {
		yl_free(val);
		return -ENOMEM;
	}
	return 0;
inval:
	yl_free(val);
	return -EINVAL;
}

void ovr_remove(struct yl_node *scope, const char *path)
{
	const char *dot = strchr(path, '.');
	struct yl_node *sub;
	char key[128];
	size_t n;

	if (!scope || scope->kind != YL_MAP)
		return;
	if (!dot) {
		yl_map_remove(scope, path);
		return;
	}
	n = (size_t)(dot - path);
	if (!n || n >= sizeof(key))
		return;
	memcpy(key, path, n);
	key[n] = '\0';
	sub = yl_get(scope, key);
	ovr_remove(sub, dot + 1);
	if (sub && sub->kind == YL_MAP && sub->n == 0)
		yl_map_remove(scope, key);
}

struct yl_node *ovr_plain(const char *text)
{
	struct yl_node *n = yl_new_scalar(text);

	if (n)
		n->quoted = false;
	return n;
}

struct yl_node *ovr_plainf(const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ovr_plain(buf);
}

/* The engine's merge (engine_merge.c eng_deep_merge): maps merge
 * recursively; scalars, lists and null replace. */
static int deep_merge(struct yl_node *dst, const struct yl_node *src)
{
	if (yl_is_null(src) || src->kind != YL_MAP || dst->kind != YL_MAP)
		return 0;
	for (size_t i = 0; i < src->n; i++) {
		const struct yl_node *s = src->kids[i];
		struct yl_node *d = yl_get(dst, s->key), *c;

		if (d && d->kind == YL_MAP && s->kind == YL_MAP) {
			if (deep_merge(d, s) < 0)
				return -ENOMEM;
			continue;
		}
		if (!(c = yl_clone(s)) || yl_map_set(dst, s->key, c) < 0) {
			yl_free(c);
			return -ENOMEM;
		}
	}
	return 0;
}

struct yl_node *ovr_effective(const struct yl_node *doc, unsigned index)
{
	const struct yl_node *devs = yl_get(doc, "devices");
	struct yl_node *eff = yl_new(YL_MAP);

	if (!eff || deep_merge(eff, yl_get(doc, "all")) < 0)
		goto err;
	for (size_t i = 0; devs && devs->kind == YL_MAP && i < devs->n; i++) {
		unsigned idx;
		if (ovr_device_key(devs->kids[i]->key, &idx) && idx == index &&
		    deep_merge(eff, devs->kids[i]) < 0)
			goto err;
	}
	return eff;
err:
	yl_free(eff);
	return NULL;
}

void ovr_xid(const struct yl_node *doc, unsigned index, uint64_t *code, uint64_t *seq)
{
	struct yl_node *eff = ovr_effective(doc, index);
	const struct yl_node *xid = yl_path(eff, "failure.xid");

	*code = *seq = 0;
	if (xid && xid->kind == YL_MAP) {
		yl_u64(yl_get(xid, "code"), code);
		yl_u64(yl_get(xid, "seq"), seq);
	}
	yl_free(eff);
}

static uint64_t scope_seq(const struct yl_node *scope)
{
	uint64_t v = 0;

	yl_u64(yl_path(scope, "failure.xid.seq"), &v);
	return v;
}

uint64_t ovr_max_seq(const struct yl_node *doc)
{
	const struct yl_node *devs = yl_get(doc, "devices");
	uint64_t m = scope_seq(yl_get(doc, "all"));

	for (size_t i = 0; devs && devs->kind == YL_MAP && i < devs->n; i++) {
		uint64_t v = scope_seq(devs->kids[i]);
		if (v > m)
			m = v;
	}
	return m;
}
