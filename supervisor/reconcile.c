/* One reconcile pass (ARCHITECTURE.md §3) and the teardown (§10), as a
 * phase machine driven by worker news (reconcile_on_worker, the one way
 * in).  Workers are reached only through the lifecycle API (lifecycle.h):
 *
 *   STAGE_FIRST (ROLE_STAGE_FIRST simulators, to completion; errors kept)
 *   STAGE (the other simulators, parallel; every error collected)
 *     -> any failed: report, no publish, no daemons, no Apply; keep what
 *        is published
 *     -> PUBLISH_FIRST (ROLE_STAGE_FIRST publishers, to completion)
 *     -> PUBLISH (the other ROLE_PUBLISH simulators: the staged generation
 *        goes live, one atomic swap per surface)
 *     -> any failed: report, no daemons, no Apply
 *     -> DAEMONS (run once, later reload)
 *     -> APPLY (appliers, fail-fast)
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
	[PASS_PUBLISH_FIRST] = "publish-first", [PASS_PUBLISH] = "publish",
	[PASS_DAEMONS] = "daemons",
	[PASS_APPLY] = "apply", [PASS_REVOKE] = "revoke",
	[PASS_STOP_DAEMONS] = "stop-daemons", [PASS_DISCARD] = "discard", [PASS_DONE] = "done",
};

static bool has_role(const struct worker_proc *w, unsigned role)
{
	return (w->def->roles & role) != 0;
}

/* Send op to every worker with all of role's bits but none of skip;
 * returns how many were addressed. */
static int wave_mask(struct supervisor *s, unsigned role, unsigned skip, enum ipc_op op,
		     int fd, uint64_t deadline)
{
	int n = 0;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if ((w->def->roles & role) != role || has_role(w, skip))
			continue;
		n++;
		/* Teardown runs even for a worker that is down or busy: it is
		 * brought back, or finishes first, and then gets the op. */
		worker_send_op(w, op, fd, deadline, s->shutting_down);
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
		if (has_role(&s->workers[i], role) && !worker_op_done(&s->workers[i]))
			return false;
	return true;
}

static bool wave_ok(const struct supervisor *s, unsigned role)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && !worker_op_ok(&s->workers[i]))
			return false;
	return true;
}

/* Fail-fast: some worker finished the op and failed (one still running
 * has no result yet, which is no failure). */
static bool wave_failed(const struct supervisor *s, unsigned role)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && worker_op_done(&s->workers[i]) &&
		    !worker_op_ok(&s->workers[i]))
			return true;
	return false;
}

static bool workers_settling(const struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (worker_is_settling(&s->workers[i]))
			return true;
	return false;
}

/* A failed pass is retried on its own (2 s doubling to 30 s), so a node
 * recovers when the cause goes away (a full disk, a read-only target)
 * without waiting for the next state change. */
static void retry_fire(struct loop *l, void *arg)
{
	reconcile_request(arg);
}

static void schedule_retry(struct supervisor *s, bool failed)
{
	if (!failed) {
		s->retry_ms = 0;
		return;
	}
	s->retry_ms = s->retry_ms ? s->retry_ms * 2 : RECONCILE_RETRY_FIRST_MS;
	if (s->retry_ms > RECONCILE_RETRY_CAP_MS)
		s->retry_ms = RECONCILE_RETRY_CAP_MS;
	if (!loop_timer_armed(&s->retry))
		loop_timer_start(s->loop, &s->retry, s->retry_ms);
}

static void shutdown_deadline(struct loop *l, void *arg);

void reconcile_init(struct supervisor *s)
{
	loop_timer_init(&s->retry, retry_fire, s);
	loop_timer_init(&s->shutdown_deadline, shutdown_deadline, s);
}

void reconcile_free(struct supervisor *s)
{
	loop_timer_stop(s->loop, &s->retry);
	loop_timer_stop(s->loop, &s->shutdown_deadline);
	free(s->state_fingerprint);
	s->state_fingerprint = NULL;
}

/* A Stage writes a file per attribute of every GPU and HCA (about 200
 * paths an HCA, each an atomic write): its deadline grows with the node
 * beyond the 8-GPU, 8-HCA one the base deadline was sized for, so a
 * 64-GPU, 256-HCA node on a slow disk is never killed as hung. */
static uint64_t stage_deadline_ms(const struct supervisor *s)
{
	uint64_t ms = STAGE_DEADLINE_MS;

	if (s->state.num_devices > 8)
		ms += 250 * (uint64_t)(s->state.num_devices - 8);
	if (s->state.ib.enabled && s->state.ib.num_hcas > 8)
		ms += 500 * (uint64_t)(s->state.ib.num_hcas - 8);
	return ms;
}

/* The parallel Stage of every simulator the first wave did not stage; the
 * wave's clock keeps running from the first wave. */
static void start_stage(struct supervisor *s)
{
	s->phase = PASS_STAGE;
	log_debug("reconcile: generation %llu: parallel stage", (unsigned long long)s->pass_gen);
	wave_mask(s, ROLE_SIM, ROLE_STAGE_FIRST, IPC_OP_STAGE, s->state_fd, stage_deadline_ms(s));
}

static void start_pass(struct supervisor *s)
{
	/* This pass is the retry, if one was pending. */
	loop_timer_stop(s->loop, &s->retry);
	s->pass_gen = s->state.generation;
	s->pass_started_ms = loop_now_ms();
	staging_gate_begin(s);
	log_info("reconcile: generation %llu: stage", (unsigned long long)s->pass_gen);
	/* The first-stagers alone, then everyone else (start_stage). */
	s->phase = PASS_STAGE_FIRST;
	wave(s, ROLE_STAGE_FIRST, IPC_OP_STAGE, s->state_fd, stage_deadline_ms(s));
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
		if (worker_op_ok(w)) {
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
		snprintf(w->st->stage_error, sizeof(w->st->stage_error), "%s", worker_op_error(w));
		log_error("reconcile: generation %llu: stage %s failed: %s",
			  (unsigned long long)s->pass_gen, w->def->name, worker_op_error(w));
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
	staging_gate_end(s, ok);
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

/* Daemons start once, on the first good barrier; later passes Reload. */
static void start_daemons(struct supervisor *s);

/* Only a pass whose every Stage succeeded gets here: the staged
 * generations go live, the first publishers alone, then the others. */
static void start_publish_first(struct supervisor *s)
{
	s->phase = PASS_PUBLISH_FIRST;
	s->wave_started_ms = loop_now_ms();
	wave_mask(s, ROLE_PUBLISH | ROLE_STAGE_FIRST, 0, IPC_OP_PUBLISH, -1, STAGE_DEADLINE_MS);
}

static void start_publish(struct supervisor *s)
{
	s->phase = PASS_PUBLISH;
	wave_mask(s, ROLE_PUBLISH, ROLE_STAGE_FIRST, IPC_OP_PUBLISH, -1, STAGE_DEADLINE_MS);
}

/* role: every worker with all of role's bits */
static bool finish_publish(struct supervisor *s, unsigned role)
{
	bool ok = true;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if ((w->def->roles & role) != role || worker_op_ok(w))
			continue;
		ok = false;
		log_error("reconcile: generation %llu: publish %s failed: %s",
			  (unsigned long long)s->pass_gen, w->def->name, worker_op_error(w));
	}
	return ok;
}

static void start_daemons(struct supervisor *s)
{
	enum ipc_op op = s->daemons_started ? IPC_OP_RELOAD : IPC_OP_RUN;

	s->phase = PASS_DAEMONS;
	wave(s, ROLE_DAEMON, op, -1, STAGE_DEADLINE_MS);
}

static void finish_daemons(struct supervisor *s)
{
	bool reload = s->daemons_started;

	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (!has_role(w, ROLE_DAEMON))
			continue;
		if (worker_op_ok(w))
			daemons_apply_spec(s, w, reload);
		else
			log_error("reconcile: %s: daemon description failed: %s", w->def->name,
				  worker_op_error(w));
	}
	s->daemons_started = true;
}

static void abort_appliers(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (has_role(w, ROLE_APPLY) && !worker_op_done(w))
			worker_abort(w);
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
		if (!worker_op_ok(w)) {
			w->st->apply_failures++;
			log_error("reconcile: generation %llu: apply %s failed: %s",
				  (unsigned long long)s->pass_gen, w->def->name, worker_op_error(w));
		}
	}
}

static void log_wave_failures(const struct supervisor *s, unsigned role, const char *what)
{
	for (int i = 0; i < s->nworkers; i++)
		if (has_role(&s->workers[i], role) && !worker_op_ok(&s->workers[i]))
			log_warn("teardown: %s %s: %s", what, s->workers[i].def->name,
				 worker_op_error(&s->workers[i]));
}

/* One step of the teardown; false while it waits for something. */
static bool teardown_step(struct supervisor *s)
{
	switch (s->phase) {
	case PASS_REVOKE:
		if (!wave_done(s, ROLE_APPLY))
			return false;
		log_wave_failures(s, ROLE_APPLY, "revoke");
		s->phase = PASS_STOP_DAEMONS;
		daemons_stop_all(s);
		return true;
	case PASS_STOP_DAEMONS:
		if (!daemons_all_stopped(s))
			return false;
		s->phase = PASS_DISCARD;
		wave(s, ROLE_SIM, IPC_OP_DISCARD, -1, s->opt.shutdown_ms);
		return true;
	case PASS_DISCARD:
		if (!wave_done(s, ROLE_SIM))
			return false;
		log_wave_failures(s, ROLE_SIM, "discard");
		s->phase = PASS_DONE;
		workers_stop_all(s);
		return true;
	case PASS_DONE:
		if (workers_all_gone(s) && daemons_all_stopped(s))
			loop_stop(s->loop);
		return false;
	default:
		return false;
	}
}

/* One step of the pass; false while it waits for worker news. */
static bool pass_step(struct supervisor *s)
{
	switch (s->phase) {
	case PASS_IDLE:
		if (!s->pass_pending || !s->have_state || workers_settling(s))
			return false;
		s->pass_pending = false;
		start_pass(s);
		return true;
	case PASS_STAGE_FIRST:
		if (!wave_done(s, ROLE_STAGE_FIRST))
			return false;
		start_stage(s);
		return true;
	case PASS_STAGE:
		if (!wave_done(s, ROLE_SIM))
			return false;
		finish_stage(s);
		if (!s->status.last_stage_ok)
			finish_pass(s, false);	/* the barrier holds: nothing published */
		else
			start_publish_first(s);
		return true;
	case PASS_PUBLISH_FIRST:
		if (!wave_done(s, ROLE_PUBLISH))
			return false;
		if (!finish_publish(s, ROLE_PUBLISH | ROLE_STAGE_FIRST))
			finish_pass(s, false);
		else
			start_publish(s);
		return true;
	case PASS_PUBLISH:
		if (!wave_done(s, ROLE_PUBLISH))
			return false;
		if (!finish_publish(s, ROLE_PUBLISH))
			finish_pass(s, false);
		else
			start_daemons(s);
		return true;
	case PASS_DAEMONS:
		if (!wave_done(s, ROLE_DAEMON))
			return false;
		finish_daemons(s);
		s->phase = PASS_APPLY;
		if (wave(s, ROLE_APPLY, IPC_OP_APPLY, -1, APPLY_DEADLINE_MS) == 0)
			finish_pass(s, true);
		return true;
	case PASS_APPLY:
		if (!wave_done(s, ROLE_APPLY)) {
			if (wave_failed(s, ROLE_APPLY))
				abort_appliers(s);	/* fail fast */
			return false;
		}
		finish_apply(s);
		finish_pass(s, wave_ok(s, ROLE_APPLY));
		return true;
	default:
		log_error("reconcile: unexpected phase %s", phase_names[s->phase]);
		return false;
	}
}

/* Steps until the pass waits.  Re-entry (a worker op that fails while a
 * wave is being sent) only asks the running loop for one more round. */
void reconcile_progress(struct supervisor *s)
{
	if (s->progressing) {
		s->progress_again = true;
		return;
	}
	s->progressing = true;
	do {
		s->progress_again = false;
		while (s->shutting_down ? teardown_step(s) : pass_step(s))
			;
	} while (s->progress_again);
	s->progressing = false;
}

void reconcile_on_worker(struct supervisor *s, struct worker_proc *w)
{
	/* A worker that came back re-stages (and re-applies) the current
	 * generation: run the pass again. */
	if (worker_take_came_back(w) && s->have_state && !s->shutting_down)
		reconcile_request(s);
	else
		reconcile_progress(s);
}

/* The compiled state without its generation (s->state_fingerprint) tells
 * a real change from bytes that differ but mean the same (whitespace,
 * comments, restore). */
int reconcile_set_state(struct supervisor *s, struct state *st)
{
	char *json, *fp;
	size_t len;
	int fd, r;

	st->generation = 0;
	if ((r = state_encode(st, &fp, &len)) < 0)
		return r;
	if (s->state_fingerprint && strcmp(fp, s->state_fingerprint) == 0 && s->have_state) {
		free(fp);
		state_free(st);
		log_info("desired state: compiles to generation %llu unchanged; nothing to do",
			 (unsigned long long)s->state.generation);
		return 1;
	}
	free(s->state_fingerprint);
	s->state_fingerprint = fp;
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
	for (int i = 0; i < s->nworkers; i++)
		worker_reset_failed(&s->workers[i]);
	daemons_reset_failed(s);
	reconcile_request(s);
	return 0;
}

static void shutdown_deadline(struct loop *l, void *arg)
{
	struct supervisor *s = arg;

	log_error("teardown: --shutdown-timeout reached in phase %s; killing what is left",
		  phase_names[s->phase]);
	workers_kill_all(s);
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
	staging_gate_begin(s);
	log_info("teardown: revoke, stop daemons, discard (budget %llu ms)",
		 (unsigned long long)s->opt.shutdown_ms);
	/* The teardown's own budget, independent of whatever was cancelled. */
	loop_timer_start(s->loop, &s->shutdown_deadline, s->opt.shutdown_ms);
	s->pass_pending = false;
	loop_timer_stop(s->loop, &s->retry);
	s->phase = PASS_REVOKE;
	wave(s, ROLE_APPLY, IPC_OP_REVOKE, -1, s->opt.shutdown_ms);
	reconcile_progress(s);
}
