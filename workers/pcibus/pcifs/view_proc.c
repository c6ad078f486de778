/* mokka-pcifs's proc/bus/pci (view.h): the staged files of pcibus
 * (R/proc/bus/pci) as the kernel would show them now: a removed function
 * is gone (its line in devices and its config file), each line names the
 * driver that holds the function now, and enabled VFs are there with
 * their config space (their PF's, with the VF device id, as sysfs shows
 * it) and a line of their own (no INTx, no BARs listed: a VF's BARs are
 * slices of its PF's VF BAR, which the staged PF line does not carry). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/pcibus/pcifs/view.h"

#define PROC_RESOURCES 14	/* 7 starts + 7 sizes */

/* "bb" (or "dddd:bb" outside domain 0) and "dd.f", as x86 names them. */
static int proc_names(const struct pcifs_fn *f, char *bus, size_t blen, char *file, size_t flen)
{
	unsigned dom, b, d, fn;

	if (sscanf(f->bdf, "%x:%x:%x.%x", &dom, &b, &d, &fn) != 4)
		return -EINVAL;
	if (dom)
		snprintf(bus, blen, "%04x:%02x", dom, b);
	else
		snprintf(bus, blen, "%02x", b);
	snprintf(file, flen, "%02x.%x", d, fn);
	return 0;
}

/* The function a proc name is about; a present one first (the same name
 * may be planned twice only across domains, which x86 names apart). */
static int proc_fn(const struct pcifs_model *m, const char *bus, const char *file)
{
	char b[16], f[16];

	for (int i = 0; i < m->nfns; i++)
		if (proc_names(&m->fns[i], b, sizeof(b), f, sizeof(f)) == 0 && !strcmp(b, bus) &&
		    (!file || !strcmp(f, file)))
			return i;
	return -1;
}

static int dir(struct view_node *n, mode_t mode)
{
	n->kind = V_DIR;
	n->mode = mode;
	return 0;
}

static bool staged_dir(const struct view *v, const char *bus)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", v->procpci, bus);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A present VF on bus (any file when file is NULL). */
static int vf_on(const struct pcifs_model *m, const char *bus, const char *file)
{
	char b[16], f[16];

	for (int i = 0; i < m->nfns; i++)
		if (m->fns[i].pf >= 0 && m->fns[i].present &&
		    proc_names(&m->fns[i], b, sizeof(b), f, sizeof(f)) == 0 && !strcmp(b, bus) &&
		    (!file || !strcmp(f, file)))
			return i;
	return -1;
}

int view_proc_resolve(const struct view *v, const char *p, struct view_node *n)
{
	char bus[32], path[PATH_MAX * 2];
	const char *slash = strchr(p, '/');
	struct stat st;
	int fn;

	if (!*p)
		return dir(n, 0555);
	if (!strcmp(p, "devices")) {
		n->kind = V_ATTR;
		n->mode = 0444;
		n->attr = A_PROC_DEVICES;
		return 0;
	}
	if ((size_t)(slash ? slash - p : (ptrdiff_t)strlen(p)) >= sizeof(bus) ||
	    (slash && strchr(slash + 1, '/')))
		return -ENOENT;
	snprintf(bus, sizeof(bus), "%.*s", (int)(slash ? slash - p : (ptrdiff_t)strlen(p)), p);
	if (!slash)
		return staged_dir(v, bus) || vf_on(v->m, bus, NULL) >= 0 ? dir(n, 0555) : -ENOENT;
	if ((fn = vf_on(v->m, bus, slash + 1)) >= 0) {
		n->fn = fn;
		n->kind = V_ATTR;
		n->mode = 0644;
		n->attr = A_VF_CONFIG;
		return 0;
	}
	if ((fn = proc_fn(v->m, bus, slash + 1)) >= 0 && !v->m->fns[fn].present)
		return -ENOENT;
	if (fn >= 0 && v->m->fns[fn].totalvfs > 0) {	/* its SR-IOV capability */
		n->fn = fn;
		n->kind = V_ATTR;
		n->mode = 0644;
		n->attr = A_PF_CONFIG;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", v->procpci, p);
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	n->fn = fn;
	n->kind = V_PASS;
	n->mode = st.st_mode & 07777;
	snprintf(n->path, sizeof(n->path), "%s", path);
	return 0;
}

static int fill_name(const struct view *v, const char *rel, const char *name, view_fill fill,
		     void *ctx)
{
	char p[PATH_MAX];
	struct view_node n;

	memset(&n, 0, sizeof(n));
	n.fn = n.drv = -1;
	if (snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof(p) ||
	    view_proc_resolve(v, p, &n) < 0)
		return 0;
	return fill(ctx, name, &n);
}

int view_proc_list(const struct view *v, const char *rel, view_fill fill, void *ctx)
{
	const struct pcifs_model *m = v->m;
	char path[PATH_MAX * 2], bus[16], file[16];
	struct dirent *e;
	int r = *rel ? 0 : fill_name(v, rel, "devices", fill, ctx);
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", v->procpci, *rel ? "/" : "", rel);
	if ((d = opendir(path))) {
		while (r == 0 && (e = readdir(d)))
			if (e->d_name[0] != '.' && strcmp(e->d_name, "devices"))
				r = fill_name(v, rel, e->d_name, fill, ctx);
		closedir(d);
	}
	/* VFs, and (rare) a bus only VFs sit on. */
	for (int i = 0; r == 0 && i < m->nfns; i++) {
		if (m->fns[i].pf < 0 || !m->fns[i].present ||
		    proc_names(&m->fns[i], bus, sizeof(bus), file, sizeof(file)) < 0)
			continue;
		if (*rel && !strcmp(rel, bus))
			r = fill_name(v, rel, file, fill, ctx);
		else if (!*rel && !staged_dir(v, bus) && vf_on(m, bus, NULL) == i)
			r = fill_name(v, rel, bus, fill, ctx);
	}
	return r;
}

/* One line: the staged one with the driver field (the last) replaced. */
static size_t put_line(char *buf, size_t len, size_t off, const char *line, size_t k,
		       const char *drv)
{
	const char *tab = memrchr(line, '\t', k);
	size_t keep = tab ? (size_t)(tab - line) : k;

	if (off < len)
		off += (size_t)snprintf(buf + off, len - off, "%.*s\t%s\n", (int)keep, line, drv);
	return off < len ? off : len;
}

static size_t vf_line(const struct pcifs_model *m, const struct pcifs_fn *f, char *buf,
		      size_t len, size_t off)
{
	unsigned dom, b, d, fn;
	const char *drv = pcifs_driver_name(m, f);

	if (sscanf(f->bdf, "%x:%x:%x.%x", &dom, &b, &d, &fn) != 4 || off >= len)
		return off;
	off += (size_t)snprintf(buf + off, len - off, "%02x%02x\t%04x%04x\t0", b, d << 3 | fn,
				f->vendor, f->device);
	for (int i = 0; i < PROC_RESOURCES && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "\t%16x", 0);
	if (off < len)
		off += (size_t)snprintf(buf + off, len - off, "\t%s\n", drv ? drv : "");
	return off < len ? off : len;
}

/* The line's function: bus and devfn in its first field. */
static int line_fn(const struct pcifs_model *m, const char *line)
{
	unsigned bus, devfn;
	char want[16];

	if (sscanf(line, "%2x%2x", &bus, &devfn) != 2)
		return -1;
	snprintf(want, sizeof(want), ":%02x:%02x.%x", bus, devfn >> 3, devfn & 7);
	for (int i = 0; i < m->nfns; i++)
		if (m->fns[i].pf < 0 && !strcmp(m->fns[i].bdf + strlen(m->fns[i].bdf) - strlen(want),
						want))
			return i;
	return -1;
}

ssize_t view_proc_devices(const struct view *v, char *buf, size_t len)
{
	const struct pcifs_model *m = v->m;
	char path[PATH_MAX * 2], *line = NULL;
	size_t cap = 0, off = 0;
	ssize_t k;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/devices", v->procpci);
	if ((fd = view_open_file(v, path, O_RDONLY)) < 0)
		return fd;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return -ENOMEM;
	}
	while ((k = getline(&line, &cap, f)) > 0) {
		int fn = line_fn(m, line);
		const char *drv = fn >= 0 ? pcifs_driver_name(m, &m->fns[fn]) : NULL;

		if (fn >= 0 && !m->fns[fn].present)
			continue;
		if (line[k - 1] == '\n')
			k--;
		off = put_line(buf, len, off, line, (size_t)k, drv ? drv : "");
	}
	free(line);
	fclose(f);
	/* The VFs last: the kernel lists devices in the order they were
	 * added, and VFs are added when sriov_numvfs is written. */
	for (int i = 0; i < m->nfns; i++)
		if (m->fns[i].pf >= 0 && m->fns[i].present)
			off = vf_line(m, &m->fns[i], buf, len, off);
	return (ssize_t)off;
}
