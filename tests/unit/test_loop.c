/* The event loop: timers, fd callbacks, removal during a batch, stop. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor/loop.h"

static struct loop *l;

static void setup(void)
{
	l = loop_new();
	cr_assert_not_null(l);
}

static void teardown(void)
{
	loop_free(l);
	l = NULL;
}

TestSuite(loop, .init = setup, .fini = teardown);

/* Run until pred() or a deadline. */
static void run_until(int (*pred)(void), uint64_t max_ms)
{
	uint64_t end = loop_now_ms() + max_ms;

	while (!pred() && loop_now_ms() < end)
		cr_assert_geq(loop_run_once(l, 50), 0);
}

/* ---- timers ---- */

static int order[16], norder;
static struct loop_timer tm[8];

static void record(struct loop *lp, void *arg)
{
	cr_assert_lt(norder, 16);
	order[norder++] = (int)(intptr_t)arg;
}

/* Arm tm[i] to record i after delay_ms. */
static struct loop_timer *after(int i, uint64_t delay_ms)
{
	loop_timer_init(&tm[i], record, (void *)(intptr_t)i);
	loop_timer_start(l, &tm[i], delay_ms);
	return &tm[i];
}

static int fired3(void) { return norder >= 3; }

Test(loop, now_is_monotonic)
{
	uint64_t a = loop_now_ms();
	usleep(20000);
	uint64_t b = loop_now_ms();

	cr_assert_geq(b - a, 15);
	cr_assert_lt(b - a, 5000);
}

Test(loop, timers_fire_in_due_order)
{
	uint64_t start = loop_now_ms();

	norder = 0;
	/* added out of order, including two with the same due time */
	after(3, 60);
	after(1, 20);
	after(2, 40);
	run_until(fired3, 3000);
	cr_assert_eq(norder, 3);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 3);
	cr_assert_geq(loop_now_ms() - start, 60, "fired early");
	for (int i = 1; i <= 3; i++)
		cr_assert_not(loop_timer_armed(&tm[i]), "a fired timer stays armed");
}

Test(loop, equal_due_times_fire_in_insertion_order)
{
	norder = 0;
	after(1, 0);
	after(2, 0);
	after(3, 0);
	run_until(fired3, 3000);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 3);
}

Test(loop, timer_not_early)
{
	uint64_t start = loop_now_ms();

	norder = 0;
	after(1, 150);
	/* a short wait must not fire it */
	cr_assert_geq(loop_run_once(l, 10), 0);
	cr_assert_eq(norder, 0);
	cr_assert(loop_timer_armed(&tm[1]));
	while (norder == 0 && loop_now_ms() - start < 3000)
		cr_assert_geq(loop_run_once(l, -1), 0);
	cr_assert_eq(norder, 1);
	cr_assert_geq(loop_now_ms() - start, 150);
}

static int fired1(void) { return norder >= 1; }

Test(loop, cancel)
{
	struct loop_timer never = { 0 };

	norder = 0;
	after(1, 10);
	after(2, 20);
	after(3, 30);
	loop_timer_stop(l, &tm[1]);	/* the head: the timerfd is re-armed */
	loop_timer_stop(l, &tm[3]);
	loop_timer_stop(l, &tm[3]);	/* twice: harmless */
	loop_timer_stop(l, &never);	/* never set up: harmless */
	cr_assert_not(loop_timer_armed(&tm[1]));
	run_until(fired1, 3000);
	cr_assert_eq(norder, 1);
	cr_assert_eq(order[0], 2);
	/* nothing else fires */
	for (int i = 0; i < 5; i++)
		cr_assert_geq(loop_run_once(l, 20), 0);
	cr_assert_eq(norder, 1);
}

Test(loop, restart_moves_an_armed_timer)
{
	uint64_t start = loop_now_ms();

	norder = 0;
	after(1, 10);
	after(2, 40);
	/* re-arming tm[1] later than tm[2] moves it, it is not armed twice */
	loop_timer_start(l, &tm[1], 80);
	run_until(fired3, 500);
	cr_assert_eq(norder, 2);
	cr_assert_eq(order[0], 2);
	cr_assert_eq(order[1], 1);
	cr_assert_geq(loop_now_ms() - start, 80);
}

static void cancel_other(struct loop *lp, void *arg)
{
	record(lp, arg);
	loop_timer_stop(lp, &tm[2]);
}

Test(loop, cancel_from_a_timer_callback)
{
	norder = 0;
	/* both due in the same pass: the first cancels the second */
	loop_timer_init(&tm[1], cancel_other, (void *)1);
	loop_timer_start(l, &tm[1], 5);
	after(2, 5);
	after(3, 80);
	usleep(20000);
	run_until(fired1, 3000);
	for (int i = 0; i < 10 && norder < 2; i++)
		cr_assert_geq(loop_run_once(l, 50), 0);
	cr_assert_eq(norder, 2);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 3);
}

static void rearm(struct loop *lp, void *arg)
{
	record(lp, arg);
	if ((intptr_t)arg < 3) {
		loop_timer_init(&tm[(intptr_t)arg + 1], rearm, (void *)((intptr_t)arg + 1));
		loop_timer_start(lp, &tm[(intptr_t)arg + 1], 0);
	}
}

Test(loop, timer_added_from_timer_callback)
{
	norder = 0;
	loop_timer_init(&tm[1], rearm, (void *)1);
	loop_timer_start(l, &tm[1], 0);
	run_until(fired3, 3000);
	cr_assert_eq(norder, 3);
	cr_assert_eq(order[2], 3);
}

/* A periodic tick: the callback re-arms its own timer. */
static void tick(struct loop *lp, void *arg)
{
	record(lp, arg);
	cr_assert_not(loop_timer_armed(&tm[0]), "armed inside its own callback");
	if (norder < 3)
		loop_timer_start(lp, &tm[0], 1);
}

Test(loop, timer_rearms_itself)
{
	norder = 0;
	loop_timer_init(&tm[0], tick, (void *)7);
	loop_timer_start(l, &tm[0], 0);
	run_until(fired3, 3000);
	cr_assert_eq(norder, 3);
	cr_assert_not(loop_timer_armed(&tm[0]));
}

/* An owner that frees itself from its timer's callback: the loop must not
 * touch the timer afterwards (ASan reports it if it does). */
struct owner {
	struct loop_timer t;
	int *freed;
};

static void owner_fire(struct loop *lp, void *arg)
{
	struct owner *o = arg;

	(*o->freed)++;
	free(o);
}

Test(loop, owner_freed_in_its_timer_callback)
{
	int freed = 0;
	struct owner *o = calloc(1, sizeof(*o)), *p = calloc(1, sizeof(*p));

	cr_assert(o && p);
	o->freed = &freed;
	loop_timer_init(&o->t, owner_fire, o);
	loop_timer_start(l, &o->t, 0);
	/* a stopped owner can go at once */
	loop_timer_init(&p->t, owner_fire, p);
	loop_timer_start(l, &p->t, 0);
	loop_timer_stop(l, &p->t);
	free(p);
	for (int i = 0; i < 20 && !freed; i++)
		cr_assert_geq(loop_run_once(l, 50), 0);
	cr_assert_eq(freed, 1);
}

/* ---- fds ---- */

struct fdrec {
	int calls;
	uint32_t events;
	int fd;
};

static void on_read(struct loop *lp, int fd, uint32_t events, void *arg)
{
	struct fdrec *r = arg;
	char buf[64];

	r->calls++;
	r->events |= events;
	r->fd = fd;
	if (events & EPOLLIN)
		while (read(fd, buf, sizeof(buf)) > 0)
			;
}

Test(loop, fd_callback_on_pipe)
{
	int p[2];
	struct fdrec rec = { 0 };

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, on_read, &rec), 0);
	cr_assert_eq(loop_run_once(l, 0), 0);
	cr_assert_eq(rec.calls, 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(loop_run_once(l, 1000), 1);
	cr_assert_eq(rec.calls, 1);
	cr_assert_eq(rec.fd, p[0]);
	cr_assert(rec.events & EPOLLIN);
	/* drained: level-triggered, nothing more */
	cr_assert_eq(loop_run_once(l, 0), 0);
	cr_assert_eq(rec.calls, 1);
	/* writer closed: hang-up reported */
	close(p[1]);
	cr_assert_eq(loop_run_once(l, 1000), 1);
	cr_assert(rec.events & EPOLLHUP);
	cr_assert_eq(loop_del_fd(l, p[0]), 0);
	close(p[0]);
}

Test(loop, add_mod_del_errors)
{
	int p[2];
	struct fdrec rec = { 0 };

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, on_read, &rec), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, on_read, &rec), -EEXIST);
	cr_assert_eq(loop_add_fd(l, -1, EPOLLIN, on_read, &rec), -EBADF);
	cr_assert_eq(loop_mod_fd(l, p[1], EPOLLIN), -ENOENT);
	cr_assert_eq(loop_del_fd(l, p[1]), -ENOENT);
	/* mod: switch interest off and on */
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(loop_mod_fd(l, p[0], 0), 0);
	cr_assert_eq(loop_run_once(l, 20), 0);
	cr_assert_eq(rec.calls, 0);
	cr_assert_eq(loop_mod_fd(l, p[0], EPOLLIN), 0);
	cr_assert_eq(loop_run_once(l, 1000), 1);
	cr_assert_eq(rec.calls, 1);
	/* deleted: no more callbacks */
	cr_assert_eq(loop_del_fd(l, p[0]), 0);
	cr_assert_eq(write(p[1], "y", 1), 1);
	cr_assert_eq(loop_run_once(l, 20), 0);
	cr_assert_eq(rec.calls, 1);
	close(p[0]);
	close(p[1]);
}

/* Two readable pipes in one batch; whichever callback runs first removes
 * the other pipe (and closes it, as a real owner would), so the second
 * must not run. */
static int pa[2], pb[2], pc[2];
static int calls_a, calls_b, calls_c;

static void on_c(struct loop *lp, int fd, uint32_t events, void *arg)
{
	(void)lp; (void)fd; (void)events; (void)arg;
	calls_c++;
}

static void on_ab(struct loop *lp, int fd, uint32_t events, void *arg)
{
	(void)events; (void)arg;
	if (fd == pa[0])
		calls_a++;
	else
		calls_b++;
	int other = fd == pa[0] ? pb[0] : pa[0];
	cr_assert_eq(loop_del_fd(lp, other), 0);
	close(other);
	if (other == pa[0])
		pa[0] = -1;
	else
		pb[0] = -1;
	/* a new fd registered right away (same size of bookkeeping, so the
	 * allocator may hand back the entry just freed) and it is NOT ready */
	cr_assert_eq(loop_add_fd(lp, pc[0], EPOLLIN, on_c, NULL), 0);
	cr_assert_eq(loop_del_fd(lp, fd), 0);
}

Test(loop, delete_other_fd_in_same_batch_is_safe)
{
	cr_assert_eq(pipe2(pa, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(pipe2(pb, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(pipe2(pc, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, pa[0], EPOLLIN, on_ab, NULL), 0);
	cr_assert_eq(loop_add_fd(l, pb[0], EPOLLIN, on_ab, NULL), 0);
	cr_assert_eq(write(pa[1], "a", 1), 1);
	cr_assert_eq(write(pb[1], "b", 1), 1);
	/* Fill glibc's per-thread cache for small chunks, so the entry freed
	 * by loop_del_fd goes where calloc looks first and the new fd's entry
	 * is likely to reuse its address: a use-after-free or a stale-event
	 * mix-up then shows up as on_c being called below. */
	void *fill[16];
	for (int i = 0; i < 16; i++)
		fill[i] = malloc(32);
	for (int i = 0; i < 16; i++)
		free(fill[i]);
	/* both are ready in one epoll_wait batch */
	cr_assert_eq(loop_run_once(l, 1000), 2);
	cr_assert_eq(calls_a + calls_b, 1, "the removed fd's callback ran");
	cr_assert_eq(calls_c, 0, "a stale event was delivered to a new fd");
	/* the new fd works normally */
	cr_assert_eq(write(pc[1], "c", 1), 1);
	cr_assert_eq(loop_run_once(l, 1000), 1);
	cr_assert_eq(calls_c, 1);
	cr_assert_eq(loop_del_fd(l, pc[0]), 0);
	close(pa[0] >= 0 ? pa[0] : pb[0]);
	close(pa[1]);
	close(pb[1]);
	close(pc[0]);
	close(pc[1]);
}

static void on_self_delete(struct loop *lp, int fd, uint32_t events, void *arg)
{
	int *n = arg;

	(*n)++;
	cr_assert_eq(loop_del_fd(lp, fd), 0);
}

Test(loop, delete_self_from_callback)
{
	int p[2], n = 0;

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, on_self_delete, &n), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(loop_run_once(l, 1000), 1);
	cr_assert_eq(n, 1);
	cr_assert_eq(loop_run_once(l, 20), 0);
	cr_assert_eq(n, 1);
	close(p[0]);
	close(p[1]);
}

/* fd callbacks and timers in one loop */
static void timer_stop(struct loop *lp, void *arg)
{
	loop_stop(lp);
}

static void fd_then_timer(struct loop *lp, int fd, uint32_t events, void *arg)
{
	on_read(lp, fd, events, arg);
	loop_timer_init(&tm[0], timer_stop, NULL);
	loop_timer_start(lp, &tm[0], 10);
}

Test(loop, stop)
{
	int p[2];
	struct fdrec rec = { 0 };
	uint64_t end = loop_now_ms() + 3000;

	cr_assert_eq(loop_stopped(l), 0);
	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, fd_then_timer, &rec), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	while (!loop_stopped(l) && loop_now_ms() < end)
		cr_assert_geq(loop_run_once(l, 100), 0);
	cr_assert_eq(loop_stopped(l), 1);
	cr_assert_eq(rec.calls, 1);
	/* stop is sticky */
	cr_assert_eq(loop_run_once(l, 0), 0);
	cr_assert_eq(loop_stopped(l), 1);
	close(p[0]);
	close(p[1]);
}

Test(loop, free_with_pending_timers_and_fds)
{
	int p[2];
	struct fdrec rec = { 0 };

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	cr_assert_eq(loop_add_fd(l, p[0], EPOLLIN, on_read, &rec), 0);
	after(1, 100000);
	after(2, 200000);
	/* teardown frees the loop and the fd entries (the timers are ours);
	 * ASan reports any leak */
	close(p[1]);
	close(p[0]);
}
