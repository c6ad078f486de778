/* The simulator table: one row per simulator with the worker binary, its
 * roles, the capability set it runs with, and the daemons it may ask the
 * supervisor to start (binary under libexecdir, env keys, capability set).
 * A worker's daemon spec is checked against its row before anything runs. */
#ifndef MOKKA_SUPERVISOR_SIMTABLE_H
#define MOKKA_SUPERVISOR_SIMTABLE_H

#include <stddef.h>

#include "ipc/proto.h"
#include "supervisor/supervisor.h"

extern const struct sim_def sim_table[];
extern const size_t sim_table_len;

/* The row's daemon that spec names, after checking the spec against it:
 * a known binary name, at most max_args arguments, only env keys the row
 * lists.  NULL with why in err otherwise (a protocol error of that
 * worker).  An empty spec (no daemon wanted) is not checked here. */
const struct daemon_def *simtable_check_daemon(const struct sim_def *def,
					       const struct ipc_daemon_spec *spec,
					       char *err, size_t errlen);

#endif
