/* yaml_lite: a small YAML-subset reader with no dependency but libc, for
 * what must not depend on libyaml: the mock NVML library (bind-mounted
 * alone into containers) and the overrides module it compiles in.
 *
 * Supported: block mappings and sequences (including "- key: v" items and
 * sequences at their parent key's indentation), flow sequences [a, b] and
 * flow mappings {a: 1} (nested, may span lines), plain, 'single' and
 * "double" quoted scalars (with \ escapes), comments, a leading "---".
 * Rejected with an error: anchors, aliases, tags, block scalars (| >),
 * complex keys, multi-line plain or quoted scalars, duplicate keys, tabs
 * in indentation, several documents.  Errors carry line:col (1-based). */
#ifndef MOKKA_YAML_LITE_H
#define MOKKA_YAML_LITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YL_MAX_INPUT (4u << 20)	/* bytes */
#define YL_MAX_DEPTH 64		/* nesting of collections */
#define YL_MAX_NODES 200000

enum yl_kind { YL_NULL, YL_SCALAR, YL_MAP, YL_SEQ };

struct yl_node {
	enum yl_kind kind;
	bool quoted;		/* scalar was quoted: never null, never a bool */
	/* yl_clone lays a whole tree out in one allocation: in_block says
	 * the node lives inside an ancestor's, the others which of kids, key
	 * and str are still there (not separately freeable). */
	bool in_block, kids_inline, key_inline, str_inline;
	unsigned line, col;	/* where it starts in the source (0 if built) */
	char *key;		/* key when this node is a mapping value */
	char *str;		/* scalar text (NUL-terminated; NULs are rejected);
				 * a plain null keeps its spelling here too */
	size_t len;
	struct yl_node **kids;	/* mapping values (with .key) or sequence items */
	size_t n, cap;
};

struct yl_error {
	unsigned line, col;
	char msg[160];
};

/* Parses len bytes.  Returns the root (an empty document is a YL_NULL
 * node) or NULL with *err filled ("line:col: msg" via yl_error_format). */
struct yl_node *yl_parse(const char *buf, size_t len, struct yl_error *err);
void yl_error_format(const struct yl_error *err, char *out, size_t size);

/* Tree helpers. */
void yl_free(struct yl_node *n);
struct yl_node *yl_new(enum yl_kind kind);
struct yl_node *yl_new_scalar(const char *text);
struct yl_node *yl_clone(const struct yl_node *n);	/* NULL on ENOMEM */
bool yl_equal(const struct yl_node *a, const struct yl_node *b);	/* map order ignored */
bool yl_is_null(const struct yl_node *n);		/* NULL or YL_NULL */
struct yl_node *yl_get(const struct yl_node *map, const char *key);
struct yl_node *yl_at(const struct yl_node *seq, size_t i);
/* Dotted path with list indices: "a.b[2].c", "[0].x". */
struct yl_node *yl_path(const struct yl_node *root, const char *path);
/* Sets key to val (owned; replaces and frees an old value).  0 or -ENOMEM. */
int yl_map_set(struct yl_node *map, const char *key, struct yl_node *val);
void yl_map_remove(struct yl_node *map, const char *key);
/* Appends an owned item to a sequence or (with key) a mapping. */
int yl_append(struct yl_node *parent, struct yl_node *kid);

/* Scalar conversions: true only for a scalar of that type.  Integers take
 * an optional sign (i64) and 0x hex; bools take true/false/yes/no. */
const char *yl_text(const struct yl_node *n);	/* scalar text or NULL */
bool yl_u64(const struct yl_node *n, uint64_t *out);
bool yl_i64(const struct yl_node *n, int64_t *out);
bool yl_double(const struct yl_node *n, double *out);
bool yl_bool(const struct yl_node *n, bool *out);

#endif
