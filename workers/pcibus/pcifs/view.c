/* Path resolution for mokka-pcifs (view.h): the bus and driver
 * directories, the kernel's IOMMU groups, /dev/vfio and proc/cmdline are
 * the model's; the device directories are the staged files with the
 * model's attributes laid over them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fileio/beneath.h"
#include "workers/pcibus/pcifs/view.h"
#include "workers/pcibus/pcifs/view_ib.h"

#define VFIO_GROUP_MAJOR 242

static void set(struct view_node *n, enum view_kind k, mode_t mode, int attr)
{
	n->kind = k;
	n->mode = mode;
	n->attr = attr;
}

static int link_to(struct view_node *n, const char *fmt1, const char *s1, const char *s2)
{
	set(n, V_LINK, 0777, A_NONE);
	return snprintf(n->path, sizeof(n->path), fmt1, s1, s2) >= (int)sizeof(n->path)
	       ? -ENAMETOOLONG : 0;
}


/* ---- the bus: sys/bus/pci ---------------------------------------------- */

static const struct { const char *name; int attr; mode_t mode; } drv_files[] = {
	{ "bind", A_BIND, 0200 }, { "unbind", A_UNBIND, 0200 }, { "new_id", A_NEW_ID, 0200 },
	{ "remove_id", A_REMOVE_ID, 0200 }, { "uevent", A_UEVENT, 0200 },
};
static const struct { const char *name; int attr; mode_t mode; } bus_files[] = {
	{ "drivers_probe", A_DRIVERS_PROBE, 0200 }, { "drivers_autoprobe", A_AUTOPROBE, 0644 },
	{ "rescan", A_RESCAN, 0200 }, { "uevent", A_UEVENT, 0200 },
};

static int drv_find(const struct pcifs_model *m, const char *name, size_t n)
{
	for (int i = 0; i < m->ndrv; i++)
		if (strlen(m->drv[i].name) == n && !strncmp(m->drv[i].name, name, n))
			return i;
	return -1;
}

static int fn_present(const struct pcifs_model *m, const char *bdf)
{
	int i = pcifs_find(m, bdf);

	return i >= 0 && m->fns[i].present ? i : -1;
}

static int resolve_bus(const struct view *v, const char *p, struct view_node *n)
{
	const struct pcifs_model *m = v->m;
	size_t k;
	int d;

	if (!*p)
		return set(n, V_DIR, 0755, A_NONE), 0;
	for (size_t i = 0; i < sizeof(bus_files) / sizeof(bus_files[0]); i++)
		if (!strcmp(p, bus_files[i].name))
			return set(n, V_ATTR, bus_files[i].mode, bus_files[i].attr), 0;
	if (!strcmp(p, "devices") || !strcmp(p, "drivers") || !strcmp(p, "slots"))
		return set(n, V_DIR, 0755, A_NONE), 0;
	if (!strncmp(p, "devices/", 8)) {
		if ((n->fn = fn_present(m, p + 8)) < 0)
			return -ENOENT;
		return link_to(n, "../../../%s%s", m->fns[n->fn].devpath, "");
	}
	if (strncmp(p, "drivers/", 8))
		return -ENOENT;
	p += 8;
	k = strcspn(p, "/");
	if ((d = drv_find(m, p, k)) < 0)
		return -ENOENT;
	n->drv = d;
	if (!p[k])
		return set(n, V_DIR, 0755, A_NONE), 0;
	p += k + 1;
	for (size_t i = 0; i < sizeof(drv_files) / sizeof(drv_files[0]); i++)
		if (!strcmp(p, drv_files[i].name))
			return set(n, V_ATTR, drv_files[i].mode, drv_files[i].attr), 0;
	if ((n->fn = fn_present(m, p)) < 0 || m->fns[n->fn].driver != d)
		return -ENOENT;
	return link_to(n, "../../../../%s%s", m->fns[n->fn].devpath, "");
}

/* ---- IOMMU groups, /dev/vfio, modules ---------------------------------- */

static bool group_live(const struct pcifs_model *m, int g)
{
	return m->iommu && g >= 0 && g < m->nfns && m->fns[g].present;
}

static bool group_vfio(const struct pcifs_model *m, int g)
{
	int d = drv_find(m, "vfio-pci", 8);

	return group_live(m, g) && d >= 0 && m->fns[g].driver == d;
}

static int parse_int(const char *s, size_t n)
{
	int v = 0;

	if (!n || n > 6 || strspn(s, "0123456789") < n || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static int resolve_groups(const struct view *v, const char *p, struct view_node *n)
{
	size_t k = strcspn(p, "/");
	int g;

	if (!*p)
		return set(n, V_DIR, 0755, A_NONE), 0;
	if ((g = parse_int(p, k)) < 0 || !group_live(v->m, g))
		return -ENOENT;
	n->fn = g;
	p += k;
	if (!*p)
		return set(n, V_DIR, 0755, A_NONE), 0;
	if (!strcmp(p, "/type"))
		return set(n, V_ATTR, 0444, A_GROUP_TYPE), 0;
	if (!strcmp(p, "/reserved_regions"))
		return set(n, V_ATTR, 0444, A_RESERVED), 0;
	if (!strcmp(p, "/devices"))
		return set(n, V_DIR, 0755, A_NONE), 0;
	if (strncmp(p, "/devices/", 9) || strcmp(p + 9, v->m->fns[g].bdf))
		return -ENOENT;
	return link_to(n, "../../../../%s%s", v->m->fns[g].devpath, "");
}

static int resolve_dev(const struct view *v, const char *p, struct view_node *n)
{
	int g;

	if (!strcmp(p, "infiniband") || !strncmp(p, "infiniband/", 11))
		return view_ib_resolve_dev(v, p[10] ? p + 11 : "", n);

	if (!*p || !strcmp(p, "vfio"))
		return set(n, V_DIR, 0755, A_NONE), 0;
	if (!strcmp(p, "vfio/vfio")) {
		set(n, V_CHR, 0666, A_NONE);
		n->rdev = makedev(10, 196);
		return 0;
	}
	if (strncmp(p, "vfio/", 5) || (g = parse_int(p + 5, strlen(p + 5))) < 0 ||
	    !group_vfio(v->m, g))
		return -ENOENT;
	set(n, V_CHR, 0600, A_NONE);
	n->rdev = makedev(VFIO_GROUP_MAJOR, (unsigned)g);
	return 0;
}

/* The module name of a driver: '-' becomes '_' (vfio-pci -> vfio_pci). */
static void module_name(const char *drv, char *out, size_t len)
{
	snprintf(out, len, "%s", drv);
	for (char *c = out; *c; c++)
		if (*c == '-')
			*c = '_';
}

static int resolve_module(const struct view *v, const char *p, struct view_node *n)
{
	char mod[40];

	if (!*p)
		return set(n, V_DIR, 0755, A_NONE), 0;
	for (int i = 0; i < v->m->ndrv; i++) {
		module_name(v->m->drv[i].name, mod, sizeof(mod));
		if (!strcmp(p, v->m->drv[i].name) || !strcmp(p, mod))
			return set(n, V_DIR, 0755, A_NONE), 0;
	}
	return -ENOENT;
}

int view_resolve_devices(const struct view *v, const char *rel, struct view_node *n);

int view_open_file(const struct view *v, const char *path, int flags)
{
	int fd;

	if (!v->in_root)
		return (fd = open(path, flags | O_CLOEXEC)) < 0 ? -errno : fd;
	if (strncmp(path, v->sys, v->rootlen))	/* every path here starts with the root's */
		return -EXDEV;
	return beneath_open_in_root(v->rootfd, path + v->rootlen, flags | O_CLOEXEC, 0);
}

int view_resolve(const struct view *v, const char *path, struct view_node *n)
{
	static const char *const dirs[] = { "", "sys", "sys/bus", "sys/kernel", "proc", NULL };

	memset(n, 0, sizeof(*n));
	n->fn = n->drv = -1;
	for (int i = 0; dirs[i]; i++)
		if (!strcmp(path, dirs[i]))
			return set(n, V_DIR, 0755, A_NONE), 0;
	if (!strcmp(path, "proc/cmdline"))
		return set(n, V_ATTR, 0444, A_CMDLINE), 0;
	if (!strcmp(path, "proc/bus"))
		return set(n, V_DIR, 0555, A_NONE), 0;
	if (!strcmp(path, "proc/bus/pci") || !strncmp(path, "proc/bus/pci/", 13))
		return view_proc_resolve(v, path[12] ? path + 13 : "", n);
	if (!strcmp(path, "sys/bus/pci") || !strncmp(path, "sys/bus/pci/", 12))
		return resolve_bus(v, path[11] ? path + 12 : "", n);
	if (!strcmp(path, "sys/kernel/iommu_groups") || !strncmp(path, "sys/kernel/iommu_groups/", 24))
		return resolve_groups(v, path[23] ? path + 24 : "", n);
	if (!strcmp(path, "dev") || !strncmp(path, "dev/", 4))
		return resolve_dev(v, path[3] ? path + 4 : "", n);
	if (!strcmp(path, "sys/module") || !strncmp(path, "sys/module/", 11))
		return resolve_module(v, path[10] ? path + 11 : "", n);
	if (!strcmp(path, "sys/devices") || !strncmp(path, "sys/devices/", 12))
		return view_resolve_devices(v, path + 4, n);
	if (!strcmp(path, "sys/class") || !strncmp(path, "sys/class/", 10))
		return view_ib_resolve_class(v, path[9] ? path + 10 : "", n);
	return -ENOENT;
}

/* ---- listings ------------------------------------------------------------ */

static int fill_path(const struct view *v, const char *dir, const char *name, view_fill fill,
		     void *ctx)
{
	char p[PATH_MAX];
	struct view_node n;

	if (snprintf(p, sizeof(p), "%s%s%s", dir, *dir ? "/" : "", name) >= (int)sizeof(p) ||
	    view_resolve(v, p, &n) < 0)
		return 0;	/* not there (any more): not listed */
	return fill(ctx, name, &n);
}

int view_list_devices(const struct view *v, const char *rel, view_fill fill, void *ctx);

int view_list(const struct view *v, const char *path, const struct view_node *dir,
	      view_fill fill, void *ctx)
{
	static const struct { const char *dir, *names; } fixed[] = {
		{ "", "sys dev proc" }, { "sys", "bus devices kernel module class" },
		{ "sys/bus", "pci" }, { "sys/kernel", "iommu_groups" }, { "proc", "cmdline bus" },
		{ "proc/bus", "pci" },
		{ "sys/bus/pci", "devices drivers slots drivers_probe drivers_autoprobe rescan uevent" },
		{ "dev", "vfio infiniband" },
	};
	const struct pcifs_model *m = v->m;
	char name[64];
	int r = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(path, fixed[i].dir))
			for (const char *p = fixed[i].names; *p && r == 0; p += strspn(p, " ")) {
				size_t k = strcspn(p, " ");

				snprintf(name, sizeof(name), "%.*s", (int)k, p);
				r = fill_path(v, path, name, fill, ctx);
				p += k;
			}
	if (!strcmp(path, "sys/bus/pci/devices") || !strcmp(path, "sys/kernel/iommu_groups"))
		for (int i = 0; i < m->nfns && r == 0; i++) {
			if (path[4] == 'b')
				snprintf(name, sizeof(name), "%s", m->fns[i].bdf);
			else
				snprintf(name, sizeof(name), "%d", m->fns[i].group);
			r = fill_path(v, path, name, fill, ctx);
		}
	else if (!strcmp(path, "sys/bus/pci/drivers") || !strcmp(path, "sys/module"))
		for (int i = 0; i < m->ndrv && r == 0; i++) {
			r = fill_path(v, path, m->drv[i].name, fill, ctx);
			module_name(m->drv[i].name, name, sizeof(name));
			if (r == 0 && path[4] == 'm' && strcmp(name, m->drv[i].name))
				r = fill_path(v, path, name, fill, ctx);
		}
	else if (!strncmp(path, "sys/bus/pci/drivers/", 20)) {
		for (size_t i = 0; i < sizeof(drv_files) / sizeof(drv_files[0]) && r == 0; i++)
			r = fill_path(v, path, drv_files[i].name, fill, ctx);
		for (int i = 0; i < m->nfns && r == 0; i++)
			if (m->fns[i].present && m->fns[i].driver == dir->drv)
				r = fill_path(v, path, m->fns[i].bdf, fill, ctx);
	} else if (!strncmp(path, "sys/kernel/iommu_groups/", 24)) {
		const char *sub = strchr(path + 24, '/');

		if (!sub)
			r = fill_path(v, path, "devices", fill, ctx) ?:
			    fill_path(v, path, "type", fill, ctx) ?:
			    fill_path(v, path, "reserved_regions", fill, ctx);
		else
			r = fill_path(v, path, m->fns[dir->fn].bdf, fill, ctx);
	} else if (!strcmp(path, "dev/infiniband")) {
		r = view_ib_list_dev(v, fill, ctx);
	} else if (!strcmp(path, "dev/vfio")) {
		r = fill_path(v, path, "vfio", fill, ctx);
		for (int i = 0; i < m->nfns && r == 0; i++)
			if (group_vfio(m, m->fns[i].group)) {
				snprintf(name, sizeof(name), "%d", m->fns[i].group);
				r = fill_path(v, path, name, fill, ctx);
			}
	} else if (!strcmp(path, "sys/devices") || !strncmp(path, "sys/devices/", 12))
		r = view_list_devices(v, path + 4, fill, ctx);
	else if (!strcmp(path, "proc/bus/pci") || !strncmp(path, "proc/bus/pci/", 13))
		r = view_proc_list(v, path[12] ? path + 13 : "", fill, ctx);
	else if (!strcmp(path, "sys/class") || !strncmp(path, "sys/class/", 10))
		r = view_ib_list_class(v, path[9] ? path + 10 : "", fill, ctx);
	return r;
}
