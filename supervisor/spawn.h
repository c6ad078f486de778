/* fork+exec of workers and daemons with a clean slate: SIGKILL when the
 * supervisor dies (PR_SET_PDEATHSIG), reset signals,
 * own session, the IPC socket pinned at fd 3 and every other fd closed,
 * no_new_privs, exactly the capabilities asked for (bounding set reduced
 * to them; inheritable and ambient sets cleared, so a root child gets
 * permitted = effective = that set), no systemd notify env.
 * Exec failure comes back through a close-on-exec pipe. */
#ifndef MOKKA_SUPERVISOR_SPAWN_H
#define MOKKA_SUPERVISOR_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct spawn_req {
	const char *path;
	char *const *argv;
	char *const *env_add;		/* KEY=VALUE added to our environment */
	int ipc_fd;			/* becomes fd 3; -1 = none */
	const int *caps;		/* CAP_* list terminated by -1; required */
};

/* 0 with *pid set, or -errno with why in err ("exec /x: No such file"). */
int spawn_process(const struct spawn_req *r, pid_t *pid, char *err, size_t errlen);

#endif
