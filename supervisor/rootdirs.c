#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "fileio/fileio.h"
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
		if (r == -ELOOP || r == -EXDEV) {
			char why[PATH_MAX + 300];

			beneath_explain(rootfd, root, p + skip, r, why, sizeof(why));
			log_error("%s", why);
		}
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

static void record(struct rootdirs *rd, const char *root, const char *state)
{
	char *buf = NULL, fdpath[64];
	size_t len = 0, off = 0;
	int rootfd = beneath_root(root), dfd = -1, fd = -1;

	/* Beneath the root, never through a link planted at R/state. */
	if (rootfd < 0 || (dfd = beneath_open(rootfd, state + strlen(root), O_PATH | O_DIRECTORY,
					     0)) < 0)
		goto out;
	if (rd->n == 0) {		/* found present: made by an earlier start? */
		fd = openat(dfd, ROOTDIRS_RECORD + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || beneath_fdpath(fd, NULL, fdpath, sizeof(fdpath)) < 0 ||
		    fileio_read(fdpath, ROOTDIRS_MAX * 4200, &buf, &len, NULL, 0) < 0)
			goto out;
		for (char *save = NULL, *l = strtok_r(buf, "\n", &save);
		     l && rd->n < ROOTDIRS_MAX; l = strtok_r(NULL, "\n", &save))
			if (l[0] == '/')
				snprintf(rd->created[rd->n++], sizeof(rd->created[0]), "%s", l);
		goto out;
	}
	buf = malloc((size_t)rd->n * 4097 + 1);
	for (int i = 0; buf && i < rd->n; i++)
		off += (size_t)sprintf(buf + off, "%s\n", rd->created[i]);
	if (buf)
		beneath_replace(dfd, ROOTDIRS_RECORD + 1, buf, off, 0644, 0);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (rootfd >= 0)
		close(rootfd);
}

int rootdirs_state_fd(const char *host_root, const char *mock_root, char *buf, size_t len)
{
	char rel[4200], why[PATH_MAX + 300];
	int rootfd = beneath_root(host_root), fd;

	if (rootfd < 0)
		return rootfd;
	snprintf(rel, sizeof(rel), "%s/state", mock_root);
	fd = beneath_open(rootfd, rel, O_PATH | O_DIRECTORY, 0);
	if (fd == -ELOOP || fd == -EXDEV) {
		beneath_explain(rootfd, host_root, rel, fd, why, sizeof(why));
		log_error("%s", why);
	}
	close(rootfd);
	if (fd >= 0 && beneath_fdpath(fd, NULL, buf, len) < 0) {
		close(fd);
		return -ENAMETOOLONG;
	}
	return fd;
}

int rootdirs_truncate(const char *host_root, const char *rel)
{
	char why[PATH_MAX + 300];
	struct stat st;
	int rootfd = beneath_root(host_root), fd, r = 1;

	if (rootfd < 0)
		return rootfd;
	/* O_NONBLOCK: a FIFO planted there does not hang the start. */
	fd = beneath_open(rootfd, rel, O_WRONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -ELOOP || fd == -EXDEV) {
		beneath_explain(rootfd, host_root, rel, fd, why, sizeof(why));
		log_error("%s", why);
	}
	close(rootfd);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (ftruncate(fd, 0) < 0)
		r = -errno;
	close(fd);
	return r;
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
		record(rd, host_root, full);
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
