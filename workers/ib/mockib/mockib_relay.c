/* The TCP relay: mock-ib instances on different nodes form one fabric.
 * Each instance listens on ib.listen:tcp_port and connects to every peer
 * in ib.peers (nonblocking, retried every second).  On every connection
 * both sides send REGISTER (their config JSON) at once and every second;
 * a member not heard from for 3 s, or whose last connection closed, leaves
 * the fabric.  MADs for remote CAs travel raw with their routing fields
 * and the owner answers (mockib_relay.h has the wire).
 *
 * Only hosts in ib.peers may connect: a connection from any other address
 * is closed at accept, before a byte of it is parsed.
 *
 * Every instance must see the same member set to build the same fabric:
 * peers lists must connect every pair of nodes (a full mesh, e.g. the same
 * list of all nodes everywhere; connecting to ourselves is detected). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_relay.h"

#define RETRY_MS 1000
#define HELLO_TIMEOUT_MS 10000		/* an accepted socket must REGISTER */
#define OUT_MAX (32u << 20)
#define READ_CHUNK 65536

struct mib_conn {
	struct mib_watch w;
	struct mib_conn *next;
	bool dead, connecting, outgoing;
	int peer;			/* index into peers (outgoing), else -1 */
	char remote[STATE_NAME_MAX];	/* member name once it registered */
	char addr[128];			/* for logs */
	uint64_t since;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_off, out_len, out_cap;
	uint64_t dropped;
};

struct mib_peer {
	char host[256];
	int port;
	struct mib_conn *conn;
	uint64_t next_try;
	bool self;			/* it turned out to be this instance */
	bool warned;
};

struct mib_relay {
	struct mib_watch lw;
	struct mib_peer *peers;
	int npeers;
	struct mib_conn *conns;
	struct mib_conn *graveyard;	/* closed, freed by mib_relay_reap */
};

static void conn_close(struct mockib *d, struct mib_conn *c, const char *why, bool leave);

/* ------------------------------------------------------------------ */
/* REGISTER.                                                           */

/* Who is on the other end, and what it brings (mockib_member.c keeps it). */
static void on_register(struct mockib *d, struct mib_conn *c, const uint8_t *json, size_t len)
{
	char node[STATE_NAME_MAX] = "", err[256] = "";
	struct state_ib *ib;

	/* The common case, a periodic REGISTER with nothing new: no decode. */
	if (c->remote[0] && mib_member_refresh(d, c->remote, json, len))
		return;
	if (!(ib = malloc(sizeof(*ib))))
		return;
	if (state_ib_decode((const char *)json, len, node, ib, err, sizeof(err)) < 0 || !node[0]) {
		log_warn("relay: %s: bad REGISTER: %s; closing", c->addr,
			 err[0] ? err : "empty node_name");
		free(ib);
		conn_close(d, c, "bad REGISTER", true);
		return;
	}
	if (!strcmp(node, d->node)) {
		if (c->outgoing && c->peer >= 0) {
			d->relay->peers[c->peer].self = true;
			log_info("relay: peer %s is this instance; not connecting to it", c->addr);
		}
		free(ib);
		conn_close(d, c, "connected to ourselves", false);
		return;
	}
	if (c->remote[0] && strcmp(c->remote, node)) {
		log_warn("relay: %s: registered as %s, now as %s; closing", c->addr, c->remote,
			 node);
		free(ib);
		conn_close(d, c, "node name changed", true);
		return;
	}
	if (!c->remote[0]) {
		snprintf(c->remote, sizeof(c->remote), "%s", node);
		/* Answer at once so both fabrics converge within a round trip. */
		if (!c->outgoing)
			mib_relay_announce(d);
	}
	mib_member_update(d, node, ib, json, len, c->addr);
}

/* ------------------------------------------------------------------ */
/* Output.                                                             */

static void conn_flush(struct mockib *d, struct mib_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->w.fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			conn_close(d, c, strerror(errno), true);
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	mib_watch_mod(d, &c->w, EPOLLIN | (c->out_len ? EPOLLOUT : 0));
}

/* Queue one frame (head + up to two parts) and try to send it. */
static int conn_send(struct mockib *d, struct mib_conn *c, uint8_t type, const void *a,
		     size_t alen, const void *b, size_t blen)
{
	uint8_t head[5];
	size_t need;

	if (c->dead || c->connecting)
		return -ENOTCONN;
	if (mib_relay_head(head, type, alen + blen) < 0)
		return -EMSGSIZE;
	need = sizeof(head) + alen + blen;
	if (c->out_off && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len - c->out_off + need > OUT_MAX) {
		if (!c->dropped++ || !(c->dropped % 1000))
			log_warn("relay: %s (%s): output backlog over %u MiB; dropped a frame "
				 "(%llu so far)", c->addr, c->remote, OUT_MAX >> 20,
				 (unsigned long long)c->dropped);
		return -ENOBUFS;
	}
	if (c->out_len + need > c->out_cap) {
		/* Compact first, then grow. */
		if (c->out_off) {
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		if (c->out_len + need > c->out_cap) {
			size_t cap = c->out_cap ? c->out_cap : 65536;
			uint8_t *n;

			while (cap < c->out_len + need)
				cap *= 2;
			if (!(n = realloc(c->out, cap)))
				return -ENOMEM;
			c->out = n;
			c->out_cap = cap;
		}
	}
	memcpy(c->out + c->out_len, head, sizeof(head));
	if (alen)
		memcpy(c->out + c->out_len + sizeof(head), a, alen);
	if (blen)
		memcpy(c->out + c->out_len + sizeof(head) + alen, b, blen);
	c->out_len += need;
	conn_flush(d, c);
	return 0;
}

static void send_register(struct mockib *d, struct mib_conn *c)
{
	if (d->reg_json)
		conn_send(d, c, MIB_RELAY_REGISTER, d->reg_json, d->reg_len, NULL, 0);
}

void mib_relay_announce(struct mockib *d)
{
	if (!d->relay)
		return;
	for (struct mib_conn *c = d->relay->conns; c; c = c->next)
		if (!c->dead && !c->connecting)
			send_register(d, c);
}

int mib_relay_send_mad(struct mockib *d, const char *to, int kind, uint64_t req_id,
		       uint64_t src_guid, uint32_t slid, uint32_t src_qpn, uint64_t dst_guid,
		       int ingress_port, const uint8_t *mad, size_t len)
{
	struct mib_relay_mad m = { .req_id = req_id, .src_guid = src_guid, .dst_guid = dst_guid,
				   .slid = slid, .src_qpn = src_qpn,
				   .ingress_port = (uint8_t)ingress_port };
	uint8_t hdr[MIB_RELAY_MADHDR];

	if (!d->relay || !to)
		return -EHOSTUNREACH;
	snprintf(m.origin, sizeof(m.origin), "%s", d->node);
	mib_relay_madhdr_put(hdr, &m);
	for (struct mib_conn *c = d->relay->conns; c; c = c->next)
		if (!c->dead && !c->connecting && !strcmp(c->remote, to))
			return conn_send(d, c, (uint8_t)kind, hdr, sizeof(hdr), mad, len);
	return -EHOSTUNREACH;
}

/* ------------------------------------------------------------------ */
/* Input.                                                              */

static void on_mad(struct mockib *d, struct mib_conn *c, uint8_t type, const uint8_t *p,
		   size_t len)
{
	struct mib_relay_mad m;
	int ca;

	if (mib_relay_mad_parse(p, len, &m) < 0) {
		log_warn("relay: %s: malformed MAD frame (%zu bytes); dropped", c->addr, len);
		return;
	}
	if (type == MIB_RELAY_REPLY) {
		mib_mad_relay_reply(d, m.req_id, m.mad, m.len, m.slid, m.src_qpn);
		return;
	}
	ca = d->fab_ok ? ib_fabric_ca_by_guid(&d->fab, m.dst_guid) : -1;
	if (ca < 0 || !d->fab.cas[ca].local) {
		log_debug("relay: %s: MAD for port GUID 0x%016llx, not ours; dropped", c->addr,
			  (unsigned long long)m.dst_guid);
		return;
	}
	if (type == MIB_RELAY_ANSWER)
		mib_mad_answer_remote(d, m.origin, m.req_id, ca, m.ingress_port, m.mad, m.len,
				      m.slid, m.src_qpn, m.src_guid);
	else
		mib_mad_deliver(d, ca, m.mad, m.len, m.slid, m.src_qpn, m.src_guid);
}

static void on_frame(struct mockib *d, struct mib_conn *c, uint8_t type, const uint8_t *p,
		     size_t len)
{
	switch (type) {
	case MIB_RELAY_REGISTER:
		on_register(d, c, p, len);
		break;
	case MIB_RELAY_ANSWER:
	case MIB_RELAY_DELIVER:
	case MIB_RELAY_REPLY:
		if (!c->remote[0]) {
			log_warn("relay: %s: MAD before REGISTER; dropped", c->addr);
			break;
		}
		on_mad(d, c, type, p, len);
		break;
	default:
		log_debug("relay: %s: unknown frame type %u; ignored", c->addr, type);
	}
}

static void conn_read(struct mockib *d, struct mib_conn *c)
{
	for (;;) {
		ssize_t n;
		long used;
		size_t off = 0;

		if (c->in_cap - c->in_len < READ_CHUNK) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 2 * READ_CHUNK;
			uint8_t *b;

			if (cap > MIB_RELAY_MAX + 8 + READ_CHUNK)
				cap = MIB_RELAY_MAX + 8 + READ_CHUNK;
			if (cap <= c->in_cap || !(b = realloc(c->in, cap))) {
				conn_close(d, c, "input buffer", true);
				return;
			}
			c->in = b;
			c->in_cap = cap;
		}
		n = recv(c->w.fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			conn_close(d, c, strerror(errno), true);
			return;
		}
		if (n == 0) {
			conn_close(d, c, "closed by the peer", true);
			return;
		}
		c->in_len += (size_t)n;
		for (;;) {
			uint8_t type;
			const uint8_t *p;
			size_t plen;

			used = mib_relay_parse(c->in + off, c->in_len - off, &type, &p, &plen);
			if (used < 0) {
				log_warn("relay: %s: frame length 0 or over %u bytes; closing",
					 c->addr, MIB_RELAY_MAX);
				conn_close(d, c, "bad framing", true);
				return;
			}
			if (used == 0)
				break;
			on_frame(d, c, type, p, plen);
			if (c->dead)
				return;
			off += (size_t)used;
		}
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

/* ------------------------------------------------------------------ */
/* Connections.                                                        */

static void conn_close(struct mockib *d, struct mib_conn *c, const char *why, bool leave)
{
	struct mib_relay *r = d->relay;

	if (c->dead)
		return;
	c->dead = true;
	mib_watch_del(d, &c->w);
	close(c->w.fd);
	c->w.fd = -1;
	for (struct mib_conn **pp = &r->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	c->next = r->graveyard;
	r->graveyard = c;
	if (c->outgoing && c->peer >= 0 && c->peer < r->npeers && r->peers[c->peer].conn == c) {
		r->peers[c->peer].conn = NULL;
		r->peers[c->peer].next_try = mib_now_ms() + RETRY_MS;
	}
	if (c->remote[0] || !c->connecting)
		log_info("relay: connection %s%s%s closed: %s", c->addr, c->remote[0] ? " to " : "",
			 c->remote, why);
	if (!leave || !c->remote[0])
		return;
	for (struct mib_conn *o = r->conns; o; o = o->next)
		if (!o->dead && !strcmp(o->remote, c->remote))
			return;		/* still reachable another way */
	mib_member_leave(d, c->remote, "its connection closed");
}

static void on_conn(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	struct mib_conn *c = (struct mib_conn *)w;

	if (c->dead)
		return;
	if (c->connecting) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->w.fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		if (err) {
			struct mib_peer *p = &d->relay->peers[c->peer];

			if (!p->warned)
				log_info("relay: connect to %s: %s; retrying every second", c->addr,
					 strerror(err));
			p->warned = true;
			conn_close(d, c, strerror(err), false);
			return;
		}
		c->connecting = false;
		d->relay->peers[c->peer].warned = false;
		log_info("relay: connected to %s", c->addr);
		mib_watch_mod(d, &c->w, EPOLLIN);
		send_register(d, c);
		return;
	}
	if (events & EPOLLOUT)
		conn_flush(d, c);
	if (!c->dead && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		conn_read(d, c);
}

static struct mib_conn *conn_new(struct mockib *d, int fd, const char *addr)
{
	struct mib_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c)
		return NULL;
	c->w.fd = fd;
	c->w.cb = on_conn;
	c->peer = -1;
	c->since = mib_now_ms();
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	/* MADs are small and latency-bound. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = d->relay->conns;
	d->relay->conns = c;
	return c;
}

static void peer_connect(struct mockib *d, int i)
{
	struct mib_peer *p = &d->relay->peers[i];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[16], addr[128];
	struct mib_conn *c;
	int fd, r;

	p->next_try = mib_now_ms() + RETRY_MS;
	snprintf(port, sizeof(port), "%d", p->port);
	snprintf(addr, sizeof(addr), "%s:%d", p->host, p->port);
	if ((r = getaddrinfo(p->host, port, &hints, &res)) != 0) {
		if (!p->warned)
			log_info("relay: peer %s: %s; retrying every second", addr, gai_strerror(r));
		p->warned = true;
		return;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("relay: socket for %s: %s", addr, strerror(errno));
		freeaddrinfo(res);
		return;
	}
	r = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (r < 0 && errno != EINPROGRESS) {
		if (!p->warned)
			log_info("relay: connect to %s: %s; retrying every second", addr,
				 strerror(errno));
		p->warned = true;
		close(fd);
		return;
	}
	if (!(c = conn_new(d, fd, addr))) {
		close(fd);
		return;
	}
	c->outgoing = true;
	c->connecting = true;
	c->peer = i;
	p->conn = c;
	if (mib_watch_add(d, &c->w, EPOLLOUT) < 0)
		conn_close(d, c, "epoll", false);
}

static void on_accept(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	static uint64_t refused;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char host[NI_MAXHOST], serv[NI_MAXSERV], addr[128];
		int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct mib_conn *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("relay: accept: %s", strerror(errno));
			return;
		}
		if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
				NI_NUMERICHOST | NI_NUMERICSERV) != 0)
			snprintf(host, sizeof(host), "?");
		snprintf(addr, sizeof(addr), "%s:%s", host, serv);
		/* Only members may feed the MAD parsers; anyone else is cut
		 * off before a byte is read. */
		if (!mib_relay_addr_is_peer(d->ib->peers, (const struct sockaddr *)&ss)) {
			if (!refused++ || !(refused % 100))
				log_warn("relay: connection from %s: not a host in ib.peers; refused "
					 "(%llu so far)", addr, (unsigned long long)refused);
			close(fd);
			continue;
		}
		if (!(c = conn_new(d, fd, addr))) {
			close(fd);
			continue;
		}
		if (mib_watch_add(d, &c->w, EPOLLIN) < 0) {
			conn_close(d, c, "epoll", false);
			continue;
		}
		log_debug("relay: accepted %s", addr);
		send_register(d, c);
	}
}

/* ------------------------------------------------------------------ */
/* Lifecycle.                                                          */

static int add_peer(void *arg, const char *host, int port)
{
	struct mib_relay *r = arg;
	struct mib_peer *n = realloc(r->peers, (size_t)(r->npeers + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->peers = n;
	memset(&n[r->npeers], 0, sizeof(*n));
	snprintf(n[r->npeers].host, sizeof(n->host), "%s", host);
	n[r->npeers].port = port;
	r->npeers++;
	return 0;
}

static int listen_open(struct mockib *d)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[16];
	int fd, r, one = 1;

	snprintf(port, sizeof(port), "%d", d->ib->tcp_port);
	if ((r = getaddrinfo(d->ib->listen, port, &hints, &res)) != 0) {
		log_error("relay: listen address %s:%s: %s", d->ib->listen, port, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		log_error("relay: cannot listen on %s:%s: %s", d->ib->listen, port, strerror(-r));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return r;
	}
	freeaddrinfo(res);
	d->relay->lw.fd = fd;
	d->relay->lw.cb = on_accept;
	if ((r = mib_watch_add(d, &d->relay->lw, EPOLLIN)) < 0) {
		close(fd);
		d->relay->lw.fd = -1;
		return r;
	}
	log_info("relay: listening on %s:%s", d->ib->listen, port);
	return 0;
}

int mib_relay_start(struct mockib *d)
{
	char err[256];
	int r;

	if (!d->relay) {
		if (!(d->relay = calloc(1, sizeof(*d->relay))))
			return -ENOMEM;
		d->relay->lw.fd = -1;
	}
	/* Without a listener the outgoing connections still make the fabric. */
	if (d->ib->listen[0])
		listen_open(d);
	r = mib_relay_peers_parse(d->ib->peers, d->ib->tcp_port, add_peer, d->relay, err,
				  sizeof(err));
	if (r < 0) {
		log_error("relay: ib.peers: %s; not connecting to any peer", err);
		return r;
	}
	if (r > 0)
		log_info("relay: %d peer(s): %s", r, d->ib->peers);
	for (int i = 0; i < d->relay->npeers; i++)
		peer_connect(d, i);
	return 0;
}

void mib_relay_stop(struct mockib *d)
{
	struct mib_relay *r = d->relay;

	if (!r)
		return;
	if (r->lw.fd >= 0) {
		mib_watch_del(d, &r->lw);
		close(r->lw.fd);
		r->lw.fd = -1;
	}
	while (r->conns)
		conn_close(d, r->conns, "relay stopped", false);
	free(r->peers);
	r->peers = NULL;
	r->npeers = 0;
	/* The members go with their connections; the caller rebuilds. */
	mib_members_drop_all(d);
}

void mib_relay_reap(struct mockib *d)
{
	struct mib_relay *r = d->relay;

	while (r && r->graveyard) {
		struct mib_conn *c = r->graveyard;

		r->graveyard = c->next;
		free(c->in);
		free(c->out);
		free(c);
	}
}

void mib_relay_free(struct mockib *d)
{
	mib_relay_stop(d);
	mib_relay_reap(d);
	free(d->relay);
	d->relay = NULL;
}

void mib_relay_tick(struct mockib *d, uint64_t now)
{
	struct mib_relay *r = d->relay;

	if (!r)
		return;
	for (struct mib_conn *c = r->conns, *n; c; c = n) {
		n = c->next;
		if (c->dead || c->connecting)
			continue;
		if (!c->outgoing && !c->remote[0] && now - c->since > HELLO_TIMEOUT_MS) {
			log_warn("relay: %s sent no REGISTER in %d s; closing", c->addr,
				 HELLO_TIMEOUT_MS / 1000);
			conn_close(d, c, "no REGISTER", false);
			continue;
		}
		/* One REGISTER per remote node is enough (a pair of nodes
		 * that list each other has two connections). */
		if (c->remote[0]) {
			struct mib_conn *o = r->conns;

			while (o != c && (o->dead || o->connecting || strcmp(o->remote, c->remote)))
				o = o->next;
			if (o != c)
				continue;
		}
		send_register(d, c);
	}
	mib_members_expire(d, now);
	for (int i = 0; i < r->npeers; i++)
		if (!r->peers[i].conn && !r->peers[i].self && now >= r->peers[i].next_try)
			peer_connect(d, i);
}
