/* The health listener: routes (/healthz, /readyz, /metrics) and a tiny
 * HTTP/1.1 server on the supervisor's loop.  One request per connection,
 * Connection: close, request-size cap, connection cap and a deadline per
 * connection, so a stuck or hostile client can never hold the loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/health.h"

#define HEALTH_MAX_CONNS 64
#define HEALTH_DEADLINE_MS 1000	/* kubelet probes give up after 1 s */
#define HEALTH_ACCEPT_PAUSE_MS 100	/* after EMFILE and the like */

static const char TEXT_PLAIN[] = "text/plain; charset=utf-8";
static const char PROM_TEXT[] = "text/plain; version=0.0.4; charset=utf-8";

/* ---- routes ---- */

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

static int route_healthz(const struct node_status *st, FILE *f)
{
	int failing = 0;

	if (st->have_state && st->last_stage_ok) {
		fputs("ok\n", f);
		return 200;
	}
	if (!st->have_state)
		put_no_state(f, st);
	for (int i = 0; i < st->nsims; i++) {
		const struct sim_status *s = &st->sims[i];

		if (s->stage_ok)
			continue;
		fprintf(f, "%s: stage failing since ", s->name);
		put_iso_time(f, s->failing_since);
		fprintf(f, ": %s\n", s->stage_error[0] ? s->stage_error : "unknown error");
		failing++;
	}
	if (st->have_state && !failing) {
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

		if (s->failed && s->violation)	/* say what it did, not a count */
			fprintf(f, "%s: failed: %s\n", s->name, s->not_ready_reason[0]
				? s->not_ready_reason : "protocol violation");
		else if (s->failed)
			fprintf(f, "%s: failed (restart limit)\n", s->name);
		else if (!s->ready)
			fprintf(f, "%s: not ready: %s\n", s->name,
				s->not_ready_reason[0] ? s->not_ready_reason : "no reason given");
		else
			continue;
		code = 503;
	}
	/* A daemon past its restart limit serves nothing either. */
	for (int i = 0; i < st->ndaemons; i++) {
		if (!st->daemons[i].failed)
			continue;
		fprintf(f, "%s: failed (restart limit)\n", st->daemons[i].name);
		code = 503;
	}
	if (code == 200)
		fputs("ready\n", f);
	return code;
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

/* ---- server ---- */

struct health_conn {
	struct health *h;
	int fd;
	struct loop_timer deadline;
	char *out;			/* the whole response, once known */
	size_t out_len, out_off;
	size_t in_len;
	char in[HTTP_MAX_REQUEST];
};

struct health {
	struct loop *l;
	const struct node_status *st;
	int fd;
	int port;
	struct loop_timer resume;	/* re-enables accept after a pause */
	struct health_conn *conns[HEALTH_MAX_CONNS];
	int nconns;
	unsigned long dropped;		/* connections refused at the cap */
};

static const struct {
	int code;
	const char *reason;
} reasons[] = {
	{ 200, "OK" }, { 400, "Bad Request" }, { 404, "Not Found" },
	{ 405, "Method Not Allowed" }, { 431, "Request Header Fields Too Large" },
	{ 500, "Internal Server Error" }, { 503, "Service Unavailable" },
};

static const char *reason_of(int code)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			return reasons[i].reason;
	return "Unknown";
}

static void conn_close(struct health_conn *c)
{
	struct health *h = c->h;
	char junk[4096];
	int drained = 0;

	loop_timer_stop(h->l, &c->deadline);
	loop_del_fd(h->l, c->fd);
	/* Unread input would make close() send RST, which can discard the
	 * response before the client reads it: drain what has arrived. */
	shutdown(c->fd, SHUT_WR);
	while (drained < 16 && read(c->fd, junk, sizeof(junk)) > 0)
		drained++;
	close(c->fd);
	for (int i = 0; i < h->nconns; i++)
		if (h->conns[i] == c) {
			h->conns[i] = h->conns[--h->nconns];
			break;
		}
	free(c->out);
	free(c);
}

static void conn_deadline(struct loop *l, void *arg)
{
	struct health_conn *c = arg;

	log_debug("health: fd %d: closed after %d ms without a complete exchange",
		  c->fd, HEALTH_DEADLINE_MS);
	conn_close(c);
}

/* Writes what it can; 1 = all sent, 0 = try again on EPOLLOUT, <0 error. */
static int conn_flush(struct health_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		c->out_off += (size_t)n;
	}
	return 1;
}

static int build_response(struct health_conn *c, int code, const char *ctype,
			  const char *body, int head_only)
{
	size_t blen = body ? strlen(body) : 0;
	size_t len = 0;
	FILE *f = open_memstream(&c->out, &len);

	if (!f)
		return -errno;
	fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Cache-Control: no-store\r\n", code, reason_of(code), ctype, blen);
	if (code == 405)
		fputs("Allow: GET, HEAD\r\n", f);
	fputs("Connection: close\r\n\r\n", f);
	if (!head_only && blen)
		fwrite(body, 1, blen, f);
	if (fclose(f) != 0) {
		free(c->out);
		c->out = NULL;
		return -ENOMEM;
	}
	c->out_len = len;
	return 0;
}

/* parsed: the result of http_parse_request (1 or a negative errno). */
static void conn_respond(struct health_conn *c, int parsed, const char *method,
			 const char *path)
{
	static const char *const methods[] = { "GET", "HEAD" };
	const char *ctype = TEXT_PLAIN, *msg = NULL;
	char *body = NULL;
	int code, head_only = 0, allowed = 0, r;

	for (size_t i = 0; parsed == 1 && i < sizeof(methods) / sizeof(methods[0]); i++)
		allowed |= !strcmp(method, methods[i]);
	if (parsed == -E2BIG) {
		code = 431, msg = "request head too large\n";
	} else if (parsed < 0) {
		code = 400, msg = "malformed request\n";
	} else if (!allowed) {
		code = 405, msg = "only GET and HEAD are served\n";
	} else {
		head_only = !strcmp(method, "HEAD");
		code = health_route(c->h->st, path, &body, &ctype);
	}
	r = build_response(c, code, ctype, msg ? msg : body, head_only);
	free(body);
	if (r < 0) {
		log_warn("health: fd %d: building the %d response: %s", c->fd, code, strerror(-r));
		conn_close(c);
		return;
	}
	r = conn_flush(c);
	if (r == 0 && loop_mod_fd(c->h->l, c->fd, EPOLLOUT) == 0)
		return;		/* the rest goes out when the socket drains */
	if (r < 0)
		log_debug("health: fd %d: send: %s", c->fd, strerror(-r));
	conn_close(c);
}

static void conn_read(struct health_conn *c)
{
	char method[16], path[256];

	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {	/* EOF or error before a complete request */
			conn_close(c);
			return;
		}
		c->in_len += (size_t)n;
		r = http_parse_request(c->in, c->in_len, method, sizeof(method),
				       path, sizeof(path));
		if (r != 0) {
			conn_respond(c, r, method, path);
			return;
		}
	}
}

static void conn_event(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct health_conn *c = arg;

	if (!c->out) {
		conn_read(c);
		return;
	}
	int r = conn_flush(c);
	if (r != 0)
		conn_close(c);
}

static void conn_accept(struct health *h, int fd)
{
	struct health_conn *c;

	if (h->nconns >= HEALTH_MAX_CONNS) {
		/* Logged at 1, 2, 4, 8, ... drops: visible, but no log flood. */
		h->dropped++;
		if ((h->dropped & (h->dropped - 1)) == 0)
			log_warn("health: connection cap (%d) reached, %lu connection(s) dropped",
				 HEALTH_MAX_CONNS, h->dropped);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail;
	c->h = h;
	c->fd = fd;
	if (loop_add_fd(h->l, fd, EPOLLIN | EPOLLRDHUP, conn_event, c) < 0)
		goto fail;
	loop_timer_init(&c->deadline, conn_deadline, c);
	loop_timer_start(h->l, &c->deadline, HEALTH_DEADLINE_MS);
	h->conns[h->nconns++] = c;
	return;
fail:
	log_warn("health: accepting a connection: out of memory");
	free(c);
	close(fd);
}

static void listen_resume(struct loop *l, void *arg)
{
	struct health *h = arg;

	loop_mod_fd(l, h->fd, EPOLLIN);
}

static void listen_event(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct health *h = arg;

	for (;;) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd >= 0) {
			conn_accept(h, cfd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		/* EMFILE and friends: the pending connection stays readable,
		 * so stop listening briefly instead of spinning. */
		log_warn("health: accept on fd %d: %s; pausing %d ms", fd, strerror(errno),
			 HEALTH_ACCEPT_PAUSE_MS);
		if (!loop_timer_armed(&h->resume)) {
			loop_timer_start(l, &h->resume, HEALTH_ACCEPT_PAUSE_MS);
			loop_mod_fd(l, fd, 0);
		}
		return;
	}
}

/* ":9091" -> host "" ; "[::1]:9091" -> "::1" ; "a.b:9091" -> "a.b". */
static int split_addr(const char *addr, char *host, size_t hlen, int *port)
{
	const char *colon, *h = addr, *hend;
	char *end;
	long p;

	if (addr[0] == '[') {
		h = addr + 1;
		hend = strchr(h, ']');
		if (!hend || hend[1] != ':')
			return -EINVAL;
		colon = hend + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
			return -EINVAL;	/* no port, or IPv6 without brackets */
		hend = colon;
	}
	if ((size_t)(hend - h) >= hlen)
		return -EINVAL;
	memcpy(host, h, (size_t)(hend - h));
	host[hend - h] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || p > 65535)
		return -EINVAL;
	*port = (int)p;
	return 0;
}

static int listen_on(const struct sockaddr *sa, socklen_t salen)
{
	int one = 1, zero = 0, e;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* ":port" binds "::" and serves IPv4 too where the host allows. */
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, salen) < 0 || listen(fd, SOMAXCONN) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int listen_wildcard(int port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
				   .sin6_port = htons((uint16_t)port) };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons((uint16_t)port) };
	int fd = listen_on((struct sockaddr *)&s6, sizeof(s6));

	/* No IPv6 in this kernel or namespace: IPv4 only. */
	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		fd = listen_on((struct sockaddr *)&s4, sizeof(s4));
	return fd;
}

static int listen_host(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[8];
	int fd = -EADDRNOTAVAIL, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r != 0) {
		log_error("health: resolving %s: %s", host, gai_strerror(r));
		return -EADDRNOTAVAIL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = listen_on(ai->ai_addr, ai->ai_addrlen);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	return fd;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int health_start(struct loop *l, const char *addr, const struct node_status *st,
		 struct health **out)
{
	char host[256];
	struct health *h;
	int port, fd, r;

	*out = NULL;
	r = split_addr(addr, host, sizeof(host), &port);
	if (r < 0) {
		log_error("health: address \"%s\": expected [HOST]:PORT, [IPV6]:PORT", addr);
		return r;
	}
	fd = host[0] ? listen_host(host, port) : listen_wildcard(port);
	if (fd < 0) {
		log_error("health: listening on %s: %s", addr, strerror(-fd));
		return fd;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->l = l;
	h->st = st;
	h->fd = fd;
	loop_timer_init(&h->resume, listen_resume, h);
	h->port = bound_port(fd);
	r = loop_add_fd(l, fd, EPOLLIN, listen_event, h);
	if (r < 0) {
		log_error("health: adding listener for %s to the loop: %s", addr, strerror(-r));
		close(fd);
		free(h);
		return r;
	}
	log_info("health: listening on %s (port %d)", addr, h->port);
	*out = h;
	return 0;
}

int health_port(const struct health *h)
{
	return h->port;
}

void health_stop(struct health *h)
{
	if (!h)
		return;
	while (h->nconns)
		conn_close(h->conns[0]);
	loop_timer_stop(h->l, &h->resume);
	loop_del_fd(h->l, h->fd);
	close(h->fd);
	free(h);
}
