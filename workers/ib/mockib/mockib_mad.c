/* MAD dispatch with the umad char device's semantics (IB.md §2.2):
 *   - every sent MAD goes through the engine (mad_process);
 *   - answers come back to the sending agent, with its agent_id and TID;
 *   - unsolicited requests go to the agent registered for their class,
 *     version, method and (vendor range 2) OUI, or, with nobody there, a
 *     Get/Set gets the kernel's "unsupported method/attribute" response;
 *   - a request sent with timeout_ms > 0 that gets no response returns
 *     after timeout_ms * (retries + 1) with status ETIMEDOUT (110),
 *     carrying the original MAD. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_relay.h"

#define STATUS_UNSUP_METHOD_ATTR 0x000c	/* IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB */
#define CLASS_SMI_DR 0x81
#define MAX_TIMEOUT_MS (3600u * 1000u)

/* ------------------------------------------------------------------ */
/* Pending requests (sorted by deadline).                              */

uint64_t mib_pending_next(const struct mockib *d)
{
	return d->pending ? d->pending->deadline : 0;
}

static void pending_insert(struct mockib *d, struct mib_pending *p)
{
	struct mib_pending **pp = &d->pending;

	while (*pp && (*pp)->deadline <= p->deadline)
		pp = &(*pp)->next;
	p->next = *pp;
	*pp = p;
	d->npending++;
	p->s->npending++;
}

static void pending_unlink(struct mockib *d, struct mib_pending **pp)
{
	struct mib_pending *p = *pp;

	*pp = p->next;
	d->npending--;
	p->s->npending--;
}

static struct mib_pending *pending_add(struct mib_session *s, const struct mib_uhdr *h,
				       const uint8_t *frame, size_t len, uint64_t ca_guid,
				       uint64_t req_id)
{
	struct mockib *d = s->d;
	const uint8_t *mad = frame + s->hdr_len;
	uint64_t t = (uint64_t)(h->timeout_ms > MAX_TIMEOUT_MS ? MAX_TIMEOUT_MS : h->timeout_ms) *
		     ((uint64_t)(h->retries > 100 ? 100 : h->retries) + 1);
	struct mib_pending *p;

	if (d->npending >= MIB_MAX_PENDING || s->npending >= MIB_PENDING_PER_SESSION) {
		log_warn("session %llu (pid %u): %d requests outstanding; not tracking another "
			 "(it will never complete)", (unsigned long long)s->id, s->pid,
			 s->npending);
		return NULL;
	}
	if (!(p = calloc(1, sizeof(*p) + len)))
		return NULL;
	p->s = s;
	p->agent_id = h->agent_id;
	p->ca_guid = ca_guid;
	p->tid = mib_mad_tid(mad);
	p->mgmt_class = mib_mad_class(mad);
	p->req_id = req_id;
	p->deadline = mib_now_ms() + t;
	p->len = len;
	memcpy(p->frame, frame, len);
	pending_insert(d, p);
	return p;
}

/* A response matches the request its target CA sent with the same TID:
 * all 64 bits when they agree, else the low 32 bits libibmad matches on
 * (the kernel rewrites the high half with its agent's id). */
static struct mib_pending *pending_take_tid(struct mockib *d, uint64_t ca_guid, uint64_t tid,
					    uint8_t mgmt_class)
{
	struct mib_pending **best = NULL;

	for (struct mib_pending **pp = &d->pending; *pp; pp = &(*pp)->next) {
		struct mib_pending *p = *pp;

		if (p->ca_guid != ca_guid || p->mgmt_class != mgmt_class ||
		    (uint32_t)p->tid != (uint32_t)tid)
			continue;
		if (p->tid == tid) {
			best = pp;
			break;
		}
		if (!best)
			best = pp;
	}
	if (best) {
		struct mib_pending *p = *best;

		pending_unlink(d, best);
		return p;
	}
	return NULL;
}

static struct mib_pending *pending_take_req(struct mockib *d, uint64_t req_id)
{
	for (struct mib_pending **pp = &d->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->req_id == req_id) {
			struct mib_pending *p = *pp;

			pending_unlink(d, pp);
			return p;
		}
	return NULL;
}

void mib_pending_drop_session(struct mockib *d, struct mib_session *s)
{
	struct mib_pending **pp = &d->pending;

	while (*pp) {
		if ((*pp)->s == s) {
			struct mib_pending *p = *pp;

			pending_unlink(d, pp);
			free(p);
		} else {
			pp = &(*pp)->next;
		}
	}
}

void mib_pending_expire(struct mockib *d, uint64_t now)
{
	while (d->pending && d->pending->deadline <= now) {
		struct mib_pending *p = d->pending;
		struct mib_uhdr h;
		size_t hl = p->s->hdr_len;

		pending_unlink(d, &d->pending);
		d->timeouts++;
		if (p->len >= hl && mib_uhdr_parse(p->frame, p->len, hl, &h) == 0) {
			h.status = ETIMEDOUT;
			h.length = (uint32_t)p->len;
			mib_uhdr_build(p->frame, hl, &h);
			log_debug("session %llu: request TID 0x%016llx class 0x%02x timed out",
				  (unsigned long long)p->s->id, (unsigned long long)p->tid,
				  p->mgmt_class);
			mib_session_send(p->s, p->frame, p->len);
		}
		free(p);
	}
}

/* ------------------------------------------------------------------ */
/* Receive frames.                                                     */

static void send_recv(struct mib_session *s, uint32_t agent_id, const uint8_t *mad, size_t len,
		      uint32_t slid, uint32_t qpn)
{
	size_t hl = s->hdr_len;
	struct mib_uhdr h = { .agent_id = agent_id, .length = (uint32_t)(hl + len),
			      .qpn = qpn, .lid = (uint16_t)slid };
	uint8_t *f = malloc(hl + len);

	if (!f) {
		log_warn("session %llu: out of memory for a %zu-byte receive; dropped",
			 (unsigned long long)s->id, len);
		return;
	}
	mib_uhdr_build(f, hl, &h);
	memcpy(f + hl, mad, len);
	s->d->mads_out++;
	mib_session_send(s, f, hl + len);
	free(f);
}

/* mad holds len >= MIB_MAD_HDR bytes; the OUI is read only when present. */
static bool agent_wants(const struct mib_agent *a, const uint8_t *mad, size_t len)
{
	uint8_t cls = mib_mad_class(mad), m = mib_mad_method(mad) & 0x7f;

	if (!a->used || !mib_mad_fits(mad, len) || !a->reg.mgmt_class || a->reg.mgmt_class != cls ||
	    a->reg.mgmt_class_version != mib_mad_version(mad) ||
	    !(a->reg.method_mask[m / 32] & (1u << (m % 32))))
		return false;
	return !mib_class_has_oui(cls) || memcmp(a->reg.oui, mad + 37, 3) == 0;
}

/* The server agent for an unsolicited request on local CA ca. */
static struct mib_session *find_agent(struct mockib *d, int ca, const uint8_t *mad,
				      size_t len, uint32_t *agent_id)
{
	for (struct mib_session *s = d->sessions; s; s = s->next) {
		if (s->dead || s->kind != MOCKIB_KIND_UMAD || mib_session_ca(s) != ca)
			continue;
		for (uint32_t i = 0; i < MIB_MAX_AGENTS; i++)
			if (agent_wants(&s->agents[i], mad, len)) {
				*agent_id = i;
				return s;
			}
	}
	return NULL;
}

/* Send a MAD to CA dst wherever it lives (for DELIVER). */
static void route_deliver(struct mockib *d, int dst, const uint8_t *mad, size_t len,
			  uint32_t slid, uint32_t src_qpn, uint64_t src_guid)
{
	const struct ib_fab_ca *c = &d->fab.cas[dst];

	if (c->local) {
		mib_mad_deliver(d, dst, mad, len, slid, src_qpn, src_guid);
		return;
	}
	if (mib_relay_send_mad(d, mib_ca_owner(d, dst), MIB_RELAY_DELIVER, 0, src_guid, slid,
			       src_qpn, c->hca->port_guid, 0, mad, len) < 0)
		log_debug("deliver to %s (%s): no route; dropped", c->hca->name,
			  mib_ca_owner(d, dst));
}

/* What the kernel answers a Get/Set nobody registered for. */
static void unmatched_response(struct mockib *d, int ca, const uint8_t *mad, size_t len,
			       uint64_t src_guid)
{
	uint8_t m = mib_mad_method(mad), *r;
	int src = ib_fabric_ca_by_guid(&d->fab, src_guid);
	const struct ib_fab_ca *c = &d->fab.cas[ca];

	if ((m != 0x01 && m != 0x02) || src < 0)
		return;
	if (!(r = malloc(len)))
		return;
	memcpy(r, mad, len);
	r[3] = 0x81;
	r[4] = (uint8_t)(STATUS_UNSUP_METHOD_ATTR >> 8) |
	       (mib_mad_class(mad) == CLASS_SMI_DR ? 0x80 : 0);
	r[5] = (uint8_t)STATUS_UNSUP_METHOD_ATTR;
	log_debug("%s: no agent for class 0x%02x method 0x%02x; answering 'unsupported'",
		  c->hca->name, mib_mad_class(mad), m);
	route_deliver(d, src, r, len, c->hca->lid, 1, c->hca->port_guid);
	free(r);
}

void mib_mad_deliver(struct mockib *d, int ca, const uint8_t *mad, size_t len, uint32_t slid,
		     uint32_t src_qpn, uint64_t src_guid)
{
	const struct ib_fab_ca *c;

	if (!d->fab_ok || ca < 0 || ca >= d->fab.ncas || !mib_mad_fits(mad, len))
		return;
	c = &d->fab.cas[ca];
	if (!mib_method_is_response(mib_mad_method(mad))) {
		uint32_t agent;
		struct mib_session *s = find_agent(d, ca, mad, len, &agent);

		if (s)
			send_recv(s, agent, mad, len, slid, src_qpn);
		else
			unmatched_response(d, ca, mad, len, src_guid);
		return;
	}
	struct mib_pending *p = pending_take_tid(d, c->hca->port_guid, mib_mad_tid(mad),
						 mib_mad_class(mad));
	if (!p) {
		log_debug("%s: response TID 0x%016llx matches no request; dropped", c->hca->name,
			  (unsigned long long)mib_mad_tid(mad));
		return;
	}
	send_recv(p->s, p->agent_id, mad, len, slid, src_qpn);
	free(p);
}

void mib_mad_relay_reply(struct mockib *d, uint64_t req_id, const uint8_t *mad, size_t len,
			 uint32_t slid, uint32_t qpn)
{
	struct mib_pending *p = mib_mad_fits(mad, len) ? pending_take_req(d, req_id) : NULL;

	if (!p) {
		log_debug("relay: reply for request %llu which is gone (timed out?)",
			  (unsigned long long)req_id);
		return;
	}
	send_recv(p->s, p->agent_id, mad, len, slid, qpn);
	free(p);
}

void mib_mad_answer_remote(struct mockib *d, const char *origin, uint64_t req_id, int ca,
			   int ingress_port, const uint8_t *mad, size_t len, uint32_t slid,
			   uint32_t src_qpn, uint64_t src_guid)
{
	struct mad_result r = { 0 };

	if (!d->fab_ok || ca < 0 || ca >= d->fab.ncas || !d->fab.cas[ca].local ||
	    !mib_mad_fits(mad, len))
		return;
	if (mad_answer_local(&d->fab, ca, ingress_port, mad, len, &r) < 0) {
		log_debug("relay: malformed MAD from %s for %s; dropped", origin,
			  d->fab.cas[ca].hca->name);
		return;
	}
	switch (r.v) {
	case MAD_REPLY:
		if (mib_relay_send_mad(d, origin, MIB_RELAY_REPLY, req_id, 0, r.reply_slid,
				       r.reply_qpn, 0, 0, r.reply, r.reply_len) < 0)
			log_debug("relay: no route back to %s; reply dropped", origin);
		break;
	case MAD_DELIVER:
		mib_mad_deliver(d, r.target_ca >= 0 ? r.target_ca : ca, mad, len, slid, src_qpn,
				src_guid);
		break;
	default:
		break;
	}
	mad_result_free(&r);
}

/* ------------------------------------------------------------------ */
/* MADs the clients send.                                              */

/* An SMP (NodeInfo, PortInfo, NodeDescription, ...) for a remote CA is
 * answered here from the member's REGISTERed state, as its owner would:
 * the same bytes without two relay hops (a fabric walk is thousands of
 * them).  On real hardware the HCA's firmware answers SMPs, a stopped host
 * or not; PMA and vendor classes still go to the owner. */
static bool answer_smp_here(struct mib_session *s, const struct mib_uhdr *h,
			    const struct mad_result *fw, const uint8_t *mad, size_t len)
{
	struct mad_result r = { .target_ca = -1 };
	uint8_t cls = mib_mad_class(mad);
	bool done = false;

	if (cls != 0x01 && cls != 0x81)
		return false;
	if (mad_answer_local(&s->d->fab, fw->target_ca, fw->ingress_port, mad, len, &r) == 0 &&
	    r.v == MAD_REPLY) {
		send_recv(s, h->agent_id, r.reply, r.reply_len, r.reply_slid, r.reply_qpn);
		done = true;
	}
	mad_result_free(&r);
	return done;
}

void mib_mad_from_session(struct mib_session *s, const uint8_t *buf, size_t len)
{
	struct mockib *d = s->d;
	size_t hl = s->hdr_len;
	struct mib_uhdr h;
	struct mad_result r = { .target_ca = -1 };
	const uint8_t *mad = buf + hl;
	size_t mlen;
	int ca = mib_session_ca(s);
	bool request, track;
	uint64_t req_id = 0;

	if (len < hl + MIB_MAD_HDR || !mib_mad_fits(mad, len - hl) ||
	    mib_uhdr_parse(buf, len, hl, &h) < 0) {
		log_debug("session %llu: %zu-byte frame is shorter than a umad header and the "
			  "MAD's header; dropped", (unsigned long long)s->id, len);
		d->drops++;
		return;
	}
	mlen = len - hl;
	if (h.agent_id >= MIB_MAX_AGENTS || !s->agents[h.agent_id].used) {
		log_debug("session %llu: send on unregistered agent %u; dropped",
			  (unsigned long long)s->id, h.agent_id);
		d->drops++;
		return;
	}
	if (ca < 0)
		return;
	d->mads_in++;
	request = !mib_method_is_response(mib_mad_method(mad));
	track = request && h.timeout_ms > 0;
	const struct mad_in in = { .ca = ca, .dlid = h.lid, .qpn = h.qpn, .mad = mad,
				   .len = mlen };
	const struct ib_fab_ca *me = &d->fab.cas[ca];

	if (mad_process(&d->fab, &in, &r) < 0) {
		/* On a wire nobody would answer it either. */
		log_debug("session %llu: malformed MAD (class 0x%02x, %zu bytes); dropped",
			  (unsigned long long)s->id, mib_mad_class(mad), mlen);
		r.v = MAD_DROP;
	}
	switch (r.v) {
	case MAD_REPLY:
		send_recv(s, h.agent_id, r.reply, r.reply_len, r.reply_slid, r.reply_qpn);
		break;
	case MAD_FORWARD:
		if (r.target_ca < 0 || r.target_ca >= d->fab.ncas)
			break;
		if (answer_smp_here(s, &h, &r, mad, mlen))
			break;
		req_id = ++d->next_req_id;
		if (track)
			pending_add(s, &h, buf, len, me->hca->port_guid, req_id);
		if (mib_relay_send_mad(d, mib_ca_owner(d, r.target_ca), MIB_RELAY_ANSWER, req_id,
				       me->hca->port_guid, me->hca->lid, h.qpn ? 1 : 0,
				       d->fab.cas[r.target_ca].hca->port_guid, r.ingress_port,
				       mad, mlen) < 0)
			log_debug("forward to %s: no route; the request will time out",
				  mib_ca_owner(d, r.target_ca));
		break;
	case MAD_DELIVER:
		if (r.target_ca < 0 || r.target_ca >= d->fab.ncas)
			break;
		if (track)
			pending_add(s, &h, buf, len, me->hca->port_guid, 0);
		route_deliver(d, r.target_ca, mad, mlen, me->hca->lid, h.qpn ? 1 : 0,
			      me->hca->port_guid);
		break;
	case MAD_DROP:
	default:
		if (track)
			pending_add(s, &h, buf, len, me->hca->port_guid, 0);
		break;
	}
	mad_result_free(&r);
}
