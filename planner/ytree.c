/* libyaml events -> per-object trees (see ytree.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "planner/arena.h"
#include "planner/ytree.h"

struct builder {
	struct pl_arena doc, item;	/* the document's nodes; the current item's */
	struct pt *stack[PT_MAX_DEPTH + 1];
	int depth;
	struct pt *root, *items, *cur_item;
	long nodes;
	int nitems;
	char *err;
	size_t errlen;
};

static int fail(struct builder *b, int line, const char *why)
{
	snprintf(b->err, b->errlen, "line %d: %s", line, why);
	return -EINVAL;
}

static int add_kid(struct pl_arena *a, struct pt *parent, struct pt *kid)
{
	if (parent->n == parent->cap) {
		int ncap = parent->cap ? parent->cap * 2 : 8;
		struct pt **k = pl_alloc(a, sizeof(*k) * (size_t)ncap);

		if (!k)
			return -ENOMEM;
		if (parent->n)
			memcpy(k, parent->kids, sizeof(*k) * (size_t)parent->n);
		parent->kids = k;
		parent->cap = ncap;
	}
	parent->kids[parent->n++] = kid;
	return 0;
}

static bool is_items_value(const struct builder *b, const struct pt *parent)
{
	const struct pt *key;

	if (b->depth != 1 || parent != b->root || parent->kind != PT_MAP || !(parent->n & 1))
		return false;
	key = parent->kids[parent->n - 1];
	return key->kind == PT_SCALAR && !strcmp(key->str, "items");
}

static int open_node(struct builder *b, const yaml_event_t *ev, enum pt_kind kind)
{
	int line = (int)ev->start_mark.line + 1;
	struct pt *parent = b->depth ? b->stack[b->depth - 1] : NULL;
	bool in_item = b->items && b->depth >= 2;
	struct pl_arena *a = in_item ? &b->item : &b->doc;
	struct pt *node;

	if (++b->nodes > PT_MAX_NODES)
		return fail(b, line, "too many YAML nodes in one object");
	node = pl_alloc(a, sizeof(*node));
	if (!node)
		return -ENOMEM;
	node->kind = kind;
	node->line = line;
	if (kind == PT_SCALAR) {
		size_t len = ev->data.scalar.length;

		if (len > PT_MAX_SCALAR)
			return fail(b, line, "scalar too long");
		node->str = pl_strndup(a, (const char *)ev->data.scalar.value, len);
		if (!node->str)
			return -ENOMEM;
		node->len = len;
		node->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	}
	if (!parent) {
		b->root = node;
	} else if (parent == b->items) {
		if (kind != PT_MAP)
			return fail(b, line, "items[] entry is not a mapping");
		b->cur_item = node;
		b->nodes = 1;
	} else {
		if (parent->kind == PT_MAP && !(parent->n & 1) && kind != PT_SCALAR)
			return fail(b, line, "mapping key is not a scalar");
		if (is_items_value(b, parent) && kind == PT_SEQ)
			b->items = node;
		if (add_kid(a, parent, node) < 0)
			return -ENOMEM;
	}
	if (kind != PT_SCALAR) {
		if (b->depth >= PT_MAX_DEPTH)
			return fail(b, line, "nesting too deep");
		b->stack[b->depth++] = node;
	}
	return 0;
}

static int close_node(struct builder *b, pt_object_fn fn, void *ctx)
{
	struct pt *node = b->stack[--b->depth];
	int rc = 0;

	if (node == b->cur_item) {
		b->nitems++;
		rc = fn(node, ctx);
		b->cur_item = NULL;
		pl_arena_reset(&b->item);
	}
	return rc;
}

static int on_event(struct builder *b, const yaml_event_t *ev, pt_object_fn fn, void *ctx)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		b->root = b->items = b->cur_item = NULL;
		b->depth = 0;
		b->nodes = 0;
		b->nitems = 0;
		pl_arena_reset(&b->doc);
		return 0;
	case YAML_DOCUMENT_END_EVENT:
		/* a List was streamed item by item; anything else is one object */
		if (b->root && !b->items)
			return fn(b->root, ctx);
		return 0;
	case YAML_ALIAS_EVENT:
		return fail(b, (int)ev->start_mark.line + 1, "aliases are not supported");
	case YAML_SCALAR_EVENT:
		return open_node(b, ev, PT_SCALAR);
	case YAML_MAPPING_START_EVENT:
		return open_node(b, ev, PT_MAP);
	case YAML_SEQUENCE_START_EVENT:
		return open_node(b, ev, PT_SEQ);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return close_node(b, fn, ctx);
	default:
		return 0;
	}
}

int pt_stream(const char *buf, size_t len, pt_object_fn fn, void *ctx, char *err, size_t errlen)
{
	struct builder b = { .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_event_t ev;
	bool done = false;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && !rc) {
		if (!yaml_parser_parse(&parser, &ev)) {
			snprintf(err, errlen, "line %d: %s", (int)parser.problem_mark.line + 1,
				 parser.problem ? parser.problem : "YAML syntax error");
			rc = -EINVAL;
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(&b, &ev, fn, ctx);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	pl_arena_free(&b.doc);
	pl_arena_free(&b.item);
	return rc;
}

const struct pt *pt_get(const struct pt *map, const char *key)
{
	if (!map || map->kind != PT_MAP)
		return NULL;
	for (int i = 0; i + 1 < map->n; i += 2)
		if (map->kids[i]->kind == PT_SCALAR && !strcmp(map->kids[i]->str, key))
			return map->kids[i + 1];
	return NULL;
}
