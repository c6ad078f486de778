/* A bump allocator: the world's strings and arrays live until the world is
 * freed, so 100,000 Nodes cost a few large allocations, not millions. */
#ifndef MOKKA_PLANNER_ARENA_H
#define MOKKA_PLANNER_ARENA_H

#include <stddef.h>

struct pl_chunk;

struct pl_arena {
	struct pl_chunk *head;
	size_t used, size;
	size_t total;			/* bytes handed out (for the bench) */
};

void *pl_alloc(struct pl_arena *a, size_t len);	/* zeroed; NULL on ENOMEM */
char *pl_strndup(struct pl_arena *a, const char *s, size_t len);
char *pl_strdup(struct pl_arena *a, const char *s);
char *pl_printf(struct pl_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pl_arena_free(struct pl_arena *a);
/* Forget every allocation but keep the newest chunk for reuse. */
void pl_arena_reset(struct pl_arena *a);

#endif
