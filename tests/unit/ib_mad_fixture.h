/* Test fixture for the fabric model and MAD engine: members with HCAs as
 * the profile compiler would make them, and MADs built byte by byte at
 * the IBA offsets the tools read (IB.md §2.7), independent of the
 * engine's own constants. */
#ifndef MOKKA_TESTS_IB_MAD_FIXTURE_H
#define MOKKA_TESTS_IB_MAD_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mad/fabric.h"

static inline struct state_ib *fx_ib(const char *node, int nhcas, uint32_t lid_base,
				     uint64_t guid_base, int leaf_ports, int spines)
{
	struct state_ib *ib = calloc(1, sizeof(*ib));

	if (!ib)
		abort();
	ib->enabled = true;
	snprintf(ib->hca_type, sizeof(ib->hca_type), "MT4129");
	ib->device_id = 4129;
	snprintf(ib->fw_version, sizeof(ib->fw_version), "28.39.2048");
	snprintf(ib->hw_rev, sizeof(ib->hw_rev), "0x0");
	snprintf(ib->link_layer, sizeof(ib->link_layer), "InfiniBand");
	ib->rate_gbps = 400;
	ib->sm_lid = 1;
	ib->cap_mask = 0xa651e848;
	ib->leaf_ports = leaf_ports;
	ib->spines = spines;
	ib->num_hcas = nhcas;
	for (int i = 0; i < nhcas; i++) {
		struct state_hca *h = &ib->hcas[i];

		h->index = i;
		snprintf(h->name, sizeof(h->name), "mlx5_%d", i);
		h->node_guid = guid_base + ((uint64_t)i << 1);
		h->port_guid = h->node_guid | 1;
		h->lid = lid_base + (uint32_t)i;
		h->port_state = 4;
		h->phys_state = 5;
		snprintf(h->node_desc, sizeof(h->node_desc), "%s mlx5_%d", node, i);
	}
	return ib;
}

static inline void fx_member(struct ib_member *m, const char *node, struct state_ib *ib,
			     bool local)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->node, sizeof(m->node), "%s", node);
	m->ib = ib;
	m->local = local;
}

/* Big-endian accessors at literal offsets. */
static inline unsigned fx_get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static inline uint32_t fx_get32(const uint8_t *p)
{
	return (uint32_t)fx_get16(p) << 16 | fx_get16(p + 2);
}
static inline uint64_t fx_get64(const uint8_t *p)
{
	return (uint64_t)fx_get32(p) << 32 | fx_get32(p + 4);
}
static inline void fx_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void fx_put32(uint8_t *p, uint32_t v)
{
	fx_put16(p, v >> 16);
	fx_put16(p + 2, v & 0xffff);
}
static inline void fx_put64(uint8_t *p, uint64_t v)
{
	fx_put32(p, (uint32_t)(v >> 32));
	fx_put32(p + 4, (uint32_t)v);
}

/* Common MAD header: base version 1, class, class version, method, TID,
 * attribute id and modifier. */
static inline void fx_mad(uint8_t *m, uint8_t cls, uint8_t ver, uint8_t method, uint16_t attr,
			  uint32_t mod, uint64_t tid)
{
	memset(m, 0, 256);
	m[0] = 1;
	m[1] = cls;
	m[2] = ver;
	m[3] = method;
	fx_put64(m + 8, tid);
	fx_put16(m + 16, attr);
	fx_put32(m + 20, mod);
}

/* Directed-route SMP Get: hop count at 7, InitPath[1..hops] at 128+i. */
static inline void fx_dr(uint8_t *m, uint16_t attr, uint32_t mod, const uint8_t *path, int hops)
{
	fx_mad(m, 0x81, 1, 0x01, attr, mod, 0x1234567800000000ull | attr);
	fx_put16(m + 32, 0xffff);		/* DrSLID */
	fx_put16(m + 34, 0xffff);		/* DrDLID */
	m[7] = (uint8_t)hops;
	for (int i = 1; i <= hops; i++)
		m[128 + i] = path[i];
}

#endif
