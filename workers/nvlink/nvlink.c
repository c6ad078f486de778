/* nvlink: stages the ComputeDomain topology document where consumers look
 * for it (SURFACES.md §4, §11.5): R/topology/topology.yaml for the NRI
 * plugin, R/driver/config/topology.yaml beside the engine config for the
 * mock NVML.  Each is a generational surface (workers/generation.h): Stage
 * writes the shadow, Publish swaps it in, so a failed pass leaves the
 * published document alone.  No document: nothing staged, and Publish
 * withdraws the published ones. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/simulator.h"

static const char *const topology_paths[] = {
	"/topology/topology.yaml",
	"/driver/config/topology.yaml",
	NULL,
};

static int nvlink_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char path[512];
	int first = 0;

	if (!s->topology_doc)
		return 0;
	for (size_t i = 0; topology_paths[i]; i++) {
		snprintf(path, sizeof(path), "%s%s", s->mock_root, topology_paths[i]);
		int r = host_write(&ctx->host, path, s->topology_doc, s->topology_len, 0644);
		if (r < 0) {
			sim_error(errs, path, "write: %s", strerror(-r));
			if (!first)
				first = r;
		}
	}
	return first;
}

static const struct simulator nvlink_simulator = {
	.name = "nvlink",
	.roles = SIM_ROLE_STAGE,
	.stage = nvlink_stage,
	.gens = topology_paths,
	/* Incremental reconcile: the topology document is all Stage reads. */
	.inputs = sim_inputs_state_only,
	.stage_ignores = (const char *const[]){ "devices", "roots", "fabric", "ib", "cri",
		"imex", "pci", "profile_doc", "profile", NULL },
};

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &nvlink_simulator);
}
