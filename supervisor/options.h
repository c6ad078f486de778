/* Command-line flags of mokka-supervisor (reference-compatible names). */
#ifndef MOKKA_SUPERVISOR_OPTIONS_H
#define MOKKA_SUPERVISOR_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "ipc/log.h"

struct options {
	bool foreground;
	const char *config;		/* NULL: built-in default profile */
	const char *topology;
	char host_root[4096];		/* "" means / */
	const char *health_addr;
	uint64_t resync_ms;
	uint64_t shutdown_ms;
	enum log_level log_level;
	enum log_format log_format;
	char node_name[256];
	const char *simulators;		/* comma list; NULL = all */
	const char *mock_root;		/* host path of R */
	const char *nvidia_smi;		/* --nvidia-smi; NULL = search */
	/* mock-ib (reference env names as fallbacks) */
	int ib_port;			/* --ib-port, MOCK_IB_PING_PORT */
	const char *ib_peers;		/* --ib-peers, MOCK_IB_PEERS */
	const char *ib_listen;		/* --ib-listen, MOCK_IB_PING_FABRIC=1 */
	const char *ib_socket;		/* --ib-socket */
	/* container runtime setup (cri); NULL = default (profile/compile_cri.c) */
	const char *cri_runtime;	/* --container-runtime containerd|none */
	const char *cri_restart;	/* --container-runtime-restart systemd|none */
	const char *cri_config;		/* --container-runtime-config */
	const char *cri_config_dir;	/* --container-runtime-config-dir */
	const char *cri_unit;		/* --container-runtime-systemd-unit */
	bool cri_nri;			/* --nri-plugin */
	const char *cri_nri_socket;	/* --nri-socket */
	/* IMEX and kernellog (options_imex.c; env fallbacks) */
	bool imex_enabled;		/* --imex-channels, IMEX_MOCK_CHANNELS=true */
	int imex_channel_count;		/* --imex-channel-count, IMEX_CHANNEL_COUNT (2048) */
	int imex_channel_major;		/* --imex-channel-major, IMEX_CHANNEL_MAJOR (235) */
	int imex_caps_major;		/* --imex-caps-major, IMEX_CAPS_MAJOR (236) */
	const char *imex_archive;	/* --imex-archive, MOKKA_IMEX_ARCHIVE ("" none) */
	const char *imex_checksums;	/* --imex-checksums, MOKKA_IMEX_CHECKSUMS */
	const char *kernel_log;		/* --kernel-log, MOCK_NVML_KMSG (/dev/kmsg; "" off) */
};

/* options_imex.c: the flags above, in getopt order after OPT_IMEX_FIRST. */
enum options_imex {
	OPT_IMEX_CHANNELS, OPT_IMEX_COUNT, OPT_IMEX_MAJOR, OPT_IMEX_CAPS_MAJOR,
	OPT_IMEX_ARCHIVE, OPT_IMEX_CHECKSUMS, OPT_KERNEL_LOG,
};
/* Defaults and environment (0 or -EINVAL, message printed); one flag
 * (arg NULL for --imex-channels); the majors against each other. */
int options_imex_defaults(struct options *o);
int options_imex_flag(struct options *o, enum options_imex which, const char *arg);
int options_imex_check(const struct options *o);

/* The real nvidia-smi gpudriver stages: the flag, else $MOKKA_NVIDIA_SMI,
 * else <pkgdatadir>/nvidia-smi, else /usr/bin/nvidia-smi; NULL when none
 * exists (the node then says so instead of faking one). */
const char *options_find_nvidia_smi(const char *flag);

/* 0 = run, 1 = exit 0 (help/version printed), -EINVAL = usage error
 * (message printed). */
int options_parse(int argc, char **argv, struct options *o);

/* Go-style durations: "1m", "8s", "250ms", "1h30m", "1.5s".  0 or -EINVAL. */
int parse_duration_ms(const char *s, uint64_t *ms);

#endif
