/* The worker lifecycle table (supervisor/lifecycle.c) driven through fake
 * workers: hello, ops and results, the BUSY row, deadlines, protocol
 * errors, crashes with backoff, the 5-in-60 s throttle (never a give-up)
 * and the failed state of a violation. */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include <criterion/criterion.h>

#include "fake_workers_fixture.h"

static const struct sim_def defs[] = {
	{ .name = "solo", .binary = "mokka-worker-solo", .roles = ROLE_SIM, .caps = no_caps },
};

static void setup(void)
{
	fake_setup(defs, 1);
}

TestSuite(lifecycle, .init = setup, .fini = fake_teardown);

Test(lifecycle, hello_op_result)
{
	struct worker_proc *w = W(0);

	cr_assert_eq(worker_state(w), WORKER_DOWN);
	worker_start(w);
	cr_assert_eq(worker_state(w), WORKER_STARTING);
	cr_assert_eq(w->pid, 1000);
	cr_assert_eq(w->st->pid, 1000);
	cr_assert(loop_timer_armed(&w->deadline), "no hello deadline");
	cr_assert(worker_is_settling(w));
	worker_on_hello(w);
	cr_assert(worker_is_idle(w));
	cr_assert_not(loop_timer_armed(&w->deadline));
	cr_assert_str_eq(w->st->not_ready_reason, "not staged yet");

	cr_assert_eq(worker_send_op(w, IPC_OP_STAGE, 7, 30000, false), 0);
	cr_assert_eq(worker_state(w), WORKER_BUSY);
	cr_assert_eq(fk.nsent, 1);
	cr_assert_eq(fk.sent[0].op, IPC_OP_STAGE);
	cr_assert_eq(fk.sent[0].fd, 7);
	cr_assert(loop_timer_armed(&w->deadline));
	cr_assert_not(worker_op_done(w));

	/* a reply to an older seq is no answer */
	worker_on_result(w, fk.sent[0].seq + 100, true, "");
	cr_assert_eq(worker_state(w), WORKER_BUSY);
	cr_assert_not(worker_op_done(w));

	worker_on_result(w, fk.sent[0].seq, false, "dev/nvidia0: mknod: Permission denied");
	cr_assert(worker_is_idle(w));
	cr_assert(worker_op_done(w));
	cr_assert_not(worker_op_ok(w));
	cr_assert_str_eq(worker_op_error(w), "dev/nvidia0: mknod: Permission denied");
	cr_assert_not(loop_timer_armed(&w->deadline));
}

Test(lifecycle, failure_without_errors_is_named_after_the_op)
{
	fake_boot();
	worker_send_op(W(0), IPC_OP_APPLY, -1, 1000, false);
	fake_reply(0, false, "");
	cr_assert_str_eq(worker_op_error(W(0)), "apply failed");
}

Test(lifecycle, op_to_a_worker_that_is_not_up_fails_at_once)
{
	struct worker_proc *w = W(0);

	cr_assert_eq(worker_send_op(w, IPC_OP_STAGE, -1, 1000, false), -ESRCH);
	cr_assert(worker_op_done(w));
	cr_assert_str_eq(worker_op_error(w), "worker not running");
	worker_start(w);
	/* starting: no hello yet */
	cr_assert_eq(worker_send_op(w, IPC_OP_STAGE, -1, 1000, false), -ESRCH);
	cr_assert_str_eq(worker_op_error(w), "worker not running");
	cr_assert_eq(fk.nsent, 0);
}

Test(lifecycle, busy_row_one_command_at_a_time)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	/* only abort (and status, shutdown) may reach a busy worker */
	cr_assert_eq(worker_send_op(w, IPC_OP_APPLY, -1, 1000, false), -EBUSY);
	cr_assert_eq(fk.nsent, 1);
	worker_abort(w);
	cr_assert_eq(fk.nsent, 2);
	cr_assert_eq(fk.sent[1].op, IPC_OP_ABORT);
	cr_assert_eq(fk.sent[1].seq, fk.sent[0].seq, "abort names the op in flight");
	/* status polls go to idle workers only */
	worker_poll_status(w);
	cr_assert_eq(fk.nsent, 2);
}

Test(lifecycle, teardown_op_waits_for_the_op_in_flight)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	cr_assert_eq(worker_send_op(w, IPC_OP_REVOKE, -1, 1000, true), 0);
	cr_assert_eq(fk.nsent, 1, "sent while busy");
	cr_assert_not(worker_op_done(w));
	fake_reply(0, true, "");
	/* the stage result is dropped; the revoke goes out now */
	cr_assert_eq(fk.nsent, 2);
	cr_assert_eq(fk.sent[1].op, IPC_OP_REVOKE);
	cr_assert_eq(worker_state(w), WORKER_BUSY);
	cr_assert_not(worker_op_done(w));
	fake_reply(0, true, "");
	cr_assert(worker_op_ok(w));
}

Test(lifecycle, teardown_op_brings_a_down_worker_up)
{
	struct worker_proc *w = W(0);

	cr_assert_eq(worker_send_op(w, IPC_OP_DISCARD, -1, 1000, true), 0);
	cr_assert_eq(worker_state(w), WORKER_STARTING);
	cr_assert_eq(fk.spawns[0], 1);
	cr_assert_eq(fk.nsent, 0);
	worker_on_hello(w);
	cr_assert_eq(fk.nsent, 1);
	cr_assert_eq(fk.sent[0].op, IPC_OP_DISCARD);
	cr_assert_eq(worker_state(w), WORKER_BUSY);
}

Test(lifecycle, a_worker_that_stopped_reading_is_killed)
{
	struct worker_proc *w = W(0);

	fake_boot();
	fk.send_fails = 1;
	cr_assert_eq(worker_send_op(w, IPC_OP_STAGE, -1, 1000, false), -EIO);
	cr_assert_eq(fk.kills[0], 1);
	cr_assert_eq(worker_state(w), WORKER_EXITING);
	cr_assert_str_eq(worker_op_error(w), "send stage: No buffer space available");
}

Test(lifecycle, deadline_kills_and_fails_the_op)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	fake_fire(&w->deadline);
	cr_assert_eq(fk.kills[0], 1);
	cr_assert_eq(worker_state(w), WORKER_EXITING);
	cr_assert(worker_op_done(w));
	cr_assert_str_eq(worker_op_error(w), "stage timed out");
	/* the exit that follows restarts it with backoff */
	fake_exit(0, 0);
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
	cr_assert_eq(w->pid, 0);
	cr_assert(loop_timer_armed(&w->restart));
	cr_assert_eq(w->st->restarts, 1);
}

Test(lifecycle, hello_deadline)
{
	worker_start(W(0));
	fake_fire(&W(0)->deadline);
	cr_assert_eq(fk.kills[0], 1);
	cr_assert_eq(worker_state(W(0)), WORKER_EXITING);
}

Test(lifecycle, protocol_error_kills)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	worker_on_protocol_error(w, "protocol error: message not legal in this phase");
	cr_assert_eq(fk.kills[0], 1);
	cr_assert_geq(fk.detaches[0], 1);
	cr_assert_str_eq(worker_op_error(w), "protocol error: message not legal in this phase");
	fake_exit(0, 0);
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
}

Test(lifecycle, eof_then_exit)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	worker_on_eof(w);
	cr_assert_eq(worker_state(w), WORKER_EXITING);
	cr_assert_not(worker_op_done(w), "failed before the exit says why");
	worker_on_exit(w, W_EXITCODE(0, SIGSEGV));
	cr_assert_str_eq(worker_op_error(w), "worker exited on signal 11");
	cr_assert_str_eq(w->st->not_ready_reason, "worker exited on signal 11");
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
}

Test(lifecycle, crash_restarts_with_backoff_and_comes_back)
{
	struct worker_proc *w = W(0);
	uint64_t d;

	fake_boot();
	fake_exit(0, 1);
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
	/* first crash: about 1 s (+-10 %), and never two starts within 1 s */
	d = fake_due_in(&w->restart);
	cr_assert_geq(d, 850);
	cr_assert_leq(d, 1100);
	fake_fire(&w->restart);
	cr_assert_eq(worker_state(w), WORKER_STARTING);
	cr_assert_eq(fk.spawns[0], 2);
	worker_on_hello(w);
	cr_assert(worker_take_came_back(w) == false, "came_back is taken by reconcile");
}

/* Issue 19 changed this on purpose: five crashes in a minute used to fail
 * the worker until the desired state changed (WORKER_FAILED, no timer);
 * now it is retried at the longest backoff, for ever, and says so. */
Test(lifecycle, five_crashes_in_a_minute_throttle_never_give_up)
{
	struct worker_proc *w = W(0);

	fake_boot();
	for (int i = 0; i < BACKOFF_BURST - 1; i++) {
		fake_exit(0, 1);
		cr_assert_eq(worker_state(w), WORKER_BACKOFF, "crash %d", i + 1);
		cr_assert_not(w->st->throttled, "crash %d", i + 1);
		fake_fire(&w->restart);
		worker_on_hello(w);
	}
	fake_exit(0, 1);
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
	cr_assert_not(w->st->failed);
	cr_assert(w->st->throttled);
	cr_assert(loop_timer_armed(&w->restart));
	uint64_t d = fake_due_in(&w->restart);
	cr_assert_geq(d, BACKOFF_CAP_MS * 9 / 10 - 100, "%lu", (unsigned long)d);
	cr_assert_leq(d, BACKOFF_CAP_MS * 11 / 10, "%lu", (unsigned long)d);
	cr_assert_eq(w->st->restarts, BACKOFF_BURST);
	cr_assert_neq(w->st->down_since, 0);
	cr_assert_geq(w->st->next_try, time(NULL) + 25);
	/* an op says why */
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	cr_assert_str_eq(worker_op_error(w),
			 "worker not running (restarting after 5 crashes in 60 s)");
	/* and the timer brings it back; crashing again keeps the throttle */
	for (int k = 0; k < 3; k++) {
		fake_fire(&w->restart);
		cr_assert_eq(worker_state(w), WORKER_STARTING);
		cr_assert_not(w->st->throttled, "running: not reported throttled");
		cr_assert_eq(w->st->down_since, 0);
		cr_assert_eq(w->st->next_try, 0);
		worker_on_hello(w);
		fake_exit(0, 1);
		cr_assert_eq(worker_state(w), WORKER_BACKOFF);
		cr_assert(w->st->throttled);
		cr_assert_geq(fake_due_in(&w->restart), BACKOFF_CAP_MS * 9 / 10 - 100);
	}
	/* a new desired state starts it now, with a fresh budget */
	worker_reset_failed(w);
	cr_assert_eq(worker_state(w), WORKER_STARTING);
	cr_assert_not(w->st->throttled);
	cr_assert_not(loop_timer_armed(&w->restart));
}

Test(lifecycle, violation_fails_for_good)
{
	struct worker_proc *w = W(0);

	fake_boot();
	worker_send_op(w, IPC_OP_RUN, -1, 1000, false);
	worker_on_violation(w, "daemon spec rejected: mokka-evil: not in this simulator's row");
	cr_assert_eq(fk.kills[0], 1);
	fake_exit(0, 0);
	cr_assert_eq(worker_state(w), WORKER_FAILED);
	cr_assert(w->st->failed);
	cr_assert_not(loop_timer_armed(&w->restart));
	cr_assert_str_eq(w->st->not_ready_reason,
			 "daemon spec rejected: mokka-evil: not in this simulator's row");
	cr_assert(w->st->violation);
	/* an op says why: the violation, not the restart limit */
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	cr_assert_str_eq(worker_op_error(w), "worker not running (failed: daemon spec "
			 "rejected: mokka-evil: not in this simulator's row)");
	worker_reset_failed(w);
	cr_assert_not(w->st->failed);
	cr_assert_not(w->st->violation);
}

Test(lifecycle, spawn_failure_is_a_crash)
{
	struct worker_proc *w = W(0);

	fk.spawn_fails = 1;
	worker_start(w);
	cr_assert_eq(worker_state(w), WORKER_BACKOFF);
	cr_assert_eq(w->pid, 0);
	cr_assert_str_eq(w->st->not_ready_reason, "exec /fake/solo: No such file or directory");
	cr_assert(loop_timer_armed(&w->restart));
	/* in a teardown nothing is restarted, and a teardown op says so */
	fk.s.shutting_down = true;
	cr_assert_eq(worker_send_op(w, IPC_OP_DISCARD, -1, 1000, true), -ESRCH);
	cr_assert_str_eq(worker_op_error(w), "worker could not be started");
	cr_assert_eq(worker_state(w), WORKER_DOWN);
}

Test(lifecycle, shutdown)
{
	struct worker_proc *w = W(0);

	fake_boot();
	fk.s.shutting_down = true;
	worker_shutdown(w);
	cr_assert_eq(fk.sent[fk.nsent - 1].op, IPC_OP_SHUTDOWN);
	cr_assert_eq(worker_state(w), WORKER_STOPPING);
	fake_exit(0, 0);
	cr_assert_eq(worker_state(w), WORKER_DOWN);
	cr_assert_eq(w->pid, 0);
	cr_assert_not(loop_timer_armed(&w->restart), "restarted in a teardown");
}

Test(lifecycle, an_illegal_send_is_refused_not_sent)
{
	struct worker_proc *w = W(0);

	fake_boot();
	/* not a command a worker takes: our bug, refused before the wire */
	cr_assert_eq(worker_send_op(w, IPC_OP_HELLO, -1, 1000, false), -EPROTO);
	cr_assert_eq(fk.nsent, 0);
	cr_assert(worker_op_done(w));
	cr_assert_not(worker_op_ok(w));
	cr_assert_str_eq(worker_op_error(w), "hello is not a command a worker takes");
	cr_assert_eq(worker_state(w), WORKER_IDLE, "still idle, not killed");
	cr_assert_eq(fk.kills[0], 0);
	/* and it still takes a legal one */
	cr_assert_eq(worker_send_op(w, IPC_OP_STAGE, -1, 1000, false), 0);
	cr_assert_eq(fk.nsent, 1);
	cr_assert_eq(worker_state(w), WORKER_BUSY);
}

Test(lifecycle, shutdown_before_hello_sends_nothing)
{
	struct worker_proc *w = W(0);

	fk.s.shutting_down = true;
	worker_start(w);
	cr_assert_eq(worker_state(w), WORKER_STARTING);
	worker_shutdown(w);
	/* the hello row: nothing may reach it before its hello; a signal stops it */
	cr_assert_eq(fk.nsent, 0);
	cr_assert_eq(fk.kills[0], 1);
	cr_assert_eq(worker_state(w), WORKER_STOPPING);
	cr_assert_not(loop_timer_armed(&w->deadline));
	fake_exit(0, 0);
	cr_assert_eq(worker_state(w), WORKER_DOWN);
}

Test(lifecycle, shutdown_cancels_a_pending_restart)
{
	struct worker_proc *w = W(0);

	fake_boot();
	fake_exit(0, 1);
	cr_assert(loop_timer_armed(&w->restart));
	worker_shutdown(w);
	cr_assert_eq(worker_state(w), WORKER_DOWN);
	cr_assert_not(loop_timer_armed(&w->restart));
}

Test(lifecycle, ipc_phase_follows_the_state)
{
	struct worker_proc *w = W(0);

	cr_assert_eq(worker_ipc_phase(w), IPC_PHASE_HELLO);
	worker_start(w);
	cr_assert_eq(worker_ipc_phase(w), IPC_PHASE_HELLO);
	worker_on_hello(w);
	cr_assert_eq(worker_ipc_phase(w), IPC_PHASE_IDLE);
	worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
	cr_assert_eq(worker_ipc_phase(w), IPC_PHASE_BUSY);
	cr_assert_str_eq(worker_state_name(worker_state(w)), "busy");
}

/* ---- every (state, event) pair ---- */

/* Bring worker 0 into st the way it gets there in life. */
static void drive_to(enum worker_state st)
{
	struct worker_proc *w = W(0);

	if (st == WORKER_DOWN)
		return;
	worker_start(w);
	if (st == WORKER_STARTING)
		return;
	worker_on_hello(w);
	switch (st) {
	case WORKER_BUSY:
		worker_send_op(w, IPC_OP_STAGE, -1, 1000, false);
		break;
	case WORKER_EXITING:
		worker_on_eof(w);
		break;
	case WORKER_STOPPING:
		worker_shutdown(w);
		break;
	case WORKER_BACKOFF:
		fake_exit(0, 1);
		break;
	case WORKER_FAILED:	/* only a violation leads here */
		worker_on_violation(w, "daemon spec rejected: test");
		fake_exit(0, 0);
		break;
	default:
		break;
	}
	cr_assert_eq(worker_state(w), st, "driven to %s, got %s", worker_state_name(st),
		     worker_state_name(worker_state(w)));
}

enum { N_EVENTS = 16 };

/* A timer's event even where it is not armed (a late one), disarmed first
 * as the loop does. */
static void fire_anyway(struct loop_timer *t)
{
	loop_timer_stop(fk.s.loop, t);
	t->cb(fk.s.loop, t->arg);
}

static void fire_event(int ev)
{
	struct worker_proc *w = W(0);

	switch (ev) {
	case 0: worker_start(w); break;
	case 1: worker_send_op(w, IPC_OP_APPLY, -1, 1000, false); break;
	case 2: worker_send_op(w, IPC_OP_REVOKE, -1, 1000, true); break;
	case 3: worker_abort(w); break;
	case 4: worker_poll_status(w); break;
	case 5: worker_on_hello(w); break;
	case 6: worker_on_result(w, w->busy_seq, true, ""); break;
	case 7: worker_on_result(w, 424242, false, "stale"); break;
	case 8: fire_anyway(&w->deadline); break;
	case 9: worker_on_protocol_error(w, "protocol error: test"); break;
	case 10: worker_on_violation(w, "daemon spec rejected: test"); break;
	case 11: worker_on_eof(w); break;
	case 12: fake_exit(0, 2); break;
	case 13: fire_anyway(&w->restart); break;
	case 14: worker_shutdown(w); break;
	case 15: worker_reset_failed(w); break;
	}
}

/* What must hold in every state, whatever happened before. */
static void check_invariants(enum worker_state from, int ev)
{
	struct worker_proc *w = W(0);
	enum worker_state st = worker_state(w);
	bool running = st == WORKER_STARTING || st == WORKER_IDLE || st == WORKER_BUSY ||
		       st == WORKER_EXITING || st == WORKER_STOPPING;

	cr_assert_lt(st, WORKER_STATE_COUNT);
	cr_assert_eq(w->pid != 0, running, "%s + event %d -> %s with pid %d",
		     worker_state_name(from), ev, worker_state_name(st), (int)w->pid);
	cr_assert_eq(loop_timer_armed(&w->restart), st == WORKER_BACKOFF,
		     "%s + event %d -> %s: restart timer", worker_state_name(from), ev,
		     worker_state_name(st));
	cr_assert_eq(loop_timer_armed(&w->deadline), st == WORKER_STARTING || st == WORKER_BUSY,
		     "%s + event %d -> %s: deadline", worker_state_name(from), ev,
		     worker_state_name(st));
	cr_assert_eq(w->st->failed, st == WORKER_FAILED || (from == WORKER_FAILED &&
		     st != WORKER_FAILED && ev != 15), "%s + event %d -> %s: failed flag",
		     worker_state_name(from), ev, worker_state_name(st));
	if (st == WORKER_BUSY)
		cr_assert_neq(w->busy_seq, 0u);
	/* what /healthz reads follows the state (issue 20) */
	bool down = st == WORKER_DOWN || st == WORKER_BACKOFF || st == WORKER_FAILED ||
		    st == WORKER_EXITING;
	if (!down)
		cr_assert_eq(w->st->down_since, 0, "%s + event %d -> %s: down_since",
			     worker_state_name(from), ev, worker_state_name(st));
	else if (st != WORKER_DOWN)
		cr_assert_neq(w->st->down_since, 0, "%s + event %d -> %s: down_since",
			      worker_state_name(from), ev, worker_state_name(st));
	cr_assert_eq(w->st->next_try != 0, st == WORKER_BACKOFF, "%s + event %d -> %s: next_try",
		     worker_state_name(from), ev, worker_state_name(st));
	cr_assert(!w->st->throttled || down);
}

static void sweep(bool shutting_down)
{
	for (int st = 0; st < WORKER_STATE_COUNT; st++)
		for (int ev = 0; ev < N_EVENTS; ev++) {
			fake_teardown();
			fake_setup(defs, 1);
			drive_to((enum worker_state)st);
			fk.s.shutting_down = shutting_down;
			fire_event(ev);
			check_invariants((enum worker_state)st, ev);
		}
}

Test(lifecycle, every_state_event_pair_keeps_the_invariants)
{
	sweep(false);
}

Test(lifecycle, every_state_event_pair_in_a_teardown)
{
	sweep(true);
}
