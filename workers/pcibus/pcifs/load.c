/* The model from the staged tree (R/sys, as pcibus publishes it): every
 * function of bus/pci/devices with its ids and staged driver, every staged
 * driver plus vfio-pci, VF slots for ConnectX PFs; a re-read keeps the
 * running node's bindings (SIGHUP after a new generation); and the binding
 * file the mock NVML reads.  The staged tree is read beneath the host root
 * as a chroot would (beneath_open_in_root), as the view serves it: a link
 * planted in it never makes the model out of a file outside the root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "workers/pcibus/pcifs/pcifs.h"

/* "<sys>/<a>/<b>" relative to the root; 0 or -ENAMETOOLONG. */
static int rel_of(char *buf, size_t len, const char *sys, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s%s%s", sys, a, b ? "/" : "", b ? b : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static unsigned long read_hex(int rootfd, const char *sys, const char *devpath, const char *attr)
{
	char rel[PATH_MAX * 2], buf[32] = "";
	ssize_t k;
	int fd;

	if (rel_of(rel, sizeof(rel), sys, devpath, attr) < 0 ||
	    (fd = beneath_open_in_root(rootfd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0)) < 0)
		return 0;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[k > 0 ? k : 0] = '\0';
	return strtoul(buf, NULL, 0);
}

/* readlink(2) of rel's last component, its parent resolved in the root. */
static ssize_t read_link(int rootfd, char *rel, char *buf, size_t len)
{
	char *slash = strrchr(rel, '/');
	ssize_t k;
	int dfd;

	if (!slash)
		return -EINVAL;
	*slash = '\0';
	dfd = beneath_open_in_root(rootfd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	*slash = '/';
	if (dfd < 0)
		return dfd;
	k = readlinkat(dfd, slash + 1, buf, len - 1);
	k = k < 0 ? -errno : k;
	close(dfd);
	if (k >= 0)
		buf[k] = '\0';
	return k;
}

/* The entries of the directory rel, or NULL (errno set). */
static DIR *open_dir(int rootfd, const char *rel)
{
	int fd = beneath_open_in_root(rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	DIR *d;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (!(d = fdopendir(fd)))
		close(fd);
	return d;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_fn(struct pcifs_model *m, int rootfd, const char *sys, const char *bdf)
{
	char rel[PATH_MAX * 2], target[512];
	struct pcifs_fn f;
	ssize_t k;

	memset(&f, 0, sizeof(f));
	if (rel_of(rel, sizeof(rel), sys, "bus/pci/devices", bdf) < 0)
		return -ENAMETOOLONG;
	if ((k = read_link(rootfd, rel, target, sizeof(target))) < 0)
		return (int)k;
	if (strncmp(target, "../../../devices/", 17) || strstr(target + 17, "..") ||
	    strlen(bdf) >= sizeof(f.bdf) || strlen(target + 9) >= sizeof(f.devpath))
		return -EINVAL;
	snprintf(f.bdf, sizeof(f.bdf), "%s", bdf);
	snprintf(f.devpath, sizeof(f.devpath), "%s", target + 9);
	snprintf(f.backing, sizeof(f.backing), "%s", f.devpath);
	f.vendor = (uint16_t)read_hex(rootfd, sys, f.devpath, "vendor");
	f.device = (uint16_t)read_hex(rootfd, sys, f.devpath, "device");
	f.subvendor = (uint16_t)read_hex(rootfd, sys, f.devpath, "subsystem_vendor");
	f.subdevice = (uint16_t)read_hex(rootfd, sys, f.devpath, "subsystem_device");
	f.class_code = (uint32_t)read_hex(rootfd, sys, f.devpath, "class");
	f.bridge = f.class_code >> 8 == 0x0604;
	f.present = true;
	f.driver = -1;
	if (rel_of(rel, sizeof(rel), sys, f.devpath, "driver") == 0 &&
	    read_link(rootfd, rel, target, sizeof(target)) > 0) {
		snprintf(f.home, sizeof(f.home), "%s", strrchr(target, '/') ? strrchr(target, '/') + 1
									: target);
		f.driver = pcifs_driver_get(m, f.home);
	}
	return pcifs_model_add(m, &f);
}

static void load_drivers(struct pcifs_model *m, int rootfd, const char *sys)
{
	char rel[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (rel_of(rel, sizeof(rel), sys, "bus/pci/drivers", NULL) == 0 &&
	    (d = open_dir(rootfd, rel))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				pcifs_driver_get(m, e->d_name);
		closedir(d);
	}
	pcifs_driver_get(m, "vfio-pci");
}

/* A GPU (NVIDIA, display class) of a board with SR-IOV. */
static bool sriov_gpu(const struct pcifs_fn *f, const struct pcifs_node *node)
{
	return node->gpu.total_vfs > 0 && f->vendor == 0x10de && f->class_code >> 16 == 0x03;
}

int pcifs_load(struct pcifs_model *m, int rootfd, const char *sys, const struct pcifs_node *node)
{
	char rel[PATH_MAX], *names[PCIFS_MAX_FNS];
	struct dirent *e;
	int n = 0, r = 0, nphys;
	DIR *d;

	memset(m, 0, sizeof(*m));
	m->iommu = node->iommu;
	load_drivers(m, rootfd, sys);
	if (rel_of(rel, sizeof(rel), sys, "bus/pci/devices", NULL) < 0)
		return -ENAMETOOLONG;
	if (!(d = open_dir(rootfd, rel)))
		return -errno;
	while ((e = readdir(d)) && n < PCIFS_MAX_FNS)
		if (e->d_name[0] != '.' && !(names[n++] = strdup(e->d_name)))
			n--;
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	for (int i = 0; i < n; i++) {
		int k = load_fn(m, rootfd, sys, names[i]);

		if (k < 0 && !r)
			r = k;
		free(names[i]);
	}
	/* ConnectX PFs (network or InfiniBand class) and GPUs whose board
	 * has SR-IOV get their VF slots. */
	nphys = m->nfns;
	for (int i = 0; i < nphys; i++)
		if (m->fns[i].vendor == 0x15b3 && m->fns[i].class_code >> 16 == 0x02 &&
		    !m->fns[i].bridge)
			pcifs_model_add_vfs(m, i, &pcifs_mlx5_sriov);
		else if (sriov_gpu(&m->fns[i], node))
			pcifs_model_add_vfs(m, i, &node->gpu);
	pcifs_model_groups(m);
	return r;
}

void pcifs_carry(struct pcifs_model *to, const struct pcifs_model *from)
{
	for (int d = 0; d < from->ndrv; d++) {
		int k = pcifs_driver_get(to, from->drv[d].name);

		if (k >= 0) {
			to->drv[k].nids = from->drv[d].nids;
			memcpy(to->drv[k].ids, from->drv[d].ids, sizeof(to->drv[k].ids));
		}
	}
	for (int i = 0; i < to->nfns; i++) {
		struct pcifs_fn *t = &to->fns[i];
		int j = pcifs_find(from, t->bdf);
		const struct pcifs_fn *f = j >= 0 ? &from->fns[j] : NULL;

		if (!f)
			continue;
		t->present = f->present;
		t->driver = f->driver >= 0 ? pcifs_driver_get(to, from->drv[f->driver].name) : -1;
		t->override = f->override ? strdup(f->override) : NULL;
		t->numvfs = f->numvfs <= t->totalvfs ? f->numvfs : 0;
		t->resets = f->resets;
	}
	/* What the re-read tree cannot hold any more goes back to a consistent state. */
	for (int i = 0; i < to->nfns; i++) {
		struct pcifs_fn *t = &to->fns[i];

		if (t->pf >= 0 && t->present && i - to->fns[t->pf].vf0 >= to->fns[t->pf].numvfs) {
			t->present = false;
			t->driver = -1;
		}
	}
}

/* "<bdf> <driver>|-|removed" per function; the NVML shim hides a GPU
 * whose line names anything but nvidia.  rel is beneath rootfd, reached
 * without a link (fileio/beneath.h) and replaced atomically; a link at rel
 * or above it is refused (-ELOOP), never written through. */
int pcifs_state_write(const struct pcifs_model *m, int rootfd, const char *rel)
{
	const char *leaf;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r, dirfd;

	if (!(f = open_memstream(&buf, &len)))
		return -errno;
	fprintf(f, "# mokka-pcifs: PCI functions and their drivers (- unbound)\n");
	for (int i = 0; i < m->nfns; i++) {
		const struct pcifs_fn *fn = &m->fns[i];

		if (fn->pf >= 0 && !fn->present)
			continue;
		fprintf(f, "%s %s\n", fn->bdf, !fn->present ? "removed"
					       : fn->driver < 0 ? "-" : m->drv[fn->driver].name);
	}
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	/* No fsync: readers need the rename's atomicity, not durability (a
	 * restarted daemon writes the file afresh), and a sync per write
	 * would cost milliseconds per unbind. */
	if ((dirfd = beneath_parent(rootfd, rel, &leaf)) < 0)
		r = dirfd;
	else {
		r = beneath_replace(dirfd, leaf, buf, len, 0644, 0);
		close(dirfd);
	}
	free(buf);
	return r;
}
