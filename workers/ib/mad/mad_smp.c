/* The subnet management agent of every node: SMP Get (LID-routed or
 * directed route) of NodeDescription, NodeInfo, SwitchInfo, GUIDInfo,
 * PortInfo, PKeyTable and SMInfo.  Set answers the current value with
 * "unsupported method/attribute", as an SMA that refuses the change. */
#include <errno.h>
#include <string.h>

#include "workers/ib/mad/mad_internal.h"

#define LINEAR_FDB_CAP 0xc000
#define MCAST_FDB_CAP 0x1000
#define SWITCH_LIFE_TIME 18
#define ENHANCED_PORT0 0x08		/* SwitchInfo bit 132 */
#define PKEY_BLOCK 32

typedef unsigned (*smp_attr_fn)(const struct ib_fabric *f, struct mad_node n, int ingress,
				uint32_t mod, uint8_t *d);

static unsigned attr_node_desc(const struct ib_fabric *f, struct mad_node n, int ingress,
			       uint32_t mod, uint8_t *d)
{
	mad_node_desc(f, n, d);
	return 0;
}

static unsigned attr_node_info(const struct ib_fabric *f, struct mad_node n, int ingress,
			       uint32_t mod, uint8_t *d)
{
	mad_node_info(f, n, ingress, d);
	return 0;
}

static uint32_t top_lid(const struct ib_fabric *f)
{
	uint32_t top = 0;

	for (int i = 0; i < f->ncas; i++)
		if (f->cas[i].hca->lid > top && f->cas[i].hca->lid <= 0xbfff)
			top = f->cas[i].hca->lid;
	for (int i = 0; i < f->nsws; i++)
		if (f->sws[i].lid > top)
			top = f->sws[i].lid;
	return top;
}

static unsigned attr_switch_info(const struct ib_fabric *f, struct mad_node n, int ingress,
				 uint32_t mod, uint8_t *d)
{
	if (n.kind != IB_LINK_SWITCH)
		return MAD_ST_BAD_METHOD_ATTR;
	put16(d + 0, LINEAR_FDB_CAP);
	put16(d + 4, MCAST_FDB_CAP);
	put16(d + 6, top_lid(f));		/* LinearFDBTop */
	d[11] = SWITCH_LIFE_TIME << 3;
	d[16] = ENHANCED_PORT0;
	return 0;
}

static unsigned attr_guid_info(const struct ib_fabric *f, struct mad_node n, int ingress,
			       uint32_t mod, uint8_t *d)
{
	if (mod != 0)
		return MAD_ST_BAD_FIELD;	/* GUIDCap 8: one block */
	put64(d, mad_node_port_guid(f, n));
	return 0;
}

static unsigned attr_port_info(const struct ib_fabric *f, struct mad_node n, int ingress,
			       uint32_t mod, uint8_t *d)
{
	int port = (int)(mod & 0xff);

	if (n.kind == IB_LINK_CA && port == 0)
		port = ingress;			/* a CA's 0 = the port it came in on */
	if ((n.kind == IB_LINK_CA && port != 1) || port > mad_node_ports(f, n))
		return MAD_ST_BAD_FIELD;
	mad_port_info(f, n, port, ingress, d);
	return 0;
}

static unsigned attr_pkey_table(const struct ib_fabric *f, struct mad_node n, int ingress,
				uint32_t mod, uint8_t *d)
{
	unsigned block = mod & 0xffff, port = mod >> 16;
	unsigned blocks = n.kind == IB_LINK_CA ? 128 / PKEY_BLOCK : 1;

	if ((n.kind == IB_LINK_SWITCH && port > (unsigned)mad_node_ports(f, n)) ||
	    block >= blocks)
		return MAD_ST_BAD_FIELD;
	if (block == 0)
		put16(d, 0xffff);		/* the default full-member partition */
	return 0;
}

/* Answered for any node, as the SM: sminfo asks the sysfs sm_lid. */
static unsigned attr_sm_info(const struct ib_fabric *f, struct mad_node n, int ingress,
			     uint32_t mod, uint8_t *d)
{
	if (f->sm_switch < 0)
		return MAD_ST_BAD_METHOD_ATTR;
	mad_sm_info(f, d);
	return 0;
}

static const struct {
	uint16_t id;
	smp_attr_fn fn;
} smp_attrs[] = {
	{ SMP_ATTR_NODE_DESC, attr_node_desc },
	{ SMP_ATTR_NODE_INFO, attr_node_info },
	{ SMP_ATTR_SWITCH_INFO, attr_switch_info },
	{ SMP_ATTR_GUID_INFO, attr_guid_info },
	{ SMP_ATTR_PORT_INFO, attr_port_info },
	{ SMP_ATTR_PKEY_TABLE, attr_pkey_table },
	{ SMP_ATTR_SM_INFO, attr_sm_info },
};

static smp_attr_fn find_attr(unsigned id)
{
	for (size_t i = 0; i < sizeof(smp_attrs) / sizeof(smp_attrs[0]); i++)
		if (smp_attrs[i].id == id)
			return smp_attrs[i].fn;
	return NULL;
}

int mad_smp_answer(const struct ib_fabric *f, struct mad_node n, int ingress,
		   const uint8_t *req, const uint8_t *ret_path, struct mad_result *out)
{
	unsigned method = req[MAD_O_METHOD], status = 0;
	smp_attr_fn fn = find_attr(get16(req + MAD_O_ATTR_ID));
	uint8_t *r, *d;
	int rc;

	if ((rc = mad_reply_new(out, req, MAD_SIZE, mad_node_lid(f, n), 0)) < 0)
		return rc;
	r = out->reply;
	d = r + SMP_O_DATA;
	memset(d, 0, SMP_DATA_SIZE);
	if (req[MAD_O_CLASS_VER] != 1)
		status = MAD_ST_BAD_VERSION;
	else if (method != METHOD_GET && method != METHOD_SET)
		status = MAD_ST_BAD_METHOD;
	else if (!fn)
		status = MAD_ST_BAD_METHOD_ATTR;
	else if ((status = fn(f, n, ingress, get32(req + MAD_O_ATTR_MOD), d)) == 0 &&
		 method == METHOD_SET)
		status = MAD_ST_BAD_METHOD_ATTR;	/* nothing here can be set */
	r[MAD_O_METHOD] = METHOD_GET_RESP;
	if (req[MAD_O_CLASS] == MGMT_SMI_DR) {
		status |= SMP_DR_DIRECTION;
		r[MAD_O_HOP_PTR] = 0;		/* as it arrives back at the requester */
		if (ret_path)
			memcpy(r + SMP_O_RET_PATH, ret_path, SMP_MAX_HOPS + 1);
	}
	mad_set_status(r, status);
	return 0;
}
