/* libyaml event stream -> bounded node tree (see yaml_tree.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "profile/yaml_tree.h"

struct builder {
	struct ynode *root;
	struct ynode *stack[YTREE_MAX_DEPTH];
	int depth;
	size_t nodes;
	int documents;
	struct ytree_error *err;
};

static int fail(struct ytree_error *err, int line, int col, int rc,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(struct ytree_error *err, int line, int col, int rc,
		const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	err->col = col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return rc;
}

void ytree_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ytree_free(n->kids[i]);
	free(n->kids);
	free(n->str);
	free(n);
}

static struct ynode *node_new(struct builder *b, enum ynode_kind kind,
			      const yaml_mark_t *mark)
{
	struct ynode *n;

	if (b->nodes >= YTREE_MAX_NODES) {
		fail(b->err, (int)mark->line + 1, (int)mark->column + 1, -EINVAL,
		     "document has more than %d nodes", YTREE_MAX_NODES);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		fail(b->err, (int)mark->line + 1, (int)mark->column + 1, -ENOMEM,
		     "out of memory");
		return NULL;
	}
	b->nodes++;
	n->kind = kind;
	n->line = (int)mark->line + 1;
	n->col = (int)mark->column + 1;
	return n;
}

static bool key_equal(const struct ynode *a, const struct ynode *b)
{
	return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

/* Checks that apply when a node lands in a mapping's key slot. */
static int check_key(struct builder *b, const struct ynode *map,
		     const struct ynode *key)
{
	if (key->kind != YNODE_SCALAR)
		return fail(b->err, key->line, key->col, -EINVAL,
			    "mapping keys must be scalars");
	if (map->n / 2 >= YTREE_MAX_MAP_KEYS)
		return fail(b->err, key->line, key->col, -EINVAL,
			    "mapping has more than %d keys", YTREE_MAX_MAP_KEYS);
	for (size_t i = 0; i < map->n; i += 2)
		if (key_equal(map->kids[i], key))
			return fail(b->err, key->line, key->col, -EINVAL,
				    "duplicate key '%.64s' (first at line %d)",
				    key->str, map->kids[i]->line);
	return 0;
}

/* Attach n to the open collection (or make it the root).  On failure the
 * caller still owns n. */
static int attach(struct builder *b, struct ynode *n)
{
	struct ynode *parent;
	int rc;

	if (b->depth == 0) {
		b->root = n;
		return 0;
	}
	parent = b->stack[b->depth - 1];
	if (parent->kind == YNODE_MAP && parent->n % 2 == 0) {
		rc = check_key(b, parent, n);
		if (rc < 0)
			return rc;
	}
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct ynode **kids = realloc(parent->kids, cap * sizeof(*kids));

		if (!kids)
			return fail(b->err, n->line, n->col, -ENOMEM, "out of memory");
		parent->kids = kids;
		parent->cap = cap;
	}
	parent->kids[parent->n++] = n;
	return 0;
}

static bool tagged_str(const yaml_char_t *tag)
{
	return tag && strcmp((const char *)tag, YAML_STR_TAG) == 0;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	struct ynode *n = node_new(b, YNODE_SCALAR, &ev->start_mark);
	size_t len = ev->data.scalar.length;
	int rc;

	if (!n)
		return b->nodes >= YTREE_MAX_NODES ? -EINVAL : -ENOMEM;
	n->str = malloc(len + 1);
	if (!n->str) {
		free(n);
		return fail(b->err, (int)ev->start_mark.line + 1,
			    (int)ev->start_mark.column + 1, -ENOMEM, "out of memory");
	}
	memcpy(n->str, ev->data.scalar.value, len);
	n->str[len] = '\0';
	n->len = len;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		   !tagged_str(ev->data.scalar.tag);
	rc = attach(b, n);
	if (rc < 0)
		ytree_free(n);
	return rc;
}

static int on_open(struct builder *b, const yaml_event_t *ev,
		   enum ynode_kind kind)
{
	struct ynode *n;
	int rc;

	if (b->depth >= YTREE_MAX_DEPTH)
		return fail(b->err, (int)ev->start_mark.line + 1,
			    (int)ev->start_mark.column + 1, -EINVAL,
			    "nesting deeper than %d levels", YTREE_MAX_DEPTH);
	n = node_new(b, kind, &ev->start_mark);
	if (!n)
		return b->nodes >= YTREE_MAX_NODES ? -EINVAL : -ENOMEM;
	rc = attach(b, n);
	if (rc < 0) {
		ytree_free(n);
		return rc;
	}
	b->stack[b->depth++] = n;
	return 0;
}

/* One event; returns 1 at stream end, 0 to continue, or -errno. */
static int on_event(struct builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		if (b->documents++ > 0)
			return fail(b->err, line, col, -EINVAL,
				    "multiple documents are not supported");
		return 0;
	case YAML_ALIAS_EVENT:
		return fail(b->err, line, col, -EINVAL,
			    "aliases are not supported (alias '*%.64s')",
			    (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_open(b, ev, YNODE_SEQ);
	case YAML_MAPPING_START_EVENT:
		return on_open(b, ev, YNODE_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0)
			b->depth--;
		return 0;
	default:
		return 0;
	}
}

static int parser_error(const yaml_parser_t *p, struct ytree_error *err)
{
	const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->mark;

	if (p->error == YAML_MEMORY_ERROR)
		return fail(err, (int)m->line + 1, (int)m->column + 1, -ENOMEM,
			    "out of memory");
	if (p->context)
		return fail(err, (int)m->line + 1, (int)m->column + 1, -EINVAL,
			    "%s %s (line %zu)", p->problem ? p->problem : "syntax error",
			    p->context, p->context_mark.line + 1);
	return fail(err, (int)m->line + 1, (int)m->column + 1, -EINVAL,
		    "%s", p->problem ? p->problem : "syntax error");
}

int ytree_parse(const char *buf, size_t len, struct ynode **root,
		struct ytree_error *err)
{
	struct builder b = { .err = err };
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = 0;

	*root = NULL;
	memset(err, 0, sizeof(*err));
	if (!yaml_parser_initialize(&parser))
		return fail(err, 1, 1, -ENOMEM, "cannot initialise libyaml");
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (rc == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = parser_error(&parser, err);
			break;
		}
		rc = on_event(&b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (rc < 0) {
		ytree_free(b.root);
		return rc;
	}
	*root = b.root;
	return 0;
}

size_t ytree_map_size(const struct ynode *map)
{
	return map && map->kind == YNODE_MAP ? map->n / 2 : 0;
}

const struct ynode *ytree_map_key(const struct ynode *map, size_t i)
{
	return map->kids[2 * i];
}

const struct ynode *ytree_map_value(const struct ynode *map, size_t i)
{
	return map->kids[2 * i + 1];
}

const struct ynode *ytree_map_get(const struct ynode *map, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < ytree_map_size(map); i++) {
		const struct ynode *k = ytree_map_key(map, i);

		if (k->len == klen && memcmp(k->str, key, klen) == 0)
			return ytree_map_value(map, i);
	}
	return NULL;
}

static bool plain_scalar(const struct ynode *n)
{
	return n && n->kind == YNODE_SCALAR && n->plain;
}

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcmp(s, *words) == 0)
			return true;
	return false;
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = {
	"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL };
static const char *const false_words[] = {
	"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL };

bool ytree_is_null(const struct ynode *n)
{
	return !n || (plain_scalar(n) && one_of(n->str, null_words));
}

int ytree_bool(const struct ynode *n, bool *out)
{
	if (!plain_scalar(n))
		return -EINVAL;
	if (one_of(n->str, true_words))
		*out = true;
	else if (one_of(n->str, false_words))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static bool digit_in_base(char c, int base)
{
	if (base == 16)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		       (c >= 'A' && c <= 'F');
	return c >= '0' && c < '0' + base;
}

/* Unsigned magnitude after an optional sign: 0x.., 0o.. or decimal. */
static int parse_magnitude(const char *s, uint64_t *out)
{
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	else if (s[0] == '0' && s[1] == 'o')
		base = 8, s += 2;
	/* strtoull would accept spaces, signs and a second prefix: only
	 * digits of the base may follow. */
	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (!digit_in_base(*p, base))
			return -EINVAL;
	errno = 0;
	*out = strtoull(s, NULL, base);
	return errno == ERANGE ? -ERANGE : 0;
}

int ytree_uint(const struct ynode *n, uint64_t *out)
{
	const char *s;

	if (!plain_scalar(n) || strlen(n->str) != n->len)
		return -EINVAL;
	s = n->str;
	if (*s == '+')
		s++;
	if (*s == '-')
		return -ERANGE;
	return parse_magnitude(s, out);
}

int ytree_int(const struct ynode *n, int64_t *out)
{
	const char *s;
	bool neg = false;
	uint64_t mag;
	int rc;

	if (!plain_scalar(n) || strlen(n->str) != n->len)
		return -EINVAL;
	s = n->str;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	rc = parse_magnitude(s, &mag);
	if (rc < 0)
		return rc;
	if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
		return -ERANGE;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

int ytree_float(const struct ynode *n, double *out)
{
	const char *s;
	char *end;
	int64_t i;

	if (ytree_int(n, &i) == 0) {
		*out = (double)i;
		return 0;
	}
	if (!plain_scalar(n) || strlen(n->str) != n->len)
		return -EINVAL;
	s = n->str;
	/* Digits, sign or point first: keeps strtod's "inf"/"nan" words out. */
	if (!strchr("+-.0123456789", *s) || !*s)
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	if (*end || end == s)
		return -EINVAL;
	return errno == ERANGE ? -ERANGE : 0;
}
