#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/spawn.h"

extern char **environ;

static void close_from(int lowfd)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0)
		return;
#endif
	for (int fd = lowfd; fd < 65536; fd++)
		close(fd);
}

static bool listed(const int *caps, int cap)
{
	for (; *caps >= 0; caps++)
		if (*caps == cap)
			return true;
	return false;
}

/* Bound the child to caps and clear its inheritable and ambient sets: as
 * root, exec then yields permitted = effective = bounding = caps; as
 * anyone else, nothing.  Without CAP_SETPCAP (an unprivileged
 * supervisor) the bounding set cannot shrink, but then we hold nothing
 * to hand down either: that is accepted only when our permitted set is
 * empty. */
static int limit_caps(const int *caps)
{
	cap_t c;
	int r = 0;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (listed(caps, cap) || !CAP_IS_SUPPORTED(cap) ||
		    cap_drop_bound((cap_value_t)cap) == 0 || errno == EINVAL)
			continue;
		if (errno != EPERM)
			return -errno;
		cap_flag_value_t any = CAP_CLEAR;
		c = cap_get_proc();
		for (int k = 0; c && k <= CAP_LAST_CAP && any == CAP_CLEAR; k++)
			if (CAP_IS_SUPPORTED(k))
				cap_get_flag(c, (cap_value_t)k, CAP_PERMITTED, &any);
		cap_free(c);
		if (any != CAP_CLEAR)
			return -EPERM;
		break;	/* unprivileged: nothing to hand down */
	}
	if (!(c = cap_get_proc()))
		return -errno;
	if (cap_clear_flag(c, CAP_INHERITABLE) < 0 || cap_set_proc(c) < 0)
		r = -errno;
	cap_free(c);
	return r;
}

/* Runs in the child between fork and exec: async-signal-safe calls only
 * (setenv/unsetenv on our private copy are fine after fork in a
 * single-threaded parent). */
static void child(const struct spawn_req *r, int errpipe, pid_t parent)
{
	sigset_t none;
	int e;

	/* One instance of each daemon: a child dies with the supervisor that
	 * started it (kept across exec: our children never gain privileges
	 * on exec).  Had the parent died before the line above, we would now
	 * belong to someone else and no signal would come: check. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
		e = errno;
		(void)!write(errpipe, &e, sizeof(e));
		_exit(127);
	}
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	setsid();
	/* Lift the error pipe out of the way before pinning fd 3 and 4. */
	errpipe = fcntl(errpipe, F_DUPFD_CLOEXEC, 10);
	if (errpipe < 0)
		_exit(127);
	if (r->ipc_fd >= 0) {
		if (r->ipc_fd == 3)
			fcntl(3, F_SETFD, 0);
		else if (dup2(r->ipc_fd, 3) < 0)
			goto fail;
	} else {
		close(3);
	}
	if (dup2(errpipe, 4) < 0)
		goto fail;
	errpipe = 4;
	fcntl(4, F_SETFD, FD_CLOEXEC);
	close_from(5);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if ((e = r->caps ? limit_caps(r->caps) : -EINVAL) < 0) {
		errno = -e;
		goto fail;
	}
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	for (char *const *e2 = r->env_add; e2 && *e2; e2++)
		putenv(*e2);
	execv(r->path, r->argv);
fail:
	e = errno;
	(void)!write(errpipe, &e, sizeof(e));
	_exit(127);
}

int spawn_process(const struct spawn_req *r, pid_t *pid, char *err, size_t errlen)
{
	pid_t parent = getpid();
	int p[2], e = 0;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	*pid = fork();
	if (*pid < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (*pid == 0) {
		close(p[0]);
		child(r, p[1], parent);
	}
	close(p[1]);
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == sizeof(e)) {
		snprintf(err, errlen, "exec %s: %s", r->path, strerror(e));
		/* the child exits 127 and is reaped by the SIGCHLD handler */
		return -e;
	}
	return 0;
}
