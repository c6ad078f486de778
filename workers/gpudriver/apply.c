/* Apply: the driver root visible at /run/nvidia/driver, where the GPU
 * Operator's validator and toolkit look for a containerized driver
 * (SURFACES.md §11.7).  A bind mount of R/driver where mounting is
 * permitted, else a symlink to it with a warning.  Revoke unmounts (lazily
 * when busy); the manifest then removes the mount point or the link.
 *
 * Paths: both sides are resolved beneath the host root (this process sees
 * the host through it) without following a link (fileio/beneath.h), and
 * mount(2) is given their fds' /proc paths, so a link planted at
 * /run/nvidia/driver or above it is refused and named, never mounted
 * over or through; the symlink's target is the host path, since the host
 * resolves it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/gpudriver/mig.h"
#include "workers/manifest.h"

/* Once refused, stay with the symlink for this process's lifetime: no
 * unlink/mkdir/mount churn on every Apply. */
static bool mount_refused;

static bool refusal(int err)
{
	static const int errs[] = { EPERM, EACCES, EROFS, ENOSYS };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (err == errs[i])
			return true;
	return false;
}

/* The mount point (leaf in parent) and the driver root (src), all beneath
 * the host root. */
struct where {
	int root, parent, src;	/* O_PATH fds, -1 = not open */
	const char *leaf;	/* the mount point's name in parent */
	char target[512];	/* host path of the driver root (symlink target) */
};

static void where_close(struct where *w)
{
	if (w->src >= 0)
		close(w->src);
	if (w->parent >= 0)
		close(w->parent);
	if (w->root >= 0)
		close(w->root);
	w->root = w->parent = w->src = -1;
}

/* The root and the driver root; 0, or -errno (a link named in the log). */
static int locate(struct host *h, const char *mock_root, struct where *w)
{
	char phys[PATH_MAX];
	int r;

	w->root = w->parent = w->src = -1;
	w->leaf = NULL;
	if ((size_t)snprintf(w->target, sizeof(w->target), "%s%s", mock_root, GD_DRIVER) >=
	    sizeof(w->target))
		return -ENAMETOOLONG;
	if ((r = host_phys(h, w->target, phys, sizeof(phys))) < 0)
		return r;
	if ((w->root = beneath_root(h->root)) < 0)
		return w->root;
	if ((w->src = beneath_open(w->root, phys, O_PATH | O_DIRECTORY, 0)) < 0)
		return host_refused(h->root, w->root, phys, w->src);
	return 0;
}

/* The mount point's parent (/run/nvidia, made by the caller). */
static int open_parent(struct host *h, struct where *w)
{
	if ((w->parent = beneath_parent(w->root, GD_RUN_DRIVER, &w->leaf)) < 0)
		return host_refused(h->root, w->root, GD_RUN_DRIVER, w->parent);
	return 0;
}

/* The mount point shows the driver root itself: our bind mount is there. */
static bool is_bind_of(const struct where *w)
{
	struct stat a, b;

	return fstatat(w->parent, w->leaf, &a, AT_SYMLINK_NOFOLLOW) == 0 && fstat(w->src, &b) == 0 &&
	       S_ISDIR(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Empty, and no other filesystem mounted there (a mount point on a
 * different device than its parent). */
static bool usable_dir(const struct where *w)
{
	int fd = openat(w->parent, w->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat a, b;
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (fd < 0)
		return false;
	if (fstat(fd, &a) < 0 || fstat(w->parent, &b) < 0 || a.st_dev != b.st_dev ||
	    !(d = fdopendir(fd))) {
		close(fd);
		return false;
	}
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n == 0;
}

static void own_dir(struct host *h, bool created)
{
	if (h->own && (created || (h->prev && manifest_has(h->prev, GD_RUN_DRIVER))))
		manifest_add(h->own, GD_RUN_DRIVER, 'd');
}

static int apply_symlink(struct sim_ctx *ctx, const struct where *w, const char *why,
			 struct sim_errors *errs)
{
	char cur[4096];
	ssize_t n = readlinkat(w->parent, w->leaf, cur, sizeof(cur) - 1);
	bool had = n > 0 && (size_t)n == strlen(w->target) && memcmp(cur, w->target, (size_t)n) == 0;
	struct stat st;
	int r;

	/* Our empty mount point from a pass that could mount gives way. */
	if (fstatat(w->parent, w->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    ctx->host.prev && manifest_has(ctx->host.prev, GD_RUN_DRIVER))
		unlinkat(w->parent, w->leaf, AT_REMOVEDIR);
	if ((r = host_symlink(&ctx->host, w->target, GD_RUN_DRIVER)) < 0)
		sim_error(errs, GD_RUN_DRIVER, "bind mount not permitted (%s), and symlink -> %s "
			  "failed: %s", why, w->target, strerror(-r));
	else if (!had)
		log_warn("gpudriver: %s: bind mount not permitted (%s); made a symlink to %s",
			 GD_RUN_DRIVER, why, w->target);
	return r;
}

static int fail_errno(struct sim_errors *errs, const char *what)
{
	int e = errno;

	sim_error(errs, GD_RUN_DRIVER, "%s: %s", what, strerror(e));
	return -e;
}

/* Make the mount point usable: absent (create), our empty directory, or
 * our own symlink from an earlier fallback.  *created says we made it. */
static int prepare_mountpoint(struct sim_ctx *ctx, const struct where *w, bool *created,
			      struct sim_errors *errs)
{
	const struct manifest *prev = ctx->host.prev;
	bool ours = prev && manifest_has(prev, GD_RUN_DRIVER);
	char link[4096];
	struct stat st;
	ssize_t n;

	*created = false;
	if (fstatat(w->parent, w->leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return fail_errno(errs, "lstat");
	} else if (S_ISLNK(st.st_mode)) {
		n = readlinkat(w->parent, w->leaf, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		if (!ours && strcmp(link, w->target) != 0) {
			sim_error(errs, GD_RUN_DRIVER, "%s%s is a symbolic link (to %s) that Mokka "
				  "did not make: refusing to mount over or through it",
				  ctx->host.root, GD_RUN_DRIVER, link);
			return -ELOOP;
		}
		if (unlinkat(w->parent, w->leaf, 0) < 0)
			return fail_errno(errs, "unlink our symlink");
	} else if (!S_ISDIR(st.st_mode)) {
		sim_error(errs, GD_RUN_DRIVER, "exists and is not a directory; leaving it");
		return -EEXIST;
	} else if (!usable_dir(w)) {
		sim_error(errs, GD_RUN_DRIVER, "is a directory that is not empty or has something "
			  "else mounted on it; leaving it");
		return -EEXIST;
	} else {
		return 0;
	}
	if (mkdirat(w->parent, w->leaf, 0755) < 0)
		return fail_errno(errs, "mkdir");
	*created = true;
	return 0;
}

/* mount(2) takes paths: both fds' own, through /proc, so nothing planted
 * since they were resolved is followed. */
static int bind_mount(const struct where *w)
{
	char src[64], dst[64];
	int fd = openat(w->parent, w->leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (beneath_fdpath(w->src, NULL, src, sizeof(src)) < 0 ||
	    beneath_fdpath(fd, NULL, dst, sizeof(dst)) < 0)
		r = -ENAMETOOLONG;
	else if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int apply_at(struct sim_ctx *ctx, struct where *w, struct sim_errors *errs)
{
	bool created;
	int r;

	if ((r = host_mkdirs(&ctx->host, "/run/nvidia", 0755)) < 0) {
		sim_error(errs, "/run/nvidia", "mkdir: %s", strerror(-r));
		return r;
	}
	if ((r = open_parent(&ctx->host, w)) < 0) {
		sim_error(errs, GD_RUN_DRIVER, "%s", strerror(-r));
		return r;
	}
	if (is_bind_of(w)) {
		own_dir(&ctx->host, false);
		return 0;
	}
	if (mount_refused)
		return apply_symlink(ctx, w, "refused before", errs);
	if ((r = prepare_mountpoint(ctx, w, &created, errs)) < 0)
		return r;
	if ((r = -bind_mount(w)) == 0) {
		own_dir(&ctx->host, created);
		log_info("gpudriver: bind-mounted %s at %s", w->target, GD_RUN_DRIVER);
		return 0;
	}
	if (!refusal(r)) {
		if (created)
			unlinkat(w->parent, w->leaf, AT_REMOVEDIR);
		sim_error(errs, GD_RUN_DRIVER, "bind mount of %s: %s", w->target, strerror(r));
		return -r;
	}
	mount_refused = true;
	if (!created && !(ctx->host.prev && manifest_has(ctx->host.prev, GD_RUN_DRIVER))) {
		sim_error(errs, GD_RUN_DRIVER, "bind mount not permitted (%s), and the directory "
			  "there is not ours to replace with a symlink", strerror(r));
		return -r;
	}
	unlinkat(w->parent, w->leaf, AT_REMOVEDIR);
	return apply_symlink(ctx, w, strerror(r), errs);
}

int gd_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct where w;
	int r;

	if ((r = locate(&ctx->host, s->mock_root, &w)) < 0) {
		if (r == -ENOENT || r == -ENOTDIR)
			sim_error(errs, GD_RUN_DRIVER, "driver root %s is not staged", w.target);
		else
			sim_error(errs, GD_RUN_DRIVER, "driver root %s under host root %s: %s",
				  w.target, ctx->host.root, strerror(-r));
		where_close(&w);
		return r;
	}
	r = apply_at(ctx, &w, errs);
	where_close(&w);
	return r;
}

int gd_revoke(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char mp[64 + NAME_MAX];
	struct where w;
	int r;

	if ((r = gd_mig_revoke(ctx)) < 0)
		sim_error(errs, GD_MIG_CDI_SPEC, "unlink: %s", strerror(-r));
	r = 0;
	/* No driver root or no /run/nvidia: nothing of ours is mounted. */
	if (locate(&ctx->host, ctx->host.mock_root, &w) < 0 || open_parent(&ctx->host, &w) < 0 ||
	    beneath_fdpath(w.parent, w.leaf, mp, sizeof(mp)) < 0) {
		where_close(&w);
		return 0;
	}
	/* Stacked binds (an Apply racing a restart) come off one by one; the
	 * path is the parent's fd, and a link at the leaf is not followed. */
	for (int i = 0; i < 8 && r == 0 && is_bind_of(&w); i++) {
		if (umount2(mp, UMOUNT_NOFOLLOW) == 0)
			continue;
		if (errno == EBUSY && umount2(mp, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
			log_warn("gpudriver: %s busy; detached lazily", GD_RUN_DRIVER);
			continue;
		}
		r = fail_errno(errs, "umount");
	}
	where_close(&w);
	return r;
}
