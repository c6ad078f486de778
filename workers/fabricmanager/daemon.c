/* mokka-fabricmanager: the nv-fabricmanager stand-in.  It keeps the
 * readiness marker the mock NVML and workloads look for: a stale marker is
 * removed at start, the marker appears after the init delay and is
 * re-asserted every 2 s, and it is removed on stop.  SIGHUP re-reads the
 * config (new delay or state dir) without a restart. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"

#define MARKER "fabricmanager.ready"
#define REASSERT_MS 2000

struct fm_conf {
	char state_dir[PATH_MAX];
	long init_delay_ms;
};

static char host_root[PATH_MAX];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int read_conf(const char *path, struct fm_conf *c)
{
	char full[PATH_MAX * 2], line[PATH_MAX + 32];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", host_root, path);
	if (!(f = fopen(full, "re")))
		return -errno;
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "STATE_DIR=", 10) == 0)
			snprintf(c->state_dir, sizeof(c->state_dir), "%s", line + 10);
		else if (strncmp(line, "INIT_DELAY_MS=", 14) == 0)
			c->init_delay_ms = atol(line + 14);
	}
	fclose(f);
	if (c->state_dir[0] != '/' || strstr(c->state_dir, "..")) {
		errno = EINVAL;
		return -EINVAL;
	}
	return 0;
}

static void marker_path(const struct fm_conf *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s/%s", host_root, c->state_dir, MARKER);
}

/* The marker beneath the host root, never through a link
 * (fileio/beneath.h): the parent's fd, or -errno. */
static int marker_dir(const struct fm_conf *c, const char **name)
{
	char rel[PATH_MAX + 32];
	int rootfd = beneath_root(host_root), dfd;

	if (rootfd < 0)
		return rootfd;
	snprintf(rel, sizeof(rel), "%s/%s", c->state_dir, MARKER);
	dfd = beneath_parent(rootfd, rel, name);
	*name = MARKER;
	close(rootfd);
	return dfd;
}

static void marker_remove(const struct fm_conf *c)
{
	char m[PATH_MAX * 2];
	const char *name;
	int dfd = marker_dir(c, &name);

	marker_path(c, m, sizeof(m));
	if (dfd == -ENOENT)
		return;
	if (dfd < 0 || (unlinkat(dfd, name, 0) < 0 && errno != ENOENT))
		log_warn("%s: unlink: %s", m, strerror(dfd < 0 ? -dfd : errno));
	if (dfd >= 0)
		close(dfd);
}

static void marker_assert(const struct fm_conf *c)
{
	char m[PATH_MAX * 2];
	const char *name;
	int dfd = marker_dir(c, &name), fd = -1;

	marker_path(c, m, sizeof(m));
	/* Re-created every tick: something may have deleted it. */
	if (dfd >= 0)
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		log_warn("%s: create: %s", m, strerror(dfd < 0 ? -dfd : errno));
		if (dfd >= 0)
			close(dfd);
		return;
	}
	close(fd);
	close(dfd);
}

static const char usage[] =
	"Usage: %s -c CONFIG [--host-root DIR]\n"
	"Mokka's fabric manager stand-in: keeps STATE_DIR/" MARKER " (the\n"
	"readiness marker) while running; SIGHUP re-reads CONFIG.\n\n"
	"  -c CONFIG           the daemon config the fabricmanager simulator wrote\n"
	"  --host-root DIR     root that host paths live under (default /)\n"
	"  --help, --version\n";

/* The command line into *conf_path and host_root: -1 to go on, else the
 * exit status (--help, --version, a usage error). */
static int parse_args(int argc, char **argv, const char *prog, const char **conf_path)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			*conf_path = argv[++i];
		else if (strcmp(argv[i], "--host-root") == 0 && i + 1 < argc) {
			if (strcmp(argv[++i], "/") != 0)
				snprintf(host_root, sizeof(host_root), "%s", argv[i]);
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf(usage, prog);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("%s %s\n", prog, MOKKA_VERSION);
			return 0;
		} else {
			fprintf(stderr, usage, prog);
			return 2;
		}
	}
	if (!*conf_path) {
		fprintf(stderr, usage, prog);
		return 2;
	}
	return -1;
}

/* SIGHUP: the new config, or the old one when it does not read.  A new
 * delay counts from our start, as a fresh daemon's would; once ready we
 * stay ready. */
static void reload(const char *conf_path, struct fm_conf *conf, uint64_t start, bool announced,
		   uint64_t *ready_at)
{
	struct fm_conf next;

	if (read_conf(conf_path, &next) < 0) {
		log_warn("reload: %s%s: %s; keeping the old config", host_root, conf_path,
			 strerror(errno));
		return;
	}
	if (strcmp(next.state_dir, conf->state_dir) != 0)
		marker_remove(conf);
	if (!announced)
		*ready_at = start + (uint64_t)(next.init_delay_ms > 0 ? next.init_delay_ms : 0);
	*conf = next;
	log_info("reloaded: state dir %s, init delay %ld ms", conf->state_dir,
		 conf->init_delay_ms);
}

/* Until SIGTERM/SIGINT: the marker after the delay, re-asserted; exit 0. */
static int serve(const char *conf_path, struct fm_conf *conf, int sfd)
{
	uint64_t start = now_ms(), ready_at;
	bool announced = false;

	/* A marker left by a previous run must not claim readiness early. */
	marker_remove(conf);
	ready_at = start + (uint64_t)(conf->init_delay_ms > 0 ? conf->init_delay_ms : 0);
	log_info("started; marker %s%s/%s after %ld ms", host_root, conf->state_dir, MARKER,
		 conf->init_delay_ms);
	for (;;) {
		uint64_t now = now_ms();
		struct signalfd_siginfo si;
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		int timeout;

		if (now >= ready_at) {
			marker_assert(conf);
			if (!announced)
				log_info("fabric ready");
			announced = true;
			timeout = REASSERT_MS;
		} else {
			timeout = (int)(ready_at - now);
		}
		if (poll(&p, 1, timeout) <= 0)
			continue;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			reload(conf_path, conf, start, announced, &ready_at);
			continue;
		}
		marker_remove(conf);
		log_info("stopping on signal %u", si.ssi_signo);
		return 0;
	}
}

int main(int argc, char **argv)
{
	/* The supervisor runs us as nv-fabricmanager; by hand we are
	 * mokka-fabricmanager: name ourselves as invoked. */
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const char *conf_path = NULL;
	struct fm_conf conf;
	sigset_t mask;
	int sfd, rc;

	prctl(PR_SET_NAME, "nv-fabricmanager");
	log_setup_env("nv-fabricmanager");
	if ((rc = parse_args(argc, argv, prog, &conf_path)) >= 0)
		return rc;
	if (read_conf(conf_path, &conf) < 0) {
		log_error("%s%s: cannot read config: %s", host_root, conf_path, strerror(errno));
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		log_error("signalfd: %s", strerror(errno));
		return 1;
	}
	return serve(conf_path, &conf, sfd);
}
