/* The runtime overrides document: parse, scopes and dotted paths, the
 * merge (the mock NVML engine's too), the effective per-device view and the
 * injected Xid.  The shape check is overrides_check.c. */
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

int ovr_merge(struct yl_node *dst, const struct yl_node *src)
{
	if (yl_is_null(src) || src->kind != YL_MAP || dst->kind != YL_MAP)
		return 0;
	for (size_t i = 0; i < src->n; i++) {
		const struct yl_node *s = src->kids[i];
		struct yl_node *d = yl_get(dst, s->key), *c;

		if (d && d->kind == YL_MAP && s->kind == YL_MAP) {
			if (ovr_merge(d, s) < 0)
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

int ovr_apply(struct yl_node *dst, const struct yl_node *doc, unsigned index)
{
	const struct yl_node *devs = yl_get(doc, "devices");

	if (ovr_merge(dst, yl_get(doc, "all")) < 0)
		return -ENOMEM;
	/* In document order: "2" and "02" both name GPU 2. */
	for (size_t i = 0; devs && devs->kind == YL_MAP && i < devs->n; i++) {
		unsigned idx;
		if (ovr_device_key(devs->kids[i]->key, &idx) && idx == index &&
		    ovr_merge(dst, devs->kids[i]) < 0)
			return -ENOMEM;
	}
	return 0;
}

struct yl_node *ovr_effective(const struct yl_node *doc, unsigned index)
{
	struct yl_node *eff = yl_new(YL_MAP);

	if (eff && ovr_apply(eff, doc, index) < 0) {
		yl_free(eff);
		return NULL;
	}
	return eff;
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
