/* Ownership manifest: the set of host paths a simulator created, persisted
 * at <root>/<R>/state/<simulator>.manifest.  Stage converges by removing
 * what the previous manifest owned and the new pass did not re-create;
 * Discard/Revoke remove everything owned, deepest first. */
#ifndef MOKKA_WORKERS_MANIFEST_H
#define MOKKA_WORKERS_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

struct manifest {
	char **paths;		/* host paths, absolute, no duplicates */
	char *kinds;		/* 'f' file/link/node, 'd' directory */
	size_t n, cap;
	/* Hash index over paths (index + 1, 0 = empty; open addressing):
	 * manifest_has is asked once per path written and per entry walked. */
	size_t *slot, nslot;
};

void manifest_init(struct manifest *m);
void manifest_free(struct manifest *m);
int manifest_add(struct manifest *m, const char *path, char kind);
bool manifest_has(const struct manifest *m, const char *path);

/* Load/save at file (a path on this machine, already root-joined).  A
 * missing file loads as empty.  Save is atomic. */
int manifest_load(struct manifest *m, const char *file);
int manifest_save(const struct manifest *m, const char *file);

/* The same for host path path beneath root (a directory; "" is /), never
 * through a link (fileio/beneath.h). */
int manifest_load_at(struct manifest *m, const char *root, const char *path);
int manifest_save_at(const struct manifest *m, const char *root, const char *path);

/* Remove (under root) every path in old that is not in keep (keep may be
 * NULL = remove all), files first, then directories deepest first; a
 * non-empty directory is left (it holds something not ours).  Returns 0 or
 * the first -errno; continues past errors. */
int manifest_remove_stale(const char *root, const struct manifest *old,
			  const struct manifest *keep);

#endif
