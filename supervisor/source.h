/* File source: the profile and topology files, watched through their
 * containing directories (inotify) at both ends of a symlinked path,
 * debounced, emitted only when the bytes change, and re-read every
 * resync interval regardless. */
#ifndef MOKKA_SUPERVISOR_SOURCE_H
#define MOKKA_SUPERVISOR_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include "fileio/fileio.h"
#include "profile/compile.h"
#include "supervisor/loop.h"

#define SOURCE_MAX_FILE PROFILE_MAX_FILE	/* larger profiles are refused */

struct source;

/* Called with the current bytes of both files (topology NULL when unset
 * or absent) whenever either changed, and once more when both read cleanly
 * again after an error was reported (so the error can be cleared).  The
 * first call waits until both have been read (or found absent) once. */
typedef void (*source_update_cb)(void *arg, const char *profile, size_t plen,
				 const char *topo, size_t tlen);
/* Called when a file cannot be read (message names the file and why); the
 * last good bytes stay in force. */
typedef void (*source_error_cb)(void *arg, const char *message);

struct source_opts {
	const char *profile_path;	/* NULL: built-in profile, never changes */
	const char *topology_path;	/* NULL: none */
	uint64_t resync_ms;		/* default 60000 */
	uint64_t debounce_ms;		/* default 200 */
};

/* Reads both files once and calls update (or error) before returning. */
int source_start(struct loop *l, const struct source_opts *o,
		 source_update_cb update, source_error_cb error, void *arg,
		 struct source **out);
void source_stop(struct source *s);

/* A profile or topology file, read whole (fileio_read with the limit). */
static inline int source_read_file(const char *path, char **buf, size_t *len, char *msg,
				   size_t msglen)
{
	return fileio_read(path, SOURCE_MAX_FILE, buf, len, msg, msglen);
}

/* For tests: closes the inotify instance, as when watches are exhausted,
 * leaving only the resync timer to notice changes. */
void source_test_drop_watches(struct source *s);

#endif
