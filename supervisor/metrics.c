/* /metrics: Prometheus text exposition format 0.0.4, rendered from struct
 * node_status.  Every family is described once by a table row (name, help,
 * type, where its value lives); the renderer walks the tables. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "supervisor/health.h"

/* put_labelled() reads the label from the start of each struct. */
_Static_assert(offsetof(struct sim_status, name) == 0, "sim_status.name first");
_Static_assert(offsetof(struct daemon_status, name) == 0, "daemon_status.name first");

/* F_STAGE_OK, F_SIM_UP, F_DAEMON_UP are computed: they agree with /healthz
 * and /readyz (health_routes.c). */
enum field_kind { F_U64, F_UINT, F_BOOL, F_DOUBLE, F_TIME, F_STAGE_OK, F_SIM_UP, F_DAEMON_UP };

struct family {
	const char *name, *type, *help;
	size_t off;			/* of the value in its struct */
	enum field_kind kind;
};

static const struct family node_families[] = {
	{ "mokka_generation", "gauge", "Generation of the desired state in force.",
	  offsetof(struct node_status, generation), F_U64 },
	{ "mokka_passes_total", "counter", "Reconcile passes run.",
	  offsetof(struct node_status, passes_total), F_U64 },
	{ "mokka_passes_failed_total", "counter", "Reconcile passes that failed.",
	  offsetof(struct node_status, passes_failed), F_U64 },
	{ "mokka_source_errors_total", "counter", "Errors reading or compiling the state source.",
	  offsetof(struct node_status, source_errors_total), F_U64 },
	{ "mokka_source_last_error_timestamp_seconds", "gauge",
	  "Unix time of the last source error, 0 if none.",
	  offsetof(struct node_status, source_error_time), F_TIME },
	{ "mokka_reloads_total", "counter", "Reloads of the state source.",
	  offsetof(struct node_status, reloads_total), F_U64 },
};

static const struct family sim_families[] = {
	{ "mokka_stage_ok", "gauge",
	  "1 if the simulator's last Stage succeeded and its worker runs (as /healthz).",
	  0, F_STAGE_OK },
	{ "mokka_worker_up", "gauge", "1 if the simulator's worker runs.", 0, F_SIM_UP },
	{ "mokka_worker_down_since_timestamp_seconds", "gauge",
	  "Unix time the worker stopped running, 0 while it runs.",
	  offsetof(struct sim_status, down_since), F_TIME },
	{ "mokka_ready", "gauge", "1 if the simulator reports itself ready.",
	  offsetof(struct sim_status, ready), F_BOOL },
	{ "mokka_worker_restarts_total", "counter", "Restarts of the simulator's worker.",
	  offsetof(struct sim_status, restarts), F_UINT },
	{ "mokka_worker_failed", "gauge",
	  "1 if the worker is held down for a protocol violation until the state changes.",
	  offsetof(struct sim_status, failed), F_BOOL },
	{ "mokka_worker_throttled", "gauge",
	  "1 while the worker, after 5 crashes in 60 s, is retried at the longest backoff.",
	  offsetof(struct sim_status, throttled), F_BOOL },
	{ "mokka_stage_duration_seconds", "gauge", "Duration of the last Stage.",
	  offsetof(struct sim_status, last_stage_seconds), F_DOUBLE },
	{ "mokka_apply_duration_seconds", "gauge", "Duration of the last Apply.",
	  offsetof(struct sim_status, last_apply_seconds), F_DOUBLE },
	{ "mokka_stage_failures_total", "counter", "Failed Stage operations.",
	  offsetof(struct sim_status, stage_failures), F_UINT },
	{ "mokka_apply_failures_total", "counter", "Failed Apply operations.",
	  offsetof(struct sim_status, apply_failures), F_UINT },
};

static const struct family daemon_families[] = {
	{ "mokka_daemon_restarts_total", "counter", "Restarts of the daemon.",
	  offsetof(struct daemon_status, restarts), F_UINT },
	{ "mokka_daemon_up", "gauge", "1 if the daemon is running.",
	  0, F_DAEMON_UP },
	{ "mokka_daemon_down_since_timestamp_seconds", "gauge",
	  "Unix time the daemon went down, 0 while it runs.",
	  offsetof(struct daemon_status, down_since), F_TIME },
	{ "mokka_daemon_throttled", "gauge",
	  "1 while the daemon, after 5 crashes in 60 s, is retried at the longest backoff.",
	  offsetof(struct daemon_status, throttled), F_BOOL },
};

static void put_value(FILE *f, const void *base, const struct family *fam)
{
	const char *p = (const char *)base + fam->off;
	const struct sim_status *s = base;

	switch (fam->kind) {
	case F_U64:	fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
	case F_UINT:	fprintf(f, "%u", *(const unsigned *)p); break;
	case F_BOOL:	fprintf(f, "%d", *(const bool *)p ? 1 : 0); break;
	case F_DOUBLE:	fprintf(f, "%.9g", *(const double *)p); break;
	case F_TIME:	fprintf(f, "%lld", (long long)*(const time_t *)p); break;
	case F_STAGE_OK: fprintf(f, "%d", s->stage_ok && !health_sim_down(s)); break;
	case F_SIM_UP:	fprintf(f, "%d", !health_sim_down(s)); break;
	case F_DAEMON_UP: fprintf(f, "%d", ((const struct daemon_status *)base)->pid > 0); break;
	}
}

/* Label values escape backslash, double quote and newline. */
static void put_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\': fputs("\\\\", f); break;
		case '"':  fputs("\\\"", f); break;
		case '\n': fputs("\\n", f); break;
		default:   fputc(*s, f); break;
		}
	}
}

static void put_head(FILE *f, const struct family *fam)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
}

/* One family over an array of labelled structs (simulators, daemons). */
static void put_labelled(FILE *f, const struct family *fam, const char *label,
			 const void *items, size_t size, int n)
{
	put_head(f, fam);
	for (int i = 0; i < n; i++) {
		const char *item = (const char *)items + (size_t)i * size;

		fprintf(f, "%s{%s=\"", fam->name, label);
		put_label_value(f, item);
		fputs("\"} ", f);
		put_value(f, item, fam);
		fputc('\n', f);
	}
}

static void put_source_error(FILE *f, const struct node_status *st)
{
	fputs("# HELP mokka_source_error The last source error, as a label; absent when none.\n"
	      "# TYPE mokka_source_error gauge\n", f);
	if (!st->source_error[0])
		return;
	fputs("mokka_source_error{message=\"", f);
	put_label_value(f, st->source_error);
	fputs("\"} 1\n", f);
}

int metrics_render(const struct node_status *st, char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t i;

	*out = NULL;
	if (!f)
		return -errno;
	for (i = 0; i < sizeof(node_families) / sizeof(node_families[0]); i++) {
		put_head(f, &node_families[i]);
		fputs(node_families[i].name, f);
		fputc(' ', f);
		put_value(f, st, &node_families[i]);
		fputc('\n', f);
	}
	put_source_error(f, st);
	for (i = 0; i < sizeof(sim_families) / sizeof(sim_families[0]); i++)
		put_labelled(f, &sim_families[i], "simulator", st->sims,
			     sizeof(*st->sims), st->sims ? st->nsims : 0);
	for (i = 0; i < sizeof(daemon_families) / sizeof(daemon_families[0]); i++)
		put_labelled(f, &daemon_families[i], "daemon", st->daemons,
			     sizeof(*st->daemons), st->daemons ? st->ndaemons : 0);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return -ENOMEM;
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	return 0;
}
