/* A simulator is a table of operations; workers/worker_main.c drives it
 * from IPC (under the supervisor) or from the command line (standalone). */
#ifndef MOKKA_WORKERS_SIMULATOR_H
#define MOKKA_WORKERS_SIMULATOR_H

#include <stdbool.h>
#include <stddef.h>
#include "ipc/proto.h"
#include "ipc/state.h"
#include "workers/host.h"
#include "workers/stage_skip.h"

enum sim_role {
	SIM_ROLE_STAGE = 1 << 0,	/* stage/discard */
	SIM_ROLE_APPLY = 1 << 1,	/* apply/revoke */
	SIM_ROLE_DAEMON = 1 << 2,	/* describes a daemon the supervisor runs */
};

#define SIM_MAX_ERRORS IPC_MAX_ERRORS

/* Errors of one operation, each attributed to a surface. */
struct sim_errors {
	int n;
	struct {
		char surface[128];
		char message[512];
	} e[SIM_MAX_ERRORS];
};

void sim_error(struct sim_errors *errs, const char *surface, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct sim_ctx {
	struct host host;		/* root + the ownership manifest in use */
	const char *name;		/* simulator name */
	const char *bindir;		/* where our binaries live (shims, stand-alone daemons) */
	const char *libdir;		/* where our shims live */
	bool ready;
	char not_ready_reason[256];
	void *priv;			/* simulator's own */
};

struct simulator {
	const char *name;
	unsigned roles;
	/* Stage: idempotent, converging.  Record everything created through
	 * ctx->host.  Add errors to errs and return -errno on failure. */
	int (*stage)(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
	int (*apply)(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
	/* Publish, after the supervisor's barrier (may be NULL): what may
	 * change only for a pass whose every Stage succeeded, done before the
	 * generational surfaces (gens) swap. */
	int (*publish)(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
	/* Describe the daemon (SIM_ROLE_DAEMON) in the IPC's one spec type;
	 * out->name is a bare binary name the supervisor resolves under its
	 * libexecdir and checks against this simulator's row.  Also writes
	 * the daemon's state file (reload_file) so Reload is "rewrite +
	 * SIGHUP".  Leaving out->name empty asks for no daemon. */
	int (*daemon)(struct sim_ctx *ctx, const struct state *s,
		      struct ipc_daemon_spec *out, struct sim_errors *errs);
	/* Extra teardown beyond removing the manifest (may be NULL). */
	int (*discard)(struct sim_ctx *ctx, struct sim_errors *errs);
	int (*revoke)(struct sim_ctx *ctx, struct sim_errors *errs);
	/* Readiness beyond "last Stage succeeded" (may be NULL): return true
	 * or false with a reason. */
	bool (*ready)(struct sim_ctx *ctx, const struct state *s, char *reason, size_t len);
	/* Generational surfaces (workers/generation.h), paths under the mock
	 * root, NULL-terminated; NULL: Stage writes live.  Stage renders them
	 * into a shadow and only Publish, after the supervisor's barrier,
	 * makes them live: one atomic swap per surface.  Each must be
	 * written by this simulator alone, up to what it lists elsewhere. */
	const char *const *gens;
	/* Incremental reconcile (workers/stage_skip.h), for a simulator with
	 * gens: non-NULL, a Stage whose inputs and published output did not
	 * change since its last publish renders and swaps nothing.  inputs
	 * adds what Stage reads besides the state (files it copies in, host
	 * files); stage_ignores names the state's top-level members Stage
	 * never reads (a change there does not re-render; keep it exact). */
	void (*inputs)(struct sim_ctx *ctx, const struct state *s, struct skip_key *k);
	const char *const *stage_ignores;
};

/* An inputs callback for a Stage that reads the state alone. */
void sim_inputs_state_only(struct sim_ctx *ctx, const struct state *s, struct skip_key *k);

/* Between surfaces a long Apply may ask whether the supervisor cancelled
 * the wave (fail-fast); it then stops and reports "aborted". */
bool sim_aborted(struct sim_ctx *ctx);

/* The worker binary's main: IPC mode when fd 3 is a socket and no verb is
 * given, else the standalone CLI. */
int worker_main(int argc, char **argv, const struct simulator *sim);

#endif
