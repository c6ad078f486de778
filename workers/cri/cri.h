/* cri simulator: CDI specs and container runtime setup (SURFACES.md §2).
 *
 *   cdi.c         nvidia.yaml and nvml-mock-nri.yaml, rendered from the state
 *                 and what exists under the host root (host paths, never the
 *                 host-root prefix); Stage withdraws, Apply publishes
 *   containerd.c  the drop-in conf.d/50-mokka.toml and the imports entry in
 *                 config.toml, rendered and validated in memory
 *   toml_*.c      the TOML parser/writer both use
 *   toolkit.c     NVIDIA Container Toolkit binaries, runtime config, links
 *   setup.c       the stand-aside rules, writing the containerd files
 *   ctk.c         nvidia-ctk runtime configure, when our toolkit brings it
 *   restart.c     systemctl restart through the host root
 *   podstart.c    restart once per node pod; did containerd come back
 *   resolve.c     symlinks resolved inside the host root (/var/run -> /run)
 *   nri_daemon.c  mokka-nri, the NRI plugin, as the daemon the supervisor runs
 *   cri.c         the simulator table: Stage, Apply, Revoke, readiness */
#ifndef MOKKA_WORKERS_CRI_CRI_H
#define MOKKA_WORKERS_CRI_CRI_H

#include <stdbool.h>
#include <stddef.h>

#include "ipc/state.h"
#include "workers/cri/toml.h"
#include "workers/simulator.h"

#define CRI_CDI_DIR "/var/run/cdi"
#define CRI_SPEC CRI_CDI_DIR "/nvidia.yaml"
#define CRI_NRI_SPEC CRI_CDI_DIR "/nvml-mock-nri.yaml"
/* podman 4.3's CDI library refuses 0.6.0; 0.5.0 is the oldest version
 * that has what the specs use (hostPath, device names starting with a
 * digit). */
#define CRI_CDI_VERSION "0.5.0"
#define CRI_KIND "nvidia.com/gpu"
#define CRI_NRI_KIND "nvml-mock.nvidia.com/gpu"

#define CRI_DROPIN_NAME "50-mokka.toml"
#define CRI_RUNTIME_NAME "nvidia"
#define CRI_RUNTIME_PATH "/usr/bin/nvidia-container-runtime"
#define CRI_TOOLKIT_DIR "/usr/local/nvml-mock/toolkit"
#define CRI_RUNTIME_CONFIG_LINK "/etc/nvidia-container-runtime/config.toml"
/* The first line of every drop-in we write: how Revoke knows it is ours. */
#define CRI_DROPIN_MARK "# Written by Mokka (mokka-worker-cri)"

/* nri_daemon.c: mokka-nri as this simulator's daemon while state.cri.nri
 * is on (an empty spec otherwise); the simulator's .daemon. */
int cri_nri_daemon(struct sim_ctx *ctx, const struct state *s, struct ipc_daemon_spec *d,
		   struct sim_errors *errs);

/* resolve.c: path (a host path) with every symlink resolved inside the
 * host root, as a host path.  0, -EINVAL, -ELOOP, -ENAMETOOLONG. */
int cri_resolve(const struct host *h, const char *path, char *out, size_t len);
/* The same for the directory only: the leaf itself (a file we replace, a
 * link we make) is taken as it is. */
int cri_resolve_parent(const struct host *h, const char *path, char *out, size_t len);

/* cdi.c: render a spec from the state and what exists under the root
 * (device nodes, library, nvidia-smi, sysfs, modules, IMEX binaries,
 * nvidia-cdi-hook).  *out is NULL (nothing to publish) when no GPU has a
 * device node.  0 or -ENOMEM. */
int cri_render_spec(const struct host *h, const struct state *s, char **out, size_t *len);
int cri_render_nri_spec(const struct host *h, const struct state *s, char **out, size_t *len);
/* Write (or remove when nothing to publish) one spec; 0 or -errno, errors
 * in errs.  h->own decides whether it is recorded. */
int cri_publish(struct host *h, const char *spec, const char *text, size_t len,
		struct sim_errors *errs);

/* containerd.c: what to write, from config.toml's bytes (exists=false:
 * there is none). */
struct cri_plan {
	char *dropin;			/* the drop-in's bytes */
	size_t dropin_len;
	char *config;			/* config.toml's new bytes; NULL = leave it */
	size_t config_len;
	char dropin_path[512];		/* host path */
};
/* 0; -EINVAL with why (naming file, line, column) when config.toml would
 * not parse, or what we would write does not; -ENOMEM. */
int cri_containerd_plan(const struct state_cri *c, const char *config, size_t len, bool exists,
			const char *binary, struct cri_plan *plan, char *why, size_t whylen);
/* binary: the nvidia handler's BinaryName; NULL when the host has no
 * nvidia-container-runtime (the handler then runs containerd's runc, so
 * no container on the node breaks; CDI injection is containerd's own). */
void cri_plan_free(struct cri_plan *plan);
/* Does imports (entries relative to config's directory) cover path? */
bool cri_imports_cover(const struct toml_node *imports, const char *config, const char *path);
/* Is text a document our parser accepts with imports, if present, an
 * array of strings and version an integer?  0 or -EINVAL with why. */
int cri_validate_config(const char *name, const char *text, size_t len, char *why,
			size_t whylen);

/* The NRI table (the whole table, SURFACES.md §11.6) put into a drop-in
 * tree, config.toml's own NRI keys kept (config may be NULL). */
int cri_add_nri(struct toml_node *dropin, const struct toml_node *config,
		const struct state_cri *c);

/* toolkit.c: the toolkit's source directory on this machine
 * ($MOKKA_CONTAINER_TOOLKIT_DIR, else <libexecdir>/container-toolkit). */
const char *cri_toolkit_source(char *buf, size_t len);
/* A path of the four the toolkit package owns that exists under the root
 * and is not Mokka's own link: 1 (name in who), 0 none, -errno. */
int cri_foreign_toolkit(const struct host *h, char *who, size_t len);
/* Copy the binaries, write the runtime config, make the links that are
 * absent.  Never recorded, never removed (running containers exec the
 * runtime).  *installed: the runtime binary is now in place. */
int cri_toolkit_install(const struct host *h, bool *installed, struct sim_errors *errs);

/* ctk.c: is /usr/bin/nvidia-ctk our link to an installed nvidia-ctk? */
bool cri_ctk_available(const struct host *h);
struct cri_setup_result;
/* Let nvidia-ctk write the drop-in (host path) and edit config (resolved
 * host path); undone when what it wrote does not parse. */
void cri_ctk_configure(struct sim_ctx *ctx, const struct state_cri *c, const char *config,
		       const char *dropin_host, struct cri_setup_result *res);

/* setup.c: the container runtime setup of one Apply.  Never fails Apply:
 * a problem leaves *ready false with the reason in reason. */
struct cri_setup_result {
	bool ready;
	char reason[256];
	bool changed;			/* drop-in or config.toml bytes changed */
	bool installed;			/* we manage containerd's config now */
};
void cri_setup(struct sim_ctx *ctx, const struct state *s, struct cri_setup_result *res);
/* Is there an executable named name on the host PATH (under the root)? */
bool cri_host_has(const struct host *h, const char *name, char *found, size_t len);

/* restart.c: restart (or queue a restart of) the unit through the host's
 * systemctl, chrooted into the host root, with SYSTEMD_IN_CHROOT=0 and
 * SYSTEMD_IGNORE_CHROOT=1.  0, or -errno with why. */
int cri_restart_unit(const struct host *h, const char *unit, bool no_block, char *why,
		     size_t whylen);
/* Run argv[0] (a host path) chrooted into the root with a clean PATH;
 * waits at most timeout_ms.  Returns the exit status (0..255) or -errno. */
int cri_run_in_root(const struct host *h, char *const argv[], const char *const env[],
		    int timeout_ms, char *why, size_t whylen);

/* podstart.c: is this the first Apply of this node pod (supervisor)
 * whose restart is not yet done?  Record it done. */
bool cri_pod_first_apply(const struct host *h, const char *mock_root);
void cri_pod_restart_done(const struct host *h, const char *mock_root);
/* Revoke: the record goes with the pod (a killed pod's stays; the next
 * pod has another identity anyway). */
void cri_pod_forget(const struct host *h, const char *mock_root);
/* systemctl is-active unit through the root: 0 active, -EIO (why says the
 * state), -ENOENT without systemctl.  cri_wait_comeback polls it a few
 * seconds after a restart. */
int cri_unit_active(const struct host *h, const char *unit, char *why, size_t whylen);
int cri_wait_comeback(const struct host *h, const char *unit, char *why, size_t whylen);

/* Read a whole file under the root (host path); *out NUL-terminated.
 * -ENOENT when absent. */
int cri_read(const struct host *h, const char *path, char **out, size_t *len);

extern const struct simulator cri_simulator;

#endif
