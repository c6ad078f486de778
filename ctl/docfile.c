/* The overrides document on disk: flock(LOCK_EX) on the sibling lock file
 * (ovr_lock_path: the protocol every writer shares, NVML.md §5), read, the
 * candidate's validation, and replace by rename so a reader never sees a
 * torn file. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "fileio/fileio.h"

int ctl_doc_lock(struct ctl_docfile *f, const char *path, bool exclusive, char *err,
		 size_t errlen)
{
	if (snprintf(f->path, sizeof(f->path), "%s", path) >= (int)sizeof(f->path) ||
	    ovr_lock_path(f->lock, sizeof(f->lock), path) < 0) {
		snprintf(err, errlen, "%.200s...: path too long", path);
		return -ENAMETOOLONG;
	}
	f->lock_fd = open(f->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
	if (f->lock_fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s%s", f->lock, strerror(e),
			 e == ENOENT ? " (no driver root here: is the node staged? see "
				       "--host-root/--mock-root)" : "");
		return -e;
	}
	while (flock(f->lock_fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		snprintf(err, errlen, "%s: flock: %s", f->lock, strerror(e));
		close(f->lock_fd);
		f->lock_fd = -1;
		return -e;
	}
	return 0;
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

int ctl_doc_replace(const struct ctl_docfile *f, const char *text, size_t len, char *err,
		    size_t errlen)
{
	char buf[PATH_MAX], tmp[PATH_MAX + 32], *dir;
	int fd, r, dfd;

	snprintf(buf, sizeof(buf), "%s", f->path);
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
	if (r == 0 && rename(tmp, f->path) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "%s: replace: %s", f->path, strerror(-r));
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
