/* Ownership manifests: one "<kind> <path>" line per owned host path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int manifest_load(struct manifest *m, const char *file)
{
	FILE *f = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	manifest_init(m);
	if (!f)
		return errno == ENOENT ? 0 : -errno;
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

int manifest_save(const struct manifest *m, const char *file)
{
	char tmp[4200];
	FILE *f;
	int r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid());
	if (!(f = fopen(tmp, "we")))
		return -errno;
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "%c %s\n", m->kinds[i], m->paths[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		r = -errno;
	if (fclose(f) != 0 && !r)
		r = -errno;
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

int manifest_remove_stale(const char *root, const struct manifest *old,
			  const struct manifest *keep)
{
	char full[8192];
	const char **dirs = calloc(old->n + 1, sizeof(*dirs));
	size_t nd = 0;
	int first = 0;

	if (!dirs)
		return -ENOMEM;
	for (size_t i = 0; i < old->n; i++) {
		if (keep && manifest_has(keep, old->paths[i]))
			continue;
		if (old->kinds[i] == 'd') {
			dirs[nd++] = old->paths[i];
			continue;
		}
		snprintf(full, sizeof(full), "%s%s", root, old->paths[i]);
		if (unlink(full) < 0 && errno != ENOENT && !first)
			first = -errno;
	}
	qsort(dirs, nd, sizeof(*dirs), depth_cmp);
	for (size_t i = 0; i < nd; i++) {
		snprintf(full, sizeof(full), "%s%s", root, dirs[i]);
		/* ENOTEMPTY: it holds something not ours; leave it. */
		if (rmdir(full) < 0 && errno != ENOENT && errno != ENOTEMPTY &&
		    errno != EEXIST && !first)
			first = -errno;
	}
	free(dirs);
	return first;
}
