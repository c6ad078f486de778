/* sd_notify without libsystemd: a datagram socket standing in for systemd
 * receives what the supervisor sends; the watchdog interval comes from the
 * environment.  Criterion runs each test in its own process, so setenv()
 * does not leak between tests. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor/sdnotify.h"

static char dir[64], sock_path[128];

static void clean_env(void)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

/* Binds a datagram socket at name ("@..." = abstract) and returns it. */
static int fake_systemd(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		len++;
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, len), 0, "bind %s: %s", name, strerror(errno));
	return fd;
}

static void receive(int fd, const char *want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[256];
	ssize_t n;

	cr_assert_eq(poll(&p, 1, 2000), 1, "nothing received");
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, want);
}

Test(sdnotify, unset_is_a_noop, .init = clean_env)
{
	cr_assert_eq(sd_notify_send("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	cr_assert_eq(sd_notify_send("READY=1"), 0);
}

Test(sdnotify, path_socket, .init = clean_env)
{
	int fd;

	strcpy(dir, "/tmp/mokka-sdnotify.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/notify", dir);
	fd = fake_systemd(sock_path);
	setenv("NOTIFY_SOCKET", sock_path, 1);
	cr_assert_eq(sd_notify_send("READY=1"), 0);
	receive(fd, "READY=1");
	cr_assert_eq(sd_notify_send("STOPPING=1\nSTATUS=shutting down"), 0);
	receive(fd, "STOPPING=1\nSTATUS=shutting down");
	close(fd);
	unlink(sock_path);
	rmdir(dir);
}

Test(sdnotify, abstract_socket, .init = clean_env)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@mokka-sdnotify-test-%d", (int)getpid());
	fd = fake_systemd(name);
	setenv("NOTIFY_SOCKET", name, 1);
	cr_assert_eq(sd_notify_send("READY=1"), 0);
	receive(fd, "READY=1");
	close(fd);
}

Test(sdnotify, nobody_listening, .init = clean_env)
{
	setenv("NOTIFY_SOCKET", "/nonexistent/mokka/notify", 1);
	cr_assert_eq(sd_notify_send("READY=1"), -ENOENT);
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	cr_assert_eq(sd_notify_send("READY=1"), -EAFNOSUPPORT);
}

Test(watchdog, unset_means_off, .init = clean_env)
{
	uint64_t ms = 77;

	cr_assert_eq(sd_watchdog_interval_ms(&ms), 0);
	cr_assert_eq(ms, 0);
}

Test(watchdog, half_the_interval, .init = clean_env)
{
	uint64_t ms = 0;

	setenv("WATCHDOG_USEC", "30000000", 1);
	cr_assert_eq(sd_watchdog_interval_ms(&ms), 0);
	cr_assert_eq(ms, 15000);
	setenv("WATCHDOG_USEC", "1000", 1);	/* rounds to 0: ping every 1 ms */
	cr_assert_eq(sd_watchdog_interval_ms(&ms), 0);
	cr_assert_eq(ms, 1);
}

Test(watchdog, pid_must_be_ours, .init = clean_env)
{
	char pid[32];
	uint64_t ms = 0;

	setenv("WATCHDOG_USEC", "2000000", 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(sd_watchdog_interval_ms(&ms), 0);
	cr_assert_eq(ms, 1000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(sd_watchdog_interval_ms(&ms), 0);
	cr_assert_eq(ms, 0, "another process's watchdog was taken as ours");
}

Test(watchdog, malformed, .init = clean_env)
{
	static const char *const bad[] = { "", "0", "-5", "12abc", " 5", "99999999999999999999999" };
	uint64_t ms;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WATCHDOG_USEC", bad[i], 1);
		cr_assert_eq(sd_watchdog_interval_ms(&ms), -EINVAL, "\"%s\"", bad[i]);
		cr_assert_eq(ms, 0);
	}
	setenv("WATCHDOG_USEC", "1000000", 1);
	setenv("WATCHDOG_PID", "self", 1);
	cr_assert_eq(sd_watchdog_interval_ms(&ms), -EINVAL);
}
