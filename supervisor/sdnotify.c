/* sd_notify(3) and sd_watchdog_enabled(3), re-done in a few lines: the
 * protocol is one AF_UNIX datagram of "KEY=VALUE" lines. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/sdnotify.h"

int sd_notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen, mlen = strlen(msg);
	socklen_t alen;
	ssize_t n;
	int fd, e = 0;

	if (!path || !path[0])
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path)) {
		log_warn("sd_notify: NOTIFY_SOCKET=\"%s\": not a usable AF_UNIX address", path);
		return -EAFNOSUPPORT;
	}
	memcpy(sa.sun_path, path, plen);
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract: the length says where it ends */
	else
		alen++;			/* count the NUL of a path */
	/* Non-blocking: the supervisor's loop must never wait on systemd. */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, msg, mlen, MSG_NOSIGNAL, (struct sockaddr *)&sa, alen);
	if (n < 0)
		e = -errno;
	else if ((size_t)n != mlen)
		e = -EMSGSIZE;
	close(fd);
	if (e < 0)
		log_warn("sd_notify: sending \"%s\" to %s: %s", msg, path, strerror(-e));
	return e;
}

/* A whole decimal number, nothing else. */
static int parse_u64(const char *s, unsigned long long *v)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (*end || errno) ? -EINVAL : 0;
}

int sd_watchdog_interval_ms(uint64_t *ms)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long u, p;

	*ms = 0;
	if (!usec)
		return 0;
	if (parse_u64(usec, &u) < 0 || u == 0) {
		log_warn("sd_notify: WATCHDOG_USEC=\"%s\": not a positive integer", usec);
		return -EINVAL;
	}
	if (pid) {
		if (parse_u64(pid, &p) < 0) {
			log_warn("sd_notify: WATCHDOG_PID=\"%s\": not a pid", pid);
			return -EINVAL;
		}
		if (p != (unsigned long long)getpid())
			return 0;	/* the watchdog is another process's */
	}
	/* Ping at half the interval, as systemd recommends. */
	*ms = u / 2000;
	if (*ms == 0)
		*ms = 1;
	return 0;
}
