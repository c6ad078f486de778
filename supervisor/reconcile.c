/* One reconcile pass (ARCHITECTURE.md §3) and the teardown (§10), as a
 * phase machine driven by worker results:
 *
 *   STAGE_FIRST (ROLE_STAGE_FIRST simulators, to completion; errors kept)
 *   STAGE (the other simulators, parallel; every error collected)
 *     -> any failed: report, no daemons, no Apply; keep what is published
 *     -> DAEMONS (run once, later reload) -> APPLY (appliers, fail-fast)
 *   teardown: REVOKE -> STOP_DAEMONS -> DISCARD -> DONE
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/sdnotify.h"
#include "supervisor/supervisor.h"

static const char *const phase_names[] = {
	[PASS_IDLE] = "idle", [PASS_STAGE_FIRST] = "stage-first", [PASS_STAGE] = "stage",
	[PASS_DAEMONS] = "daemons",
	[PASS_APPLY] = "apply", [PASS_REVOKE] = "revoke",
	[PASS_STOP_DAEMONS] = "stop-daemons", [PASS_DISCARD] = "discard", [PASS_DONE] = "done",
};

static bool has_role(const struct worker_proc *w, unsigned role)
{
	return (w->def->roles & role) != 0;
}

/* Send op to every worker with role but none of skip; returns how many
 * were addressed. */
static int wave_mask(struct supervisor *s, unsigned role, unsigned skip, enum ipc_op op,
		     int fd, uint64_t deadline)
{
	int n = 0;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (!has_role(w, role) || has_role(w, skip))
			continue;
		n++;
		w->deferred_op = IPC_OP_INVALID;
		if (s->shutting_down && (!w->pid || w->phase == IPC_PHASE_HELLO)) {
			/* Teardown runs even for a worker that is down: bring it
			 * back and send the op after its hello. */
			w->op = op;
			w->op_done = false;
			w->deferred_op = op;
			if (!w->pid && workers_spawn_for_teardown(s, w) < 0) {
				w->deferred_op = IPC_OP_INVALID;
				w->op_done = true;
				w->op_ok = false;
				snprintf(w->op_error, sizeof(w->op_error), "worker could not be started");
			}
			continue;
		}
		worker_send(s, w, op, fd, deadline);
	}
	return n;
}

static int wave(struct supervisor *s, unsigned role, enum ipc_op op, int fd, uint64_t deadline)
{
	s->wave_started_ms = loop_now_ms();
	return wave_mask(s, role, 0, op, fd, deadline);
}

static bool wave_done(const struct supervisor *s, unsigned role)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && !s->workers[i].op_done)
			return false;
	return true;
}

static bool wave_ok(const struct supervisor *s, unsigned role)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && !s->workers[i].op_ok)
			return false;
	return true;
}

/* Fail-fast: some worker finished the op and failed (one still running
 * has op_ok false too, which is no failure). */
static bool wave_failed(const struct supervisor *s, unsigned role)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && s->workers[i].op_done &&
		    !s->workers[i].op_ok)
			return true;
	return false;
}

static bool workers_settling(const struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid && s->workers[i].phase == IPC_PHASE_HELLO)
			return true;
	return false;
}

/* A failed pass is retried on its own (2 s doubling to 30 s), so a node
 * recovers when the cause goes away (a full disk, a read-only target)
 * without waiting for the next state change. */
#define RETRY_FIRST_MS 2000
#define RETRY_CAP_MS 30000
static struct loop_timer *retry_timer;
static uint64_t retry_ms;

static void retry_fire(struct loop *l, void *arg)
{
	(void)l;
	retry_timer = NULL;
	reconcile_request(arg);
}

static void schedule_retry(struct supervisor *s, bool failed)
{
	if (!failed) {
		retry_ms = 0;
		return;
	}
	retry_ms = retry_ms ? retry_ms * 2 : RETRY_FIRST_MS;
	if (retry_ms > RETRY_CAP_MS)
		retry_ms = RETRY_CAP_MS;
	if (!retry_timer)
		retry_timer = loop_timer_after(s->loop, retry_ms, retry_fire, s);
}

/* The parallel Stage of every simulator the first wave did not stage; the
 * wave's clock keeps running from the first wave. */
static void start_stage(struct supervisor *s)
{
	s->phase = PASS_STAGE;
	log_debug("reconcile: generation %llu: parallel stage", (unsigned long long)s->pass_gen);
	/* Nobody left to stage (only first-stagers run): go on now. */
	if (wave_mask(s, ROLE_SIM, ROLE_STAGE_FIRST, IPC_OP_STAGE, s->state_fd,
		      STAGE_DEADLINE_MS) == 0)
		reconcile_progress(s);
}

static void start_pass(struct supervisor *s)
{
	/* This pass is the retry, if one was pending. */
	if (retry_timer) {
		loop_timer_cancel(s->loop, retry_timer);
		retry_timer = NULL;
	}
	s->pass_gen = s->state.generation;
	s->pass_started_ms = loop_now_ms();
	log_info("reconcile: generation %llu: stage", (unsigned long long)s->pass_gen);
	/* The first-stagers alone, then everyone else (start_stage). */
	s->phase = PASS_STAGE_FIRST;
	if (wave(s, ROLE_STAGE_FIRST, IPC_OP_STAGE, s->state_fd, STAGE_DEADLINE_MS) == 0 ||
	    wave_done(s, ROLE_STAGE_FIRST))
		start_stage(s);
}

void reconcile_request(struct supervisor *s)
{
	if (s->shutting_down || !s->have_state)
		return;
	s->pass_pending = true;
	reconcile_progress(s);
}

static void finish_stage(struct supervisor *s)
{
	double secs = (double)(loop_now_ms() - s->wave_started_ms) / 1000.0;
	time_t now = time(NULL);
	bool ok = true;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (!has_role(w, ROLE_SIM))
			continue;
		w->st->last_stage_seconds = secs;
		if (w->op_ok) {
			w->st->stage_ok = true;
			w->st->stage_error[0] = '\0';
			w->st->failing_since = 0;
			continue;
		}
		ok = false;
		w->st->stage_failures++;
		if (w->st->stage_ok || !w->st->failing_since)
			w->st->failing_since = now;
		w->st->stage_ok = false;
		snprintf(w->st->stage_error, sizeof(w->st->stage_error), "%s", w->op_error);
		log_error("reconcile: generation %llu: stage %s failed: %s",
			  (unsigned long long)s->pass_gen, w->def->name, w->op_error);
	}
	if (ok) {
		s->status.last_stage_ok = true;
		s->status.stage_failing_since = 0;
	} else {
		if (s->status.last_stage_ok || !s->status.stage_failing_since)
			s->status.stage_failing_since = now;
		s->status.last_stage_ok = false;
	}
}

static void finish_pass(struct supervisor *s, bool ok)
{
	s->status.passes_total++;
	schedule_retry(s, !ok);
	if (!ok) {
		s->status.passes_failed++;
		log_warn("reconcile: generation %llu failed; keeping what generation %llu published",
			 (unsigned long long)s->pass_gen, (unsigned long long)s->applied_gen);
	} else {
		s->applied_gen = s->pass_gen;
		s->status.generation = s->pass_gen;
		log_info("reconcile: generation %llu published in %llu ms",
			 (unsigned long long)s->pass_gen,
			 (unsigned long long)(loop_now_ms() - s->pass_started_ms));
		/* Readiness may have changed with the publish: ask now rather
		 * than at the next poll. */
		workers_poll_status(s);
		if (!s->first_ready_sent) {
			s->first_ready_sent = true;
			sd_notify_send("READY=1\nSTATUS=node published");
		}
	}
	s->phase = PASS_IDLE;
}

static void start_daemons(struct supervisor *s)
{
	enum ipc_op op = s->daemons_started ? IPC_OP_RELOAD : IPC_OP_RUN;

	s->phase = PASS_DAEMONS;
	if (wave(s, ROLE_DAEMON, op, -1, STAGE_DEADLINE_MS) == 0)
		reconcile_progress(s);
}

static void finish_daemons(struct supervisor *s)
{
	bool reload = s->daemons_started;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (!has_role(w, ROLE_DAEMON))
			continue;
		if (w->op_ok)
			daemons_apply_spec(s, w, reload);
		else
			log_error("reconcile: %s: daemon description failed: %s", w->def->name,
				  w->op_error);
	}
	s->daemons_started = true;
}

static void abort_appliers(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (has_role(w, ROLE_APPLY) && !w->op_done && w->sock >= 0)
			ipc_send_op(w->sock, IPC_OP_ABORT, s->pass_gen, w->op_seq, NULL, -1);
	}
}

static void finish_apply(struct supervisor *s)
{
	double secs = (double)(loop_now_ms() - s->wave_started_ms) / 1000.0;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (!has_role(w, ROLE_APPLY))
			continue;
		w->st->last_apply_seconds = secs;
		if (!w->op_ok) {
			w->st->apply_failures++;
			log_error("reconcile: generation %llu: apply %s failed: %s",
				  (unsigned long long)s->pass_gen, w->def->name, w->op_error);
		}
	}
}

static void send_deferred(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (w->deferred_op != IPC_OP_INVALID && w->phase == IPC_PHASE_IDLE && w->sock >= 0) {
			enum ipc_op op = w->deferred_op;
			w->deferred_op = IPC_OP_INVALID;
			worker_send(s, w, op, -1, s->opt.shutdown_ms);
		}
	}
}

static void teardown_step(struct supervisor *s)
{
	switch (s->phase) {
	case PASS_REVOKE:
		send_deferred(s);
		if (!wave_done(s, ROLE_APPLY))
			return;
		for (int i = 0; i < s->nworkers; i++)
			if (has_role(&s->workers[i], ROLE_APPLY) && !s->workers[i].op_ok)
				log_warn("teardown: revoke %s: %s", s->workers[i].def->name,
					 s->workers[i].op_error);
		s->phase = PASS_STOP_DAEMONS;
		daemons_stop_all(s);
		/* fall through */
	case PASS_STOP_DAEMONS:
		if (!daemons_all_stopped(s))
			return;
		s->phase = PASS_DISCARD;
		wave(s, ROLE_SIM, IPC_OP_DISCARD, -1, s->opt.shutdown_ms);
		/* fall through */
	case PASS_DISCARD:
		send_deferred(s);
		if (!wave_done(s, ROLE_SIM))
			return;
		for (int i = 0; i < s->nworkers; i++)
			if (has_role(&s->workers[i], ROLE_SIM) && !s->workers[i].op_ok)
				log_warn("teardown: discard %s: %s", s->workers[i].def->name,
					 s->workers[i].op_error);
		s->phase = PASS_DONE;
		workers_stop_all(s);
		/* fall through */
	case PASS_DONE:
		if (workers_all_gone(s) && daemons_all_stopped(s))
			loop_stop(s->loop);
		return;
	default:
		return;
	}
}

void reconcile_progress(struct supervisor *s)
{
	if (s->shutting_down) {
		teardown_step(s);
		return;
	}
	switch (s->phase) {
	case PASS_IDLE:
		if (s->pass_pending && s->have_state && !workers_settling(s)) {
			s->pass_pending = false;
			start_pass(s);
		}
		return;
	case PASS_STAGE_FIRST:
		if (!wave_done(s, ROLE_STAGE_FIRST))
			return;
		start_stage(s);
		return;
	case PASS_STAGE:
		if (!wave_done(s, ROLE_SIM))
			return;
		finish_stage(s);
		if (!s->status.last_stage_ok) {
			finish_pass(s, false);
			reconcile_progress(s);
			return;
		}
		start_daemons(s);
		return;
	case PASS_DAEMONS:
		if (!wave_done(s, ROLE_DAEMON))
			return;
		finish_daemons(s);
		s->phase = PASS_APPLY;
		if (wave(s, ROLE_APPLY, IPC_OP_APPLY, -1, APPLY_DEADLINE_MS) == 0) {
			finish_pass(s, true);
			reconcile_progress(s);
		}
		return;
	case PASS_APPLY:
		if (!wave_done(s, ROLE_APPLY)) {
			if (wave_failed(s, ROLE_APPLY))
				abort_appliers(s);	/* fail fast */
			return;
		}
		finish_apply(s);
		finish_pass(s, wave_ok(s, ROLE_APPLY));
		reconcile_progress(s);
		return;
	default:
		log_error("reconcile: unexpected phase %s", phase_names[s->phase]);
		return;
	}
}

/* The compiled state without its generation, to tell a real change from
 * bytes that differ but mean the same (whitespace, comments, restore). */
static char *last_fingerprint;

int reconcile_set_state(struct supervisor *s, struct state *st)
{
	char *json, *fp;
	size_t len;
	int fd, r;

	st->generation = 0;
	if ((r = state_encode(st, &fp, &len)) < 0)
		return r;
	if (last_fingerprint && strcmp(fp, last_fingerprint) == 0 && s->have_state) {
		free(fp);
		state_free(st);
		log_info("desired state: compiles to generation %llu unchanged; nothing to do",
			 (unsigned long long)s->state.generation);
		return 1;
	}
	free(last_fingerprint);
	last_fingerprint = fp;
	st->generation = ++s->next_gen;
	if ((r = state_encode(st, &json, &len)) < 0)
		return r;
	fd = ipc_memfd_sealed("mokka-state", json, len);
	free(json);
	if (fd < 0)
		return fd;
	if (s->state_fd >= 0)
		close(s->state_fd);
	s->state_fd = fd;
	if (s->have_state)
		state_free(&s->state);
	s->state = *st;
	s->have_state = true;
	s->status.have_state = true;
	/* A new desired state gives failed units another chance. */
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (w->st->failed) {
			w->st->failed = false;
			backoff_reset(&w->bo);
			if (!w->pid && !w->restart)
				workers_spawn_for_teardown(s, w);
		}
	}
	daemons_reset_failed(s);
	reconcile_request(s);
	return 0;
}

static void shutdown_deadline(struct loop *l, void *arg)
{
	struct supervisor *s = arg;

	s->shutdown_deadline = NULL;
	log_error("teardown: --shutdown-timeout reached in phase %s; killing what is left",
		  phase_names[s->phase]);
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid)
			kill(s->workers[i].pid, SIGKILL);
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (s->daemons[i].used && s->daemons[i].pid)
			kill(s->daemons[i].pid, SIGKILL);
	s->exit_code = 1;
	loop_stop(l);
}

void reconcile_teardown(struct supervisor *s)
{
	if (s->shutting_down)
		return;
	s->shutting_down = true;
	s->status.shutting_down = true;
	sd_notify_send("STOPPING=1");
	log_info("teardown: revoke, stop daemons, discard (budget %llu ms)",
		 (unsigned long long)s->opt.shutdown_ms);
	/* The teardown's own budget, independent of whatever was cancelled. */
	s->shutdown_deadline = loop_timer_after(s->loop, s->opt.shutdown_ms, shutdown_deadline, s);
	s->pass_pending = false;
	if (retry_timer) {
		loop_timer_cancel(s->loop, retry_timer);
		retry_timer = NULL;
	}
	s->phase = PASS_REVOKE;
	wave(s, ROLE_APPLY, IPC_OP_REVOKE, -1, s->opt.shutdown_ms);
	teardown_step(s);
}
