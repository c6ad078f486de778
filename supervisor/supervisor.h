/* The supervisor's shared state: workers, daemons, the desired state in
 * force and the reconcile pass in flight.  One instance, one loop. */
#ifndef MOKKA_SUPERVISOR_SUPERVISOR_H
#define MOKKA_SUPERVISOR_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/msg.h"
#include "ipc/state.h"
#include "supervisor/backoff.h"
#include "supervisor/loop.h"
#include "supervisor/options.h"
#include "supervisor/status.h"

#define MAX_WORKERS 8
#define MAX_DAEMONS 8
#define STAGE_DEADLINE_MS 30000
#define APPLY_DEADLINE_MS 30000
#define HELLO_DEADLINE_MS 10000
#define STATUS_POLL_MS 2000

/* ROLE_STAGE_FIRST: this simulator's Stage runs to completion before the
 * parallel Stage of the others (cri withdraws CDI spec entries before
 * gpudriver prunes the device nodes they name, SURFACES.md §7.6). */
/* ROLE_RELOAD_OVERRIDES: this simulator's daemon also gets Reload (SIGHUP)
 * when the runtime overrides document changes (overrides_watch.c). */
enum { ROLE_SIM = 1, ROLE_APPLY = 2, ROLE_DAEMON = 4, ROLE_STAGE_FIRST = 8,
       ROLE_RELOAD_OVERRIDES = 16 };

struct sim_def {
	const char *name;
	const char *binary;		/* in the libexec dir */
	unsigned roles;
	const int *caps;		/* capability bounding set, -1 terminated */
};

struct worker_proc {
	const struct sim_def *def;
	pid_t pid;			/* 0 = not running */
	int sock;			/* supervisor end, -1 when none */
	enum ipc_worker_phase phase;
	enum ipc_op op;			/* op in flight (phase BUSY) */
	uint64_t op_gen, op_seq;
	bool op_done, op_ok;
	char op_error[512];
	enum ipc_op deferred_op;	/* teardown op to send after hello */
	struct loop_timer *deadline;
	struct loop_timer *restart;
	struct backoff bo;
	bool restarted;			/* a restart: re-run the pass on hello */
	struct sim_status *st;
	/* daemon spec received in reply to run/reload */
	bool have_spec;
	char spec_name[64], spec_path[4096], spec_reload[4096];
	char *spec_argv[17], *spec_env[17];
};

struct daemon_proc {
	bool used;
	char owner[32];			/* simulator that described it */
	char name[64], path[4096];
	char *argv[17], *env[17];
	pid_t pid;
	bool wanted, stopping;
	struct backoff bo;
	struct loop_timer *restart, *kill_timer;
	struct daemon_status *st;
};

enum pass_phase {
	PASS_IDLE, PASS_STAGE_FIRST, PASS_STAGE, PASS_DAEMONS, PASS_APPLY,
	PASS_REVOKE, PASS_STOP_DAEMONS, PASS_DISCARD, PASS_DONE,
};

struct supervisor {
	struct options opt;
	struct loop *loop;
	char libexecdir[4096];
	struct node_status status;
	struct sim_status sim_status[MAX_WORKERS];
	struct daemon_status daemon_status[MAX_DAEMONS];

	int nworkers;
	struct worker_proc workers[MAX_WORKERS];
	struct daemon_proc daemons[MAX_DAEMONS];

	/* desired state */
	struct state state;
	bool have_state;
	int state_fd;			/* sealed memfd of state, -1 none */
	uint64_t next_gen;

	/* the pass in flight */
	enum pass_phase phase;
	uint64_t pass_gen;
	uint64_t pass_started_ms;
	bool pass_pending;		/* run again when the current pass ends */
	bool daemons_started;		/* first good barrier passed */
	uint64_t applied_gen;		/* last generation fully applied */
	uint64_t wave_started_ms;
	bool first_ready_sent;

	bool shutting_down;
	struct loop_timer *shutdown_deadline;
	int exit_code;
};

/* workers.c */
int workers_setup(struct supervisor *s);
void workers_start_all(struct supervisor *s);
int worker_send(struct supervisor *s, struct worker_proc *w, enum ipc_op op, int fd,
		uint64_t deadline_ms);
void workers_on_exit(struct supervisor *s, pid_t pid, int status);
void workers_poll_status(struct supervisor *s);
void workers_stop_all(struct supervisor *s);
int workers_spawn_for_teardown(struct supervisor *s, struct worker_proc *w);
bool workers_all_gone(const struct supervisor *s);
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
void overrides_watch_stop(void);

/* reconcile.c */
void reconcile_request(struct supervisor *s);
void reconcile_progress(struct supervisor *s);
void reconcile_teardown(struct supervisor *s);
int reconcile_set_state(struct supervisor *s, struct state *st);

#endif
