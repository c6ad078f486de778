/* Daemon records (supervisor/pidfile.c): a starting supervisor stops what
 * a killed predecessor left, and only that: a process that no longer
 * matches its record (PID reused, another program, other arguments) is
 * never signalled.  Real processes (sleep), a temp dir, no root needed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor/pidfile.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/test_pidfile.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

TestSuite(pidfile, .init = setup, .fini = teardown);

static char *const sleep_argv[] = { "sleep", "30", NULL };
static const char *sleep_path;

/* A child running sleep 30 (the daemon stand-in). */
static pid_t start_sleep(char *const *argv)
{
	static const char *const paths[] = { "/usr/bin/sleep", "/bin/sleep" };
	pid_t pid;

	for (size_t i = 0; !sleep_path && i < 2; i++)
		if (access(paths[i], X_OK) == 0)
			sleep_path = paths[i];
	cr_assert_not_null(sleep_path, "no sleep binary");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execv(sleep_path, argv);
		_exit(127);
	}
	/* wait for the exec: cmdline shows the new argv */
	for (int i = 0; i < 200; i++) {
		char path[64], buf[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		if ((f = fopen(path, "r"))) {
			(void)!fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		if (!strcmp(buf, argv[0]))
			break;
		usleep(5000);
	}
	return pid;
}

static bool killed_by_us(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static int records(void)
{
	char cmd[160];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_eq(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

Test(pidfile, a_left_daemon_is_stopped_and_its_record_removed)
{
	pid_t pid = start_sleep(sleep_argv);

	cr_assert_eq(pidfile_write(dir, "mock-ib", pid, sleep_path, sleep_argv), 0);
	cr_assert_eq(records(), 1);
	cr_assert_eq(pidfile_stop_stale(dir, 2000), 1);
	cr_assert(killed_by_us(pid));
	cr_assert_eq(records(), 0);
}

Test(pidfile, a_stranger_is_never_signalled)
{
	static char *const other_args[] = { "sleep", "31", NULL };
	pid_t a = start_sleep(other_args), b = start_sleep(sleep_argv);
	char path[128];
	FILE *f;

	/* recorded with other arguments than it runs with */
	cr_assert_eq(pidfile_write(dir, "a", a, sleep_path, sleep_argv), 0);
	/* recorded as another program */
	cr_assert_eq(pidfile_write(dir, "b", b, "/bin/sh", sleep_argv), 0);
	cr_assert_eq(pidfile_stop_stale(dir, 500), 0);
	cr_assert_eq(kill(a, 0), 0, "a stranger was killed");
	cr_assert_eq(kill(b, 0), 0, "a stranger was killed");
	cr_assert_eq(records(), 0, "stale records are dropped all the same");
	/* a PID reused since: the start time differs */
	cr_assert_eq(pidfile_write(dir, "c", b, sleep_path, sleep_argv), 0);
	snprintf(path, sizeof(path), "%s/daemon.c.pid", dir);
	f = fopen(path, "r+");
	cr_assert_not_null(f);
	char buf[512] = "";
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	char *start = strstr(buf, "\nstart ");
	cr_assert_not_null(start);
	start[7] = start[7] == '9' ? '1' : '9';	/* another start time */
	rewind(f);
	fwrite(buf, 1, n, f);
	fclose(f);
	cr_assert_eq(pidfile_stop_stale(dir, 500), 0);
	cr_assert_eq(kill(b, 0), 0, "a reused PID was killed");
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
}

Test(pidfile, gone_garbage_and_no_dir)
{
	pid_t pid = start_sleep(sleep_argv);
	char path[128];
	FILE *f;

	cr_assert_eq(pidfile_write(dir, "gone", pid, sleep_path, sleep_argv), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/daemon.junk.pid", dir);
	f = fopen(path, "w");
	fputs("not a record\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/daemon.half.pid.tmp", dir);	/* a killed writer's */
	f = fopen(path, "w");
	fclose(f);
	snprintf(path, sizeof(path), "%s/pcibus.stage.manifest", dir);	/* not ours */
	f = fopen(path, "w");
	fclose(f);
	cr_assert_eq(pidfile_stop_stale(dir, 500), 0);
	cr_assert_eq(records(), 1, "only the manifest is left");
	cr_assert_eq(access(path, F_OK), 0);
	cr_assert_eq(pidfile_stop_stale("/nonexistent/dir", 500), 0);
	/* removing a record that is not there is fine */
	pidfile_remove(dir, "never");
}

Test(pidfile, parse_stat)
{
	unsigned long long t;
	char st;
	/* a comm with spaces and parentheses */
	const char *line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
			   "987654 1000 100 18446744073709551615\n";

	cr_assert_eq(pidfile_parse_stat(line, &t, &st), 0);
	cr_assert_eq(t, 987654ull);
	cr_assert_eq(st, 'S');
	cr_assert_eq(pidfile_parse_stat("4242 (x S 1", &t, &st), -EINVAL);
	cr_assert_eq(pidfile_parse_stat("4242 (x) S 1 2 3", &t, &st), -EINVAL);
	cr_assert_eq(pidfile_parse_stat("", &t, &st), -EINVAL);
}
