/* The mock root R and R/state are the supervisor's: it creates them before
 * the first pass and, at the end of a teardown, removes the ones it created
 * (only when empty), so a stopped node is left as it was found. */
#ifndef MOKKA_SUPERVISOR_ROOTDIRS_H
#define MOKKA_SUPERVISOR_ROOTDIRS_H

#define ROOTDIRS_MAX 32

struct rootdirs {
	int n;
	char created[ROOTDIRS_MAX][4096];
};

int rootdirs_prepare(struct rootdirs *rd, const char *host_root, const char *mock_root);
void rootdirs_cleanup(struct rootdirs *rd);

#include <stddef.h>

/* R/state (the daemons' pid records) beneath the host root: an O_PATH fd
 * the caller closes, and its "/proc/self/fd/<fd>" in buf for pidfile.c's
 * path calls; a link planted there is refused (-ELOOP) and named. */
int rootdirs_state_fd(const char *host_root, const char *mock_root, char *buf, size_t len);

/* Empty host path rel beneath the root when it is a regular file: 1 done,
 * 0 absent, -errno (a link there is refused and named, never followed). */
int rootdirs_truncate(const char *host_root, const char *rel);

#endif
