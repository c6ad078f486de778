/* The staging gate, reader side (supervisor/staging_gate.c is the writer):
 * a container is injected only while the shared lock is held and /stagedz
 * says the tree is staged, so a container created while the node
 * re-stages waits for the pass.  The wait is bounded by the runtime's
 * request timeout; past it the container starts without waiting (fail
 * open) and the log says so. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "nri/nri.h"
#include "workers/imex/http.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static bool staged(const char *addr, char *why, size_t whylen)
{
	char url[192];
	unsigned char *body = NULL;
	size_t len = 0;
	int r;

	snprintf(url, sizeof(url), "http://%s/stagedz", addr);
	r = http_get(url, 4096, 500, &body, &len, why, whylen);
	free(body);
	return r == 0;
}

int nri_gate_wait(const char *lock_path, const char *stagedz_addr, int budget_ms,
		  int *lock_fd, char *why, size_t whylen)
{
	long end = now_ms() + budget_ms;
	int fd = lock_path && *lock_path ? open(lock_path, O_RDONLY | O_CLOEXEC) : -1;

	*lock_fd = -1;
	for (;;) {
		struct timespec ts = { 0, 50 * 1000000L };
		bool locked = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) == 0;

		if ((fd < 0 || locked) && staged(stagedz_addr, why, whylen)) {
			*lock_fd = locked ? fd : -1;
			if (!locked && fd >= 0)
				close(fd);
			return 0;
		}
		if (locked)
			flock(fd, LOCK_UN);
		else if (fd >= 0)
			snprintf(why, whylen, "the node is staging (%s held)", lock_path);
		if (now_ms() >= end)
			break;
		nanosleep(&ts, NULL);
	}
	if (fd >= 0)
		close(fd);
	return -ETIMEDOUT;
}

void nri_gate_release(int lock_fd)
{
	if (lock_fd >= 0) {
		flock(lock_fd, LOCK_UN);
		close(lock_fd);
	}
}
