/* Open-addressing hash map, linear probing, FNV-1a with a final mix (see
 * hmap.h).  Never shrinks: the planner builds its maps once per world. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "planner/hmap.h"

uint64_t pl_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	/* splitmix64 finaliser: FNV's low bits are weak for probing */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static struct pl_hslot *find(const struct pl_hmap *m, const char *key, size_t len,
			     uint64_t h)
{
	size_t mask = m->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct pl_hslot *s = &m->slots[i];

		if (!s->key)
			return s;
		if (s->hash == h && s->len == len && !memcmp(s->key, key, len))
			return s;
	}
}

static int grow(struct pl_hmap *m)
{
	struct pl_hmap bigger = { .cap = m->cap ? m->cap * 2 : 64 };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct pl_hslot *s = &m->slots[i];

		if (s->key)
			*find(&bigger, s->key, s->len, s->hash) = *s;
	}
	bigger.n = m->n;
	free(m->slots);
	*m = bigger;
	return 0;
}

int pl_hmap_put(struct pl_hmap *m, const char *key, size_t len, int val, int *old)
{
	uint64_t h = pl_hash(key, len);
	struct pl_hslot *s;

	if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return -ENOMEM;
	s = find(m, key, len, h);
	if (s->key) {
		if (old)
			*old = s->val;
		return -EEXIST;
	}
	*s = (struct pl_hslot){ .key = key, .len = len, .hash = h, .val = val };
	m->n++;
	return 0;
}

int pl_hmap_get(const struct pl_hmap *m, const char *key, size_t len)
{
	const struct pl_hslot *s;

	if (!m->cap || !key)
		return -1;
	s = find(m, key, len, pl_hash(key, len));
	return s->key ? s->val : -1;
}

int pl_hmap_gets(const struct pl_hmap *m, const char *key)
{
	return key ? pl_hmap_get(m, key, strlen(key)) : -1;
}

int pl_hmap_set(struct pl_hmap *m, const char *key, size_t len, int val)
{
	struct pl_hslot *s;

	if (!m->cap)
		return -ENOENT;
	s = find(m, key, len, pl_hash(key, len));
	if (!s->key)
		return -ENOENT;
	s->val = val;
	return 0;
}

void pl_hmap_free(struct pl_hmap *m)
{
	free(m->slots);
	*m = (struct pl_hmap){ 0 };
}
