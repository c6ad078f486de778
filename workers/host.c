/* Host-root file operations.  Everything is root + host path; every path
 * created is recorded in the simulator's manifest (h->own). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "workers/host.h"
#include "workers/manifest.h"

int host_path(const struct host *h, const char *path, char *buf, size_t len)
{
	const char *p;
	int n;

	if (!path || path[0] != '/')
		return -EINVAL;
	/* No ".." component: a profile value can never climb out of root. */
	for (p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return -EINVAL;
	if (h->staging && host_gen_of(h, path) >= 0)
		n = snprintf(buf, len, "%s%s%s", h->root, h->shadow,
			     path + strlen(h->mock_root));
	else
		n = snprintf(buf, len, "%s%s", h->root, path);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int host_gen_of(const struct host *h, const char *path)
{
	size_t m = strlen(h->mock_root);

	if (!h->gens || m < 2 || strncmp(path, h->mock_root, m) != 0)
		return -1;
	for (int i = 0; h->gens[i]; i++) {
		size_t n = strlen(h->gens[i]);
		if (strncmp(path + m, h->gens[i], n) == 0 &&
		    (path[m + n] == '\0' || path[m + n] == '/'))
			return i;
	}
	return -1;
}

static void own(struct host *h, const char *path, char kind)
{
	if (h->own)
		manifest_add(h->own, path, kind);
}

/* Record an existing path only when it was ours already. */
static void own_existing(struct host *h, const char *path, char kind)
{
	size_t n = strlen(h->mock_root);

	if ((h->prev && manifest_has(h->prev, path)) ||
	    (n > 1 && strncmp(path, h->mock_root, n) == 0 && path[n] == '/'))
		own(h, path, kind);
}

static int exists(const char *full)
{
	struct stat st;

	return lstat(full, &st) == 0;
}


int host_mkdirs(struct host *h, const char *path, mode_t mode)
{
	char hp[4096], full[8192];
	size_t n = strlen(path);
	int r;

	if (n >= sizeof(hp) || path[0] != '/')
		return -EINVAL;
	/* Check the whole path before creating any prefix of it. */
	if ((r = host_path(h, path, full, sizeof(full))) < 0)
		return r;
	memcpy(hp, path, n + 1);
	while (n > 1 && hp[n - 1] == '/')
		hp[--n] = '\0';
	for (char *s = hp + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if ((r = host_path(h, hp, full, sizeof(full))) < 0)
			return r;
		if (mkdir(full, mode) == 0) {
			own(h, hp, 'd');
		} else if (errno == EEXIST) {
			struct stat st;
			if (stat(full, &st) < 0)
				return -errno;
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
			own_existing(h, hp, 'd');
		} else {
			return -errno;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	return 0;
}

static int parent_dirs(struct host *h, const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = (size_t)(slash - path);

	if (n == 0)
		return 0;
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return host_mkdirs(h, dir, 0755);
}

/* Common start of every leaf write: the full path, parent directories,
 * and ownership of the leaf (new, or ours from before). */
static int prepare_leaf(struct host *h, const char *path, char *full, size_t len)
{
	int r;

	if ((r = host_path(h, path, full, len)) < 0)
		return r;
	if ((r = parent_dirs(h, path)) < 0)
		return r;
	if (exists(full))
		own_existing(h, path, 'f');
	else
		own(h, path, 'f');
	return 0;
}

static int same_content(const char *full, const void *data, size_t len, mode_t mode)
{
	struct stat st;
	int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int same = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len &&
	    (st.st_mode & 07777) == mode) {
		char buf[65536];
		size_t off = 0;
		same = 1;
		while (off < len) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n <= 0 || memcmp(buf, (const char *)data + off, (size_t)n) != 0) {
				same = 0;
				break;
			}
			off += (size_t)n;
		}
	}
	close(fd);
	return same;
}

int host_write(struct host *h, const char *path, const void *data, size_t len, mode_t mode)
{
	char full[8192], tmp[8300];
	int fd, r;
	size_t off = 0;

	if ((r = prepare_leaf(h, path, full, sizeof(full))) < 0)
		return r;
	if (same_content(full, data, len, mode))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.mokka-tmp.%d", full, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto fail;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, mode) < 0 || close(fd) < 0) {
		r = -errno;
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, full) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return r;
}

int host_vwritef(struct host *h, const char *path, mode_t mode, const char *fmt, va_list ap)
{
	char *buf;
	int n, r;

	if ((n = vasprintf(&buf, fmt, ap)) < 0)
		return -ENOMEM;
	r = host_write(h, path, buf, (size_t)n, mode);
	free(buf);
	return r;
}

int host_writef(struct host *h, const char *path, mode_t mode, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = host_vwritef(h, path, mode, fmt, ap);
	va_end(ap);
	return r;
}

int host_symlink(struct host *h, const char *target, const char *path)
{
	char full[8192], tmp[8300], cur[4096];
	ssize_t n;
	int r;

	if ((r = prepare_leaf(h, path, full, sizeof(full))) < 0)
		return r;
	n = readlink(full, cur, sizeof(cur) - 1);
	if (n >= 0) {
		cur[n] = '\0';
		if (strcmp(cur, target) == 0)
			return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.mokka-tmp.%d", full, (int)getpid());
	unlink(tmp);
	if (symlink(target, tmp) < 0)
		return -errno;
	if (rename(tmp, full) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

int host_mknod_chr(struct host *h, const char *path, mode_t mode, unsigned major, unsigned minor)
{
	char full[8192], tmp[8300];
	struct stat st;
	dev_t dev = makedev(major, minor);
	int r;

	if ((r = prepare_leaf(h, path, full, sizeof(full))) < 0)
		return r;
	if (lstat(full, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == dev &&
	    (st.st_mode & 07777) == mode)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.mokka-tmp.%d", full, (int)getpid());
	unlink(tmp);
	if (mknod(tmp, S_IFCHR | mode, dev) < 0)
		return -errno;
	if (chmod(tmp, mode) < 0 || rename(tmp, full) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

int host_unlink(struct host *h, const char *path)
{
	char full[8192];
	int r;

	if ((r = host_path(h, path, full, sizeof(full))) < 0)
		return r;
	if (unlink(full) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int host_copy_in(struct host *h, const char *src, const char *path, mode_t mode)
{
	char *buf;
	size_t len;
	int r;

	if ((r = fileio_read(src, HOST_COPY_MAX, &buf, &len, NULL, 0)) < 0)
		return r == -EISDIR ? -EINVAL : r;	/* not a file, like a FIFO */
	r = host_write(h, path, buf, len, mode);
	free(buf);
	return r;
}

int host_mock_path(const char *mock_root, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s", mock_root), m;

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)(n + m) >= len)
		return -ENAMETOOLONG;
	return 0;
}
