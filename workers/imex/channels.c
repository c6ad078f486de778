/* IMEX channel devices: R/driver/dev/nvidia-caps-imex-channels/channel<i>,
 * i = 0..count-1, char devices (channel major, minor i, 0666), as the
 * compute-domain CDI spec and the NRI plugin name them.  host_mknod_chr
 * leaves a node that is already right alone, so a second Stage writes
 * nothing; a smaller count removes the extra nodes (the manifest). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/imex/imex.h"

int imex_stage_channels(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char dir[512], path[600];
	int r, first = 0;

	snprintf(dir, sizeof(dir), "%s%s", s->mock_root, IMEX_CHANNEL_DIR);
	if ((r = host_mkdirs(&ctx->host, dir, 0755)) < 0) {
		sim_error(errs, dir, "mkdir: %s", strerror(-r));
		return r;
	}
	for (int i = 0; i < s->imex.channel_count; i++) {
		snprintf(path, sizeof(path), "%s/channel%d", dir, i);
		r = host_mknod_chr(&ctx->host, path, 0666, (unsigned)s->imex.channel_major,
				   (unsigned)i);
		if (r < 0) {
			/* One error for the lot: 2048 identical ones say nothing more. */
			if (!first)
				sim_error(errs, path, "mknod c %d:%d: %s", s->imex.channel_major, i,
					  strerror(-r));
			first = first ? first : r;
		}
	}
	return first;
}
