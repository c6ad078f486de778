/* Open-addressing hash map from a byte key to an int (an index into one of
 * the world's arrays).  Keys are borrowed: they must outlive the map (the
 * world's arena holds them). */
#ifndef MOKKA_PLANNER_HMAP_H
#define MOKKA_PLANNER_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct pl_hslot {
	const char *key;
	size_t len;
	uint64_t hash;
	int val;
};

struct pl_hmap {
	struct pl_hslot *slots;
	size_t cap, n;			/* cap is a power of two */
};

uint64_t pl_hash(const void *key, size_t len);
/* 0, -EEXIST (value kept, *old set when old != NULL) or -ENOMEM. */
int pl_hmap_put(struct pl_hmap *m, const char *key, size_t len, int val, int *old);
/* The value, or -1. */
int pl_hmap_get(const struct pl_hmap *m, const char *key, size_t len);
int pl_hmap_gets(const struct pl_hmap *m, const char *key);
/* Overwrite an existing key's value; -ENOENT when absent. */
int pl_hmap_set(struct pl_hmap *m, const char *key, size_t len, int val);
void pl_hmap_free(struct pl_hmap *m);

#endif
