/* epoll + one timerfd.  Timers live on a list sorted by due time; the
 * timerfd is armed for the head.  n is small (workers, connections), so a
 * sorted list beats a heap for clarity.  Timers belong to their owners
 * (struct loop_timer is embedded): the loop only links and unlinks them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/loop.h"

struct loop_fd {
	int fd;
	loop_fd_cb cb;
	void *arg;
	struct loop_fd *next;
};

struct loop {
	int epfd, tfd;
	struct loop_fd *fds;
	struct loop_timer *timers;
	/* Removed fds, freed only after the current batch: an event of this
	 * batch may still point at them, and a new fd must not get their
	 * address meanwhile. */
	struct loop_fd *dead;
	int stopped;
};

static void free_dead(struct loop *l)
{
	while (l->dead) {
		struct loop_fd *n = l->dead->next;
		free(l->dead);
		l->dead = n;
	}
}

uint64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void arm(struct loop *l)
{
	struct itimerspec its = { 0 };

	if (l->timers) {
		uint64_t now = loop_now_ms();
		uint64_t d = l->timers->due > now ? l->timers->due - now : 0;
		if (d == 0)
			d = 1;	/* 0 would disarm */
		its.it_value.tv_sec = (time_t)(d / 1000);
		its.it_value.tv_nsec = (long)(d % 1000) * 1000000L;
	}
	timerfd_settime(l->tfd, 0, &its, NULL);
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->epfd < 0 || l->tfd < 0)
		goto fail;
	ev.data.ptr = NULL;	/* NULL marks the timerfd */
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev) < 0)
		goto fail;
	return l;
fail:
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->tfd >= 0)
		close(l->tfd);
	free(l);
	return NULL;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	while (l->fds) {
		struct loop_fd *n = l->fds->next;
		free(l->fds);
		l->fds = n;
	}
	free_dead(l);
	/* Timers are their owners' memory (some may be gone by now): the
	 * list is dropped, never walked. */
	l->timers = NULL;
	close(l->epfd);
	close(l->tfd);
	free(l);
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg)
{
	struct loop_fd *f = calloc(1, sizeof(*f));
	struct epoll_event ev = { .events = events };

	if (!f)
		return -ENOMEM;
	f->fd = fd;
	f->cb = cb;
	f->arg = arg;
	ev.data.ptr = f;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		free(f);
		return -e;
	}
	f->next = l->fds;
	l->fds = f;
	return 0;
}

static struct loop_fd *find_fd(struct loop *l, int fd, struct loop_fd ***link)
{
	struct loop_fd **pp = &l->fds;

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			if (link)
				*link = pp;
			return *pp;
		}
	return NULL;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
	struct loop_fd *f = find_fd(l, fd, NULL);
	struct epoll_event ev = { .events = events };

	if (!f)
		return -ENOENT;
	ev.data.ptr = f;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

int loop_del_fd(struct loop *l, int fd)
{
	struct loop_fd **pp;
	struct loop_fd *f = find_fd(l, fd, &pp);

	if (!f)
		return -ENOENT;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	*pp = f->next;
	/* Events of this batch still pointing at f are dropped by the
	 * fd_alive() check in loop_run_once; f is freed after the batch. */
	f->next = l->dead;
	l->dead = f;
	return 0;
}

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
}

static void timer_unlink(struct loop *l, struct loop_timer *t)
{
	for (struct loop_timer **pp = &l->timers; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->next = NULL;
	t->armed = false;
}

void loop_timer_start(struct loop *l, struct loop_timer *t, uint64_t delay_ms)
{
	struct loop_timer **pp;

	if (t->armed)
		timer_unlink(l, t);
	t->due = loop_now_ms() + delay_ms;
	for (pp = &l->timers; *pp && (*pp)->due <= t->due; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	t->armed = true;
	arm(l);
}

void loop_timer_stop(struct loop *l, struct loop_timer *t)
{
	if (!t->armed)
		return;
	timer_unlink(l, t);
	arm(l);
}

static void run_timers(struct loop *l)
{
	uint64_t now = loop_now_ms();
	uint64_t junk;

	while (read(l->tfd, &junk, sizeof(junk)) > 0)
		;
	while (l->timers && l->timers->due <= now) {
		struct loop_timer *t = l->timers;
		l->timers = t->next;
		t->next = NULL;
		t->armed = false;
		/* Last touch of t: the callback may re-arm it or free its owner. */
		t->cb(l, t->arg);
	}
	arm(l);
}

static int fd_alive(struct loop *l, struct loop_fd *p)
{
	for (struct loop_fd *f = l->fds; f; f = f->next)
		if (f == p)
			return 1;
	return 0;
}

int loop_run_once(struct loop *l, int max_wait_ms)
{
	struct epoll_event evs[32];
	int n = epoll_wait(l->epfd, evs, 32, max_wait_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct loop_fd *f = evs[i].data.ptr;
		if (!f) {
			run_timers(l);
			continue;
		}
		/* An earlier callback of this batch may have removed it (its
		 * memory stays allocated until the batch ends, so no new fd
		 * can have the same address). */
		if (!fd_alive(l, f))
			continue;
		f->cb(l, f->fd, evs[i].events, f->arg);
	}
	free_dead(l);
	/* Timers that fell due while callbacks ran. */
	if (l->timers && l->timers->due <= loop_now_ms())
		run_timers(l);
	return n;
}

void loop_stop(struct loop *l)
{
	l->stopped = 1;
}

int loop_stopped(const struct loop *l)
{
	return l->stopped;
}
