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

#endif
