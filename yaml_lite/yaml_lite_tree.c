/* yaml_lite tree helpers: build, copy, compare, look up, convert. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "yaml_lite.h"

struct yl_node *yl_new(enum yl_kind kind)
{
	struct yl_node *n = calloc(1, sizeof(*n));

	if (n)
		n->kind = kind;
	return n;
}

struct yl_node *yl_new_scalar(const char *text)
{
	struct yl_node *n = yl_new(YL_SCALAR);

	if (!n)
		return NULL;
	n->quoted = true;	/* built values are taken literally */
	n->str = strdup(text);
	if (!n->str) {
		free(n);
		return NULL;
	}
	n->len = strlen(text);
	return n;
}

void yl_free(struct yl_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		yl_free(n->kids[i]);
	if (!n->kids_inline)
		free(n->kids);
	if (!n->key_inline)
		free(n->key);
	if (!n->str_inline)
		free(n->str);
	if (!n->in_block)
		free(n);
}

int yl_append(struct yl_node *parent, struct yl_node *kid)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 4;
		struct yl_node **k;

		if (parent->kids_inline) {	/* out of the node's block */
			if (!(k = malloc(cap * sizeof(*k))))
				return -ENOMEM;
			memcpy(k, parent->kids, parent->n * sizeof(*k));
			parent->kids_inline = false;
		} else if (!(k = realloc(parent->kids, cap * sizeof(*k)))) {
			return -ENOMEM;
		}
		parent->kids = k;
		parent->cap = cap;
	}
	parent->kids[parent->n++] = kid;
	return 0;
}

/* yl_clone's layout of one node: the node, its kids array, key, text. */
#define YL_ALIGN _Alignof(struct yl_node)

static size_t own_size(const struct yl_node *n)
{
	size_t s = sizeof(*n) + n->n * sizeof(n->kids[0]) +
		   (n->key ? strlen(n->key) + 1 : 0) + (n->str ? strnlen(n->str, n->len) + 1 : 0);

	return (s + YL_ALIGN - 1) / YL_ALIGN * YL_ALIGN;
}

static size_t tree_size(const struct yl_node *n)
{
	size_t s = own_size(n);

	for (size_t i = 0; i < n->n; i++)
		s += tree_size(n->kids[i]);
	return s;
}

static struct yl_node *clone_at(const struct yl_node *n, char **at, bool in_block)
{
	struct yl_node *c = (struct yl_node *)*at;
	char *p = (char *)(c + 1) + n->n * sizeof(c->kids[0]);

	*c = (struct yl_node){ .kind = n->kind, .quoted = n->quoted, .in_block = in_block,
			       .line = n->line, .col = n->col, .len = n->len };
	if (n->key) {
		size_t k = strlen(n->key) + 1;

		c->key = memcpy(p, n->key, k);
		c->key_inline = true;
		p += k;
	}
	if (n->str) {
		size_t k = strnlen(n->str, n->len);

		c->str = memcpy(p, n->str, k);
		c->str[k] = 0;
		c->str_inline = true;
		p += k + 1;
	}
	/* The same rounding as own_size, without measuring the strings again. */
	*at += ((size_t)(p - (char *)c) + YL_ALIGN - 1) / YL_ALIGN * YL_ALIGN;
	if (n->n) {
		c->kids = (struct yl_node **)(c + 1);
		c->kids_inline = true;
		c->cap = c->n = n->n;
	}
	for (size_t i = 0; i < n->n; i++)
		c->kids[i] = clone_at(n->kids[i], at, true);
	return c;
}

/* One allocation for the whole copy: device trees are cloned at every
 * rebuild, and a malloc (and free) per node was most of the library's
 * init.  Nodes replaced later stay in the block until the root is freed. */
struct yl_node *yl_clone(const struct yl_node *n)
{
	char *block;

	if (!n || !(block = malloc(tree_size(n))))
		return NULL;
	return clone_at(n, &block, false);
}

bool yl_is_null(const struct yl_node *n)
{
	return !n || n->kind == YL_NULL;
}

bool yl_equal(const struct yl_node *a, const struct yl_node *b)
{
	if (yl_is_null(a) || yl_is_null(b))
		return yl_is_null(a) && yl_is_null(b);
	if (a->kind != b->kind || a->n != b->n)
		return false;
	switch (a->kind) {
	case YL_SCALAR:
		return a->len == b->len && !memcmp(a->str, b->str, a->len);
	case YL_SEQ:
		for (size_t i = 0; i < a->n; i++)
			if (!yl_equal(a->kids[i], b->kids[i]))
				return false;
		return true;
	case YL_MAP:
		for (size_t i = 0; i < a->n; i++) {
			const struct yl_node *o = yl_get(b, a->kids[i]->key);

			if (!o || !yl_equal(a->kids[i], o))
				return false;
		}
		return true;
	default:
		return true;
	}
}

struct yl_node *yl_get(const struct yl_node *map, const char *key)
{
	if (!map || map->kind != YL_MAP || !key)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (map->kids[i]->key && !strcmp(map->kids[i]->key, key))
			return map->kids[i];
	return NULL;
}

struct yl_node *yl_at(const struct yl_node *seq, size_t i)
{
	return seq && seq->kind == YL_SEQ && i < seq->n ? seq->kids[i] : NULL;
}

struct yl_node *yl_path(const struct yl_node *root, const char *path)
{
	const struct yl_node *n = root;
	const char *s = path;

	while (n && s && *s) {
		if (*s == '[') {
			char *end;
			unsigned long i;

			if (s[1] < '0' || s[1] > '9')
				return NULL;
			i = strtoul(s + 1, &end, 10);
			if (*end != ']')
				return NULL;
			n = yl_at(n, i);
			s = end + 1;
		} else {
			size_t len = strcspn(s, ".[");
			char key[128];

			if (!len || len >= sizeof(key))
				return NULL;
			memcpy(key, s, len);
			key[len] = 0;
			n = yl_get(n, key);
			s += len;
		}
		if (*s == '.') {
			s++;
			if (!*s)
				return NULL;
		}
	}
	return (struct yl_node *)n;
}

/* Gives n the malloc'd key k. */
static void set_key(struct yl_node *n, char *k)
{
	if (!n->key_inline)
		free(n->key);
	n->key = k;
	n->key_inline = false;
}

int yl_map_set(struct yl_node *map, const char *key, struct yl_node *val)
{
	char *k;

	for (size_t i = 0; i < map->n; i++) {
		if (map->kids[i]->key && !strcmp(map->kids[i]->key, key)) {
			struct yl_node *old = map->kids[i];

			if (old->key_inline) {	/* it goes with the old node */
				if (!(k = strdup(key)))
					return -ENOMEM;
			} else {
				k = old->key;
				old->key = NULL;
			}
			yl_free(old);
			set_key(val, k);
			map->kids[i] = val;
			return 0;
		}
	}
	k = strdup(key);
	if (!k)
		return -ENOMEM;
	set_key(val, k);
	if (yl_append(map, val) < 0) {
		val->key = NULL;
		free(k);
		return -ENOMEM;
	}
	return 0;
}

void yl_map_remove(struct yl_node *map, const char *key)
{
	for (size_t i = 0; map && i < map->n; i++) {
		if (map->kids[i]->key && !strcmp(map->kids[i]->key, key)) {
			yl_free(map->kids[i]);
			memmove(&map->kids[i], &map->kids[i + 1],
				(map->n - i - 1) * sizeof(map->kids[0]));
			map->n--;
			return;
		}
	}
}

const char *yl_text(const struct yl_node *n)
{
	return n && n->kind == YL_SCALAR ? n->str : NULL;
}

/* Unsigned magnitude of a decimal or 0x hex integer, no trailing junk. */
static bool parse_magnitude(const char *s, uint64_t *out)
{
	int base = 10;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	if (!*s)
		return false;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' :
			base == 16 && *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
			base == 16 && *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;

		if (d < 0 || v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return true;
}

bool yl_u64(const struct yl_node *n, uint64_t *out)
{
	const char *s = yl_text(n);

	if (!s)
		return false;
	if (*s == '+')
		s++;
	return parse_magnitude(s, out);
}

bool yl_i64(const struct yl_node *n, int64_t *out)
{
	const char *s = yl_text(n);
	bool neg = false;
	uint64_t v;

	if (!s)
		return false;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!parse_magnitude(s, &v) || v > (uint64_t)INT64_MAX + neg)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

bool yl_double(const struct yl_node *n, double *out)
{
	const char *s = yl_text(n);
	char *end;
	uint64_t u;
	int64_t i;

	if (!s || !*s)
		return false;
	if (yl_i64(n, &i)) {
		*out = (double)i;
		return true;
	}
	if (yl_u64(n, &u)) {
		*out = (double)u;
		return true;
	}
	/* Digits only: strtod would also take "nan", "inf" and hex floats. */
	if (strspn(s, "+-0123456789.eE") != strlen(s))
		return false;
	double v = strtod(s, &end);

	if (end == s || *end)
		return false;
	*out = v;
	return true;
}

bool yl_bool(const struct yl_node *n, bool *out)
{
	const char *s = yl_text(n);

	if (!s)
		return false;
	if (!strcasecmp(s, "true") || !strcasecmp(s, "yes")) {
		*out = true;
		return true;
	}
	if (!strcasecmp(s, "false") || !strcasecmp(s, "no")) {
		*out = false;
		return true;
	}
	return false;
}
