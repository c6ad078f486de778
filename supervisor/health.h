/* The health listener (default ":9091", every interface; the systemd unit
 * binds 127.0.0.1:9091): hand-written HTTP/1.1, GET/HEAD only, Connection:
 * close, request-size cap, per-connection deadline.  It keeps answering
 * probes under a flood of idle or slow connections: the kernel holds
 * connections that sent nothing (TCP_DEFER_ACCEPT), a request that is
 * complete when accepted is answered at once without taking a slot, and
 * the slots (per client address and in all) go to the newest connection,
 * the oldest unfinished one evicted.  Routes /healthz, /readyz, /metrics
 * from struct node_status (health_routes.c, metrics.c). */
#ifndef MOKKA_SUPERVISOR_HEALTH_H
#define MOKKA_SUPERVISOR_HEALTH_H

#include <stddef.h>
#include "supervisor/loop.h"
#include "supervisor/status.h"

struct health;

/* addr: ":9091" (all interfaces, dual-stack where possible),
 * "127.0.0.1:9091", "[::1]:9091", "localhost:9091".  0 or -errno. */
int health_start(struct loop *l, const char *addr, const struct node_status *st,
		 struct health **out);
void health_stop(struct health *h);
/* The port actually bound (useful with port 0). */
int health_port(const struct health *h);

/* Pure parts, unit-tested and fuzzed. */
#define HTTP_MAX_REQUEST 8192
/* Parse a request head.  Returns 1 = complete (method/path filled),
 * 0 = need more bytes, -EINVAL = malformed, -E2BIG = too large. */
int http_parse_request(const char *buf, size_t len, char *method, size_t mlen,
		       char *path, size_t plen);
/* Render a route into a malloc'd body; returns the HTTP status code. */
int health_route(const struct node_status *st, const char *path, char **body,
		 const char **content_type);
int metrics_render(const struct node_status *st, char **out);
/* A simulator without a running worker; a wanted daemon that is down. */
bool health_sim_down(const struct sim_status *s);
bool health_daemon_down(const struct daemon_status *d);

#endif
