/* The supervisor's shared state: workers, daemons, the desired state in
 * force and the reconcile pass in flight.  One instance, one loop. */
#ifndef MOKKA_SUPERVISOR_SUPERVISOR_H
#define MOKKA_SUPERVISOR_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/msg.h"
#include "ipc/proto.h"
#include "ipc/state.h"
#include "ipc/sendq.h"
#include "supervisor/backoff.h"
#include "supervisor/lifecycle.h"
#include "supervisor/loop.h"
#include "supervisor/options.h"
#include "supervisor/status.h"

struct source;

#define MAX_WORKERS 8
#define MAX_DAEMONS 8
#define STAGE_DEADLINE_MS 30000
#define APPLY_DEADLINE_MS 30000
#define HELLO_DEADLINE_MS 10000
#define STATUS_POLL_MS 2000
/* A failed pass is retried after 2 s, doubling to 30 s. */
#define RECONCILE_RETRY_FIRST_MS 2000
#define RECONCILE_RETRY_CAP_MS 30000

/* ROLE_STAGE_FIRST: this simulator's Stage runs to completion before the
 * parallel Stage of the others (cri withdraws CDI spec entries before
 * gpudriver prunes the device nodes they name, SURFACES.md §7.6). */
/* ROLE_RELOAD_OVERRIDES: this simulator's daemon also gets Reload (SIGHUP)
 * when the runtime overrides document changes (overrides_watch.c). */
/* ROLE_PUBLISH: after the barrier this simulator gets Publish, which makes
 * its staged generation live (workers/generation.h); with ROLE_STAGE_FIRST
 * its Publish completes before the others' (cri withdraws CDI entries of
 * departing GPUs before gpudriver's publish prunes their nodes). */
enum { ROLE_SIM = 1, ROLE_APPLY = 2, ROLE_DAEMON = 4, ROLE_STAGE_FIRST = 8,
       ROLE_RELOAD_OVERRIDES = 16, ROLE_PUBLISH = 32 };

/* A daemon a simulator may ask for (supervisor/simtable.c). */
struct daemon_def {
	const char *name;		/* binary in the libexec dir; also its name */
	int max_args;			/* argv entries, argv[0] included */
	const char *const *env_keys;	/* keys the worker may pass; NULL-terminated */
	const int *caps;		/* its capability set, -1 terminated */
};

struct sim_def {
	const char *name;
	const char *binary;		/* in the libexec dir */
	unsigned roles;
	const int *caps;		/* the worker's capability set, -1 terminated */
	const struct daemon_def *daemons;	/* may start; name == NULL ends; NULL = none */
};

/* One worker.  The lifecycle fields are lifecycle.c's alone (see
 * lifecycle.h); sock and sendq belong to the process layer (workers.c). */
struct worker_proc {
	const struct sim_def *def;
	struct supervisor *sup;		/* owner, for timer and fd callbacks */
	enum worker_state state;
	pid_t pid;			/* 0 = not running */
	struct worker_op op;		/* the last op reconcile asked for */
	uint64_t busy_seq;		/* seq of the command being executed */
	enum ipc_op busy_op;		/* and its op */
	bool came_back;			/* brought back by the restart timer */
	bool condemned;			/* failed for good once reaped */
	struct loop_timer deadline, restart;
	struct backoff bo;
	struct sim_status *st;
	int sock;			/* supervisor end, -1 when none */
	struct ipc_sendq sendq;		/* commands the socket did not take yet */
	/* daemon spec received in reply to run/reload, checked against the
	 * row; name "" = none wanted */
	struct ipc_daemon_spec spec;
};

struct daemon_proc {
	bool used;
	char owner[32];			/* simulator that described it */
	const struct daemon_def *def;	/* its row: binary and capabilities */
	char name[IPC_DAEMON_NAME_MAX], path[4096];	/* path: libexecdir/name */
	struct ipc_daemon_spec spec;	/* argv and env as checked */
	pid_t pid;
	bool wanted, stopping;
	struct backoff bo;
	struct supervisor *sup;		/* owner, for the timer callbacks */
	struct loop_timer restart, kill_timer;
	struct daemon_status *st;
};

enum pass_phase {
	PASS_IDLE, PASS_STAGE_FIRST, PASS_STAGE, PASS_PUBLISH_FIRST, PASS_PUBLISH, PASS_DAEMONS,
	PASS_APPLY,
	PASS_REVOKE, PASS_STOP_DAEMONS, PASS_DISCARD, PASS_DONE,
};

struct supervisor {
	struct options opt;
	struct loop *loop;
	const struct worker_io *wio;	/* processes and sockets (tests: fakes) */
	char libexecdir[4096];
	struct node_status status;
	struct sim_status sim_status[MAX_WORKERS];
	struct daemon_status daemon_status[MAX_DAEMONS];

	int nworkers;
	uint64_t next_seq;		/* of the ops sent to workers */
	struct worker_proc workers[MAX_WORKERS];
	struct daemon_proc daemons[MAX_DAEMONS];

	/* desired state */
	struct state state;
	bool have_state;
	int state_fd;			/* sealed memfd of state, -1 none */
	uint64_t next_gen;
	char *state_fingerprint;	/* the state without its generation */

	/* the pass in flight */
	enum pass_phase phase;
	uint64_t pass_gen;
	uint64_t pass_started_ms;
	bool pass_pending;		/* run again when the current pass ends */
	bool daemons_started;		/* first good barrier passed */
	uint64_t applied_gen;		/* last generation fully applied */
	uint64_t wave_started_ms;
	bool first_ready_sent;
	bool progressing, progress_again;	/* reconcile_progress re-entry */
	/* A failed pass is retried on its own, 2 s doubling to 30 s. */
	struct loop_timer retry;
	uint64_t retry_ms;

	struct loop_timer poll, watchdog;	/* main.c's ticks */
	struct source *overrides_src;		/* overrides_watch.c */
	bool overrides_seen;			/* its first read is the start */
	uint64_t watchdog_ms;

	bool shutting_down;
	struct loop_timer shutdown_deadline;
	int exit_code;
};

/* workers.c: the simulators selected by --simulators, over real
 * processes; lifecycle.h has the per-worker API. */
int workers_setup(struct supervisor *s);
void workers_start_all(struct supervisor *s);
bool workers_on_exit(struct supervisor *s, pid_t pid, int status);
void workers_poll_status(struct supervisor *s);
void workers_stop_all(struct supervisor *s);
bool workers_all_gone(const struct supervisor *s);
void workers_kill_all(struct supervisor *s);
struct worker_proc *worker_by_name(struct supervisor *s, const char *name);

/* daemons.c */
void daemons_apply_spec(struct supervisor *s, struct worker_proc *w, bool reload);
bool daemons_on_exit(struct supervisor *s, pid_t pid, int status);
void daemons_stop_all(struct supervisor *s);
bool daemons_all_stopped(const struct supervisor *s);
void daemons_reset_failed(struct supervisor *s);

/* overrides_watch.c: mokka-ctl's document -> Reload of the daemons that
 * act on it. */
int overrides_watch_start(struct supervisor *s);
void overrides_watch_stop(struct supervisor *s);

/* reconcile.c */
void reconcile_init(struct supervisor *s);
void reconcile_free(struct supervisor *s);
/* The one way worker news (a result, a hello, an exit) enters the pass. */
void reconcile_on_worker(struct supervisor *s, struct worker_proc *w);
void reconcile_request(struct supervisor *s);
void reconcile_progress(struct supervisor *s);
void reconcile_teardown(struct supervisor *s);
int reconcile_set_state(struct supervisor *s, struct state *st);

/* staging_gate.c: the NRI staging gate (exclusive flock + /stagedz) from
 * a pass's first Stage to its end, and from a teardown's start on. */
void staging_gate_begin(struct supervisor *s);
void staging_gate_end(struct supervisor *s, bool published);

#endif
