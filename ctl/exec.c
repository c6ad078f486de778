/* mokka-ctl exec [--gpus LIST] -- CMD [ARGS]: CMD in a private mount
 * namespace where the node's surfaces sit at their real paths, with no
 * LD_PRELOAD, so a static or Go binary sees the node as a C program with
 * the shims does:
 *
 *   /sys/bus/pci, /sys/devices/pci*, /sys/kernel/iommu_groups,
 *   /sys/module/<driver>, /dev/vfio, /proc/cmdline   mokka-pcifs's view
 *                        (R/run/pcifs; the staged R/sys when it is not served)
 *   /sys/class/infiniband*   the view's (ib's devices and the VFs'), else ib's
 *   /dev/infiniband                                   ib's tree (R/ib)
 *   /dev/nvidia*, /proc/driver/nvidia, /sys/module/nvidia*   gpudriver's (R/driver, R/sys)
 *   /proc/bus/pci        the view's (VFs, removals), else pcibus's (R/proc/bus/pci)
 *
 * A name the host does not have (/sys/devices/pci0000:80, /dev/nvidia0)
 * cannot be created in sysfs or on the host's /dev: its directory becomes
 * a tmpfs holding bind mounts of every host entry plus ours (graft()).
 * Nothing is written outside the namespace, and it dies with CMD. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "fileio/beneath.h"

int ctl_cmd_exec(struct ctl_call *call, struct yl_node **doc);

#define CONFIG_TAIL "/driver/config/config.yaml"
#define FUSE_MAGIC 0x65735546

/* Directories already turned into a tmpfs of binds. */
static char overlaid[32][PATH_MAX];
static int noverlaid;

static int bind(const char *src, const char *dst)
{
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
}

/* The node's sources lie beneath the host root (call->root): each is
 * opened beneath it, never through a link (fileio/beneath.h), and bound
 * from its fd's /proc/self/fd path, so a link planted in the node's tree
 * cannot show the command what lies outside it.  src_root < 0: the layout
 * is not the host's (paths used as given). */
static int src_root = -1;
static size_t src_skip;		/* strlen of the host root in a source path */
static const char *src_shown = "";	/* the host root, as given */
static char refusal[PATH_MAX + 512];	/* why the last source was refused */

/* src's lstat and, for a link, its target (copied, never followed). */
struct source {
	struct stat st;
	char target[PATH_MAX];
	char path[PATH_MAX * 2];	/* what to bind: src, or its fd's path */
	int fd;
};

static int refused(const char *src, int r)
{
	if (src_root >= 0)
		beneath_explain(src_root, src_shown, src + src_skip, r, refusal, sizeof(refusal));
	else
		snprintf(refusal, sizeof(refusal), "%s", strerror(-r));
	return r;
}

/* Open src (a path under the host root when src_root >= 0) without
 * following a link on the way; its last component is described if it is
 * a link (copied as one), else opened O_PATH.  -errno, refusal set. */
static int source_open(const char *src, struct source *o)
{
	const char *leaf;
	ssize_t k;
	int dfd;

	o->fd = -1;
	snprintf(o->path, sizeof(o->path), "%s", src);
	if (src_root < 0) {
		if (lstat(src, &o->st) < 0)
			return refused(src, -errno);
		if (S_ISLNK(o->st.st_mode) && (k = readlink(src, o->target, sizeof(o->target) - 1)) >= 0)
			o->target[k] = '\0';
		return 0;
	}
	if ((dfd = beneath_parent(src_root, src + src_skip, &leaf)) < 0)
		return refused(src, dfd);
	if (fstatat(dfd, leaf, &o->st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(dfd);
		return refused(src, -errno);
	}
	if (S_ISLNK(o->st.st_mode)) {
		k = readlinkat(dfd, leaf, o->target, sizeof(o->target) - 1);
		o->target[k < 0 ? 0 : k] = '\0';
	} else if ((o->fd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		   beneath_fdpath(o->fd, NULL, o->path, sizeof(o->path)) < 0) {
		close(dfd);
		return refused(src, o->fd < 0 ? -errno : -ENAMETOOLONG);
	}
	close(dfd);
	return 0;
}

/* A place at dst of st's type: a directory or an empty file (a file,
 * device node or socket is bind-mounted over it); a symlink is copied
 * (target): 1. */
static int placeholder_of(const struct stat *st, const char *target, const char *dst)
{
	int fd;

	if (S_ISLNK(st->st_mode))
		return symlink(target, dst) < 0 ? -errno : 1;
	if (S_ISDIR(st->st_mode))
		return mkdir(dst, st->st_mode & 07777) < 0 && errno != EEXIST ? -errno : 0;
	if ((fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return -errno;
	close(fd);
	return 0;
}

/* placeholder_of for src (the host's own entries, not the node's). */
static int placeholder(const char *src, const char *dst, struct stat *st)
{
	char target[PATH_MAX];
	ssize_t k = 0;

	if (lstat(src, st) < 0)
		return -errno;
	if (S_ISLNK(st->st_mode) && (k = readlink(src, target, sizeof(target) - 1)) < 0)
		return -errno;
	target[k] = '\0';
	return placeholder_of(st, target, dst);
}

/* dir becomes a tmpfs with every entry it had bind-mounted back. */
static int overlay(const char *dir)
{
	char stash[] = "/tmp/.mokka-exec-XXXXXX", src[PATH_MAX * 2], dst[PATH_MAX * 2];
	struct dirent *e;
	struct stat st;
	int r = 0;
	DIR *d;

	for (int i = 0; i < noverlaid; i++)
		if (!strcmp(overlaid[i], dir))
			return 0;
	if (noverlaid == 32 || !mkdtemp(stash))
		return -ENOSPC;
	if ((r = bind(dir, stash)) < 0 ||
	    (mount("mokka-exec", dir, "tmpfs", MS_NOSUID, "mode=0755") < 0 && (r = -errno))) {
		rmdir(stash);
		return r;
	}
	if ((d = opendir(stash))) {
		while (r >= 0 && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(src, sizeof(src), "%s/%s", stash, e->d_name);
			snprintf(dst, sizeof(dst), "%s/%s", dir, e->d_name);
			if ((r = placeholder(src, dst, &st)) == 0)
				r = bind(src, dst);
			r = r == 1 ? 0 : r;
		}
		closedir(d);
	}
	umount2(stash, MNT_DETACH);
	rmdir(stash);
	snprintf(overlaid[noverlaid++], PATH_MAX, "%s", dir);
	return r;
}

/* dir/name shows src: a bind over the host's entry, or a new entry. */
static int graft_src(const char *dir, const char *name, const struct source *o)
{
	char dst[PATH_MAX * 2];
	struct stat st;
	int r;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if (lstat(dst, &st) == 0 && !S_ISLNK(st.st_mode) && !S_ISLNK(o->st.st_mode) &&
	    S_ISDIR(st.st_mode) == S_ISDIR(o->st.st_mode))
		return bind(o->path, dst);
	if ((r = overlay(dir)) < 0)
		return r;
	if (lstat(dst, &st) == 0) {
		umount2(dst, MNT_DETACH);
		if ((S_ISDIR(st.st_mode) ? rmdir(dst) : unlink(dst)) < 0)
			return -errno;
	}
	if ((r = placeholder_of(&o->st, o->target, dst)) != 0)
		return r == 1 ? 0 : r;
	return bind(o->path, dst);
}

static int graft(const char *dir, const char *name, const char *src)
{
	struct source o;
	int r;

	if ((r = source_open(src, &o)) < 0)
		return r;
	refusal[0] = '\0';
	r = graft_src(dir, name, &o);
	if (o.fd >= 0)
		close(o.fd);
	if (r < 0 && !refusal[0])
		snprintf(refusal, sizeof(refusal), "%s", strerror(-r));
	return r;
}

/* Every entry of srcdir matching pattern (NULL = all) into dir. */
static int graft_all(struct ctl_call *call, const char *dir, const char *srcdir,
		     const char *pattern, const bool *minors)
{
	char src[PATH_MAX * 2];
	struct dirent *e;
	int r = 0, fd;
	DIR *d;

	if (src_root < 0)
		d = opendir(srcdir);
	else if ((fd = beneath_open(src_root, srcdir + src_skip, O_RDONLY | O_DIRECTORY, 0)) >= 0)
		d = fdopendir(fd);
	else if (fd == -ENOENT)
		d = NULL;
	else
		return ctl_fail(call, refused(srcdir, fd), "%s: %s", srcdir, refusal);
	if (!d)
		return 0;	/* the node does not have it */
	while (r == 0 && (e = readdir(d))) {
		unsigned n;
		char tail;

		if (e->d_name[0] == '.' || (pattern && fnmatch(pattern, e->d_name, 0)))
			continue;
		/* --gpus: /dev/nvidia<minor> of the others stay out. */
		if (minors && sscanf(e->d_name, "nvidia%u%c", &n, &tail) == 1 &&
		    (n >= CTL_MAX_GPUS || !minors[n]))
			continue;
		snprintf(src, sizeof(src), "%s/%s", srcdir, e->d_name);
		if ((r = graft(dir, e->d_name, src)) < 0)
			ctl_fail(call, r, "%s/%s from %s: %s", dir, e->d_name, src, refusal);
	}
	closedir(d);
	return r;
}

static int gpus_option(struct ctl_call *call, bool *minors, bool *filter)
{
	const char *list = ctl_opt(call, "gpus");
	char buf[1024], err[256];

	*filter = list && strcmp(list, "all");
	if (!*filter)
		return 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct ctl_target tg;

		if (ctl_target_parse(call->prof, t, &tg, err, sizeof(err)) < 0)
			return ctl_fail(call, -EINVAL, "--gpus %s: %s", t, err);
		for (int i = 0; i < call->prof->n; i++)
			if (tg.all || tg.gpu == i)
				minors[call->prof->gpu[i].index % CTL_MAX_GPUS] = true;
	}
	return 0;
}

/* Whether the node has p: 1, 0 (absent), or -errno (refusal set). */
static int present(const char *p)
{
	int fd;

	if (src_root < 0)
		return access(p, F_OK) == 0;
	if ((fd = beneath_open(src_root, p + src_skip, O_PATH, 0)) >= 0) {
		close(fd);
		return 1;
	}
	return fd == -ENOENT ? 0 : refused(p, fd);
}

static bool served(const char *view)
{
	struct statfs sf;

	return statfs(view, &sf) == 0 && sf.f_type == FUSE_MAGIC;
}

int ctl_cmd_exec(struct ctl_call *call, struct yl_node **doc)
{
	char node[PATH_MAX], view[PATH_MAX + 16], p[PATH_MAX * 2];
	const char *cfg = call->prof->path;
	size_t n = strlen(cfg), t = strlen(CONFIG_TAIL);
	bool minors[CTL_MAX_GPUS] = { false }, filter;
	int r;

	if (call->argc < 1 || strcmp(call->argv[0], "--") || call->argc < 2)
		return ctl_fail(call, -EINVAL, "usage: mokka-ctl exec [--gpus LIST] -- CMD [ARGS]");
	if (n <= t || strcmp(cfg + n - t, CONFIG_TAIL))
		return ctl_fail(call, -EINVAL, "exec needs the node's layout (--host-root, "
				"--mock-root), not an engine config elsewhere (%s)", cfg);
	snprintf(node, sizeof(node), "%.*s", (int)(n - t), cfg);
	if ((r = gpus_option(call, minors, &filter)) < 0)
		return r;
	snprintf(view, sizeof(view), "%s/run/pcifs", node);
	if (!served(view)) {
		fprintf(stderr, "mokka-ctl exec: %s is not served (mokka-pcifs not running): "
			"the PCI tree is the staged one, writes change nothing\n", view);
		snprintf(view, sizeof(view), "%s", node);
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ctl_fail(call, -errno, "private mount namespace: %s (needs CAP_SYS_ADMIN)",
				strerror(errno));
	/* The root's fd is opened in the new namespace: a bind's source must
	 * be a mount of this namespace. */
	src_skip = call->root ? strlen(call->root) : 0;
	src_shown = call->root ? call->root : "";
	if (call->root && !strncmp(node, call->root, src_skip) && node[src_skip] == '/' &&
	    (src_root = beneath_root(call->root)) < 0)
		return ctl_fail(call, src_root, "%s: %s", call->root, strerror(-src_root));
	static const struct { const char *dir, *name, *root, *src, *pattern; int gpus; } m[] = {
		{ "/sys/bus", "pci", "V", "/sys/bus/pci", NULL, 0 },
		{ "/sys/devices", NULL, "V", "/sys/devices", "pci*", 0 },
		{ "/sys/kernel", "iommu_groups", "V", "/sys/kernel/iommu_groups", NULL, 0 },
		{ "/sys/module", NULL, "V", "/sys/module", NULL, 0 },
		{ "/sys/module", NULL, "N", "/sys/module", "nvidia*", 0 },
		{ "/sys/class", NULL, "N", "/ib/sys/class", "infiniband*", 0 },
		/* Served: the VFs' IB devices too (the staged tree has none). */
		{ "/sys/class", NULL, "V", "/sys/class", "infiniband*", 0 },
		{ "/dev", NULL, "N", "/driver/dev", "nvidia*", 1 },
		{ "/dev", "vfio", "V", "/dev/vfio", NULL, 0 },
		{ "/dev", "infiniband", "N", "/ib/dev/infiniband", NULL, 0 },
		{ "/dev", "infiniband", "V", "/dev/infiniband", NULL, 0 },
		{ "/dev", "infiniband", "V", "/dev/infiniband", NULL, 0 },
		{ "/proc/driver", "nvidia", "N", "/driver/proc/driver/nvidia", NULL, 0 },
		{ "/proc/bus", "pci", "N", "/proc/bus/pci", NULL, 0 },
		/* Served: removed functions gone, the VFs there (view_proc.c). */
		{ "/proc/bus", "pci", "V", "/proc/bus/pci", NULL, 0 },
		{ "/proc", "cmdline", "V", "/proc/cmdline", NULL, 0 },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		const char *root = m[i].root[0] == 'V' ? view : node;

		/* The staged tree has no view-only entries (iommu_groups, vfio, cmdline). */
		snprintf(p, sizeof(p), "%s%s", root, m[i].src);
		if ((r = present(p)) == 0)
			continue;
		if (r < 0)
			return ctl_fail(call, r, "%s: %s (refused, nothing bound)", p, refusal);
		if (m[i].name) {
			if ((r = graft(m[i].dir, m[i].name, p)) < 0)
				return ctl_fail(call, r, "%s/%s from %s: %s", m[i].dir, m[i].name, p,
						refusal);
		} else if ((r = graft_all(call, m[i].dir, p, m[i].pattern,
					  m[i].gpus && filter ? minors : NULL)) < 0)
			return r;
	}
	(void)doc;
	execvp(call->argv[1], call->argv + 1);
	return ctl_fail(call, -errno, "%s: %s", call->argv[1], strerror(errno));
}
