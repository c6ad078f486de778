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
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/generation.h"
#include "workers/manifest.h"

/* nftw gives its callback no argument: the walk in progress. */
static struct {
	const struct manifest *keep;
	char logical[4096];	/* host path of the surface's live side */
	char from[8192];	/* root-joined tree being walked */
	char to[8192];		/* root-joined mirror target (gen_publish) */
	size_t from_len;
	int first;
} walk;

static int fail(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

/* Live and shadow sides of surface i, root-joined. */
static int sides(const struct host *h, int i, char *live, char *shadow, size_t len)
{
	int n = snprintf(live, len, "%s%s%s", h->root, h->mock_root, h->gens[i]);
	int m = snprintf(shadow, len, "%s%s%s", h->root, h->shadow, h->gens[i]);

	return n < 0 || m < 0 || (size_t)n >= len || (size_t)m >= len ? -ENAMETOOLONG : 0;
}

/* The logical (live) host path of the entry at full under walk.from. */
static int logical_of(const char *full, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", walk.logical, full + walk.from_len);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int mkdir_p(char *path, mode_t mode)
{
	for (char *s = path + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		int r = mkdir(path, mode) < 0 && errno != EEXIST ? -errno : 0;
		*s = c;
		if (r < 0)
			return r;
		if (c == '\0')
			return 0;
	}
}

int gen_prepare(struct host *h, const char *sim, const char *const *gens, bool make)
{
	char dir[8192];
	int n;

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
	/* The shadow's parents are infrastructure, not surfaces: unrecorded,
	 * removed by gen_remove_all. */
	for (int i = 0; make && gens && gens[i]; i++) {
		n = snprintf(dir, sizeof(dir), "%s%s%s", h->root, h->shadow, gens[i]);
		if (n < 0 || (size_t)n >= sizeof(dir))
			return -ENAMETOOLONG;
		*strrchr(dir, '/') = '\0';
		if ((n = mkdir_p(dir, 0755)) < 0)
			return n;
	}
	return 0;
}

/* Converge: what the shadow holds that this Stage did not write goes. */
static int drop_unkept(const char *full, const struct stat *st, int type, struct FTW *f)
{
	char lp[4096];

	if (logical_of(full, lp, sizeof(lp)) < 0 || manifest_has(walk.keep, lp))
		return 0;
	if ((type == FTW_DP ? rmdir(full) : unlink(full)) < 0 && errno != ENOENT)
		fail(&walk.first, -errno);
	return 0;
}

static int walk_tree(const char *logical, const char *from, const char *to,
		     int (*fn)(const char *, const struct stat *, int, struct FTW *), int flags)
{
	struct stat st;

	snprintf(walk.logical, sizeof(walk.logical), "%s", logical);
	snprintf(walk.from, sizeof(walk.from), "%s", from);
	snprintf(walk.to, sizeof(walk.to), "%s", to);
	walk.from_len = strlen(from);
	if (lstat(from, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (nftw(from, fn, 16, flags | FTW_PHYS | FTW_MOUNT) < 0)
		fail(&walk.first, -errno);
	return 0;
}

int gen_converge(const struct host *h, const struct manifest *keep)
{
	char live[8192], shadow[8192], logical[4096];

	walk.keep = keep;
	walk.first = 0;
	for (int i = 0; h->gens && h->gens[i]; i++) {
		if (sides(h, i, live, shadow, sizeof(live)) < 0)
			return -ENAMETOOLONG;
		snprintf(logical, sizeof(logical), "%s%s", h->mock_root, h->gens[i]);
		fail(&walk.first, walk_tree(logical, shadow, "", drop_unkept, FTW_DEPTH));
	}
	return walk.first;
}

/* Mirror: an entry of the live surface that another simulator put there
 * (IMEX's channel nodes in dev/) is not ours to drop with our generation:
 * it is hard-linked (directories re-made) into the shadow before the swap. */
static int mirror_foreign(const char *full, const struct stat *st, int type, struct FTW *f)
{
	char lp[4096], dst[8300];
	int n;

	if (f->level == 0 || logical_of(full, lp, sizeof(lp)) < 0 || manifest_has(walk.keep, lp))
		return 0;
	n = snprintf(dst, sizeof(dst), "%s%s", walk.to, full + walk.from_len);
	if (n < 0 || (size_t)n >= sizeof(dst))
		return fail(&walk.first, -ENAMETOOLONG), 0;
	if (type == FTW_D) {
		if (mkdir(dst, st->st_mode & 07777) < 0 && errno != EEXIST)
			fail(&walk.first, -errno);
	} else if (linkat(AT_FDCWD, full, AT_FDCWD, dst, 0) < 0 && errno != EEXIST) {
		fail(&walk.first, -errno);
	}
	return 0;
}

static int drop_any(const char *full, const struct stat *st, int type, struct FTW *f)
{
	if ((type == FTW_DP ? rmdir(full) : unlink(full)) < 0 && errno != ENOENT)
		fail(&walk.first, -errno);
	return 0;
}

/* A filesystem without RENAME_EXCHANGE: three renames, the live path
 * briefly absent (never a mix), said once. */
static int swap_by_renames(const char *live, const char *shadow)
{
	static bool warned;
	char old[8300];

	if (!warned) {
		warned = true;
		log_warn("generations: %s: no RENAME_EXCHANGE on this filesystem; publishing "
			 "by three renames (the surface is briefly absent)", live);
	}
	snprintf(old, sizeof(old), "%s.mokka-old", shadow);
	walk_tree("", old, "", drop_any, FTW_DEPTH);	/* a crashed swap's */
	if (rename(live, old) < 0)
		return -errno;
	if (rename(shadow, live) < 0) {
		int r = -errno;
		rename(old, live);
		return r;
	}
	return rename(old, shadow) < 0 ? -errno : 0;
}

/* A surface this pass did not stage (converge removed its shadow: IMEX
 * turned off, no topology document) is withdrawn when its live side is
 * ours, in one rename into the shadow, where the next Stage converges it
 * like any previous generation.  Never ours (nothing published yet, or
 * not staged at all): left alone. */
static int withdraw(const char *live, const char *shadow, const char *logical,
		    const struct manifest *own)
{
	if (!manifest_has(own, logical))
		return 0;
	if (rename(live, shadow) == 0 || errno == ENOENT)
		return 0;
	return -errno;
}

int gen_publish(const struct host *h, const struct manifest *own, char *err, size_t errlen)
{
	char live[8192], shadow[8192], logical[4096];
	struct stat st;
	int r;

	walk.keep = own;
	for (int i = 0; h->gens && h->gens[i]; i++) {
		if (sides(h, i, live, shadow, sizeof(live)) < 0)
			return -ENAMETOOLONG;
		snprintf(logical, sizeof(logical), "%s%s", h->mock_root, h->gens[i]);
		if (lstat(shadow, &st) < 0) {
			if ((r = withdraw(live, shadow, logical, own)) < 0) {
				snprintf(err, errlen, "%s: withdraw into %s: %s", logical, shadow,
					 strerror(-r));
				return r;
			}
			continue;
		}
		walk.first = 0;
		if (S_ISDIR(st.st_mode) &&
		    (walk_tree(logical, live, shadow, mirror_foreign, 0), walk.first < 0)) {
			snprintf(err, errlen, "%s: keeping what others put there: %s", logical,
				 strerror(-walk.first));
			return walk.first;
		}
		if (renameat2(AT_FDCWD, shadow, AT_FDCWD, live, RENAME_EXCHANGE) == 0)
			continue;
		if (errno == ENOENT)
			r = rename(shadow, live) == 0 ? 0 : -errno;
		else if (errno == EINVAL || errno == ENOSYS)
			r = swap_by_renames(live, shadow);
		else
			r = -errno;
		if (r < 0) {
			snprintf(err, errlen, "%s: swap with %s: %s", logical, shadow,
				 strerror(-r));
			return r;
		}
	}
	return 0;
}

int gen_remove_all(const struct host *h)
{
	char live[8192], shadow[8192], dir[8192];
	int first = 0;

	for (int i = 0; h->gens && h->gens[i]; i++) {
		if (sides(h, i, live, shadow, sizeof(live)) < 0)
			return -ENAMETOOLONG;
		walk.first = 0;
		/* Every generation of a surface lies under R: wholly ours. */
		walk_tree("", live, "", drop_any, FTW_DEPTH);
		walk_tree("", shadow, "", drop_any, FTW_DEPTH);
		fail(&first, walk.first);
	}
	/* The shadow's parents, up to R/.staged when nobody else uses it. */
	snprintf(dir, sizeof(dir), "%s%s", h->root, h->shadow);
	walk.first = 0;
	walk_tree("", dir, "", drop_any, FTW_DEPTH);
	fail(&first, walk.first);
	snprintf(dir, sizeof(dir), "%s%s" HOST_SHADOW_DIR, h->root, h->mock_root);
	if (rmdir(dir) < 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
		fail(&first, -errno);
	return first;
}
