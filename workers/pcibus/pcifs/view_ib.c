/* InfiniBand devices in mokka-pcifs's view: an HCA's infiniband,
 * infiniband_verbs and infiniband_mad directories come from ib's tree
 * (R/ib/sys) while mlx5_core holds it, and a VF that mlx5_core holds gets
 * IB devices of its own, named after the last ones ib staged (mlx5_8,
 * uverbs8, umad8/issm8, ...) and backed by its PF's files; sys/class/
 * infiniband* lists the staged devices and the VFs'. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "workers/pcibus/pcifs/view_ib.h"

static const char *const classes[] = { "infiniband", "infiniband_verbs", "infiniband_mad", NULL };

bool view_ib_class(const char *name)
{
	for (int i = 0; classes[i]; i++)
		if (!strcmp(name, classes[i]))
			return true;
	return false;
}

bool view_ib_held(const struct pcifs_model *m, const struct pcifs_fn *f)
{
	return f->present && f->driver >= 0 && !strcmp(m->drv[f->driver].name, "mlx5_core");
}

/* "mlx5_0" -> "mlx5_", 0; "umad3" -> "umad", 3. */
static size_t prefix_len(const char *name)
{
	size_t n = strlen(name);

	while (n && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	return n;
}

/* Entries of ib's class directory with this prefix: the first free number. */
static int class_base(const struct view *v, const char *cls, const char *name, size_t plen)
{
	char dir[PATH_MAX + 64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/class/%s", v->ibsys, cls);
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, name, plen) && prefix_len(e->d_name) == plen;
	closedir(d);
	return n;
}

/* The VF's name for its PF's entry pfname of class cls. */
static void vf_name(const struct view *v, int fn, const char *cls, const char *pfname,
		    char *out, size_t len)
{
	size_t plen = prefix_len(pfname);
	int slot = 0;

	for (int i = 0; i < fn; i++)
		slot += v->m->fns[i].pf >= 0;
	snprintf(out, len, "%.*s%d", (int)plen, pfname, class_base(v, cls, pfname, plen) + slot);
}

typedef int (*pf_entry_fn)(const struct view *v, int fn, const char *cls, const char *pfname,
			   const char *vfname, void *arg);

/* Each entry of the PF's class directory with the VF's name for it. */
static int each_pf_entry(const struct view *v, int fn, const char *cls, pf_entry_fn cb, void *arg)
{
	const struct pcifs_fn *pf = &v->m->fns[v->m->fns[fn].pf];
	char dir[PATH_MAX * 2], name[64];
	struct dirent *e;
	int r = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s/%s", v->ibsys, pf->backing, cls);
	if (!(d = opendir(dir)))
		return 0;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		vf_name(v, fn, cls, e->d_name, name, sizeof(name));
		r = cb(v, fn, cls, e->d_name, name, arg);
	}
	closedir(d);
	return r;
}

struct map {
	const char *want;		/* the VF's name asked for */
	char pfname[64];
};

static int match(const struct view *v, int fn, const char *cls, const char *pfname,
		 const char *vfname, void *arg)
{
	struct map *mp = arg;

	if (strcmp(mp->want, vfname))
		return 0;
	snprintf(mp->pfname, sizeof(mp->pfname), "%s", pfname);
	return 1;
}

int view_ib_vf_path(const struct view *v, int fn, const char *rest, char *path, size_t len,
		    bool *is_device_link)
{
	const struct pcifs_fn *f = &v->m->fns[fn], *pf = &v->m->fns[f->pf];
	char cls[32], name[64];
	const char *tail;
	struct map mp = { name, "" };
	size_t k = strcspn(rest, "/");

	if (k >= sizeof(cls) || !rest[k])
		return -ENOENT;
	snprintf(cls, sizeof(cls), "%.*s", (int)k, rest);
	rest += k + 1;
	k = strcspn(rest, "/");
	if (!view_ib_class(cls) || k >= sizeof(name))
		return -ENOENT;
	snprintf(name, sizeof(name), "%.*s", (int)k, rest);
	tail = rest + k;
	if (each_pf_entry(v, fn, cls, match, &mp) != 1)
		return -ENOENT;
	*is_device_link = !strcmp(tail, "/device") || !strcmp(tail, "/ibdev");
	return snprintf(path, len, "%s/%s/%s/%s%s", v->ibsys, pf->backing, cls, mp.pfname, tail)
	       >= (int)len ? -ENAMETOOLONG : 0;
}

struct lister {
	view_fill fill;
	void *ctx;
	const char *rel;	/* for sys/class: the link's form */
};

static int list_vf(const struct view *v, int fn, const char *cls, const char *pfname,
		   const char *vfname, void *arg)
{
	struct lister *l = arg;
	struct view_node n;

	memset(&n, 0, sizeof(n));
	n.fn = fn;
	n.drv = -1;
	n.kind = l->rel ? V_LINK : V_DIR;
	n.mode = l->rel ? 0777 : 0755;
	if (l->rel)
		snprintf(n.path, sizeof(n.path), "../../%s/%s/%s", v->m->fns[fn].devpath, cls, vfname);
	return l->fill(l->ctx, vfname, &n);
}

int view_ib_list_vf_class(const struct view *v, int fn, const char *cls, view_fill fill,
			  void *ctx)
{
	struct lister l = { fill, ctx, NULL };

	return each_pf_entry(v, fn, cls, list_vf, &l);
}

/* ---- sys/class/infiniband* ------------------------------------------------ */

int view_ib_resolve_class(const struct view *v, const char *p, struct view_node *n)
{
	char cls[32], path[PATH_MAX * 2];
	size_t k = strcspn(p, "/");
	const struct pcifs_model *m = v->m;
	struct stat st;
	ssize_t len;

	if (!*p) {
		n->kind = V_DIR;
		n->mode = 0755;
		return 0;
	}
	if (k >= sizeof(cls))
		return -ENOENT;
	snprintf(cls, sizeof(cls), "%.*s", (int)k, p);
	if (!view_ib_class(cls))
		return -ENOENT;
	p += k;
	n->kind = V_DIR;
	n->mode = 0755;
	if (!*p++)
		return 0;
	if (strchr(p, '/'))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/class/%s/%s", v->ibsys, cls, p);
	if ((len = readlink(path, n->path, sizeof(n->path) - 1)) >= 0) {
		n->path[len] = '\0';
		n->kind = V_LINK;
		n->mode = 0777;
		return 0;
	}
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {	/* abi_version */
		n->kind = V_PASS;
		n->mode = st.st_mode & 07777;
		snprintf(n->path, sizeof(n->path), "%s", path);
		return 0;
	}
	for (int i = 0; i < m->nfns; i++) {
		struct map mp = { p, "" };

		if (m->fns[i].pf >= 0 && view_ib_held(m, &m->fns[i]) &&
		    each_pf_entry(v, i, cls, match, &mp) == 1) {
			n->kind = V_LINK;
			n->mode = 0777;
			snprintf(n->path, sizeof(n->path), "../../%s/%s/%s", m->fns[i].devpath, cls, p);
			return 0;
		}
	}
	return -ENOENT;
}

int view_ib_list_class(const struct view *v, const char *p, view_fill fill, void *ctx)
{
	char dir[PATH_MAX + 64];
	struct view_node n;
	struct dirent *e;
	struct lister l = { fill, ctx, "" };
	int r = 0;
	DIR *d;

	if (!*p) {
		memset(&n, 0, sizeof(n));
		n.kind = V_DIR;
		n.mode = 0755;
		for (int i = 0; classes[i] && r == 0; i++)
			r = fill(ctx, classes[i], &n);
		return r;
	}
	snprintf(dir, sizeof(dir), "%s/class/%s", v->ibsys, p);
	if ((d = opendir(dir))) {
		while (r == 0 && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				memset(&n, 0, sizeof(n));
				n.kind = V_LINK;
				n.mode = 0777;
				r = fill(ctx, e->d_name, &n);
			}
		closedir(d);
	}
	for (int i = 0; r == 0 && i < v->m->nfns; i++)
		if (v->m->fns[i].pf >= 0 && view_ib_held(v->m, &v->m->fns[i]))
			r = each_pf_entry(v, i, p, list_vf, &l);
	return r;
}

static int first_name(const struct view *v, int fn, const char *cls, const char *pfname,
		      const char *vfname, void *arg)
{
	snprintf(arg, 64, "%s", vfname);
	return 1;
}

/* ---- VF GUIDs --------------------------------------------------------------
 * A real mlx5 VF in InfiniBand mode has no GUID of its own until one is
 * assigned (ip link set <pf> vf <i> node_guid|port_guid, what the SR-IOV
 * network operator and ib-sriov-cni do; a fresh VF reads zero).  Mokka
 * assigns the ones such a script would, unique on the fabric and stable:
 * the PF's GUID with its fourth byte (the last of guid_prefix's eight
 * digits, 03 by default) replaced by 0x80 | the VF's index; the port GUID
 * is the node GUID | 1 as for the PFs (IB.md 1.3).  sys_image_guid stays
 * the PF's (one adapter), and so does the LID (no SM vport
 * virtualization: a VF shares its PF's port). */
uint64_t view_ib_vf_guid_of(uint64_t pf_guid, int vf)
{
	return (pf_guid & ~(0xffull << 32)) | (uint64_t)(0x80 | (vf & 0x7f)) << 32;
}

bool view_ib_vf_guid_file(const char *rest)
{
	const char *s = strchr(rest, '/');
	int port, idx;
	char tail[8];

	if (strncmp(rest, "infiniband/", 11) || !s || !(s = strchr(s + 1, '/')))
		return false;
	return !strcmp(s, "/node_guid") ||
	       sscanf(s, "/ports/%d/gids/%d%7s", &port, &idx, tail) == 2;
}

/* The last 16 hex digits of "xxxx:xxxx:..." (a GUID, or a GID's GUID half). */
static int guid_tail(const char *s, size_t n, uint64_t *g, size_t *at)
{
	int digits = 0;

	*g = 0;
	for (size_t i = n; i-- > 0 && digits < 16;) {
		int c = s[i];

		if (c == ':' || c == '\n')
			continue;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
		*g |= (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10) << (4 * digits++);
		*at = i;
	}
	return digits == 16 ? 0 : -EINVAL;
}

ssize_t view_ib_vf_guid(const struct view *v, const struct view_node *n, char *buf, size_t len)
{
	const struct pcifs_fn *f = &v->m->fns[n->fn];
	uint64_t g;
	size_t at = 0;
	ssize_t k;
	FILE *fp;
	int fd = -1;

	if (f->pf < 0 || (fd = view_open_file(v, n->path, O_RDONLY)) < 0 || !(fp = fdopen(fd, "r"))) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	k = (ssize_t)fread(buf, 1, len - 1, fp);
	fclose(fp);
	buf[k] = '\0';
	if (guid_tail(buf, (size_t)k, &g, &at) < 0 || g == 0)
		return k;	/* no GUID there (an unset GID): as is */
	g = view_ib_vf_guid_of(g, n->fn - v->m->fns[f->pf].vf0);
	snprintf(buf + at, len - at, "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48),
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	return (ssize_t)strlen(buf);
}

int view_ib_vf_ibdev(const struct view *v, int fn, char *out, size_t len)
{
	char name[64] = "";

	each_pf_entry(v, fn, "infiniband", first_name, name);
	return snprintf(out, len, "%s\n", name);
}

/* ---- dev/infiniband ------------------------------------------------------ */

/* uverbsN 231:192+N, issmN 231:64+N, umadN 231:N (the IB core's minors). */
static dev_t ib_rdev(const char *name)
{
	size_t plen = prefix_len(name);
	unsigned n = (unsigned)atoi(name + plen);

	if (!strncmp(name, "uverbs", plen))
		return makedev(231, 192 + n);
	return makedev(231, (!strncmp(name, "issm", plen) ? 64 : 0) + n);
}

struct dev_find {
	const char *want;
	bool found;
};

static int dev_match(const struct view *v, int fn, const char *cls, const char *pfname,
		     const char *vfname, void *arg)
{
	struct dev_find *df = arg;

	df->found |= !strcmp(df->want, vfname);
	return df->found;
}

int view_ib_resolve_dev(const struct view *v, const char *p, struct view_node *n)
{
	char path[PATH_MAX * 2];
	struct stat st;

	n->mode = 0755;
	n->kind = V_DIR;
	if (!*p)
		return 0;
	if (strchr(p, '/'))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", v->ibdev, p);
	if (lstat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
		n->kind = V_CHR;
		n->mode = st.st_mode & 07777;
		n->rdev = st.st_rdev;
		return 0;
	}
	for (int i = 0; i < v->m->nfns; i++) {
		struct dev_find df = { p, false };

		if (v->m->fns[i].pf < 0 || !view_ib_held(v->m, &v->m->fns[i]))
			continue;
		each_pf_entry(v, i, "infiniband_verbs", dev_match, &df);
		if (!df.found)
			each_pf_entry(v, i, "infiniband_mad", dev_match, &df);
		if (df.found) {
			n->kind = V_CHR;
			n->mode = 0666;
			n->rdev = ib_rdev(p);
			return 0;
		}
	}
	return -ENOENT;
}

static int list_dev(const struct view *v, int fn, const char *cls, const char *pfname,
		    const char *vfname, void *arg)
{
	struct lister *l = arg;
	struct view_node n = { .kind = V_CHR, .mode = 0666, .fn = fn, .drv = -1 };

	n.rdev = ib_rdev(vfname);
	return l->fill(l->ctx, vfname, &n);
}

int view_ib_list_dev(const struct view *v, view_fill fill, void *ctx)
{
	struct lister l = { fill, ctx, NULL };
	struct view_node n = { .kind = V_CHR, .fn = -1, .drv = -1 };
	struct dirent *e;
	int r = 0;
	DIR *d;

	if ((d = opendir(v->ibdev))) {
		while (r == 0 && (e = readdir(d)))
			if (e->d_name[0] != '.')
				r = fill(ctx, e->d_name, &n);
		closedir(d);
	}
	for (int i = 0; r == 0 && i < v->m->nfns; i++)
		if (v->m->fns[i].pf >= 0 && view_ib_held(v->m, &v->m->fns[i]))
			r = each_pf_entry(v, i, "infiniband_verbs", list_dev, &l) ?:
			    each_pf_entry(v, i, "infiniband_mad", list_dev, &l);
	return r;
}
