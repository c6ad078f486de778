/* Apply: the driver root visible at /run/nvidia/driver, where the GPU
 * Operator's validator and toolkit look for a containerized driver
 * (SURFACES.md §11.7).  A bind mount of R/driver where mounting is
 * permitted, else a symlink to it with a warning.  Revoke unmounts (lazily
 * when busy); the manifest then removes the mount point or the link.
 *
 * Paths: the mount joins the host root to both sides (this process sees
 * the host through it); the symlink's target is the host path, since the
 * host resolves it. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The mount point shows the driver root itself: our bind mount is there. */
static bool is_bind_of(const char *mp, const char *src)
{
	struct stat a, b;

	return stat(mp, &a) == 0 && stat(src, &b) == 0 && S_ISDIR(a.st_mode) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Empty, and no other filesystem mounted there (a mount point on a
 * different device than its parent). */
static bool usable_dir(const char *path)
{
	char parent[8192];
	struct stat a, b;
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(parent, sizeof(parent), "%s/..", path);
	if (stat(path, &a) < 0 || stat(parent, &b) < 0 || a.st_dev != b.st_dev)
		return false;
	if (!(d = opendir(path)))
		return false;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n == 0;
}

struct where {
	char mp[8192];		/* root-joined mount point */
	char src[8192];		/* root-joined driver root */
	char target[512];	/* host path of the driver root (symlink target) */
};

static int locate(struct host *h, const char *mock_root, struct where *w)
{
	int r;

	snprintf(w->target, sizeof(w->target), "%s%s", mock_root, GD_DRIVER);
	if ((r = host_path(h, GD_RUN_DRIVER, w->mp, sizeof(w->mp))) < 0)
		return r;
	return host_path(h, w->target, w->src, sizeof(w->src));
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
	ssize_t n = readlink(w->mp, cur, sizeof(cur) - 1);
	bool had = n > 0 && (size_t)n == strlen(w->target) && memcmp(cur, w->target, (size_t)n) == 0;
	struct stat st;
	int r;

	/* Our empty mount point from a pass that could mount gives way. */
	if (lstat(w->mp, &st) == 0 && S_ISDIR(st.st_mode) && ctx->host.prev &&
	    manifest_has(ctx->host.prev, GD_RUN_DRIVER))
		rmdir(w->mp);
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
	if (lstat(w->mp, &st) < 0) {
		if (errno != ENOENT)
			return fail_errno(errs, "lstat");
	} else if (S_ISLNK(st.st_mode)) {
		n = readlink(w->mp, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		if (!ours && strcmp(link, w->target) != 0) {
			sim_error(errs, GD_RUN_DRIVER, "is a symlink to %s, not ours; leaving it", link);
			return -EEXIST;
		}
		if (unlink(w->mp) < 0)
			return fail_errno(errs, "unlink our symlink");
	} else if (!S_ISDIR(st.st_mode)) {
		sim_error(errs, GD_RUN_DRIVER, "exists and is not a directory; leaving it");
		return -EEXIST;
	} else if (!usable_dir(w->mp)) {
		sim_error(errs, GD_RUN_DRIVER, "is a directory that is not empty or has something "
			  "else mounted on it; leaving it");
		return -EEXIST;
	} else {
		return 0;
	}
	if (mkdir(w->mp, 0755) < 0)
		return fail_errno(errs, "mkdir");
	*created = true;
	return 0;
}

int gd_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct where w;
	struct stat st;
	bool created;
	int r;

	if ((r = locate(&ctx->host, s->mock_root, &w)) < 0) {
		sim_error(errs, GD_RUN_DRIVER, "path too long under host root %s", ctx->host.root);
		return r;
	}
	if (stat(w.src, &st) < 0 || !S_ISDIR(st.st_mode)) {
		sim_error(errs, GD_RUN_DRIVER, "driver root %s is not staged", w.target);
		return -ENOENT;
	}
	if ((r = host_mkdirs(&ctx->host, "/run/nvidia", 0755)) < 0) {
		sim_error(errs, "/run/nvidia", "mkdir: %s", strerror(-r));
		return r;
	}
	if (is_bind_of(w.mp, w.src)) {
		own_dir(&ctx->host, false);
		return 0;
	}
	if (mount_refused)
		return apply_symlink(ctx, &w, "refused before", errs);
	if ((r = prepare_mountpoint(ctx, &w, &created, errs)) < 0)
		return r;
	if (mount(w.src, w.mp, NULL, MS_BIND | MS_REC, NULL) == 0) {
		own_dir(&ctx->host, created);
		log_info("gpudriver: bind-mounted %s at %s", w.target, GD_RUN_DRIVER);
		return 0;
	}
	r = errno;
	if (!refusal(r)) {
		if (created)
			rmdir(w.mp);
		sim_error(errs, GD_RUN_DRIVER, "bind mount of %s: %s", w.target, strerror(r));
		return -r;
	}
	mount_refused = true;
	if (!created && !(ctx->host.prev && manifest_has(ctx->host.prev, GD_RUN_DRIVER))) {
		sim_error(errs, GD_RUN_DRIVER, "bind mount not permitted (%s), and the directory "
			  "there is not ours to replace with a symlink", strerror(r));
		return -r;
	}
	rmdir(w.mp);
	return apply_symlink(ctx, &w, strerror(r), errs);
}

int gd_revoke(struct sim_ctx *ctx, struct sim_errors *errs)
{
	struct where w;
	int r;

	if ((r = gd_mig_revoke(ctx)) < 0)
		sim_error(errs, GD_MIG_CDI_SPEC, "unlink: %s", strerror(-r));
	if ((r = locate(&ctx->host, ctx->host.mock_root, &w)) < 0)
		return r;
	/* Stacked binds (an Apply racing a restart) come off one by one. */
	for (int i = 0; i < 8 && is_bind_of(w.mp, w.src); i++) {
		if (umount2(w.mp, 0) == 0)
			continue;
		if (errno == EBUSY && umount2(w.mp, MNT_DETACH) == 0) {
			log_warn("gpudriver: %s busy; detached lazily", GD_RUN_DRIVER);
			continue;
		}
		return fail_errno(errs, "umount");
	}
	return 0;
}
