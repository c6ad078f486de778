/* The driver's MIG surfaces, following the instances in the shared device
 * state store (devstate/, R/driver/config/state):
 *
 *   proc/driver/nvidia-caps/mig-minors      every minor the driver assigns
 *   dev/nvidia-caps/nvidia-cap<minor>       one per GPU and compute instance
 *   proc/driver/nvidia/capabilities/gpu<N>/mig/gi<X>/access, .../ci<Y>/access
 *   /var/run/cdi/mokka-mig.yaml              one CDI device per MIG device
 *
 * Stage renders them from the store (and makes the store, applying a
 * declared MIG layout to a GPU that has no document yet: mig_layout.c).
 * Between reconciles a thread of the worker watches the store (inotify,
 * and a resync every 2 s) and brings the live tree and the CDI spec to
 * what the store says, so an instance any process creates or destroys
 * shows within moments.  Revoke removes the CDI spec. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devstate/devstate.h"
#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/gpudriver/mig.h"

#define CAP_MODE 0444		/* the driver's mode for MIG access nodes */
#define MIG_MINORS GD_DRIVER "/proc/driver/nvidia-caps/mig-minors"
#define CAPS_PROC GD_PROC_NVIDIA "/capabilities"

/* ---- what the store says ------------------------------------------------ */

int gd_mig_store_dir(const struct host *h, const char *mock_root, char *out, size_t len)
{
	char rel[512];
	int r;

	if ((r = host_mock_path(mock_root, rel, sizeof(rel), GD_CONFIG "/state")) < 0)
		return r;
	return host_path(h, rel, out, len);
}

int gd_mig_store_open(int rootfd, const char *root, const char *mock_root, bool create,
		      struct ds_store *st)
{
	char rel[512], path[64];
	int fd, r;

	if ((r = host_mock_path(mock_root, rel, sizeof(rel), GD_CONFIG "/state")) < 0)
		return r;
	if (create && (r = beneath_mkdirs(rootfd, rel, 0755)) < 0)
		return host_refused(root, rootfd, rel, r);
	if ((fd = beneath_open(rootfd, rel, O_PATH | O_DIRECTORY, 0)) < 0)
		return host_refused(root, rootfd, rel, fd);
	/* ds_open takes a path: the directory's own, through /proc. */
	if ((r = beneath_fdpath(fd, NULL, path, sizeof(path))) == 0)
		r = ds_open(st, path, create);
	close(fd);
	return r;
}

static int store_open(const struct host *h, const char *mock_root, bool create,
		      struct ds_store *st)
{
	int rootfd = beneath_root(h->root), r;

	if (rootfd < 0)
		return rootfd;
	r = gd_mig_store_open(rootfd, h->root, mock_root, create, st);
	close(rootfd);
	return r;
}

/* ---- Stage ------------------------------------------------------------ */

static int render_minors(char **out)
{
	size_t cap = 200000, k = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	k += (size_t)snprintf(buf + k, cap - k, "config 1\nmonitor 2\n");
	for (unsigned g = 0; g < DS_CAPS_GPUS; g++)
		for (unsigned i = 0; i < DS_MAX_GI; i++) {
			k += (size_t)snprintf(buf + k, cap - k, "gpu%u/gi%u/access %u\n", g, i,
					      ds_gi_minor(g, i));
			for (unsigned c = 0; c < DS_MAX_CI; c++)
				k += (size_t)snprintf(buf + k, cap - k, "gpu%u/gi%u/ci%u/access %u\n",
						      g, i, c, ds_ci_minor(g, i, c));
		}
	*out = buf;
	return (int)k;
}

static int access_text(char *buf, size_t len, unsigned minor)
{
	return snprintf(buf, len, "DeviceFileMinor: %u\nDeviceFileMode: %u\nDeviceFileModify: 1\n",
			minor, (unsigned)CAP_MODE);
}

/* One GPU's instances into the (shadow) tree, through the host helpers. */
static int stage_gpu(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		     int gpu, const struct ds_gpu *g, struct sim_errors *errs)
{
	char path[512], text[128];
	int first = 0;

	for (unsigned i = 0; i < g->ngi; i++) {
		const struct ds_gi *gi = &g->gi[i];
		unsigned m = ds_gi_minor((unsigned)gpu, gi->id);

		host_mock_path(s->mock_root, path, sizeof(path), GD_DEV "/nvidia-caps/nvidia-cap%u", m);
		gd_first(&first, host_mknod_chr(&ctx->host, path, CAP_MODE, c->caps_major, m));
		host_mock_path(s->mock_root, path, sizeof(path), CAPS_PROC "/gpu%d/mig/gi%u/access",
			       gpu, gi->id);
		access_text(text, sizeof(text), m);
		gd_first(&first, host_write(&ctx->host, path, text, strlen(text), 0444));
		for (unsigned j = 0; j < gi->nci; j++) {
			m = ds_ci_minor((unsigned)gpu, gi->id, gi->ci[j].id);
			host_mock_path(s->mock_root, path, sizeof(path),
				       GD_DEV "/nvidia-caps/nvidia-cap%u", m);
			gd_first(&first, host_mknod_chr(&ctx->host, path, CAP_MODE, c->caps_major, m));
			host_mock_path(s->mock_root, path, sizeof(path),
				       CAPS_PROC "/gpu%d/mig/gi%u/ci%u/access", gpu, gi->id,
				       gi->ci[j].id);
			access_text(text, sizeof(text), m);
			gd_first(&first, host_write(&ctx->host, path, text, strlen(text), 0444));
		}
	}
	if (first < 0)
		sim_error(errs, "mig", "GPU minor %d: MIG access nodes: %s", gpu, strerror(-first));
	return first;
}

int gd_stage_mig(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		 struct sim_errors *errs)
{
	char rel[512], *minors = NULL;
	struct ds_store st;
	int first = 0, n, r;

	if ((n = render_minors(&minors)) < 0)
		return n;
	host_mock_path(s->mock_root, rel, sizeof(rel), MIG_MINORS);
	if ((r = host_write(&ctx->host, rel, minors, (size_t)n, 0444)) < 0)
		sim_error(errs, rel, "write: %s", strerror(-r));
	free(minors);
	gd_first(&first, r);
	/* the store: config/ is live (not generational), made once, kept */
	host_mock_path(s->mock_root, rel, sizeof(rel), GD_CONFIG);
	if ((r = host_mkdirs(&ctx->host, rel, 0755)) < 0 ||
	    (r = store_open(&ctx->host, s->mock_root, true, &st)) < 0) {
		sim_error(errs, "mig", "%s%s/state: the device state store: %s", s->mock_root,
			  GD_CONFIG, strerror(-r));
		return gd_first(&first, r), first;
	}
	gd_first(&first, gd_mig_apply_layouts(s, &st, errs));
	for (int i = 0; i < s->num_devices; i++) {
		struct ds_gpu g;

		if (ds_load(&st, s->devices[i].uuid, &g) < 0 || !(g.set & DS_MIG) || !g.mig_cur)
			continue;
		gd_first(&first, stage_gpu(ctx, s, c, s->devices[i].minor, &g, errs));
	}
	ds_close(&st);
	gd_mig_watch(ctx, s, c);
	return first;
}

/* Discard: the store goes with the node (a teardown forgets what consumers
 * set; a crash-restart keeps it, since only Discard runs this). */
int gd_discard(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char dir[4096], rel[512];
	struct ds_store st;
	int r, rootfd;

	if ((r = gd_mig_store_dir(&ctx->host, ctx->host.mock_root, dir, sizeof(dir))) < 0 ||
	    store_open(&ctx->host, ctx->host.mock_root, false, &st) < 0)
		return 0;
	if ((r = ds_clear(&st)) < 0)
		sim_error(errs, "mig", "%s: clearing the device state store: %s", dir, strerror(-r));
	unlinkat(st.dirfd, ".lock", 0);
	unlinkat(st.dirfd, ".seq", 0);
	ds_close(&st);
	if ((rootfd = beneath_root(ctx->host.root)) >= 0) {
		if (host_mock_path(ctx->host.mock_root, rel, sizeof(rel), GD_CONFIG "/state") == 0)
			beneath_unlink(rootfd, rel, AT_REMOVEDIR);
		close(rootfd);
	}
	gd_mig_revoke(ctx);
	return r;
}
