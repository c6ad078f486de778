/* The MAD engine's entry points: check a MAD, find where it goes (directed
 * route walk or LID routing), and either answer it (switches, the SM/SA,
 * local CAs), forward it to the owner of a remote CA, hand it to an agent,
 * or drop it so the sender times out as with real hardware. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mad/mad_internal.h"

int mad_reply_new(struct mad_result *out, const uint8_t *req, size_t size, uint32_t slid,
		  uint32_t qpn)
{
	uint8_t *r = calloc(1, size < MAD_SIZE ? MAD_SIZE : size);

	if (!r)
		return -ENOMEM;
	memcpy(r, req, MAD_SIZE);
	out->v = MAD_REPLY;
	out->reply = r;
	out->reply_len = size;
	out->reply_slid = slid;
	out->reply_qpn = qpn;
	return 0;
}

void mad_set_status(uint8_t *mad, unsigned status)
{
	put16(mad + MAD_O_STATUS, status);
}

void mad_result_free(struct mad_result *r)
{
	if (!r)
		return;
	free(r->reply);
	r->reply = NULL;
	r->reply_len = 0;
}

static void result_init(struct mad_result *out)
{
	memset(out, 0, sizeof(*out));
	out->v = MAD_DROP;
	out->target_ca = -1;
}

static int verdict(struct mad_result *out, enum mad_verdict v, int ca, int ingress)
{
	out->v = v;
	out->target_ca = ca;
	out->ingress_port = ingress;
	return 0;
}

/* Copy a MAD into a zero-padded 256-byte buffer after the checks every
 * MAD must pass. */
static int load(uint8_t *req, const uint8_t *mad, size_t len)
{
	if (!mad || len < MAD_HDR || mad[MAD_O_BASE_VER] != 1)
		return -EINVAL;
	if (mad[MAD_O_CLASS] == MGMT_SMI_DR && mad[MAD_O_HOP_CNT] > SMP_MAX_HOPS)
		return -EINVAL;
	memset(req, 0, MAD_SIZE);
	memcpy(req, mad, len < MAD_SIZE ? len : MAD_SIZE);
	return 0;
}

static bool is_vendor_class(unsigned cls)
{
	return (cls >= 0x09 && cls <= 0x0f) || (cls >= 0x30 && cls <= 0x4f);
}

static bool is_smp(unsigned cls)
{
	return cls == MGMT_SMI_LID || cls == MGMT_SMI_DR;
}

/* Walk InitPath from the sender CA: path[1] is the CA's own port, path[i]
 * the egress port of the switch reached at hop i-1.  Only switches
 * forward; a down or unwired port ends the walk (the SMP is lost). */
static int process_dr(const struct ib_fabric *f, int ca, const uint8_t *req,
		      struct mad_result *out)
{
	const uint8_t *path = req + SMP_O_INIT_PATH;
	int hops = req[MAD_O_HOP_CNT], ingress = 1;
	struct mad_node cur = { IB_LINK_CA, ca };
	uint8_t ret[SMP_MAX_HOPS + 1] = { 0 };

	if (get16(req + MAD_O_STATUS) & SMP_DR_DIRECTION)
		return 0;			/* a returning SMP is nobody's request */
	if (hops > 0) {
		const struct ib_link *up = &f->cas[ca].up;

		if (path[1] != 1 || up->kind != IB_LINK_SWITCH || !mad_ca_link_up(f, ca))
			return 0;
		cur = (struct mad_node){ IB_LINK_SWITCH, up->idx };
		ret[1] = (uint8_t)(ingress = up->port);
	}
	for (int i = 2; i <= hops; i++) {
		const struct ib_fab_switch *sw;
		int egress = path[i], state, phys;

		if (cur.kind != IB_LINK_SWITCH)
			return 0;
		sw = &f->sws[cur.idx];
		if (egress < 1 || egress > sw->nports || sw->port[egress].kind == IB_LINK_NONE)
			return 0;
		mad_port_state(f, cur, egress, &state, &phys);
		if (phys != PHYS_LINKUP)
			return 0;
		ingress = sw->port[egress].port;
		cur = (struct mad_node){ sw->port[egress].kind, sw->port[egress].idx };
		ret[i] = (uint8_t)ingress;
	}
	if (cur.kind == IB_LINK_CA && !f->cas[cur.idx].local)
		return verdict(out, MAD_FORWARD, cur.idx, ingress);
	return mad_smp_answer(f, cur, ingress, req, ret, out);
}

static int process_lid(const struct ib_fabric *f, const struct mad_in *in, const uint8_t *req,
		       struct mad_result *out)
{
	unsigned cls = req[MAD_O_CLASS];
	struct mad_node to;
	int ingress;

	if (!mad_route_lid(f, in->ca, in->dlid, &to, &ingress))
		return 0;
	if (cls == MGMT_SA)	/* the SA lives with the SM, nowhere else */
		return to.kind == IB_LINK_SWITCH && to.idx == f->sm_switch
			       ? mad_sa_answer(f, in->ca, req, out) : 0;
	if (is_vendor_class(cls))	/* a server agent answers, not us */
		return to.kind == IB_LINK_CA ? verdict(out, MAD_DELIVER, to.idx, ingress) : 0;
	if (to.kind == IB_LINK_CA && !f->cas[to.idx].local)
		return verdict(out, MAD_FORWARD, to.idx, ingress);
	if (cls == MGMT_SMI_LID)
		return mad_smp_answer(f, to, ingress, req, NULL, out);
	return mad_pma_answer(f, to, req, out);
}

int mad_process(const struct ib_fabric *f, const struct mad_in *in, struct mad_result *out)
{
	uint8_t req[MAD_SIZE];
	unsigned cls;
	int ca, rc;

	if (!out)
		return -EINVAL;
	result_init(out);
	if (!f || !in || in->ca < 0 || in->ca >= f->ncas)
		return -EINVAL;
	if ((rc = load(req, in->mad, in->len)) < 0)
		return rc;
	cls = req[MAD_O_CLASS];
	if (req[MAD_O_METHOD] & METHOD_RESP_BIT) {
		/* A response an agent sends (ibping -S) goes to the requester. */
		if (is_smp(cls) || (ca = ib_fabric_ca_by_lid(f, in->dlid)) < 0)
			return 0;
		return verdict(out, MAD_DELIVER, ca, 0);
	}
	if (cls == MGMT_SMI_DR)
		return process_dr(f, in->ca, req, out);
	if (cls == MGMT_SMI_LID || cls == MGMT_SA || cls == MGMT_PMA || is_vendor_class(cls))
		return process_lid(f, in, req, out);
	return 0;
}

int mad_answer_local(const struct ib_fabric *f, int ca, int ingress_port,
		     const uint8_t *mad, size_t len, struct mad_result *out)
{
	uint8_t req[MAD_SIZE], ret[SMP_MAX_HOPS + 1];
	struct mad_node n = { IB_LINK_CA, ca };
	unsigned cls;
	int rc;

	if (!out)
		return -EINVAL;
	result_init(out);
	if (!f || ca < 0 || ca >= f->ncas)
		return -EINVAL;
	if ((rc = load(req, mad, len)) < 0)
		return rc;
	cls = req[MAD_O_CLASS];
	if (req[MAD_O_METHOD] & METHOD_RESP_BIT)
		return is_smp(cls) ? 0 : verdict(out, MAD_DELIVER, ca, 0);
	if (is_smp(cls)) {
		if (ingress_port != 1)
			return -EINVAL;		/* a CA here has one port */
		if (cls == MGMT_SMI_LID)
			return mad_smp_answer(f, n, ingress_port, req, NULL, out);
		if (get16(req + MAD_O_STATUS) & SMP_DR_DIRECTION)
			return 0;
		/* The switches on the way filled the rest of the return path on
		 * the requester's side; this hop is ours. */
		memcpy(ret, req + SMP_O_RET_PATH, sizeof(ret));
		ret[req[MAD_O_HOP_CNT]] = req[MAD_O_HOP_CNT] ? (uint8_t)ingress_port : 0;
		return mad_smp_answer(f, n, ingress_port, req, ret, out);
	}
	if (cls == MGMT_PMA)
		return mad_pma_answer(f, n, req, out);
	if (is_vendor_class(cls))
		return verdict(out, MAD_DELIVER, ca, ingress_port);
	return 0;
}
