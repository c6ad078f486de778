/* mokka-ctl reset also forgets what consumers set through NVML: the GPU's
 * (or every GPU's) document in the device state store (devstate/) beside
 * the engine config, R/driver/config/state, or $MOCK_NVML_STATE_DIR as the
 * library reads it.  The next Stage applies a declared MIG layout again.
 * In the on-host layout the store is reached beneath the host root, never
 * through a link (fileio/beneath.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "devstate/devstate.h"
#include "fileio/beneath.h"

static void store_dir(const struct ctl_call *call, char *dir, size_t len)
{
	const char *env = getenv("MOCK_NVML_STATE_DIR");
	char *slash;

	if (env && *env) {
		snprintf(dir, len, "%s", env);
		return;
	}
	snprintf(dir, len, "%s", call->prof->path);
	slash = strrchr(dir, '/');
	snprintf(slash ? slash + 1 : dir, len - (size_t)(slash ? slash + 1 - dir : 0), "state");
}

/* ds_open of dir; beneath call->root when the layout is the host's (a
 * link there: -ELOOP with call->err naming it). */
static int store_open(struct ctl_call *call, const char *dir, struct ds_store *st)
{
	size_t n = call->root ? strlen(call->root) : 0;
	const char *env = getenv("MOCK_NVML_STATE_DIR");
	char fdpath[64], why[PATH_MAX + 300];
	int rootfd, fd, r;

	if (!call->root || (env && *env) || strncmp(dir, call->root, n) != 0 || dir[n] != '/')
		return ds_open(st, dir, false);
	if ((rootfd = beneath_root(call->root)) < 0)
		return rootfd;
	fd = beneath_open(rootfd, dir + n, O_PATH | O_DIRECTORY, 0);
	if (fd == -ELOOP || fd == -EXDEV) {
		beneath_explain(rootfd, call->root, dir + n, fd, why, sizeof(why));
		snprintf(call->err, call->errlen, "%s", why);
	}
	close(rootfd);
	if (fd < 0)
		return fd;
	/* ds_open takes a path: the directory's own, through /proc. */
	if ((r = beneath_fdpath(fd, NULL, fdpath, sizeof(fdpath))) == 0)
		r = ds_open(st, fdpath, false);
	close(fd);
	return r;
}

int ctl_state_reset(struct ctl_call *call)
{
	char dir[PATH_MAX + 16];
	struct ds_store st;
	struct ds_gpu empty = { 0 };
	int r;

	store_dir(call, dir, sizeof(dir));
	if ((r = store_open(call, dir, &st)) == -ENOENT)
		return 0;	/* nothing was ever set */
	if (r == -ELOOP || r == -EXDEV)
		return r;	/* named in call->err */
	if (r < 0 || (r = ds_lock(&st)) < 0) {
		snprintf(call->err, call->errlen, "%s: the device state store: %s", dir, strerror(-r));
		if (r != -ENOENT)
			ds_close(&st);
		return r;
	}
	r = call->target.all ? ds_clear(&st)
			     : ds_save(&st, call->prof->gpu[call->target.gpu].uuid, &empty);
	ds_unlock(&st);
	ds_close(&st);
	if (r < 0)
		snprintf(call->err, call->errlen, "%s: clearing the device state: %s", dir,
			 strerror(-r));
	return r;
}

/* gpu-reset: what nvidia-smi -r does to a GPU's state (the real reset
 * goes through NVML's private export table, which the mock does not
 * speak): pending ECC and MIG modes become current, the clocks set since
 * boot go; refused while GPU instances exist, as the driver refuses. */
static int reset_one(struct ctl_call *call, struct ds_store *st, int i)
{
	struct ds_gpu g;
	int r = ds_load(st, call->prof->gpu[i].uuid, &g);

	if (r == -ENOENT)
		return 0;	/* nothing pending */
	if (r < 0)
		return ctl_fail(call, r, "GPU %u: its device state: %s", call->prof->gpu[i].index,
				strerror(-r));
	if (g.ngi)
		return ctl_fail(call, -EBUSY, "GPU %u has MIG GPU instances: destroy them first "
				"(nvidia-smi mig -dci, -dgi)", call->prof->gpu[i].index);
	g.ecc_cur = g.ecc_pend;
	g.mig_cur = g.mig_pend;
	g.set &= ~(unsigned)(DS_AC | DS_LGC | DS_LMC);
	if ((r = ds_save(st, call->prof->gpu[i].uuid, &g)) < 0)
		return ctl_fail(call, r, "GPU %u: saving its device state: %s",
				call->prof->gpu[i].index, strerror(-r));
	printf("GPU %u (%s) reset: ECC %s, MIG %s\n", call->prof->gpu[i].index,
	       call->prof->gpu[i].uuid, g.set & DS_ECC ? (g.ecc_cur ? "enabled" : "disabled") : "as profiled",
	       g.set & DS_MIG ? (g.mig_cur ? "enabled" : "disabled") : "as profiled");
	return 0;
}

int ctl_cmd_gpu_reset(struct ctl_call *call, struct yl_node **doc)
{
	char dir[PATH_MAX + 16];
	struct ds_store st;
	int r;

	(void)doc;
	store_dir(call, dir, sizeof(dir));
	if ((r = store_open(call, dir, &st)) == -ENOENT)
		return 0;
	if (r == -ELOOP || r == -EXDEV)
		return r;	/* named in call->err */
	if (r < 0 || (r = ds_lock(&st)) < 0) {
		if (r != -ENOENT)
			ds_close(&st);
		return ctl_fail(call, r, "%s: the device state store: %s", dir, strerror(-r));
	}
	for (int i = 0; i < call->prof->n && r == 0; i++)
		if (call->target.all || i == call->target.gpu)
			r = reset_one(call, &st, i);
	ds_unlock(&st);
	ds_close(&st);
	return r;
}
