/* Writes beneath a root that never follow a link (beneath.h): mkdir -p,
 * an atomic replace in a directory fd, an unlink, and the /proc path of an
 * fd for the calls that only take a path (bind, mount). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "fileio/fileio.h"

int beneath_mkdirs(int rootfd, const char *rel, mode_t mode)
{
	char p[PATH_MAX];
	size_t n;
	int r;

	while (*rel == '/')
		rel++;
	n = strlen(rel);
	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, rel, n + 1);
	while (n > 0 && p[n - 1] == '/')
		p[--n] = '\0';
	if (n == 0)
		return 0;
	/* Already there (the common case): one lookup. */
	if ((r = beneath_open(rootfd, p, O_PATH | O_DIRECTORY, 0)) >= 0) {
		close(r);
		return 0;
	}
	if (r != -ENOENT)
		return r;
	for (char *s = p;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		if ((r = beneath_mkdir(rootfd, p, mode)) < 0 && r != -EEXIST)
			return r;
		*s = c;
		if (c == '\0')
			return 0;
	}
}

int beneath_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		    int flags)
{
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd, r = 0, n;

	if (!(flags & BENEATH_REPLACE_LINK) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	n = snprintf(tmp, sizeof(tmp), "%s" BENEATH_TMP "%d", name, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp) || strchr(name, '/'))
		return n < 0 || (size_t)n >= sizeof(tmp) ? -ENAMETOOLONG : -EINVAL;
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if ((r = fileio_write_all(fd, data, len)) == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && (flags & BENEATH_REPLACE_SYNC) && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	/* rename replaces whatever is at name (a link planted since the
	 * check included): it never writes through it. */
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	else if ((flags & BENEATH_REPLACE_SYNC) &&
		 (fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);	/* the rename survives a crash (dirfd may be O_PATH) */
		close(fd);
	}
	return r;
}

int beneath_unlink(int rootfd, const char *rel, int flags)
{
	const char *leaf;
	int dfd = beneath_parent(rootfd, rel, &leaf), r = 0;

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, leaf, flags) < 0 && errno != ENOENT)
		r = -errno;
	close(dfd);
	return r;
}

int beneath_fdpath(int fd, const char *leaf, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/self/fd/%d%s%s", fd, leaf ? "/" : "", leaf ? leaf : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
