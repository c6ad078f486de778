/* The health routes, rendered from struct node_status alone (pure, so the
 * unit tests cover every state):
 *
 *   /healthz  503 while any simulator has no running worker (backoff,
 *             throttled after a crash burst, held down for a violation)
 *             or its last Stage failed; each named, with since when.
 *   /readyz   503 while /healthz would be, a simulator is not ready, or a
 *             daemon the state calls for is down; each named, since when.
 *   /metrics  the same facts as series (metrics.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "supervisor/backoff.h"
#include "supervisor/health.h"

static const char TEXT_PLAIN[] = "text/plain; charset=utf-8";
static const char PROM_TEXT[] = "text/plain; version=0.0.4; charset=utf-8";

static void put_iso_time(FILE *f, time_t t)
{
	struct tm tm;
	char s[32];

	if (t <= 0 || !gmtime_r(&t, &tm) ||
	    strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		fputs("an unknown time", f);
	else
		fputs(s, f);
}

static void put_no_state(FILE *f, const struct node_status *st)
{
	fprintf(f, "no valid state yet: %s\n",
		st->source_error[0] ? st->source_error : "none compiled so far");
}

/* What a unit that is down waits for: the restart policy's words. */
static void put_retry(FILE *f, bool throttled, time_t next_try)
{
	long in = (long)(next_try - time(NULL));

	if (throttled)
		fprintf(f, "restarting after %d crashes in %d s", BACKOFF_BURST,
			BACKOFF_RESET_MS / 1000);
	else
		fputs("restarting", f);
	if (next_try)
		fprintf(f, ", next try in %ld s", in > 0 ? in : 0);
}

/* "down since T (why)" */
static void put_since(FILE *f, time_t since, const char *why)
{
	fputs("down since ", f);
	put_iso_time(f, since);
	if (why && *why)
		fprintf(f, " (%s)", why);
}

bool health_sim_down(const struct sim_status *s)
{
	return s->pid <= 0 || s->down_since != 0;
}

bool health_daemon_down(const struct daemon_status *d)
{
	return d->wanted && d->pid <= 0;
}

/* One line for a simulator without a running worker. */
static void put_sim_down(FILE *f, const struct sim_status *s)
{
	if (s->failed) {	/* a violation: say what it did, not a count */
		fprintf(f, "%s: failed: %s (", s->name,
			s->not_ready_reason[0] ? s->not_ready_reason : "protocol violation");
		put_since(f, s->down_since, NULL);
		fputs("; not restarted until the desired state changes)\n", f);
		return;
	}
	fprintf(f, "%s: ", s->name);
	if (s->throttled || s->next_try) {
		put_retry(f, s->throttled, s->next_try);
		fputs("; ", f);
	} else {
		fputs("no worker running; ", f);
	}
	put_since(f, s->down_since, s->not_ready_reason);
	fputc('\n', f);
}

static void put_daemon_down(FILE *f, const struct daemon_status *d)
{
	fprintf(f, "%s: ", d->name);
	if (d->throttled || d->next_try) {
		put_retry(f, d->throttled, d->next_try);
		fputs("; ", f);
	}
	put_since(f, d->down_since, d->last_exit);
	fputc('\n', f);
}

static void put_stage_failing(FILE *f, const struct sim_status *s)
{
	fprintf(f, "%s: stage failing since ", s->name);
	put_iso_time(f, s->failing_since);
	fprintf(f, ": %s\n", s->stage_error[0] ? s->stage_error : "unknown error");
}

static int route_healthz(const struct node_status *st, FILE *f)
{
	int named = 0;

	if (!st->have_state)
		put_no_state(f, st);
	for (int i = 0; i < st->nsims; i++) {
		const struct sim_status *s = &st->sims[i];

		/* A teardown stops the workers on purpose: still alive. */
		if (!st->shutting_down && health_sim_down(s))
			put_sim_down(f, s);
		else if (!s->stage_ok)
			put_stage_failing(f, s);
		else
			continue;
		named++;
	}
	if (st->have_state && st->last_stage_ok && !named) {
		fputs("ok\n", f);
		return 200;
	}
	if (st->have_state && !st->last_stage_ok && !named) {
		fputs("last stage failed since ", f);
		put_iso_time(f, st->stage_failing_since);
		fputc('\n', f);
	}
	return 503;
}

static int route_readyz(const struct node_status *st, FILE *f)
{
	int code = 200;

	if (st->shutting_down) {
		fputs("shutting down\n", f);
		return 503;
	}
	if (!st->have_state) {
		put_no_state(f, st);
		code = 503;
	}
	for (int i = 0; i < st->nsims; i++) {
		const struct sim_status *s = &st->sims[i];

		if (s->failed || health_sim_down(s))
			put_sim_down(f, s);
		else if (!s->ready)
			fprintf(f, "%s: not ready: %s\n", s->name,
				s->not_ready_reason[0] ? s->not_ready_reason : "no reason given");
		else
			continue;
		code = 503;
	}
	/* A daemon the state calls for serves nothing while it is down. */
	for (int i = 0; i < st->ndaemons; i++) {
		if (!health_daemon_down(&st->daemons[i]))
			continue;
		put_daemon_down(f, &st->daemons[i]);
		code = 503;
	}
	if (code == 200)
		fputs("ready\n", f);
	return code;
}

/* The NRI staging gate (staging_gate.c): 200 once a pass published the
 * driver tree and no pass is staging now. */
static int route_stagedz(const struct node_status *st, FILE *f)
{
	if (st->shutting_down) {
		fputs("shutting down\n", f);
		return 503;
	}
	if (st->staging) {
		fputs("staging\n", f);
		return 503;
	}
	if (!st->staged_generation) {
		fputs("nothing staged yet\n", f);
		return 503;
	}
	fprintf(f, "staged: generation %llu%s\n", (unsigned long long)st->staged_generation,
		st->last_stage_ok ? "" : " (the latest pass failed; its tree stays)");
	return 200;
}

static int route_metrics(const struct node_status *st, FILE *f)
{
	char *m;

	if (metrics_render(st, &m) < 0)
		return 500;
	fputs(m, f);
	free(m);
	return 200;
}

static const struct route {
	const char *path;
	int (*render)(const struct node_status *st, FILE *f);
	const char *content_type;
} routes[] = {
	{ "/healthz", route_healthz, TEXT_PLAIN },
	{ "/readyz", route_readyz, TEXT_PLAIN },
	{ "/stagedz", route_stagedz, TEXT_PLAIN },
	{ "/metrics", route_metrics, PROM_TEXT },
};

int health_route(const struct node_status *st, const char *path, char **body,
		 const char **content_type)
{
	size_t plen = strcspn(path, "?#"), len = 0;
	FILE *f = open_memstream(body, &len);
	int code = 404;
	size_t i;

	*content_type = TEXT_PLAIN;
	if (!f) {
		*body = NULL;
		return 500;
	}
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strlen(routes[i].path) == plen && !memcmp(routes[i].path, path, plen))
			break;
	if (i < sizeof(routes) / sizeof(routes[0])) {
		code = routes[i].render(st, f);
		*content_type = routes[i].content_type;
	} else {
		fputs("not found\n", f);
	}
	if (fclose(f) != 0) {
		free(*body);
		*body = NULL;
		*content_type = TEXT_PLAIN;
		return 500;
	}
	return code;
}
