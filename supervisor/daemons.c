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
#include <unistd.h>

#include "ipc/log.h"
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
	char err[512];

	/* Never two copies: a daemon owns a socket, a port or a marker. */
	if (d->pid)
		return;
	backoff_started(&d->bo, loop_now_ms());
	if (spawn_process(&req, &d->pid, err, sizeof(err)) < 0) {
		d->pid = 0;
		log_error("daemon %s: %s", d->name, err);
		if (backoff_crashed(&d->bo, loop_now_ms())) {
			d->st->failed = true;
			return;
		}
		loop_timer_start(s->loop, &d->restart, backoff_delay(&d->bo, loop_now_ms()));
		return;
	}
	d->st->pid = d->pid;
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
		if (reload) {
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
	if (!d->pid && !loop_timer_armed(&d->restart) && !d->st->failed)
		daemon_start(s, d);
}

bool daemons_on_exit(struct supervisor *s, pid_t pid, int status)
{
	for (int i = 0; i < MAX_DAEMONS; i++) {
		struct daemon_proc *d = &s->daemons[i];
		if (!d->used || d->pid != pid)
			continue;
		d->pid = 0;
		d->st->pid = 0;
		loop_timer_stop(s->loop, &d->kill_timer);
		if (d->stopping) {
			d->stopping = false;
			log_info("daemon %s stopped", d->name);
			if (d->wanted && !s->shutting_down)
				daemon_start(s, d);	/* a changed command line */
			reconcile_progress(s);
			return true;
		}
		if (WIFSIGNALED(status))
			log_warn("daemon %s (pid %d) died on signal %d", d->name, (int)pid, WTERMSIG(status));
		else
			log_warn("daemon %s (pid %d) exited with status %d", d->name, (int)pid,
				 WEXITSTATUS(status));
		if (s->shutting_down || !d->wanted)
			return true;
		d->st->restarts++;
		if (backoff_crashed(&d->bo, loop_now_ms())) {
			d->st->failed = true;
			log_error("daemon %s: %d crashes within %d s; not restarting until the "
				  "desired state changes", d->name, BACKOFF_BURST, BACKOFF_RESET_MS / 1000);
			return true;
		}
		uint64_t delay = backoff_delay(&d->bo, loop_now_ms());
		log_info("daemon %s: restart in %llu ms", d->name, (unsigned long long)delay);
		loop_timer_start(s->loop, &d->restart, delay);
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

void daemons_reset_failed(struct supervisor *s)
{
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (s->daemons[i].used && s->daemons[i].st->failed) {
			s->daemons[i].st->failed = false;
			backoff_reset(&s->daemons[i].bo);
		}
}
