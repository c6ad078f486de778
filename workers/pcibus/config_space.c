/* Build a PCIe function's 4096-byte configuration space.
 *
 * Register layouts follow the PCI Local Bus and PCI Express Base specs.
 * The capability placement mirrors real hardware closely enough that
 * lspci -vv decodes it the way it decodes a datacenter GPU behind a CPU
 * root port: PM, MSI, Express, MSI-X for the GPU; Express, MSI, SSVID, PM
 * for the port; AER as the first extended capability. */
#include <errno.h>
#include <string.h>

#include "workers/pcibus/config_space.h"
#include "workers/pcibus/config_le.h"

/* Standard header registers. */
#define REG_VENDOR		0x00
#define REG_DEVICE		0x02
#define REG_COMMAND		0x04
#define REG_STATUS		0x06
#define REG_REVISION		0x08
#define REG_CLASS		0x09	/* prog-if, subclass, base class */
#define REG_HEADER_TYPE		0x0e
#define REG_BAR0		0x10
#define REG_SUBSYS_VENDOR	0x2c	/* type 0 only */
#define REG_SUBSYS_DEVICE	0x2e
#define REG_CAP_PTR		0x34
#define REG_IRQ_LINE		0x3c
#define REG_IRQ_PIN		0x3d
/* Type 1 (bridge) header. */
#define REG_PRIMARY_BUS		0x18
#define REG_SECONDARY_BUS	0x19
#define REG_SUBORDINATE_BUS	0x1a
#define REG_IO_BASE		0x1c
#define REG_IO_LIMIT		0x1d
#define REG_MEM_BASE		0x20
#define REG_MEM_LIMIT		0x22
#define REG_PREF_BASE		0x24
#define REG_PREF_LIMIT		0x26
#define REG_PREF_BASE_UPPER	0x28
#define REG_PREF_LIMIT_UPPER	0x2c
#define REG_BRIDGE_CONTROL	0x3e

#define CMD_MEMORY		0x0002
#define CMD_MASTER		0x0004
#define CMD_SERR		0x0100
#define CMD_INTX_DISABLE	0x0400
#define STATUS_CAP_LIST		0x0010

#define CAP_ID_PM		0x01
#define CAP_ID_MSI		0x05
#define CAP_ID_SSVID		0x0d
#define CAP_ID_EXP		0x10
#define CAP_ID_MSIX		0x11
#define EXT_CAP_ID_AER		0x0001

/* PCI Express capability register offsets (from the capability). */
#define EXP_FLAGS		0x02
#define EXP_DEVCAP		0x04
#define EXP_DEVCTL		0x08
#define EXP_LNKCAP		0x0c
#define EXP_LNKCTL		0x10
#define EXP_LNKSTA		0x12
#define EXP_SLTCAP		0x14
#define EXP_SLTSTA		0x1a
#define EXP_DEVCAP2		0x24
#define EXP_LNKCAP2		0x2c
#define EXP_LNKCTL2		0x30
#define EXP_LNKSTA2		0x32

#define EXP_TYPE_ENDPOINT	0x0
#define EXP_TYPE_ROOT_PORT	0x4

#define AER_UNCOR_SEVER		0x0c
#define AER_COR_MASK		0x14

#define MIB			(1ULL << 20)
#define FOUR_GIB		(1ULL << 32)

static void put8(uint8_t *cs, unsigned off, uint8_t v)
{
	cs[off] = v;
}

/* Link Capabilities 2 "Supported Link Speeds Vector": bit g for gen g. */
static uint32_t speed_vector(int gen)
{
	return ((1u << gen) - 1u) << 1;
}

static void cap_pm_endpoint(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 2, 0x0003);		/* PM spec version 1.2 */
	cfg_put16(cs, off + 4, 0x0008);		/* D0, No_Soft_Reset */
}

static void cap_pm_port(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 2, 0xc803);		/* v1.2, PME from D0, D3hot, D3cold */
	cfg_put16(cs, off + 4, 0x0008);
}

/* The GPU's MSI is present but unused: the driver runs MSI-X. */
static void cap_msi_endpoint(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 2, 0x0088);		/* 64-bit, 16 vectors capable */
}

/* pcieport runs its port services on one MSI vector. */
static void cap_msi_port(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 2, 0x0081);		/* 64-bit, 1 vector, enabled */
	cfg_put32(cs, off + 4, 0xfee00000);		/* x86 local APIC window */
	cfg_put16(cs, off + 12, 0x0021);
}

static void cap_msix(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 2, 0x8000 | (6 - 1));	/* enabled, 6 vectors */
	cfg_put32(cs, off + 4, 0x00b90000);		/* table in BAR0 */
	cfg_put32(cs, off + 8, 0x00ba0000);		/* PBA in BAR0 */
}

static void cap_ssvid(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + 4, p->subsys_vendor);
	cfg_put16(cs, off + 6, p->subsys_device);
}

/* Registers the endpoint and the root port share: link and device 2. */
static void exp_link(uint8_t *cs, unsigned off, const struct config_space_params *p,
		     uint32_t lnkcap_extra, uint16_t lnksta_extra)
{
	cfg_put32(cs, off + EXP_LNKCAP, (uint32_t)p->max_gen | (uint32_t)p->max_width << 4 |
	      1u << 22 /* ASPM optionality compliance */ |
	      (uint32_t)p->port_number << 24 | lnkcap_extra);
	cfg_put16(cs, off + EXP_LNKCTL, 0x0040);	/* common clock */
	cfg_put16(cs, off + EXP_LNKSTA, (uint16_t)(p->cur_gen | p->cur_width << 4 |
	      1u << 12 /* slot clock */ | lnksta_extra));
	cfg_put32(cs, off + EXP_DEVCAP2, 0x0000081f);	/* completion timeouts, LTR */
	cfg_put32(cs, off + EXP_LNKCAP2, speed_vector(p->max_gen));
	cfg_put16(cs, off + EXP_LNKCTL2, (uint16_t)p->max_gen);	/* target speed */
	/* Gen3+ links equalize on the way up. */
	cfg_put16(cs, off + EXP_LNKSTA2, p->cur_gen >= 3 ? 0x001e : 0);
}

static void cap_express_endpoint(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + EXP_FLAGS, 0x0002 | EXP_TYPE_ENDPOINT << 4);
	/* MaxPayload 256, ExtTag, L0s unlimited, L1 <64us, RBE, FLR */
	cfg_put32(cs, off + EXP_DEVCAP, 0x10008de1);
	/* RlxdOrd, MaxPayload 256, ExtTag, NoSnoop, MaxReadReq 512 */
	cfg_put16(cs, off + EXP_DEVCTL, 0x2930);
	exp_link(cs, off, p, 0, 0);
}

static void cap_express_port(uint8_t *cs, unsigned off, const struct config_space_params *p)
{
	cfg_put16(cs, off + EXP_FLAGS, 0x0002 | EXP_TYPE_ROOT_PORT << 4 | 0x0100 /* slot */);
	cfg_put32(cs, off + EXP_DEVCAP, 0x00008022);	/* MaxPayload 512, ExtTag, RBE */
	cfg_put16(cs, off + EXP_DEVCTL, 0x0020);		/* MaxPayload 256 */
	/* Data-link-layer active reporting and bandwidth notification are
	 * what a downstream port advertises; DLActive shows the GPU is up. */
	exp_link(cs, off, p, 1u << 20 | 1u << 21, 1u << 13);
	cfg_put32(cs, off + EXP_SLTCAP, (uint32_t)p->port_number << 19);
	cfg_put16(cs, off + EXP_SLTSTA, 0x0040);		/* presence detected */
}

static void ext_aer(uint8_t *cs, unsigned off)
{
	cfg_put32(cs, off, EXT_CAP_ID_AER | 2u << 16 | 0u << 20);	/* v2, last */
	cfg_put32(cs, off + AER_UNCOR_SEVER, 0x00462030);	/* spec defaults */
	cfg_put32(cs, off + AER_COR_MASK, 0x00002000);	/* advisory non-fatal */
}

struct cap_slot {
	uint8_t id, off;
	void (*fill)(uint8_t *cs, unsigned off, const struct config_space_params *p);
};

/* Offsets as a GH100 shows them. */
static const struct cap_slot endpoint_caps[] = {
	{ CAP_ID_PM, 0x60, cap_pm_endpoint },
	{ CAP_ID_MSI, 0x68, cap_msi_endpoint },
	{ CAP_ID_EXP, 0x78, cap_express_endpoint },
	{ CAP_ID_MSIX, 0xc8, cap_msix },
	{ 0, 0, NULL },
};

/* Offsets as an Intel Xeon root port shows them. */
static const struct cap_slot root_port_caps[] = {
	{ CAP_ID_EXP, 0x40, cap_express_port },
	{ CAP_ID_MSI, 0x80, cap_msi_port },
	{ CAP_ID_SSVID, 0x90, cap_ssvid },
	{ CAP_ID_PM, 0xa0, cap_pm_port },
	{ 0, 0, NULL },
};

static void put_caps(uint8_t *cs, const struct cap_slot *caps,
		     const struct config_space_params *p)
{
	put8(cs, REG_CAP_PTR, caps[0].off);
	for (const struct cap_slot *c = caps; c->fill; c++) {
		put8(cs, c->off, c->id);
		put8(cs, c->off + 1u, c[1].off);	/* 0 ends the list */
		c->fill(cs, c->off, p);
	}
}

static bool valid_width(int w)
{
	static const int widths[] = { 1, 2, 4, 8, 12, 16, 32 };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (widths[i] == w)
			return true;
	return false;
}

static bool valid_link(const struct config_space_params *p)
{
	return p->max_gen >= 1 && p->max_gen <= 6 && p->cur_gen >= 1 &&
	       p->cur_gen <= p->max_gen && valid_width(p->max_width) &&
	       valid_width(p->cur_width) && p->cur_width <= p->max_width;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int put_bars(uint8_t *cs, const struct config_space_bar *bars)
{
	for (unsigned i = 0; i < 6; i++) {
		const struct config_space_bar *b = &bars[i];
		uint32_t low;

		if (!b->size)
			continue;
		if (!pow2(b->size) || b->size < 16 || (b->addr & (b->size - 1)) ||
		    (b->mem64 && i == 5) ||
		    (!b->mem64 && b->addr + b->size > FOUR_GIB))
			return -EINVAL;
		low = (uint32_t)b->addr | (b->mem64 ? 0x4u : 0) | (b->prefetch ? 0x8u : 0);
		cfg_put32(cs, REG_BAR0 + 4 * i, low);
		if (b->mem64)
			cfg_put32(cs, REG_BAR0 + 4 * ++i, (uint32_t)(b->addr >> 32));
	}
	return 0;
}

static bool valid_window(const struct config_space_window *w, uint64_t end_max)
{
	return !w->size || (!(w->base % MIB) && !(w->size % MIB) &&
			    w->base + w->size <= end_max && w->base + w->size > w->base);
}

static int put_windows(uint8_t *cs, const struct config_space_params *p)
{
	const struct config_space_window *m = &p->mem, *pf = &p->prefetch;

	if (!valid_window(m, FOUR_GIB) || !valid_window(pf, UINT64_MAX))
		return -EINVAL;
	/* No I/O window: base above limit is how a bridge says "closed". */
	put8(cs, REG_IO_BASE, 0xf0);
	put8(cs, REG_IO_LIMIT, 0x00);
	if (m->size) {
		cfg_put16(cs, REG_MEM_BASE, (uint16_t)((m->base >> 16) & 0xfff0));
		cfg_put16(cs, REG_MEM_LIMIT, (uint16_t)(((m->base + m->size - 1) >> 16) & 0xfff0));
	} else {
		cfg_put16(cs, REG_MEM_BASE, 0xfff0);
		cfg_put16(cs, REG_MEM_LIMIT, 0x0000);
	}
	/* Low nibble 1: the prefetchable window decodes 64-bit addresses. */
	if (pf->size) {
		uint64_t last = pf->base + pf->size - 1;

		cfg_put16(cs, REG_PREF_BASE, (uint16_t)(((pf->base >> 16) & 0xfff0) | 1));
		cfg_put16(cs, REG_PREF_LIMIT, (uint16_t)(((last >> 16) & 0xfff0) | 1));
		cfg_put32(cs, REG_PREF_BASE_UPPER, (uint32_t)(pf->base >> 32));
		cfg_put32(cs, REG_PREF_LIMIT_UPPER, (uint32_t)(last >> 32));
	} else {
		cfg_put16(cs, REG_PREF_BASE, 0xfff1);
		cfg_put16(cs, REG_PREF_LIMIT, 0x0001);
	}
	return 0;
}

int config_space_build(uint8_t out[CONFIG_SPACE_SIZE], const struct config_space_params *p)
{
	bool port = p->type == CONFIG_SPACE_ROOT_PORT;
	int r;

	if (p->type != CONFIG_SPACE_ENDPOINT && !port)
		return -EINVAL;
	if (!valid_link(p))
		return -EINVAL;
	if (port && (p->secondary_bus <= p->primary_bus ||
		     p->subordinate_bus < p->secondary_bus))
		return -EINVAL;
	memset(out, 0, CONFIG_SPACE_SIZE);
	cfg_put16(out, REG_VENDOR, p->vendor);
	cfg_put16(out, REG_DEVICE, p->device);
	cfg_put16(out, REG_COMMAND, CMD_MEMORY | CMD_MASTER | CMD_INTX_DISABLE |
	      (port ? CMD_SERR : 0));
	cfg_put16(out, REG_STATUS, STATUS_CAP_LIST);
	put8(out, REG_REVISION, p->revision);
	put8(out, REG_CLASS, (uint8_t)p->class_code);
	put8(out, REG_CLASS + 1, (uint8_t)(p->class_code >> 8));
	put8(out, REG_CLASS + 2, (uint8_t)(p->class_code >> 16));
	put8(out, REG_HEADER_TYPE, port ? 0x01 : 0x00);
	put8(out, REG_IRQ_LINE, p->irq_line);
	put8(out, REG_IRQ_PIN, 0x01);		/* INTA# */
	if (port) {
		put8(out, REG_PRIMARY_BUS, p->primary_bus);
		put8(out, REG_SECONDARY_BUS, p->secondary_bus);
		put8(out, REG_SUBORDINATE_BUS, p->subordinate_bus);
		cfg_put16(out, REG_BRIDGE_CONTROL, 0x0002);	/* SERR# forwarding */
		if ((r = put_windows(out, p)) < 0)
			return r;
		put_caps(out, root_port_caps, p);
	} else {
		cfg_put16(out, REG_SUBSYS_VENDOR, p->subsys_vendor);
		cfg_put16(out, REG_SUBSYS_DEVICE, p->subsys_device);
		if ((r = put_bars(out, p->bars)) < 0)
			return r;
		put_caps(out, endpoint_caps, p);
	}
	ext_aer(out, 0x100);
	return 0;
}
