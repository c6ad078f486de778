/* Ownership manifests: one "<kind> <path>" line per owned host path. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "workers/host.h"
#include "workers/manifest.h"

void manifest_init(struct manifest *m)
{
	memset(m, 0, sizeof(*m));
}

void manifest_free(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->paths[i]);
	free(m->paths);
	free(m->kinds);
	free(m->slot);
	manifest_init(m);
}

static size_t hash(const char *s)
{
	size_t h = 14695981039346656037ULL;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/* The slot holding path, or the empty one where it would go. */
static size_t *find_slot(const struct manifest *m, const char *path)
{
	size_t i = hash(path) & (m->nslot - 1);

	while (m->slot[i] && strcmp(m->paths[m->slot[i] - 1], path) != 0)
		i = (i + 1) & (m->nslot - 1);
	return &m->slot[i];
}

/* Keep the index at most half full (nslot a power of two). */
static int reindex(struct manifest *m, size_t want)
{
	size_t n = m->nslot ? m->nslot : 128;
	size_t *old = m->slot;

	while (n < want * 2)
		n *= 2;
	if (n == m->nslot)
		return 0;
	if (!(m->slot = calloc(n, sizeof(*m->slot)))) {
		m->slot = old;
		return -ENOMEM;
	}
	free(old);
	m->nslot = n;
	for (size_t i = 0; i < m->n; i++)
		*find_slot(m, m->paths[i]) = i + 1;
	return 0;
}

bool manifest_has(const struct manifest *m, const char *path)
{
	return m->nslot && *find_slot(m, path) != 0;
}

int manifest_add(struct manifest *m, const char *path, char kind)
{
	if (path[0] != '/' || strchr(path, '\n'))
		return -EINVAL;
	if (manifest_has(m, path))
		return 0;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		char **p = realloc(m->paths, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->paths = p;
		char *k = realloc(m->kinds, cap);
		if (!k)
			return -ENOMEM;
		m->kinds = k;
		m->cap = cap;
	}
	if (reindex(m, m->n + 1) < 0 || !(m->paths[m->n] = strdup(path)))
		return -ENOMEM;
	m->kinds[m->n] = kind;
	*find_slot(m, path) = ++m->n;
	return 0;
}

static int load_stream(struct manifest *m, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	while ((n = getline(&line, &cap, f)) > 0) {
		/* Every saved line ends in '\n': one without it was cut off and
		 * may name a prefix of the real path. */
		if (line[n - 1] != '\n')
			continue;
		line[--n] = '\0';
		/* Ignore malformed lines: a torn manifest must not make us
		 * remove something outside what it names. */
		if (n < 3 || (line[0] != 'f' && line[0] != 'd') || line[1] != ' ' || line[2] != '/')
			continue;
		if ((r = manifest_add(m, line + 2, line[0])) < 0)
			break;
	}
	free(line);
	fclose(f);
	return r;
}

int manifest_load(struct manifest *m, const char *file)
{
	FILE *f = fopen(file, "re");

	manifest_init(m);
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	return load_stream(m, f);
}

int manifest_load_at(struct manifest *m, const char *root, const char *path)
{
	int rootfd = beneath_root(root), fd;
	FILE *f;

	manifest_init(m);
	if (rootfd < 0)
		return rootfd;
	fd = beneath_open(rootfd, path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0) {
		close(rootfd);
		return fd == -ENOENT ? 0 : host_refused(root, rootfd, path, fd);
	}
	close(rootfd);
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return -ENOMEM;
	}
	return load_stream(m, f);
}

static int save_stream(const struct manifest *m, FILE *f)
{
	int r = 0;

	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "%c %s\n", m->kinds[i], m->paths[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		r = -errno;
	if (fclose(f) != 0 && !r)
		r = -errno;
	return r;
}

int manifest_save_at(const struct manifest *m, const char *root, const char *path)
{
	char tmp[NAME_MAX + 1];
	const char *name;
	int rootfd = beneath_root(root), dfd, fd, r;
	FILE *f;

	if (rootfd < 0)
		return rootfd;
	if ((dfd = beneath_parent(rootfd, path, &name)) < 0) {
		r = host_refused(root, rootfd, path, dfd);
		close(rootfd);
		return r;
	}
	close(rootfd);
	r = snprintf(tmp, sizeof(tmp), "%s" BENEATH_TMP "%d", name, (int)getpid());
	if (r < 0 || (size_t)r >= sizeof(tmp)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		close(dfd);
		return r;
	}
	r = save_stream(m, f);
	if (!r && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return r;
}

int manifest_save(const struct manifest *m, const char *file)
{
	char tmp[4200];
	FILE *f;
	int r;

	snprintf(tmp, sizeof(tmp), "%s" BENEATH_TMP "%d", file, (int)getpid());
	if (!(f = fopen(tmp, "we")))
		return -errno;
	r = save_stream(m, f);
	if (!r && rename(tmp, file) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

static int depth_cmp(const void *a, const void *b)
{
	const char *pa = *(const char *const *)a, *pb = *(const char *const *)b;
	size_t da = 0, db = 0;

	for (; *pa; pa++)
		da += *pa == '/';
	for (; *pb; pb++)
		db += *pb == '/';
	return da < db ? 1 : da > db ? -1 : 0;
}

/* Remove the entry at phys (a host path) beneath rootfd; a directory
 * holding only a killed writer's temporary files is swept first. */
static int remove_one(const char *root, int rootfd, const char *phys, bool dir)
{
	const char *name;
	int dfd = beneath_parent(rootfd, phys, &name), r = 0;

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return host_refused(root, rootfd, phys, dfd);
	if (unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0) < 0)
		r = -errno;
	if (dir && (r == -ENOTEMPTY || r == -EEXIST)) {
		int fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0 && beneath_sweep_tmp(fd) > 0)
			r = unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (r == -ENOTDIR && dir) {
		struct stat st;

		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
			r = -ENOTDIR;
		else
			r = -ELOOP;
	}
	close(dfd);
	/* ENOTEMPTY: it holds something not ours; leave it. */
	if (r == -ENOENT || (dir && (r == -ENOTEMPTY || r == -EEXIST)))
		return 0;
	if (r == -ELOOP || r == -EXDEV)
		return host_refused(root, rootfd, phys, r);
	return r;
}

int manifest_remove_stale(const char *root, const struct manifest *old,
			  const struct manifest *keep)
{
	const char **dirs = calloc(old->n + 1, sizeof(*dirs));
	size_t nd = 0;
	int first = 0, rootfd, r;

	if (!dirs)
		return -ENOMEM;
	if ((rootfd = beneath_root(root)) < 0) {
		free(dirs);
		return rootfd;
	}
	for (size_t i = 0; i < old->n; i++) {
		if (keep && manifest_has(keep, old->paths[i]))
			continue;
		if (old->kinds[i] == 'd') {
			dirs[nd++] = old->paths[i];
			continue;
		}
		if ((r = remove_one(root, rootfd, old->paths[i], false)) < 0 && !first)
			first = r;
	}
	qsort(dirs, nd, sizeof(*dirs), depth_cmp);
	for (size_t i = 0; i < nd; i++)
		if ((r = remove_one(root, rootfd, dirs[i], true)) < 0 && !first)
			first = r;
	close(rootfd);
	free(dirs);
	return first;
}
