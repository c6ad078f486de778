/* Long-lived daemons (mokka-fabricmanager, mock-ib, mokka-kernellog) are
 * children of the supervisor, not of the worker that describes them, so
 * killing a worker never takes its daemon down.  Started once; Reload is
 * SIGHUP after the worker rewrote the daemon's config; restarted with
 * backoff when it dies; never two copies. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/pidfile.h"
#include "supervisor/rootdirs.h"
#include "supervisor/simtable.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

static struct daemon_proc *find_owned(struct supervisor *s, const char *owner)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (s->daemons[i].used && strcmp(s->daemons[i].owner, owner) == 0)
			return &s->daemons[i];
	return NULL;
}

static void daemon_start(struct supervisor *s, struct daemon_proc *d);

/* R/state: where the daemon records live (pidfile.h). */
/* R/state beneath the host root: an fd to close, its /proc path in buf
 * for pidfile.c (a link planted there is refused and named). */
static int records_dir(const struct supervisor *s, char *buf, size_t len)
{
	return rootdirs_state_fd(s->opt.host_root, s->opt.mock_root, buf, len);
}

/* /readyz and /metrics follow the daemon: up, or down since when and
 * until when (status.h). */
static void sync_status(struct daemon_proc *d)
{
	struct daemon_status *st = d->st;
	uint64_t now = loop_now_ms();

	st->pid = d->pid;
	st->wanted = d->wanted;
	if (d->pid)
		st->down_since = 0;
	else if (!st->down_since)
		st->down_since = time(NULL);
	st->next_try = 0;
	if (loop_timer_armed(&d->restart))
		st->next_try = time(NULL) + (time_t)((d->restart.due > now ?
						     d->restart.due - now : 0) + 999) / 1000;
	st->throttled = !d->pid && d->bo.throttled;
}

/* A crash or a failed start: retried with backoff, after a burst at the
 * longest one; never given up for good. */
static void schedule_restart(struct supervisor *s, struct daemon_proc *d)
{
	loop_timer_start(s->loop, &d->restart,
			 backoff_crash(&d->bo, loop_now_ms(), "daemon", d->name));
	sync_status(d);
}

static void restart_fire(struct loop *l, void *arg)
{
	struct daemon_proc *d = arg;

	if (d->wanted && !d->pid && !d->sup->shutting_down)
		daemon_start(d->sup, d);
}

static void daemon_start(struct supervisor *s, struct daemon_proc *d)
{
	/* The path is libexecdir/<row binary>; argv and env passed the row
	 * check; the capabilities are the row's, not ours. */
	struct spawn_req req = { .path = d->path, .argv = d->spec.argv, .env_add = d->spec.env,
				 .ipc_fd = -1, .caps = d->def->caps };
	char err[512], dir[4200];
	int r = 0, fd;

	/* Never two copies: a daemon owns a socket, a port or a marker. */
	if (d->pid)
		return;
	backoff_started(&d->bo, loop_now_ms());
	if (spawn_process(&req, &d->pid, err, sizeof(err)) < 0) {
		d->pid = 0;
		log_error("daemon %s: %s", d->name, err);
		snprintf(d->st->last_exit, sizeof(d->st->last_exit), "%s", err);
		schedule_restart(s, d);
		return;
	}
	/* So that a successor finds it should we die without a teardown. */
	if ((fd = records_dir(s, dir, sizeof(dir))) < 0 ||
	    (r = pidfile_write(dir, d->name, d->pid, d->path, d->spec.argv)) < 0)
		log_warn("daemon %s: recording pid %d in %s%s/state: %s", d->name, (int)d->pid,
			 s->opt.host_root, s->opt.mock_root, strerror(fd < 0 ? -fd : -r));
	if (fd >= 0)
		close(fd);
	sync_status(d);
	log_info("daemon %s started (pid %d)", d->name, (int)d->pid);
}

static void daemon_signal(struct daemon_proc *d, int sig)
{
	if (d->pid > 0)
		kill(d->pid, sig);
}

static void kill_fire(struct loop *l, void *arg)
{
	struct daemon_proc *d = arg;

	if (d->pid) {
		log_warn("daemon %s (pid %d) ignored SIGTERM; sending SIGKILL", d->name, (int)d->pid);
		daemon_signal(d, SIGKILL);
	}
}

static void daemon_stop(struct supervisor *s, struct daemon_proc *d)
{
	d->wanted = false;
	loop_timer_stop(s->loop, &d->restart);
	sync_status(d);
	if (!d->pid || d->stopping)
		return;
	d->stopping = true;
	daemon_signal(d, SIGTERM);
	/* Escalate if it does not go within the teardown's share. */
	loop_timer_start(s->loop, &d->kill_timer, s->opt.shutdown_ms / 2 + 1);
}

void daemons_apply_spec(struct supervisor *s, struct worker_proc *w, bool reload)
{
	struct daemon_proc *d = find_owned(s, w->def->name);
	const struct daemon_def *dd;
	char err[512];

	if (!w->spec.name[0]) {
		/* The state calls for no daemon (e.g. fabric off). */
		if (d && d->wanted) {
			log_info("daemon %s no longer wanted; stopping", d->name);
			daemon_stop(s, d);
		}
		return;
	}
	if (d && d->pid && !d->stopping && ipc_daemon_spec_equal(&d->spec, &w->spec)) {
		d->wanted = true;
		if (reload && w->spec.unchanged)
			log_debug("daemon %s: no reload: %s rendered nothing this pass", d->name,
				  w->def->name);
		else if (reload) {
			log_info("daemon %s: reload (SIGHUP)", d->name);
			s->status.reloads_total++;
			daemon_signal(d, SIGHUP);
		}
		return;
	}
	/* Checked when it arrived (workers.c); checked again where it is
	 * exec'd, so no path around the row exists. */
	if (!(dd = simtable_check_daemon(w->def, &w->spec, err, sizeof(err)))) {
		log_error("daemon %s: not started: %s", w->spec.name, err);
		return;
	}
	if (d && d->pid) {
		/* Its command line changed: stop it; it restarts when reaped. */
		daemon_stop(s, d);
	}
	if (!d) {
		for (int i = 0; i < MAX_DAEMONS && !d; i++)
			if (!s->daemons[i].used) {
				d = &s->daemons[i];
				memset(d, 0, sizeof(*d));
				d->used = true;
				d->sup = s;
				loop_timer_init(&d->restart, restart_fire, d);
				loop_timer_init(&d->kill_timer, kill_fire, d);
				d->st = &s->daemon_status[i];
				d->bo.seed = (uint32_t)getpid() + (uint32_t)i * 7919u;
				snprintf(d->owner, sizeof(d->owner), "%s", w->def->name);
				if (i >= s->status.ndaemons)
					s->status.ndaemons = i + 1;
				s->status.daemons = s->daemon_status;
			}
		if (!d) {
			log_error("daemon %s: too many daemons", w->spec.name);
			return;
		}
	}
	ipc_daemon_spec_free(&d->spec);
	if (ipc_daemon_spec_copy(&d->spec, &w->spec) < 0) {
		log_error("daemon %s: out of memory", dd->name);
		return;
	}
	d->def = dd;
	snprintf(d->name, sizeof(d->name), "%s", dd->name);
	snprintf(d->st->name, sizeof(d->st->name), "%s", dd->name);
	snprintf(d->path, sizeof(d->path), "%s/%s", s->libexecdir, dd->name);
	d->wanted = true;
	if (!d->pid && !loop_timer_armed(&d->restart))
		daemon_start(s, d);
	sync_status(d);
}

bool daemons_on_exit(struct supervisor *s, pid_t pid, int status)
{
	char dir[4200];
	int fd;

	for (int i = 0; i < MAX_DAEMONS; i++) {
		struct daemon_proc *d = &s->daemons[i];
		if (!d->used || d->pid != pid)
			continue;
		d->pid = 0;
		if ((fd = records_dir(s, dir, sizeof(dir))) >= 0) {
			pidfile_remove(dir, d->name);
			close(fd);
		}
		loop_timer_stop(s->loop, &d->kill_timer);
		if (WIFSIGNALED(status))
			snprintf(d->st->last_exit, sizeof(d->st->last_exit), "died on signal %d",
				 WTERMSIG(status));
		else
			snprintf(d->st->last_exit, sizeof(d->st->last_exit), "exited with status %d",
				 WEXITSTATUS(status));
		if (d->stopping) {
			d->stopping = false;
			log_info("daemon %s stopped", d->name);
			if (d->wanted && !s->shutting_down)
				daemon_start(s, d);	/* a changed command line */
			sync_status(d);
			reconcile_progress(s);
			return true;
		}
		log_warn("daemon %s (pid %d) %s", d->name, (int)pid, d->st->last_exit);
		if (s->shutting_down || !d->wanted) {
			sync_status(d);
			return true;
		}
		d->st->restarts++;
		schedule_restart(s, d);
		return true;
	}
	return false;
}

void daemons_stop_all(struct supervisor *s)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (s->daemons[i].used)
			daemon_stop(s, &s->daemons[i]);
}

bool daemons_all_stopped(const struct supervisor *s)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (s->daemons[i].used && s->daemons[i].pid)
			return false;
	return true;
}

/* A new desired state: a daemon waiting out a throttled backoff gets a
 * fresh burst budget and starts now (a wanted one is started by the
 * pass's spec otherwise). */
void daemons_reset_failed(struct supervisor *s)
{
	for (int i = 0; i < MAX_DAEMONS; i++) {
		struct daemon_proc *d = &s->daemons[i];

		if (!d->used || !d->bo.throttled)
			continue;
		backoff_reset(&d->bo);
		if (loop_timer_armed(&d->restart) && d->wanted && !s->shutting_down) {
			loop_timer_stop(s->loop, &d->restart);
			daemon_start(s, d);
		}
		sync_status(d);
	}
}
