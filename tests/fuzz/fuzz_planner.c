/* Fuzz mokka-plan's input decoder (planner/ytree.c, decode*.c) and
 * everything after it: any input either fails with a message or decodes
 * into a world that plans and emits; planning the same input twice gives
 * the same bytes.  Aborts when a contract breaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/decode.h"
#include "planner/emit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *run(const uint8_t *data, size_t size, bool strict)
{
	struct pl_world w;
	struct pl_decoder d = { .w = &w, .source = "fuzz", .strict = strict };
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int rc, *ns, n;

	pl_world_init(&w);
	rc = pl_decode(&d, (const char *)data, size);
	if (rc < 0) {
		if (!d.err[0])
			abort();	/* every failure says why */
		pl_decoder_free(&d);
		pl_world_free(&w);
		return NULL;
	}
	if (pl_plan(&w) < 0)
		abort();
	m = open_memstream(&buf, &len);
	if (!m || pl_emit_apply(m, &w) || pl_emit_status(m, &w, "2026-01-01T00:00:00Z") ||
	    pl_emit_deletes(m, &w))
		abort();
	n = pl_state_nodes(&w, &ns);
	for (int i = 0; i < n; i++)
		if (pl_emit_node_state(m, &w, ns[i]))
			abort();
	free(ns);
	fclose(m);
	pl_decoder_free(&d);
	pl_world_free(&w);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *a = run(data, size, false), *b;

	if (a) {
		b = run(data, size, false);
		if (!b || strcmp(a, b))
			abort();	/* deterministic */
		free(b);
	}
	free(a);
	free(run(data, size, true));
	return 0;
}
