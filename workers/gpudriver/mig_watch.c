/* Between reconciles: a thread of the gpudriver worker keeps the live MIG
 * access nodes, the capability files and the MIG CDI spec equal to the
 * device state store, woken by inotify on the store's directory (any
 * process's write renames a document into it) and every 2 s regardless.
 * Each pass is idempotent; Stage renders the same from the store, so a
 * pass that races a Publish is corrected by the next one. */
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
	char mock[256];		/* R as a host path */
	char store[4096];	/* the store as this process reaches it */
	unsigned caps_major;
	int ndev;
	struct watch_dev dev[STATE_MAX_DEVICES];
} w = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int full(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* root + mock + fmt... */
static int full(char *buf, size_t len, const char *fmt, ...)
{
	char rel[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(rel))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s%s%s", w.root, w.mock, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int write_text(const char *path, const char *text)
{
	char tmp[4200], cur[256];
	int fd, r = 0;
	ssize_t n;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {	/* unchanged: no churn */
		n = read(fd, cur, sizeof(cur) - 1);
		close(fd);
		if (n >= 0 && (cur[n] = '\0', !strcmp(cur, text)))
			return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.mig-tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		r = -EIO;
	fchmod(fd, 0444);
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

static void mkdirs(const char *path)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[4200];

	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
	closedir(d);
	rmdir(path);
}

/* ---- one pass --------------------------------------------------------- */

struct want {
	bool node[3 + DS_CAPS_GPUS * DS_MAX_GI * (1 + DS_MAX_CI)];
};

static void sync_nodes(const struct want *want)
{
	char dir[4200], path[4300];
	struct dirent *e;
	DIR *d;

	if (full(dir, sizeof(dir), GD_DEV "/nvidia-caps") < 0 || !(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {	/* instances gone */
		unsigned m;
		char end;

		if (sscanf(e->d_name, "nvidia-cap%u%c", &m, &end) == 1 && m >= 3 &&
		    m < sizeof(want->node) && !want->node[m]) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	for (unsigned m = 3; m < sizeof(want->node); m++) {	/* instances new */
		struct stat st;

		if (!want->node[m])
			continue;
		snprintf(path, sizeof(path), "%s/nvidia-cap%u", dir, m);
		if (lstat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
		    st.st_rdev == makedev(w.caps_major, m))
			continue;
		unlink(path);
		if (mknod(path, S_IFCHR | CAP_MODE, makedev(w.caps_major, m)) == 0)
			chmod(path, CAP_MODE);
	}
}

static void sync_caps(const struct watch_dev *dv, const struct ds_gpu *g)
{
	char dir[4200], path[4400], text[128];
	struct dirent *e;
	DIR *d;

	if (full(dir, sizeof(dir), GD_PROC_NVIDIA "/capabilities/gpu%d/mig", dv->minor) < 0)
		return;
	if ((d = opendir(dir))) {	/* gi<X> of instances gone */
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
			mkdir(path, 0755);
			snprintf(path, sizeof(path), "%s/gi%u/ci%u/access", dir, gi->id, gi->ci[j].id);
			snprintf(text, sizeof(text), "DeviceFileMinor: %u\nDeviceFileMode: %u\n"
				 "DeviceFileModify: 1\n", m, (unsigned)CAP_MODE);
			write_text(path, text);
		}
	}
}

/* A host path with its links resolved inside the host root, as a chroot
 * sees them (<root>/var/run is usually a link to "/run": the kernel would
 * follow it out of the root).  Missing components are taken verbatim. */
static int resolve(const char *path, char *out, size_t len)
{
	char res[4096] = "", todo[4096], target[4096], full[8300];
	size_t pos = 0;
	int links = 0;

	snprintf(todo, sizeof(todo), "%s", path);
	while (todo[pos]) {
		size_t n, l;
		ssize_t t;

		while (todo[pos] == '/')
			pos++;
		n = strcspn(todo + pos, "/");
		if (!n)
			break;
		l = strlen(res);
		snprintf(res + l, sizeof(res) - l, "/%.*s", (int)n, todo + pos);
		pos += n;
		snprintf(full, sizeof(full), "%s%s", w.root, res);
		if ((t = readlink(full, target, sizeof(target) - 1)) < 0)
			continue;
		if (++links > 40)
			return -ELOOP;
		target[t] = '\0';
		if (target[0] == '/')
			res[0] = '\0';
		else
			res[l] = '\0';
		snprintf(full, sizeof(full), "%s%s", target, todo + pos);
		snprintf(todo, sizeof(todo), "%s", full);
		pos = 0;
	}
	return snprintf(out, len, "%s%s", w.root, res[0] ? res : "/") < (int)len ? 0 : -ENAMETOOLONG;
}

/* The MIG CDI spec: its own common edits (a container given only a MIG
 * device gets the control nodes, the library, nvidia-smi and the config
 * directory with the shared state), then one entry per MIG device by
 * "<gpu index>:<MIG device index>" (nvidia-ctk's names) and by MIG UUID. */
static void write_spec(const struct ds_gpu *gs, int *count)
{
	char path[4200], tmp[4300], dev[512], uuid[64];
	FILE *f;

	if (resolve(GD_MIG_CDI_SPEC, path, sizeof(path)) < 0)
		return;
	*count = 0;
	for (int i = 0; i < w.ndev; i++)
		for (unsigned k = 0; gs[i].mig_cur && k < gs[i].ngi; k++)
			*count += (int)gs[i].gi[k].nci;
	if (*count == 0) {
		unlink(path);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", path);
	*strrchr(tmp, '/') = '\0';
	if (access(tmp, F_OK) != 0)	/* cri makes it; never make the host's */
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(dev, sizeof(dev), "%s/driver", w.mock);
	if (!(f = fopen(tmp, "w")))
		return;
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
	if (fclose(f) == 0 && rename(tmp, path) == 0)
		chmod(path, 0644);
	else
		unlink(tmp);
}

static int sync_pass(void)
{
	static struct want want;
	static struct ds_gpu gs[STATE_MAX_DEVICES];
	struct ds_store st;
	int count = 0;

	if (!w.active || ds_open(&st, w.store, false) < 0)
		return -ENOENT;
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
	char path[4200];
	int r;

	pthread_mutex_lock(&w.lock);
	w.active = false;	/* the thread writes nothing more until a Stage */
	snprintf(w.root, sizeof(w.root), "%s", ctx->host.root);
	r = resolve(GD_MIG_CDI_SPEC, path, sizeof(path));
	pthread_mutex_unlock(&w.lock);
	if (r < 0)
		return r;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}
