#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/rootdirs.h"

static int mkdirs(struct rootdirs *rd, const char *full, size_t skip)
{
	char p[4096];
	size_t n = strlen(full);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, full, n + 1);
	for (size_t i = skip + 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0755) == 0) {
			if (rd->n < ROOTDIRS_MAX)
				snprintf(rd->created[rd->n++], sizeof(rd->created[0]), "%s", p);
		} else if (errno != EEXIST) {
			return -errno;
		}
		p[i] = c;
	}
	return 0;
}

int rootdirs_prepare(struct rootdirs *rd, const char *host_root, const char *mock_root)
{
	char full[4096];
	struct stat st;
	int r;

	if (host_root[0] && (stat(host_root, &st) < 0 || !S_ISDIR(st.st_mode))) {
		log_error("--host-root %s: %s", host_root, errno ? strerror(errno) : "not a directory");
		return -ENOTDIR;
	}
	if (snprintf(full, sizeof(full), "%s%s/state", host_root, mock_root) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	/* Never create the host root itself; only what lies below it. */
	r = mkdirs(rd, full, strlen(host_root));
	if (r < 0)
		log_error("%s: mkdir: %s", full, strerror(-r));
	return r;
}

void rootdirs_cleanup(struct rootdirs *rd)
{
	for (int i = rd->n - 1; i >= 0; i--)
		if (rmdir(rd->created[i]) < 0 && errno != ENOENT)
			log_warn("teardown: %s left in place: %s", rd->created[i], strerror(errno));
	rd->n = 0;
}
