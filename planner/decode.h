/* mokka-plan's input decoder: Kubernetes objects as `kubectl get -o yaml`
 * prints them (a List, or a multi-document stream) into a planner world.
 * Every error names the source, line, kind/name and field path.  Errors in
 * an object's metadata (or YAML syntax) stop the decode; errors in a spec
 * make that object invalid, reported in its status, unless strict. */
#ifndef MOKKA_PLANNER_DECODE_H
#define MOKKA_PLANNER_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "planner/planner.h"

struct pl_decoder {
	struct pl_world *w;
	const char *source;		/* file name for messages */
	bool strict;			/* spec errors stop the decode too */
	/* called for each spec error that only invalidates its object */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	int nwarnings, nobjects, nignored;
	char err[1024];			/* the stopping error */
	struct pl_hmap seen[5];		/* names per kind, across inputs */
};

/* 0, or -EINVAL / -ENOMEM with d->err set. */
int pl_decode(struct pl_decoder *d, const char *buf, size_t len);
void pl_decoder_free(struct pl_decoder *d);

#endif
