/* Membership by gossip: how the members of a fabric find each other
 * without a full-mesh peers list or periodic REGISTERs.
 *   - A new connection: each side sends its own entry (version, port); a
 *     member that has never had a list asks its first seed for the whole
 *     one and dials every member in it (they accept it: ib.peers names the
 *     network).
 *   - Anti-entropy: now and then (1 s after a change, backing off to 16 s,
 *     jittered) a member sends one random member a DIGEST (count and a hash
 *     of every name and version); a mismatch makes both send their whole
 *     lists, and each dials the members it did not know, after a while
 *     (4 s for the lower name, 8 s for the other, jittered: the member may
 *     be a newcomer dialing us): one connection per pair, not two.
 *   - Two connections between a pair anyway: the one dialed by the lower
 *     name stays, on both sides (both dialed by one: the one from its
 *     lower port).
 *   - Dials that fail back off (1 s doubling to 30 s); a member heard of
 *     but never reached is forgotten after 5 failures.  Only addresses
 *     inside ib.peers (hosts, networks) are dialed, at most 4096 pending.
 * A member's cost is one connection per member and a digest every few
 * seconds: it does not grow with the square of the fabric. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib_relay_int.h"

#define PERIOD_MIN_MS 1000
#define PERIOD_MAX_MS 16000
#define LOWER_WAITS_MS 4000		/* a member learned of by gossip: the */
#define HIGHER_WAITS_MS 8000		/* lower name dials first */
#define KNOWN_TRIES 5
#define DIALING_MS 60000		/* a dial in flight: its close decides */

static struct mib_known *known_find(struct mib_relay *r, const char *node)
{
	for (struct mib_known *k = r->known; k; k = k->next)
		if (!strcmp(k->e.node, node))
			return k;
	return NULL;
}

static void known_drop(struct mib_relay *r, const char *node)
{
	for (struct mib_known **pp = &r->known; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->e.node, node)) {
			struct mib_known *k = *pp;

			*pp = k->next;
			free(k);
			return;
		}
}

/* A connection (up or dialing) to node, other than but. */
static struct mib_conn *linked(struct mib_relay *r, const char *node, struct mib_conn *but)
{
	for (struct mib_conn *c = r->conns; c; c = c->next)
		if (c != but && !c->dead && (!strcmp(c->remote, node) || !strcmp(c->dial, node)))
			return c;
	return NULL;
}

static uint64_t view_hash(struct mockib *d, uint32_t *count)
{
	uint64_t h = mib_digest_term(d->node, d->relay->self_version);

	*count = 1;
	for (struct mib_member *m = d->members; m; m = m->next, (*count)++)
		h += mib_digest_term(m->node, m->version);
	return h;
}

static void self_entry(struct mockib *d, struct mib_gossip_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->version = d->relay->self_version;
	e->port = d->ib->tcp_port;
	snprintf(e->node, sizeof(e->node), "%s", d->node);
}

/* MEMBERS: this member alone, or with every member it is linked to. */
static void send_list(struct mockib *d, struct mib_conn *c, uint8_t flags, bool whole)
{
	struct mib_gossip_entry e;
	size_t cap = 3 + sizeof(e), off = 3;
	unsigned n = 1;
	uint8_t *buf;

	for (struct mib_member *m = d->members; m && whole; m = m->next)
		cap += sizeof(e);
	if (!(buf = malloc(cap)))
		return;
	self_entry(d, &e);
	mib_members_put(buf, cap, &off, &e);
	for (struct mib_member *m = d->members; m && whole && n < MIB_GOSSIP_MAX; m = m->next) {
		memset(&e, 0, sizeof(e));
		e.version = m->version;
		e.port = m->port;
		snprintf(e.host, sizeof(e.host), "%s", m->host);
		snprintf(e.node, sizeof(e.node), "%s", m->node);
		if (m->host[0] && mib_members_put(buf, cap, &off, &e) == 0)
			n++;
	}
	mib_members_head(buf, (uint8_t)(flags | (whole ? MIB_GOSSIP_WHOLE : 0)), n);
	mib_conn_send(d, c, MIB_RELAY_MEMBERS, buf, off, NULL, 0);
	free(buf);
}

void mib_gossip_registered(struct mockib *d, struct mib_conn *c)
{
	struct mib_relay *r = d->relay;
	struct mib_conn *o;

	if (c->peer >= 0 && c->peer < r->npeers) {
		snprintf(r->peers[c->peer].remote, sizeof(r->peers[c->peer].remote), "%s",
			 c->remote);
		r->peers[c->peer].fails = 0;
	}
	known_drop(r, c->remote);
	for (o = r->conns; o; o = o->next)
		if (o != c && !o->dead && !strcmp(o->remote, c->remote))
			break;
	if (o) {
		/* Both ends keep the connection the lower name dialed. */
		const char *dc = c->outgoing ? d->node : c->remote;
		const char *dox = o->outgoing ? d->node : o->remote;
		const char *low = strcmp(d->node, c->remote) < 0 ? d->node : c->remote;

		/* Both dialed by one end: the lower port of that end stays. */
		if (!strcmp(dc, dox) ? c->dialer_port > o->dialer_port : strcmp(dc, low) != 0) {
			mib_conn_close(d, c, "a second connection to the same member", false);
			return;
		}
		mib_conn_close(d, o, "a second connection to the same member", false);
	}
	send_list(d, c, c->outgoing && c->peer >= 0 && !r->have_list ? MIB_GOSSIP_WANT_LIST : 0,
		  false);
}

/* Only members inside ib.peers (a listed host or network) are dialed, as
 * only they may connect: a list cannot point the relay anywhere else. */
static bool may_dial(struct mockib *d, const char *host)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *res = NULL;
	bool ok;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return false;
	ok = mib_relay_addr_is_peer(d->ib->peers, res->ai_addr);
	freeaddrinfo(res);
	return ok;
}

static int known_count(struct mib_relay *r)
{
	int n = 0;

	for (struct mib_known *k = r->known; k; k = k->next)
		n++;
	return n;
}

struct learn_ctx {
	struct mockib *d;
	struct mib_conn *c;
	uint64_t now;
	bool newcomer;			/* our first whole list: dial everyone */
};

static int learn(void *arg, const struct mib_gossip_entry *e)
{
	struct learn_ctx *x = arg;
	struct mib_relay *r = x->d->relay;
	struct mib_known *k;

	if (!strcmp(e->node, x->d->node))
		return 0;
	if (!strcmp(e->node, x->c->remote)) {
		struct mib_member *m = mib_member_find(x->d, e->node);

		if (m && m->version != e->version) {
			m->version = e->version;
			mib_relay_members_changed(x->d);
		}
		return 0;
	}
	if (!e->host[0] || (linked(r, e->node, NULL) && !linked(r, e->node, NULL)->dial[0])) {
		log_debug("relay: %s lists %s (%s): linked or no address", x->c->remote, e->node,
			  e->host);
		return 0;
	}
	if ((k = known_find(r, e->node))) {
		if (e->version > k->e.version) {
			k->e = *e;
			k->fails = 0;
		}
		return 0;
	}
	if (!may_dial(x->d, e->host)) {
		log_debug("relay: %s lists %s at %s, outside ib.peers; not dialed", x->c->remote,
			  e->node, e->host);
		return 0;
	}
	if (known_count(r) >= MIB_GOSSIP_MAX || !(k = calloc(1, sizeof(*k))))
		return 0;
	k->e = *e;
	/* A newcomer dials everyone in its first list; every other member
	 * learned of by gossip is most likely a newcomer dialing us right now:
	 * give it time (the lower name less), so that most pairs get one link. */
	k->next_try = x->now;
	if (!x->newcomer)
		k->next_try += mib_jitter(strcmp(x->d->node, e->node) < 0 ? LOWER_WAITS_MS :
					  HIGHER_WAITS_MS);
	k->next = r->known;
	r->known = k;
	return 0;
}

static void dial_due(struct mockib *d, uint64_t now)
{
	struct mib_relay *r = d->relay;

	for (struct mib_known *k = r->known, *n; k; k = n) {
		struct mib_conn *c;

		n = k->next;
		if (now < k->next_try)
			continue;
		if (linked(r, k->e.node, NULL)) {
			k->next_try = now + DIALING_MS;
			continue;
		}
		log_debug("relay: dialing member %s at %s:%d", k->e.node, k->e.host, k->e.port);
		if ((c = mib_conn_dial(d, k->e.host, k->e.port, true))) {
			snprintf(c->dial, sizeof(c->dial), "%s", k->e.node);
			k->next_try = now + DIALING_MS;
		} else if (++k->fails >= KNOWN_TRIES) {
			known_drop(r, k->e.node);
		} else {
			k->next_try = now + mib_backoff(k->fails);
		}
	}
}

static void on_members(struct mockib *d, struct mib_conn *c, const uint8_t *p, size_t len)
{
	struct mib_relay *r = d->relay;
	struct learn_ctx x = { d, c, mib_now_ms(), false };
	uint8_t flags;
	int n;

	/* Peek at the flags: the first whole list a member gets is its
	 * introduction to the fabric. */
	x.newcomer = len && (p[0] & MIB_GOSSIP_WHOLE) && !r->have_list;
	if ((n = mib_members_parse(p, len, &flags, learn, &x)) < 0) {
		log_warn("relay: %s: malformed member list (%zu bytes); dropped", c->addr, len);
		return;
	}
	if (flags & MIB_GOSSIP_WHOLE) {
		if (!r->have_list)
			log_info("relay: %s listed %d member(s)", c->remote, n);
		r->have_list = true;
	}
	if (flags & MIB_GOSSIP_WANT_LIST)
		send_list(d, c, 0, true);
	dial_due(d, x.now);
}

static void on_digest(struct mockib *d, struct mib_conn *c, const uint8_t *p, size_t len)
{
	uint32_t count, mine_n;
	uint64_t hash;

	if (mib_digest_parse(p, len, &count, &hash) < 0) {
		log_warn("relay: %s: malformed digest (%zu bytes); dropped", c->addr, len);
		return;
	}
	if (view_hash(d, &mine_n) != hash || mine_n != count) {
		log_debug("relay: %s sees %u member(s), we see %u: exchanging lists", c->remote,
			  count, mine_n);
		send_list(d, c, MIB_GOSSIP_WANT_LIST, true);
	}
}

void mib_gossip_frame(struct mockib *d, struct mib_conn *c, uint8_t type, const uint8_t *p,
		      size_t len)
{
	if (type == MIB_RELAY_MEMBERS)
		on_members(d, c, p, len);
	else
		on_digest(d, c, p, len);
}

void mib_gossip_dial_failed(struct mockib *d, struct mib_conn *c)
{
	struct mib_known *k = known_find(d->relay, c->dial);

	if (!k)
		return;
	if (++k->fails >= KNOWN_TRIES) {
		log_debug("relay: member %s at %s unreachable %d times; forgotten", k->e.node,
			  c->addr, KNOWN_TRIES);
		known_drop(d->relay, c->dial);
		return;
	}
	k->next_try = mib_now_ms() + mib_backoff(k->fails);
}

void mib_gossip_tick(struct mockib *d, uint64_t now)
{
	struct mib_relay *r = d->relay;
	struct mib_conn *pick = NULL;
	int seen = 0;

	if (now >= r->digest_due) {
		/* One member at random (reservoir sampling over the links). */
		for (struct mib_conn *c = r->conns; c; c = c->next)
			if (!c->dead && c->remote[0] && random() % ++seen == 0)
				pick = c;
		if (pick) {
			uint8_t buf[MIB_DIGEST_LEN];
			uint32_t n;
			uint64_t h = view_hash(d, &n);

			mib_digest_put(buf, n, h);
			mib_conn_send(d, pick, MIB_RELAY_DIGEST, buf, sizeof(buf), NULL, 0);
		}
		r->digest_due = now + mib_jitter(r->digest_period);
		if (r->digest_period < PERIOD_MAX_MS)
			r->digest_period *= 2;
	}
	dial_due(d, now);
}

void mib_relay_members_changed(struct mockib *d)
{
	struct mib_relay *r = d->relay;
	uint64_t now = mib_now_ms();

	if (!r)
		return;
	r->digest_period = PERIOD_MIN_MS;
	if (r->digest_due > now + PERIOD_MIN_MS)
		r->digest_due = now + mib_jitter(PERIOD_MIN_MS);
}

/* Our config changed (a reload): every member hears our new version. */
void mib_gossip_announce_self(struct mockib *d)
{
	for (struct mib_conn *c = d->relay->conns; c; c = c->next)
		if (!c->dead && c->remote[0])
			send_list(d, c, 0, false);
}

/* A member whose last connection closed is dialed again (it may be a
 * broken link, not a dead member) until it proves unreachable. */
void mib_gossip_lost(struct mockib *d, const char *node)
{
	struct mib_member *m = mib_member_find(d, node);
	struct mib_known *k;

	if (!m || !m->host[0] || known_find(d->relay, node) || !(k = calloc(1, sizeof(*k))))
		return;
	k->e.version = m->version;
	k->e.port = m->port;
	snprintf(k->e.host, sizeof(k->e.host), "%s", m->host);
	snprintf(k->e.node, sizeof(k->e.node), "%s", m->node);
	k->fails = 1;
	k->next_try = mib_now_ms() + mib_backoff(0);
	k->next = d->relay->known;
	d->relay->known = k;
}

void mib_gossip_free(struct mockib *d)
{
	while (d->relay->known) {
		struct mib_known *k = d->relay->known;

		d->relay->known = k->next;
		free(k);
	}
	d->relay->have_list = false;
}
