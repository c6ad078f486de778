/* Shared by the MAD engine's files (mad_*.c): wire constants, big-endian
 * accessors, node references and the per-port link model.  IB.md §2.7
 * has the byte offsets. */
#ifndef MOKKA_WORKERS_IB_MAD_INTERNAL_H
#define MOKKA_WORKERS_IB_MAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workers/ib/mad/fabric.h"

#define MAD_SIZE 256
#define MAD_HDR 24

/* Common header */
#define MAD_O_BASE_VER 0
#define MAD_O_CLASS 1
#define MAD_O_CLASS_VER 2
#define MAD_O_METHOD 3
#define MAD_O_STATUS 4
#define MAD_O_HOP_PTR 6
#define MAD_O_HOP_CNT 7
#define MAD_O_TID 8
#define MAD_O_ATTR_ID 16
#define MAD_O_ATTR_MOD 20

/* SMP (LID-routed and directed route) */
#define SMP_O_DATA 64
#define SMP_DATA_SIZE 64
#define SMP_O_INIT_PATH 128
#define SMP_O_RET_PATH 192
#define SMP_DR_DIRECTION 0x8000	/* D bit in the 16-bit status word */
#define SMP_MAX_HOPS 63

/* SA */
#define SA_O_RMPP 24
#define SA_O_SM_KEY 36
#define SA_O_ATTR_OFFSET 44
#define SA_O_COMP_MASK 48
#define SA_O_DATA 56
#define SA_DATA_SIZE (MAD_SIZE - SA_O_DATA)
#define SA_RMPP_SEG_DATA 200	/* SA payload per RMPP segment */

/* PMA */
#define PMA_O_DATA 64

/* Vendor range 2 */
#define VEND_O_OUI 37

#define MGMT_SMI_LID 0x01
#define MGMT_SA 0x03
#define MGMT_PMA 0x04
#define MGMT_SMI_DR 0x81

#define METHOD_GET 0x01
#define METHOD_SET 0x02
#define METHOD_GET_RESP 0x81
#define METHOD_GET_TABLE 0x12
#define METHOD_GET_TABLE_RESP 0x92
#define METHOD_RESP_BIT 0x80

/* MAD status: bits 2..4 "invalid field" codes */
#define MAD_ST_BAD_VERSION 0x0004
#define MAD_ST_BAD_METHOD 0x0008
#define MAD_ST_BAD_METHOD_ATTR 0x000c
#define MAD_ST_BAD_FIELD 0x001c
/* SA class-specific status (high byte) */
#define SA_ST_NO_RECORDS 0x0300
#define SA_ST_TOO_MANY_RECORDS 0x0400

#define ATTR_CLASS_PORT_INFO 0x0001
#define SMP_ATTR_NODE_DESC 0x0010
#define SMP_ATTR_NODE_INFO 0x0011
#define SMP_ATTR_SWITCH_INFO 0x0012
#define SMP_ATTR_GUID_INFO 0x0014
#define SMP_ATTR_PORT_INFO 0x0015
#define SMP_ATTR_PKEY_TABLE 0x0016
#define SMP_ATTR_SM_INFO 0x0020

#define SA_ATTR_NODE_RECORD 0x0011
#define SA_ATTR_PORT_INFO_RECORD 0x0012
#define SA_ATTR_SM_INFO_RECORD 0x0018
#define SA_ATTR_LINK_RECORD 0x0020
#define SA_ATTR_PATH_RECORD 0x0035

#define PMA_ATTR_PORT_COUNTERS 0x0012
#define PMA_ATTR_PORT_COUNTERS_EXT 0x001d

/* Port states (PortInfo.PortState) and physical states */
#define PORT_DOWN 1
#define PORT_INIT 2
#define PORT_ACTIVE 4
#define PORT_ACTIVE_DEFER 5
#define PHYS_POLLING 2
#define PHYS_LINKUP 5

#define GID_PREFIX_LINK_LOCAL 0xfe80000000000000ull
#define VENDOR_MELLANOX 0x0002c9u
#define SWITCH_DEVICE_ID 0xd2f2u	/* Quantum-2 QM9700 */
#define SWITCH_REVISION 0x000000a0u
#define SM_ACT_COUNT 0x00001000u	/* a pure engine has no clock to count with */
#define SM_PRIORITY 15
#define SM_STATE_MASTER 3

static inline void put8(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; }
static inline void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}
static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}
static inline unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

/* A node of the fabric: IB_LINK_CA or IB_LINK_SWITCH and its index. */
struct mad_node {
	int kind;
	int idx;
};

/* Link speeds of a port for a rate in Gb/s (4X). */
struct mad_speed {
	int gbps;
	uint8_t active, supported;	/* LinkSpeed (SDR 1, DDR 2, QDR 4) */
	uint8_t ext_active, ext_supported;	/* FDR 1, EDR 2, HDR 4, NDR 8 */
	uint8_t sa_rate;		/* PathRecord rate code */
};

/* mad_port.c: the link model and the attributes built from it */
const struct mad_speed *mad_speed_for(int gbps);
int mad_node_ports(const struct ib_fabric *f, struct mad_node n);
uint32_t mad_node_lid(const struct ib_fabric *f, struct mad_node n);
uint64_t mad_node_port_guid(const struct ib_fabric *f, struct mad_node n);
void mad_port_state(const struct ib_fabric *f, struct mad_node n, int port, int *state,
		    int *phys);
bool mad_ca_link_up(const struct ib_fabric *f, int ca);
bool mad_ca_active(const struct ib_fabric *f, int ca);
void mad_node_info(const struct ib_fabric *f, struct mad_node n, int local_port, uint8_t *d);
void mad_node_desc(const struct ib_fabric *f, struct mad_node n, uint8_t *d);
void mad_port_info(const struct ib_fabric *f, struct mad_node n, int port, int local_port,
		   uint8_t *d);
void mad_sm_info(const struct ib_fabric *f, uint8_t *d);
int mad_path_rate(const struct ib_fabric *f, struct mad_node a, struct mad_node b);

/* mad_route.c: where a LID-routed packet from a CA ends up */
bool mad_route_lid(const struct ib_fabric *f, int from_ca, uint32_t lid, struct mad_node *to,
		   int *ingress);
bool mad_sm_sees(const struct ib_fabric *f, struct mad_node n);
int mad_ingress_from_sm(const struct ib_fabric *f, struct mad_node n);
bool mad_lid_node(const struct ib_fabric *f, uint32_t lid, struct mad_node *n);
bool mad_guid_node(const struct ib_fabric *f, uint64_t guid, struct mad_node *n);

/* Replies: a copy of the request header (and the rest of its first 256
 * bytes) in a zeroed buffer of max(size, 256) bytes.  0 or -ENOMEM. */
int mad_reply_new(struct mad_result *out, const uint8_t *req, size_t size, uint32_t slid,
		  uint32_t qpn);
void mad_set_status(uint8_t *mad, unsigned status);

/* mad_smp.c / mad_sa.c / mad_pma.c: build the reply (out->v = MAD_REPLY).
 * req is at least MAD_SIZE bytes. */
int mad_smp_answer(const struct ib_fabric *f, struct mad_node n, int ingress,
		   const uint8_t *req, const uint8_t *ret_path, struct mad_result *out);
int mad_sa_answer(const struct ib_fabric *f, int from_ca, const uint8_t *req,
		  struct mad_result *out);
int mad_pma_answer(const struct ib_fabric *f, struct mad_node n, const uint8_t *req,
		   struct mad_result *out);

#endif
