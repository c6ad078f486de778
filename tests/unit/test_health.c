/* The health listener: request parsing, routes, metrics, and the server
 * end to end on a real loop with real sockets on 127.0.0.1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor/health.h"
#include "supervisor/loop.h"

/* ---- http_parse_request ---- */

static char method[16], path[256];

static int parse(const char *s)
{
	memset(method, 0, sizeof(method));
	memset(path, 0, sizeof(path));
	return http_parse_request(s, strlen(s), method, sizeof(method), path, sizeof(path));
}

Test(http, complete_get)
{
	cr_assert_eq(parse("GET /healthz HTTP/1.1\r\nHost: node:9091\r\nUser-Agent: kube-probe/1.30\r\n\r\n"), 1);
	cr_assert_str_eq(method, "GET");
	cr_assert_str_eq(path, "/healthz");
}

Test(http, bare_lf_and_http10)
{
	cr_assert_eq(parse("GET /readyz HTTP/1.0\n\n"), 1);
	cr_assert_str_eq(path, "/readyz");
}

Test(http, head_method)
{
	cr_assert_eq(parse("HEAD /metrics HTTP/1.1\r\n\r\n"), 1);
	cr_assert_str_eq(method, "HEAD");
	cr_assert_str_eq(path, "/metrics");
}

Test(http, other_methods_parse_for_the_server_to_refuse)
{
	cr_assert_eq(parse("POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 1);
	cr_assert_str_eq(method, "POST");
}

Test(http, query_and_fragment_stripped)
{
	cr_assert_eq(parse("GET /metrics?name[]=mokka_ready&x=1 HTTP/1.1\r\n\r\n"), 1);
	cr_assert_str_eq(path, "/metrics");
	cr_assert_eq(parse("GET /healthz#top HTTP/1.1\r\n\r\n"), 1);
	cr_assert_str_eq(path, "/healthz");
	cr_assert_eq(parse("GET /?verbose HTTP/1.1\r\n\r\n"), 1);
	cr_assert_str_eq(path, "/");
}

Test(http, incomplete)
{
	cr_assert_eq(parse(""), 0);
	cr_assert_eq(parse("GE"), 0);
	cr_assert_eq(parse("GET /healthz HTTP/1.1"), 0);
	cr_assert_eq(parse("GET /healthz HTTP/1.1\r\n"), 0);
	cr_assert_eq(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n"), 0);
	cr_assert_eq(parse("GET /healthz HTTP/1.1\r\nHost: x\r\n\r"), 0);
}

Test(http, every_prefix_is_incomplete_until_the_last_byte)
{
	const char *req = "GET /readyz HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
	size_t n = strlen(req);

	for (size_t i = 0; i < n; i++)
		cr_assert_eq(http_parse_request(req, i, method, sizeof(method), path, sizeof(path)),
			     0, "prefix of %zu bytes", i);
	cr_assert_eq(http_parse_request(req, n, method, sizeof(method), path, sizeof(path)), 1);
}

Test(http, malformed)
{
	static const char *const bad[] = {
		"GET healthz HTTP/1.1\r\n\r\n",		/* not origin-form */
		"GET http://x/healthz HTTP/1.1\r\n\r\n",	/* absolute-form */
		"GET /healthz\r\n\r\n",			/* HTTP/0.9 */
		"GET /healthz HTTP/2.0\r\n\r\n",
		"GET /healthz HTTP/1.1 \r\n\r\n",
		"GET  /healthz HTTP/1.1\r\n\r\n",
		" GET /healthz HTTP/1.1\r\n\r\n",
		"\r\nGET /healthz HTTP/1.1\r\n\r\n",
		"GET /a b HTTP/1.1\r\n\r\n",
		"G(T /healthz HTTP/1.1\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n",	/* no colon */
		"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",	/* space before colon */
		"GET /healthz HTTP/1.1\r\n: x\r\n\r\n",		/* empty name */
		"GET /healthz HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nA: b\rc\r\n\r\n",	/* bare CR */
		"GET /healthz HTTP/1.1\r\nA: b\x01\r\n\r\n",
		"VERYLONGMETHODNAME /x HTTP/1.1\r\n\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse(bad[i]), -EINVAL, "case %zu: %s", i, bad[i]);
	/* A NUL inside a header value. */
	static const char nul[] = "GET / HTTP/1.1\r\nA: x\0y\r\n\r\n";
	cr_assert_eq(http_parse_request(nul, sizeof(nul) - 1, method, sizeof(method),
					path, sizeof(path)), -EINVAL);
}

Test(http, too_large)
{
	size_t n = HTTP_MAX_REQUEST + 100;
	char *buf = malloc(n + 1);
	const char *head = "GET /healthz HTTP/1.1\r\nX-Pad: ";

	memcpy(buf, head, strlen(head));
	memset(buf + strlen(head), 'a', n - strlen(head));
	buf[n] = '\0';
	/* Below the cap: still waiting; at or past it: too large. */
	cr_assert_eq(http_parse_request(buf, HTTP_MAX_REQUEST - 1, method, sizeof(method),
					path, sizeof(path)), 0);
	cr_assert_eq(http_parse_request(buf, HTTP_MAX_REQUEST, method, sizeof(method),
					path, sizeof(path)), -E2BIG);
	cr_assert_eq(http_parse_request(buf, n, method, sizeof(method), path, sizeof(path)),
		     -E2BIG);
	/* A head ending exactly at the cap is fine, one byte later is not. */
	memcpy(buf + HTTP_MAX_REQUEST - 4, "\r\n\r\n", 4);
	cr_assert_eq(http_parse_request(buf, n, method, sizeof(method), path, sizeof(path)), 1);
	memcpy(buf + HTTP_MAX_REQUEST - 4, "a\r\n\r\n", 5);
	cr_assert_eq(http_parse_request(buf, n, method, sizeof(method), path, sizeof(path)),
		     -E2BIG);
	free(buf);
}

Test(http, path_longer_than_buffer)
{
	char small[8];

	cr_assert_eq(http_parse_request("GET /healthz HTTP/1.1\r\n\r\n", 25, method,
					sizeof(method), small, sizeof(small)), -E2BIG);
	cr_assert_eq(http_parse_request("GET /health HTTP/1.1\r\n\r\n", 24, method,
					sizeof(method), small, sizeof(small)), 1);
	cr_assert_str_eq(small, "/health");
}

/* ---- routes ---- */

static struct sim_status sims[2];
static struct daemon_status daemons[1];
static struct node_status st;

static void status_good(void)
{
	memset(sims, 0, sizeof(sims));
	memset(daemons, 0, sizeof(daemons));
	memset(&st, 0, sizeof(st));
	strcpy(sims[0].name, "nvml");
	strcpy(sims[1].name, "pcibus");
	for (int i = 0; i < 2; i++) {
		sims[i].stage_ok = true;
		sims[i].ready = true;
		sims[i].pid = 100 + i;
	}
	strcpy(daemons[0].name, "mokka-fabricmanager");
	daemons[0].pid = 200;
	st.sims = sims;
	st.nsims = 2;
	st.daemons = daemons;
	st.ndaemons = 1;
	st.have_state = true;
	st.last_stage_ok = true;
	st.generation = 3;
}

static int route(const char *p, char **body, const char **ctype)
{
	int code = health_route(&st, p, body, ctype);

	cr_assert_not_null(*body);
	return code;
}

Test(routes, healthz_ok, .init = status_good)
{
	char *body;
	const char *ct;

	cr_assert_eq(route("/healthz", &body, &ct), 200);
	cr_assert_str_eq(body, "ok\n");
	cr_assert(strstr(ct, "text/plain"));
	free(body);
}

Test(routes, healthz_no_state, .init = status_good)
{
	char *body;
	const char *ct;

	st.have_state = false;
	st.last_stage_ok = false;
	strcpy(st.source_error, "h100.yaml:3:5: gpus: expected a sequence");
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "no valid state yet: h100.yaml:3:5: gpus: expected a sequence"),
		  "%s", body);
	free(body);
	st.source_error[0] = '\0';
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "no valid state yet"), "%s", body);
	free(body);
}

Test(routes, healthz_names_failing_sims, .init = status_good)
{
	char *body;
	const char *ct;

	st.last_stage_ok = false;
	sims[1].stage_ok = false;
	strcpy(sims[1].stage_error, "pcibus: 0000:1a:00.0/config: write: No space left on device");
	sims[1].failing_since = 1700000000;	/* 2023-11-14T22:13:20Z */
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus"), "%s", body);
	cr_assert(strstr(body, "0000:1a:00.0/config: write: No space left on device"), "%s", body);
	cr_assert(strstr(body, "2023-11-14T22:13:20Z"), "%s", body);
	cr_assert_null(strstr(body, "nvml"), "a healthy simulator is named: %s", body);
	free(body);
	/* Recovery on the next good Stage. */
	st.last_stage_ok = true;
	sims[1].stage_ok = true;
	cr_assert_eq(route("/healthz", &body, &ct), 200);
	free(body);
}

Test(routes, healthz_failed_wave_without_sim_detail, .init = status_good)
{
	char *body;
	const char *ct;

	st.last_stage_ok = false;
	st.stage_failing_since = 1700000000;
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "2023-11-14T22:13:20Z"), "%s", body);
	free(body);
}

Test(routes, readyz_ready, .init = status_good)
{
	char *body;
	const char *ct;

	cr_assert_eq(route("/readyz", &body, &ct), 200);
	cr_assert_str_eq(body, "ready\n");
	free(body);
}

/* A worker at its restart limit is retried every 30 s (issue 19), and
 * until it runs again both routes say so, with since when. */
static void throttle_pcibus(void)
{
	sims[1].pid = 0;
	sims[1].ready = false;
	sims[1].throttled = true;
	sims[1].down_since = 1700000000;	/* 2023-11-14T22:13:20Z */
	sims[1].next_try = time(NULL) + 20;
	strcpy(sims[1].not_ready_reason, "worker exited on signal 9");
}

Test(routes, readyz_not_ready_and_throttled, .init = status_good)
{
	char *body;
	const char *ct;

	sims[0].ready = false;
	strcpy(sims[0].not_ready_reason, "waiting for the apply barrier");
	throttle_pcibus();
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "nvml: not ready: waiting for the apply barrier"), "%s", body);
	cr_assert(strstr(body, "pcibus: restarting after 5 crashes in 60 s, next try in "),
		  "%s", body);
	cr_assert(strstr(body, "; down since 2023-11-14T22:13:20Z (worker exited on signal 9)\n"),
		  "%s", body);
	free(body);
}

Test(routes, readyz_down_even_if_ready_flag, .init = status_good)
{
	char *body;
	const char *ct;

	/* the last ready report came from the worker that is gone */
	sims[1].pid = 0;
	sims[1].down_since = 1700000000;
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: no worker running; down since 2023-11-14T22:13:20Z"),
		  "%s", body);
	cr_assert_null(strstr(body, "nvml"), "%s", body);
	free(body);
}

Test(routes, readyz_failed_for_a_violation_gives_the_reason, .init = status_good)
{
	char *body;
	const char *ct;

	sims[1].failed = true;
	sims[1].violation = true;
	sims[1].ready = false;
	strcpy(sims[1].not_ready_reason,
	       "daemon spec rejected: mokka-evil: not in this simulator's row");
	sims[1].pid = 0;
	sims[1].down_since = 1700000000;
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: failed: daemon spec rejected: mokka-evil: not in this "
			 "simulator's row (down since 2023-11-14T22:13:20Z; not restarted until "
			 "the desired state changes)\n"), "%s", body);
	cr_assert_null(strstr(body, "restart limit"), "%s", body);
	cr_assert_null(strstr(body, "crashes"), "%s", body);
	free(body);
	/* no reason kept: still not the restart limit */
	sims[1].not_ready_reason[0] = '\0';
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: failed: protocol violation ("), "%s", body);
	free(body);
	/* and /healthz the same */
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: failed: protocol violation ("), "%s", body);
	free(body);
}

/* Issue 20: /readyz stayed 200 up to 33 s after a daemon was killed. */
Test(routes, readyz_daemon_down, .init = status_good)
{
	char *body;
	const char *ct;

	daemons[0].wanted = true;
	daemons[0].pid = 0;
	daemons[0].down_since = 1700000000;
	daemons[0].next_try = time(NULL) + 1;
	strcpy(daemons[0].last_exit, "died on signal 9");
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "mokka-fabricmanager: restarting, next try in "), "%s", body);
	cr_assert(strstr(body, "; down since 2023-11-14T22:13:20Z (died on signal 9)\n"),
		  "%s", body);
	free(body);
	/* at its restart limit: retried at the longest backoff, and says so */
	daemons[0].throttled = true;
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "mokka-fabricmanager: restarting after 5 crashes in 60 s, "
			 "next try in "), "%s", body);
	free(body);
	/* liveness is the simulators' */
	cr_assert_eq(route("/healthz", &body, &ct), 200);
	free(body);
	/* back up */
	daemons[0].pid = 300;
	daemons[0].down_since = 0;
	daemons[0].next_try = 0;
	cr_assert_eq(route("/readyz", &body, &ct), 200);
	free(body);
}

Test(routes, readyz_daemon_not_wanted_is_not_down, .init = status_good)
{
	char *body;
	const char *ct;

	/* the state calls for no fabric manager any more: stopped, not down */
	daemons[0].wanted = false;
	daemons[0].pid = 0;
	daemons[0].down_since = 1700000000;
	cr_assert_eq(route("/readyz", &body, &ct), 200);
	free(body);
}

/* ---- /healthz in every state of a worker (issue 20) ---- */

Test(routes, healthz_worker_in_backoff, .init = status_good)
{
	char *body;
	const char *ct;

	/* Stage ok, but the worker crashed a moment ago: no "ok" */
	sims[1].pid = 0;
	sims[1].down_since = 1700000000;
	sims[1].next_try = time(NULL) + 1;
	strcpy(sims[1].not_ready_reason, "worker exited on signal 9");
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: restarting, next try in "), "%s", body);
	cr_assert(strstr(body, "; down since 2023-11-14T22:13:20Z (worker exited on signal 9)\n"),
		  "%s", body);
	cr_assert_null(strstr(body, "nvml"), "a running simulator is named: %s", body);
	cr_assert_null(strstr(body, "ok\n"), "%s", body);
	free(body);
}

Test(routes, healthz_worker_throttled, .init = status_good)
{
	char *body;
	const char *ct;

	throttle_pcibus();
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: restarting after 5 crashes in 60 s, next try in "),
		  "%s", body);
	/* 20 s from now, give or take the second the test straddles */
	cr_assert(strstr(body, "next try in 20 s;") || strstr(body, "next try in 19 s;"),
		  "%s", body);
	free(body);
	/* a try that is due says 0, never a negative count */
	sims[1].next_try = time(NULL) - 5;
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "next try in 0 s;"), "%s", body);
	free(body);
	/* it came back: ok again without any state change */
	sims[1].pid = 321;
	sims[1].down_since = 0;
	sims[1].throttled = false;
	sims[1].next_try = 0;
	cr_assert_eq(route("/healthz", &body, &ct), 200);
	free(body);
}

Test(routes, healthz_worker_killed_not_reaped_yet, .init = status_good)
{
	char *body;
	const char *ct;

	/* killed for a protocol error: pid still set until reaped */
	sims[0].down_since = 1700000000;
	strcpy(sims[0].not_ready_reason, "protocol error: hello: bad name");
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "nvml: no worker running; down since 2023-11-14T22:13:20Z "
			 "(protocol error: hello: bad name)\n"), "%s", body);
	free(body);
}

Test(routes, healthz_worker_never_started, .init = status_good)
{
	char *body;
	const char *ct;

	sims[0].pid = 0;
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "nvml: no worker running; down since an unknown time"), "%s", body);
	free(body);
}

Test(routes, healthz_down_beats_stage_line, .init = status_good)
{
	char *body;
	const char *ct;

	/* One line per simulator: that it is down says more than the stage
	 * that failed because it was. */
	throttle_pcibus();
	st.last_stage_ok = false;
	sims[1].stage_ok = false;
	strcpy(sims[1].stage_error, "worker not running (restarting after 5 crashes in 60 s)");
	cr_assert_eq(route("/healthz", &body, &ct), 503);
	cr_assert(strstr(body, "pcibus: restarting after 5 crashes"), "%s", body);
	cr_assert_null(strstr(body, "stage failing"), "%s", body);
	free(body);
}

Test(routes, healthz_teardown_stops_workers_on_purpose, .init = status_good)
{
	char *body;
	const char *ct;

	st.shutting_down = true;
	for (int i = 0; i < 2; i++) {
		sims[i].pid = 0;
		sims[i].down_since = 1700000000;
	}
	cr_assert_eq(route("/healthz", &body, &ct), 200);
	free(body);
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert_str_eq(body, "shutting down\n");
	free(body);
}

Test(routes, readyz_no_state_and_shutdown, .init = status_good)
{
	char *body;
	const char *ct;

	st.have_state = false;
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert(strstr(body, "no valid state yet"), "%s", body);
	free(body);
	st.have_state = true;
	st.shutting_down = true;
	cr_assert_eq(route("/readyz", &body, &ct), 503);
	cr_assert_str_eq(body, "shutting down\n");
	free(body);
	/* Liveness is not readiness: a draining node is still healthy. */
	cr_assert_eq(route("/healthz", &body, &ct), 200);
	free(body);
}

Test(routes, metrics_and_not_found, .init = status_good)
{
	char *body;
	const char *ct;

	cr_assert_eq(route("/metrics", &body, &ct), 200);
	cr_assert(strstr(ct, "version=0.0.4"), "%s", ct);
	cr_assert(strstr(body, "mokka_generation 3\n"), "%s", body);
	free(body);
	cr_assert_eq(route("/healthz?verbose=1", &body, &ct), 200);
	free(body);
	cr_assert_eq(route("/nope", &body, &ct), 404);
	free(body);
	cr_assert_eq(route("/healthzz", &body, &ct), 404);
	free(body);
	cr_assert_eq(route("/health", &body, &ct), 404);
	free(body);
}

/* ---- metrics ---- */

static char *render(void)
{
	char *m = NULL;

	cr_assert_eq(metrics_render(&st, &m), 0);
	cr_assert_not_null(m);
	return m;
}

#define HAS(m, s) cr_assert(strstr((m), (s)), "missing \"%s\" in:\n%s", (s), (m))

Test(metrics, series_and_values, .init = status_good)
{
	char *m;

	st.generation = UINT64_MAX;
	st.passes_total = 7;
	st.passes_failed = 2;
	st.source_errors_total = 4;
	st.reloads_total = 5;
	st.source_error_time = 1700000000;
	sims[0].stage_ok = false;
	sims[0].ready = false;
	sims[0].failed = true;
	sims[0].restarts = 6;
	sims[0].stage_failures = 9;
	sims[0].apply_failures = 1;
	sims[0].last_stage_seconds = 0.25;
	sims[1].last_apply_seconds = 1.5;
	daemons[0].restarts = 2;
	m = render();
	HAS(m, "# TYPE mokka_generation gauge\n");
	HAS(m, "mokka_generation 18446744073709551615\n");
	HAS(m, "# TYPE mokka_passes_total counter\nmokka_passes_total 7\n");
	HAS(m, "mokka_passes_failed_total 2\n");
	HAS(m, "mokka_source_errors_total 4\n");
	HAS(m, "mokka_reloads_total 5\n");
	HAS(m, "mokka_source_last_error_timestamp_seconds 1700000000\n");
	HAS(m, "mokka_stage_ok{simulator=\"nvml\"} 0\n");
	HAS(m, "mokka_stage_ok{simulator=\"pcibus\"} 1\n");
	HAS(m, "mokka_ready{simulator=\"nvml\"} 0\n");
	HAS(m, "mokka_ready{simulator=\"pcibus\"} 1\n");
	HAS(m, "mokka_worker_failed{simulator=\"nvml\"} 1\n");
	HAS(m, "mokka_worker_restarts_total{simulator=\"nvml\"} 6\n");
	HAS(m, "# TYPE mokka_worker_restarts_total counter\n");
	HAS(m, "mokka_stage_failures_total{simulator=\"nvml\"} 9\n");
	HAS(m, "mokka_apply_failures_total{simulator=\"nvml\"} 1\n");
	HAS(m, "mokka_stage_duration_seconds{simulator=\"nvml\"} 0.25\n");
	HAS(m, "mokka_apply_duration_seconds{simulator=\"pcibus\"} 1.5\n");
	HAS(m, "mokka_daemon_restarts_total{daemon=\"mokka-fabricmanager\"} 2\n");
	HAS(m, "mokka_daemon_up{daemon=\"mokka-fabricmanager\"} 1\n");
	HAS(m, "# HELP mokka_daemon_up ");
	/* No source error set: the family is declared, no sample. */
	cr_assert_null(strstr(m, "mokka_source_error{"), "%s", m);
	free(m);
	daemons[0].pid = 0;
	m = render();
	HAS(m, "mokka_daemon_up{daemon=\"mokka-fabricmanager\"} 0\n");
	free(m);
}

/* The metrics agree with /healthz and /readyz (issue 20: stage_ok stayed 1
 * for 91 s while gpudriver had no worker). */
Test(metrics, agree_with_health, .init = status_good)
{
	char *m;

	m = render();
	HAS(m, "mokka_stage_ok{simulator=\"pcibus\"} 1\n");
	HAS(m, "mokka_worker_up{simulator=\"pcibus\"} 1\n");
	HAS(m, "mokka_worker_throttled{simulator=\"pcibus\"} 0\n");
	HAS(m, "mokka_worker_down_since_timestamp_seconds{simulator=\"pcibus\"} 0\n");
	HAS(m, "mokka_daemon_throttled{daemon=\"mokka-fabricmanager\"} 0\n");
	free(m);
	throttle_pcibus();
	daemons[0].pid = 0;
	daemons[0].wanted = true;
	daemons[0].throttled = true;
	daemons[0].down_since = 1700000001;
	m = render();
	HAS(m, "mokka_stage_ok{simulator=\"pcibus\"} 0\n");
	HAS(m, "mokka_stage_ok{simulator=\"nvml\"} 1\n");
	HAS(m, "mokka_worker_up{simulator=\"pcibus\"} 0\n");
	HAS(m, "mokka_worker_throttled{simulator=\"pcibus\"} 1\n");
	HAS(m, "mokka_worker_failed{simulator=\"pcibus\"} 0\n");
	HAS(m, "mokka_worker_down_since_timestamp_seconds{simulator=\"pcibus\"} 1700000000\n");
	HAS(m, "mokka_daemon_up{daemon=\"mokka-fabricmanager\"} 0\n");
	HAS(m, "mokka_daemon_throttled{daemon=\"mokka-fabricmanager\"} 1\n");
	HAS(m, "mokka_daemon_down_since_timestamp_seconds{daemon=\"mokka-fabricmanager\"} "
	    "1700000001\n");
	free(m);
}

Test(metrics, label_escaping, .init = status_good)
{
	char *m;

	strcpy(st.source_error, "h100.yaml:2:1: key \"gpus\": bad \\ value\nnext line");
	strcpy(sims[1].name, "we\"ird");
	m = render();
	HAS(m, "mokka_source_error{message=\"h100.yaml:2:1: key \\\"gpus\\\": bad \\\\ value\\nnext line\"} 1\n");
	HAS(m, "mokka_ready{simulator=\"we\\\"ird\"} 1\n");
	free(m);
}

Test(metrics, every_sample_has_a_declared_family, .init = status_good)
{
	char *m = render(), *save = NULL, *copy = strdup(m);
	int samples = 0;

	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], decl[160];

		if (line[0] == '#')
			continue;
		cr_assert_eq(sscanf(line, "%127[a-z_]", name), 1, "bad line: %s", line);
		snprintf(decl, sizeof(decl), "# TYPE %s ", name);
		cr_assert(strstr(m, decl), "no TYPE for %s", name);
		samples++;
	}
	cr_assert_geq(samples, 6 + 8 * 2 + 3);
	free(copy);
	free(m);
}

Test(metrics, no_sims_no_daemons)
{
	struct node_status empty = { 0 };
	char *m = NULL;

	cr_assert_eq(metrics_render(&empty, &m), 0);
	HAS(m, "mokka_generation 0\n");
	HAS(m, "# TYPE mokka_ready gauge\n");
	cr_assert_null(strstr(m, "mokka_ready{"));
	free(m);
}

/* ---- the server, end to end ---- */

static struct loop *lp;
static struct health *srv;

static void server_up(void)
{
	status_good();
	lp = loop_new();
	cr_assert_not_null(lp);
	cr_assert_eq(health_start(lp, "127.0.0.1:0", &st, &srv), 0);
	cr_assert_gt(health_port(srv), 0);
}

static void server_down(void)
{
	health_stop(srv);
	loop_free(lp);
}

/* A client from 127.0.0.<host> (all of 127/8 is loopback). */
static int client_from(int host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)health_port(srv)),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)host) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0, "%s", strerror(errno));
	/* The backlog completes the handshake before the loop accepts. */
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int client(void)
{
	return client_from(1);
}

/* A client that starts a request and never finishes it (it is accepted:
 * it sent something). */
static int slow_client_from(int host)
{
	int fd = client_from(host);

	cr_assert_eq(send(fd, "GET /rea", 8, 0), 8);
	return fd;
}

static bool closed_by_server(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void spin(int rounds)
{
	for (int i = 0; i < rounds; i++)
		loop_run_once(lp, 10);
}

/* Drives the loop until the server closes fd; returns the ms it took, or
 * -1 on timeout.  What arrived is in out (NUL-terminated). */
static long drain(int fd, char *out, size_t cap, long timeout_ms)
{
	uint64_t t0 = loop_now_ms();
	size_t len = 0;

	out[0] = '\0';
	while ((long)(loop_now_ms() - t0) < timeout_ms) {
		ssize_t n;

		loop_run_once(lp, 10);
		while ((n = recv(fd, out + len, cap - 1 - len, 0)) > 0)
			len += (size_t)n;
		out[len] = '\0';
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return (long)(loop_now_ms() - t0);
	}
	return -1;
}

static long exchange(const char *req, size_t rlen, char *out, size_t cap)
{
	int fd = client();
	long ms;

	cr_assert_eq(send(fd, req, rlen, 0), (ssize_t)rlen);
	ms = drain(fd, out, cap, 3000);
	close(fd);
	return ms;
}

static long get(const char *req, char *out, size_t cap)
{
	return exchange(req, strlen(req), out, cap);
}

Test(server, healthz_flips_with_status, .init = server_up, .fini = server_down)
{
	char resp[4096];

	st.have_state = false;
	cr_assert_geq(get("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 503 ", 13), "%s", resp);
	cr_assert(strstr(resp, "no valid state yet"), "%s", resp);
	st.have_state = true;
	cr_assert_geq(get("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), "%s", resp);
	cr_assert(strstr(resp, "\r\nContent-Length: 3\r\n"), "%s", resp);
	cr_assert(strstr(resp, "\r\nConnection: close\r\n"), "%s", resp);
	cr_assert(strstr(resp, "\r\nContent-Type: text/plain"), "%s", resp);
	cr_assert(strstr(resp, "\r\n\r\nok\n") && strlen(strstr(resp, "\r\n\r\n")) == 7, "%s", resp);
}

Test(server, head_has_no_body, .init = server_up, .fini = server_down)
{
	char resp[4096];

	cr_assert_geq(get("HEAD /readyz HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), "%s", resp);
	cr_assert(strstr(resp, "\r\nContent-Length: 6\r\n"), "%s", resp);
	cr_assert_str_eq(strstr(resp, "\r\n\r\n"), "\r\n\r\n", "%s", resp);
}

Test(server, metrics_over_http, .init = server_up, .fini = server_down)
{
	char resp[65536];

	cr_assert_geq(get("GET /metrics?x=1 HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), "%s", resp);
	cr_assert(strstr(resp, "Content-Type: text/plain; version=0.0.4"), "%s", resp);
	cr_assert(strstr(resp, "\nmokka_generation 3\n"), "%s", resp);
}

Test(server, refusals, .init = server_up, .fini = server_down)
{
	char resp[4096];

	cr_assert_geq(get("POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 405 ", 13), "%s", resp);
	cr_assert(strstr(resp, "\r\nAllow: GET, HEAD\r\n"), "%s", resp);
	cr_assert_geq(get("GET nope\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 400 ", 13), "%s", resp);
	cr_assert_geq(get("GET /nope HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 404 ", 13), "%s", resp);
}

Test(server, oversized_request_refused, .init = server_up, .fini = server_down)
{
	size_t n = 10 * 1024;
	char *req = malloc(n), resp[4096];
	const char *head = "GET /healthz HTTP/1.1\r\nX-Pad: ";

	memset(req, 'a', n);
	memcpy(req, head, strlen(head));
	cr_assert_geq(exchange(req, n, resp, sizeof(resp)), 0, "connection not closed");
	cr_assert(!strncmp(resp, "HTTP/1.1 431 ", 13), "%s", resp);
	free(req);
}

Test(server, slow_client_closed_at_deadline, .init = server_up, .fini = server_down)
{
	char resp[256];
	int fd = slow_client_from(1);
	long ms = drain(fd, resp, sizeof(resp), 3000);

	cr_assert_geq(ms, 900, "closed too early (%ld ms)", ms);
	cr_assert_leq(ms, 2000, "not closed at the deadline (%ld ms)", ms);
	cr_assert_str_eq(resp, "");
	close(fd);
}

/* One that sends nothing waits in the kernel (TCP_DEFER_ACCEPT), holding
 * no slot; handed over at last, it meets the same deadline. */
Test(server, silent_client_takes_no_slot_and_is_closed, .init = server_up, .fini = server_down)
{
	char resp[4096];
	int fd = client();

	spin(10);
	cr_assert_geq(get("GET /healthz HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 0);
	cr_assert(!strncmp(resp, "HTTP/1.1 200 ", 13), "%s", resp);
	long ms = drain(fd, resp, sizeof(resp), 5000);
	cr_assert_geq(ms, 0, "a silent connection held for 5 s");
	cr_assert_str_eq(resp, "");
	close(fd);
}

Test(server, partial_request_completed_later, .init = server_up, .fini = server_down)
{
	char resp[4096];
	int fd = client();

	cr_assert_eq(send(fd, "GET /rea", 8, 0), 8);
	for (int i = 0; i < 5; i++)
		loop_run_once(lp, 10);
	cr_assert_eq(send(fd, "dyz HTTP/1.1\r\n\r\n", 16, 0), 16);
	cr_assert_geq(drain(fd, resp, sizeof(resp), 3000), 0);
	cr_assert(strstr(resp, "\r\n\r\nready\n"), "%s", resp);
	close(fd);
}

/* One client holds at most 64 unfinished connections; past that its
 * oldest goes, so the newest (a probe's) is the one that stays. */
Test(server, per_client_cap_evicts_the_oldest, .init = server_up, .fini = server_down)
{
	enum { N = 70 };
	int fds[N], closed = 0;
	char resp[4096];

	for (int i = 0; i < N; i++) {
		fds[i] = slow_client_from(1);
		spin(1);	/* accepted in this order */
	}
	spin(10);
	for (int i = 0; i < N; i++) {
		bool gone = closed_by_server(fds[i]);

		closed += gone;
		cr_assert_eq(gone, i < N - 64, "connection %d of %d: %s", i, N,
			     gone ? "evicted" : "kept");
	}
	cr_assert_eq(closed, N - 64, "%d of %d closed", closed, N);
	/* The newest ones are still served. */
	cr_assert_eq(send(fds[N - 1], "dyz HTTP/1.1\r\n\r\n", 16, 0), 16);
	cr_assert_geq(drain(fds[N - 1], resp, sizeof(resp), 3000), 0);
	cr_assert(strstr(resp, "\r\n\r\nready\n"), "%s", resp);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

/* One client's flood never evicts another client's connections. */
Test(server, one_client_cannot_evict_another, .init = server_up, .fini = server_down)
{
	enum { HOSTILE = 80, OTHER = 10 };
	int bad[HOSTILE], good[OTHER];
	char resp[4096];

	for (int i = 0; i < OTHER; i++)
		good[i] = slow_client_from(1);
	spin(5);
	for (int i = 0; i < HOSTILE; i++) {
		bad[i] = slow_client_from(2);
		spin(1);
	}
	spin(5);
	for (int i = 0; i < OTHER; i++)
		cr_assert_not(closed_by_server(good[i]), "127.0.0.1's connection %d evicted", i);
	int gone = 0;
	for (int i = 0; i < HOSTILE; i++)
		gone += closed_by_server(bad[i]);
	cr_assert_eq(gone, HOSTILE - 64, "%d of the flood's connections closed", gone);
	cr_assert_eq(send(good[0], "dyz HTTP/1.1\r\n\r\n", 16, 0), 16);
	cr_assert_geq(drain(good[0], resp, sizeof(resp), 3000), 0);
	cr_assert(strstr(resp, "\r\n\r\nready\n"), "%s", resp);
	for (int i = 0; i < OTHER; i++)
		close(good[i]);
	for (int i = 0; i < HOSTILE; i++)
		close(bad[i]);
}

/* A request complete on arrival is answered at once, slots full or not,
 * and evicts nobody. */
Test(server, complete_request_answered_without_a_slot, .init = server_up, .fini = server_down)
{
	enum { N = 64 };
	int fds[N];
	char resp[4096];

	for (int i = 0; i < N; i++)
		fds[i] = slow_client_from(1);
	spin(5);
	for (int k = 0; k < 20; k++) {
		cr_assert_geq(get("GET /healthz HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 0);
		cr_assert(!strncmp(resp, "HTTP/1.1 200 ", 13), "probe %d: %s", k, resp);
	}
	for (int i = 0; i < N; i++)
		cr_assert_not(closed_by_server(fds[i]), "connection %d evicted by a probe", i);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

Test(server, stop_closes_open_connections, .init = server_up)
{
	int fd = slow_client_from(1);
	char c;

	for (int i = 0; i < 5; i++)
		loop_run_once(lp, 10);
	health_stop(srv);
	cr_assert_eq(recv(fd, &c, 1, 0), 0);
	close(fd);
	loop_free(lp);
}

/* ---- addresses ---- */

Test(addr, forms)
{
	struct loop *l = loop_new();
	struct health *h;
	static const char *const good[] = { ":0", "127.0.0.1:0", "localhost:0" };
	static const char *const bad[] = {
		"9091", "::1:9091", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:9x",
		"[::1]", "[::1]9091", "127.0.0.1:-1", "",
	};
	int r;

	status_good();
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(health_start(l, good[i], &st, &h), 0, "%s", good[i]);
		cr_assert_gt(health_port(h), 0);
		health_stop(h);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(health_start(l, bad[i], &st, &h), -EINVAL, "%s", bad[i]);
		cr_assert_null(h);
	}
	/* IPv6 loopback only where the host has it. */
	r = health_start(l, "[::1]:0", &st, &h);
	cr_assert(r == 0 || r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT, "%d", r);
	if (r == 0)
		health_stop(h);
	/* A port in use is reported, not ignored. */
	cr_assert_eq(health_start(l, "127.0.0.1:0", &st, &h), 0);
	char addr[32];
	struct health *h2;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", health_port(h));
	cr_assert_eq(health_start(l, addr, &st, &h2), -EADDRINUSE);
	health_stop(h);
	loop_free(l);
}
