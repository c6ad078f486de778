/* The systemd notification protocol without libsystemd: one datagram per
 * message to $NOTIFY_SOCKET, and the watchdog interval from the
 * environment.  Both are no-ops outside systemd. */
#ifndef MOKKA_SUPERVISOR_SDNOTIFY_H
#define MOKKA_SUPERVISOR_SDNOTIFY_H

#include <stdint.h>

/* Sends msg ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=...") to
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 * 0 when sent or when NOTIFY_SOCKET is unset; -errno otherwise.  Never
 * blocks: a full receiver gives -EAGAIN. */
int sd_notify_send(const char *msg);

/* How often to send WATCHDOG=1: half of WATCHDOG_USEC, in ms (at least 1).
 * *ms = 0 when no watchdog is asked of this process (WATCHDOG_USEC unset,
 * or WATCHDOG_PID names another process).  0, or -EINVAL when either
 * variable is malformed. */
int sd_watchdog_interval_ms(uint64_t *ms);

#endif
