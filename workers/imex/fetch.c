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
 * pass" signal) so the next pass stages it.  A failure (network, status,
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

/* Host path of the cache directory and file (under the host root). */
static int cache_paths(const struct sim_ctx *ctx, const struct state *s, char *dir, size_t dlen,
		       char *file, size_t flen)
{
	if ((size_t)snprintf(dir, dlen, "%s%s/cache/imex/%s/%s", ctx->host.root, s->mock_root,
			     s->imex.download_version, s->imex.download_arch) >= dlen ||
	    (size_t)snprintf(file, flen, "%s/" CACHE_NAME, dir) >= flen)
		return -ENAMETOOLONG;
	return 0;
}

static int mkdirs(const char *dir)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* Does the file's sha256 equal the pin? */
static bool verified(const char *file, const char *want)
{
	char *buf;
	size_t len;
	char got[65];

	if (fileio_read_flags(file, O_NOFOLLOW, IMEX_MAX_ARCHIVE, &buf, &len, NULL, 0) < 0)
		return false;
	sha256_hex(buf, len, got);
	free(buf);
	return strcmp(got, want) == 0;
}

static int store(const char *dir, const char *file, const unsigned char *data, size_t len)
{
	char tmp[4200];
	int fd, r = 0;

	if ((r = mkdirs(dir)) < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s/.archive.%d.tmp", dir, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && r == 0;) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, file) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* One try: 0 when the verified archive is cached. */
static int fetch_once(const struct state *s, const char *dir, const char *file)
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
	r = store(dir, file, data, len);
	free(data);
	if (r < 0)
		log_error("imex: IMEXDownload: %s: %s", file, strerror(-r));
	else
		log_info("imex: IMEXDownload: cached %s (%zu bytes, sha256 verified)", file, len);
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

static void fetcher(const struct state *s, const char *dir, const char *file, pid_t sup)
{
	long ms = BACKOFF_FIRST_MS;

	backoff_test_override(&ms);
	for (;;) {
		struct timespec ts;

		if (fetch_once(s, dir, file) == 0) {
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

static void start(const struct state *s, const char *dir, const char *file, const char *key)
{
	pid_t sup = getppid(), pid;

	log_info("imex: IMEXDownload: %s not cached: fetching %s in the background; no IMEX "
		 "userspace until it is verified", file, s->imex.download_url);
	if ((pid = fork()) < 0) {
		log_error("imex: IMEXDownload: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		close_range(3, ~0u, 0);	/* not the worker's IPC socket */
		if (getppid() == 1)
			_exit(0);
		fetcher(s, dir, file, sup);
	}
	fetch.pid = pid;
	snprintf(fetch.key, sizeof(fetch.key), "%s", key);
}

int imex_fetch_cached(struct sim_ctx *ctx, const struct state *s, char *archive, size_t len)
{
	char dir[4096], file[4200], key[1200];
	struct stat st;

	snprintf(key, sizeof(key), "%s %s", s->imex.download_url, s->imex.download_sha256);
	reap(key);
	if (cache_paths(ctx, s, dir, sizeof(dir), file, sizeof(file)) < 0 ||
	    (size_t)snprintf(archive, len, "%s", file) >= len) {
		log_error("imex: IMEXDownload: cache path too long under %s", ctx->host.root);
		return 0;
	}
	if (lstat(file, &st) == 0) {
		if (S_ISREG(st.st_mode) && verified(file, s->imex.download_sha256))
			return 1;
		log_warn("imex: IMEXDownload: %s does not match the pinned sha256: removed", file);
		unlink(file);
	}
	if (fetch.pid == 0)
		start(s, dir, file, key);
	return 0;
}
