/* The runtime overrides document (mokka-ctl's, where ovr_path says)
 * watched like the profile, through its directories
 * (supervisor/source.c: inotify, debounced, bytes compared, resync), and
 * delivered to the daemons that act on it (ROLE_RELOAD_OVERRIDES) as a
 * Reload: SIGHUP.  No reconcile pass: the document is not desired state,
 * the workers never see it, and the mock NVML reads it by itself. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "overrides/overrides.h"
#include "supervisor/source.h"
#include "supervisor/supervisor.h"

#define OVERRIDES_DEBOUNCE_MS 50	/* kernellog reacts well within 1 s */


static void on_change(void *arg, const char *profile, size_t plen, const char *doc, size_t len)
{
	struct supervisor *s = arg;
	struct worker_proc *w;

	/* The first call is the document as found at start: nothing changed. */
	if (!s->overrides_seen) {
		s->overrides_seen = true;
		return;
	}
	if (s->shutting_down)
		return;
	log_debug("runtime overrides changed (%zu bytes): reloading daemons", doc ? len : 0);
	for (int i = 0; i < MAX_DAEMONS; i++) {
		struct daemon_proc *d = &s->daemons[i];

		if (!d->used || !d->pid || d->stopping || !(w = worker_by_name(s, d->owner)) ||
		    !(w->def->roles & ROLE_RELOAD_OVERRIDES))
			continue;
		log_info("daemon %s: reload (SIGHUP): runtime overrides changed", d->name);
		s->status.reloads_total++;
		kill(d->pid, SIGHUP);
	}
}

static void on_error(void *arg, const char *msg)
{
	log_debug("runtime overrides: %s", msg);
}

int overrides_watch_start(struct supervisor *s)
{
	char path[PATH_MAX];
	struct source_opts o = {
		.profile_path = NULL,
		.resync_ms = s->opt.resync_ms,
		.debounce_ms = OVERRIDES_DEBOUNCE_MS,
	};
	int r;

	if (ovr_path(path, sizeof(path), s->opt.host_root, s->opt.mock_root) < 0)
		return -ENAMETOOLONG;
	/* The "topology" slot: absent is a valid state there. */
	o.topology_path = path;
	r = source_start(s->loop, &o, on_change, on_error, s, &s->overrides_src);
	if (r < 0)
		log_warn("runtime overrides: cannot watch (%s); daemons see changes on their "
			 "own tick only", strerror(-r));
	return r;
}

void overrides_watch_stop(struct supervisor *s)
{
	source_stop(s->overrides_src);
	s->overrides_src = NULL;
}
