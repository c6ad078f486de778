/* The overrides document on disk: flock(LOCK_EX) on the sibling lock file
 * (ovr_lock_path: the protocol every writer shares, NVML.md §5; ours is
 * mode 0600 and waited for a bounded time), read, the candidate's
 * validation, and replace by rename so a reader never sees a torn file;
 * the same replace for the Xid journal. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
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

static int lock_open(struct ctl_docfile *f, char *err, size_t errlen)
{
	int e;

	/* Made 0600 whatever the umask; an existing one is checked, not fixed:
	 * a chmod would not take the lock back from a descriptor already open. */
	f->lock_fd = open(f->lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
			  OVR_LOCK_MODE);
	if (f->lock_fd >= 0 && fchmod(f->lock_fd, OVR_LOCK_MODE) == 0)
		return 0;
	if (f->lock_fd < 0 && errno == EEXIST)
		f->lock_fd = open(f->lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (f->lock_fd >= 0)
		return 0;
	e = errno;
	snprintf(err, errlen, "%s: %s%s", f->lock, strerror(e),
		 e == ENOENT ? " (no driver root here: is the node staged? see "
			       "--host-root/--mock-root)" : "");
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
	close(f->lock_fd);
	f->lock_fd = -1;
	return r;
}

void ctl_doc_unlock(struct ctl_docfile *f)
{
	if (f->lock_fd >= 0)
		close(f->lock_fd);	/* releases the flock */
	f->lock_fd = -1;
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
	int r = fileio_read(f->path, YL_MAX_INPUT, buf, len, err, errlen);

	return r == -ENOENT ? 0 : r;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t r = write(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int ctl_file_replace(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
	char buf[PATH_MAX], tmp[PATH_MAX + 32], *dir;
	int fd, r, dfd;

	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	snprintf(tmp, sizeof(tmp), "%s/.overrides-XXXXXX.tmp", dir);
	fd = mkostemps(tmp, 4, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: create: %s", tmp, strerror(-r));
		return r;
	}
	/* 0644 whatever the umask: the engine runs as other users too. */
	if (fchmod(fd, 0644) < 0 || (r = write_all(fd, text, len)) < 0 || fsync(fd) < 0)
		r = -errno;
	else
		r = 0;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "%s: replace: %s", path, strerror(-r));
		unlink(tmp);
		return r;
	}
	/* The rename itself survives a crash once the directory is synced. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int ctl_doc_replace(const struct ctl_docfile *f, const char *text, size_t len, char *err,
		    size_t errlen)
{
	return ctl_file_replace(f->path, text, len, err, errlen);
}

int ctl_xids_read(const struct ctl_docfile *f, char **buf, size_t *len, char *err,
		  size_t errlen)
{
	int r = fileio_read(f->xids, (size_t)OVR_XIDS_KEEP * 64 + 4096, buf, len, err, errlen);

	if (r == -ENOENT) {
		*buf = NULL;
		*len = 0;
		return 0;
	}
	return r;
}
