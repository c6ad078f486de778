/* mokka-plan's output: server-side-apply-ready YAML (field manager
 * mokka-controller), sorted by name so the same world gives the same
 * bytes. */
#ifndef MOKKA_PLANNER_EMIT_H
#define MOKKA_PLANNER_EMIT_H

#include <stdio.h>

#include "planner/planner.h"

#define PL_FIELD_MANAGER "mokka-controller"

/* SGPURacks (spec) and Node projections (or their exact removal). */
int pl_emit_apply(FILE *f, struct pl_world *w);
/* The status subresource of inventories, racks and policies.  now: the
 * lastTransitionTime of a condition whose status changed. */
int pl_emit_status(FILE *f, struct pl_world *w, const char *now);
/* "sgpuracks.mokka.nvidia.com/NAME" per drained rack to delete. */
int pl_emit_deletes(FILE *f, struct pl_world *w);
/* The desired-state document of one assigned Node (kind SGPUNodeState). */
int pl_emit_node_state(FILE *f, struct pl_world *w, int node);
/* Nodes with a desired-state document, sorted by name; caller frees. */
int pl_state_nodes(struct pl_world *w, int **out);

#endif
