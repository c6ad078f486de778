/* Fuzz mokka-pcifs's model through its view: random writes (random bytes,
 * or well-formed BDFs and numbers) to every writable attribute of a small
 * bus (2 ports, 4 GPUs one of them with SR-IOV, 2 ConnectX PFs with VFs), and after each one the
 * tree must stay consistent: every driver link names a driver directory
 * that lists the device and no other does; a removed function is gone
 * from every listing; VFs exist only under an enabled PF; the IOMMU
 * group lists its device; and the mock NVML's reading of the binding
 * file (pcibind_detached) agrees: a GPU is NVML's iff nvidia holds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "shims/nvml/pcibind.h"
#include "workers/pcibus/pcifs/pcifs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void add(struct pcifs_model *m, const char *bdf, const char *port, uint16_t vendor,
		uint16_t device, uint32_t cls, const char *drv)
{
	struct pcifs_fn f = { .vendor = vendor, .device = device, .subvendor = vendor,
			      .class_code = cls, .present = true, .bridge = cls >> 8 == 0x0604 };

	snprintf(f.bdf, sizeof(f.bdf), "%s", bdf);
	snprintf(f.devpath, sizeof(f.devpath), "devices/pci0000:00%s%s/%s", port ? "/" : "",
		 port ? port : "", bdf);
	snprintf(f.backing, sizeof(f.backing), "%s", f.devpath);
	snprintf(f.home, sizeof(f.home), "%s", drv);
	f.driver = pcifs_driver_get(m, drv);
	pcifs_model_add(m, &f);
}

static void build(struct pcifs_model *m, bool iommu)
{
	memset(m, 0, sizeof(*m));
	m->iommu = iommu;
	pcifs_driver_get(m, "vfio-pci");
	add(m, "0000:00:01.0", NULL, 0x8086, 0x2030, 0x060400, "pcieport");
	add(m, "0000:00:02.0", NULL, 0x8086, 0x2030, 0x060400, "pcieport");
	add(m, "0000:1a:00.0", "0000:00:01.0", 0x10de, 0x2330, 0x030200, "nvidia");
	add(m, "0000:2a:00.0", "0000:00:01.0", 0x10de, 0x2330, 0x030200, "nvidia");
	add(m, "0000:3a:00.0", "0000:00:02.0", 0x10de, 0x20b0, 0x030200, "nvidia");
	add(m, "0000:4a:00.0", "0000:00:02.0", 0x10de, 0x20b0, 0x030200, "nvidia");
	add(m, "0000:1b:00.0", "0000:00:01.0", 0x15b3, 0x1021, 0x020700, "mlx5_core");
	add(m, "0000:3b:00.0", "0000:00:02.0", 0x15b3, 0x101b, 0x020700, "mlx5_core");
	pcifs_model_add_vfs(m, 6, &pcifs_mlx5_sriov);
	pcifs_model_add_vfs(m, 7, &(struct pcifs_sriov){ 3, 1, 1, 0 });
	/* A GPU whose board has SR-IOV (nvidia's sriov_configure). */
	pcifs_model_add_vfs(m, 2, &(struct pcifs_sriov){ 4, 4, 1, 0 });
	pcifs_model_groups(m);
}

struct seen {
	const char *want;
	int hits;
};

static int count(void *ctx, const char *name, const struct view_node *n)
{
	struct seen *s = ctx;

	s->hits += !strcmp(name, s->want);
	return 0;
}

static int listed(const struct view *v, const char *dir, const char *name)
{
	struct view_node n;
	struct seen s = { name, 0 };

	if (view_resolve(v, dir, &n) < 0 || n.kind != V_DIR)
		return -1;
	if (view_list(v, dir, &n, count, &s) < 0)
		abort();
	return s.hits;
}

static void check_fn(const struct view *v, int i, const char *state)
{
	const struct pcifs_model *m = v->m;
	const struct pcifs_fn *f = &m->fns[i];
	char p[600];
	struct view_node n;

	snprintf(p, sizeof(p), "sys/bus/pci/devices/%s", f->bdf);
	if ((view_resolve(v, p, &n) == 0) != f->present || listed(v, "sys/bus/pci/devices", f->bdf) != f->present)
		abort();
	for (int d = 0; d < m->ndrv; d++) {
		snprintf(p, sizeof(p), "sys/bus/pci/drivers/%s", m->drv[d].name);
		if (listed(v, p, f->bdf) != (f->present && f->driver == d))
			abort();
	}
	snprintf(p, sizeof(p), "sys/%s/driver", f->devpath);
	if (f->present && f->driver >= 0) {
		const char *slash;

		if (view_resolve(v, p, &n) < 0 || n.kind != V_LINK || !(slash = strrchr(n.path, '/')) ||
		    strcmp(slash + 1, m->drv[f->driver].name))
			abort();
	} else if (view_resolve(v, p, &n) == 0)
		abort();
	if (f->present && m->iommu) {
		snprintf(p, sizeof(p), "sys/kernel/iommu_groups/%d/devices", f->group);
		if (listed(v, p, f->bdf) != 1)
			abort();
	}
	/* NVML's view of the binding file. */
	if (f->vendor == 0x10de && f->pf < 0 &&
	    pcibind_detached(state, f->bdf) == (f->present && f->driver >= 0 &&
						!strcmp(m->drv[f->driver].name, "nvidia")))
		abort();
}

enum { W_BIND, W_UNBIND, W_NEW_ID, W_REMOVE_ID, W_PROBE, W_RESCAN, W_OVERRIDE, W_REMOVE,
       W_RESET, W_NUMVFS, W_N };

/* The value of one write: raw bytes, or (low bit of sel set) something
 * well formed the model will act on. */
static size_t value(const struct pcifs_model *m, int kind, uint8_t sel, const uint8_t *d,
		    size_t n, char *out, size_t cap)
{
	if (!(sel & 1)) {
		n = n < cap ? n : cap;
		memcpy(out, d, n);
		return n;
	}
	switch (kind) {
	case W_NEW_ID:
	case W_REMOVE_ID:
		return (size_t)snprintf(out, cap, "%x %x", m->fns[(sel >> 1) % m->nfns].vendor,
					m->fns[(sel >> 1) % m->nfns].device);
	case W_OVERRIDE:
		return (size_t)snprintf(out, cap, "%s\n", sel & 2 ? m->drv[(sel >> 2) % m->ndrv].name : "");
	case W_RESCAN:
	case W_REMOVE:
	case W_RESET:
	case W_NUMVFS:
		return (size_t)snprintf(out, cap, "%d\n", (sel >> 1) % 6);
	default:
		return (size_t)snprintf(out, cap, "%s\n", m->fns[(sel >> 1) % m->nfns].bdf);
	}
}

static ssize_t apply(struct pcifs_model *m, int kind, int who, const char *buf, size_t len)
{
	int fn = who % m->nfns, drv = who % m->ndrv;

	switch (kind) {
	case W_BIND:		return pcifs_bind(m, drv, buf, len);
	case W_UNBIND:		return pcifs_unbind(m, drv, buf, len);
	case W_NEW_ID:		return pcifs_new_id(m, drv, buf, len);
	case W_REMOVE_ID:	return pcifs_remove_id(m, drv, buf, len);
	case W_PROBE:		return pcifs_drivers_probe(m, buf, len);
	case W_RESCAN:		return pcifs_rescan(m, buf, len);
	case W_OVERRIDE:	return m->fns[fn].present ? pcifs_set_override(m, fn, buf, len) : 0;
	case W_REMOVE:		return m->fns[fn].present ? pcifs_remove(m, fn, buf, len) : 0;
	case W_RESET:		return m->fns[fn].present ? pcifs_reset(m, fn, buf, len) : 0;
	default:		return m->fns[fn].present && m->fns[fn].totalvfs
				       ? pcifs_set_numvfs(m, fn, buf, len) : 0;
	}
}

/* The binding file lives in a directory of its own, as beside the
 * engine config; removed at exit. */
static char dir[64], state[96], cfg[96];

static void cleanup(void)
{
	unlink(state);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pcifs_model m;
	static struct view v = { .m = &m };
	char buf[128], why[256];
	size_t off = 1;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_pcifs.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(state, sizeof(state), "%s/pci-drivers", dir);
		snprintf(cfg, sizeof(cfg), "%s/config.yaml", dir);
		atexit(cleanup);
	}
	build(&m, size && (data[0] & 1));
	while (off + 3 <= size) {
		int kind = data[off] % W_N, who = data[off + 1];
		uint8_t sel = data[off + 2];
		size_t n = off + 3 < size ? data[off + 3] % 64 : 0, len;
		ssize_t r;

		off += 4;
		n = n <= size - (off < size ? off : size) ? n : size - (off < size ? off : size);
		len = value(&m, kind, sel, data + (off < size ? off : size), n, buf, sizeof(buf));
		off += n;
		r = apply(&m, kind, who, buf, len);
		if (r > 0 && (size_t)r != len)
			abort();
		if (pcifs_model_check(&m, why, sizeof(why)) < 0) {
			fprintf(stderr, "%s\n", why);
			abort();
		}
	}
	/* The binding file as the daemon writes it, read back as NVML reads it
	 * (beside "config.yaml" in the same directory). */
	int dfd = beneath_root(dir);

	if (dfd < 0 || pcifs_state_write(&m, dfd, "pci-drivers") < 0)
		abort();
	close(dfd);
	for (int i = 0; i < m.nfns; i++)
		check_fn(&v, i, cfg);
	pcifs_model_free(&m);
	return 0;
}
