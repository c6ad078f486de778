/* Host-root file operations.  Everything is root + host path; every path
 * created is recorded in the simulator's manifest (h->own). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/host.h"
#include "workers/manifest.h"

/* The physical host path (no root) of host path path: itself, or its
 * shadow while staging a generational surface. */
int host_phys(const struct host *h, const char *path, char *buf, size_t len)
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
		n = snprintf(buf, len, "%s%s", h->shadow, path + strlen(h->mock_root));
	else
		n = snprintf(buf, len, "%s", path);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int host_path(const struct host *h, const char *path, char *buf, size_t len)
{
	size_t n = strlen(h->root);
	int r;

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, h->root, n);
	if ((r = host_phys(h, path, buf + n, len - n)) < 0)
		return r;
	return 0;
}

int host_refused(const char *root, int rootfd, const char *phys, int r)
{
	static struct { char why[512]; time_t at; } said[8];
	static unsigned next;
	char why[PATH_MAX + 300];
	time_t now = time(NULL);

	if (r != -ELOOP && r != -EXDEV)
		return r;
	beneath_explain(rootfd, root, phys, r, why, sizeof(why));
	/* Every write below a planted link meets it, every pass: each link
	 * is said once a minute. */
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		if (strncmp(said[i].why, why, sizeof(said[i].why) - 1) == 0 &&
		    now - said[i].at < 60)
			return r;
	snprintf(said[next].why, sizeof(said[next].why), "%s", why);
	said[next].at = now;
	next = (next + 1) % (sizeof(said) / sizeof(said[0]));
	log_error("%s", why);
	return r;
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

/* Every directory of path (a host path) from the top: fn(prefix). */
static void each_prefix(struct host *h, char *hp, void (*fn)(struct host *, const char *))
{
	for (char *s = hp + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		fn(h, hp);
		*s = c;
		if (c == '\0')
			break;
	}
}

static void own_existing_dir(struct host *h, const char *hp)
{
	own_existing(h, hp, 'd');
}

/* While staging path of a generational surface: whether the surface's
 * live parent is there (0) or -errno. */
static int live_parent(const struct host *h, int rootfd, const char *path)
{
	char dir[PATH_MAX];
	int g = h->staging ? host_gen_of(h, path) : -1, fd, n;

	if (g < 0)
		return 0;
	n = snprintf(dir, sizeof(dir), "%s%s", h->mock_root, h->gens[g]);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	*strrchr(dir, '/') = '\0';
	if ((fd = beneath_open(rootfd, dir, O_PATH | O_DIRECTORY, 0)) < 0)
		return fd;
	close(fd);
	return 0;
}

/* mkdir -p beneath rootfd: never through a link. */
static int mkdirs_at(struct host *h, int rootfd, const char *path, mode_t mode)
{
	char hp[PATH_MAX], phys[PATH_MAX];
	size_t n = strlen(path);
	int r, fd;

	if (n >= sizeof(hp) || path[0] != '/')
		return -EINVAL;
	/* Check the whole path before creating any prefix of it. */
	if ((r = host_phys(h, path, phys, sizeof(phys))) < 0)
		return r;
	memcpy(hp, path, n + 1);
	while (n > 1 && hp[n - 1] == '/')
		hp[--n] = '\0';
	/* Already there (the common case): one lookup, two while staging a
	 * surface (its shadow, and the live parent its Publish renames in). */
	if ((fd = beneath_open(rootfd, phys, O_PATH | O_DIRECTORY, 0)) >= 0) {
		close(fd);
		fd = live_parent(h, rootfd, path);
	}
	if (fd >= 0) {
		each_prefix(h, hp, own_existing_dir);
		return 0;
	}
	if (fd != -ENOENT)
		return host_refused(h->root, rootfd, phys, fd);
	for (char *s = hp + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if ((r = host_phys(h, hp, phys, sizeof(phys))) < 0)
			return r;
		r = beneath_mkdir(rootfd, phys, mode);
		if (r == 0)
			own(h, hp, 'd');
		else if (r == -EEXIST)
			own_existing(h, hp, 'd');
		else
			return host_refused(h->root, rootfd, phys, r);
		*s = c;
		if (c == '\0')
			break;
	}
	return 0;
}

int host_mkdirs(struct host *h, const char *path, mode_t mode)
{
	int rootfd = beneath_root(h->root), r;

	if (rootfd < 0)
		return rootfd;
	r = mkdirs_at(h, rootfd, path, mode);
	close(rootfd);
	return r;
}

/* A leaf being written: its parent directory (never reached through a
 * link) and its name there. */
struct leaf {
	int root, dir;
	const char *name;
	bool foreign_link;	/* the leaf is a link no pass of ours made */
	char phys[PATH_MAX];
};

static void leaf_close(struct leaf *l)
{
	if (l->dir >= 0)
		close(l->dir);
	if (l->root >= 0)
		close(l->root);
}

/* Common start of every leaf write: the parent directories, the parent's
 * fd, and ownership of the leaf (new, or ours from before). */
static int prepare_leaf(struct host *h, const char *path, struct leaf *l)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int r;

	l->root = l->dir = -1;
	if ((r = host_phys(h, path, l->phys, sizeof(l->phys))) < 0)
		return r;
	if ((l->root = beneath_root(h->root)) < 0)
		return l->root;
	if (slash > path) {
		if ((size_t)(slash - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if ((r = mkdirs_at(h, l->root, dir, 0755)) < 0)
			return r;
	}
	if ((l->dir = beneath_parent(l->root, l->phys, &l->name)) < 0)
		return host_refused(h->root, l->root, l->phys, l->dir);
	l->foreign_link = false;
	if (fstatat(l->dir, l->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* Ours: made by an earlier pass or earlier in this one.  Someone
		 * else's link is not recorded (teardown leaves it). */
		l->foreign_link = S_ISLNK(st.st_mode) && !(h->prev && manifest_has(h->prev, path)) &&
				  !(h->own && manifest_has(h->own, path));
		if (!l->foreign_link)
			own_existing(h, path, 'f');
	} else {
		own(h, path, 'f');
	}
	return 0;
}

/* A file or node is never written at a leaf that is a link someone else
 * planted: the write is refused and the log names the link (a link of
 * ours, from an earlier pass, is replaced). */
static int refuse_link_leaf(const struct host *h, const struct leaf *l)
{
	return l->foreign_link ? host_refused(h->root, l->root, l->phys, -ELOOP) : 0;
}

static int same_content(const struct leaf *l, const void *data, size_t len, mode_t mode)
{
	struct stat st;
	int fd = openat(l->dir, l->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
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

/* "<leaf>.mokka-tmp.<pid>": a killed writer's is found by its dead pid
 * (beneath_stale_tmp) and swept by the next Stage and by teardown. */
static int tmp_name(const struct leaf *l, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s" BENEATH_TMP "%d", l->name, (int)getpid());

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int host_write(struct host *h, const char *path, const void *data, size_t len, mode_t mode)
{
	struct leaf l;
	char tmp[NAME_MAX + 1];
	int fd = -1, r;

	if ((r = prepare_leaf(h, path, &l)) < 0 || (r = refuse_link_leaf(h, &l)) < 0 ||
	    same_content(&l, data, len, mode) || (r = tmp_name(&l, tmp, sizeof(tmp))) < 0)
		goto out;
	unlinkat(l.dir, tmp, 0);
	fd = openat(l.dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if ((r = fileio_write_all(fd, data, len)) < 0)
		goto fail;
	if (fchmod(fd, mode) < 0 || close(fd) < 0) {
		r = -errno;
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* A link planted at the leaf since the check is replaced, never
	 * followed. */
	if (renameat(l.dir, tmp, l.dir, l.name) < 0) {
		r = -errno;
		goto fail;
	}
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(l.dir, tmp, 0);
out:
	leaf_close(&l);
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
	struct leaf l;
	char tmp[NAME_MAX + 1], cur[PATH_MAX];
	ssize_t n;
	int r;

	if ((r = prepare_leaf(h, path, &l)) < 0 || (r = tmp_name(&l, tmp, sizeof(tmp))) < 0)
		goto out;
	n = readlinkat(l.dir, l.name, cur, sizeof(cur) - 1);
	if (n >= 0) {
		cur[n] = '\0';
		if (strcmp(cur, target) == 0)
			goto out;
	}
	/* Someone else's link is not ours to replace either. */
	if ((r = refuse_link_leaf(h, &l)) < 0)
		goto out;
	unlinkat(l.dir, tmp, 0);
	if (symlinkat(target, l.dir, tmp) < 0) {
		r = -errno;
		goto out;
	}
	if (renameat(l.dir, tmp, l.dir, l.name) < 0) {
		r = -errno;
		unlinkat(l.dir, tmp, 0);
	}
out:
	leaf_close(&l);
	return r;
}

int host_mknod_chr(struct host *h, const char *path, mode_t mode, unsigned major, unsigned minor)
{
	struct leaf l;
	char tmp[NAME_MAX + 1];
	struct stat st;
	dev_t dev = makedev(major, minor);
	int r;

	if ((r = prepare_leaf(h, path, &l)) < 0 || (r = refuse_link_leaf(h, &l)) < 0 ||
	    (r = tmp_name(&l, tmp, sizeof(tmp))) < 0)
		goto out;
	if (fstatat(l.dir, l.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) &&
	    st.st_rdev == dev && (st.st_mode & 07777) == mode)
		goto out;
	unlinkat(l.dir, tmp, 0);
	if (mknodat(l.dir, tmp, S_IFCHR | mode, dev) < 0) {
		r = -errno;
		goto out;
	}
	/* The node we just made in a directory we resolved: chmod past the
	 * umask. */
	if (fchmodat(l.dir, tmp, mode, 0) < 0 || renameat(l.dir, tmp, l.dir, l.name) < 0) {
		r = -errno;
		unlinkat(l.dir, tmp, 0);
	}
out:
	leaf_close(&l);
	return r;
}

bool host_beneath(const struct host *h, const char *path)
{
	char phys[PATH_MAX];
	int rootfd, fd = -EINVAL;

	if (host_phys(h, path, phys, sizeof(phys)) < 0 || (rootfd = beneath_root(h->root)) < 0)
		return false;
	fd = beneath_open(rootfd, phys, O_PATH, 0);
	if (fd >= 0)
		close(fd);
	else if (fd != -ENOENT)
		host_refused(h->root, rootfd, phys, fd);
	close(rootfd);
	return fd >= 0;
}

FILE *host_fopen(const struct host *h, const char *path)
{
	char phys[PATH_MAX];
	struct stat st;
	int rootfd, fd, r;
	FILE *f;

	if ((r = host_phys(h, path, phys, sizeof(phys))) < 0 ||
	    (r = rootfd = beneath_root(h->root)) < 0) {
		errno = -r;
		return NULL;
	}
	fd = beneath_open(rootfd, phys, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0 && fd != -ENOENT)
		host_refused(h->root, rootfd, phys, fd);
	close(rootfd);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	return f;
}

int host_create(struct host *h, const char *path, mode_t mode)
{
	struct leaf l;
	int fd, r;

	if ((r = prepare_leaf(h, path, &l)) == 0 && (r = refuse_link_leaf(h, &l)) == 0) {
		fd = openat(l.dir, l.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			fchmod(fd, mode);	/* whatever the umask */
			close(fd);
		} else if (errno != EEXIST) {
			r = -errno;
		}
	}
	leaf_close(&l);
	return r;
}

int host_unlink(struct host *h, const char *path)
{
	char phys[PATH_MAX];
	const char *name;
	int rootfd, dfd, r;

	if ((r = host_phys(h, path, phys, sizeof(phys))) < 0)
		return r;
	if ((rootfd = beneath_root(h->root)) < 0)
		return rootfd;
	dfd = beneath_parent(rootfd, phys, &name);
	if (dfd == -ENOENT)
		r = 0;
	else if (dfd < 0)
		r = host_refused(h->root, rootfd, phys, dfd);
	else
		r = unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (dfd >= 0)
		close(dfd);
	close(rootfd);
	return r;
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
