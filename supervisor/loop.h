/* The supervisor's one event loop: epoll over fds plus a timer list driven
 * by a single timerfd.  Nothing here blocks except epoll_wait. */
#ifndef MOKKA_SUPERVISOR_LOOP_H
#define MOKKA_SUPERVISOR_LOOP_H

#include <stdint.h>

struct loop;
struct loop_timer;

typedef void (*loop_fd_cb)(struct loop *l, int fd, uint32_t events, void *arg);
typedef void (*loop_timer_cb)(struct loop *l, void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* events are EPOLLIN/EPOLLOUT/...; 0 or -errno */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
int loop_del_fd(struct loop *l, int fd);

/* Monotonic milliseconds. */
uint64_t loop_now_ms(void);

/* One-shot timer firing at now + delay_ms.  Returns NULL on ENOMEM.
 * A fired timer is freed by the loop after its callback returns. */
struct loop_timer *loop_timer_after(struct loop *l, uint64_t delay_ms,
				    loop_timer_cb cb, void *arg);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);

/* Run one iteration (waits at most max_wait_ms, -1 = until something). */
int loop_run_once(struct loop *l, int max_wait_ms);
void loop_stop(struct loop *l);
int loop_stopped(const struct loop *l);

#endif
