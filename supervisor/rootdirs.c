#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "supervisor/rootdirs.h"

/* mkdir -p of full below its first skip bytes (the host root), never
 * through a link planted there (fileio/beneath.h). */
static int mkdirs(struct rootdirs *rd, const char *full, size_t skip)
{
	char p[4096], root[4096];
	size_t n = strlen(full);
	int rootfd, r = 0;

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, full, n + 1);
	memcpy(root, full, skip);
	root[skip] = '\0';
	if ((rootfd = beneath_root(root)) < 0)
		return rootfd;
	for (size_t i = skip + 1; i <= n && r == 0; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		r = beneath_mkdir(rootfd, p + skip, 0755);
		if (r == 0 && rd->n < ROOTDIRS_MAX)
			snprintf(rd->created[rd->n++], sizeof(rd->created[0]), "%s", p);
		if (r == -ELOOP)
			log_error("%s: a symbolic link Mokka did not make: refusing to follow it", p);
		r = r == -EEXIST ? 0 : r;
		p[i] = c;
	}
	close(rootfd);
	return r;
}

/* What a start created is recorded in R/state, so that a supervisor
 * restarted after a SIGKILL (finding them present) still removes them at
 * its teardown: the root is left as the first start found it. */
#define ROOTDIRS_RECORD "/rootdirs.created"

static void record(struct rootdirs *rd, const char *state)
{
	char file[4200], line[4096];
	FILE *f;

	snprintf(file, sizeof(file), "%s" ROOTDIRS_RECORD, state);
	if (rd->n == 0) {		/* found present: made by an earlier start? */
		if (!(f = fopen(file, "re")))
			return;
		while (rd->n < ROOTDIRS_MAX && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (line[0] == '/')
				snprintf(rd->created[rd->n++], sizeof(rd->created[0]), "%s", line);
		}
		fclose(f);
		return;
	}
	if (!(f = fopen(file, "we")))
		return;
	for (int i = 0; i < rd->n; i++)
		fprintf(f, "%s\n", rd->created[i]);
	fclose(f);
}

/* The host root of this run (rootdirs_cleanup resolves beneath it). */
static char root_path[4096];

int rootdirs_prepare(struct rootdirs *rd, const char *host_root, const char *mock_root)
{
	char full[4096];
	struct stat st;
	int r;

	if (host_root[0] && (stat(host_root, &st) < 0 || !S_ISDIR(st.st_mode))) {
		log_error("--host-root %s: %s", host_root, errno ? strerror(errno) : "not a directory");
		return -ENOTDIR;
	}
	snprintf(root_path, sizeof(root_path), "%s", host_root);
	if (snprintf(full, sizeof(full), "%s%s/state", host_root, mock_root) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	/* Never create the host root itself; only what lies below it. */
	r = mkdirs(rd, full, strlen(host_root));
	if (r < 0)
		log_error("%s: mkdir: %s", full, strerror(-r));
	else
		record(rd, full);
	return r;
}

/* Remove full (below the host root, root_len bytes of it) beneath the
 * root: never a directory reached through a link planted meanwhile. */
static int remove_beneath(int rootfd, const char *full, size_t root_len, int flags)
{
	const char *name;
	int dfd = beneath_parent(rootfd, full + root_len, &name), r = 0;

	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, flags) < 0)
		r = -errno;
	close(dfd);
	return r;
}

void rootdirs_cleanup(struct rootdirs *rd)
{
	char file[4200];
	int rootfd = beneath_root(root_path), r;
	size_t len = strlen(root_path);

	if (rootfd < 0) {
		log_warn("teardown: host root %s: %s", root_path, strerror(-rootfd));
		return;
	}
	if (rd->n > 0) {
		snprintf(file, sizeof(file), "%s" ROOTDIRS_RECORD, rd->created[rd->n - 1]);
		remove_beneath(rootfd, file, len, 0);
	}
	for (int i = rd->n - 1; i >= 0; i--)
		if ((r = remove_beneath(rootfd, rd->created[i], len, AT_REMOVEDIR)) < 0 &&
		    r != -ENOENT)
			log_warn("teardown: %s left in place: %s", rd->created[i], strerror(-r));
	close(rootfd);
	rd->n = 0;
}
