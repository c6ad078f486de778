/* The TCP relay: mock-ib instances on different nodes form one fabric.
 * Each instance listens on ib.listen:tcp_port and connects to the peers in
 * ib.peers (seeds: any member will do); the member list travels from
 * member to member (mockib_gossip.c), and every member connects once to
 * every other it learns of, so MADs go straight to the owner of a CA.
 * REGISTER (the config JSON) goes out when a connection opens and again
 * only when the config changes; a member leaves the fabric when its last
 * connection closes (TCP keepalive finds a host that went silent).
 * Nothing is sent periodically but a small digest (DIGEST) to one member
 * at a time, backing off to every 16 s while views agree, so the traffic
 * of a member does not grow with the size of the fabric.  Failed dials
 * back off from 1 s to 30 s with jitter.
 *
 * Only hosts in ib.peers (hosts or networks "addr/len") may connect: a
 * connection from any other address is closed at accept, before a byte of
 * it is parsed. */
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
#include "workers/ib/mockib/mockib_relay_int.h"

#define OUT_MAX (32u << 20)
#define READ_CHUNK 65536
#define IN_MAX (MIB_RELAY_MAX + 8 + READ_CHUNK)

/* ------------------------------------------------------------------ */
/* REGISTER.                                                           */

/* Where a member's relay is: its listen address when it names one, else
 * the address its connection comes from. */
static void member_where(struct mockib *d, struct mib_conn *c, const char *node)
{
	struct mib_member *m = mib_member_find(d, node);
	const char *l;

	if (!m)
		return;
	l = m->ib->listen;
	snprintf(m->host, sizeof(m->host), "%s",
		 l[0] && strcmp(l, "0.0.0.0") && strcmp(l, "::") && strlen(l) < sizeof(m->host) ?
		 l : c->ip);
	m->port = m->ib->tcp_port;
}

/* Who is on the other end, and what it brings (mockib_member.c keeps it). */
static void on_register(struct mockib *d, struct mib_conn *c, const uint8_t *json, size_t len)
{
	char node[STATE_NAME_MAX] = "", err[256] = "";
	struct state_ib *ib;
	bool first = !c->remote[0];

	if (c->remote[0] && mib_member_refresh(d, c->remote, json, len))
		return;
	if (!(ib = malloc(sizeof(*ib))))
		return;
	if (state_ib_decode((const char *)json, len, node, ib, err, sizeof(err)) < 0 || !node[0]) {
		log_warn("relay: %s: bad REGISTER: %s; closing", c->addr,
			 err[0] ? err : "empty node_name");
		free(ib);
		mib_conn_close(d, c, "bad REGISTER", true);
		return;
	}
	if (!strcmp(node, d->node)) {
		if (c->outgoing && c->peer >= 0) {
			d->relay->peers[c->peer].self = true;
			log_info("relay: peer %s is this instance; not connecting to it", c->addr);
		}
		free(ib);
		mib_conn_close(d, c, "connected to ourselves", false);
		return;
	}
	if (c->remote[0] && strcmp(c->remote, node)) {
		log_warn("relay: %s: registered as %s, now as %s; closing", c->addr, c->remote,
			 node);
		free(ib);
		mib_conn_close(d, c, "node name changed", true);
		return;
	}
	snprintf(c->remote, sizeof(c->remote), "%s", node);
	if (mib_member_update(d, node, ib, json, len, c->addr) == 0)
		member_where(d, c, node);
	if (first)
		mib_gossip_registered(d, c);
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
			mib_conn_close(d, c, strerror(errno), true);
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len) {
		/* Idle connections hold no buffer: a member has one per member. */
		free(c->out);
		c->out = NULL;
		c->out_off = c->out_len = c->out_cap = 0;
	}
	mib_watch_mod(d, &c->w, EPOLLIN | (c->out_len ? EPOLLOUT : 0));
}

static int out_room(struct mib_conn *c, size_t need)
{
	size_t cap;
	uint8_t *n;

	if (c->out_len + need <= c->out_cap)
		return 0;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + need <= c->out_cap)
		return 0;
	for (cap = c->out_cap ? c->out_cap : 4096; cap < c->out_len + need; cap *= 2)
		;
	if (!(n = realloc(c->out, cap)))
		return -ENOMEM;
	c->out = n;
	c->out_cap = cap;
	return 0;
}

/* Queue one frame (head + up to two parts) and try to send it; frames
 * queued while connecting go out once connected. */
int mib_conn_send(struct mockib *d, struct mib_conn *c, uint8_t type, const void *a, size_t alen,
		  const void *b, size_t blen)
{
	struct mib_relay *r = d->relay;
	uint8_t head[5];
	size_t need;

	if (c->dead)
		return -ENOTCONN;
	if (mib_relay_head(head, type, alen + blen) < 0)
		return -EMSGSIZE;
	need = sizeof(head) + alen + blen;
	if (c->out_len - c->out_off + need > OUT_MAX) {
		if (!c->dropped++ || !(c->dropped % 1000))
			log_warn("relay: %s (%s): output backlog over %u MiB; dropped a frame "
				 "(%llu so far)", c->addr, c->remote, OUT_MAX >> 20,
				 (unsigned long long)c->dropped);
		return -ENOBUFS;
	}
	if (out_room(c, need) < 0)
		return -ENOMEM;
	memcpy(c->out + c->out_len, head, sizeof(head));
	if (alen)
		memcpy(c->out + c->out_len + sizeof(head), a, alen);
	if (blen)
		memcpy(c->out + c->out_len + sizeof(head) + alen, b, blen);
	c->out_len += need;
	r->all_out++;
	r->all_out_bytes += need;
	if (type == MIB_RELAY_REGISTER || type == MIB_RELAY_MEMBERS || type == MIB_RELAY_DIGEST) {
		r->ctl_out++;
		r->ctl_out_bytes += need;
	}
	if (!c->connecting)
		conn_flush(d, c);
	return 0;
}

void mib_conn_register(struct mockib *d, struct mib_conn *c)
{
	if (d->reg_json)
		mib_conn_send(d, c, MIB_RELAY_REGISTER, d->reg_json, d->reg_len, NULL, 0);
}

void mib_relay_announce(struct mockib *d)
{
	if (!d->relay)
		return;
	d->relay->self_version++;
	for (struct mib_conn *c = d->relay->conns; c; c = c->next)
		if (!c->dead && c->remote[0])
			mib_conn_register(d, c);
	mib_gossip_announce_self(d);
	mib_relay_members_changed(d);
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
			return mib_conn_send(d, c, (uint8_t)kind, hdr, sizeof(hdr), mad, len);
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
	struct mib_relay *r = d->relay;

	r->all_in++;
	r->all_in_bytes += len + 5;
	if (type == MIB_RELAY_REGISTER || type == MIB_RELAY_MEMBERS || type == MIB_RELAY_DIGEST) {
		r->ctl_in++;
		r->ctl_in_bytes += len + 5;
	}
	if (type == MIB_RELAY_REGISTER) {
		on_register(d, c, p, len);
		return;
	}
	if (type < MIB_RELAY_ANSWER || type > MIB_RELAY_DIGEST) {
		log_debug("relay: %s: unknown frame type %u; ignored", c->addr, type);
		return;
	}
	if (!c->remote[0]) {
		log_warn("relay: %s: %s before REGISTER; dropped", c->addr,
			 type <= MIB_RELAY_REPLY ? "MAD" : "member list");
		return;
	}
	if (type <= MIB_RELAY_REPLY)
		on_mad(d, c, type, p, len);
	else
		mib_gossip_frame(d, c, type, p, len);
}

/* Every whole frame in buf; returns the bytes used, -1 when c closed. */
static long parse_frames(struct mockib *d, struct mib_conn *c, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	for (;;) {
		uint8_t type;
		const uint8_t *p;
		size_t plen;
		long used = mib_relay_parse(buf + off, len - off, &type, &p, &plen);

		if (used < 0) {
			log_warn("relay: %s: frame length 0 or over %u bytes; closing", c->addr,
				 MIB_RELAY_MAX);
			mib_conn_close(d, c, "bad framing", true);
			return -1;
		}
		if (used == 0)
			return (long)off;
		on_frame(d, c, type, p, plen);
		if (c->dead)
			return -1;
		off += (size_t)used;
	}
}

/* Frames are parsed where they land; only a partial frame is kept, in a
 * buffer sized for it (freed once empty). */
static void conn_read(struct mockib *d, struct mib_conn *c)
{
	static uint8_t chunk[READ_CHUNK];

	for (;;) {
		ssize_t n = recv(c->w.fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		const uint8_t *buf = chunk;
		size_t len;
		long used;

		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				mib_conn_close(d, c, strerror(errno), true);
			return;
		}
		if (n == 0) {
			mib_conn_close(d, c, "closed by the peer", true);
			return;
		}
		len = (size_t)n;
		if (c->in_len) {
			if (c->in_len + len > c->in_cap) {
				size_t cap = c->in_cap ? c->in_cap : 4096;
				uint8_t *b;

				while (cap < c->in_len + len)
					cap *= 2;
				if (cap > IN_MAX)
					cap = c->in_len + len;
				if (cap > IN_MAX || !(b = realloc(c->in, cap))) {
					mib_conn_close(d, c, "input buffer", true);
					return;
				}
				c->in = b;
				c->in_cap = cap;
			}
			memcpy(c->in + c->in_len, chunk, len);
			c->in_len += len;
			buf = c->in;
			len = c->in_len;
		}
		if ((used = parse_frames(d, c, buf, len)) < 0)
			return;
		len -= (size_t)used;
		if (!len) {
			free(c->in);
			c->in = NULL;
			c->in_len = c->in_cap = 0;
		} else if (buf == c->in) {
			memmove(c->in, c->in + used, len);
			c->in_len = len;
		} else {
			uint8_t *b = malloc(len > 4096 ? len : 4096);

			if (!b) {
				mib_conn_close(d, c, "input buffer", true);
				return;
			}
			memcpy(b, chunk + used, len);
			c->in = b;
			c->in_len = len;
			c->in_cap = len > 4096 ? len : 4096;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Connections.                                                        */

void mib_conn_close(struct mockib *d, struct mib_conn *c, const char *why, bool leave)
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
		struct mib_peer *p = &r->peers[c->peer];

		p->conn = NULL;
		if (!c->remote[0])
			p->fails++;
		p->next_try = mib_now_ms() + mib_backoff(p->fails);
	}
	if (c->dial[0] && !c->remote[0])
		mib_gossip_dial_failed(d, c);
	if (c->remote[0] || !c->connecting)
		log_info("relay: connection %s%s%s closed: %s", c->addr, c->remote[0] ? " to " : "",
			 c->remote, why);
	if (!leave || !c->remote[0])
		return;
	for (struct mib_conn *o = r->conns; o; o = o->next)
		if (!o->dead && !strcmp(o->remote, c->remote))
			return;		/* still reachable another way */
	mib_gossip_lost(d, c->remote);
	mib_member_leave(d, c->remote, "its connection closed");
}

int mib_sock_port(int fd, int (*get)(int, struct sockaddr *, socklen_t *))
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (get(fd, (struct sockaddr *)&ss, &l) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
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
			struct mib_peer *p = c->peer >= 0 ? &d->relay->peers[c->peer] : NULL;

			if (p && !p->warned)
				log_info("relay: connect to %s: %s; retrying with backoff", c->addr,
					 strerror(err));
			if (p)
				p->warned = true;
			mib_conn_close(d, c, strerror(err), false);
			return;
		}
		c->connecting = false;
		c->dialer_port = mib_sock_port(c->w.fd, getsockname);
		if (c->peer >= 0)
			d->relay->peers[c->peer].warned = false;
		log_debug("relay: connected to %s", c->addr);
		conn_flush(d, c);	/* the REGISTER queued at dial */
		return;
	}
	if (events & EPOLLOUT)
		conn_flush(d, c);
	if (!c->dead && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		conn_read(d, c);
}

struct mib_conn *mib_conn_new(struct mockib *d, int fd, const char *addr, const char *ip)
{
	struct mib_conn *c = calloc(1, sizeof(*c));
	int one = 1, idle = 5, intvl = 2, cnt = 3;
	unsigned tmo = 15000;

	if (!c)
		return NULL;
	c->w.fd = fd;
	c->w.cb = on_conn;
	c->peer = -1;
	c->since = mib_now_ms();
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	snprintf(c->ip, sizeof(c->ip), "%s", ip);
	/* MADs are small and latency-bound.  Nothing is sent while a fabric
	 * is quiet, so the kernel's keepalive finds a member that vanished
	 * without a FIN (about 11 s), and unacknowledged data gives up in 15. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &tmo, sizeof(tmo));
	c->next = d->relay->conns;
	d->relay->conns = c;
	return c;
}

struct mib_conn *mib_conn_dial(struct mockib *d, const char *host, int port, bool quiet)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char serv[16], addr[128], ip[NI_MAXHOST];
	struct mib_conn *c;
	int fd, r;

	snprintf(serv, sizeof(serv), "%d", port);
	snprintf(addr, sizeof(addr), "%s:%d", host, port);
	if ((r = getaddrinfo(host, serv, &hints, &res)) != 0) {
		if (!quiet)
			log_info("relay: peer %s: %s; retrying with backoff", addr, gai_strerror(r));
		return NULL;
	}
	if (getnameinfo(res->ai_addr, res->ai_addrlen, ip, sizeof(ip), NULL, 0, NI_NUMERICHOST))
		snprintf(ip, sizeof(ip), "%s", host);
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("relay: socket for %s: %s", addr, strerror(errno));
		freeaddrinfo(res);
		return NULL;
	}
	r = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (r < 0 && errno != EINPROGRESS) {
		if (!quiet)
			log_info("relay: connect to %s: %s; retrying with backoff", addr,
				 strerror(errno));
		close(fd);
		return NULL;
	}
	if (!(c = mib_conn_new(d, fd, addr, ip))) {
		close(fd);
		return NULL;
	}
	c->outgoing = true;
	c->connecting = true;
	if (mib_watch_add(d, &c->w, EPOLLOUT) < 0) {
		mib_conn_close(d, c, "epoll", false);
		return NULL;
	}
	mib_conn_register(d, c);	/* queued until connected */
	return c;
}

