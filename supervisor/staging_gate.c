/* The NRI staging gate (SURFACES.md §2.6, §7.2): no container may be
 * injected from a half-staged tree.  Two halves, both read by the NRI
 * plugin (nri/):
 *   - with the NRI plugin on (the default; --nri-plugin=false is off), a
 *     shared/exclusive flock on --staging-lock-path (host path under the
 *     host root, default /run/nvml-mock/nri-staging.lock, removed at exit
 *     with the directories made for it, which the file lists so that a
 *     successor of a killed supervisor removes them too): the supervisor holds it exclusively
 *     from a pass's first Stage until its Publish and Apply are done, and
 *     from the start of a teardown on; the plugin takes it shared around
 *     each injection;
 *   - GET /stagedz (health_routes.c): 200 once a pass published the driver
 *     tree and none is staging now.
 * flock never blocks the event loop for long: a plugin holds its shared
 * lock for an adjustment only (milliseconds); after LOCK_WAIT_MS the pass
 * goes on without the lock, saying so (the plugin also checks /stagedz). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/supervisor.h"

#define LOCK_WAIT_MS 2000

static int lock_fd = -1;
static char lock_path[8192];
static char made[4][8192];	/* directories we created, deepest last */
static int nmade;

/* At exit the lock and the directories made for it go: the host root is
 * left as it was (nobody can be waiting on a lock of a gone supervisor). */
static void remove_lock(void)
{
	if (lock_path[0])
		unlink(lock_path);
	while (nmade > 0)
		rmdir(made[--nmade]);
}

static int mkdirs_for(char *path)
{
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) == 0 && nmade < 4)
			snprintf(made[nmade++], sizeof(made[0]), "%s", path);
		else if (errno != EEXIST) {
			*s = '/';
			return -errno;
		}
		*s = '/';
	}
	return 0;
}

/* The lock file lists the directories made for it, one per line: a
 * successor of a supervisor killed before its exit adopts them, so the
 * host root still ends as it was.  Only proper ancestors of the lock are
 * taken from it. */
static void adopt_dirs(int fd)
{
	char buf[4 * 8192 + 4], *save = NULL;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *l = strtok_r(buf, "\n", &save); l && nmade < 4; l = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(l);

		if (len < strlen(lock_path) && strncmp(l, lock_path, len) == 0 &&
		    lock_path[len] == '/' && !strstr(l, "/.."))
			snprintf(made[nmade++], sizeof(made[0]), "%s", l);
	}
}

static void record_dirs(int fd)
{
	if (nmade == 0 || ftruncate(fd, 0) < 0)
		return;
	for (int i = 0; i < nmade; i++)
		if (dprintf(fd, "%s\n", made[i]) < 0)
			return;
}

static int open_lock(const struct supervisor *s)
{
	if (lock_fd >= 0)
		return lock_fd;
	/* Only a node with the NRI plugin (on unless --nri-plugin=false) has a reader; an
	 * empty --staging-lock-path turns the lock off. */
	if (!s->opt.compile.cri_nri || !s->opt.staging_lock || !*s->opt.staging_lock)
		return -ENOENT;
	snprintf(lock_path, sizeof(lock_path), "%s%s", s->opt.host_root, s->opt.staging_lock);
	atexit(remove_lock);
	if (mkdirs_for(lock_path) < 0 ||
	    (lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0) {
		log_warn("staging gate: %s: %s (the NRI plugin relies on /stagedz alone)",
			 lock_path, strerror(errno));
		lock_path[0] = '\0';
		return -errno;
	}
	if (nmade)
		record_dirs(lock_fd);
	else
		adopt_dirs(lock_fd);
	return lock_fd;
}

static void take(const struct supervisor *s)
{
	int fd = open_lock(s), waited = 0;

	if (fd < 0)
		return;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (errno != EWOULDBLOCK && errno != EINTR) {
			log_warn("staging gate: flock: %s", strerror(errno));
			return;
		}
		if (waited >= LOCK_WAIT_MS) {
			log_warn("staging gate: a reader held %s for %d ms: staging without it "
				 "(/stagedz says staging)", s->opt.staging_lock, LOCK_WAIT_MS);
			return;
		}
		nanosleep(&ts, NULL);
		waited += 10;
	}
}

void staging_gate_begin(struct supervisor *s)
{
	s->status.staging = true;
	take(s);
}

void staging_gate_end(struct supervisor *s, bool published)
{
	if (published)
		s->status.staged_generation = s->pass_gen;
	if (s->shutting_down)
		return;	/* the teardown keeps it until exit */
	s->status.staging = false;
	if (lock_fd >= 0)
		flock(lock_fd, LOCK_UN);
}
