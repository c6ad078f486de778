/* Generational surfaces: Stage writes the next generation into a shadow
 * (host.h: gens, staging), Publish swaps each surface's shadow and live
 * side in one atomic rename.  A failed pass therefore changes nothing a
 * consumer reads, and a consumer reading during a pass sees one generation
 * of each surface, never a mix. */
#ifndef MOKKA_WORKERS_GENERATION_H
#define MOKKA_WORKERS_GENERATION_H

#include <stdbool.h>
#include <stddef.h>
#include "workers/host.h"

struct manifest;

/* Point h at sim's shadow (<mock_root>/.staged/<sim>) and, with make,
 * make the shadow's parent directories.  gens may be NULL (no
 * generational surfaces).  0 or -errno; -EINVAL (and no generations)
 * when h->mock_root is not an absolute path below /. */
int gen_prepare(struct host *h, const char *sim, const char *const *gens, bool make);

/* After a successful Stage: remove from the shadow every entry whose live
 * path keep does not list (a GPU gone, a killed writer's temp file). */
int gen_converge(const struct host *h, const struct manifest *keep);

/* Make the staged generation live: per surface, entries of the live side
 * that own does not list (another simulator's) are linked into the
 * shadow, then shadow and live swap.  A surface not staged this pass is
 * withdrawn (its live side moved into the shadow) when own lists it, else
 * skipped.
 * 0 or -errno with why in err. */
int gen_publish(const struct host *h, const struct manifest *own, char *err, size_t errlen);

/* Teardown: every generation of every surface (live and shadow) and the
 * shadow root; R/.staged when empty. */
int gen_remove_all(const struct host *h);

#endif
