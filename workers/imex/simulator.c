/* imex worker: Stage as a table of surfaces (see imex.h); nothing at all
 * while IMEX is off, so turning it off removes everything (manifest). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/imex/imex.h"

/* The copy at the [SH]-era path the DRA chart's altProcDevices names
 * (SURFACES.md §11.2): the very text gpudriver stages, from the same
 * renderer and inputs. */
int imex_stage_proc_devices(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct gd_conf c;
	char path[512], *text = NULL;
	size_t len = 0;
	int r;

	if ((r = gd_conf_load(&c, errs)) < 0 ||
	    (r = gd_conf_for_state(&c, s, ctx->host.root, errs)) < 0 ||
	    (r = gd_proc_devices_render(s, &c, &text, &len, errs)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s%s", s->mock_root, IMEX_PROC_DEVICES);
	if ((r = host_write(&ctx->host, path, text, len, 0644)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	free(text);
	return r;
}

static const struct {
	const char *name;
	int (*fn)(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
} surfaces[] = {
	{ "channels", imex_stage_channels },
	{ "proc-devices", imex_stage_proc_devices },
	{ "archive", imex_stage_archive },
};

static int imex_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	static bool said_profile;
	int first = 0;

	if (!s->imex.enabled) {
		if (s->imex.archive[0])
			log_warn("IMEX is off (--imex-channels / IMEX_MOCK_CHANNELS): archive %s "
				 "not staged", s->imex.archive);
		return 0;
	}
	if (s->imex.from_profile && !said_profile) {
		log_info("IMEX on: the profile is a multi-node NVLink node (nvlink.multi_node or "
			 "a GB200/GB300 NVL GPU)");
		said_profile = true;
	}
	for (size_t i = 0; i < sizeof(surfaces) / sizeof(surfaces[0]); i++) {
		int before = errs->n, r = surfaces[i].fn(ctx, s, errs);

		if (r < 0 && errs->n == before)
			sim_error(errs, surfaces[i].name, "%s", strerror(-r));
		if (r < 0 && !first)
			first = r;
	}
	return first;
}

/* Each swaps as one (workers/generation.h), so a failed pass changes none
 * of them.  The channel directory lies inside gpudriver's R/driver/dev
 * generation: imex publishes first (ROLE_STAGE_FIRST in the simulator
 * table), into the dev that is live, and gpudriver's Publish then links
 * what others put there into its new dev.  Turning IMEX off or dropping
 * the archive withdraws them at Publish. */
static const char *const imex_gens[] = {
	IMEX_CHANNEL_DIR, IMEX_PROC_DEVICES, IMEX_CONFIG_DIR, IMEX_DOC_DIR,
	IMEX_BIN "/nvidia-imex.real", IMEX_BIN "/nvidia-imex-ctl", IMEX_BIN "/nvidia-imex", NULL,
};

static const struct simulator imex_simulator = {
	.name = "imex",
	.roles = SIM_ROLE_STAGE,
	.stage = imex_stage,
	.gens = imex_gens,
};

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &imex_simulator);
}
