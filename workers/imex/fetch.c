/* The IMEXDownload feature gate (SURFACES.md §3 node-software policy):
 * the pinned IMEX redist archive in a node cache,
 * R/cache/imex/<version>/<arch>/archive.tar.xz.  Stage never waits on the
 * network: a verified cache file is staged like a delivered archive (the
 * pinned sha256 of the archive vouches for its members, the same checks
 * as --imex-archive); a miss starts one background fetcher and the node
 * stays ready with no IMEX userspace.
 *
 * The fetcher is a child of the worker (it dies with it): GET the URL
 * (http.c), compare the archive's sha256 with the pin, write it into the
 * cache by temp file + rename, then SIGHUP the supervisor (its "re-run the
 * pass" signal) so the next pass stages it.  Every cache path is resolved
 * beneath the host root (fileio/beneath.h): a link planted in it is
 * refused and named, never followed; a killed fetcher's temporary file is
 * swept by the next Stage.  A failure (network, status,
 * a wrong checksum) is logged and retried, 5 s doubling to 5 min.  The
 * cache is not part of any generation: it outlives the node pod, as a
 * node cache should, and Discard leaves it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/imex/http.h"
#include "workers/imex/imex.h"

#define FETCH_TIMEOUT_MS (10 * 60 * 1000)
#define BACKOFF_FIRST_MS 5000
#define BACKOFF_CAP_MS (5 * 60 * 1000)
#define CACHE_NAME "archive.tar.xz"

static struct {
	pid_t pid;			/* the running fetcher, 0 = none */
	char key[1200];			/* url + sha it was started for */
} fetch;

/* The cache: the host root, the directory as a host path (rel), the file
 * root-joined (what Stage reads and the log names). */
struct cache {
	const char *root;
	char rel[1024];
	char file[4200];
};

static int cache_paths(const struct sim_ctx *ctx, const struct state *s, struct cache *c)
{
	c->root = ctx->host.root;
	if ((size_t)snprintf(c->rel, sizeof(c->rel), "%s/cache/imex/%s/%s", s->mock_root,
			     s->imex.download_version, s->imex.download_arch) >= sizeof(c->rel) ||
	    (size_t)snprintf(c->file, sizeof(c->file), "%s%s/" CACHE_NAME, c->root, c->rel) >=
		    sizeof(c->file))
		return -ENAMETOOLONG;
	return 0;
}

/* The cache directory beneath the root (made when mkdir): an O_PATH fd,
 * or -errno with a link named in the log. */
static int cache_dir(const struct cache *c, bool mkdir)
{
	int rootfd = beneath_root(c->root), fd;

	if (rootfd < 0)
		return rootfd;
	fd = mkdir ? beneath_mkdirs(rootfd, c->rel, 0755) : 0;
	if (fd == 0)
		fd = beneath_open(rootfd, c->rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		host_refused(c->root, rootfd, c->rel, fd);
	close(rootfd);
	return fd;
}

/* Does the cached file's sha256 equal the pin?  Read through its
 * directory's fd, never through a link. */
static bool verified(int dfd, const char *want)
{
	char path[64], got[65], *buf;
	size_t len;
	int fd = openat(dfd, CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0)
		return false;
	r = beneath_fdpath(fd, NULL, path, sizeof(path));
	if (r == 0)
		r = fileio_read(path, IMEX_MAX_ARCHIVE, &buf, &len, NULL, 0);
	close(fd);
	if (r < 0)
		return false;
	sha256_hex(buf, len, got);
	free(buf);
	return strcmp(got, want) == 0;
}

static int store(const struct cache *c, const unsigned char *data, size_t len)
{
	int dfd = cache_dir(c, true), r;

	if (dfd < 0)
		return dfd;
	r = beneath_replace(dfd, CACHE_NAME, data, len, 0644, BENEATH_REPLACE_SYNC);
	if (r == -ELOOP)
		log_error("imex: IMEXDownload: %s is a symbolic link that Mokka did not make: "
			  "refusing to replace it", c->file);
	close(dfd);
	return r;
}

/* One try: 0 when the verified archive is cached. */
static int fetch_once(const struct state *s, const struct cache *c)
{
	unsigned char *data = NULL;
	size_t len = 0;
	char err[512], got[65];
	int r;

	r = http_get(s->imex.download_url, IMEX_MAX_ARCHIVE, FETCH_TIMEOUT_MS, &data, &len, err,
		     sizeof(err));
	if (r < 0) {
		log_error("imex: IMEXDownload: %s", err);
		return r;
	}
	sha256_hex(data, len, got);
	if (strcmp(got, s->imex.download_sha256) != 0) {
		log_error("imex: IMEXDownload: %s: sha256 %s, the pin says %s: not cached",
			  s->imex.download_url, got, s->imex.download_sha256);
		free(data);
		return -EPERM;
	}
	r = store(c, data, len);
	free(data);
	if (r < 0)
		log_error("imex: IMEXDownload: %s: %s", c->file, strerror(-r));
	else
		log_info("imex: IMEXDownload: cached %s (%zu bytes, sha256 verified)", c->file, len);
	return r;
}

/* The supervisor's "re-run the pass" signal, only to a supervisor. */
static void ask_for_pass(pid_t sup)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)sup);
	if ((f = fopen(path, "re"))) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	if (!strncmp(comm, "mokka-superviso", 15))
		kill(sup, SIGHUP);
	else
		log_info("imex: IMEXDownload: not under a supervisor: stage again to use it");
}

static void backoff_test_override(long *ms)
{
	const char *v = getenv("MOKKA_TEST_IMEX_FETCH_BACKOFF_MS");

	if (v && atol(v) > 0)
		*ms = atol(v);
}

static void fetcher(const struct state *s, const struct cache *c, pid_t sup)
{
	long ms = BACKOFF_FIRST_MS;

	backoff_test_override(&ms);
	for (;;) {
		struct timespec ts;

		if (fetch_once(s, c) == 0) {
			ask_for_pass(sup);
			_exit(0);
		}
		log_info("imex: IMEXDownload: next try in %ld ms", ms);
		ts = (struct timespec){ ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		ms = ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : ms * 2;
	}
}

/* The fetcher of an older URL/pin goes; a finished one is reaped. */
static void reap(const char *key)
{
	if (fetch.pid > 0 && strcmp(fetch.key, key) != 0) {
		kill(fetch.pid, SIGTERM);
		waitpid(fetch.pid, NULL, 0);
		fetch.pid = 0;
	}
	if (fetch.pid > 0 && waitpid(fetch.pid, NULL, WNOHANG) == fetch.pid)
		fetch.pid = 0;
}

static void start(const struct state *s, const struct cache *c, const char *key)
{
	pid_t sup = getppid(), pid;

	log_info("imex: IMEXDownload: %s not cached: fetching %s in the background; no IMEX "
		 "userspace until it is verified", c->file, s->imex.download_url);
	if ((pid = fork()) < 0) {
		log_error("imex: IMEXDownload: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		close_range(3, ~0u, 0);	/* not the worker's IPC socket */
		if (getppid() == 1)
			_exit(0);
		fetcher(s, c, sup);
	}
	fetch.pid = pid;
	snprintf(fetch.key, sizeof(fetch.key), "%s", key);
}

int imex_fetch_cached(struct sim_ctx *ctx, const struct state *s, char *archive, size_t len)
{
	static struct cache c;
	char key[1200];
	struct stat st = { 0 };
	int dfd;

	snprintf(key, sizeof(key), "%s %s", s->imex.download_url, s->imex.download_sha256);
	reap(key);
	if (cache_paths(ctx, s, &c) < 0 || (size_t)snprintf(archive, len, "%s", c.file) >= len) {
		log_error("imex: IMEXDownload: cache path too long under %s", ctx->host.root);
		return 0;
	}
	dfd = cache_dir(&c, false);
	if (dfd == -ELOOP || dfd == -EXDEV)
		return 0;	/* named in the log; a fetch could not store it either */
	if (dfd >= 0) {
		beneath_sweep_tmp(dfd);	/* a killed fetcher's temporary */
		if (fstatat(dfd, CACHE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
			log_error("imex: IMEXDownload: %s is a symbolic link that Mokka did not make: "
				  "refusing to follow it", c.file);
		} else if (fstatat(dfd, CACHE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISREG(st.st_mode) && verified(dfd, s->imex.download_sha256)) {
				close(dfd);
				return 1;
			}
			log_warn("imex: IMEXDownload: %s does not match the pinned sha256: removed",
				 c.file);
			unlinkat(dfd, CACHE_NAME, 0);
		}
		close(dfd);
		if (S_ISLNK(st.st_mode))
			return 0;
	}
	if (fetch.pid == 0)
		start(s, &c, key);
	return 0;
}
