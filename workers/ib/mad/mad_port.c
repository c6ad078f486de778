/* The link model (port state, speeds) and the SMP attributes built from
 * it: NodeInfo, NodeDescription, PortInfo, SMInfo.  The SA records embed
 * the same encodings. */
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mad/mad_internal.h"

/* Switch port 0: IsTrapSupported, IsSLMappingSupported,
 * IsSystemImageGUIDSupported, IsExtendedSpeedsSupported (bit 14, which
 * iblinkinfo needs to print NDR), IsCapabilityMask2Supported,
 * IsVendorClassSupported. */
#define SWITCH_CAP_MASK 0x0008c848u
#define CAP_IS_SM 0x00000002u

#define WIDTH_1X_4X 0x03
#define WIDTH_4X 0x02
#define MTU_4096 5
#define VL_CAP_VL0_7 4
#define LINK_DOWN_DEFAULT_POLLING 2
#define CA_PARTITION_CAP 128
#define SWITCH_PARTITION_CAP 8
#define GUID_CAP 8
#define SUBNET_TIMEOUT 18
#define RESP_TIME_VALUE 16

/* Highest entry at or below the rate wins; XDR is beyond libibmad 44, so
 * 800 shows NDR lane speeds (the PathRecord rate still says 800). */
static const struct mad_speed speeds[] = {
	{ 10, 1, 1, 0, 0, 3 },		/* SDR */
	{ 20, 2, 3, 0, 0, 6 },		/* DDR */
	{ 40, 4, 7, 0, 0, 7 },		/* QDR */
	{ 56, 4, 7, 1, 1, 12 },		/* FDR */
	{ 100, 4, 7, 2, 3, 16 },	/* EDR */
	{ 200, 4, 7, 4, 7, 17 },	/* HDR */
	{ 400, 4, 7, 8, 15, 21 },	/* NDR */
	{ 800, 4, 7, 8, 15, 23 },	/* XDR */
};

const struct mad_speed *mad_speed_for(int gbps)
{
	const struct mad_speed *s = &speeds[0];

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].gbps <= gbps)
			s = &speeds[i];
	return s;
}

int mad_node_ports(const struct ib_fabric *f, struct mad_node n)
{
	return n.kind == IB_LINK_CA ? 1 : f->sws[n.idx].nports;
}

uint32_t mad_node_lid(const struct ib_fabric *f, struct mad_node n)
{
	return n.kind == IB_LINK_CA ? f->cas[n.idx].hca->lid : f->sws[n.idx].lid;
}

uint64_t mad_node_port_guid(const struct ib_fabric *f, struct mad_node n)
{
	return n.kind == IB_LINK_CA ? f->cas[n.idx].hca->port_guid : f->sws[n.idx].guid;
}

static void ca_state(const struct ib_fab_ca *ca, int *state, int *phys)
{
	int s = ca->hca->port_state, p = ca->hca->phys_state;

	*state = s >= PORT_DOWN && s <= PORT_ACTIVE_DEFER ? s : PORT_DOWN;
	*phys = p >= 1 && p <= 7 ? p : PHYS_POLLING;
}

bool mad_ca_link_up(const struct ib_fabric *f, int ca)
{
	int s, p;

	ca_state(&f->cas[ca], &s, &p);
	return s != PORT_DOWN && p == PHYS_LINKUP;
}

bool mad_ca_active(const struct ib_fabric *f, int ca)
{
	int s, p;

	ca_state(&f->cas[ca], &s, &p);
	return (s == PORT_ACTIVE || s == PORT_ACTIVE_DEFER) && p == PHYS_LINKUP;
}

/* A switch port mirrors its peer: nothing (or a CA whose link is down)
 * means Down/Polling, a CA that is up lends its logical state. */
void mad_port_state(const struct ib_fabric *f, struct mad_node n, int port, int *state,
		    int *phys)
{
	const struct ib_link *l;

	if (n.kind == IB_LINK_CA) {
		ca_state(&f->cas[n.idx], state, phys);
		return;
	}
	*state = PORT_ACTIVE;
	*phys = PHYS_LINKUP;
	if (port == 0)
		return;
	l = &f->sws[n.idx].port[port];
	if (l->kind == IB_LINK_NONE || (l->kind == IB_LINK_CA && !mad_ca_link_up(f, l->idx))) {
		*state = PORT_DOWN;
		*phys = PHYS_POLLING;
	} else if (l->kind == IB_LINK_CA) {
		int p;
		ca_state(&f->cas[l->idx], state, &p);
	}
}

static int port_rate(const struct ib_fabric *f, struct mad_node n, int port)
{
	const struct ib_fab_ca *ca = NULL;

	if (n.kind == IB_LINK_CA)
		ca = &f->cas[n.idx];
	else if (port > 0 && f->sws[n.idx].port[port].kind == IB_LINK_CA)
		ca = &f->cas[f->sws[n.idx].port[port].idx];
	return ca && ca->ib->rate_gbps > 0 ? ca->ib->rate_gbps : f->rate_gbps;
}

int mad_path_rate(const struct ib_fabric *f, struct mad_node a, struct mad_node b)
{
	int ra = port_rate(f, a, 0), rb = port_rate(f, b, 0);

	return mad_speed_for(ra < rb ? ra : rb)->sa_rate;
}

void mad_node_info(const struct ib_fabric *f, struct mad_node n, int local_port, uint8_t *d)
{
	memset(d, 0, 40);
	d[0] = 1;			/* BaseVersion */
	d[1] = 1;			/* ClassVersion */
	if (n.kind == IB_LINK_CA) {
		const struct ib_fab_ca *ca = &f->cas[n.idx];

		d[2] = 1;		/* CA */
		d[3] = 1;
		put64(d + 4, ca->hca->node_guid);	/* SystemImageGUID */
		put64(d + 12, ca->hca->node_guid);
		put64(d + 20, ca->hca->port_guid);
		put16(d + 28, CA_PARTITION_CAP);
		put16(d + 30, ca->ib->device_id);
		put32(d + 32, (uint32_t)strtoul(ca->ib->hw_rev, NULL, 0));
	} else {
		const struct ib_fab_switch *sw = &f->sws[n.idx];

		d[2] = 2;		/* switch */
		d[3] = (uint8_t)sw->nports;
		put64(d + 4, sw->guid);
		put64(d + 12, sw->guid);
		put64(d + 20, sw->guid);
		put16(d + 28, SWITCH_PARTITION_CAP);
		put16(d + 30, SWITCH_DEVICE_ID);
		put32(d + 32, SWITCH_REVISION);
	}
	d[36] = (uint8_t)local_port;
	put24(d + 37, VENDOR_MELLANOX);
}

void mad_node_desc(const struct ib_fabric *f, struct mad_node n, uint8_t *d)
{
	const char *s = n.kind == IB_LINK_CA ? f->cas[n.idx].hca->node_desc
					     : f->sws[n.idx].desc;

	memset(d, 0, SMP_DATA_SIZE);
	memcpy(d, s, strnlen(s, SMP_DATA_SIZE));
}

static uint32_t cap_mask(const struct ib_fabric *f, struct mad_node n, int port)
{
	if (n.kind == IB_LINK_CA)
		return f->cas[n.idx].ib->cap_mask;
	return SWITCH_CAP_MASK | (port == 0 && n.idx == f->sm_switch ? CAP_IS_SM : 0);
}

void mad_port_info(const struct ib_fabric *f, struct mad_node n, int port, int local_port,
		   uint8_t *d)
{
	const struct mad_speed *sp = mad_speed_for(port_rate(f, n, port));
	int state, phys;

	mad_port_state(f, n, port, &state, &phys);
	memset(d, 0, SMP_DATA_SIZE);
	put64(d + 8, GID_PREFIX_LINK_LOCAL);
	put16(d + 16, mad_node_lid(f, n));
	put16(d + 18, f->sm_lid);
	put32(d + 20, cap_mask(f, n, port));
	d[28] = (uint8_t)local_port;
	d[29] = WIDTH_1X_4X;		/* LinkWidthEnabled */
	d[30] = WIDTH_1X_4X;		/* LinkWidthSupported */
	d[31] = WIDTH_4X;		/* LinkWidthActive */
	d[32] = (uint8_t)(sp->supported << 4 | state);
	d[33] = (uint8_t)(phys << 4 | LINK_DOWN_DEFAULT_POLLING);
	d[35] = (uint8_t)(sp->active << 4 | sp->supported);	/* Active | Enabled */
	d[36] = MTU_4096 << 4;		/* NeighborMTU | MasterSMSL 0 */
	d[37] = VL_CAP_VL0_7 << 4;
	d[39] = 8;			/* VLArbitrationHighCap */
	d[40] = 8;			/* VLArbitrationLowCap */
	d[41] = MTU_4096;		/* MTUCap */
	d[43] = VL_CAP_VL0_7 << 4;	/* OperationalVLs */
	d[50] = n.kind == IB_LINK_CA || port == 0 ? GUID_CAP : 0;
	d[51] = SUBNET_TIMEOUT;
	d[52] = RESP_TIME_VALUE;
	d[62] = (uint8_t)(sp->ext_active << 4 | sp->ext_supported);
	d[63] = sp->ext_supported;	/* LinkSpeedExtEnabled */
}

void mad_sm_info(const struct ib_fabric *f, uint8_t *d)
{
	memset(d, 0, SMP_DATA_SIZE);
	if (f->sm_switch < 0)
		return;
	put64(d, f->sws[f->sm_switch].guid);
	/* SM_Key 0 at 8 */
	put32(d + 16, SM_ACT_COUNT);
	d[20] = SM_PRIORITY << 4 | SM_STATE_MASTER;
}
