/* Incremental reconcile: digests of a Stage's inputs and of its published
 * output (stage_skip.h). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/manifest.h"
#include "workers/stage_skip.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

void skip_key_init(struct skip_key *k)
{
	k->h = FNV_OFFSET;
}

void skip_key_bytes(struct skip_key *k, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		k->h ^= b[i];
		k->h *= FNV_PRIME;
	}
}

/* With its terminating NUL, so "ab"+"c" differs from "a"+"bc". */
void skip_key_str(struct skip_key *k, const char *s)
{
	skip_key_bytes(k, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* What tells one version of a path from another without reading it. */
struct ident {
	int err;
	mode_t mode;
	dev_t dev;
	ino_t ino;
	off_t size;
	long long mtime_s, mtime_ns, ctime_s, ctime_ns;
};

static void key_ident(struct skip_key *k, const struct stat *st, int err, bool times)
{
	struct ident id;

	memset(&id, 0, sizeof(id));	/* padding too: the digest reads every byte */
	id.err = err;
	if (!err) {
		id.mode = st->st_mode;
		if (!S_ISDIR(st->st_mode)) {
			id.dev = st->st_dev;
			id.ino = st->st_ino;
			id.size = st->st_size;
			id.mtime_s = st->st_mtim.tv_sec;
			id.mtime_ns = st->st_mtim.tv_nsec;
		}
		if (times) {
			id.ctime_s = st->st_ctim.tv_sec;
			id.ctime_ns = st->st_ctim.tv_nsec;
		}
	}
	skip_key_bytes(k, &id, sizeof(id));
}

void skip_key_stat(struct skip_key *k, const char *path)
{
	struct stat st;
	int err = stat(path, &st) < 0 ? errno : 0;

	skip_key_str(k, path);
	key_ident(k, &st, err, true);
}

void skip_key_file(struct skip_key *k, const char *path, size_t max)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	skip_key_str(k, path);
	if (fd < 0) {
		int err = errno;
		skip_key_bytes(k, &err, sizeof(err));
		return;
	}
	while (total < max && (n = read(fd, buf, sizeof(buf))) > 0) {
		skip_key_bytes(k, buf, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
}

void skip_key_dir(struct skip_key *k, const char *dir, size_t max)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	char path[4200];

	skip_key_str(k, dir);
	if (n < 0) {
		int err = errno;
		skip_key_bytes(k, &err, sizeof(err));
		return;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..") &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) < sizeof(path))
			skip_key_file(k, path, max);
		free(names[i]);
	}
	free(names);
}

static bool ignored(const char *name, const char *const *ignore)
{
	if (strcmp(name, "generation") == 0)
		return true;
	for (size_t i = 0; ignore && ignore[i]; i++)
		if (strcmp(name, ignore[i]) == 0)
			return true;
	return false;
}

int skip_state_key(const char *json, size_t len, const char *const *ignore, uint64_t *out)
{
	cJSON *root = cJSON_ParseWithLength(json, len), *c;
	struct skip_key k;
	int r = 0;

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	skip_key_init(&k);
	cJSON_ArrayForEach(c, root) {
		char *v;

		if (!c->string || ignored(c->string, ignore))
			continue;
		if (!(v = cJSON_PrintUnformatted(c))) {
			r = -ENOMEM;
			break;
		}
		skip_key_str(&k, c->string);
		skip_key_str(&k, v);
		free(v);
	}
	cJSON_Delete(root);
	*out = k.h;
	return r;
}

int skip_output_key(const char *root, const struct manifest *m, uint64_t *out)
{
	int rootfd = open(root && root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct skip_key k;

	if (rootfd < 0)
		return -errno;
	skip_key_init(&k);
	for (size_t i = 0; i < m->n; i++) {
		const char *p = m->paths[i];
		struct stat st;
		int err;

		while (*p == '/')
			p++;
		err = fstatat(rootfd, *p ? p : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
		skip_key_str(&k, m->paths[i]);
		key_ident(&k, &st, err, false);
	}
	close(rootfd);
	*out = k.h;
	return 0;
}
