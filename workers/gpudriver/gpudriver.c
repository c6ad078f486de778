/* gpudriver: the simulator table, its settings, and Stage as a table of
 * surfaces (each one independent: a failing surface does not stop the
 * others, every error is collected). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/gpudriver/mig.h"

const struct gd_cap gd_caps[] = {
	{ "mig/config", "nvidia-cap1", 1, 0400 },
	{ "mig/monitor", "nvidia-cap2", 2, 0444 },
	{ "fabric-imex-mgmt", "nvidia-cap512", 512, 0400 },
};
const size_t gd_ncaps = sizeof(gd_caps) / sizeof(gd_caps[0]);
_Static_assert(sizeof(gd_caps) / sizeof(gd_caps[0]) <= GD_MAX_CAPS, "raise GD_MAX_CAPS");

static int env_major(const char *const names[], unsigned def, unsigned *out,
		     struct sim_errors *errs)
{
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		char *end;
		unsigned long m;

		if (!v || !*v)
			continue;
		errno = 0;
		m = strtoul(v, &end, 10);
		if (errno || *end || m == 0 || m > GD_MAX_MAJOR || m == GD_NVIDIA_MAJOR) {
			sim_error(errs, "config", "$%s='%s': want a character major 1..%d other than %d",
				  names[i], v, GD_MAX_MAJOR, GD_NVIDIA_MAJOR);
			return -EINVAL;
		}
		*out = (unsigned)m;
		return 0;
	}
	*out = def;
	return 0;
}

static int env_cap_modes(struct gd_conf *c, struct sim_errors *errs)
{
	for (size_t i = 0; i < gd_ncaps && i < GD_MAX_CAPS; i++) {
		char name[64], *end;
		const char *v;
		unsigned long m;

		snprintf(name, sizeof(name), "MOKKA_NVIDIA_CAP%u_MODE", gd_caps[i].minor);
		c->cap_mode[i] = gd_caps[i].mode;
		if (!(v = getenv(name)) || !*v)
			continue;
		errno = 0;
		m = strtoul(v, &end, 8);
		if (errno || *end || m > 0777) {
			sim_error(errs, "config", "$%s='%s': want an octal mode 0..0777", name, v);
			return -EINVAL;
		}
		c->cap_mode[i] = (mode_t)m;
	}
	return 0;
}

int gd_conf_load(struct gd_conf *c, struct sim_errors *errs)
{
	static const char *const uvm[] = { "MOKKA_NVIDIA_UVM_MAJOR", NULL };
	static const char *const caps[] = { "MOKKA_NVIDIA_CAPS_MAJOR", "IMEX_CAPS_MAJOR", NULL };
	int r;

	memset(c, 0, sizeof(*c));
	snprintf(c->proc_devices_src, sizeof(c->proc_devices_src), "/proc/devices");
	if ((r = env_major(uvm, GD_DEFAULT_UVM_MAJOR, &c->uvm_major, errs)) < 0 ||
	    (r = env_major(caps, GD_DEFAULT_CAPS_MAJOR, &c->caps_major, errs)) < 0 ||
	    (r = env_cap_modes(c, errs)) < 0)
		return r;
	if (c->uvm_major == c->caps_major) {
		sim_error(errs, "config", "nvidia-uvm and nvidia-caps majors are both %u; "
			  "set MOKKA_NVIDIA_UVM_MAJOR or MOKKA_NVIDIA_CAPS_MAJOR apart",
			  c->uvm_major);
		return -EINVAL;
	}
	return 0;
}

int gd_conf_for_state(struct gd_conf *c, const struct state *s, const char *host_root,
		      struct sim_errors *errs)
{
	char src[sizeof(c->proc_devices_src)];

	if (s->imex.enabled) {
		if (s->imex.caps_major < 1 || s->imex.caps_major > GD_MAX_MAJOR ||
		    s->imex.caps_major == GD_NVIDIA_MAJOR ||
		    (unsigned)s->imex.caps_major == c->uvm_major ||
		    (unsigned)s->imex.channel_major == c->uvm_major) {
			sim_error(errs, "config", "IMEX majors %d (channels) and %d (caps) must be "
				  "1..%d and differ from nvidia (%d) and nvidia-uvm (%u)",
				  s->imex.channel_major, s->imex.caps_major, GD_MAX_MAJOR,
				  GD_NVIDIA_MAJOR, c->uvm_major);
			return -EINVAL;
		}
		c->caps_major = (unsigned)s->imex.caps_major;
	}
	if (host_root && host_root[0] &&
	    snprintf(src, sizeof(src), "%s/proc/devices", host_root) < (int)sizeof(src) &&
	    access(src, R_OK) == 0)
		memcpy(c->proc_devices_src, src, sizeof(src));
	return 0;
}

static const struct {
	const char *name;
	gd_stage_fn *fn;
} surfaces[] = {
	{ "devnodes", gd_stage_devnodes },
	{ "procfs", gd_stage_procfs },
	{ "gpus", gd_stage_gpus },
	{ "proc-devices", gd_stage_proc_devices },
	{ "modules", gd_stage_modules },
	{ "library", gd_stage_library },
	{ "engine-config", gd_stage_engine_config },
	{ "nvidia-smi", gd_stage_nvidia_smi },
	{ "mig", gd_stage_mig },
};

static int gd_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct gd_conf c;
	int first = 0, r;

	if ((r = gd_conf_load(&c, errs)) < 0 ||
	    (r = gd_conf_for_state(&c, s, ctx->host.root, errs)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(surfaces) / sizeof(surfaces[0]); i++) {
		int before = errs->n;
		r = surfaces[i].fn(ctx, s, &c, errs);
		if (r < 0 && errs->n == before)
			sim_error(errs, surfaces[i].name, "%s", strerror(-r));
		gd_first(&first, r);
	}
	return first;
}

static bool gd_ready(struct sim_ctx *ctx, const struct state *s, char *reason, size_t len)
{
	return gd_nvidia_smi_source(s, reason, len);
}

/* What a consumer reads as one thing swaps as one (workers/generation.h):
 * the device nodes as a directory (a listing shows one generation's
 * GPUs), the procfs tree, the library with its links, nvidia-smi, the
 * engine config and each module's sysfs directory.  Not config/ as a
 * whole: the overrides document beside config.yaml is written at any time
 * by mokka-ctl and is no generation's. */
static const char *const gd_gens[] = {
	GD_DEV, GD_DRIVER "/proc", GD_LIB64, GD_SMI, GD_CONFIG "/config.yaml",
	"/sys/module/nvidia", "/sys/module/nvidia_uvm", "/sys/module/nvidia_modeset",
	"/sys/module/nvidia_drm", NULL,
};

/* Incremental reconcile (workers/stage_skip.h): besides the state, Stage
 * reads the library and nvidia-smi it copies in, the host's /proc/devices
 * and the MIG device state store consumers change at run time. */
static void gd_inputs(struct sim_ctx *ctx, const struct state *s, struct skip_key *k)
{
	char path[4200];

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/libnvidia-ml.so%s", ctx->libdir ? ctx->libdir : ".",
			 i ? ".1" : "");
		skip_key_stat(k, path);
	}
	skip_key_stat(k, s->nvidia_smi_src);
	snprintf(path, sizeof(path), "%s/proc/devices", ctx->host.root);
	skip_key_file(k, path, 1 << 16);
	skip_key_file(k, "/proc/devices", 1 << 16);
	if (gd_mig_store_dir(&ctx->host, s->mock_root, path, sizeof(path)) == 0)
		skip_key_dir(k, path, 1 << 16);
}

const struct simulator gpudriver_simulator = {
	.name = "gpudriver",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_APPLY,
	.stage = gd_stage,
	.apply = gd_apply,
	.revoke = gd_revoke,
	.discard = gd_discard,
	.ready = gd_ready,
	.gens = gd_gens,
	.inputs = gd_inputs,	/* the whole state: the profile document is one input */
};
