/* The worker lifecycle as one state x event table (see lifecycle.h).
 * Each cell is a small action that does the side effects and returns the
 * next state; an empty cell ignores the event.  Worker news that the
 * reconcile pass must see goes to reconcile_on_worker from one place,
 * dispatch(). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/supervisor.h"

enum worker_event {
	EV_START,		/* start it (boot, a teardown that needs it) */
	EV_SEND,		/* reconcile sends an op */
	EV_ABORT,
	EV_POLL,		/* STATUS */
	EV_HELLO,
	EV_RESULT,
	EV_DEADLINE,		/* hello or op deadline */
	EV_PROTOCOL_ERROR,
	EV_VIOLATION,		/* a protocol error that fails it for good */
	EV_EOF,
	EV_EXIT,
	EV_RESTART,		/* the backoff timer */
	EV_SHUTDOWN,
	EV_RESET,		/* a new desired state */
	EV_COUNT
};

struct event {
	enum worker_event type;
	enum ipc_op op;			/* EV_SEND */
	int fd;
	uint64_t deadline_ms;
	bool bring_up;
	uint64_t seq;			/* EV_RESULT */
	bool ok;
	const char *text;		/* result error, protocol error */
	int status;			/* EV_EXIT */
	int rc;				/* out: EV_SEND's outcome */
};

typedef enum worker_state (*action_fn)(struct worker_proc *w, struct event *e);

static const char *const state_names[WORKER_STATE_COUNT] = {
	[WORKER_DOWN] = "down", [WORKER_STARTING] = "starting", [WORKER_IDLE] = "idle",
	[WORKER_BUSY] = "busy", [WORKER_EXITING] = "exiting", [WORKER_STOPPING] = "stopping",
	[WORKER_BACKOFF] = "backoff", [WORKER_FAILED] = "failed",
};

/* Events that reconcile must hear about when they change something. */
static const bool notifies[EV_COUNT] = {
	[EV_HELLO] = true, [EV_RESULT] = true, [EV_DEADLINE] = true,
	[EV_PROTOCOL_ERROR] = true, [EV_VIOLATION] = true, [EV_EXIT] = true,
};

static void set_reason(struct worker_proc *w, const char *why)
{
	snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "%s", why);
}

/* ---- the op record ---- */

static void op_begin(struct worker_proc *w, const struct event *e)
{
	w->op.op = e->op;
	w->op.gen = w->sup->pass_gen;
	w->op.seq = 0;
	w->op.done = false;
	w->op.ok = false;
	w->op.pending = false;
	w->op.fd = e->fd;
	w->op.deadline_ms = e->deadline_ms;
	w->op.error[0] = '\0';
}

/* The op ends (unless it already did) as failed with why. */
static void op_fail(struct worker_proc *w, const char *why)
{
	if (w->op.done)
		return;
	w->op.done = true;
	w->op.ok = false;
	w->op.pending = false;
	snprintf(w->op.error, sizeof(w->op.error), "%s", why);
}

static enum worker_state kill_worker(struct worker_proc *w, const char *why);

static const char *const phase_names[IPC_PHASE_COUNT] = {
	[IPC_PHASE_HELLO] = "hello", [IPC_PHASE_IDLE] = "idle", [IPC_PHASE_BUSY] = "busy",
};

/* Every command goes out through here: one the worker would reject in phase
 * ph (ipc_worker_accepts) is our bug, so it is logged and not sent (the
 * worker would take it as a protocol error and exit). */
static int send_cmd(struct worker_proc *w, enum ipc_worker_phase ph, enum ipc_op op,
		    uint64_t gen, uint64_t seq, int fd)
{
	if (!ipc_worker_accepts(ph, op)) {
		log_error("worker %s: bug: %s is not legal for a worker in phase %s; not sent",
			  w->def->name, ipc_op_name(op),
			  ph < IPC_PHASE_COUNT ? phase_names[ph] : "?");
		return -EPROTO;
	}
	return w->sup->wio->send(w, op, gen, seq, fd);
}

/* Put the recorded op on the wire: the worker is BUSY with it.  The worker
 * is idle here: it was, or it has just said hello or sent its last result. */
static enum worker_state op_transmit(struct worker_proc *w)
{
	struct supervisor *s = w->sup;
	int r;

	w->op.pending = false;
	w->op.seq = ++s->next_seq;
	r = send_cmd(w, IPC_PHASE_IDLE, w->op.op, w->op.gen, w->op.seq, w->op.fd);
	if (r == -EPROTO) {	/* refused, nothing sent: the worker stays idle */
		char why[128];
		snprintf(why, sizeof(why), "%s is not a command a worker takes",
			 ipc_op_name(w->op.op));
		op_fail(w, why);
		return WORKER_IDLE;
	}
	if (r < 0) {
		/* A broken channel, or a worker that stopped reading (its send
		 * queue is full): it cannot be driven any more. */
		char why[128];
		snprintf(why, sizeof(why), "send %s: %s", ipc_op_name(w->op.op), strerror(-r));
		return kill_worker(w, why);
	}
	w->busy_seq = w->op.seq;
	w->busy_op = w->op.op;
	loop_timer_start(s->loop, &w->deadline, w->op.deadline_ms);
	return WORKER_BUSY;
}

/* ---- shared pieces of actions ---- */

/* Drop our side: the channel and any deadline. */
static void detach(struct worker_proc *w)
{
	w->sup->wio->detach(w);
	loop_timer_stop(w->sup->loop, &w->deadline);
}

/* Kill a misbehaving worker; its exit does the rest. */
static enum worker_state kill_worker(struct worker_proc *w, const char *why)
{
	detach(w);
	if (w->pid > 0)
		w->sup->wio->kill(w);
	log_warn("worker %s: %s", w->def->name, why);
	op_fail(w, why);
	return WORKER_EXITING;
}

/* A crash (or a failed spawn): restart with backoff; after a burst at the
 * longest backoff, never given up for good, so the node recovers on its
 * own once the cause goes away.  In a teardown nothing is restarted. */
static enum worker_state crashed(struct worker_proc *w)
{
	if (w->sup->shutting_down)
		return WORKER_DOWN;
	loop_timer_start(w->sup->loop, &w->restart,
			 backoff_crash(&w->bo, loop_now_ms(), "worker", w->def->name));
	return WORKER_BACKOFF;
}

static enum worker_state spawn(struct worker_proc *w)
{
	struct supervisor *s = w->sup;
	char err[512];
	int r;

	loop_timer_stop(s->loop, &w->restart);
	backoff_started(&w->bo, loop_now_ms());
	r = s->wio->spawn(w, &w->pid, err, sizeof(err));
	if (r < 0) {
		w->pid = 0;
		log_error("worker %s: %s", w->def->name, err);
		set_reason(w, err);
		op_fail(w, "worker could not be started");
		/* An exec failure is a crash for the restart policy. */
		return crashed(w);
	}
	w->st->pid = w->pid;
	loop_timer_start(s->loop, &w->deadline, HELLO_DEADLINE_MS);
	log_info("worker %s started (pid %d)", w->def->name, (int)w->pid);
	return WORKER_STARTING;
}

/* ---- actions ---- */

static enum worker_state act_start(struct worker_proc *w, struct event *e)
{
	return spawn(w);
}

static enum worker_state act_restart(struct worker_proc *w, struct event *e)
{
	if (w->sup->shutting_down)
		return WORKER_DOWN;
	w->came_back = true;
	return spawn(w);
}

/* An op to a worker that cannot take it now. */
static enum worker_state act_send_refused(struct worker_proc *w, struct event *e)
{
	char why[sizeof(w->op.error)];

	op_begin(w, e);
	if (w->state == WORKER_FAILED)	/* the violation it was failed for */
		snprintf(why, sizeof(why), "worker not running (failed: %s)",
			 w->st->not_ready_reason);
	else if (w->state == WORKER_BACKOFF && w->bo.throttled)
		snprintf(why, sizeof(why), "worker not running (restarting after %d crashes "
			 "in %d s)", BACKOFF_BURST, BACKOFF_RESET_MS / 1000);
	else
		snprintf(why, sizeof(why), "worker not running");
	op_fail(w, why);
	e->rc = -ESRCH;
	return w->state;
}

/* Down: with bring_up, start it and send after hello. */
static enum worker_state act_send_down(struct worker_proc *w, struct event *e)
{
	enum worker_state next;

	if (!e->bring_up)
		return act_send_refused(w, e);
	op_begin(w, e);
	w->op.pending = true;
	w->came_back = false;
	next = spawn(w);
	if (next != WORKER_STARTING)
		e->rc = -ESRCH;
	return next;
}

/* Starting or busy: with bring_up the op waits its turn. */
static enum worker_state act_send_wait(struct worker_proc *w, struct event *e)
{
	if (!e->bring_up) {
		if (w->state != WORKER_BUSY)
			return act_send_refused(w, e);
		/* The BUSY row: one command at a time. */
		op_fail(w, "worker busy");
		e->rc = -EBUSY;
		return w->state;
	}
	op_begin(w, e);
	w->op.pending = true;
	return w->state;
}

static enum worker_state act_send(struct worker_proc *w, struct event *e)
{
	enum worker_state next;

	op_begin(w, e);
	next = op_transmit(w);
	if (!w->op.ok && w->op.done)	/* refused (still idle), or the channel broke */
		e->rc = next == WORKER_IDLE ? -EPROTO : -EIO;
	return next;
}

static enum worker_state act_abort(struct worker_proc *w, struct event *e)
{
	if (!w->op.pending)
		send_cmd(w, worker_ipc_phase(w), IPC_OP_ABORT, w->op.gen, w->busy_seq, -1);
	return w->state;
}

static enum worker_state act_poll(struct worker_proc *w, struct event *e)
{
	/* STATUS does not make a worker busy: it only pushes ready. */
	send_cmd(w, worker_ipc_phase(w), IPC_OP_STATUS, w->sup->pass_gen, 0, -1);
	return w->state;
}

static enum worker_state act_hello(struct worker_proc *w, struct event *e)
{
	loop_timer_stop(w->sup->loop, &w->deadline);
	set_reason(w, "not staged yet");
	log_debug("worker %s: hello", w->def->name);
	return w->op.pending ? op_transmit(w) : WORKER_IDLE;
}

static enum worker_state act_result(struct worker_proc *w, struct event *e)
{
	if (e->seq != w->busy_seq)
		return w->state;	/* a reply to something we stopped waiting for */
	loop_timer_stop(w->sup->loop, &w->deadline);
	w->busy_seq = 0;
	if (w->op.pending)		/* the op before it finished: now the waiting one */
		return op_transmit(w);
	if (e->seq == w->op.seq && !w->op.done) {
		w->op.done = true;
		w->op.ok = e->ok;
		snprintf(w->op.error, sizeof(w->op.error), "%s",
			 e->text && *e->text ? e->text : "");
		if (!e->ok && !w->op.error[0])
			snprintf(w->op.error, sizeof(w->op.error), "%s failed",
				 ipc_op_name(w->op.op));
	}
	return WORKER_IDLE;
}

static enum worker_state act_deadline(struct worker_proc *w, struct event *e)
{
	char why[128];

	snprintf(why, sizeof(why), "%s timed out",
		 w->state == WORKER_STARTING ? "hello" : ipc_op_name(w->op.op));
	return kill_worker(w, why);
}

static enum worker_state act_protocol_error(struct worker_proc *w, struct event *e)
{
	return kill_worker(w, e->text);
}

static enum worker_state act_violation(struct worker_proc *w, struct event *e)
{
	w->condemned = true;
	set_reason(w, e->text);
	return kill_worker(w, e->text);
}

static enum worker_state act_eof(struct worker_proc *w, struct event *e)
{
	/* The worker is going; its exit does the rest. */
	detach(w);
	return w->state == WORKER_STOPPING ? WORKER_STOPPING : WORKER_EXITING;
}

static enum worker_state act_exit(struct worker_proc *w, struct event *e)
{
	struct supervisor *s = w->sup;
	char why[128];

	if (WIFSIGNALED(e->status))
		snprintf(why, sizeof(why), "worker exited on signal %d", WTERMSIG(e->status));
	else
		snprintf(why, sizeof(why), "worker exited with status %d", WEXITSTATUS(e->status));
	w->st->pid = 0;
	w->st->ready = false;
	if (!w->condemned)	/* keep saying what it did wrong */
		set_reason(w, why);
	detach(w);
	op_fail(w, why);
	w->busy_seq = 0;
	if (s->shutting_down)
		return WORKER_DOWN;
	log_warn("worker %s (pid %d): %s", w->def->name, (int)w->pid, why);
	w->st->restarts++;
	if (w->condemned) {
		w->st->failed = true;
		w->st->violation = true;
		log_error("worker %s: not restarting until the desired state changes",
			  w->def->name);
		return WORKER_FAILED;
	}
	return crashed(w);
}

static enum worker_state act_shutdown(struct worker_proc *w, struct event *e)
{
	/* No deadline of its own: the teardown's budget covers it. */
	loop_timer_stop(w->sup->loop, &w->deadline);
	send_cmd(w, worker_ipc_phase(w), IPC_OP_SHUTDOWN, w->sup->pass_gen, 0, -1);
	return WORKER_STOPPING;
}

/* Before its hello a worker takes no command (the table's hello row), and
 * its hello would then come to a stopping worker as a protocol error: it
 * has nothing staged yet, so it is stopped by signal. */
static enum worker_state act_shutdown_starting(struct worker_proc *w, struct event *e)
{
	detach(w);
	if (w->pid > 0)
		w->sup->wio->kill(w);
	op_fail(w, "shut down before hello");
	return WORKER_STOPPING;
}

static enum worker_state act_cancel_restart(struct worker_proc *w, struct event *e)
{
	loop_timer_stop(w->sup->loop, &w->restart);
	return WORKER_DOWN;
}

static enum worker_state act_reset(struct worker_proc *w, struct event *e)
{
	w->st->failed = false;
	w->st->violation = false;
	w->condemned = false;
	backoff_reset(&w->bo);
	w->came_back = false;
	return spawn(w);
}

/* The table: every (state, event) pair in one place.  Empty = ignored. */
#define KILLS [EV_PROTOCOL_ERROR] = act_protocol_error, [EV_VIOLATION] = act_violation
static const action_fn table[WORKER_STATE_COUNT][EV_COUNT] = {
	[WORKER_DOWN] = {
		[EV_START] = act_start, [EV_SEND] = act_send_down,
	},
	[WORKER_STARTING] = {
		[EV_SEND] = act_send_wait, [EV_HELLO] = act_hello, [EV_DEADLINE] = act_deadline,
		KILLS, [EV_EOF] = act_eof, [EV_EXIT] = act_exit,
		[EV_SHUTDOWN] = act_shutdown_starting,
	},
	[WORKER_IDLE] = {
		[EV_SEND] = act_send, [EV_POLL] = act_poll,
		KILLS, [EV_EOF] = act_eof, [EV_EXIT] = act_exit, [EV_SHUTDOWN] = act_shutdown,
	},
	[WORKER_BUSY] = {
		[EV_SEND] = act_send_wait, [EV_ABORT] = act_abort, [EV_RESULT] = act_result,
		[EV_DEADLINE] = act_deadline,
		KILLS, [EV_EOF] = act_eof, [EV_EXIT] = act_exit, [EV_SHUTDOWN] = act_shutdown,
	},
	[WORKER_EXITING] = {
		[EV_SEND] = act_send_refused, [EV_EXIT] = act_exit,
	},
	[WORKER_STOPPING] = {
		[EV_SEND] = act_send_refused, KILLS, [EV_EOF] = act_eof, [EV_EXIT] = act_exit,
	},
	[WORKER_BACKOFF] = {
		[EV_START] = act_start, [EV_SEND] = act_send_down, [EV_RESTART] = act_restart,
		[EV_SHUTDOWN] = act_cancel_restart, [EV_RESET] = act_reset,
	},
	[WORKER_FAILED] = {
		[EV_SEND] = act_send_down, [EV_RESET] = act_reset,
	},
};
#undef KILLS

static void dispatch(struct worker_proc *w, struct event *e)
{
	action_fn fn = table[w->state][e->type];
	enum worker_state from = w->state;

	if (!fn)
		return;
	w->state = fn(w, e);
	if (w->state == WORKER_DOWN || w->state == WORKER_BACKOFF || w->state == WORKER_FAILED)
		w->pid = 0;
	worker_sync_status(w);
	if (w->state != from)
		log_debug("worker %s: %s -> %s", w->def->name, state_names[from],
			  state_names[w->state]);
	if (notifies[e->type])
		reconcile_on_worker(w->sup, w);
}

static void deadline_fire(struct loop *l, void *arg)
{
	dispatch(arg, &(struct event){ .type = EV_DEADLINE });
}

static void restart_fire(struct loop *l, void *arg)
{
	dispatch(arg, &(struct event){ .type = EV_RESTART });
}

int workers_add(struct supervisor *s, const struct sim_def *def)
{
	struct worker_proc *w;
	int i = s->nworkers;

	if (i >= MAX_WORKERS)
		return -ENOSPC;
	w = &s->workers[i];
	memset(w, 0, sizeof(*w));
	w->def = def;
	w->sup = s;
	w->state = WORKER_DOWN;
	w->sock = -1;
	w->op.fd = -1;
	ipc_sendq_init(&w->sendq);
	loop_timer_init(&w->deadline, deadline_fire, w);
	loop_timer_init(&w->restart, restart_fire, w);
	w->st = &s->sim_status[i];
	w->bo.seed = (uint32_t)getpid() * 2654435761u + (uint32_t)i;
	snprintf(w->st->name, sizeof(w->st->name), "%s", def->name);
	set_reason(w, "starting");
	w->st->stage_ok = true;
	s->nworkers++;
	s->status.nsims = s->nworkers;
	s->status.sims = s->sim_status;
	return 0;
}

/* ---- the API ---- */

int worker_send_op(struct worker_proc *w, enum ipc_op op, int fd, uint64_t deadline_ms,
		   bool bring_up)
{
	struct event e = { .type = EV_SEND, .op = op, .fd = fd, .deadline_ms = deadline_ms,
			   .bring_up = bring_up };

	dispatch(w, &e);
	return e.rc;
}

/* Events that carry nothing but their type. */
static void signal_event(struct worker_proc *w, enum worker_event type)
{
	dispatch(w, &(struct event){ .type = type });
}

void worker_start(struct worker_proc *w) { signal_event(w, EV_START); }
void worker_abort(struct worker_proc *w) { signal_event(w, EV_ABORT); }
void worker_poll_status(struct worker_proc *w) { signal_event(w, EV_POLL); }
void worker_shutdown(struct worker_proc *w) { signal_event(w, EV_SHUTDOWN); }
void worker_reset_failed(struct worker_proc *w) { signal_event(w, EV_RESET); }
void worker_on_hello(struct worker_proc *w) { signal_event(w, EV_HELLO); }
void worker_on_eof(struct worker_proc *w) { signal_event(w, EV_EOF); }

void worker_on_result(struct worker_proc *w, uint64_t seq, bool ok, const char *error)
{
	dispatch(w, &(struct event){ .type = EV_RESULT, .seq = seq, .ok = ok, .text = error });
}

void worker_on_protocol_error(struct worker_proc *w, const char *why)
{
	dispatch(w, &(struct event){ .type = EV_PROTOCOL_ERROR, .text = why });
}

void worker_on_violation(struct worker_proc *w, const char *why)
{
	dispatch(w, &(struct event){ .type = EV_VIOLATION, .text = why });
}

void worker_on_exit(struct worker_proc *w, int status)
{
	dispatch(w, &(struct event){ .type = EV_EXIT, .status = status });
}

/* ---- views ---- */

enum worker_state worker_state(const struct worker_proc *w) { return w->state; }

const char *worker_state_name(enum worker_state st)
{
	return st < WORKER_STATE_COUNT ? state_names[st] : "invalid";
}

/* Which worker messages are legal now (ipc_supervisor_accepts). */
enum ipc_worker_phase worker_ipc_phase(const struct worker_proc *w)
{
	switch (w->state) {
	case WORKER_IDLE:
		return IPC_PHASE_IDLE;
	case WORKER_BUSY:
	case WORKER_STOPPING:	/* a last result or ready may still come */
		return IPC_PHASE_BUSY;
	default:
		return IPC_PHASE_HELLO;
	}
}

bool worker_is_idle(const struct worker_proc *w) { return w->state == WORKER_IDLE; }
bool worker_is_settling(const struct worker_proc *w) { return w->state == WORKER_STARTING; }
bool worker_op_done(const struct worker_proc *w) { return w->op.done; }
bool worker_op_ok(const struct worker_proc *w) { return w->op.done && w->op.ok; }
const char *worker_op_error(const struct worker_proc *w) { return w->op.error; }

bool worker_take_came_back(struct worker_proc *w)
{
	bool b = w->came_back;

	w->came_back = false;
	return b;
}
