/* Between reconciles: a thread of the gpudriver worker keeps the live MIG
 * access nodes, the capability files and the MIG CDI spec equal to the
 * device state store, woken by inotify on the store's directory (any
 * process's write renames a document into it) and every 2 s regardless.
 * Each pass is idempotent; Stage renders the same from the store, so a
 * pass that races a Publish is corrected by the next one.  Every path is
 * resolved beneath the host root (fileio/beneath.h): a link planted there
 * is never followed nor removed through (the CDI spec's directory is
 * resolved as a chroot would, since /var/run is a link to /run). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/gpudriver/mig.h"

#define RESYNC_MS 2000
#define CAP_MODE 0444

struct watch_dev {
	int index, minor;
	char uuid[64];
};

static struct {
	pthread_mutex_t lock;
	bool started;
	bool active;		/* staged and not revoked: the thread may write */
	char root[4096];	/* host root ("" for /) */
	int rootfd;		/* its fd during a pass, else -1 */
	char mock[256];		/* R as a host path */
	char store[4096];	/* the store as this process reaches it */
	unsigned caps_major;
	int ndev;
	struct watch_dev dev[STATE_MAX_DEVICES];
} w = { .lock = PTHREAD_MUTEX_INITIALIZER, .rootfd = -1 };

static int rel(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* mock + fmt...: a host path, resolved beneath w.rootfd */
static int rel(char *buf, size_t len, const char *fmt, ...)
{
	char tail[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tail))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s%s", w.mock, tail);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A directory beneath the root, to read (O_RDONLY) or to write in. */
static int dir_at(const char *path, int flags)
{
	int fd = beneath_open(w.rootfd, path, flags | O_DIRECTORY, 0);

	if (fd == -ELOOP || fd == -EXDEV)
		host_refused(w.root, w.rootfd, path, fd);
	return fd;
}

static int write_text(const char *path, const char *text)
{
	char cur[256];
	const char *leaf;
	int dfd = beneath_parent(w.rootfd, path, &leaf), fd, r;
	ssize_t n;

	if (dfd < 0)
		return host_refused(w.root, w.rootfd, path, dfd);
	if ((fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
		n = read(fd, cur, sizeof(cur) - 1);	/* unchanged: no churn */
		close(fd);
		if (n >= 0 && (cur[n] = '\0', !strcmp(cur, text))) {
			close(dfd);
			return 0;
		}
	}
	r = beneath_replace(dfd, leaf, text, strlen(text), CAP_MODE, 0);
	if (r == -ELOOP)
		host_refused(w.root, w.rootfd, path, r);
	close(dfd);
	return r;
}

static void mkdirs(const char *path)
{
	int r = beneath_mkdirs(w.rootfd, path, 0755);

	if (r == -ELOOP || r == -EXDEV)
		host_refused(w.root, w.rootfd, path, r);
}

/* rm -r, bottom up, never through a link (a link is removed, not its
 * target's contents). */
static int rm_entry(const struct beneath_entry *e, void *arg)
{
	(void)arg;
	if (S_ISDIR(e->st->st_mode) && !e->post)
		return 0;
	unlinkat(e->dirfd, e->name, S_ISDIR(e->st->st_mode) ? AT_REMOVEDIR : 0);
	return 0;
}

static void rm_tree(const char *path)
{
	int r = beneath_walk(w.rootfd, path, true, rm_entry, NULL);

	if (r == -ELOOP)	/* the top itself is a link: removed, not followed */
		beneath_unlink(w.rootfd, path, 0);
	else if (r == -EXDEV)
		host_refused(w.root, w.rootfd, path, r);
}

/* ---- one pass --------------------------------------------------------- */

struct want {
	bool node[3 + DS_CAPS_GPUS * DS_MAX_GI * (1 + DS_MAX_CI)];
};

/* A node Stage makes for good (gd_caps: IMEX's nvidia-cap512 lies in the
 * MIG minors' range), never a MIG instance's to remove. */
static bool fixed_cap(unsigned m)
{
	for (size_t i = 0; i < gd_ncaps; i++)
		if (gd_caps[i].minor == m)
			return true;
	return false;
}

static void sync_nodes(const struct want *want)
{
	char dir[1200], name[32];
	struct dirent *e;
	DIR *d;
	int dfd;

	if (rel(dir, sizeof(dir), GD_DEV "/nvidia-caps") < 0 || (dfd = dir_at(dir, O_RDONLY)) < 0)
		return;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {	/* instances gone */
		unsigned m;
		char end;

		if (sscanf(e->d_name, "nvidia-cap%u%c", &m, &end) == 1 && m >= 3 &&
		    m < sizeof(want->node) && !want->node[m] && !fixed_cap(m))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	for (unsigned m = 3; m < sizeof(want->node); m++) {	/* instances new */
		struct stat st;

		if (!want->node[m])
			continue;
		snprintf(name, sizeof(name), "nvidia-cap%u", m);
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) &&
		    st.st_rdev == makedev(w.caps_major, m))
			continue;
		unlinkat(dirfd(d), name, 0);
		/* The node just made in a directory we resolved: chmod past the
		 * umask. */
		if (mknodat(dirfd(d), name, S_IFCHR | CAP_MODE, makedev(w.caps_major, m)) == 0)
			fchmodat(dirfd(d), name, CAP_MODE, AT_SYMLINK_NOFOLLOW);
	}
	closedir(d);
}

static void sync_caps(const struct watch_dev *dv, const struct ds_gpu *g)
{
	char dir[1200], path[1400], text[128];
	struct dirent *e;
	DIR *d;
	int dfd;

	if (rel(dir, sizeof(dir), GD_PROC_NVIDIA "/capabilities/gpu%d/mig", dv->minor) < 0)
		return;
	if ((dfd = dir_at(dir, O_RDONLY)) >= 0 && !(d = fdopendir(dfd)))
		close(dfd);
	else if (dfd >= 0) {	/* gi<X> of instances gone */
		while ((e = readdir(d))) {
			unsigned id;
			char end;

			if (sscanf(e->d_name, "gi%u%c", &id, &end) == 1 &&
			    !(g->mig_cur && ds_gi_find((struct ds_gpu *)g, id))) {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				rm_tree(path);
			}
		}
		closedir(d);
	}
	for (unsigned i = 0; g->mig_cur && i < g->ngi; i++) {
		const struct ds_gi *gi = &g->gi[i];

		snprintf(path, sizeof(path), "%s/gi%u", dir, gi->id);
		mkdirs(path);
		snprintf(path, sizeof(path), "%s/gi%u/access", dir, gi->id);
		snprintf(text, sizeof(text), "DeviceFileMinor: %u\nDeviceFileMode: %u\nDeviceFileModify: 1\n",
			 ds_gi_minor((unsigned)dv->minor, gi->id), (unsigned)CAP_MODE);
		write_text(path, text);
		for (unsigned j = 0; j < gi->nci; j++) {
			unsigned m = ds_ci_minor((unsigned)dv->minor, gi->id, gi->ci[j].id);

			snprintf(path, sizeof(path), "%s/gi%u/ci%u", dir, gi->id, gi->ci[j].id);
			mkdirs(path);
			snprintf(path, sizeof(path), "%s/gi%u/ci%u/access", dir, gi->id, gi->ci[j].id);
			snprintf(text, sizeof(text), "DeviceFileMinor: %u\nDeviceFileMode: %u\n"
				 "DeviceFileModify: 1\n", m, (unsigned)CAP_MODE);
			write_text(path, text);
		}
	}
}

/* The CDI spec's directory, resolved as a chroot to the host root sees it
 * (<root>/var/run is usually a link to "/run": the kernel alone would
 * follow it out of the root): an O_PATH fd, its name in *leaf.  cri makes
 * the directory; it is never made here. */
static int spec_dir(int rootfd, const char **leaf)
{
	static const char spec[] = GD_MIG_CDI_SPEC;
	char dir[sizeof(spec)];
	const char *slash = strrchr(spec, '/');

	memcpy(dir, spec, (size_t)(slash - spec));
	dir[slash - spec] = '\0';
	*leaf = slash + 1;
	return beneath_open_in_root(rootfd, dir, O_PATH | O_DIRECTORY, 0);
}

/* The MIG CDI spec: its own common edits (a container given only a MIG
 * device gets the control nodes, the library, nvidia-smi and the config
 * directory with the shared state), then one entry per MIG device by
 * "<gpu index>:<MIG device index>" (nvidia-ctk's names) and by MIG UUID. */
static void write_spec(const struct ds_gpu *gs, int *count)
{
	char dev[512], uuid[64], *text = NULL;
	const char *leaf;
	size_t len = 0;
	int dfd, r;
	FILE *f;

	*count = 0;
	for (int i = 0; i < w.ndev; i++)
		for (unsigned k = 0; gs[i].mig_cur && k < gs[i].ngi; k++)
			*count += (int)gs[i].gi[k].nci;
	if ((dfd = spec_dir(w.rootfd, &leaf)) < 0)
		return;
	if (*count == 0) {
		unlinkat(dfd, leaf, 0);
		close(dfd);
		return;
	}
	snprintf(dev, sizeof(dev), "%s/driver", w.mock);
	if (!(f = open_memstream(&text, &len))) {
		close(dfd);
		return;
	}
	fprintf(f, "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ncontainerEdits:\n  deviceNodes:\n");
	fprintf(f, "  - {path: /dev/nvidiactl, hostPath: %s/dev/nvidiactl}\n", dev);
	fprintf(f, "  - {path: /dev/nvidia-uvm, hostPath: %s/dev/nvidia-uvm}\n", dev);
	fprintf(f, "  - {path: /dev/nvidia-uvm-tools, hostPath: %s/dev/nvidia-uvm-tools}\n", dev);
	fprintf(f, "  mounts:\n"
		"  - {hostPath: %s/usr/lib64/libnvidia-ml.so.1, containerPath: /usr/lib64/libnvidia-ml.so.1, options: [ro, nosuid, nodev, bind]}\n"
		"  - {hostPath: %s/usr/bin/nvidia-smi, containerPath: /usr/bin/nvidia-smi, options: [ro, nosuid, nodev, bind]}\n"
		"  - {hostPath: %s/config, containerPath: /etc/nvml-mock, options: [rw, nosuid, nodev, bind]}\n",
		dev, dev, dev);
	fprintf(f, "  env: [MOCK_NVML_CONFIG=/etc/nvml-mock/config.yaml]\ndevices:\n");
	for (int i = 0; i < w.ndev; i++) {
		unsigned n = 0;

		for (unsigned k = 0; gs[i].mig_cur && k < gs[i].ngi; k++) {
			const struct ds_gi *gi = &gs[i].gi[k];

			for (unsigned j = 0; j < gi->nci; j++, n++) {
				unsigned gm = ds_gi_minor((unsigned)w.dev[i].minor, gi->id);
				unsigned cm = ds_ci_minor((unsigned)w.dev[i].minor, gi->id, gi->ci[j].id);

				ds_mig_uuid(w.dev[i].uuid, gi->id, gi->ci[j].id, gi->ci[j].serial,
					    uuid, sizeof(uuid));
				for (int twice = 0; twice < 2; twice++) {
					if (twice)
						fprintf(f, "- name: %s\n", uuid);
					else
						fprintf(f, "- name: \"%d:%u\"\n", w.dev[i].index, n);
					fprintf(f, "  containerEdits:\n    deviceNodes:\n"
						"    - {path: /dev/nvidia%d, hostPath: %s/dev/nvidia%d}\n"
						"    - {path: /dev/nvidia-caps/nvidia-cap%u, hostPath: %s/dev/nvidia-caps/nvidia-cap%u}\n"
						"    - {path: /dev/nvidia-caps/nvidia-cap%u, hostPath: %s/dev/nvidia-caps/nvidia-cap%u}\n",
						w.dev[i].minor, dev, w.dev[i].minor, gm, dev, gm, cm, dev, cm);
				}
			}
		}
	}
	if (fclose(f) == 0 && (r = beneath_replace(dfd, leaf, text, len, 0644, 0)) == -ELOOP)
		log_error("gpudriver: %s%s is a symbolic link that Mokka did not make: refusing to "
			  "replace it", w.root, GD_MIG_CDI_SPEC);
	free(text);
	close(dfd);
}

static int sync_pass(void)
{
	static struct want want;
	static struct ds_gpu gs[STATE_MAX_DEVICES];
	struct ds_store st;
	int count = 0;

	if (!w.active || (w.rootfd = beneath_root(w.root)) < 0 ||
	    gd_mig_store_open(w.rootfd, w.root, w.mock, false, &st) < 0) {
		if (w.rootfd >= 0)
			close(w.rootfd);
		w.rootfd = -1;
		return -ENOENT;
	}
	memset(&want, 0, sizeof(want));
	for (int i = 0; i < w.ndev; i++) {
		struct ds_gpu *g = &gs[i];

		if (ds_load(&st, w.dev[i].uuid, g) < 0 || !(g->set & DS_MIG))
			memset(g, 0, sizeof(*g));
		if (w.dev[i].minor < 0 || w.dev[i].minor >= DS_CAPS_GPUS)
			continue;
		for (unsigned k = 0; g->mig_cur && k < g->ngi; k++) {
			want.node[ds_gi_minor((unsigned)w.dev[i].minor, g->gi[k].id)] = true;
			for (unsigned j = 0; j < g->gi[k].nci; j++)
				want.node[ds_ci_minor((unsigned)w.dev[i].minor, g->gi[k].id,
						      g->gi[k].ci[j].id)] = true;
		}
		sync_caps(&w.dev[i], g);
	}
	sync_nodes(&want);
	write_spec(gs, &count);
	ds_close(&st);
	close(w.rootfd);
	w.rootfd = -1;
	return count;
}

int gd_mig_sync_now(void)
{
	int r;

	pthread_mutex_lock(&w.lock);
	r = sync_pass();
	pthread_mutex_unlock(&w.lock);
	return r;
}

static void *watch_main(void *arg)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), wd = -1;
	char buf[4096] __attribute__((aligned(8)));

	(void)arg;
	for (;;) {
		struct pollfd p = { .fd = in, .events = POLLIN };

		if (in >= 0 && wd < 0) {
			pthread_mutex_lock(&w.lock);
			wd = inotify_add_watch(in, w.store, IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE);
			pthread_mutex_unlock(&w.lock);
		}
		if (in >= 0 && poll(&p, 1, RESYNC_MS) > 0) {
			ssize_t n = read(in, buf, sizeof(buf));

			for (ssize_t o = 0; n > 0 && o < n; ) {
				const struct inotify_event *e = (const void *)(buf + o);

				if (e->mask & IN_IGNORED)
					wd = -1;	/* the store was removed: watch it again */
				o += (ssize_t)(sizeof(*e) + e->len);
			}
		} else if (in < 0) {
			usleep(RESYNC_MS * 1000);
		}
		gd_mig_sync_now();
	}
	return NULL;
}

void gd_mig_watch(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_mutex_lock(&w.lock);
	snprintf(w.root, sizeof(w.root), "%s", ctx->host.root);
	snprintf(w.mock, sizeof(w.mock), "%s", s->mock_root);
	gd_mig_store_dir(&ctx->host, s->mock_root, w.store, sizeof(w.store));
	w.caps_major = c->caps_major;
	w.active = true;
	w.ndev = s->num_devices < STATE_MAX_DEVICES ? s->num_devices : STATE_MAX_DEVICES;
	for (int i = 0; i < w.ndev; i++) {
		w.dev[i].index = s->devices[i].index;
		w.dev[i].minor = s->devices[i].minor;
		snprintf(w.dev[i].uuid, sizeof(w.dev[i].uuid), "%s", s->devices[i].uuid);
	}
	if (!w.started && !getenv("MOKKA_MIG_NO_WATCH")) {
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		w.started = pthread_create(&t, &a, watch_main, NULL) == 0;
		pthread_attr_destroy(&a);
		if (!w.started)
			log_warn("gpudriver: no MIG watcher thread; MIG surfaces follow at Stage only");
	}
	pthread_mutex_unlock(&w.lock);
}

int gd_mig_revoke(struct sim_ctx *ctx)
{
	const char *leaf;
	int rootfd, dfd, r = 0;

	pthread_mutex_lock(&w.lock);
	w.active = false;	/* the thread writes nothing more until a Stage */
	snprintf(w.root, sizeof(w.root), "%s", ctx->host.root);
	pthread_mutex_unlock(&w.lock);
	if ((rootfd = beneath_root(ctx->host.root)) < 0)
		return rootfd;
	if ((dfd = spec_dir(rootfd, &leaf)) >= 0) {
		r = unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT ? -errno : 0;
		close(dfd);
	}
	close(rootfd);
	return r;
}
