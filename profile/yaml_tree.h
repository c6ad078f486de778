/* A small YAML document tree built from libyaml events: mappings,
 * sequences and scalars, each with its 1-based line/column.  Bounded so a
 * hostile document cannot exhaust memory or stack: nesting depth, total
 * node count and keys per mapping are capped, and aliases are refused
 * (they are what makes "billion laughs" expansion possible). */
#ifndef MOKKA_SUPERVISOR_YAML_TREE_H
#define MOKKA_SUPERVISOR_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YTREE_MAX_DEPTH 64
#define YTREE_MAX_NODES 200000
#define YTREE_MAX_MAP_KEYS 4096

enum ynode_kind { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

struct ynode {
	enum ynode_kind kind;
	int line, col;			/* 1-based start mark */
	bool plain;			/* scalar written without quotes or !!str tag */
	char *str;			/* scalar text, NUL-terminated (may hold NULs) */
	size_t len;			/* scalar length in bytes */
	size_t n;			/* children; a map stores key,value,key,value */
	size_t cap;
	struct ynode **kids;
};

struct ytree_error {
	int line, col;			/* 1-based */
	char msg[256];
};

/* Parse one YAML document.  0 with *root set (NULL for an empty stream),
 * or -EINVAL/-ENOMEM with err filled. */
int ytree_parse(const char *buf, size_t len, struct ynode **root,
		struct ytree_error *err);
void ytree_free(struct ynode *n);

/* Mapping helpers: number of pairs, i-th key/value, lookup by key. */
size_t ytree_map_size(const struct ynode *map);
const struct ynode *ytree_map_key(const struct ynode *map, size_t i);
const struct ynode *ytree_map_value(const struct ynode *map, size_t i);
const struct ynode *ytree_map_get(const struct ynode *map, const char *key);

/* Scalar typing, YAML 1.2 core schema plus 0x/0o integers and the 1.1
 * yes/no/on/off booleans.  Quoted scalars are strings, never numbers.
 * 0 or -EINVAL (wrong type) / -ERANGE (does not fit). */
bool ytree_is_null(const struct ynode *n);
int ytree_int(const struct ynode *n, int64_t *out);
int ytree_uint(const struct ynode *n, uint64_t *out);
int ytree_bool(const struct ynode *n, bool *out);
int ytree_float(const struct ynode *n, double *out);

#endif
