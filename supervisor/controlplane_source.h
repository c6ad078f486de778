/* --state-source controlplane:FILE|DIR (issue 14): the control plane's
 * per-node document (mokka-plan's SGPUNodeState for --node-name: FILE is
 * one document or mokka-plan's stream, DIR holds <node>.yaml) watched like
 * the profile and merged into it before it is compiled
 * (profile/controlplane.c).  A missing or bad document keeps the last good
 * plan in force. */
#ifndef MOKKA_SUPERVISOR_CONTROLPLANE_SOURCE_H
#define MOKKA_SUPERVISOR_CONTROLPLANE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "supervisor/loop.h"

/* Re-run the profile update with the last profile and topology bytes. */
typedef void (*cps_rerun_fn)(void *arg, const char *profile, size_t plen, const char *topo,
			     size_t tlen);

/* 0, or -EINVAL (spec not controlplane:PATH; message logged) / -errno. */
int cps_start(struct loop *l, const char *spec, const char *node, uint64_t resync_ms,
	      cps_rerun_fn rerun, void *arg);
void cps_stop(void);

/* Remember the profile and topology; *out = the profile with the plan
 * merged (malloc'd), or NULL when there is no plan (compile profile as
 * is).  0 or -errno with err. */
int cps_filter(const char *profile, size_t plen, const char *topo, size_t tlen, char **out,
	       size_t *olen, char *err, size_t errlen);

#endif
