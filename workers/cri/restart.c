/* Commands run the way the host runs them: chrooted into the host root,
 * with a clean environment (the supervisor's environment may carry
 * preload shims).  The containerd restart goes through the host's own
 * systemctl this way (SURFACES.md §2.1), so with a temporary host root
 * (tests) it reaches that root's systemctl, never this machine's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"

#define CLEAN_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
#define RESTART_TIMEOUT_MS 15000	/* with nvidia-ctk, inside the 30 s Apply deadline */

static const char *const path_dirs[] = {
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
};

bool cri_host_has(const struct host *h, const char *name, char *found, size_t len)
{
	for (size_t i = 0; i < sizeof(path_dirs) / sizeof(path_dirs[0]); i++) {
		char path[512], res[4096], full[8192];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", path_dirs[i], name);
		if (cri_resolve(h, path, res, sizeof(res)) < 0 ||
		    host_path(h, res, full, sizeof(full)) < 0 || stat(full, &st) < 0 ||
		    !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			continue;
		snprintf(found, len, "%s", path);
		return true;
	}
	return false;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Between fork and exec: the root, a clean cwd, output to the pipe. */
static void child(const struct host *h, char *const argv[], const char *const env[], int out)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (devnull >= 0)
		dup2(devnull, 0);
	dup2(out, 1);
	dup2(out, 2);
	if (h->root[0] && chroot(h->root) < 0) {
		dprintf(2, "chroot %s: %s", h->root, strerror(errno));
		_exit(126);
	}
	if (chdir("/") < 0)
		_exit(126);
	execve(argv[0], argv, (char *const *)env);
	dprintf(2, "exec %s: %s", argv[0], strerror(errno));
	_exit(127);
}

int cri_run_in_root(const struct host *h, char *const argv[], const char *const env[],
		    int timeout_ms, char *why, size_t whylen)
{
	char out[512] = "";
	size_t used = 0;
	int p[2], status;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0)
		child(h, argv, env, p[1]);
	close(p[1]);
	/* Collect what it says until it closes the pipe or time runs out. */
	for (;;) {
		uint64_t now = now_ms();
		struct pollfd pfd = { p[0], POLLIN, 0 };
		char buf[256];
		ssize_t n;

		if (now >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(p[0]);
			snprintf(why, whylen, "%s: no answer within %d ms", argv[0], timeout_ms);
			return -ETIMEDOUT;
		}
		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			continue;
		n = read(p[0], buf, sizeof(buf));
		if (n <= 0 && !(n < 0 && errno == EINTR))
			break;
		if (n > 0 && used + 1 < sizeof(out)) {
			size_t k = (size_t)n < sizeof(out) - 1 - used ? (size_t)n : sizeof(out) - 1 - used;
			memcpy(out + used, buf, k);
			used += k;
			out[used] = '\0';
		}
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	/* the last line it printed, for the log */
	while (used && (out[used - 1] == '\n' || out[used - 1] == '\r'))
		out[--used] = '\0';
	snprintf(why, whylen, "%s", out);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int cri_restart_unit(const struct host *h, const char *unit, bool no_block, char *why,
		     size_t whylen)
{
	static const char *const env[] = { CLEAN_PATH, "SYSTEMD_IN_CHROOT=0",
					   "SYSTEMD_IGNORE_CHROOT=1", NULL };
	char systemctl[512], said[512];
	char *argv[] = { systemctl, "restart", "--no-block", (char *)unit, NULL };
	int r;

	if (!cri_host_has(h, "systemctl", systemctl, sizeof(systemctl))) {
		snprintf(why, whylen, "no systemctl on the host PATH under %s",
			 h->root[0] ? h->root : "/");
		return -ENOENT;
	}
	if (!no_block) {
		argv[2] = (char *)unit;
		argv[3] = NULL;
	}
	r = cri_run_in_root(h, argv, env, RESTART_TIMEOUT_MS, said, sizeof(said));
	if (r < 0) {
		snprintf(why, whylen, "%s", said[0] ? said : strerror(-r));
		return r;
	}
	if (r != 0) {
		snprintf(why, whylen, "systemctl restart %s%s: exit status %d%s%s", no_block ?
			 "--no-block " : "", unit, r, said[0] ? ": " : "", said);
		return -EIO;
	}
	log_debug("cri: systemctl restart %s%s: done", no_block ? "--no-block " : "", unit);
	return 0;
}
