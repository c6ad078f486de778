/* mokka-supervisor: desired state in, one isolated worker per simulator,
 * reconcile waves, daemons, health.  One event loop, no threads. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/log.h"
#include "overrides/overrides.h"
#include "profile/compile.h"
#include "profile/identity.h"
#include "supervisor/health.h"
#include "supervisor/pidfile.h"
#include "supervisor/rootdirs.h"
#include "supervisor/sdnotify.h"
#include "supervisor/source.h"
#include "supervisor/controlplane_source.h"
#include "supervisor/supervisor.h"

/* True when run from the build tree (the workers sit next to us). */
static bool locate_libexec(struct supervisor *s)
{
	char exe[PATH_MAX], probe[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool build_tree = false;

	snprintf(s->libexecdir, sizeof(s->libexecdir), "%s", MOKKA_LIBEXECDIR);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* Run from the build tree: workers sit next to us. */
			snprintf(probe, sizeof(probe), "%s/mokka-worker-pcibus", exe);
			if (access(probe, X_OK) == 0) {
				snprintf(s->libexecdir, sizeof(s->libexecdir), "%s", exe);
				build_tree = true;
			}
		}
	}
	if (getenv("MOKKA_LIBEXECDIR") && *getenv("MOKKA_LIBEXECDIR"))
		snprintf(s->libexecdir, sizeof(s->libexecdir), "%s", getenv("MOKKA_LIBEXECDIR"));
	return build_tree;
}

/* The tests' knob, honoured only in a build-tree run (never installed):
 * MOKKA_TEST_RESTART_CAP_MS lowers the longest restart backoff (30 s), so
 * a test sees a throttled worker come back within seconds. */
static void test_knobs(bool build_tree)
{
	const char *v = getenv("MOKKA_TEST_RESTART_CAP_MS");
	char *end;
	unsigned long ms;

	if (!build_tree || !v || !*v)
		return;
	errno = 0;
	ms = strtoul(v, &end, 10);
	if (errno || *end || ms < 100 || ms > BACKOFF_CAP_MS) {
		log_warn("MOKKA_TEST_RESTART_CAP_MS=%s: not 100..%d; ignored", v, BACKOFF_CAP_MS);
		return;
	}
	backoff_set_cap(ms);
	log_warn("test build: the longest restart backoff is %lu ms", ms);
}

/* Daemons a SIGKILLed predecessor on this root left running are stopped
 * before ours start: one instance of each, always (pidfile.h). */
static void stop_stale_daemons(const struct supervisor *s)
{
	char dir[64];
	int fd, r;

	/* R/state beneath the root: pidfile.c is given its fd's path. */
	if ((fd = rootdirs_state_fd(s->opt.host_root, s->opt.mock_root, dir, sizeof(dir))) < 0)
		return;
	r = pidfile_stop_stale(dir, 2000);
	close(fd);
	if (r < 0)
		log_warn("%s%s/state: looking for daemons of a previous instance: %s",
			 s->opt.host_root, s->opt.mock_root, strerror(-r));
}

/* A restart means a pristine profile (SURFACES.md §0): runtime overrides
 * left by mokka-ctl are emptied before the first reconcile.  Only files
 * that exist are touched. */
static void truncate_overrides(const struct supervisor *s)
{
	char path[2][8192], dir[8192];
	int r;

	/* The node's document, and one beside a config at R/config: host
	 * paths, emptied beneath the host root (a link there is refused and
	 * named, never followed). */
	snprintf(dir, sizeof(dir), "%s/config", s->opt.mock_root);
	ovr_path_beside(path[0], sizeof(path[0]), dir);
	ovr_path(path[1], sizeof(path[1]), "", s->opt.mock_root);
	for (size_t i = 0; i < 2; i++) {
		if ((r = rootdirs_truncate(s->opt.host_root, path[i])) > 0)
			log_info("reset runtime overrides %s%s", s->opt.host_root, path[i]);
		else if (r < 0 && r != -ELOOP && r != -EXDEV)
			log_warn("%s%s: truncate: %s", s->opt.host_root, path[i], strerror(-r));
	}
}

static void set_source_error(struct supervisor *s, const char *msg)
{
	snprintf(s->status.source_error, sizeof(s->status.source_error), "%s", msg);
	s->status.source_error_time = time(NULL);
	s->status.source_errors_total++;
}

static void on_update(void *arg, const char *profile, size_t plen, const char *topo, size_t tlen)
{
	struct supervisor *s = arg;
	/* The environment was read once, with the flags over it (options.c). */
	const struct compile_opts o = s->opt.compile;
	struct state st;
	char err[1024];
	int r;

	if (s->shutting_down)
		return;
	/* --state-source controlplane:...: the node's plan over the profile */
	char *merged = NULL;
	size_t mlen = 0;

	if (!profile) {
		profile = compile_default_profile;
		plen = compile_default_profile_len;
	}
	/* The node's own identities (identity.h) under the plan, so that the
	 * plan's GPU UUIDs and serials win; compile_profile keeps them. */
	char *own = NULL;
	size_t olen = 0;

	if (s->opt.state_source &&
	    (r = identity_apply(s->opt.config ? s->opt.config : "<built-in>", profile, plen,
				o.node_name, o.node_identity, &own, &olen, err, sizeof(err))) < 0) {
		log_error("desired state rejected, keeping generation %llu: %s",
			  (unsigned long long)s->status.generation, err);
		set_source_error(s, err);
		return;
	}
	r = cps_filter(own ? own : profile, own ? olen : plen, topo, tlen, &merged, &mlen, err,
		       sizeof(err));
	free(own);
	if (r < 0) {
		log_error("desired state rejected, keeping generation %llu: %s",
			  (unsigned long long)s->status.generation, err);
		set_source_error(s, err);
		return;
	}
	state_init(&st);
	r = compile_profile(s->opt.config ? s->opt.config : "<built-in>",
			    merged ? merged : profile, merged ? mlen : plen,
			    s->opt.topology, topo, tlen, &o, &st, err, sizeof(err));
	free(merged);
	if (r < 0) {
		state_free(&st);
		log_error("desired state rejected, keeping generation %llu: %s",
			  (unsigned long long)s->status.generation, err);
		set_source_error(s, err);
		return;
	}
	s->status.source_error[0] = '\0';
	if ((r = reconcile_set_state(s, &st)) < 0) {
		state_free(&st);
		log_error("desired state: cannot hand it to workers: %s", strerror(-r));
		set_source_error(s, "cannot encode the compiled state");
		return;
	}
	if (r > 0)
		return;	/* same compiled state: nothing to do */
	log_info("desired state: generation %llu (%d GPUs, node %s)",
		 (unsigned long long)s->state.generation, s->state.num_devices, o.node_name);
}

static void on_source_error(void *arg, const char *msg)
{
	struct supervisor *s = arg;

	log_error("desired state: %s; keeping generation %llu", msg,
		  (unsigned long long)s->status.generation);
	set_source_error(s, msg);
}

static void reap(struct supervisor *s)
{
	int status;
	pid_t pid;

	/* Signals coalesce: reap everything that is ready. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (daemons_on_exit(s, pid, status))
			continue;
		workers_on_exit(s, pid, status);
	}
	if (s->shutting_down)
		reconcile_progress(s);
}

static void on_signal(struct loop *l, int fd, uint32_t ev, void *arg)
{
	struct supervisor *s = arg;
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(s);
			break;
		case SIGTERM:
		case SIGINT:
			log_info("signal %u: shutting down", si.ssi_signo);
			reconcile_teardown(s);
			break;
		case SIGHUP:
			log_info("SIGHUP: re-running the reconcile pass");
			reconcile_request(s);
			break;
		}
	}
}

static void poll_tick(struct loop *l, void *arg)
{
	struct supervisor *s = arg;

	if (!s->shutting_down && s->phase == PASS_IDLE)
		workers_poll_status(s);
	loop_timer_start(l, &s->poll, STATUS_POLL_MS);
}

static void watchdog_tick(struct loop *l, void *arg)
{
	struct supervisor *s = arg;

	sd_notify_send("WATCHDOG=1");
	loop_timer_start(l, &s->watchdog, s->watchdog_ms);
}

int main(int argc, char **argv)
{
	/* The one supervisor; callbacks get it (or a worker that points to it). */
	static struct supervisor sup;
	struct supervisor *s = &sup;
	struct source *src = NULL;
	struct health *health = NULL;
	struct rootdirs rd = { 0 };
	sigset_t mask;
	int sfd, r;

	r = options_parse(argc, argv, &s->opt);
	if (r)
		return r > 0 ? 0 : 2;
	log_setup("mokka-supervisor", s->opt.log_level, s->opt.log_format);
	/* The daemons inherit our environment: our log settings reach them
	 * as they reach the workers (log_setup_env). */
	setenv("MOKKA_LOG_LEVEL", log_level_name(s->opt.log_level), 1);
	setenv("MOKKA_LOG_FORMAT", log_format_name(s->opt.log_format), 1);
	s->state_fd = -1;
	s->phase = PASS_IDLE;
	state_init(&s->state);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	test_knobs(locate_libexec(s));

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	s->loop = loop_new();
	if (sfd < 0 || !s->loop) {
		log_error("event loop: %s", strerror(errno));
		return 1;
	}
	loop_add_fd(s->loop, sfd, EPOLLIN, on_signal, s);
	reconcile_init(s);
	loop_timer_init(&s->poll, poll_tick, s);
	loop_timer_init(&s->watchdog, watchdog_tick, s);

	if (rootdirs_prepare(&rd, s->opt.host_root, s->opt.mock_root) < 0)
		return 1;
	stop_stale_daemons(s);
	if (workers_setup(s) < 0)
		return 2;
	truncate_overrides(s);
	if ((r = health_start(s->loop, s->opt.health_addr, &s->status, &health)) < 0) {
		log_error("health listener %s: %s", s->opt.health_addr, strerror(-r));
		rootdirs_cleanup(&rd);
		return 1;
	}
	log_info("mokka-supervisor %s: host root %s, mock root %s, health %s, workers from %s",
		 MOKKA_VERSION, s->opt.host_root[0] ? s->opt.host_root : "/", s->opt.mock_root,
		 s->opt.health_addr, s->libexecdir);
	workers_start_all(s);

	struct source_opts so = {
		.profile_path = s->opt.config,
		.topology_path = s->opt.topology,
		.resync_ms = s->opt.resync_ms,
		.debounce_ms = 200,
	};
	if (s->opt.state_source &&
	    cps_start(s->loop, s->opt.state_source, s->opt.compile.node_name, s->opt.resync_ms,
		      on_update, s) < 0) {
		s->exit_code = 1;
		reconcile_teardown(s);
	}
	if ((r = source_start(s->loop, &so, on_update, on_source_error, s, &src)) < 0) {
		log_error("state source: %s", strerror(-r));
		s->exit_code = 1;
		reconcile_teardown(s);
	}
	/* After truncate_overrides: the start state is the pristine one. */
	overrides_watch_start(s);
	loop_timer_start(s->loop, &s->poll, STATUS_POLL_MS);
	if (sd_watchdog_interval_ms(&s->watchdog_ms) == 0 && s->watchdog_ms > 0)
		loop_timer_start(s->loop, &s->watchdog, s->watchdog_ms);

	while (!loop_stopped(s->loop))
		loop_run_once(s->loop, -1);

	overrides_watch_stop(s);
	if (src)
		source_stop(src);
	cps_stop();
	health_stop(health);
	reconcile_free(s);
	rootdirs_cleanup(&rd);
	log_info("stopped");
	return s->exit_code;
}
