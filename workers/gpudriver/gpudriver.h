/* gpudriver simulator: what an installed NVIDIA driver leaves on a node,
 * rendered under the driver root R/driver (NVML.md §7, §7.1):
 *
 *   devnodes.c      dev/nvidia<minor>, nvidiactl, nvidia-modeset, nvidia-uvm,
 *                   nvidia-uvm-tools, nvidia-caps/nvidia-cap{1,2,512}
 *   procfs.c        proc/driver/nvidia/{version,params,registry}, and
 *                   capabilities/{mig/config,mig/monitor,fabric-imex-mgmt}
 *   procfs_gpus.c   proc/driver/nvidia/gpus/<bdf>/{information,registry,power}
 *   proc_devices.c  proc/devices (the host's list with the driver's majors)
 *   modules.c       proc/modules and R/sys/module/nvidia*
 *   library.c       usr/lib64/libnvidia-ml.so.<version> and its links
 *   engine_config.c config/config.yaml (+ an empty overrides document)
 *   nvidia_smi.c    usr/bin/nvidia-smi: a real binary with an $ORIGIN run path
 *   apply.c         /run/nvidia/driver (bind mount, else symlink)
 *   profile.c       per-GPU profile values the compiled state lacks
 *   mig*.c          MIG access nodes, capability files, mig-minors and the MIG
 *                   CDI spec from the device state store (mig.h)
 *
 * Majors: nvidia is 195 (fixed, as on every real system).  The driver's
 * dynamic majors are configurable because a real kernel picks them at load
 * time: nvidia-uvm from $MOKKA_NVIDIA_UVM_MAJOR (default 510, what the
 * reference hard-codes), nvidia-caps from $MOKKA_NVIDIA_CAPS_MAJOR, else
 * $IMEX_CAPS_MAJOR (default 236, the IMEX surface's default, so both agree);
 * with IMEX on, the state's IMEX caps major.
 * A major the running kernel already lists under another name is refused:
 * a node with that major would open someone else's device. */
#ifndef MOKKA_WORKERS_GPUDRIVER_GPUDRIVER_H
#define MOKKA_WORKERS_GPUDRIVER_GPUDRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ipc/state.h"
#include "workers/host.h"
#include "workers/simulator.h"

#define GD_NVIDIA_MAJOR 195
#define GD_CTL_MINOR 255
#define GD_MODESET_MINOR 254
#define GD_DEV_MODE 0666		/* NVreg_DeviceFileMode default (438) */
#define GD_DEFAULT_UVM_MAJOR 510
#define GD_DEFAULT_CAPS_MAJOR 236
#define GD_MAX_MAJOR 4095		/* the kernel's CHRDEV_MAJOR_MAX - 1 */

/* Host paths relative to R. */
#define GD_DRIVER "/driver"
#define GD_DEV GD_DRIVER "/dev"
#define GD_PROC_NVIDIA GD_DRIVER "/proc/driver/nvidia"
#define GD_LIB64 GD_DRIVER "/usr/lib64"
#define GD_CONFIG GD_DRIVER "/config"
#define GD_SMI GD_DRIVER "/usr/bin/nvidia-smi"
#define GD_RUN_DRIVER "/run/nvidia/driver"	/* a real host path, not under R */

#define GD_MAX_CAPS 4

/* Environment-derived settings, read at every Stage. */
struct gd_conf {
	unsigned uvm_major, caps_major;
	mode_t cap_mode[GD_MAX_CAPS];	/* per gd_caps[i]: default or $MOKKA_NVIDIA_CAP<minor>_MODE */
	char proc_devices_src[256];	/* the running kernel's list: /proc/devices */
};

/* 0, or -EINVAL with the offending variable in errs. */
int gd_conf_load(struct gd_conf *c, struct sim_errors *errs);
/* What the state and the host root decide on top: with IMEX on, the
 * nvidia-caps major is IMEX's (SURFACES.md §3); the kernel's list is
 * <host-root>/proc/devices when the host root has one, else /proc/devices. */
int gd_conf_for_state(struct gd_conf *c, const struct state *s, const char *host_root,
		      struct sim_errors *errs);
/* R/driver/proc/devices' text (proc_devices.c), also R/imex/proc-devices. */
int gd_proc_devices_render(const struct state *s, const struct gd_conf *c, char **out,
			   size_t *len, struct sim_errors *errs);

/* The nvidia-caps capabilities (SURFACES.md §11.3): node and procfs file
 * say the same minor and mode.  The mode is the real driver's unless
 * $MOKKA_NVIDIA_CAP<minor>_MODE (octal) says otherwise. */
struct gd_cap {
	const char *proc;		/* under proc/driver/nvidia/capabilities */
	const char *node;		/* under dev/nvidia-caps */
	unsigned minor;
	mode_t mode;			/* default */
};
extern const struct gd_cap gd_caps[];
extern const size_t gd_ncaps;

/* Remember the first failure while going on to collect the rest. */
static inline int gd_first(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

/* Per-device values the compiled state does not carry, from the profile
 * (state->profile_json): the devices[] entry with that index, else
 * device_defaults.  Dotted keys ("gsp_firmware.version").  NULL / false
 * when absent. */
struct gd_profile;
struct gd_profile *gd_profile_open(const struct state *s);
void gd_profile_close(struct gd_profile *p);
const char *gd_profile_str(struct gd_profile *p, int index, const char *key);
bool gd_profile_num(struct gd_profile *p, int index, const char *key, double *out);
int gd_profile_device_count(struct gd_profile *p);	/* devices[] length, -1 unknown */
bool gd_profile_has_system_key(struct gd_profile *p, const char *key);

/* The surfaces; each returns 0 or the first -errno, errors in errs. */
typedef int gd_stage_fn(struct sim_ctx *ctx, const struct state *s,
			const struct gd_conf *c, struct sim_errors *errs);
gd_stage_fn gd_stage_devnodes, gd_stage_procfs, gd_stage_gpus, gd_stage_proc_devices,
	gd_stage_modules, gd_stage_library, gd_stage_engine_config, gd_stage_nvidia_smi,
	gd_stage_mig;

/* Where the real nvidia-smi comes from: true with the path usable, else
 * false with "no nvidia-smi source: ..." in reason. */
bool gd_nvidia_smi_source(const struct state *s, char *reason, size_t len);

/* Engine config: the profile bytes with system.num_devices set to the
 * compiled count when that differs from the profile's own.  Returns a
 * malloc'd document (NUL-terminated) in *out, or -errno with why in err. */
int gd_engine_config_render(const struct state *s, int profile_devices,
			    bool profile_has_num_devices, char **out, size_t *len,
			    char *err, size_t errlen);

int gd_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int gd_revoke(struct sim_ctx *ctx, struct sim_errors *errs);
int gd_discard(struct sim_ctx *ctx, struct sim_errors *errs);

extern const struct simulator gpudriver_simulator;

#endif
