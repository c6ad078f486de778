/* The supervisor's one event loop: epoll over fds plus a timer list driven
 * by a single timerfd.  Nothing here blocks except epoll_wait. */
#ifndef MOKKA_SUPERVISOR_LOOP_H
#define MOKKA_SUPERVISOR_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;

typedef void (*loop_fd_cb)(struct loop *l, int fd, uint32_t events, void *arg);
typedef void (*loop_timer_cb)(struct loop *l, void *arg);

/* A one-shot timer embedded in its owner (libuEv-style): the loop never
 * allocates or frees one, so an owner just stops its timers before it
 * goes and never has to track a handle the loop may have freed.  Fields
 * are the loop's; owners use the functions below. */
struct loop_timer {
	uint64_t due;			/* monotonic ms */
	loop_timer_cb cb;
	void *arg;
	struct loop_timer *next;
	bool armed;			/* on the loop's list */
};

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* events are EPOLLIN/EPOLLOUT/...; 0 or -errno */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
int loop_del_fd(struct loop *l, int fd);

/* Monotonic milliseconds. */
uint64_t loop_now_ms(void);

/* Set the callback once (the timer is not armed).  A zeroed timer that
 * was never set up is also safe to stop. */
void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg);
/* Arm t to fire once at now + delay_ms; re-arms it if it was armed.  A
 * timer is disarmed before its callback runs, so the callback may re-arm. */
void loop_timer_start(struct loop *l, struct loop_timer *t, uint64_t delay_ms);
/* Disarm t; harmless when it is not armed. */
void loop_timer_stop(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->armed;
}

/* Run one iteration (waits at most max_wait_ms, -1 = until something). */
int loop_run_once(struct loop *l, int max_wait_ms);
void loop_stop(struct loop *l);
int loop_stopped(const struct loop *l);

#endif
