/* Device nodes under R/ib/dev/infiniband, as udev makes them on a node with
 * ib_umad, ib_uverbs and rdma_ucm loaded: umadN, issmN, uverbsN per HCA
 * (numbers as their sysfs dev files say) and the rdma_cm misc device.
 * The kernel has no driver behind major 231 here, so opening one gives
 * ENXIO: the shims (or the daemon) answer instead. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/ib/ib.h"

static void node(struct ib_out *o, const char *dir, const char *name, mode_t mode,
		 struct ib_chrdev d)
{
	char path[1024];
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((r = host_mknod_chr(o->h, path, mode, d.major, d.minor)) < 0)
		ib_fail(o, path, r, "%s: mknod c %u:%u mode %04o", path, d.major, d.minor,
			(unsigned)mode);
}

int ib_stage_devnodes(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct ib_out o = { &ctx->host, errs, 0 };
	char dir[512], name[32];
	int r;

	if (!s->ib.enabled)
		return 0;
	if ((r = host_mock_path(s->mock_root, dir, sizeof(dir), IB_DEV)) < 0)
		return ib_fail(&o, "devnodes", r, "%s%s", s->mock_root, IB_DEV);
	if (ib_mkdir(&o, dir) < 0)
		return o.first;
	for (int i = 0; i < s->ib.num_hcas && i < STATE_MAX_HCAS; i++) {
		snprintf(name, sizeof(name), "umad%d", i);
		node(&o, dir, name, IB_UMAD_MODE, ib_umad_dev(i));
		snprintf(name, sizeof(name), "issm%d", i);
		node(&o, dir, name, IB_UMAD_MODE, ib_issm_dev(i));
		snprintf(name, sizeof(name), "uverbs%d", i);
		node(&o, dir, name, IB_UVERBS_MODE, ib_uverbs_dev(i));
	}
	node(&o, dir, "rdma_cm", IB_RDMA_CM_MODE,
	     (struct ib_chrdev){ IB_MISC_MAJOR, IB_RDMA_CM_MINOR });
	return o.first;
}
