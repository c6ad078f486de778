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

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "supervisor/supervisor.h"

#define LOCK_WAIT_MS 2000

static int lock_fd = -1;
static char lock_path[8192];	/* for messages: <host root><lock> */
static char lock_rel[8192];	/* the lock beneath the host root */
static char made[4][8192];	/* directories we created (beneath it), deepest last */
static int nmade;
static char gate_root[4096];	/* the host root ("" for /) */

/* Every path is reached from an fd of the host root (fileio/beneath.h):
 * beneath a --host-root, no link is followed, a planted one is refused and
 * named.  A host root of / is the operator's own system, whose layout has
 * links by design (/var/run -> /run): the lock's directories are resolved
 * as a chroot would (links followed, never out of /), the lock itself and
 * the directories we make or remove never through a link (*at calls on
 * their parent's fd, O_NOFOLLOW). */
static int open_dir(int rootfd, const char *rel)
{
	return gate_root[0] ? beneath_open(rootfd, rel, O_PATH | O_DIRECTORY, 0)
			    : beneath_open_in_root(rootfd, rel, O_PATH | O_DIRECTORY, 0);
}

/* rel's parent directory (an fd) and its last component. */
static int at_parent(int rootfd, const char *rel, char *dir, size_t len, const char **leaf)
{
	char *slash;

	snprintf(dir, len, "%s", rel);
	if (!(slash = strrchr(dir, '/')) || !slash[1])
		return -EINVAL;
	*slash = '\0';
	*leaf = rel + (slash - dir) + 1;
	return open_dir(rootfd, dir);
}

/* unlinkat of rel through its parent; absent is fine. */
static void remove_at(int rootfd, const char *rel, int flags)
{
	char dir[8192];
	const char *leaf;
	int dfd = at_parent(rootfd, rel, dir, sizeof(dir), &leaf);

	if (dfd < 0)
		return;
	if (unlinkat(dfd, leaf, flags) < 0 && errno != ENOENT && errno != ENOTEMPTY)
		log_warn("staging gate: %s%s: remove: %s", gate_root, rel, strerror(errno));
	close(dfd);
}

/* At exit the lock and the directories made for it go: the host root is
 * left as it was (nobody can be waiting on a lock of a gone supervisor). */
static void remove_lock(void)
{
	int rootfd;

	if (!lock_rel[0] || (rootfd = beneath_root(gate_root)) < 0)
		return;
	remove_at(rootfd, lock_rel, 0);
	while (nmade > 0)
		remove_at(rootfd, made[--nmade], AT_REMOVEDIR);
	close(rootfd);
}

/* mkdir -p of the lock's directories, each made in its parent's fd. */
static int mkdirs_for(int rootfd, const char *rel)
{
	char p[8192], dir[8192];
	int fd, r;

	snprintf(p, sizeof(p), "%s", rel);
	for (char *s = p + 1; *s; s++) {
		const char *leaf;

		if (*s != '/')
			continue;
		*s = '\0';
		if ((fd = open_dir(rootfd, p)) >= 0)
			close(fd);
		else if (fd != -ENOENT)
			return fd;
		else if ((fd = at_parent(rootfd, p, dir, sizeof(dir), &leaf)) < 0)
			return fd;
		else {
			r = mkdirat(fd, leaf, 0755) < 0 ? -errno : 0;
			close(fd);
			if (r < 0 && r != -EEXIST)
				return r;
			if (r == 0 && nmade < 4)
				snprintf(made[nmade++], sizeof(made[0]), "%s", p);
		}
		*s = '/';
	}
	return 0;
}

/* The lock file lists the directories made for it, one per line: a
 * successor of a supervisor killed before its exit adopts them, so the
 * host root still ends as it was.  Only proper ancestors of the lock are
 * taken from it, and removed beneath the root like ours. */
static void adopt_dirs(int fd)
{
	char buf[4 * 8192 + 4], *save = NULL;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *l = strtok_r(buf, "\n", &save); l && nmade < 4; l = strtok_r(NULL, "\n", &save)) {
		size_t len;

		/* Host paths (the root's own path first), taken beneath it. */
		if (strncmp(l, gate_root, strlen(gate_root)))
			continue;
		l += strlen(gate_root);
		len = strlen(l);

		if (len < strlen(lock_rel) && strncmp(l, lock_rel, len) == 0 &&
		    lock_rel[len] == '/' && !strstr(l, "/.."))
			snprintf(made[nmade++], sizeof(made[0]), "%s", l);
	}
}

static void record_dirs(int fd)
{
	if (nmade == 0 || ftruncate(fd, 0) < 0)
		return;
	for (int i = 0; i < nmade; i++)
		if (dprintf(fd, "%s%s\n", gate_root, made[i]) < 0)
			return;
}

/* The lock file, made and opened beneath the host root; -errno, the
 * refusal logged naming the link. */
static int make_lock(const char *rel)
{
	char dir[8192], why[8192 + 512];
	const char *leaf;
	int rootfd = beneath_root(gate_root), dfd = -1, r;

	if (rootfd < 0)
		return rootfd;
	if ((r = mkdirs_for(rootfd, rel)) == 0 &&
	    (r = dfd = at_parent(rootfd, rel, dir, sizeof(dir), &leaf)) >= 0) {
		r = openat(dfd, leaf, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
		r = r < 0 ? -errno : r;
		close(dfd);
	}
	if (r < 0) {
		beneath_explain(rootfd, gate_root, rel, r, why, sizeof(why));
		log_warn("staging gate: %s: %s (refused; the NRI plugin relies on /stagedz alone)",
			 lock_path, why);
	}
	close(rootfd);
	return r;
}

static int open_lock(const struct supervisor *s)
{
	if (lock_fd >= 0)
		return lock_fd;
	/* Only a node with the NRI plugin (on unless --nri-plugin=false) has a reader; an
	 * empty --staging-lock-path turns the lock off. */
	if (!s->opt.compile.cri_nri || !s->opt.staging_lock || !*s->opt.staging_lock)
		return -ENOENT;
	snprintf(gate_root, sizeof(gate_root), "%s", strcmp(s->opt.host_root, "/") ? s->opt.host_root : "");
	snprintf(lock_path, sizeof(lock_path), "%s%s", s->opt.host_root, s->opt.staging_lock);
	snprintf(lock_rel, sizeof(lock_rel), "%s", s->opt.staging_lock);
	atexit(remove_lock);
	if ((lock_fd = make_lock(lock_rel)) < 0) {
		int r = lock_fd;

		lock_fd = -1;
		lock_rel[0] = '\0';
		return r;
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
