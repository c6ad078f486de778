/* mock-ib's event loop: epoll over the listener, sessions, relay sockets,
 * a signalfd and one timerfd armed for the earliest deadline (the next
 * pending-request timeout, the 1 s housekeeping tick or a fabric rebuild
 * held back so that a burst of joins makes one).  SIGUSR1 logs the relay's
 * traffic counters. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"

#define TICK_MS 1000
#define REBUILD_MIN_MS 100		/* joins in a burst make one rebuild */
#define MAX_EVENTS 64

uint64_t mib_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int mib_watch_add(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0 ? -errno : 0;
}

int mib_watch_mod(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(d->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void mib_watch_del(struct mockib *d, struct mib_watch *w)
{
	if (w->fd >= 0)
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

void mib_timer_update(struct mockib *d)
{
	uint64_t due = d->next_tick, p = mib_pending_next(d);
	struct itimerspec its = { 0 };

	if (p && p < due)
		due = p;
	if (d->fab_dirty && d->fab_built + REBUILD_MIN_MS < due)
		due = d->fab_built + REBUILD_MIN_MS;
	if (due == d->armed)
		return;
	d->armed = due;
	/* CLOCK_MONOTONIC absolute; a deadline already past fires at once. */
	its.it_value.tv_sec = (time_t)(due / 1000);
	its.it_value.tv_nsec = (long)(due % 1000) * 1000000L;
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(d->timer_w.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_warn("timerfd_settime: %s", strerror(errno));
}

static void on_timer(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	uint64_t n, now = mib_now_ms();

	if (read(w->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("timerfd read: %s", strerror(errno));
	d->armed = 0;
	mib_pending_expire(d, now);
	if (now >= d->next_tick) {
		d->next_tick = now + TICK_MS;
		mib_listen_resume(d);
		mib_relay_tick(d, now);
	}
}

static void on_signal(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			log_info("SIGHUP: reloading %s%s", d->host_root, d->conf_path);
			mib_reload(d);
		} else if (si.ssi_signo == SIGUSR1) {
			mib_relay_counters(d);
		} else {
			log_info("stopping on signal %u", si.ssi_signo);
			d->stop = true;
		}
	}
}

int mib_run(struct mockib *d)
{
	struct epoll_event evs[MAX_EVENTS];
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* A client vanishing mid-send must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	d->sig_w.fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->sig_w.cb = on_signal;
	d->timer_w.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->timer_w.cb = on_timer;
	if (d->sig_w.fd < 0 || d->timer_w.fd < 0 || mib_watch_add(d, &d->sig_w, EPOLLIN) < 0 ||
	    mib_watch_add(d, &d->timer_w, EPOLLIN) < 0) {
		log_error("signalfd/timerfd setup: %s", strerror(errno));
		return 1;
	}
	d->next_tick = mib_now_ms() + TICK_MS;
	while (!d->stop) {
		int n;

		mib_timer_update(d);
		n = epoll_wait(d->epfd, evs, MAX_EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct mib_watch *w = evs[i].data.ptr;

			w->cb(d, w, evs[i].events);
		}
		/* Objects closed during the batch are freed only now, so no
		 * event of this batch can point at freed memory. */
		mib_sessions_reap(d);
		mib_relay_reap(d);
		if (d->fab_dirty && mib_now_ms() >= d->fab_built + REBUILD_MIN_MS)
			mib_fabric_flush(d);
	}
	return 0;
}
