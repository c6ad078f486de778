/* mokka-pcifs: serves the simulated PCI bus at R/run/pcifs over FUSE so
 * that a write to bind, unbind, driver_override, drivers_probe, new_id,
 * remove, rescan, reset or sriov_numvfs takes effect before it returns
 * and fails with the kernel's errno, for any process in any language (no
 * LD_PRELOAD: the kernel routes the syscalls here).  Single-threaded: one
 * request at a time is the model's lock.  No caching (timeouts 0): the
 * next lookup after a write sees its effect.  A stale mount a killed
 * instance left is detached first; SIGTERM unmounts; SIGHUP re-reads the
 * config and the staged tree, keeping the bindings. */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/pcibus/pcifs/pcifs.h"

static struct pcifs_model model, spare;
static struct view V = { .m = &model };
static char conf_path[PATH_MAX], state_path[PATH_MAX], mount_dir[PATH_MAX];
static char config_path[PATH_MAX], overrides_path[PATH_MAX];
static unsigned saved_gen = ~0u;
static volatile sig_atomic_t want_reload;
static bool notify_parent;
static char held_gpus[8192];	/* the NVIDIA functions nvidia holds, for --notify-parent */
static char host_root[PATH_MAX];
/* Writes beneath the host root never go through a link (fileio/beneath.h):
 * the binding file and the default mount point are reached from rootfd;
 * state_rel and mount_rel are their paths below it ("" mount_rel: --mount
 * named a path of the operator's, used as given). */
static int rootfd = -1;
static char state_rel[PATH_MAX], mount_rel[PATH_MAX];
/* fuse_loop_mt serves calls at once (a write waiting for the supervisor's
 * pass must not stall the readers the pass may have); the model, the view
 * and the profile caches are behind this one lock. */
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static bool sync_due;		/* the last write notified the supervisor */
static struct pcifs_sync sync_mark;

static bool busy(const struct pcifs_model *m, int fn)
{
	return pcifs_profile_busy(config_path, overrides_path, m->fns[fn].bdf);
}

/* IOMMU=on|off in the config wins over the profile's pcie_topology.iommu;
 * the GPUs' SR-IOV capability is the profile's. */
static const struct pcifs_node *read_node(void)
{
	static struct pcifs_node node;
	char line[128];
	bool on = pcifs_profile_iommu(config_path);
	FILE *f = fopen(conf_path, "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "IOMMU=", 6))
			on = strncmp(line + 6, "off", 3) != 0;
	if (f)
		fclose(f);
	node.iommu = on;
	pcifs_profile_gpu_sriov(config_path, &node.gpu);
	return &node;
}

/* The supervisor re-runs its pass on SIGHUP: CDI spec and NFD features
 * follow a GPU leaving or joining nvidia, before the write returns
 * (sync.c; the surfaces are marked before the signal). */
static void notify(void)
{
	char now[sizeof(held_gpus)];
	size_t off = 0;

	for (int i = 0; i < model.nfns && off + 20 < sizeof(now); i++) {
		const struct pcifs_fn *f = &model.fns[i];

		if (f->vendor == 0x10de && f->pf < 0 && f->present && f->driver >= 0 &&
		    !strcmp(model.drv[f->driver].name, "nvidia"))
			off += (size_t)snprintf(now + off, sizeof(now) - off, "%s ", f->bdf);
	}
	now[off] = '\0';
	if (!strcmp(now, held_gpus))
		return;
	if (held_gpus[0] && notify_parent && getppid() != 1) {
		pcifs_sync_mark(host_root, &sync_mark);
		sync_mark.gpus = pcifs_profile_held_gpus(config_path, &model);
		sync_due = kill(getppid(), SIGHUP) == 0;
	}
	snprintf(held_gpus, sizeof(held_gpus), "%s", now);
}

static void persist(void)
{
	int r;

	if (model.gen == saved_gen)
		return;
	if ((r = pcifs_state_write(&model, rootfd, state_rel)) < 0) {
		char why[PATH_MAX + 256];

		beneath_explain(rootfd, host_root, state_rel, r, why, sizeof(why));
		log_warn("%s: write: %s (refused, not written through)", state_path, why);
	} else
		saved_gen = model.gen;
	notify();
}

static void reload_now(void)
{
	int r;

	want_reload = 0;
	if ((r = pcifs_load(&spare, rootfd, V.sys + V.rootlen, read_node())) < 0)
		log_warn("reload: %s: %s (serving what loaded)", V.sys, strerror(-r));
	spare.busy = busy;
	pcifs_carry(&spare, &model);
	pcifs_model_free(&model);
	model = spare;
	memset(&spare, 0, sizeof(spare));
	model.gen++;
	persist();
	log_info("reloaded: %d functions, IOMMU %s", model.nfns, model.iommu ? "on" : "off");
}

static int resolve(const char *path, struct view_node *n)
{
	if (want_reload)
		reload_now();
	return view_resolve(&V, path[0] == '/' ? path + 1 : path, n);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	static const mode_t types[] = { [V_DIR] = S_IFDIR, [V_LINK] = S_IFLNK, [V_ATTR] = S_IFREG,
					[V_PASS] = S_IFREG, [V_CHR] = S_IFCHR };
	struct view_node n;
	struct stat bs;
	int r = resolve(path, &n), fd;

	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	st->st_mode = types[n.kind] | n.mode;
	st->st_nlink = n.kind == V_DIR ? 2 : 1;
	st->st_rdev = n.rdev;
	st->st_size = n.kind == V_LINK ? (off_t)strlen(n.path) : n.kind == V_ATTR ? 4096 : 0;
	if (n.kind == V_PASS && (fd = view_open_file(&V, n.path, O_PATH)) >= 0) {
		if (fstat(fd, &bs) == 0)
			st->st_size = bs.st_size;
		close(fd);
	}
	return 0;
}

static int op_readlink(const char *path, char *buf, size_t len)
{
	struct view_node n;
	int r = resolve(path, &n);

	if (r < 0)
		return r;
	if (n.kind != V_LINK)
		return -EINVAL;
	snprintf(buf, len, "%s", n.path);
	return 0;
}

struct lister {
	void *buf;
	fuse_fill_dir_t filler;
};

static int fill(void *ctx, const char *name, const struct view_node *n)
{
	struct lister *l = ctx;

	return l->filler(l->buf, name, NULL, 0, 0) ? -ENOMEM : 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct lister l = { buf, filler };
	struct view_node n;
	const char *p = path[0] == '/' ? path + 1 : path;
	int r = resolve(path, &n);

	if (r < 0)
		return r;
	if (n.kind != V_DIR)
		return -ENOTDIR;
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	return view_list(&V, p, &n, fill, &l);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct view_node n;
	int acc = fi->flags & O_ACCMODE, r = resolve(path, &n), fd;

	if (r < 0)
		return r;
	fi->direct_io = 1;
	fi->fh = 0;
	if ((acc != O_WRONLY && !(n.mode & 0444)) || (acc != O_RDONLY && !(n.mode & 0222)))
		return -EACCES;
	if (n.kind == V_PASS) {
		if (acc != O_RDONLY)
			return -EACCES;	/* the staged files are pcibus's */
		if ((fd = view_open_file(&V, n.path, O_RDONLY)) < 0)
			return fd;
		fi->fh = (uint64_t)fd + 1;
	} else if (n.kind != V_ATTR)
		return -EACCES;
	return 0;
}

static int op_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	/* One page per attribute, as sysfs; proc/bus/pci/devices holds a
	 * line (< 400 bytes) per function.  fuse_loop serves one call at a time. */
	static char tmp[(PCIFS_MAX_FNS + 1) * 400];
	struct view_node n;
	size_t cap;
	ssize_t k;
	int r;

	if (fi->fh) {
		k = pread((int)fi->fh - 1, buf, len, off);
		return k < 0 ? -errno : (int)k;
	}
	if ((r = resolve(path, &n)) < 0)
		return r;
	cap = n.attr == A_PROC_DEVICES ? sizeof(tmp) : 8192;
	if ((k = view_read_attr(&V, &n, tmp, cap)) < 0)
		return (int)k;
	if ((size_t)k > cap)
		k = (ssize_t)cap;
	if (off >= k)
		return 0;
	if (len > (size_t)(k - off))
		len = (size_t)(k - off);
	memcpy(buf, tmp + off, len);
	return (int)len;
}

/* One write(2), one store: as sysfs, each call is applied whole. */
static int op_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct view_node n;
	ssize_t k;
	int r = resolve(path, &n);

	if (r < 0)
		return r;
	if (len > 4096)
		return -E2BIG;
	k = view_write_attr(&V, &n, buf, len);
	persist();
	return (int)k;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct view_node n;
	int r = resolve(path, &n);

	if (r < 0)
		return r;
	return n.kind == V_ATTR && (n.mode & 0222) ? 0 : -EACCES;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	if (fi->fh)
		close((int)fi->fh - 1);
	return 0;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	return NULL;
}

/* Every call under the lock; a write that notified the supervisor waits
 * for the CDI spec and NFD features without it. */
#define LOCKED(call) do { int r_; pthread_mutex_lock(&big); r_ = (call); \
	pthread_mutex_unlock(&big); return r_; } while (0)

static int l_getattr(const char *p, struct stat *st, struct fuse_file_info *fi)
{
	LOCKED(op_getattr(p, st, fi));
}

static int l_readlink(const char *p, char *buf, size_t len)
{
	LOCKED(op_readlink(p, buf, len));
}

static int l_readdir(const char *p, void *buf, fuse_fill_dir_t filler, off_t off,
		     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	LOCKED(op_readdir(p, buf, filler, off, fi, flags));
}

static int l_open(const char *p, struct fuse_file_info *fi)
{
	LOCKED(op_open(p, fi));
}

static int l_read(const char *p, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	LOCKED(op_read(p, buf, len, off, fi));
}

static int l_truncate(const char *p, off_t size, struct fuse_file_info *fi)
{
	LOCKED(op_truncate(p, size, fi));
}

static int l_write(const char *p, const char *buf, size_t len, off_t off,
		   struct fuse_file_info *fi)
{
	struct pcifs_sync mark;
	bool wait;
	int r;

	pthread_mutex_lock(&big);
	sync_due = false;
	r = op_write(p, buf, len, off, fi);
	wait = sync_due;
	mark = sync_mark;
	sync_due = false;
	pthread_mutex_unlock(&big);
	if (wait && pcifs_sync_wait(host_root, &mark, PCIFS_SYNC_MS) < 0)
		log_warn("%s: the CDI spec / NFD features did not follow within %d ms "
			 "(no supervisor pass?); returning", p, PCIFS_SYNC_MS);
	return r;
}

static const struct fuse_operations ops = {
	.getattr = l_getattr, .readlink = l_readlink, .readdir = l_readdir,
	.open = l_open, .read = l_read, .write = l_write, .truncate = l_truncate,
	.release = op_release, .init = op_init,
};

static void on_hup(int sig)
{
	want_reload = 1;
}

static const char usage[] =
	"Usage: mokka-pcifs --mock-root R [--host-root DIR] [--mount DIR]\n"
	"Serves the staged PCI tree of R with the kernel's write semantics at\n"
	"<host-root>R" PCIFS_MOUNT " (FUSE); bindings go to R" PCIFS_STATE ".\n"
	"IOMMU=on|off in R" PCIFS_CONF "; SIGHUP re-reads it and the tree.\n\n"
	"  --mock-root R     host path of the mock tree (/var/lib/nvml-mock)\n"
	"  --host-root DIR   root that host paths live under (default /)\n"
	"  --mount DIR       mount point (default <host-root>R" PCIFS_MOUNT ")\n"
	"  --notify-parent   SIGHUP the parent (the supervisor) when a GPU leaves\n"
	"                    or joins nvidia; the write returns once the CDI spec\n"
	"                    and the NFD features followed (at most 10 s)\n"
	"  --help, --version\n";

static int parse_args(int argc, char **argv)
{
	const char *host = "", *mock = NULL, *mnt = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--host-root") && i + 1 < argc)
			host = strcmp(argv[++i], "/") ? argv[i] : "";
		else if (!strcmp(argv[i], "--mock-root") && i + 1 < argc)
			mock = argv[++i];
		else if (!strcmp(argv[i], "--mount") && i + 1 < argc)
			mnt = argv[++i];
		else if (!strcmp(argv[i], "--notify-parent"))
			notify_parent = true;
		else if (!strcmp(argv[i], "--version")) {
			printf("mokka-pcifs %s\n", MOKKA_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!mock || mock[0] != '/' || strstr(mock, "..")) {
		fputs(usage, stderr);
		return 2;
	}
	snprintf(host_root, sizeof(host_root), "%s", host);
	snprintf(V.sys, sizeof(V.sys), "%s%s/sys", host, mock);
	snprintf(V.ibsys, sizeof(V.ibsys), "%s%s/ib/sys", host, mock);
	snprintf(V.ibdev, sizeof(V.ibdev), "%s%s/ib/dev/infiniband", host, mock);
	snprintf(V.procpci, sizeof(V.procpci), "%s%s/proc/bus/pci", host, mock);
	snprintf(conf_path, sizeof(conf_path), "%s%s" PCIFS_CONF, host, mock);
	snprintf(state_path, sizeof(state_path), "%s%s" PCIFS_STATE, host, mock);
	snprintf(state_rel, sizeof(state_rel), "%s" PCIFS_STATE, mock);
	snprintf(config_path, sizeof(config_path), "%s%s" PCIFS_ENGINE_CONFIG, host, mock);
	snprintf(overrides_path, sizeof(overrides_path), "%s%s" PCIFS_OVERRIDES, host, mock);
	if (mnt)
		snprintf(mount_dir, sizeof(mount_dir), "%s", mnt);
	else {
		snprintf(mount_dir, sizeof(mount_dir), "%s%s" PCIFS_MOUNT, host, mock);
		snprintf(mount_rel, sizeof(mount_rel), "%s" PCIFS_MOUNT, mock);
	}
	return -1;
}

/* The mount point, made (its leaf) beneath the host root and returned as
 * its parent directory (an O_PATH fd) and its leaf: a link planted at it
 * or above it is refused and named, nothing mounted.  The mount goes
 * onto the directory these name (mount.c), never a path looked up again.
 * --mount's path (the operator's) is used as given.  The parent fd, or -1
 * logged. */
static int mount_point(const char **leaf)
{
	static char dir[PATH_MAX];
	char why[PATH_MAX + 256], *slash;
	int r, fd;

	if (!mount_rel[0]) {
		if (mkdir(mount_dir, 0755) < 0 && errno != EEXIST) {
			log_error("%s: mkdir: %s", mount_dir, strerror(errno));
			return -1;
		}
		snprintf(dir, sizeof(dir), "%s", mount_dir);
		while ((slash = strrchr(dir, '/')) && slash > dir && !slash[1])
			*slash = '\0';	/* a trailing '/' */
		slash = strrchr(dir, '/');
		*leaf = slash ? slash + 1 : dir;
		if (slash == dir)
			fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		else if (slash) {
			*slash = '\0';
			fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else
			fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			log_error("%s: %s", mount_dir, strerror(errno));
		return fd;
	}
	r = beneath_mkdir(rootfd, mount_rel, 0755);
	fd = r == 0 || r == -EEXIST ? beneath_parent(rootfd, mount_rel, leaf) : r;
	if (fd >= 0 && (r = beneath_open(rootfd, mount_rel, O_PATH | O_DIRECTORY, 0)) < 0) {
		close(fd);
		fd = r;
	} else if (fd >= 0)
		close(r);
	if (fd < 0) {
		beneath_explain(rootfd, host_root, mount_rel, fd, why, sizeof(why));
		log_error("%s: mount point refused: %s (nothing mounted)", mount_dir, why);
		return -1;
	}
	return fd;
}

/* unlink of the binding file through its directory's fd: a link there
 * (someone else's) is refused and left, -ELOOP; absent: 0. */
static int remove_state(void)
{
	const char *leaf;
	struct stat st;
	int dfd = beneath_parent(rootfd, state_rel, &leaf), r = 0;

	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		r = -ELOOP;
	else if (unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT)
		r = -errno;
	close(dfd);
	return r;
}

static void read_cmdline(void)
{
	FILE *f = fopen("/proc/cmdline", "re");

	if (f && fgets(V.cmdline, sizeof(V.cmdline), f))
		V.cmdline[strcspn(V.cmdline, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* Mounts on the checked mount point by descriptor and hands the FUSE fd
 * to libfuse as /dev/fd/N (libfuse then mounts nothing itself).  0, or
 * -1 logged with nothing left mounted. */
static int mount_view(struct fuse *f, struct pcifs_mount *m)
{
	char why[256], dev[32];
	const char *leaf = NULL;
	int parent = mount_point(&leaf), r;

	if (parent < 0)
		return -1;
	r = pcifs_mount_at(parent, leaf, m, why, sizeof(why));
	close(parent);
	if (r < 0) {
		log_error("%s: cannot mount: %s", mount_dir, why);
		return -1;
	}
	snprintf(dev, sizeof(dev), "/dev/fd/%d", m->fuse_fd);
	if ((r = pcifs_mount_watch(m)) < 0)
		log_error("%s: unmount watcher: %s", mount_dir, strerror(-r));
	else if (fuse_mount(f, dev) < 0)
		log_error("%s: libfuse refused the mounted fd %s", mount_dir, dev);
	else
		return 0;
	close(m->fuse_fd);
	pcifs_mount_release(m);
	return -1;
}

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct pcifs_mount mnt = { -1, -1, -1, -1 };
	struct fuse *f = NULL;
	sigset_t stop, old;
	int r, r2;

	/* A stop that comes while we mount (the supervisor's teardown right
	 * after the first pass) would kill us with the mount in place, and
	 * Discard would find its mount point busy: it waits until the
	 * handlers that unmount are in place. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, &old);
	log_setup_env("mokka-pcifs");
	if ((r = parse_args(argc, argv)) >= 0)
		return r;
	/* The supervisor's SIGKILL on its death would leave the mount; a
	 * SIGTERM unmounts (the watcher covers a SIGKILL anyway). */
	if (getppid() != 1)
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if ((rootfd = beneath_root(host_root)) < 0) {
		log_error("%s: %s", host_root[0] ? host_root : "/", strerror(-rootfd));
		return 1;
	}
	V.in_root = true;
	V.rootfd = rootfd;
	V.rootlen = strlen(host_root);
	read_cmdline();
	if ((r = pcifs_load(&model, rootfd, V.sys + V.rootlen, read_node())) < 0)
		log_warn("%s: %s (serving what loaded)", V.sys, strerror(-r));
	model.busy = busy;
	persist();
	pcifs_stale_unmount(mount_dir);
	if (!(f = fuse_new(&args, &ops, sizeof(ops), NULL)) || mount_view(f, &mnt) < 0) {
		if (!f)
			log_error("%s: fuse_new failed", mount_dir);
		else
			fuse_destroy(f);
		fuse_opt_free_args(&args);
		pcifs_model_free(&model);
		return 1;
	}
	fuse_set_signal_handlers(fuse_get_session(f));
	signal(SIGHUP, on_hup);
	sigprocmask(SIG_SETMASK, &old, NULL);
	log_info("serving %d PCI functions at %s (IOMMU %s)", model.nfns, mount_dir,
		 model.iommu ? "on" : "off");
	r = fuse_loop_mt(f, 0);
	fuse_remove_signal_handlers(fuse_get_session(f));
	if ((r2 = pcifs_mount_release(&mnt)) < 0)
		log_warn("%s: unmount: %s", mount_dir, strerror(-r2));
	fuse_unmount(f);
	fuse_destroy(f);
	fuse_opt_free_args(&args);
	pcifs_model_free(&model);
	/* The binding file is only true while we serve. */
	if ((r2 = remove_state()) < 0) {
		char why[PATH_MAX + 256];

		beneath_explain(rootfd, host_root, state_rel, r2, why, sizeof(why));
		log_warn("%s: unlink: %s (left)", state_path, why);
	}
	log_info("unmounted %s", mount_dir);
	return r ? 1 : 0;
}
