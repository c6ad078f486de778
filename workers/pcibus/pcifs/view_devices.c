/* mokka-pcifs's device directories (view.h): the staged files of each
 * function with the model's attributes laid over them; VFs borrow their
 * PF's staged files; a removed function is gone with everything below it.
 * And the content and writes of every attribute the model answers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workers/pcibus/pcifs/view.h"
#include "workers/pcibus/pcifs/view_ib.h"

int view_resolve_devices(const struct view *v, const char *rel, struct view_node *n);
int view_list_devices(const struct view *v, const char *rel, view_fill fill, void *ctx);

/* The function whose directory is rel or holds it (the deepest). */
static int owner(const struct pcifs_model *m, const char *rel)
{
	size_t best = 0;
	int fn = -1;

	for (int i = 0; i < m->nfns; i++) {
		size_t k = strlen(m->fns[i].devpath);

		if (k > best && !strncmp(rel, m->fns[i].devpath, k) && (!rel[k] || rel[k] == '/')) {
			best = k;
			fn = i;
		}
	}
	return fn;
}

static void ups(const char *devpath, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (const char *p = devpath; p && off + 4 < len; p = strchr(p + 1, '/'))
		off += (size_t)snprintf(out + off, len - off, "../");
}

static int pass(const char *path, struct view_node *n, bool files_only)
{
	struct stat st;
	ssize_t k;

	if (lstat(path, &st) < 0)
		return -errno;
	n->mode = st.st_mode & 07777;
	if (S_ISREG(st.st_mode)) {
		n->kind = V_PASS;
		snprintf(n->path, sizeof(n->path), "%s", path);
		return 0;
	}
	if (files_only)
		return -ENOENT;
	if (S_ISDIR(st.st_mode)) {
		n->kind = V_DIR;
		return 0;
	}
	if (!S_ISLNK(st.st_mode) || (k = readlink(path, n->path, sizeof(n->path) - 1)) < 0)
		return -ENOENT;
	n->path[k] = '\0';
	n->kind = V_LINK;
	return 0;
}

static const char *const dynamic[] = {
	"driver", "driver_override", "remove", "reset", "iommu_group", "sriov_totalvfs",
	"sriov_numvfs", "sriov_offset", "sriov_stride", "sriov_vf_device",
	"sriov_drivers_autoprobe", "physfn", NULL,
};

/* A PF's read-only SR-IOV files (drivers/pci/iov.c), beside sriov_numvfs. */
static const struct { const char *name; int attr; mode_t mode; } sriov_files[] = {
	{ "sriov_totalvfs", A_TOTALVFS, 0444 }, { "sriov_numvfs", A_NUMVFS, 0644 },
	{ "sriov_offset", A_SRIOV_OFFSET, 0444 }, { "sriov_stride", A_SRIOV_STRIDE, 0444 },
	{ "sriov_vf_device", A_SRIOV_VF_DEVICE, 0444 },
	{ "sriov_drivers_autoprobe", A_SRIOV_AUTOPROBE, 0644 },
};

static bool is_dynamic(const char *name)
{
	for (int i = 0; dynamic[i]; i++)
		if (!strcmp(name, dynamic[i]))
			return true;
	return !strncmp(name, "virtfn", 6);
}

static int attr(struct view_node *n, mode_t mode, int a)
{
	n->kind = V_ATTR;
	n->mode = mode;
	n->attr = a;
	return 0;
}

static int link_up(struct view_node *n, const struct pcifs_fn *f, const char *fmt, const char *a,
		   int num)
{
	char up[512], tail[256];

	ups(f->devpath, up, sizeof(up));
	snprintf(tail, sizeof(tail), fmt, a, num);
	n->kind = V_LINK;
	n->mode = 0777;
	return snprintf(n->path, sizeof(n->path), "%s%s", up, tail) >= (int)sizeof(n->path)
	       ? -ENAMETOOLONG : 0;
}

/* The model's own names in a function's directory; -ENOENT where one
 * does not apply (no driver, no SR-IOV): never the staged file then. */
static int dyn_attr(const struct view *v, int fn, const char *name, struct view_node *n)
{
	const struct pcifs_model *m = v->m;
	const struct pcifs_fn *f = &m->fns[fn];
	int k;

	if (!strcmp(name, "driver"))
		return f->driver < 0 ? -ENOENT
				     : link_up(n, f, "bus/pci/drivers/%s%.0d", m->drv[f->driver].name, 0);
	if (!strcmp(name, "driver_override"))
		return attr(n, 0644, A_OVERRIDE);
	if (!strcmp(name, "remove"))
		return attr(n, 0200, A_REMOVE);
	if (!strcmp(name, "reset"))
		return attr(n, 0200, A_RESET);
	if (!strcmp(name, "iommu_group"))
		return !m->iommu ? -ENOENT : link_up(n, f, "kernel/iommu_groups/%s%d", "", f->group);
	for (size_t i = 0; i < sizeof(sriov_files) / sizeof(sriov_files[0]); i++)
		if (!strcmp(name, sriov_files[i].name))
			return f->totalvfs <= 0 ? -ENOENT
			       : attr(n, sriov_files[i].mode, sriov_files[i].attr);
	if (!strcmp(name, "physfn")) {
		if (f->pf < 0)
			return -ENOENT;
		n->kind = V_LINK;
		n->mode = 0777;
		snprintf(n->path, sizeof(n->path), "../%s", m->fns[f->pf].bdf);
		return 0;
	}
	/* virtfnN */
	if (sscanf(name + 6, "%d", &k) != 1 || k < 0 || k >= f->numvfs)
		return -ENOENT;
	n->kind = V_LINK;
	n->mode = 0777;
	snprintf(n->path, sizeof(n->path), "../%s", m->fns[f->vf0 + k].bdf);
	return 0;
}

static bool is_ib(const struct view *v, const char *rest)
{
	char first[32];
	size_t k = strcspn(rest, "/");

	snprintf(first, sizeof(first), "%.*s", (int)(k < sizeof(first) ? k : 0), rest);
	return v->ibsys[0] && view_ib_class(first);
}

/* An HCA's infiniband, infiniband_verbs, infiniband_mad: ib's tree (so the
 * class links resolve through the view), while mlx5_core holds it; a VF's
 * are its PF's files under its own names (view_ib.c). */
static int resolve_ib(const struct view *v, int fn, const char *rest, struct view_node *n)
{
	const struct pcifs_fn *f = &v->m->fns[fn];
	char path[PATH_MAX * 2];
	bool dev = false;
	int r;

	if (!view_ib_held(v->m, f))
		return -ENOENT;
	if (f->pf < 0) {
		snprintf(path, sizeof(path), "%s/%s/%s", v->ibsys, f->backing, rest);
		return pass(path, n, false);
	}
	if (!strchr(rest, '/')) {
		n->kind = V_DIR;
		n->mode = 0755;
		return 0;
	}
	if ((r = view_ib_vf_path(v, fn, rest, path, sizeof(path), &dev)) < 0)
		return r;
	if (!dev && view_ib_vf_guid_file(rest) && (r = pass(path, n, true)) == 0) {
		attr(n, 0444, A_VF_GUID);	/* n->path: the PF's file */
		return 0;
	}
	if (!dev)
		return pass(path, n, false);
	if (strstr(rest, "/ibdev"))
		return attr(n, 0444, A_VF_IBDEV);
	n->kind = V_LINK;
	n->mode = 0777;
	snprintf(n->path, sizeof(n->path), "../../../%s", f->bdf);
	return 0;
}

int view_resolve_devices(const struct view *v, const char *rel, struct view_node *n)
{
	const struct pcifs_model *m = v->m;
	int fn = owner(m, rel);
	const struct pcifs_fn *f;
	const char *rest;
	char path[PATH_MAX * 2];

	if (fn < 0) {
		snprintf(path, sizeof(path), "%s/%s", v->sys, rel);
		return pass(path, n, false);
	}
	f = &m->fns[fn];
	if (!f->present)
		return -ENOENT;
	n->fn = fn;
	rest = rel + strlen(f->devpath);
	if (!*rest) {
		n->kind = V_DIR;
		n->mode = 0755;
		return 0;
	}
	rest++;
	if (!strchr(rest, '/') && is_dynamic(rest))
		return dyn_attr(v, fn, rest, n);
	if (f->pf >= 0 && !strcmp(rest, "device"))
		return attr(n, 0444, A_VF_DEVICE);
	if (f->pf >= 0 && !strcmp(rest, "config"))
		return attr(n, 0644, A_VF_CONFIG);
	if (f->totalvfs > 0 && !strcmp(rest, "config"))
		return attr(n, 0644, A_PF_CONFIG);
	if (is_ib(v, rest))
		return resolve_ib(v, fn, rest, n);
	if (f->pf >= 0 && strchr(rest, '/'))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/%s", v->sys, f->backing, rest);
	return pass(path, n, f->pf >= 0);
}

static const char *const ib_dirs[] = { "infiniband", "infiniband_mad", "infiniband_verbs", NULL };

static bool staged_has(const struct view *v, const char *devpath, const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s/%s", v->sys, devpath, name);
	return access(path, F_OK) == 0;
}

static bool parent_is(const char *devpath, const char *rel)
{
	size_t k = strlen(rel);

	return !strncmp(devpath, rel, k) && devpath[k] == '/' && !strchr(devpath + k + 1, '/');
}

static int fill_rel(const struct view *v, const char *rel, const char *name, view_fill fill,
		    void *ctx)
{
	char p[PATH_MAX];
	struct view_node n;

	memset(&n, 0, sizeof(n));
	n.fn = n.drv = -1;
	if (snprintf(p, sizeof(p), "%s/%s", rel, name) >= (int)sizeof(p) ||
	    view_resolve_devices(v, p, &n) < 0)
		return 0;
	return fill(ctx, name, &n);
}

int view_list_devices(const struct view *v, const char *rel, view_fill fill, void *ctx)
{
	const struct pcifs_model *m = v->m;
	int fn = owner(m, rel), r = 0;
	bool own = fn >= 0 && !strcmp(m->fns[fn].devpath, rel);
	char dir[PATH_MAX * 2], name[32];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", v->sys, own ? m->fns[fn].backing : rel);
	if (fn >= 0 && !own) {
		const char *rest = rel + strlen(m->fns[fn].devpath);
		bool ib = is_ib(v, rest + 1), dev;

		if (ib && m->fns[fn].pf >= 0 && !strchr(rest + 1, '/'))
			return view_ib_list_vf_class(v, fn, rest + 1, fill, ctx);
		if (ib && m->fns[fn].pf >= 0) {
			if (view_ib_vf_path(v, fn, rest + 1, dir, sizeof(dir), &dev) < 0)
				return -ENOENT;
		} else
			snprintf(dir, sizeof(dir), "%s/%s%s", ib ? v->ibsys : v->sys,
				 m->fns[fn].backing, rest);
	}
	if ((d = opendir(dir))) {
		while (r == 0 && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    !(own && is_dynamic(e->d_name)))
				r = fill_rel(v, rel, e->d_name, fill, ctx);
		closedir(d);
	} else if (!own || m->fns[fn].pf < 0)
		return -errno;
	for (int i = 0; own && r == 0 && dynamic[i]; i++)
		r = fill_rel(v, rel, dynamic[i], fill, ctx);
	for (int i = 0; own && r == 0 && ib_dirs[i]; i++)
		if (!staged_has(v, m->fns[fn].backing, ib_dirs[i]))
			r = fill_rel(v, rel, ib_dirs[i], fill, ctx);
	for (int i = 0; own && r == 0 && i < m->fns[fn].numvfs; i++) {
		snprintf(name, sizeof(name), "virtfn%d", i);
		r = fill_rel(v, rel, name, fill, ctx);
	}
	for (int i = 0; r == 0 && i < m->nfns; i++)
		if (m->fns[i].pf >= 0 && m->fns[i].present && parent_is(m->fns[i].devpath, rel))
			r = fill_rel(v, rel, m->fns[i].bdf, fill, ctx);
	return r;
}

/* ---- attribute content and writes -------------------------------------- */

/* A VF's config: its PF's with its device id; a PF's: with its SR-IOV capability. */
static ssize_t fn_config(const struct view *v, const struct pcifs_fn *f, char *buf, size_t len)
{
	char path[PATH_MAX * 2];
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/config", v->sys, f->backing);
	if ((fd = view_open_file(v, path, O_RDONLY)) < 0)
		return fd;
	k = read(fd, buf, len);
	close(fd);
	if (k >= 4 && f->pf >= 0) {
		buf[2] = (char)(f->device & 0xff);
		buf[3] = (char)(f->device >> 8);
	}
	if (k >= 4096 && f->pf < 0)
		pcifs_sriov_cap((uint8_t *)buf, (size_t)k, v->m, f);
	return k < 0 ? -errno : k;
}

ssize_t view_read_attr(const struct view *v, const struct view_node *n, char *buf, size_t len)
{
	const struct pcifs_model *m = v->m;
	const struct pcifs_fn *f = n->fn >= 0 ? &m->fns[n->fn] : NULL;
	int vfio = -1;

	switch (n->attr) {
	case A_OVERRIDE:
		return snprintf(buf, len, "%s\n", f->override ? f->override : "(null)");
	case A_TOTALVFS:
		return snprintf(buf, len, "%d\n", f->totalvfs);
	case A_NUMVFS:
		return snprintf(buf, len, "%d\n", f->numvfs);
	case A_SRIOV_OFFSET:
		return snprintf(buf, len, "%d\n", f->vf_offset);
	case A_SRIOV_STRIDE:
		return snprintf(buf, len, "%d\n", f->vf_stride);
	case A_SRIOV_VF_DEVICE:	/* "%x", no 0x (sriov_vf_device_show) */
		return snprintf(buf, len, "%x\n", f->totalvfs > 0 ? m->fns[f->vf0].device : 0);
	case A_SRIOV_AUTOPROBE:
		return snprintf(buf, len, "1\n");
	case A_AUTOPROBE:
		return snprintf(buf, len, "1\n");
	case A_VF_DEVICE:
		return snprintf(buf, len, "0x%04x\n", f->device);
	case A_VF_CONFIG:
	case A_PF_CONFIG:
		return fn_config(v, f, buf, len);
	case A_CMDLINE:
		return snprintf(buf, len, "%s%s\n", v->cmdline,
				m->iommu && !strstr(v->cmdline, "intel_iommu=on")
				? " intel_iommu=on iommu=pt" : "");
	case A_GROUP_TYPE:
		for (int i = 0; i < m->ndrv; i++)
			if (!strcmp(m->drv[i].name, "vfio-pci"))
				vfio = i;
		return snprintf(buf, len, "%s\n", f->driver == vfio ? "DMA" : "identity");
	case A_RESERVED:
		return 0;
	case A_VF_IBDEV:
		return view_ib_vf_ibdev(v, n->fn, buf, len);
	case A_PROC_DEVICES:
		return view_proc_devices(v, buf, len);
	case A_VF_GUID:
		return view_ib_vf_guid(v, n, buf, len);
	default:
		return -EACCES;	/* write-only */
	}
}

ssize_t view_write_attr(struct view *v, const struct view_node *n, const char *buf, size_t len)
{
	struct pcifs_model *m = v->m;

	switch (n->attr) {
	case A_BIND:		return pcifs_bind(m, n->drv, buf, len);
	case A_UNBIND:		return pcifs_unbind(m, n->drv, buf, len);
	case A_NEW_ID:		return pcifs_new_id(m, n->drv, buf, len);
	case A_REMOVE_ID:	return pcifs_remove_id(m, n->drv, buf, len);
	case A_DRIVERS_PROBE:	return pcifs_drivers_probe(m, buf, len);
	case A_RESCAN:		return pcifs_rescan(m, buf, len);
	case A_OVERRIDE:	return pcifs_set_override(m, n->fn, buf, len);
	case A_REMOVE:		return pcifs_remove(m, n->fn, buf, len);
	case A_RESET:		return pcifs_reset(m, n->fn, buf, len);
	case A_NUMVFS:		return pcifs_set_numvfs(m, n->fn, buf, len);
	case A_UEVENT:
	case A_SRIOV_AUTOPROBE:
	case A_AUTOPROBE:	return (ssize_t)len;
	default:		return -EACCES;
	}
}
