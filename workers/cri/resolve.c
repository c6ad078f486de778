/* Host paths with their symlinks resolved inside the host root.
 *
 * <root>/var/run is usually a link to "/run": joining the root to
 * "/var/run/cdi" and letting the kernel follow it would land in this
 * machine's /run, outside the root.  So every component is looked at
 * under the root and an absolute link target restarts from the root, as
 * a chroot would see it.  Components that do not exist yet are taken
 * verbatim (they are about to be created). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/cri/cri.h"

#define MAX_LINKS 40

/* Append component c (length n) to the resolved path res. */
static int push(char *res, size_t len, const char *c, size_t n)
{
	size_t l = strlen(res);

	if (l + 1 + n + 1 > len)
		return -ENAMETOOLONG;
	if (l == 0 || res[l - 1] != '/')
		res[l++] = '/';
	memcpy(res + l, c, n);
	res[l + n] = '\0';
	return 0;
}

static void pop(char *res)
{
	char *s = strrchr(res, '/');

	if (s && s != res)
		*s = '\0';
	else
		strcpy(res, "/");
}

int cri_resolve(const struct host *h, const char *path, char *out, size_t len)
{
	char todo[PATH_MAX * 2], res[PATH_MAX] = "/", full[PATH_MAX * 2], target[PATH_MAX];
	int links = 0, r;
	size_t pos = 0;

	if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
		return -EINVAL;
	snprintf(todo, sizeof(todo), "%s", path);
	while (todo[pos]) {
		struct stat st;
		size_t n;
		ssize_t t;

		while (todo[pos] == '/')
			pos++;
		n = strcspn(todo + pos, "/");
		if (n == 0)
			break;
		if (n == 1 && todo[pos] == '.') {
			pos += n;
			continue;
		}
		if (n == 2 && todo[pos] == '.' && todo[pos + 1] == '.') {
			pop(res);
			pos += n;
			continue;
		}
		if ((r = push(res, sizeof(res), todo + pos, n)) < 0)
			return r;
		pos += n;
		snprintf(full, sizeof(full), "%s%s", h->root, res);
		if (lstat(full, &st) < 0 || !S_ISLNK(st.st_mode))
			continue;	/* missing or not a link: verbatim */
		if (++links > MAX_LINKS)
			return -ELOOP;
		t = readlink(full, target, sizeof(target) - 1);
		if (t < 0)
			return -errno;
		target[t] = '\0';
		/* The target, then what was left of the path. */
		char rest[PATH_MAX * 2];
		if ((size_t)snprintf(rest, sizeof(rest), "%s/%s", target, todo + pos) >= sizeof(rest))
			return -ENAMETOOLONG;
		snprintf(todo, sizeof(todo), "%s", rest);
		pos = 0;
		if (target[0] == '/')
			strcpy(res, "/");
		else
			pop(res);
	}
	if ((size_t)snprintf(out, len, "%s", res) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cri_resolve_parent(const struct host *h, const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], res[PATH_MAX];
	const char *slash = strrchr(path ? path : "", '/');
	int r;

	if (!path || path[0] != '/' || !slash[1] || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if ((r = cri_resolve(h, dir[0] ? dir : "/", res, sizeof(res))) < 0)
		return r;
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(res, "/") ? res : "", slash + 1) >= len)
		return -ENAMETOOLONG;
	return 0;
}
