/* One instance of each daemon per host root, even across a supervisor that
 * was SIGKILLed: every daemon the supervisor starts is recorded in
 * R/state/daemon.<name>.pid (pid, start time, executable, command line),
 * removed when it is reaped; a starting supervisor stops the daemons its
 * predecessor left.  A record is acted on only when the process still
 * matches it all (start time against PID reuse, /proc/<pid>/exe and
 * cmdline against a stranger), so nothing else is ever signalled. */
#ifndef MOKKA_SUPERVISOR_PIDFILE_H
#define MOKKA_SUPERVISOR_PIDFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Record pid (just forked, about to exec exe with argv) as daemon name in
 * dir.  0 or -errno. */
int pidfile_write(const char *dir, const char *name, pid_t pid, const char *exe,
		  char *const *argv);
void pidfile_remove(const char *dir, const char *name);

/* Stop every daemon recorded in dir that still runs as recorded (SIGKILL,
 * then wait up to timeout_ms for it to go) and remove the records.
 * Returns how many were stopped, or -errno when dir cannot be read. */
int pidfile_stop_stale(const char *dir, int timeout_ms);

/* Pure parts, unit-tested.  The start time (field 22) from the text of
 * /proc/<pid>/stat; 0 or -EINVAL. */
int pidfile_parse_stat(const char *stat, unsigned long long *starttime, char *state);

#endif
