/* The IB LD_PRELOAD shims travel with the tree: R/ib/lib holds copies of
 * libibmocksys.so (path redirect), libibmockumad.so (fd-level UMAD) and
 * libibmockverbs.so (API-level verbs + NETLINK_RDMA), so a container that
 * mounts R/ib gets matching shims with it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workers/ib/ib.h"

const char *const ib_shim_files[] = {
	"libibmocksys.so", "libibmockumad.so", "libibmockverbs.so", NULL,
};

int ib_stage_shims(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct ib_out o = { &ctx->host, errs, 0 };
	const char *libdir = ctx->libdir ? ctx->libdir : ".";
	char src[4200], dst[512];
	int r;

	if (!s->ib.enabled)
		return 0;
	for (int i = 0; ib_shim_files[i]; i++) {
		snprintf(src, sizeof(src), "%s/%s", libdir, ib_shim_files[i]);
		if (access(src, R_OK) < 0) {
			ib_fail(&o, "shims", -errno, "%s: not found (are the IB shims built? set "
				"MOKKA_PKGLIBDIR to where they are)", src);
			continue;
		}
		if ((r = host_mock_path(s->mock_root, dst, sizeof(dst), IB_LIB "/%s", ib_shim_files[i])) < 0) {
			ib_fail(&o, "shims", r, "%s%s/%s", s->mock_root, IB_LIB, ib_shim_files[i]);
			continue;
		}
		if ((r = host_copy_in(&ctx->host, src, dst, 0755)) < 0)
			ib_fail(&o, dst, r, "%s: copy from %s", dst, src);
	}
	return o.first;
}
