/* The node's environment, read once: the variables that feed the profile
 * compiler (the reference's names, SURFACES.md §3, §6), parsed and checked
 * in one table, so that the supervisor and a stand-alone worker compile
 * the same state from the same environment.  Precedence is flag > env >
 * default: profile_env_read fills the defaults and the environment, the
 * callers' flags are written over the result. */
#ifndef MOKKA_PROFILE_ENV_H
#define MOKKA_PROFILE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile/compile.h"

/* Every field of *co that has a default or an environment variable:
 *   node_name            NODE_NAME, else the hostname
 *   node_identity        true when NODE_NAME named the node (identity.h; so
 *                        does --node-name, where the programs read it)
 *   driver_version       DRIVER_VERSION (fallback for the profile's)
 *   gpu_count_cap        GPU_COUNT (0..; 0 = no cap)
 *   fabric_state_dir     MOCK_FABRICMANAGER_STATE_DIR
 *   fabric_init_delay_ms MOCK_FABRICMANAGER_INIT_DELAY (a duration)
 *   nvidia_smi_src       MOKKA_NVIDIA_SMI, else <pkgdatadir>/nvidia-smi,
 *                        else /usr/bin/nvidia-smi, else NULL (none found)
 *   ib_port, ib_peers    MOCK_IB_PING_PORT (1..65535), MOCK_IB_PEERS
 *   ib_listen            "0.0.0.0" when MOCK_IB_PING_FABRIC is true (1)
 *   imex_*               IMEX_MOCK_CHANNELS, IMEX_CHANNEL_COUNT (2048),
 *                        IMEX_CHANNEL_MAJOR (235), IMEX_CAPS_MAJOR (236,
 *                        else MOKKA_NVIDIA_CAPS_MAJOR), MOKKA_IMEX_ARCHIVE,
 *                        MOKKA_IMEX_CHECKSUMS
 *   kernel_log           MOCK_NVML_KMSG (/dev/kmsg; "" = off)
 * An empty variable counts as unset, except MOCK_NVML_KMSG.  The other
 * fields are zeroed.  0, or -EINVAL with "$NAME: why, got 'value'" in err
 * (a bad value is refused at start, not on every reconcile pass). */
int profile_env_read(struct compile_opts *co, char *err, size_t errlen);

/* The value parsers the environment and the flags share; what names the
 * source in the message ("$IMEX_CHANNEL_COUNT", "--imex-channel-count").
 * 0, or -EINVAL with "WHAT: want ..., got 'v'" in err; *out is left alone
 * on error. */
int profile_parse_int(const char *what, const char *v, long lo, long hi, int *out,
		      char *err, size_t errlen);
/* true|1|yes|on, false|0|no|off, any case. */
int profile_parse_bool(const char *what, const char *v, bool *out, char *err, size_t errlen);
/* An absolute path without "/../" that fits a state path field, or "". */
int profile_parse_path(const char *what, const char *v, const char **out, char *err,
		       size_t errlen);

/* Go-style durations: "1m", "8s", "250ms", "1h30m", "1.5s", "0".  0 or
 * -EINVAL (*ms untouched). */
int parse_duration_ms(const char *s, uint64_t *ms);

#endif
