/* The planner's YAML reader: libyaml events into small per-object trees.
 * kubectl's List (a top-level "items" sequence) is streamed: each item is
 * built, handed to the callback and dropped, so 100,000 Nodes never sit in
 * memory as one tree.  Multi-document streams hand over each document.
 * Bounded: nesting depth, nodes per object and scalar size are capped and
 * aliases are refused. */
#ifndef MOKKA_PLANNER_YTREE_H
#define MOKKA_PLANNER_YTREE_H

#include <stddef.h>

#define PT_MAX_DEPTH 48
#define PT_MAX_NODES (1 << 20)		/* per object */
#define PT_MAX_SCALAR (1 << 20)

enum pt_kind { PT_SCALAR, PT_MAP, PT_SEQ };

struct pt {
	enum pt_kind kind;
	int line;			/* 1-based */
	int n, cap;			/* kids; a map holds key, value, key, value */
	struct pt **kids;
	char *str;			/* scalar text */
	size_t len;
	int quoted;			/* scalar was quoted (a string, never a number) */
};

/* Called with each object; non-zero stops the stream with that value. */
typedef int (*pt_object_fn)(const struct pt *obj, void *ctx);

/* 0, the callback's value, or -EINVAL with err "line L: why". */
int pt_stream(const char *buf, size_t len, pt_object_fn fn, void *ctx,
	      char *err, size_t errlen);

const struct pt *pt_get(const struct pt *map, const char *key);

#endif
