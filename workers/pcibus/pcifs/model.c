/* The PCI bus model's writes, with the kernel's checks in the kernel's
 * order and its errnos (see model.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/pcibus/pcifs/model.h"

#define PAGE 4096

int pcifs_find(const struct pcifs_model *m, const char *bdf)
{
	for (int i = 0; i < m->nfns; i++)
		if (!strcmp(m->fns[i].bdf, bdf))
			return i;
	return -1;
}

const char *pcifs_driver_name(const struct pcifs_model *m, const struct pcifs_fn *f)
{
	return f->driver >= 0 ? m->drv[f->driver].name : NULL;
}

/* A write's bytes as a string: sysfs stores get at most a page. */
static int arg(const char *buf, size_t len, char *out)
{
	if (len >= PAGE)
		return -EINVAL;
	memcpy(out, buf, len);
	out[len] = '\0';
	return 0;
}

/* bus_find_device_by_name(): sysfs_streq(), one trailing newline allowed. */
static int find_present(const struct pcifs_model *m, const char *buf, size_t len)
{
	char s[PAGE];
	int i;

	if (arg(buf, len, s) < 0)
		return -1;
	if (len && s[len - 1] == '\n')
		s[len - 1] = '\0';
	i = pcifs_find(m, s);
	return i >= 0 && m->fns[i].present ? i : -1;
}

/* kstrtoul(s, 0): 0x/0 prefixes, one trailing newline, nothing else. */
static int kstrtoul(const char *buf, size_t len, unsigned long max, unsigned long *out)
{
	char s[PAGE], *end;
	unsigned long v;

	if (arg(buf, len, s) < 0)
		return -EINVAL;
	if (len && s[len - 1] == '\n')
		s[--len] = '\0';
	if (!len || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (*end || end == s)
		return -EINVAL;
	if (errno == ERANGE || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static bool id_match(const struct pcifs_id *id, const struct pcifs_fn *f)
{
	return (id->vendor == PCIFS_ANY_ID || id->vendor == f->vendor) &&
	       (id->device == PCIFS_ANY_ID || id->device == f->device) &&
	       (id->subvendor == PCIFS_ANY_ID || id->subvendor == f->subvendor) &&
	       (id->subdevice == PCIFS_ANY_ID || id->subdevice == f->subdevice) &&
	       !((id->class_code ^ f->class_code) & id->class_mask);
}

/* pci_match_device(): an override names the one driver that may match;
 * else the dynamic ids, else the static table (the driver staged for the
 * function: vfio-pci has none that matches without an override). */
static bool matches(const struct pcifs_model *m, int drv, const struct pcifs_fn *f)
{
	const struct pcifs_driver *d = &m->drv[drv];

	if (f->override)
		return !strcmp(f->override, d->name);
	for (int i = 0; i < d->nids; i++)
		if (id_match(&d->ids[i], f))
			return true;
	return !strcmp(f->home, d->name);
}

/* The driver's probe: vfio-pci takes any normal function in an IOMMU
 * group (no IOMMU: vfio_iommu_group_get() fails, -EINVAL); every other
 * driver only the devices it was written for. */
static int probe(const struct pcifs_model *m, int drv, const struct pcifs_fn *f)
{
	const char *name = m->drv[drv].name;

	if (!strcmp(name, "vfio-pci"))
		return f->bridge || !m->iommu ? -EINVAL : 0;
	return strcmp(name, f->home) ? -ENODEV : 0;
}

static void hide_vfs(struct pcifs_model *m, struct pcifs_fn *pf);

/* nvidia holding a GPU with clients (profile.c says why EBUSY). */
static bool in_use(const struct pcifs_model *m, int i)
{
	const struct pcifs_fn *f = &m->fns[i];

	return m->busy && f->driver >= 0 && !strcmp(m->drv[f->driver].name, "nvidia") &&
	       m->busy(m, i);
}

static void detach(struct pcifs_model *m, struct pcifs_fn *f)
{
	/* The PF driver's remove disables SR-IOV (mlx5_sriov_detach). */
	if (f->numvfs)
		hide_vfs(m, f);
	f->driver = -1;
	m->gen++;
}

static void gone(struct pcifs_model *m, struct pcifs_fn *f)
{
	if (f->driver >= 0)
		detach(m, f);
	f->present = false;
	free(f->override);
	f->override = NULL;
	m->gen++;
}

static void hide_vfs(struct pcifs_model *m, struct pcifs_fn *pf)
{
	for (int i = 0; i < pf->numvfs; i++)
		gone(m, &m->fns[pf->vf0 + i]);
	pf->numvfs = 0;
}

/* device_attach(): the first driver that matches and probes. */
static void autoprobe(struct pcifs_model *m, struct pcifs_fn *f)
{
	for (int d = 0; d < m->ndrv && f->driver < 0; d++)
		if (matches(m, d, f) && probe(m, d, f) == 0) {
			f->driver = d;
			m->gen++;
		}
}

ssize_t pcifs_bind(struct pcifs_model *m, int drv, const char *buf, size_t len)
{
	int i = find_present(m, buf, len), r;

	if (i < 0 || !matches(m, drv, &m->fns[i]))
		return -ENODEV;
	if (m->fns[i].driver >= 0)
		return -EBUSY;
	if ((r = probe(m, drv, &m->fns[i])) < 0)
		return r;	/* since 5.13 bind returns the probe's error */
	m->fns[i].driver = drv;
	m->gen++;
	return (ssize_t)len;
}

ssize_t pcifs_unbind(struct pcifs_model *m, int drv, const char *buf, size_t len)
{
	int i = find_present(m, buf, len);

	if (i < 0 || m->fns[i].driver != drv)
		return -ENODEV;
	if (in_use(m, i))
		return -EBUSY;
	detach(m, &m->fns[i]);
	return (ssize_t)len;
}

/* "vendor device [subvendor subdevice [class class_mask [driver_data]]]" */
static int parse_id(const char *buf, size_t len, struct pcifs_id *id, int *fields)
{
	char s[PAGE];
	unsigned long data = 0;

	if (arg(buf, len, s) < 0)
		return -EINVAL;
	*id = (struct pcifs_id){ 0, 0, PCIFS_ANY_ID, PCIFS_ANY_ID, 0, 0 };
	*fields = sscanf(s, "%x %x %x %x %x %x %lx", &id->vendor, &id->device, &id->subvendor,
			 &id->subdevice, &id->class_code, &id->class_mask, &data);
	return *fields < 2 ? -EINVAL : 0;
}

ssize_t pcifs_new_id(struct pcifs_model *m, int drv, const char *buf, size_t len)
{
	struct pcifs_driver *d = &m->drv[drv];
	struct pcifs_id id;
	int fields;

	if (parse_id(buf, len, &id, &fields) < 0)
		return -EINVAL;
	/* pci_match_device() on a device with just these ids. */
	if (fields != 7) {
		struct pcifs_fn probe_fn = { .vendor = (uint16_t)id.vendor,
					     .device = (uint16_t)id.device,
					     .subvendor = (uint16_t)id.subvendor,
					     .subdevice = (uint16_t)id.subdevice,
					     .class_code = id.class_code };

		for (int i = 0; i < d->nids; i++)
			if (id_match(&d->ids[i], &probe_fn))
				return -EEXIST;
		for (int i = 0; i < m->nfns; i++)
			if (m->fns[i].vendor == id.vendor && m->fns[i].device == id.device &&
			    !strcmp(m->fns[i].home, d->name))
				return -EEXIST;
	}
	if (d->nids == PCIFS_MAX_IDS)
		return -ENOMEM;
	d->ids[d->nids++] = id;
	/* pci_add_dynid() -> driver_attach(): every unbound device now matching. */
	for (int i = 0; i < m->nfns; i++) {
		struct pcifs_fn *f = &m->fns[i];

		if (f->present && f->driver < 0 && matches(m, drv, f) && probe(m, drv, f) == 0)
			f->driver = drv;
	}
	m->gen++;
	return (ssize_t)len;
}

ssize_t pcifs_remove_id(struct pcifs_model *m, int drv, const char *buf, size_t len)
{
	struct pcifs_driver *d = &m->drv[drv];
	struct pcifs_id id;
	int fields;

	if (parse_id(buf, len, &id, &fields) < 0)
		return -EINVAL;
	for (int i = 0; i < d->nids; i++) {
		const struct pcifs_id *x = &d->ids[i];

		if (x->vendor == id.vendor && x->device == id.device &&
		    (id.subvendor == PCIFS_ANY_ID || x->subvendor == id.subvendor) &&
		    (id.subdevice == PCIFS_ANY_ID || x->subdevice == id.subdevice) &&
		    !((x->class_code ^ id.class_code) & id.class_mask)) {
			memmove(&d->ids[i], &d->ids[i + 1], (size_t)(d->nids - i - 1) * sizeof(*x));
			d->nids--;
			m->gen++;
			return (ssize_t)len;
		}
	}
	return -ENODEV;
}

/* drivers_probe: a probe error is the driver's to log; the write succeeds
 * and the caller reads the driver link to see what happened. */
ssize_t pcifs_drivers_probe(struct pcifs_model *m, const char *buf, size_t len)
{
	int i = find_present(m, buf, len);

	if (i < 0)
		return -ENODEV;
	if (m->fns[i].driver < 0)
		autoprobe(m, &m->fns[i]);
	return (ssize_t)len;
}

/* rescan: every removed function comes back as a new device (no
 * override, SR-IOV off) and is probed; VFs come back only through their PF. */
ssize_t pcifs_rescan(struct pcifs_model *m, const char *buf, size_t len)
{
	unsigned long v;
	int r = kstrtoul(buf, len, ~0UL, &v);

	if (r < 0)
		return r;
	for (int i = 0; v && i < m->nfns; i++) {
		struct pcifs_fn *f = &m->fns[i];

		if (f->present || f->pf >= 0)
			continue;
		f->present = true;
		f->numvfs = 0;
		m->gen++;
		autoprobe(m, f);
	}
	return (ssize_t)len;
}

ssize_t pcifs_set_override(struct pcifs_model *m, int fn, const char *buf, size_t len)
{
	struct pcifs_fn *f = &m->fns[fn];
	char *s;
	size_t n;

	if (len > PCIFS_OVERRIDE_MAX)
		return -EINVAL;
	n = strnlen(buf, len);
	n = strcspn(buf, "\n") < n ? strcspn(buf, "\n") : n;	/* up to the first newline */
	if (!n)
		s = NULL;
	else if (!(s = strndup(buf, n)))
		return -ENOMEM;
	free(f->override);
	f->override = s;
	m->gen++;
	return (ssize_t)len;
}

ssize_t pcifs_remove(struct pcifs_model *m, int fn, const char *buf, size_t len)
{
	struct pcifs_fn *f = &m->fns[fn];
	size_t plen = strlen(f->devpath);
	unsigned long v;
	int r = kstrtoul(buf, len, ~0UL, &v);

	if (r < 0)
		return r;
	if (!v)
		return (ssize_t)len;
	for (int i = 0; i < m->nfns; i++)
		if (m->fns[i].present && (i == fn || (!strncmp(m->fns[i].devpath, f->devpath, plen) &&
						      m->fns[i].devpath[plen] == '/')) &&
		    in_use(m, i))
			return -EBUSY;
	/* A bridge takes everything below it along. */
	for (int i = 0; i < m->nfns; i++)
		if (m->fns[i].present && i != fn && !strncmp(m->fns[i].devpath, f->devpath, plen) &&
		    m->fns[i].devpath[plen] == '/')
			gone(m, &m->fns[i]);
	gone(m, f);
	return (ssize_t)len;
}

ssize_t pcifs_reset(struct pcifs_model *m, int fn, const char *buf, size_t len)
{
	unsigned long v;
	int r = kstrtoul(buf, len, ~0UL, &v);

	if (r < 0)
		return r;
	if (v != 1)
		return -EINVAL;
	m->fns[fn].resets++;
	return (ssize_t)len;
}

/* sriov_numvfs_store(), in its order of checks. */
ssize_t pcifs_set_numvfs(struct pcifs_model *m, int fn, const char *buf, size_t len)
{
	struct pcifs_fn *f = &m->fns[fn];
	unsigned long v;
	int r = kstrtoul(buf, len, 0xffff, &v);

	if (r < 0)
		return r;
	if ((int)v > f->totalvfs)
		return -ERANGE;
	if ((int)v == f->numvfs)
		return (ssize_t)len;
	if (f->driver < 0 || !m->drv[f->driver].sriov)
		return -ENOENT;
	if (v == 0) {
		hide_vfs(m, f);
		return (ssize_t)len;
	}
	if (f->numvfs)
		return -EBUSY;
	f->numvfs = (int)v;
	for (int i = 0; i < f->numvfs; i++) {
		struct pcifs_fn *vf = &m->fns[f->vf0 + i];

		vf->present = true;
		vf->driver = -1;
		autoprobe(m, vf);	/* sriov_drivers_autoprobe */
	}
	m->gen++;
	return (ssize_t)len;
}

int pcifs_model_check(const struct pcifs_model *m, char *why, size_t len)
{
	for (int i = 0; i < m->nfns; i++) {
		const struct pcifs_fn *f = &m->fns[i];
		const struct pcifs_fn *pf = f->pf >= 0 ? &m->fns[f->pf] : NULL;

		if (f->driver >= m->ndrv || (f->driver >= 0 && !f->present)) {
			snprintf(why, len, "%s: driver %d but present=%d", f->bdf, f->driver, f->present);
			return -EUCLEAN;
		}
		if (pf && f->present && (!pf->present || i - pf->vf0 >= pf->numvfs)) {
			snprintf(why, len, "%s: VF present, PF %s has %d VFs", f->bdf, pf->bdf,
				 pf->numvfs);
			return -EUCLEAN;
		}
		if (f->numvfs < 0 || f->numvfs > f->totalvfs || (f->numvfs && !f->present)) {
			snprintf(why, len, "%s: %d of %d VFs", f->bdf, f->numvfs, f->totalvfs);
			return -EUCLEAN;
		}
	}
	return 0;
}
