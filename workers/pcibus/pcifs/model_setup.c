/* Building the PCI bus model: drivers, functions, VF slots, IOMMU groups;
 * and carrying a running node's bindings over to a re-read tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/pcibus/pcifs/model.h"

/* Drivers whose sysfs sriov_numvfs works (they have sriov_configure:
 * mlx5_core; nvidia's, used by sriov-manage on boards with SR-IOV);
 * vfio-pci's needs enable_sriov=1, off by default.  A function without
 * the capability has no sriov_* files whatever its driver. */
static const char *const sriov_drivers[] = { "mlx5_core", "nvidia", NULL };

const struct pcifs_sriov pcifs_mlx5_sriov = { PCIFS_MLX5_TOTALVFS, 1, 1, 0 };

int pcifs_driver_get(struct pcifs_model *m, const char *name)
{
	struct pcifs_driver *d;

	for (int i = 0; i < m->ndrv; i++)
		if (!strcmp(m->drv[i].name, name))
			return i;
	if (m->ndrv == PCIFS_MAX_DRIVERS || strlen(name) >= sizeof(d->name))
		return -ENOSPC;
	d = &m->drv[m->ndrv];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	for (int i = 0; sriov_drivers[i]; i++)
		d->sriov |= !strcmp(sriov_drivers[i], name);
	return m->ndrv++;
}

int pcifs_model_add(struct pcifs_model *m, const struct pcifs_fn *f)
{
	if (m->nfns == PCIFS_MAX_FNS)
		return -ENOSPC;
	m->fns[m->nfns] = *f;
	m->fns[m->nfns].override = NULL;
	m->fns[m->nfns].pf = -1;
	return m->nfns++;
}

/* ConnectX VF device ids by PF (the PRM's table); others keep the PF's. */
static uint16_t vf_device(uint16_t vendor, uint16_t pf)
{
	static const uint16_t map[][2] = {
		{ 0x1017, 0x1018 }, { 0x1019, 0x101a }, { 0x101b, 0x101c },
		{ 0x101d, 0x101e }, { 0x1021, 0x101e }, { 0x1023, 0x101e },
	};

	for (size_t i = 0; vendor == 0x15b3 && i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i][0] == pf)
			return map[i][1];
	return pf;
}

/* VF i's routing id is the PF's + First VF Offset + i * VF Stride (the
 * SR-IOV capability's, ARI: the function number runs into the device
 * number), a sibling of the PF below the same port. */
int pcifs_model_add_vfs(struct pcifs_model *m, int pf, const struct pcifs_sriov *cap)
{
	unsigned dom, bus, dev, fn;
	struct pcifs_fn *p = &m->fns[pf];
	const char *slash;

	if (cap->offset < 1 || cap->stride < 1 || cap->total_vfs < 0 ||
	    sscanf(p->bdf, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4 ||
	    !(slash = strrchr(p->devpath, '/')))
		return -EINVAL;
	p->totalvfs = 0;
	p->vf0 = m->nfns;
	p->vf_offset = cap->offset;
	p->vf_stride = cap->stride;
	for (int i = 0; i < cap->total_vfs; i++) {
		unsigned rid = (bus << 8 | dev << 3 | fn) + (unsigned)cap->offset +
			       (unsigned)(i * cap->stride);
		struct pcifs_fn vf = *p;
		int r;

		if (rid > 0xffff)
			break;
		snprintf(vf.bdf, sizeof(vf.bdf), "%04x:%02x:%02x.%x", dom, rid >> 8 & 0xff,
			 rid >> 3 & 0x1f, rid & 7);
		if (pcifs_find(m, vf.bdf) >= 0)
			break;	/* the slot is another function's */
		snprintf(vf.devpath, sizeof(vf.devpath), "%.*s/%s", (int)(slash - p->devpath),
			 p->devpath, vf.bdf);
		vf.device = cap->vf_device ? cap->vf_device : vf_device(p->vendor, p->device);
		vf.present = false;
		vf.driver = -1;
		vf.totalvfs = vf.numvfs = vf.vf0 = vf.vf_offset = vf.vf_stride = 0;
		if ((r = pcifs_model_add(m, &vf)) < 0)
			return r;
		m->fns[r].pf = pf;
		p = &m->fns[pf];
		p->totalvfs++;
	}
	return 0;
}

void pcifs_model_groups(struct pcifs_model *m)
{
	for (int i = 0; i < m->nfns; i++)
		m->fns[i].group = i;
}

void pcifs_model_free(struct pcifs_model *m)
{
	for (int i = 0; i < m->nfns; i++) {
		free(m->fns[i].override);
		m->fns[i].override = NULL;
	}
}
