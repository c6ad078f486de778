/* The node side of the control plane (issue 14): the desired-state
 * document mokka-plan writes for one Node (kind SGPUNodeState: its GPUs'
 * UUIDs, serials and effective runtime state) merged into the profile the
 * supervisor compiles.  The profile is also the mock NVML's engine config,
 * and the node-local overrides document (mokka-ctl) is read above it, so
 * the plan sits below node-local overrides by construction. */
#ifndef MOKKA_PROFILE_CONTROLPLANE_H
#define MOKKA_PROFILE_CONTROLPLANE_H

#include <stdbool.h>
#include <stddef.h>

#define CP_MAX_GPUS 64
#define CP_MAX_SETTINGS 12

struct cp_setting {
	char path[40];			/* device key path, e.g. "power.current_draw_mw" */
	char value[48];
	bool quoted;			/* a string value */
};

struct cp_gpu {
	int index;
	char uuid[48], serial[32];
	struct cp_setting set[CP_MAX_SETTINGS];
	int nset;
};

struct cp_plan {
	char node[256];
	int ngpus;
	struct cp_gpu gpus[CP_MAX_GPUS];
};

/* Find and check the document for node in buf (one document, or a stream
 * of mokka-plan's output: the SGPUNodeState named node is taken).
 * 0, -ENOENT (no document for node) or -EINVAL; err says where and why. */
int cp_parse(const char *buf, size_t len, const char *node, struct cp_plan *out,
	     char *err, size_t errlen);

/* The profile with every planned GPU's identity and runtime state set on
 * its devices[] entry (by index; GPUs the profile lacks are ignored).
 * *out is malloc'd.  0 or -EINVAL/-ENOMEM with err. */
int cp_merge_profile(const char *profile, size_t plen, const struct cp_plan *p,
		     char **out, size_t *olen, char *err, size_t errlen);

#endif
