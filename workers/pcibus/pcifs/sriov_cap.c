/* A PF's SR-IOV Extended Capability (PCIe Base Spec 9.3.3), laid into its
 * staged config space as mokka-pcifs serves it (sysfs config and
 * /proc/bus/pci), so lspci -vv shows "Single Root I/O Virtualization"
 * with the live NumVFs and VF Enable.  Appended to the end of the
 * extended capability chain at the first free 64-byte slot. */
#include <string.h>

#include "workers/pcibus/config_le.h"
#include "workers/pcibus/pcifs/view.h"

#define EXT_START 0x100
#define SRIOV_ID 0x0010
#define SRIOV_LEN 0x40
#define SRIOV_CTRL_VFE 0x0001	/* VF Enable */
#define SRIOV_CTRL_MSE 0x0008	/* VF Memory Space Enable */
#define SRIOV_CTRL_ARI 0x0010	/* ARI Capable Hierarchy */
#define SRIOV_PAGE_SIZES 0x553	/* 4K..., as GPUs and ConnectX report */

/* The kernel's walk (drivers/pci/pci.c, PCI_EXT_CAP_NEXT): the next
 * offset's low two bits are reserved, and at most this many entries are
 * followed before the chain counts as a loop. */
#define EXT_NEXT(h) (((h) >> 20) & 0xffcu)
#define EXT_TTL ((4096 - EXT_START) / 8)

static bool zero(const uint8_t *p, unsigned off, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (p[off + i])
			return false;
	return true;
}

/* 0, or -1 when the space has no room or its chain is broken (a loop, an
 * offset out of the space, an entry pointing at an empty header): a
 * broken chain is left alone. */
int pcifs_sriov_cap(uint8_t *cs, size_t len, const struct pcifs_model *m, const struct pcifs_fn *pf)
{
	unsigned last = EXT_START, at = 0, hops = 0;
	uint32_t h;

	if (len < 4096 || pf->totalvfs <= 0)
		return -1;
	/* The chain's last entry. */
	while ((h = cfg_get32(cs, last)) && EXT_NEXT(h)) {
		if ((h & 0xffff) == SRIOV_ID)
			return 0;	/* already there */
		if (++hops > EXT_TTL)
			return -1;
		last = EXT_NEXT(h);
		if (last < EXT_START || last > 4096 - 4)
			return -1;
	}
	if ((h & 0xffff) == SRIOV_ID)
		return 0;
	if (!h && last != EXT_START)
		return -1;
	if (!h) {
		at = EXT_START;	/* no extended capability at all: the first */
	} else {
		for (unsigned off = (last + 0x48 + 0x3f) & ~0x3fu; off + SRIOV_LEN <= 4096 && !at;
		     off += 0x40)
			at = zero(cs, off, SRIOV_LEN) ? off : 0;
		if (!at)
			return -1;
		cfg_put32(cs, last, (h & 0xfffff) | at << 20);
	}
	cfg_put32(cs, at, SRIOV_ID | 1u << 16);	/* v1, last */
	cfg_put32(cs, at + 0x04, 0);		/* no VF Migration */
	cfg_put16(cs, at + 0x08, (uint16_t)(SRIOV_CTRL_ARI |
			     (pf->numvfs ? SRIOV_CTRL_VFE | SRIOV_CTRL_MSE : 0)));
	cfg_put16(cs, at + 0x0a, 0);
	cfg_put16(cs, at + 0x0c, (uint16_t)pf->totalvfs);	/* InitialVFs */
	cfg_put16(cs, at + 0x0e, (uint16_t)pf->totalvfs);
	cfg_put16(cs, at + 0x10, (uint16_t)pf->numvfs);
	cfg_put16(cs, at + 0x14, (uint16_t)pf->vf_offset);
	cfg_put16(cs, at + 0x16, (uint16_t)pf->vf_stride);
	cfg_put16(cs, at + 0x1a, m->fns[pf->vf0].device);
	cfg_put32(cs, at + 0x1c, SRIOV_PAGE_SIZES);
	cfg_put32(cs, at + 0x20, 1);			/* System Page Size: 4K */
	return 0;
}
