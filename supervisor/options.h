/* Command-line flags of mokka-supervisor (reference-compatible names). */
#ifndef MOKKA_SUPERVISOR_OPTIONS_H
#define MOKKA_SUPERVISOR_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "ipc/log.h"
#include "profile/compile.h"
#include "profile/env.h"	/* parse_duration_ms */

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
	const char *simulators;		/* comma list; NULL = all */
	const char *mock_root;		/* host path of R */
	const char *staging_lock;	/* host path of the NRI staging lock, "" = none */
	const char *state_source;	/* controlplane:FILE|DIR, NULL = the profile only */
	char nri_stagedz[128];		/* host:port mokka-nri reads /stagedz at (options_nri.c) */
	/* What the profile compiler gets: the defaults and the environment
	 * (profile_env_read, profile/env.h) with the flags over them:
	 * --node-name, --nvidia-smi, --ib-*, --container-runtime*, --nri-*,
	 * --imex-*, --kernel-log; mock_root is the one above. */
	struct compile_opts compile;
};

/* 0 = run, 1 = exit 0 (help/version printed), -EINVAL = usage error
 * (message printed). */
int options_parse(int argc, char **argv, struct options *o);

/* options_imex.c: the IMEX majors against each other and nvidia's (0, or
 * -EINVAL with the message printed). */
int options_imex_check(const struct options *o);

/* options_nri.c: what the NRI plugin gets from the supervisor's own flags
 * (the staging lock, /stagedz's host:port) into o->compile. */
void options_nri(struct options *o);

#endif
