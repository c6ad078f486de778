/* The FUSE mount made by descriptor, not by path: the mount point is a
 * directory already resolved beneath the host root (an O_PATH fd), and
 * the new mount API (fsopen/fsmount/move_mount) attaches the connection
 * to exactly that directory, so a link swapped in after the check cannot
 * redirect it (libfuse's own mount, and its auto_unmount helper
 * fusermount3, take a path and resolve it again).  In place of that
 * helper a forked watcher holds the mount's root and a pipe; when the
 * daemon dies in any way (SIGKILL included) the pipe reads EOF and the
 * watcher detaches the mount, so no stale "Transport endpoint is not
 * connected" mount outlives it.  Kernels before 5.2 (no fsopen) get
 * mount(2) onto /proc/self/fd/<mount point>, the same directory. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The new mount API: the mount is made detached (root_fd is its root) and
 * moved onto exactly mp.  -ENOSYS on kernels before 5.2. */
static int mount_new(int mp, struct pcifs_mount *m, char *why, size_t whylen)
{
	char num[32];
	int fsfd, r = 0;

	if ((fsfd = fsopen("fuse", FSOPEN_CLOEXEC)) < 0) {
		snprintf(why, whylen, "fsopen(fuse): %s (needs CAP_SYS_ADMIN)", strerror(errno));
		return -errno;
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
		goto out;
	}
	if ((m->root_fd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
		r = -errno;
		snprintf(why, whylen, "fsmount: %s", strerror(errno));
		goto out;
	}
	if (move_mount(m->root_fd, "", mp, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		r = -errno;
		snprintf(why, whylen, "move_mount: %s", strerror(errno));
		close(m->root_fd);
		m->root_fd = -1;
	}
out:
	close(fsfd);
	return r;
}

/* fd's mount id (/proc/self/fdinfo, kernels 3.15+): asks nothing of the
 * file system, so a FUSE root not yet served is safe to ask about. */
static long mnt_of(int fd)
{
	char path[64], line[128];
	long id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %ld", &id) == 1)
			break;
	fclose(f);
	return id;
}

/* Whether mountinfo has mount id, a fuse.pcifs mount on top of parent. */
static bool ours_on(long id, long parent)
{
	char line[8192];
	long i, p;
	bool yes = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	while (f && !yes && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		yes = sscanf(line, "%ld %ld", &i, &p) == 2 && i == id && p == parent && sep &&
		      !strncmp(sep + 3, "fuse.pcifs ", 11);
	}
	if (f)
		fclose(f);
	return yes;
}

/* Kernels without it: mount(2) onto /proc/self/fd/<mp>, which the kernel
 * resolves to mp's very directory; the root is then looked up again in
 * the parent (no link followed) and must be our mount on top of mp's.
 * Nothing here may stat the root: that would wait for a FUSE loop not yet
 * running. */
static int mount_old(int parent, const char *leaf, int mp, struct pcifs_mount *m, char *why,
		     size_t whylen)
{
	char target[64], opts[128];
	long under = mnt_of(mp);

	snprintf(target, sizeof(target), "/proc/self/fd/%d", mp);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 m->fuse_fd);
	if (mount("mokka-pcifs", target, "fuse.pcifs", MS_NOSUID | MS_NODEV, opts) < 0) {
		snprintf(why, whylen, "mount: %s (needs CAP_SYS_ADMIN)", strerror(errno));
		return -errno;
	}
	m->root_fd = openat(parent, leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (m->root_fd >= 0 && under >= 0 && ours_on(mnt_of(m->root_fd), under))
		return 0;
	snprintf(why, whylen, "the mount point changed while mounting");
	if (m->root_fd >= 0)
		close(m->root_fd);
	m->root_fd = -1;
	return -EBUSY;
}

int pcifs_mount_at(int parent, const char *leaf, struct pcifs_mount *m, char *why, size_t whylen)
{
	const char *old = getenv("MOKKA_TEST_PCIFS_OLD_MOUNT");
	struct stat st;
	int mp, r;

	m->fuse_fd = m->root_fd = m->watch_fd = -1;
	m->watcher = -1;
	mp = openat(parent, leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mp < 0 || fstat(mp, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = -errno;
		snprintf(why, whylen, "the mount point: %s", strerror(errno));
		if (mp >= 0)
			close(mp);
		return r;
	}
	if ((m->fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, whylen, "/dev/fuse: %s", strerror(errno));
		close(mp);
		return r;
	}
	/* The test hook takes the older kernels' path on any kernel. */
	r = old && *old == '1' ? -ENOSYS : mount_new(mp, m, why, whylen);
	if (r == -ENOSYS)
		r = mount_old(parent, leaf, mp, m, why, whylen);
	close(mp);
	if (r < 0) {
		close(m->fuse_fd);
		m->fuse_fd = -1;
	}
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
		int a = fcntl(p[0], F_DUPFD_CLOEXEC, 100), b = fcntl(m->root_fd, F_DUPFD_CLOEXEC, 100);

		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
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
