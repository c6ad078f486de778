/* Daemon records (pidfile.h).  The record:
 *
 *   mokka-daemon 1\n pid <pid>\n start <starttime>\n exe <path>\n
 *   cmdline\n <argv[0]>\0<argv[1]>\0...
 *
 * the command line byte for byte as /proc/<pid>/cmdline shows it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "supervisor/pidfile.h"

#define PREFIX "daemon."
#define SUFFIX ".pid"
#define MAGIC "mokka-daemon 1\n"
#define RECORD_MAX 65536

struct record {
	pid_t pid;
	unsigned long long start;
	char exe[PATH_MAX];
	const char *cmdline;		/* into the file's buffer */
	size_t cmdlen;
};

static int record_path(char *buf, size_t len, const char *dir, const char *name)
{
	if (snprintf(buf, len, "%s/" PREFIX "%s" SUFFIX, dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int pidfile_parse_stat(const char *stat, unsigned long long *starttime, char *state)
{
	/* "pid (comm) S ppid ..." - comm may hold spaces and parentheses:
	 * the fields start after the last ')'. */
	const char *p = strrchr(stat, ')');
	char *end;

	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	if (state)
		*state = p[2];
	p += 2;
	/* state is field 3; start time is field 22: skip 19 fields */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	errno = 0;
	*starttime = strtoull(p, &end, 10);
	if (errno || end == p || (*end != ' ' && *end != '\n' && *end))
		return -EINVAL;
	return 0;
}

static int proc_start(pid_t pid, unsigned long long *start, char *state)
{
	char path[64], *buf;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = fileio_read(path, 4096, &buf, &len, NULL, 0);
	if (r < 0)
		return r;
	r = pidfile_parse_stat(buf, start, state);
	free(buf);
	return r;
}

int pidfile_write(const char *dir, const char *name, pid_t pid, const char *exe,
		  char *const *argv)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], real[PATH_MAX];
	unsigned long long start;
	FILE *f;
	int r;

	if ((r = record_path(path, sizeof(path), dir, name)) < 0)
		return r;
	if ((r = proc_start(pid, &start, NULL)) < 0)
		return r;
	/* /proc/<pid>/exe shows the resolved path. */
	if (!realpath(exe, real))
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wxe");
	if (!f && errno == EEXIST && unlink(tmp) == 0)	/* left by a killed writer */
		f = fopen(tmp, "wxe");
	if (!f)
		return -errno;
	fprintf(f, MAGIC "pid %d\nstart %llu\nexe %s\ncmdline\n", (int)pid, start, real);
	for (char *const *a = argv; a && *a; a++)
		fwrite(*a, 1, strlen(*a) + 1, f);
	if (ferror(f) | (fclose(f) != 0)) {
		r = -EIO;
		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

void pidfile_remove(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (record_path(path, sizeof(path), dir, name) == 0 && unlink(path) < 0 &&
	    errno != ENOENT)
		log_warn("%s: unlink: %s", path, strerror(errno));
}

static int parse_record(char *buf, size_t len, struct record *rec)
{
	char *cmd = strstr(buf, "\ncmdline\n");
	int n = 0;

	if (strncmp(buf, MAGIC, strlen(MAGIC)) || !cmd)
		return -EINVAL;
	*cmd = '\0';
	if (sscanf(buf + strlen(MAGIC), "pid %d\nstart %llu\nexe %n", &rec->pid, &rec->start,
		   &n) != 2 || n == 0 || rec->pid <= 1)
		return -EINVAL;
	if (snprintf(rec->exe, sizeof(rec->exe), "%s", buf + strlen(MAGIC) + n) >=
	    (int)sizeof(rec->exe))
		return -EINVAL;
	rec->cmdline = cmd + strlen("\ncmdline\n");
	rec->cmdlen = len - (size_t)(rec->cmdline - buf);
	return 0;
}

/* Does pid still run as recorded?  A zombie or a gone process does not. */
static bool still_matches(const struct record *rec)
{
	char path[64], exe[PATH_MAX + 16], *cmd = NULL;
	unsigned long long start;
	size_t clen = 0;
	char state = 0;
	ssize_t n;
	bool same;

	if (proc_start(rec->pid, &start, &state) < 0 || start != rec->start || state == 'Z')
		return false;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)rec->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		return false;
	exe[n] = '\0';
	/* A binary replaced since (an upgrade) still is the one we ran. */
	if (strcmp(exe, rec->exe) && (strncmp(exe, rec->exe, strlen(rec->exe)) ||
				      strcmp(exe + strlen(rec->exe), " (deleted)")))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)rec->pid);
	if (fileio_read(path, RECORD_MAX, &cmd, &clen, NULL, 0) < 0)
		return false;
	same = clen == rec->cmdlen && memcmp(cmd, rec->cmdline, clen) == 0;
	free(cmd);
	return same;
}

/* SIGKILL through a pidfd (no PID reuse between the check and the kill),
 * then wait for it to go. */
static int stop_one(const struct record *rec, int timeout_ms)
{
	int pfd = (int)syscall(SYS_pidfd_open, rec->pid, 0);
	struct pollfd p;

	if (pfd < 0 && errno != ENOSYS)
		return errno == ESRCH ? 0 : -errno;
	if (!still_matches(rec)) {
		if (pfd >= 0)
			close(pfd);
		return 0;
	}
	if (pfd < 0) {	/* no pidfds: checked just now, good enough */
		kill(rec->pid, SIGKILL);
		for (int i = 0; i < timeout_ms / 10 && still_matches(rec); i++)
			usleep(10000);
		return 1;
	}
	if (syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0) {
		int e = errno;
		close(pfd);
		return e == ESRCH ? 0 : -e;
	}
	p = (struct pollfd){ .fd = pfd, .events = POLLIN };
	while (poll(&p, 1, timeout_ms) < 0 && errno == EINTR)
		;
	close(pfd);
	return 1;
}

static bool has_form(const char *name, const char *suffix)
{
	size_t n = strlen(name);

	return n > strlen(PREFIX) + strlen(suffix) && !strncmp(name, PREFIX, strlen(PREFIX)) &&
	       !strcmp(name + n - strlen(suffix), suffix);
}

int pidfile_stop_stale(const char *dir, int timeout_ms)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int stopped = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		char path[PATH_MAX], *buf = NULL;
		struct record rec;
		size_t len;
		int r;

		bool tmp = has_form(e->d_name, SUFFIX ".tmp");	/* a killed writer's */

		if ((!tmp && !has_form(e->d_name, SUFFIX)) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (!tmp && fileio_read_flags(path, O_NOFOLLOW, RECORD_MAX, &buf, &len, NULL, 0) == 0 &&
		    parse_record(buf, len, &rec) == 0) {
			r = stop_one(&rec, timeout_ms);
			if (r > 0) {
				log_warn("stopped %.*s (pid %d) left by a previous supervisor",
					 (int)(strlen(e->d_name) - strlen(PREFIX) - strlen(SUFFIX)),
					 e->d_name + strlen(PREFIX), (int)rec.pid);
				stopped++;
			} else if (r < 0) {
				log_warn("%s: pid %d: %s", path, (int)rec.pid, strerror(-r));
			}
		}
		free(buf);
		if (unlink(path) < 0 && errno != ENOENT)
			log_warn("%s: unlink: %s", path, strerror(errno));
	}
	closedir(d);
	return stopped;
}
