/* The device state store's files (devstate.h): documents replaced by
 * rename (readers never see a torn one), one flock for writers, and a
 * mapped counter so a reader knows at the cost of one load whether
 * anything changed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devstate/devstate.h"

#define SUFFIX ".state"

/* A GPU uuid as a file name: letters, digits and '-' only. */
static int doc_name(const char *uuid, char *out, size_t size)
{
	size_t n = strlen(uuid);

	if (n == 0 || n > 96)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = uuid[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-'))
			return -EINVAL;
	}
	if ((size_t)snprintf(out, size, "%s" SUFFIX, uuid) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* .lock and .seq: never through a link (a .seq planted as a link would
 * have us grow and count in someone else's file), only a regular file
 * (a FIFO would block a reader).  A reader without write access opens
 * them read-only.  An fd, or -errno. */
static int open_own(struct ds_store *st, const char *name, bool create)
{
	int fl = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, fd;
	struct stat sb;

	fd = openat(st->dirfd, name, fl | O_RDWR | (create ? O_CREAT : 0), 0644);
	if (fd < 0 && errno == EACCES)
		fd = openat(st->dirfd, name, fl | O_RDONLY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int map_seq(struct ds_store *st, bool create)
{
	int fd = open_own(st, ".seq", create);
	struct stat sb;
	void *p;

	if (fd < 0)
		return fd;
	if (fstat(fd, &sb) < 0 || (sb.st_size < 8 && ftruncate(fd, 8) < 0)) {
		int e = -errno;

		close(fd);
		return e;
	}
	p = mmap(NULL, 8, PROT_READ | ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR ? PROT_WRITE : 0),
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	st->seq = p;
	return 0;
}

int ds_open(struct ds_store *st, const char *dir, bool create)
{
	int r;

	memset(st, 0, sizeof(*st));
	st->dirfd = st->lockfd = -1;
	if ((size_t)snprintf(st->dir, sizeof(st->dir), "%s", dir) >= sizeof(st->dir))
		return -ENAMETOOLONG;
	if (create && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	st->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0)
		return -errno;
	st->lockfd = open_own(st, ".lock", create);
	r = st->lockfd < 0 ? st->lockfd : map_seq(st, create);
	if (r < 0)
		ds_close(st);
	return r;
}

void ds_close(struct ds_store *st)
{
	if (st->seq)
		munmap((void *)st->seq, 8);
	if (st->lockfd >= 0)
		close(st->lockfd);
	if (st->dirfd >= 0)
		close(st->dirfd);
	st->seq = NULL;
	st->dirfd = st->lockfd = -1;
}

bool ds_is_open(const struct ds_store *st)
{
	return st->dirfd >= 0 && st->seq;
}

uint64_t ds_seq(const struct ds_store *st)
{
	return st->seq ? __atomic_load_n(st->seq, __ATOMIC_ACQUIRE) : 0;
}

int ds_load(struct ds_store *st, const char *uuid, struct ds_gpu *out)
{
	char name[128], buf[DS_MAX_DOC + 1], why[160];
	ssize_t n;
	int fd, r;

	memset(out, 0, sizeof(*out));
	if ((r = doc_name(uuid, name, sizeof(name))) < 0)
		return r;
	fd = openat(st->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	if (n > DS_MAX_DOC)
		return -EFBIG;
	return ds_decode(buf, (size_t)n, out, why, sizeof(why));
}

int ds_lock(struct ds_store *st)
{
	while (flock(st->lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

void ds_unlock(struct ds_store *st)
{
	flock(st->lockfd, LOCK_UN);
}

static void bump(struct ds_store *st)
{
	if (st->seq)
		__atomic_add_fetch(st->seq, 1, __ATOMIC_RELEASE);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w, n -= (size_t)w;
	}
	return 0;
}

int ds_save(struct ds_store *st, const char *uuid, const struct ds_gpu *g)
{
	char name[128], tmp[160], buf[DS_MAX_DOC];
	int fd, len, r;

	if ((r = doc_name(uuid, name, sizeof(name))) < 0)
		return r;
	if (!g->set && !g->ngi && !g->next_serial) {
		r = unlinkat(st->dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		bump(st);
		return r;
	}
	if ((len = ds_encode(g, buf, sizeof(buf))) < 0)
		return len;
	/* A fresh inode: a name left (or planted, a hard link to another
	 * file) is unlinked, never truncated and written through. */
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	unlinkat(st->dirfd, tmp, 0);
	fd = openat(st->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	r = write_all(fd, buf, (size_t)len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(st->dirfd, tmp, st->dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(st->dirfd, tmp, 0);
	else
		bump(st);
	return r;
}

int ds_clear(struct ds_store *st)
{
	int fd = dup(st->dirfd), r = 0;
	struct dirent *e;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n > strlen(SUFFIX) && !strcmp(e->d_name + n - strlen(SUFFIX), SUFFIX) &&
		    unlinkat(st->dirfd, e->d_name, 0) < 0 && errno != ENOENT && !r)
			r = -errno;
	}
	closedir(d);
	bump(st);
	return r;
}
