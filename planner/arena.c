/* Bump allocator for the planner's world (see arena.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/arena.h"

struct pl_chunk {
	struct pl_chunk *next;
	size_t size;
	max_align_t data[];
};

/* Chunks grow from 16 KiB to 1 MiB: a small world (a test, a fuzz input)
 * stays small, a large one makes few allocations. */
#define PL_CHUNK_MIN (16u << 10)
#define PL_CHUNK (1u << 20)

void *pl_alloc(struct pl_arena *a, size_t len)
{
	size_t align = sizeof(max_align_t);
	size_t need = (len + align - 1) / align * align;
	struct pl_chunk *c;
	void *p;

	if (!a->head || a->used + need > a->size) {
		size_t grow = a->head ? a->size * 2 : PL_CHUNK_MIN;
		size_t size = grow > PL_CHUNK ? PL_CHUNK : grow;

		if (need > size)
			size = need;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = a->head;
		c->size = size;
		a->head = c;
		a->used = 0;
		a->size = size;
	}
	p = (char *)a->head->data + a->used;
	a->used += need;
	a->total += need;
	memset(p, 0, len);
	return p;
}

char *pl_strndup(struct pl_arena *a, const char *s, size_t len)
{
	char *p = pl_alloc(a, len + 1);

	if (p)
		memcpy(p, s, len);
	return p;
}

char *pl_strdup(struct pl_arena *a, const char *s)
{
	return s ? pl_strndup(a, s, strlen(s)) : NULL;
}

char *pl_printf(struct pl_arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = pl_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void pl_arena_free(struct pl_arena *a)
{
	struct pl_chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = a->size = a->total = 0;
}

void pl_arena_reset(struct pl_arena *a)
{
	struct pl_chunk *keep = a->head;

	if (!keep)
		return;
	a->head = keep->next;
	pl_arena_free(a);
	keep->next = NULL;
	a->head = keep;
	a->size = keep->size;
	a->used = 0;
}
