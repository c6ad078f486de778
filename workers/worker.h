/* Private to the worker framework: the worker's own state and the
 * operations shared by IPC mode (worker_ipc.c) and the CLI
 * (worker_main.c). */
#ifndef MOKKA_WORKERS_WORKER_H
#define MOKKA_WORKERS_WORKER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "ipc/sendq.h"
#include "ipc/state.h"
#include "workers/manifest.h"
#include "workers/simulator.h"

enum { WORKER_EXIT_OK = 0, WORKER_EXIT_USAGE = 2, WORKER_EXIT_PROTOCOL = 3,
       WORKER_EXIT_FAILED = 4 };

struct worker {
	const struct simulator *sim;
	struct sim_ctx ctx;
	struct state state;
	bool have_state;
	int sock;		/* -1 in CLI mode */
	struct ipc_sendq sendq;	/* frames the non-blocking socket did not take yet */
	/* What arrived while busy (the BUSY row of ipc_worker_accepts). */
	bool busy, abort_seen, status_seen, shutdown_seen;
	char proto_error[256];	/* set: a message the BUSY row forbids */
	char bindir[PATH_MAX], libdir[PATH_MAX];
	/* A Stage succeeded and its generation waits for Publish; own is
	 * every path this simulator owned then or before (its own entries in
	 * a shared surface, told from another simulator's). */
	bool staged, published;
	struct manifest own;
	/* Incremental reconcile (stage_skip.h): the digests the live
	 * generation was rendered from (valid after its publish), those of
	 * the pass in flight, and whether this pass's Stage was skipped. */
	struct {
		uint64_t state, inputs, output;
		bool valid;
	} last, pending;
	bool skipped;
	/* The last Stage rendered nothing: a Reload in its pass would have
	 * the daemon re-read what it already holds (kept past Publish). */
	bool stage_skipped;
	uint64_t state_key;	/* of the state received last */
	uint64_t state_raw;	/* its bytes' digest */
	bool state_key_ok;
};

/* The one worker of this process (sim_aborted needs it). */
extern struct worker *the_worker;

void worker_manifest_file(const struct worker *w, const char *kind, char *buf, size_t len);
int worker_stage(struct worker *w, struct sim_errors *errs);
int worker_publish(struct worker *w, struct sim_errors *errs);
int worker_apply(struct worker *w, struct sim_errors *errs);
int worker_discard(struct worker *w, struct sim_errors *errs);
int worker_revoke(struct worker *w, struct sim_errors *errs);
bool worker_ready(struct worker *w, char *reason, size_t len);
int worker_ipc_mode(struct worker *w);
/* While busy: read what the supervisor sent meanwhile.  True when the
 * running op should stop (abort, shutdown, EOF, protocol error). */
bool worker_busy_poll(struct worker *w);

#endif
