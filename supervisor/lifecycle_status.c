/* What /healthz, /readyz and /metrics say about a worker (status.h),
 * derived from its lifecycle state after every event (lifecycle.c's
 * dispatch): down since when, the next try, throttled. */
#include <time.h>

#include "supervisor/supervisor.h"

void worker_sync_status(struct worker_proc *w)
{
	struct sim_status *st = w->st;
	bool down = w->state == WORKER_DOWN || w->state == WORKER_BACKOFF ||
		    w->state == WORKER_FAILED || w->state == WORKER_EXITING;
	uint64_t now = loop_now_ms();

	if (!down)
		st->down_since = 0;
	else if (!st->down_since)
		st->down_since = time(NULL);
	st->next_try = 0;
	if (loop_timer_armed(&w->restart))
		st->next_try = time(NULL) + (time_t)((w->restart.due > now ?
						     w->restart.due - now : 0) + 999) / 1000;
	st->throttled = down && w->bo.throttled;
}
