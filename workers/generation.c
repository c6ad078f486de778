/* Generational surfaces (host.h): Stage renders the next generation into
 * a shadow beside the live tree, Publish makes it live with one
 * renameat2(RENAME_EXCHANGE) per surface.  The swap keeps the live path's
 * name and parent, so R/driver stays the same directory: the bind mount at
 * /run/nvidia/driver, the mock library found beside its caller, and
 * nvidia-smi's $ORIGIN/../lib64 all see the new generation at once.  After
 * the swap the shadow holds the previous generation, the base the next
 * Stage converges (unchanged files are not rewritten). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/generation.h"
#include "workers/manifest.h"

/* A walk in progress (beneath_walk's argument). */
struct walk {
	const struct manifest *keep;
	const char *logical;	/* host path of the surface's live side */
	int rootfd;
	const char *to;		/* physical mirror target (gen_publish) */
	int first;
};

static int fail(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

/* Live and shadow sides of surface i: physical host paths, resolved
 * beneath the root like every write (fileio/beneath.h). */
static int sides(const struct host *h, int i, char *live, char *shadow, size_t len)
{
	int n = snprintf(live, len, "%s%s", h->mock_root, h->gens[i]);
	int m = snprintf(shadow, len, "%s%s", h->shadow, h->gens[i]);

	return n < 0 || m < 0 || (size_t)n >= len || (size_t)m >= len ? -ENAMETOOLONG : 0;
}

/* The logical (live) host path of the walked entry e. */
static int logical_of(const struct walk *w, const struct beneath_entry *e, char *buf,
		      size_t len)
{
	int n = snprintf(buf, len, "%s%s%s", w->logical, e->rel[0] ? "/" : "", e->rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int walk_tree(const struct host *h, int rootfd, struct walk *w, const char *phys,
		     bool post, beneath_fn fn)
{
	int r;

	w->rootfd = rootfd;
	r = beneath_walk(rootfd, phys, post, fn, w);
	if (r < 0)
		fail(&w->first, host_refused(h->root, rootfd, phys, r));
	return r;
}

static int mkdir_p(const struct host *h, int rootfd, char *path, mode_t mode)
{
	for (char *s = path + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		int r = beneath_mkdir(rootfd, path, mode);
		if (r < 0 && r != -EEXIST)
			r = host_refused(h->root, rootfd, path, r);
		*s = c;
		if (r < 0 && r != -EEXIST)
			return r;
		if (c == '\0')
			return 0;
	}
}

int gen_prepare(struct host *h, const char *sim, const char *const *gens, bool make)
{
	char dir[PATH_MAX];
	int n, rootfd;

	h->gens = gens;
	h->staging = false;
	/* No state yet (a worker restarted into a teardown): no mock root to
	 * hold generations, and never the host's own tree. */
	if (h->mock_root[0] != '/' || strspn(h->mock_root, "/") == strlen(h->mock_root)) {
		h->gens = NULL;
		return -EINVAL;
	}
	n = snprintf(h->shadow, sizeof(h->shadow), "%s" HOST_SHADOW_DIR "/%s", h->mock_root, sim);
	if (n < 0 || (size_t)n >= sizeof(h->shadow))
		return -ENAMETOOLONG;
	if (!make || !gens)
		return 0;
	if ((rootfd = beneath_root(h->root)) < 0)
		return rootfd;
	/* The shadow's parents are infrastructure, not surfaces: unrecorded,
	 * removed by gen_remove_all. */
	for (int i = 0; gens[i]; i++) {
		n = snprintf(dir, sizeof(dir), "%s%s", h->shadow, gens[i]);
		if (n < 0 || (size_t)n >= sizeof(dir)) {
			n = -ENAMETOOLONG;
			break;
		}
		*strrchr(dir, '/') = '\0';
		if ((n = mkdir_p(h, rootfd, dir, 0755)) < 0)
			break;
	}
	close(rootfd);
	return n < 0 ? n : 0;
}

static int drop(const struct walk *w, const struct beneath_entry *e)
{
	if (unlinkat(e->dirfd, e->name, S_ISDIR(e->st->st_mode) ? AT_REMOVEDIR : 0) < 0 &&
	    errno != ENOENT)
		return -errno;
	return 0;
}

/* Converge: what the shadow holds that this Stage did not write goes
 * (a GPU gone, a killed writer's temporary file). */
static int drop_unkept(const struct beneath_entry *e, void *arg)
{
	struct walk *w = arg;
	char lp[PATH_MAX];

	if ((S_ISDIR(e->st->st_mode) && !e->post) || logical_of(w, e, lp, sizeof(lp)) < 0 ||
	    manifest_has(w->keep, lp))
		return 0;
	fail(&w->first, drop(w, e));
	return 0;
}

static int drop_any(const struct beneath_entry *e, void *arg)
{
	struct walk *w = arg;

	if (!S_ISDIR(e->st->st_mode) || e->post)
		fail(&w->first, drop(w, e));
	return 0;
}

int gen_converge(const struct host *h, const struct manifest *keep)
{
	char live[PATH_MAX], shadow[PATH_MAX], logical[PATH_MAX];
	struct walk w = { .keep = keep, .logical = logical };
	int rootfd = beneath_root(h->root);

	if (rootfd < 0)
		return rootfd;
	for (int i = 0; h->gens && h->gens[i]; i++) {
		if (sides(h, i, live, shadow, sizeof(live)) < 0) {
			fail(&w.first, -ENAMETOOLONG);
			break;
		}
		snprintf(logical, sizeof(logical), "%s%s", h->mock_root, h->gens[i]);
		walk_tree(h, rootfd, &w, shadow, true, drop_unkept);
	}
	close(rootfd);
	return w.first;
}

/* Mirror: an entry of the live surface that another simulator put there
 * (IMEX's channel nodes in dev/) is not ours to drop with our generation:
 * it is hard-linked (directories re-made) into the shadow before the swap. */
static int mirror_foreign(const struct beneath_entry *e, void *arg)
{
	struct walk *w = arg;
	char lp[PATH_MAX], dst[PATH_MAX];
	const char *name;
	int n, dfd;

	if (e->level == 0 || logical_of(w, e, lp, sizeof(lp)) < 0 || manifest_has(w->keep, lp))
		return 0;
	n = snprintf(dst, sizeof(dst), "%s/%s", w->to, e->rel);
	if (n < 0 || (size_t)n >= sizeof(dst))
		return fail(&w->first, -ENAMETOOLONG), 0;
	if (S_ISDIR(e->st->st_mode)) {
		n = beneath_mkdir(w->rootfd, dst, e->st->st_mode & 07777);
		if (n < 0 && n != -EEXIST)
			fail(&w->first, n);
		return 0;
	}
	if ((dfd = beneath_parent(w->rootfd, dst, &name)) < 0)
		return fail(&w->first, dfd), 0;
	if (linkat(e->dirfd, e->name, dfd, name, 0) < 0 && errno != EEXIST)
		fail(&w->first, -errno);
	close(dfd);
	return 0;
}

/* renameat2 of two paths beneath rootfd, each through its parent's fd. */
static int rename_beneath(int rootfd, const char *from, const char *to, unsigned flags)
{
	const char *fn, *tn;
	int fd = beneath_parent(rootfd, from, &fn), td, r = 0;

	if (fd < 0)
		return fd;
	if ((td = beneath_parent(rootfd, to, &tn)) < 0) {
		close(fd);
		return td;
	}
	if (renameat2(fd, fn, td, tn, flags) < 0)
		r = -errno;
	close(fd);
	close(td);
	return r;
}

/* What is at phys: 0 (missing), S_IFLNK, S_IFDIR, ... or -errno. */
static int kind_of(int rootfd, const char *phys)
{
	const char *name;
	struct stat st;
	int dfd = beneath_parent(rootfd, phys, &name), r;

	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	r = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? (errno == ENOENT ? 0 : -errno)
		: (int)(st.st_mode & S_IFMT);
	close(dfd);
	return r;
}

/* A filesystem without RENAME_EXCHANGE: three renames, the live path
 * briefly absent (never a mix), said once. */
static int swap_by_renames(const struct host *h, int rootfd, const char *live,
			   const char *shadow)
{
	static bool warned;
	struct walk w = { 0 };
	char old[PATH_MAX + 16];
	int r;

	if (!warned) {
		warned = true;
		log_warn("generations: %s%s: no RENAME_EXCHANGE on this filesystem; publishing "
			 "by three renames (the surface is briefly absent)", h->root, live);
	}
	snprintf(old, sizeof(old), "%s.mokka-old", shadow);
	walk_tree(h, rootfd, &w, old, true, drop_any);	/* a crashed swap's */
	if ((r = rename_beneath(rootfd, live, old, 0)) < 0)
		return r;
	if ((r = rename_beneath(rootfd, shadow, live, 0)) < 0) {
		rename_beneath(rootfd, old, live, 0);
		return r;
	}
	return rename_beneath(rootfd, old, shadow, 0);
}

/* A surface this pass did not stage (converge removed its shadow: IMEX
 * turned off, no topology document) is withdrawn when its live side is
 * ours, in one rename into the shadow, where the next Stage converges it
 * like any previous generation.  Never ours (nothing published yet, or
 * not staged at all): left alone. */
static int withdraw(int rootfd, const char *live, const char *shadow, const char *logical,
		    const struct manifest *own)
{
	int r;

	if (!manifest_has(own, logical))
		return 0;
	r = rename_beneath(rootfd, live, shadow, 0);
	return r == -ENOENT ? 0 : r;
}

/* One surface: keep what others put on the live side, then swap. */
static int publish_one(const struct host *h, int rootfd, int i, const struct manifest *own,
		       char *err, size_t errlen)
{
	char live[PATH_MAX], shadow[PATH_MAX], logical[PATH_MAX];
	struct walk w = { .keep = own, .logical = logical, .to = shadow };
	int r, kind, lkind;

	if (sides(h, i, live, shadow, sizeof(live)) < 0)
		return -ENAMETOOLONG;
	snprintf(logical, sizeof(logical), "%s%s", h->mock_root, h->gens[i]);
	/* A link where either side belongs is not ours: refused, not swapped
	 * (it would be followed by whoever reads the surface next). */
	if ((kind = kind_of(rootfd, shadow)) == S_IFLNK || kind < 0 ||
	    (lkind = kind_of(rootfd, live)) == S_IFLNK || lkind < 0) {
		r = kind < 0 ? kind : kind == S_IFLNK ? -ELOOP : lkind < 0 ? lkind : -ELOOP;
		host_refused(h->root, rootfd, kind < 0 || kind == S_IFLNK ? shadow : live, r);
		snprintf(err, errlen, "%s: %s", logical, r == -ELOOP ?
			 "a symbolic link Mokka did not make is in the way (see the log)" :
			 strerror(-r));
		return r;
	}
	if (kind == 0) {
		if ((r = withdraw(rootfd, live, shadow, logical, own)) < 0)
			snprintf(err, errlen, "%s: withdraw into %s: %s", logical, shadow,
				 strerror(-r));
		return r;
	}
	if (kind == S_IFDIR && lkind == S_IFDIR &&
	    (walk_tree(h, rootfd, &w, live, false, mirror_foreign), w.first < 0)) {
		snprintf(err, errlen, "%s: keeping what others put there: %s", logical,
			 strerror(-w.first));
		return w.first;
	}
	r = rename_beneath(rootfd, shadow, live, RENAME_EXCHANGE);
	if (r == -ENOENT)
		r = rename_beneath(rootfd, shadow, live, 0);
	else if (r == -EINVAL || r == -ENOSYS)
		r = swap_by_renames(h, rootfd, live, shadow);
	if (r < 0)
		snprintf(err, errlen, "%s: swap with %s: %s", logical, shadow, strerror(-r));
	return r;
}

int gen_publish(const struct host *h, const struct manifest *own, char *err, size_t errlen)
{
	int rootfd = beneath_root(h->root), r = 0;

	if (rootfd < 0) {
		snprintf(err, errlen, "host root %s: %s", h->root, strerror(-rootfd));
		return rootfd;
	}
	for (int i = 0; r == 0 && h->gens && h->gens[i]; i++)
		r = publish_one(h, rootfd, i, own, err, errlen);
	close(rootfd);
	return r;
}

int gen_remove_all(const struct host *h)
{
	char live[PATH_MAX], shadow[PATH_MAX], dir[PATH_MAX];
	struct walk w = { 0 };
	const char *name;
	int rootfd = beneath_root(h->root), dfd;

	if (rootfd < 0)
		return rootfd;
	for (int i = 0; h->gens && h->gens[i]; i++) {
		if (sides(h, i, live, shadow, sizeof(live)) < 0) {
			fail(&w.first, -ENAMETOOLONG);
			break;
		}
		/* Every generation of a surface lies under R: wholly ours. */
		walk_tree(h, rootfd, &w, live, true, drop_any);
		walk_tree(h, rootfd, &w, shadow, true, drop_any);
	}
	/* The shadow's parents, up to R/.staged when nobody else uses it. */
	walk_tree(h, rootfd, &w, h->shadow, true, drop_any);
	snprintf(dir, sizeof(dir), "%s" HOST_SHADOW_DIR, h->mock_root);
	if ((dfd = beneath_parent(rootfd, dir, &name)) >= 0) {
		if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    errno != ENOTEMPTY && errno != EEXIST)
			fail(&w.first, errno == ENOTDIR ? host_refused(h->root, rootfd, dir, -ELOOP)
						       : -errno);
		close(dfd);
	} else if (dfd != -ENOENT) {
		fail(&w.first, host_refused(h->root, rootfd, dir, dfd));
	}
	close(rootfd);
	return w.first;
}
