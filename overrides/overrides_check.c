/* The overrides document's one check (overrides.h ovr_validate): the
 * shape, then per scope (all, each devices."<i>") the GPU it names, the
 * keys the engine keeps at boot, and DeviceConfig's keys, at the top
 * (OVR_KEYS) or all the way down with value types (OVR_SCHEMA).  Values
 * are typed as the profile compiler types them (profile/yaml_tree.c), so
 * an override is held to the same rules as the profile it overrides. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"
#include "overrides/overrides_schema.h"

#define KEY_PATH 192

struct check {
	const struct ovr_rules *r;
	char *err;
	size_t errlen;
};

static int fail(struct check *c, const struct yl_node *at, const char *path, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));
static int fail(struct check *c, const struct yl_node *at, const char *path, const char *fmt,
		...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%u:%u: %s%s%s", at ? at->line : 1, at ? at->col : 1, path,
		 *path ? ": " : "", why);
	return -EINVAL;
}

static const char *text_of(const struct yl_node *n)
{
	if (!n)
		return "<missing>";
	return n->kind == YL_MAP ? "<mapping>" : n->kind == YL_SEQ ? "<sequence>" : n->str;
}

/* ---- value types ---- */

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return true;
	return false;
}

/* Sign, then 0x.., 0o.. or decimal digits only.  0, -EINVAL or -ERANGE. */
static int integer(const char *s, bool is_signed)
{
	bool neg = false, range = false;
	int base = 10;
	uint64_t v = 0;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (neg && !is_signed)
		return -ERANGE;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	else if (s[0] == '0' && s[1] == 'o')
		base = 8, s += 2;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
			*s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : 99;

		if (d >= base)
			return -EINVAL;
		range |= v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (range)
		return -ERANGE;
	if (is_signed && v > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	return 0;
}

static int number(const char *s)
{
	char *end;
	int r = integer(s, true);

	if (r == 0)
		return 0;
	/* Digits, sign or point first: keeps strtod's "inf"/"nan" words out. */
	if (!*s || !strchr("+-.0123456789", *s))
		return -EINVAL;
	errno = 0;
	strtod(s, &end);
	if (*end || end == s)
		return -EINVAL;
	return errno == ERANGE ? -ERANGE : 0;
}

static int scalar_type(const struct yl_node *v, enum ovr_ftype type)
{
	static const char *const bools[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on",
		"On", "ON", "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL };

	if (v->kind != YL_SCALAR)
		return -EINVAL;
	/* Quoted text is a string, whatever it spells. */
	if (type == OVR_STR)
		return 0;
	if (v->quoted || strlen(v->str) != v->len)
		return -EINVAL;
	switch (type) {
	case OVR_INT:
	case OVR_UINT:
		return integer(v->str, type == OVR_INT);
	case OVR_BOOL:
		return one_of(v->str, bools) ? 0 : -EINVAL;
	default:
		return number(v->str);
	}
}

/* ---- the DeviceConfig walk ---- */

static int value(struct check *c, const struct ovr_field *f, enum ovr_ftype type,
		 const struct yl_node *v, const char *path);

static int block(struct check *c, const struct ovr_field *table, const struct yl_node *map,
		 const char *path, bool deep)
{
	char sub[KEY_PATH];

	if (map->kind != YL_MAP)
		return fail(c, map, path, "expected a mapping, got %s", text_of(map));
	for (size_t i = 0; i < map->n; i++) {
		const struct yl_node *v = map->kids[i];
		const struct ovr_field *f = ovr_field_find(table, v->key, strlen(v->key));
		int r;

		snprintf(sub, sizeof(sub), "%s%s%.64s", path, *path ? "." : "", v->key);
		if (!f)
			return fail(c, v, sub, "unknown key");
		if (deep && (r = value(c, f, f->type, v, sub)) < 0)
			return r;
	}
	return 0;
}

static int value(struct check *c, const struct ovr_field *f, enum ovr_ftype type,
		 const struct yl_node *v, const char *path)
{
	static const char *const want[] = {
		[OVR_STR] = "a scalar", [OVR_INT] = "an integer",
		[OVR_UINT] = "a non-negative integer", [OVR_BOOL] = "true or false",
		[OVR_FLOAT] = "a number" };
	char item[KEY_PATH];
	int r;

	if (type == OVR_ANY || yl_is_null(v))
		return 0;	/* absent and null both mean "unset" */
	if (type == OVR_MAP)
		return block(c, f->sub, v, path, true);
	if (type == OVR_SEQ && v->kind != YL_SEQ)
		return fail(c, v, path, "expected a list, got %s", text_of(v));
	for (size_t i = 0; type == OVR_SEQ && i < v->n; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", path, i);
		if ((r = value(c, f, f->elem, v->kids[i], item)) < 0)
			return r;
	}
	if (type == OVR_SEQ)
		return 0;
	r = scalar_type(v, type);
	if (r == -ERANGE)
		return fail(c, v, path, "'%.64s' is out of range for %s", v->str, want[type]);
	if (r < 0)
		return fail(c, v, path, "expected %s, got '%.64s'", want[type], text_of(v));
	return 0;
}

/* ---- scopes ---- */

static void index_list(const struct ovr_rules *r, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->ngpus && n + 8 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", i ? "," : "", r->gpus[i]);
}

static bool gpu_exists(const struct ovr_rules *r, unsigned idx)
{
	for (size_t i = 0; i < r->ngpus; i++)
		if (r->gpus[i] == idx)
			return true;
	return !r->gpus;
}

/* One scope (all, or a device's mapping) beyond its shape. */
static int scope(struct check *c, const struct yl_node *s, const char *where, int index)
{
	char list[512];

	if (index >= 0 && !gpu_exists(c->r, (unsigned)index)) {
		index_list(c->r, list, sizeof(list));
		return fail(c, s, where, "no GPU with that index in %s (indices %s)",
			    c->r->gpus_from ? c->r->gpus_from : "the profile", list);
	}
	if (yl_is_null(s) || c->r->level == OVR_SHAPE)
		return 0;
	for (size_t i = 0; c->r->runtime && ovr_frozen[i]; i++) {
		char path[KEY_PATH];
		const struct yl_node *n = yl_path(s, ovr_frozen[i]);

		snprintf(path, sizeof(path), "%s.%s", where, ovr_frozen[i]);
		if (n)
			return fail(c, n, path, "not changeable at run time (the engine keeps the "
				    "boot value; change the profile)");
	}
	return block(c, ovr_device_config, s, where, c->r->level == OVR_SCHEMA);
}

static bool map_or_null(const struct yl_node *n)
{
	return yl_is_null(n) || n->kind == YL_MAP;
}

static int devices(struct check *c, const struct yl_node *v)
{
	char where[32];
	unsigned idx;
	int r;

	if (!map_or_null(v))
		return fail(c, v, "devices", "expected a mapping");
	for (size_t j = 0; !yl_is_null(v) && j < v->n; j++) {
		const struct yl_node *d = v->kids[j];

		if (!ovr_device_key(d->key, &idx))
			return fail(c, d, "devices", "key '%.20s' is not a GPU index", d->key);
		snprintf(where, sizeof(where), "devices.%u", idx);
		if (!map_or_null(d))
			return fail(c, d, where, "expected a mapping");
		if ((r = scope(c, d, where, (int)idx)) < 0)
			return r;
	}
	return 0;
}

int ovr_validate(const struct yl_node *doc, const struct ovr_rules *rules, char *err,
		 size_t errlen)
{
	struct check c = { rules, err, errlen };
	uint64_t ver;
	int r = 0;

	if (doc->kind != YL_MAP)
		return fail(&c, doc, "", "expected a mapping of version, all and devices");
	for (size_t i = 0; r == 0 && i < doc->n; i++) {
		const struct yl_node *v = doc->kids[i];

		if (!strcmp(v->key, "version")) {
			if (!yl_u64(v, &ver) || ver != 1)
				r = fail(&c, v, "version", "want 1");
		} else if (!strcmp(v->key, "all")) {
			r = map_or_null(v) ? scope(&c, v, "all", -1)
					   : fail(&c, v, "all", "expected a mapping");
		} else if (!strcmp(v->key, "devices")) {
			r = devices(&c, v);
		} else {
			char key[64];

			snprintf(key, sizeof(key), "%.60s", v->key);
			r = fail(&c, v, key, "unknown field (want version, all or devices)");
		}
	}
	return r;
}

int ovr_check_shape(const struct yl_node *doc, char *err, size_t errlen)
{
	static const struct ovr_rules shape = { .level = OVR_SHAPE };

	return ovr_validate(doc, &shape, err, errlen);
}
