/* Fake workers for the lifecycle and reconcile tests: a struct worker_io
 * that forks nothing and records what the supervisor sends, so the real
 * table and the real reconcile passes run against scripted workers.  A
 * test plays the workers by calling worker_on_hello/_result/_exit. */
#ifndef MOKKA_TESTS_FAKE_WORKERS_FIXTURE_H
#define MOKKA_TESTS_FAKE_WORKERS_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor/supervisor.h"

#define FAKE_MAX_SENT 512

struct fake_sent {
	int worker;
	enum ipc_op op;
	uint64_t gen, seq;
	int fd;
};

static struct {
	struct supervisor s;
	struct fake_sent sent[FAKE_MAX_SENT];
	int nsent;
	unsigned spawn_fails;		/* bit i: worker i's spawn fails */
	unsigned send_fails;		/* bit i: sends to worker i fail (queue full) */
	int spawns[MAX_WORKERS], kills[MAX_WORKERS], detaches[MAX_WORKERS];
	pid_t next_pid;
} fk;

static int fake_index(const struct worker_proc *w)
{
	return (int)(w - fk.s.workers);
}

static int fake_spawn(struct worker_proc *w, pid_t *pid, char *err, size_t errlen)
{
	int i = fake_index(w);

	fk.spawns[i]++;
	if (fk.spawn_fails & (1u << i)) {
		snprintf(err, errlen, "exec /fake/%s: No such file or directory", w->def->name);
		return -ENOENT;
	}
	*pid = fk.next_pid++;
	return 0;
}

static int fake_send(struct worker_proc *w, enum ipc_op op, uint64_t gen, uint64_t seq, int fd)
{
	cr_assert_lt(fk.nsent, FAKE_MAX_SENT);
	if (fk.send_fails & (1u << fake_index(w)))
		return -ENOBUFS;
	fk.sent[fk.nsent++] = (struct fake_sent){ fake_index(w), op, gen, seq, fd };
	return 0;
}

static void fake_detach(struct worker_proc *w)
{
	fk.detaches[fake_index(w)]++;
}

static void fake_kill(struct worker_proc *w)
{
	fk.kills[fake_index(w)]++;
}

static const struct worker_io fake_io = {
	.spawn = fake_spawn, .send = fake_send, .detach = fake_detach, .kill = fake_kill,
};

static const int no_caps[] = { -1 };

static void fake_setup(const struct sim_def *defs, int n)
{
	memset(&fk, 0, sizeof(fk));
	fk.next_pid = 1000;
	fk.s.loop = loop_new();
	cr_assert_not_null(fk.s.loop);
	fk.s.wio = &fake_io;
	fk.s.state_fd = -1;
	fk.s.phase = PASS_IDLE;
	fk.s.opt.shutdown_ms = 10000;
	state_init(&fk.s.state);
	reconcile_init(&fk.s);
	for (int i = 0; i < n; i++)
		cr_assert_eq(workers_add(&fk.s, &defs[i]), 0);
}

static void fake_teardown(void)
{
	reconcile_free(&fk.s);
	if (fk.s.have_state)
		state_free(&fk.s.state);
	if (fk.s.state_fd >= 0)
		close(fk.s.state_fd);
	loop_free(fk.s.loop);
}

__attribute__((unused)) static struct worker_proc *W(int i)
{
	return &fk.s.workers[i];
}

/* Every worker started and said hello. */
__attribute__((unused)) static void fake_boot(void)
{
	workers_start_all(&fk.s);
	for (int i = 0; i < fk.s.nworkers; i++) {
		cr_assert_eq(worker_state(W(i)), WORKER_STARTING);
		worker_on_hello(W(i));
		cr_assert_eq(worker_state(W(i)), WORKER_IDLE);
	}
}

/* A new desired state: an empty one, as a fresh generation. */
__attribute__((unused)) static void fake_new_state(int salt)
{
	struct state st;

	state_init(&st);
	st.num_devices = salt;	/* tells it from the one before */
	cr_assert_eq(reconcile_set_state(&fk.s, &st), 0);
}

/* The last command (STATUS excluded) sent to worker i since mark, or
 * IPC_OP_INVALID. */
__attribute__((unused)) static const struct fake_sent *fake_last(int i, int mark)
{
	for (int k = fk.nsent - 1; k >= mark; k--)
		if (fk.sent[k].worker == i && fk.sent[k].op != IPC_OP_STATUS)
			return &fk.sent[k];
	return NULL;
}

__attribute__((unused)) static enum ipc_op fake_last_op(int i, int mark)
{
	const struct fake_sent *f = fake_last(i, mark);

	return f ? f->op : IPC_OP_INVALID;
}

/* How many op commands went to anyone since mark. */
__attribute__((unused)) static int fake_count(enum ipc_op op, int mark)
{
	int n = 0;

	for (int k = mark; k < fk.nsent; k++)
		n += fk.sent[k].op == op;
	return n;
}

/* Worker i answers the command it is busy with. */
__attribute__((unused)) static void fake_reply(int i, bool ok, const char *error)
{
	cr_assert_eq(worker_state(W(i)), WORKER_BUSY, "worker %d is %s, not busy", i,
		     worker_state_name(worker_state(W(i))));
	worker_on_result(W(i), W(i)->busy_seq, ok, error);
}

__attribute__((unused)) static void fake_exit(int i, int code)
{
	worker_on_exit(W(i), W_EXITCODE(code, 0));
}

/* Fire an armed timer now, as the loop would. */
__attribute__((unused)) static void fake_fire(struct loop_timer *t)
{
	cr_assert(loop_timer_armed(t), "timer not armed");
	loop_timer_stop(fk.s.loop, t);
	t->cb(fk.s.loop, t->arg);
}

__attribute__((unused)) static uint64_t fake_due_in(const struct loop_timer *t)
{
	uint64_t now = loop_now_ms();

	return t->due > now ? t->due - now : 0;
}

#endif
