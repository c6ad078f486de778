/* The health listener: a tiny HTTP/1.1 server on the supervisor's loop
 * (the routes are health_routes.c).  One request per connection,
 * Connection: close, request-size cap, a deadline per connection, and
 * slots per client address and in all where the newest connection wins
 * (health.h), so neither a stuck nor a flooding client can hold the loop
 * or lock a probe out. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/health.h"

/* Unfinished connections held at once: in all, and per client address
 * (a quarter, so one client cannot evict every other).  Well under the
 * usual 1024 open files. */
#define HEALTH_MAX_CONNS 256
#define HEALTH_MAX_PER_PEER 64
#define HEALTH_ACCEPT_BATCH 64		/* accepts per wakeup */
#define HEALTH_DEADLINE_MS 1000	/* kubelet probes give up after 1 s */
#define HEALTH_ACCEPT_PAUSE_MS 100	/* after EMFILE and the like */

static const char TEXT_PLAIN[] = "text/plain; charset=utf-8";

/* ---- server ---- */

struct health_conn {
	struct health *h;
	int fd;
	bool admitted;			/* holds a slot, on the loop */
	struct in6_addr peer;		/* the client (IPv4 as v4-mapped) */
	uint64_t since;			/* accepted, monotonic ms */
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
	unsigned long evicted;		/* connections closed to make room */
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
	if (c->admitted)
		loop_del_fd(h->l, c->fd);
	/* Unread input would make close() send RST, which can discard the
	 * response before the client reads it: drain what has arrived. */
	shutdown(c->fd, SHUT_WR);
	while (drained < 16 && read(c->fd, junk, sizeof(junk)) > 0)
		drained++;
	close(c->fd);
	for (int i = 0; c->admitted && i < h->nconns; i++)
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

/* Logged at 1, 2, 4, 8, ... events: visible, but no log flood. */
static void count_rare(unsigned long *n, const char *what)
{
	++*n;
	if ((*n & (*n - 1)) == 0)
		log_warn("health: %s (%lu so far)", what, *n);
}

/* A slot for a new connection from peer: when the peer holds its share,
 * or all slots are taken, the oldest (its, or anyone's) is evicted.  The
 * newest connection wins, so a client that floods us churns its own
 * connections and never locks a probe out. */
static void make_room(struct health *h, const struct in6_addr *peer)
{
	struct health_conn *oldest = NULL, *oldest_peer = NULL, *victim = NULL;
	int same = 0;

	for (int i = 0; i < h->nconns; i++) {
		struct health_conn *c = h->conns[i];

		if (!oldest || c->since < oldest->since)
			oldest = c;
		if (memcmp(&c->peer, peer, sizeof(*peer)))
			continue;
		same++;
		if (!oldest_peer || c->since < oldest_peer->since)
			oldest_peer = c;
	}
	if (same >= HEALTH_MAX_PER_PEER)
		victim = oldest_peer;
	else if (h->nconns >= HEALTH_MAX_CONNS)
		victim = oldest;
	if (!victim)
		return;
	count_rare(&h->evicted, same >= HEALTH_MAX_PER_PEER
		   ? "a client at its connection limit: its oldest unfinished connection evicted"
		   : "connection limit reached: the oldest unfinished connection evicted");
	conn_close(victim);
}

static void conn_event(struct loop *l, int fd, uint32_t events, void *arg);

/* c waits for more input (events EPOLLIN) or output (EPOLLOUT): it gets a
 * slot, its deadline and a place on the loop.  0, or -1 with c closed. */
static int conn_admit(struct health_conn *c, uint32_t events)
{
	struct health *h = c->h;

	if (c->admitted) {
		if (loop_mod_fd(h->l, c->fd, events) == 0)
			return 0;
		conn_close(c);
		return -1;
	}
	make_room(h, &c->peer);
	if (loop_add_fd(h->l, c->fd, events, conn_event, c) < 0) {
		log_warn("health: fd %d: adding it to the loop failed", c->fd);
		conn_close(c);
		return -1;
	}
	c->admitted = true;
	loop_timer_start(h->l, &c->deadline, HEALTH_DEADLINE_MS);
	h->conns[h->nconns++] = c;
	return 0;
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
	if (r == 0) {
		conn_admit(c, EPOLLOUT);	/* the rest goes out when the socket drains */
		return;
	}
	if (r < 0)
		log_debug("health: fd %d: send: %s", c->fd, strerror(-r));
	conn_close(c);
}

/* Reads what has arrived; answers a complete request.  Returns 0 when c
 * waits for more input (still open), 1 when it was answered or closed. */
static int conn_read(struct health_conn *c)
{
	char method[16], path[256];

	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {	/* EOF or error before a complete request */
			conn_close(c);
			return 1;
		}
		c->in_len += (size_t)n;
		r = http_parse_request(c->in, c->in_len, method, sizeof(method),
				       path, sizeof(path));
		if (r != 0) {
			conn_respond(c, r, method, path);
			return 1;
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

static void peer_of(const struct sockaddr_storage *ss, struct in6_addr *peer)
{
	memset(peer, 0, sizeof(*peer));
	if (ss->ss_family == AF_INET6) {
		*peer = ((const struct sockaddr_in6 *)ss)->sin6_addr;
	} else if (ss->ss_family == AF_INET) {	/* as its v4-mapped form */
		peer->s6_addr[10] = peer->s6_addr[11] = 0xff;
		memcpy(&peer->s6_addr[12], &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

/* A request that is complete when we accept it (a probe sends it at once,
 * and TCP_DEFER_ACCEPT holds back connections until data comes) is
 * answered right here: it never queues behind, or competes for a slot
 * with, connections that are idle or slow. */
static void conn_accept(struct health *h, int fd, const struct sockaddr_storage *ss)
{
	struct health_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		log_warn("health: accepting a connection: out of memory");
		close(fd);
		return;
	}
	c->h = h;
	c->fd = fd;
	c->since = loop_now_ms();
	peer_of(ss, &c->peer);
	loop_timer_init(&c->deadline, conn_deadline, c);
	if (conn_read(c) == 0)
		conn_admit(c, EPOLLIN | EPOLLRDHUP);
}

static void listen_resume(struct loop *l, void *arg)
{
	struct health *h = arg;

	loop_mod_fd(l, h->fd, EPOLLIN);
}

static void listen_event(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct health *h = arg;

	/* A bounded batch: under a flood the other fds get their turn (the
	 * listener stays readable and we come back). */
	for (int i = 0; i < HEALTH_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int cfd = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd >= 0) {
			conn_accept(h, cfd, &ss);
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
	/* A connection that sends nothing stays in the kernel: it never
	 * takes a slot here (health.h). */
	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one));
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
