/* PCI config space is little-endian: the byte-level stores and loads the
 * config space renderer (config_space.c) and mokka-pcifs's SR-IOV
 * capability (pcifs/sriov_cap.c) share. */
#ifndef MOKKA_WORKERS_PCIBUS_CONFIG_LE_H
#define MOKKA_WORKERS_PCIBUS_CONFIG_LE_H

#include <stdint.h>

static inline void cfg_put16(uint8_t *cs, unsigned off, uint16_t v)
{
	cs[off] = (uint8_t)v;
	cs[off + 1] = (uint8_t)(v >> 8);
}

static inline void cfg_put32(uint8_t *cs, unsigned off, uint32_t v)
{
	cfg_put16(cs, off, (uint16_t)v);
	cfg_put16(cs, off + 2, (uint16_t)(v >> 16));
}

static inline uint32_t cfg_get32(const uint8_t *cs, unsigned off)
{
	return (uint32_t)cs[off] | (uint32_t)cs[off + 1] << 8 | (uint32_t)cs[off + 2] << 16 |
	       (uint32_t)cs[off + 3] << 24;
}

#endif
