/* A tree walk beneath a root that never follows a link (beneath.h): every
 * directory is entered through its parent's fd with O_NOFOLLOW, so a link
 * planted mid-walk is an entry, not a way out. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio/beneath.h"

struct walk {
	beneath_fn fn;
	void *arg;
	bool post;
	dev_t dev;
	char rel[PATH_MAX];
	int first;
};

static void note(struct walk *w, int r)
{
	if (r < 0 && w->first == 0)
		w->first = r;
}

static int visit(struct walk *w, int dirfd, const char *name, size_t rlen, int level);

/* The contents of the directory name in dirfd (rel is its path). */
static int contents(struct walk *w, int pfd, const char *name, size_t rlen, int level)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return errno == ENOENT ? 0 : (note(w, -errno), 0);
	if (!(d = fdopendir(fd))) {
		note(w, -errno);
		close(fd);
		return 0;
	}
	while (r >= 0 && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rlen + 1 + n >= sizeof(w->rel)) {
			note(w, -ENAMETOOLONG);
			continue;
		}
		/* Entries removed under us are fine; the listing goes on. */
		w->rel[rlen] = rlen ? '/' : '\0';
		memcpy(w->rel + rlen + (rlen ? 1 : 0), de->d_name, n + 1);
		r = visit(w, dirfd(d), de->d_name, rlen + (rlen ? 1 : 0) + n, level + 1);
		w->rel[rlen] = '\0';
	}
	closedir(d);
	return r;
}

static int visit(struct walk *w, int dirfd, const char *name, size_t rlen, int level)
{
	struct beneath_entry e = { dirfd, name, w->rel, NULL, level, false };
	struct stat st;
	int r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : (note(w, -errno), 0);
	e.st = &st;
	if ((r = w->fn(&e, w->arg)) < 0)
		return r;
	if (!S_ISDIR(st.st_mode) || st.st_dev != w->dev)
		return 0;
	if ((r = contents(w, dirfd, name, rlen, level)) < 0)
		return r;
	if (!w->post)
		return 0;
	e.post = true;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : (note(w, -errno), 0);
	return w->fn(&e, w->arg);
}

int beneath_walk(int rootfd, const char *rel, bool post, beneath_fn fn, void *arg)
{
	struct walk w = { .fn = fn, .arg = arg, .post = post };
	const char *leaf;
	struct stat st;
	int dfd = beneath_parent(rootfd, rel, &leaf), r;

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? 0 : -errno;
		close(dfd);
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		close(dfd);
		return -ELOOP;
	}
	w.dev = st.st_dev;
	w.rel[0] = '\0';
	r = visit(&w, dfd, leaf, 0, 0);
	close(dfd);
	return r < 0 ? r : w.first;
}
