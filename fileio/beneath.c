/* Lookups beneath a root that never follow a link (beneath.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "fileio/beneath.h"

#define RESOLVE_SAFE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

static const char *strip(const char *rel)
{
	while (*rel == '/')
		rel++;
	return *rel ? rel : ".";
}

int beneath_root(const char *root)
{
	int fd = open(root && root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* The same lookup without openat2 (Linux before 5.6, or a seccomp filter
 * that refuses it): one component at a time, each opened O_NOFOLLOW. */
static int walk_open(int rootfd, const char *rel, int flags, mode_t mode)
{
	char comp[NAME_MAX + 1];
	int dfd = dup(rootfd), fd;

	if (dfd < 0)
		return -errno;
	for (;;) {
		size_t n = strcspn(rel, "/");
		const char *next = rel + n;

		while (*next == '/')
			next++;
		if (n > NAME_MAX) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		if (strcmp(comp, "..") == 0) {
			close(dfd);
			return -EXDEV;
		}
		if (!*next)
			fd = openat(dfd, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		else
			fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			struct stat st;

			/* O_NOFOLLOW | O_DIRECTORY on a link says ENOTDIR. */
			if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				e = ELOOP;
			close(dfd);
			return -e;
		}
		close(dfd);
		if (!*next)
			return fd;
		dfd = fd;
		rel = next;
	}
}

int beneath_open(int rootfd, const char *rel, int flags, mode_t mode)
{
	static int no_openat2;
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_SAFE,
	};
	long fd;

	rel = strip(rel);
	if (!no_openat2) {
		do
			fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		while (fd < 0 && (errno == EAGAIN || errno == EINTR));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS && errno != EPERM)
			return -errno;
		no_openat2 = 1;
	}
	return walk_open(rootfd, rel, flags, mode);
}

int beneath_open_in_root(int rootfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	rel = strip(rel);
	do
		fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	while (fd < 0 && (errno == EAGAIN || errno == EINTR));
	if (fd >= 0)
		return (int)fd;
	/* No openat2: no link is followed at all (the safe side). */
	return errno == ENOSYS || errno == EPERM ? beneath_open(rootfd, rel, flags, mode) : -errno;
}

int beneath_parent(int rootfd, const char *rel, const char **leaf)
{
	char dir[PATH_MAX], *s;
	size_t n;
	int fd;

	rel = strip(rel);
	n = strlen(rel);
	while (n > 1 && rel[n - 1] == '/')
		n--;
	if (strcmp(rel, ".") == 0 || n >= sizeof(dir))
		return strcmp(rel, ".") == 0 ? -EINVAL : -ENAMETOOLONG;
	memcpy(dir, rel, n);
	dir[n] = '\0';
	s = strrchr(dir, '/');
	*leaf = rel + (s ? (size_t)(s - dir) + 1 : 0);
	if (strncmp(*leaf, "..", 2) == 0 && ((*leaf)[2] == '\0' || (*leaf)[2] == '/'))
		return -EXDEV;
	if (s)
		*s = '\0';
	fd = beneath_open(rootfd, s ? dir : ".", O_PATH | O_DIRECTORY, 0);
	return fd;
}

int beneath_mkdir(int rootfd, const char *rel, mode_t mode)
{
	const char *leaf;
	char name[NAME_MAX + 1];
	struct stat st;
	int dfd = beneath_parent(rootfd, rel, &leaf), r = 0;
	size_t n;

	if (dfd < 0)
		return dfd;
	n = strcspn(leaf, "/");
	if (n > NAME_MAX) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	memcpy(name, leaf, n);
	name[n] = '\0';
	if (mkdirat(dfd, name, mode) < 0) {
		r = -errno;
		if (r == -EEXIST && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			r = S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EEXIST : -ENOTDIR;
	}
	close(dfd);
	return r;
}

void beneath_explain(int rootfd, const char *shown, const char *rel, int r, char *buf,
		     size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct stat st;

	rel = strip(rel);
	if (strlen(rel) >= sizeof(path)) {
		snprintf(buf, len, "%s/%s: %s", shown, rel, strerror(-r));
		return;
	}
	/* Each prefix in turn: the first that is a link is the culprit. */
	for (size_t i = 0;; i++) {
		if (rel[i] != '/' && rel[i] != '\0')
			continue;
		memcpy(path, rel, i);
		path[i] = '\0';
		if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
			ssize_t t = readlinkat(rootfd, path, target, sizeof(target) - 1);

			target[t < 0 ? 0 : t] = '\0';
			snprintf(buf, len, "%s/%s is a symbolic link (to %s) that Mokka did not "
				 "make: refusing to follow it", shown, path, target);
			return;
		}
		if (rel[i] == '\0')
			break;
	}
	snprintf(buf, len, "%s/%s: %s", shown, rel, strerror(-r));
}

bool beneath_stale_tmp(const char *name)
{
	const char *t = strstr(name, BENEATH_TMP);
	char *end;
	long pid;

	if (!t || t == name)
		return false;
	t += strlen(BENEATH_TMP);
	pid = strtol(t, &end, 10);
	if (end == t || *end != '\0' || pid <= 0 || pid > INT_MAX)
		return false;
	if (pid == (long)getpid())
		return true;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int beneath_sweep_tmp(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (beneath_stale_tmp(de->d_name) && unlinkat(dirfd, de->d_name, 0) == 0)
			n++;
	closedir(d);
	return n;
}
