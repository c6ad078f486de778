/* The performance management agent: ClassPortInfo, PortCounters and
 * PortCountersExtended from the profile's per-HCA counters (the same
 * values the kernel shows in sysfs counters/: data counters in 4-byte
 * units), saturated to each field's width.  Switch ports count nothing.
 * A Set (perfquery -r) answers the values as they stay: the engine is
 * pure, the counters belong to the profile. */
#include <string.h>

#include "workers/ib/mad/mad_internal.h"

/* AllPortSelect, PortCountersExtended (full width), PortXmitWait. */
#define PMA_CAP_MASK 0x1300
#define PMA_RESP_TIME 18
#define PORT_SELECT_ALL 0xff

/* counters[] index (state_ib_counter_names order) -> field. */
struct ctr_field {
	int idx;
	int off;		/* byte offset in the attribute */
	int bits;		/* 4, 8, 16, 32 or 64 */
	int shift;		/* for 4-bit fields sharing a byte */
};

static const struct ctr_field port_counters[] = {
	{ 0, 4, 16, 0 },	/* SymbolErrorCounter */
	{ 1, 6, 8, 0 },		/* LinkErrorRecoveryCounter */
	{ 2, 7, 8, 0 },		/* LinkDownedCounter */
	{ 3, 8, 16, 0 },	/* PortRcvErrors */
	{ 4, 10, 16, 0 },	/* PortRcvRemotePhysicalErrors */
	{ 5, 12, 16, 0 },	/* PortRcvSwitchRelayErrors */
	{ 6, 14, 16, 0 },	/* PortXmitDiscards */
	{ 7, 16, 8, 0 },	/* PortXmitConstraintErrors */
	{ 8, 17, 8, 0 },	/* PortRcvConstraintErrors */
	{ 9, 19, 4, 4 },	/* LocalLinkIntegrityErrors */
	{ 10, 19, 4, 0 },	/* ExcessiveBufferOverrunErrors */
	{ 11, 22, 16, 0 },	/* VL15Dropped */
	{ 12, 24, 32, 0 },	/* PortXmitData */
	{ 13, 28, 32, 0 },	/* PortRcvData */
	{ 14, 32, 32, 0 },	/* PortXmitPkts */
	{ 15, 36, 32, 0 },	/* PortRcvPkts */
	{ 16, 40, 32, 0 },	/* PortXmitWait */
};

static const struct ctr_field port_counters_ext[] = {
	{ 12, 8, 64, 0 },	/* PortXmitData */
	{ 13, 16, 64, 0 },	/* PortRcvData */
	{ 14, 24, 64, 0 },	/* PortXmitPkts */
	{ 15, 32, 64, 0 },	/* PortRcvPkts */
	{ 17, 40, 64, 0 },	/* PortUnicastXmitPkts */
	{ 18, 48, 64, 0 },	/* PortUnicastRcvPkts */
	{ 19, 56, 64, 0 },	/* PortMulticastXmitPkts */
	{ 20, 64, 64, 0 },	/* PortMulticastRcvPkts */
};

static void put_counter(uint8_t *d, const struct ctr_field *c, uint64_t v)
{
	uint64_t max = c->bits == 64 ? UINT64_MAX : (1ull << c->bits) - 1;

	if (v > max)
		v = max;
	switch (c->bits) {
	case 4:
	case 8:
		d[c->off] |= (uint8_t)(v << c->shift);
		break;
	case 16:
		put16(d + c->off, (unsigned)v);
		break;
	case 32:
		put32(d + c->off, (uint32_t)v);
		break;
	default:
		put64(d + c->off, v);
	}
}

static unsigned fill_counters(const struct ib_fabric *f, struct mad_node n, const uint8_t *q,
			      uint8_t *d, const struct ctr_field *tab, size_t ntab)
{
	unsigned sel = q[1];

	if (sel != PORT_SELECT_ALL &&
	    (n.kind == IB_LINK_CA ? sel != 1 : sel > (unsigned)mad_node_ports(f, n)))
		return MAD_ST_BAD_FIELD;
	d[1] = (uint8_t)sel;
	d[2] = q[2];			/* CounterSelect */
	d[3] = q[3];
	if (n.kind != IB_LINK_CA)
		return 0;
	for (size_t i = 0; i < ntab; i++)
		put_counter(d, &tab[i], f->cas[n.idx].hca->counters[tab[i].idx]);
	return 0;
}

int mad_pma_answer(const struct ib_fabric *f, struct mad_node n, const uint8_t *req,
		   struct mad_result *out)
{
	const uint8_t *q = req + PMA_O_DATA;
	unsigned method = req[MAD_O_METHOD], attr = get16(req + MAD_O_ATTR_ID), status = 0;
	uint8_t *r, *d;
	int rc;

	if ((rc = mad_reply_new(out, req, MAD_SIZE, mad_node_lid(f, n), 1)) < 0)
		return rc;
	r = out->reply;
	d = r + PMA_O_DATA;
	memset(d, 0, MAD_SIZE - PMA_O_DATA);
	if (req[MAD_O_CLASS_VER] != 1)
		status = MAD_ST_BAD_VERSION;
	else if (method != METHOD_GET && method != METHOD_SET)
		status = MAD_ST_BAD_METHOD;
	else if (attr == ATTR_CLASS_PORT_INFO && method == METHOD_GET) {
		d[0] = 1;		/* BaseVersion */
		d[1] = 1;		/* ClassVersion */
		put16(d + 2, PMA_CAP_MASK);
		put32(d + 4, PMA_RESP_TIME);	/* CapabilityMask2 0 | RespTimeValue */
	} else if (attr == PMA_ATTR_PORT_COUNTERS)
		status = fill_counters(f, n, q, d, port_counters,
				       sizeof(port_counters) / sizeof(port_counters[0]));
	else if (attr == PMA_ATTR_PORT_COUNTERS_EXT)
		status = fill_counters(f, n, q, d, port_counters_ext,
				       sizeof(port_counters_ext) / sizeof(port_counters_ext[0]));
	else
		status = MAD_ST_BAD_METHOD_ATTR;
	r[MAD_O_METHOD] = METHOD_GET_RESP;
	mad_set_status(r, status);
	return 0;
}
