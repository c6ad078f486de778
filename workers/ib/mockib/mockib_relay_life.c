/* The relay's lifecycle: its listener (accepting hosts of ib.peers
 * only), the seeds of ib.peers (dialed with backoff), the 1 s tick, the
 * traffic counters (SIGUSR1). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib_relay_int.h"

#define HELLO_TIMEOUT_MS 30000		/* an accepted socket must REGISTER */
#define BACKOFF_MAX_MS 30000
#define CONNECT_TIMEOUT_MS 15000	/* then the dial backs off and retries */

uint64_t mib_jitter(uint64_t ms)
{
	return ms / 2 + (uint64_t)random() % (ms ? ms : 1);
}

uint64_t mib_backoff(int fails)
{
	uint64_t ms = 1000;

	while (fails-- > 0 && ms < BACKOFF_MAX_MS)
		ms *= 2;
	return mib_jitter(ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS);
}

static void peer_connect(struct mockib *d, int i)
{
	struct mib_peer *p = &d->relay->peers[i];
	struct mib_conn *c = mib_conn_dial(d, p->host, p->port, p->warned);

	if (!c) {
		p->warned = true;
		p->next_try = mib_now_ms() + mib_backoff(++p->fails);
		return;
	}
	c->peer = i;
	p->conn = c;
}

static void on_accept(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	static uint64_t refused;

	for (int i = 0; i < 64; i++) {
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
		if (!(c = mib_conn_new(d, fd, addr, host))) {
			close(fd);
			continue;
		}
		c->dialer_port = mib_sock_port(fd, getpeername);
		if (mib_watch_add(d, &c->w, EPOLLIN) < 0) {
			mib_conn_close(d, c, "epoll", false);
			continue;
		}
		log_debug("relay: accepted %s", addr);
		mib_conn_register(d, c);
	}
}

/* ------------------------------------------------------------------ */
/* Lifecycle.                                                          */

static int add_peer(void *arg, const char *host, int port)
{
	struct mib_relay *r = arg;
	struct mib_peer *n;

	if (!port)
		return 0;		/* a network: accepted, never dialed */
	if (!(n = realloc(r->peers, (size_t)(r->npeers + 1) * sizeof(*n))))
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
	/* Every member of a starting fabric may dial at once: a deep backlog. */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
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
		d->relay->started = mib_now_ms();
		/* A restarted member is a new incarnation: a later version. */
		d->relay->self_version = (uint64_t)time(NULL) << 20;
		srandom((unsigned)(getpid() ^ d->relay->started));
	}
	d->relay->digest_period = 1000;
	d->relay->digest_due = mib_now_ms() + mib_jitter(1000);
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
		mib_conn_close(d, r->conns, "relay stopped", false);
	free(r->peers);
	r->peers = NULL;
	r->npeers = 0;
	mib_gossip_free(d);
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

void mib_relay_counters(struct mockib *d)
{
	struct mib_relay *r = d->relay;
	int n = 0;

	if (!r)
		return;
	for (struct mib_conn *c = r->conns; c; c = c->next)
		n += !c->dead && c->remote[0];
	log_info("relay: counters: %llu ms up, %d member(s), %d connection(s); control out %llu "
		 "frames %llu bytes, in %llu frames %llu bytes; all out %llu frames %llu bytes, "
		 "in %llu frames %llu bytes", (unsigned long long)(mib_now_ms() - r->started),
		 d->fab_nmembers, n, (unsigned long long)r->ctl_out,
		 (unsigned long long)r->ctl_out_bytes, (unsigned long long)r->ctl_in,
		 (unsigned long long)r->ctl_in_bytes, (unsigned long long)r->all_out,
		 (unsigned long long)r->all_out_bytes, (unsigned long long)r->all_in,
		 (unsigned long long)r->all_in_bytes);
}

void mib_relay_tick(struct mockib *d, uint64_t now)
{
	struct mib_relay *r = d->relay;

	if (!r)
		return;
	for (struct mib_conn *c = r->conns, *n; c; c = n) {
		n = c->next;
		if (c->connecting && now - c->since > CONNECT_TIMEOUT_MS) {
			mib_conn_close(d, c, "connect timed out", false);
			continue;
		}
		if (!c->dead && !c->connecting && !c->outgoing && !c->remote[0] &&
		    now - c->since > HELLO_TIMEOUT_MS) {
			log_warn("relay: %s sent no REGISTER in %d s; closing", c->addr,
				 HELLO_TIMEOUT_MS / 1000);
			mib_conn_close(d, c, "no REGISTER", false);
		}
	}
	for (int i = 0; i < r->npeers; i++) {
		struct mib_peer *p = &r->peers[i];
		bool linked = false;

		if (p->conn || p->self || now < p->next_try)
			continue;
		/* A seed already linked the other way needs no second link. */
		for (struct mib_conn *c = r->conns; c && p->remote[0] && !linked; c = c->next)
			linked = !c->dead && !strcmp(c->remote, p->remote);
		if (!linked)
			peer_connect(d, i);
	}
	mib_gossip_tick(d, now);
}
