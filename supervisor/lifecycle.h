/* The worker lifecycle: one state x event table (lifecycle.c), s6-supervise
 * style.  Everything that happens to a worker (spawned, hello, an op sent,
 * its result, a deadline, a protocol error, EOF, exit, the restart timer,
 * shutdown, a new desired state) is an event; the table says what each
 * state does with it.  Nobody else writes a worker's lifecycle fields:
 * reconcile.c sends ops and reads results through the functions below.
 *
 * Processes and sockets sit behind struct worker_io (workers.c has the
 * real one: fork+exec, the IPC socket), so unit tests drive fake workers
 * through the real table. */
#ifndef MOKKA_SUPERVISOR_LIFECYCLE_H
#define MOKKA_SUPERVISOR_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/msg.h"

struct supervisor;
struct worker_proc;
struct sim_def;

enum worker_state {
	WORKER_DOWN,		/* not running, nothing scheduled */
	WORKER_STARTING,	/* spawned, waiting for hello (deadline armed) */
	WORKER_IDLE,		/* ready for an op */
	WORKER_BUSY,		/* an op in flight (deadline armed) */
	WORKER_EXITING,		/* killed or its socket closed: waiting to reap */
	WORKER_STOPPING,	/* shutdown sent: waiting to reap */
	WORKER_BACKOFF,		/* crashed: the restart timer is armed (after a
				 * burst of crashes at the longest backoff) */
	WORKER_FAILED,		/* a protocol violation: down until the desired
				 * state changes (crashes never end here) */
	WORKER_STATE_COUNT
};

/* The last op reconcile asked of a worker and how it ended.  done is set
 * when it finished, failed, or could not be sent at all. */
struct worker_op {
	enum ipc_op op;
	uint64_t gen, seq;
	bool done, ok;
	bool pending;			/* waits for hello or the op in flight */
	int fd;				/* for a pending send (borrowed) */
	uint64_t deadline_ms;
	char error[512];
};

/* The process/IPC layer.  spawn sets *pid (and whatever channel it keeps
 * in the worker); send is one command; detach drops the channel; kill is
 * SIGKILL.  Messages and exits come back through worker_on_*(). */
struct worker_io {
	int (*spawn)(struct worker_proc *w, pid_t *pid, char *err, size_t errlen);
	int (*send)(struct worker_proc *w, enum ipc_op op, uint64_t gen, uint64_t seq, int fd);
	void (*detach)(struct worker_proc *w);
	void (*kill)(struct worker_proc *w);
};
extern const struct worker_io worker_io_process;	/* workers.c */

/* Add a worker for def to s (s->wio must be set).  0 or -ENOSPC. */
int workers_add(struct supervisor *s, const struct sim_def *def);

/* ---- what reconcile and main ask ---- */
void worker_start(struct worker_proc *w);
/* Send op (fd: the state memfd or -1).  With bring_up, a worker that is
 * down or starting is started and a busy one finishes first: the op waits
 * (teardown).  Otherwise an op to a worker that is not idle fails at once.
 * 0, or -errno with the op done and failed. */
int worker_send_op(struct worker_proc *w, enum ipc_op op, int fd, uint64_t deadline_ms,
		   bool bring_up);
void worker_abort(struct worker_proc *w);	/* fail-fast: ABORT to a busy worker */
void worker_poll_status(struct worker_proc *w);	/* STATUS to an idle worker */
void worker_shutdown(struct worker_proc *w);
/* A new desired state: a failed worker, or one waiting out its backoff,
 * starts now with a fresh burst budget. */
void worker_reset_failed(struct worker_proc *w);

/* ---- what the IPC layer and the reaper report ---- */
void worker_on_hello(struct worker_proc *w);
void worker_on_result(struct worker_proc *w, uint64_t seq, bool ok, const char *error);
void worker_on_protocol_error(struct worker_proc *w, const char *why);
/* Like a protocol error, but the worker stays failed (not restarted) until
 * the desired state changes: it asked for something its row forbids. */
void worker_on_violation(struct worker_proc *w, const char *why);
void worker_on_eof(struct worker_proc *w);
void worker_on_exit(struct worker_proc *w, int status);

/* lifecycle_status.c: the worker's sim_status (down since, next try,
 * throttled) from its state; called by the table after every event. */
void worker_sync_status(struct worker_proc *w);

/* ---- read-only views ---- */
enum worker_state worker_state(const struct worker_proc *w);
const char *worker_state_name(enum worker_state st);
enum ipc_worker_phase worker_ipc_phase(const struct worker_proc *w);
bool worker_is_idle(const struct worker_proc *w);
bool worker_is_settling(const struct worker_proc *w);	/* spawned, no hello yet */
bool worker_op_done(const struct worker_proc *w);
bool worker_op_ok(const struct worker_proc *w);
const char *worker_op_error(const struct worker_proc *w);
/* True once after the hello of a worker the restart timer brought back:
 * it must re-stage the current generation. */
bool worker_take_came_back(struct worker_proc *w);

#endif
