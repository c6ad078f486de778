/* Profile compiler: reference-schema YAML (+ topology document) -> struct
 * state.  Errors name file, line, column and the key; unknown keys are
 * warned by name (log_warn); values that become path components are
 * validated. */
#ifndef MOKKA_SUPERVISOR_COMPILE_H
#define MOKKA_SUPERVISOR_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include "ipc/state.h"

struct compile_opts {
	const char *node_name;		/* --node-name */
	bool node_identity;		/* --node-name/$NODE_NAME named it: own identities */
	const char *mock_root;		/* host path of R; NULL = /var/lib/nvml-mock */
	int gpu_count_cap;		/* GPU_COUNT; 0 = no cap */
	const char *driver_version;	/* DRIVER_VERSION fallback; may be NULL */
	const char *fabric_state_dir;	/* NULL = <R>/fabric-state */
	long fabric_init_delay_ms;
	const char *nvidia_smi_src;	/* real nvidia-smi to stage; NULL/"" = none */
	/* mock-ib's fabric relay and socket (NULL/0 = defaults) */
	int ib_port;			/* --ib-port, MOCK_IB_PING_PORT; 18515 */
	const char *ib_peers;		/* --ib-peers, MOCK_IB_PEERS: "host[:port],..." */
	const char *ib_listen;		/* --ib-listen; MOCK_IB_PING_FABRIC=1 = 0.0.0.0 */
	const char *ib_socket;		/* --ib-socket; <R>/run/mock-ib.sock */
	/* container runtime setup (cri); NULL/0 = the defaults */
	const char *cri_runtime;	/* --container-runtime: containerd | none */
	const char *cri_restart;	/* --container-runtime-restart: systemd | none */
	const char *cri_config;		/* --container-runtime-config */
	const char *cri_config_dir;	/* --container-runtime-config-dir */
	const char *cri_unit;		/* --container-runtime-systemd-unit */
	bool cri_nri;			/* --nri-plugin (the supervisor's default: on) */
	const char *cri_nri_socket;	/* --nri-socket */
	const char *cri_nri_lock;	/* --staging-lock-path; NULL/"" = none */
	const char *cri_nri_stagedz;	/* host:port of /stagedz (from --health-addr) */
	/* IMEX (compile_imex.c; 0/NULL = the defaults 2048, 235, 236, none) */
	bool imex_enabled;
	int imex_channel_count, imex_channel_major, imex_caps_major;
	const char *imex_archive, *imex_checksums;
	const char *feature_gates;	/* --feature-gates: "IMEXDownload=true,..." */
	const char *imex_download_url;	/* NULL = NVIDIA's redist URL for the version */
	const char *imex_download_sha256;
	const char *imex_download_version;	/* NULL = the pinned 595.91.07 */
	const char *kernel_log;		/* NULL = /dev/kmsg, "" = off */
};

/* profile_name/topology_name are what errors print ("etc/x.yaml",
 * "<built-in>").  topo may be NULL (no topology).  On success fills out
 * (state_init'd by the caller; generation left 0) and returns 0; on error
 * returns -EINVAL with err = "FILE:LINE:COL: KEY: why". */
int compile_profile(const char *profile_name, const char *yaml, size_t len,
		    const char *topology_name, const char *topo, size_t topo_len,
		    const struct compile_opts *opts, struct state *out,
		    char *err, size_t errlen);

/* Container runtime flags (compile_cri.c), also checked by the flag
 * parser: NULL when v is acceptable for the option ("container-runtime",
 * "container-runtime-restart", "container-runtime-config", ...), else why
 * not.  The drop-in directory must lie under the config file's directory. */
const char *compile_cri_check(const char *option, const char *v);
const char *compile_cri_check_dir(const char *config, const char *config_dir);
/* All the cri fields of o together (defaults for the unset ones): 0, or
 * -EINVAL with "--option: 'value' why" in err. */
int compile_cri_flags(const struct compile_opts *o, char *err, size_t errlen);

/* The PCI plan (compile_pci.c): s->pci from s's devices, roots and HCAs
 * (when IB is on).  A device that cannot be placed is passed to report
 * (the surface: its bus id, "bus_id" or "topology"; a message) and left
 * out.  0 or the first -errno.  compile_profile runs it last; a caller
 * that edits a compiled state's devices or HCAs runs it again. */
typedef void (*compile_pci_report_fn)(void *arg, const char *surface, const char *msg);
int compile_pci(struct state *s, compile_pci_report_fn report, void *arg);

/* The built-in default profile (8x H100 SXM, 2 NUMA nodes), NUL-terminated. */
/* Larger profile and topology files are refused. */
#define PROFILE_MAX_FILE (4u << 20)

extern const char compile_default_profile[];
extern const size_t compile_default_profile_len;

#endif
