/* The FUSE mount made by descriptor, not by path: the mount point is a
 * directory already resolved beneath the host root (an O_PATH fd), and
 * the new mount API (fsopen/fsmount/move_mount) attaches the connection
 * to exactly that directory, so a link swapped in after the check cannot
 * redirect it (libfuse's own mount, and its auto_unmount helper
 * fusermount3, take a path and resolve it again).  In place of that
 * helper a forked watcher holds the mount's root and a pipe; when the
 * daemon dies in any way (SIGKILL included) the pipe reads EOF and the
 * watcher detaches the mount, so no stale "Transport endpoint is not
 * connected" mount outlives it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workers/pcibus/pcifs/pcifs.h"

static int set_str(int fsfd, const char *key, const char *val)
{
	return fsconfig(fsfd, FSCONFIG_SET_STRING, key, val, 0) < 0 ? -errno : 0;
}

int pcifs_mount_at(int dirfd, struct pcifs_mount *m, char *why, size_t whylen)
{
	char num[32];
	struct stat st;
	int fsfd = -1, r = 0;

	m->fuse_fd = m->root_fd = m->watch_fd = -1;
	m->watcher = -1;
	if (fstat(dirfd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "the mount point is not a directory");
		return -ENOTDIR;
	}
	if ((m->fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, whylen, "/dev/fuse: %s", strerror(errno));
		return r;
	}
	if ((fsfd = fsopen("fuse", FSOPEN_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, whylen, "fsopen(fuse): %s (needs CAP_SYS_ADMIN)", strerror(errno));
		goto fail;
	}
	snprintf(num, sizeof(num), "%d", m->fuse_fd);
	/* libfuse's own options for a root daemon serving others: the root's
	 * type, uid/gid 0, allow_other; fsname and subtype for mountinfo. */
	if ((r = set_str(fsfd, "source", "mokka-pcifs")) < 0 ||
	    (r = set_str(fsfd, "subtype", "pcifs")) < 0 ||
	    (r = set_str(fsfd, "fd", num)) < 0 ||
	    (r = set_str(fsfd, "rootmode", "40000")) < 0 ||
	    (r = set_str(fsfd, "user_id", "0")) < 0 ||
	    (r = set_str(fsfd, "group_id", "0")) < 0 ||
	    (fsconfig(fsfd, FSCONFIG_SET_FLAG, "allow_other", NULL, 0) < 0 && (r = -errno)) ||
	    (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 && (r = -errno))) {
		snprintf(why, whylen, "fsconfig(fuse): %s", strerror(-r));
		goto fail;
	}
	if ((m->root_fd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
		r = -errno;
		snprintf(why, whylen, "fsmount: %s", strerror(errno));
		goto fail;
	}
	if (move_mount(m->root_fd, "", dirfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		r = -errno;
		snprintf(why, whylen, "move_mount: %s", strerror(errno));
		goto fail;
	}
	close(fsfd);
	return 0;
fail:
	if (fsfd >= 0)
		close(fsfd);
	if (m->root_fd >= 0)
		close(m->root_fd);
	close(m->fuse_fd);
	m->fuse_fd = m->root_fd = -1;
	return r;
}

/* umount2 through the root's magic link reaches exactly our mount. */
static int detach(int root_fd)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", root_fd);
	return umount2(p, MNT_DETACH) < 0 ? -errno : 0;
}

int pcifs_mount_watch(struct pcifs_mount *m)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	m->watcher = fork();
	if (m->watcher < 0) {
		int e = -errno;

		close(p[0]);
		close(p[1]);
		return e;
	}
	if (m->watcher == 0) {
		/* Keep only stdio, the pipe's read end and the mount's root:
		 * holding /dev/fuse would keep a dead daemon's connection up. */
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		int a = fcntl(p[0], F_DUPFD_CLOEXEC, 100), b = fcntl(m->root_fd, F_DUPFD_CLOEXEC, 100);

		prctl(PR_SET_NAME, "pcifs-unmount", 0, 0, 0);
		if (a < 0 || b < 0)
			_exit(1);
		/* a < b: a is the lowest free number from 100 on, b the next. */
		close_range(3, (unsigned)a - 1, 0);
		if (b > a + 1)
			close_range((unsigned)a + 1, (unsigned)b - 1, 0);
		close_range((unsigned)b + 1, ~0U, 0);
		while (read(a, &c, 1) < 0 && errno == EINTR)
			;
		detach(b);	/* EINVAL when the daemon already did */
		_exit(0);
	}
	close(p[0]);
	m->watch_fd = p[1];
	return 0;
}

int pcifs_mount_release(struct pcifs_mount *m)
{
	int r = m->root_fd >= 0 ? detach(m->root_fd) : 0;

	if (m->root_fd >= 0)
		close(m->root_fd);
	if (m->watch_fd >= 0)
		close(m->watch_fd);
	if (m->watcher > 0)
		while (waitpid(m->watcher, NULL, 0) < 0 && errno == EINTR)
			;
	m->root_fd = m->watch_fd = -1;
	m->watcher = -1;
	return r;
}
