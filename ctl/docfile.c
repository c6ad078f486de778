/* The overrides document on disk: flock(LOCK_EX) on the sibling lock file
 * (ovr_lock_path: the protocol every writer shares, NVML.md §5; ours is
 * mode 0600 and waited for a bounded time), read, the candidate's
 * validation, and replace by rename so a reader never sees a torn file;
 * the same replace for the Xid journal.  All three files are reached
 * through one fd of their directory, resolved beneath the host root
 * without following a link (fileio/beneath.h) when the path is the on-host
 * layout; a link at any of them is refused, never written through. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "fileio/beneath.h"
#include "fileio/fileio.h"

/* Who holds the lock, from /proc/locks ("1: FLOCK ADVISORY WRITE PID
 * MAJ:MIN:INO 0 EOF"): a PID to name in the message, or 0. */
static long lock_holder(const struct stat *st)
{
	char line[256], want[64];
	long pid = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%02x:%02x:%llu", major(st->st_dev), minor(st->st_dev),
		 (unsigned long long)st->st_ino);
	while (!pid && fgets(line, sizeof(line), f)) {
		char id[64];
		long p;
		if (sscanf(line, "%*s %*s %*s %*s %ld %63s", &p, id) == 2 && !strcmp(id, want))
			pid = p;
	}
	fclose(f);
	return pid;
}

/* Ours alone: a regular file of this user, no access for group or others,
 * one name.  Anything else could be opened (and flocked) by someone else. */
static int lock_safe(struct ctl_docfile *f, const struct stat *st, char *err, size_t errlen)
{
	if (S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 077) &&
	    st->st_nlink == 1)
		return 0;
	snprintf(err, errlen, "%s: refusing this lock file (mode %04o, owner uid %u, %lu links): "
		 "another user could hold it; it must be a mode %04o file of uid %u alone "
		 "(remove it: mokka-ctl makes a new one)", f->lock,
		 (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid,
		 (unsigned long)st->st_nlink, OVR_LOCK_MODE, (unsigned)geteuid());
	return -EPERM;
}

static const char *leaf(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "<path> is a symbolic link (to ...) ...: refusing" or strerror. */
static void say_refused(const char *path, int r, char *err, size_t errlen)
{
	char target[PATH_MAX];
	ssize_t n;

	if (r != -ELOOP) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return;
	}
	n = readlink(path, target, sizeof(target) - 1);
	target[n < 0 ? 0 : n] = '\0';
	snprintf(err, errlen, "%s is a symbolic link (to %s) that Mokka did not make: refusing "
		 "to follow it", path, target);
}

/* f->dir_fd: the files' directory, beneath f->root when set. */
static int dir_open(struct ctl_docfile *f, char *err, size_t errlen)
{
	char dir[PATH_MAX], why[PATH_MAX + 300];
	size_t n = (size_t)(leaf(f->path) - f->path);
	int rootfd;

	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, f->path, n);
	dir[n] = '\0';
	if (!f->root) {
		f->dir_fd = open(n ? dir : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (f->dir_fd < 0)
			goto fail;
		return 0;
	}
	if (strncmp(dir, f->root, strlen(f->root)) != 0)
		return -EINVAL;
	if ((rootfd = beneath_root(f->root)) < 0) {
		errno = -rootfd;
		goto fail;
	}
	f->dir_fd = beneath_open(rootfd, dir + strlen(f->root), O_PATH | O_DIRECTORY, 0);
	if (f->dir_fd == -ELOOP || f->dir_fd == -EXDEV) {
		beneath_explain(rootfd, f->root, dir + strlen(f->root), f->dir_fd, why, sizeof(why));
		snprintf(err, errlen, "%s", why);
		close(rootfd);
		return f->dir_fd;
	}
	close(rootfd);
	if (f->dir_fd >= 0)
		return 0;
	errno = -f->dir_fd;
fail:
	f->dir_fd = -1;
	snprintf(err, errlen, "%s: %s%s", n ? dir : ".", strerror(errno),
		 errno == ENOENT ? " (no driver root here: is the node staged? see "
				   "--host-root/--mock-root)" : "");
	return -errno;
}

static int lock_open(struct ctl_docfile *f, char *err, size_t errlen)
{
	const char *name = leaf(f->lock);
	struct stat st;
	int e;

	if ((e = dir_open(f, err, errlen)) < 0)
		return e;
	/* Made 0600 whatever the umask; an existing one is checked, not fixed:
	 * a chmod would not take the lock back from a descriptor already open. */
	f->lock_fd = openat(f->dir_fd, name,
			    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
			    OVR_LOCK_MODE);
	if (f->lock_fd >= 0 && fchmod(f->lock_fd, OVR_LOCK_MODE) == 0)
		return 0;
	if (f->lock_fd < 0 && errno == EEXIST)
		f->lock_fd = openat(f->dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (f->lock_fd >= 0)
		return 0;
	e = errno;
	if (fstatat(f->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		e = ELOOP;
	say_refused(f->lock, -e, err, errlen);
	return -e;
}

int ctl_doc_lock(struct ctl_docfile *f, const char *path, bool exclusive, char *err,
		 size_t errlen)
{
	struct timespec t0, now;
	struct stat st;
	int r;

	if (snprintf(f->path, sizeof(f->path), "%s", path) >= (int)sizeof(f->path) ||
	    ovr_lock_path(f->lock, sizeof(f->lock), path) < 0 ||
	    ovr_xids_path(f->xids, sizeof(f->xids), path) < 0) {
		snprintf(err, errlen, "%.200s...: path too long", path);
		return -ENAMETOOLONG;
	}
	if ((r = lock_open(f, err, errlen)) < 0)
		return r;
	if (fstat(f->lock_fd, &st) < 0 || (r = lock_safe(f, &st, err, errlen)) < 0)
		goto fail;
	/* A bounded wait: every holder keeps it for one edit (milliseconds);
	 * one that does not is stuck or hostile, and we say so. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (flock(f->lock_fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		long ms, pid;

		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			r = -errno;
			snprintf(err, errlen, "%s: flock: %s", f->lock, strerror(-r));
			goto fail;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= CTL_LOCK_WAIT_MS) {
			char who[48] = "another process";

			if ((pid = lock_holder(&st)) > 0)
				snprintf(who, sizeof(who), "process %ld", pid);
			snprintf(err, errlen, "%s: the lock is held by %s; gave up after %ld ms "
				 "(an edit holds it for milliseconds: the holder is stuck or "
				 "hostile)", f->lock, who, ms);
			r = -ETIMEDOUT;
			goto fail;
		}
		usleep(10000);
	}
	return 0;
fail:
	ctl_doc_unlock(f);
	return r;
}

void ctl_doc_unlock(struct ctl_docfile *f)
{
	if (f->lock_fd >= 0)
		close(f->lock_fd);	/* releases the flock */
	f->lock_fd = -1;
	if (f->dir_fd >= 0)
		close(f->dir_fd);
	f->dir_fd = -1;
}

/* Read name in the directory: never through a link (-ELOOP, said). */
static int read_in_dir(const struct ctl_docfile *f, const char *path, size_t max, char **buf,
		       size_t *len, char *err, size_t errlen)
{
	char fdpath[64];
	struct stat st;
	int fd = openat(f->dir_fd, leaf(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r;

	*buf = NULL;
	*len = 0;
	if (fd < 0) {
		r = -errno;
		if (fstatat(f->dir_fd, leaf(path), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			r = -ELOOP;
		if (r != -ENOENT)
			say_refused(path, r, err, errlen);
		return r;
	}
	if ((r = beneath_fdpath(fd, NULL, fdpath, sizeof(fdpath))) == 0 &&
	    (r = fileio_read(fdpath, max, buf, len, err, errlen)) < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	close(fd);
	return r;
}

int ctl_validate(const struct ctl_profile *p, const char *doc_name, const struct yl_node *doc,
		 const char *text, size_t len, char *err, size_t errlen)
{
	unsigned gpus[CTL_MAX_GPUS];
	struct ovr_rules rules = { .level = OVR_SCHEMA, .runtime = true, .gpus = gpus,
				   .ngpus = (size_t)p->n, .gpus_from = p->path };
	struct yl_node *back;
	char why[512];
	int r;

	for (int i = 0; i < p->n; i++)
		gpus[i] = p->gpu[i].index;
	/* Checked as read back, so positions point into the text written. */
	if (!(back = ovr_parse(text, len, why, sizeof(why)))) {
		snprintf(err, errlen, "%s: internal error: the written text does not read back: %s",
			 doc_name, why);
		return -EPROTO;
	}
	if ((r = ovr_validate(back, &rules, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s:%s", doc_name, why);
	} else if (!yl_equal(back, doc)) {
		snprintf(err, errlen, "%s: internal error: the written text does not read back "
			 "as the edited document", doc_name);
		r = -EPROTO;
	}
	yl_free(back);
	return r;
}

int ctl_doc_read(const struct ctl_docfile *f, char **buf, size_t *len, char *err, size_t errlen)
{
	/* Writers replace the file by rename: what we read is one version. */
	int r = read_in_dir(f, f->path, YL_MAX_INPUT, buf, len, err, errlen);

	return r == -ENOENT ? 0 : r;
}

int ctl_file_replace(const struct ctl_docfile *f, const char *path, const char *text, size_t len,
		     char *err, size_t errlen)
{
	/* 0644 whatever the umask: the engine runs as other users too.  The
	 * temporary is "<name>.mokka-tmp.<pid>" beside it, fsync'd with its
	 * directory, so the rename survives a crash. */
	int r = beneath_replace(f->dir_fd, leaf(path), text, len, 0644, BENEATH_REPLACE_SYNC);

	if (r == -ELOOP)
		say_refused(path, r, err, errlen);
	else if (r < 0)
		snprintf(err, errlen, "%s: replace: %s", path, strerror(-r));
	return r;
}

int ctl_doc_replace(const struct ctl_docfile *f, const char *text, size_t len, char *err,
		    size_t errlen)
{
	return ctl_file_replace(f, f->path, text, len, err, errlen);
}

int ctl_xids_read(const struct ctl_docfile *f, char **buf, size_t *len, char *err,
		  size_t errlen)
{
	int r = read_in_dir(f, f->xids, (size_t)OVR_XIDS_KEEP * 64 + 4096, buf, len, err, errlen);

	if (r == -ENOENT) {
		*buf = NULL;
		*len = 0;
		return 0;
	}
	return r;
}
