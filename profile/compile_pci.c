/* The PCI plan: every GPU and HCA of the compiled state placed on the
 * simulated PCI bus (state.pci), computed once here so pcibus, gpudriver
 * and ib render the same tree from the state.
 *
 * Every endpoint that is not on its root complex's own bus sits behind a
 * PCIe root port (one per secondary bus), as on real servers, so the bus
 * numbers, bridge windows and BARs form one tree lspci can walk. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/compile.h"
#include "profile/compile_internal.h"

/* The root port model: an Intel Xeon (Sky Lake-E) PCIe root port, a part
 * pci.ids knows, so lspci names it. */
#define PORT_VENDOR		0x8086
#define PORT_DEVICE		0x2030
#define PORT_REVISION		0x04
#define PORT_CLASS		0x060400
#define GPU_CLASS		0x030200
#define GPU_REVISION		0xa1
#define NVIDIA_VENDOR		0x10de
/* The HCAs' identity (ConnectX, mlx5_core). */
#define MLX_VENDOR		0x15b3
#define MLX_SUBSYS		0x0023
#define HCA_CLASS		0x020700	/* network, InfiniBand controller */

/* BAR layout of NVIDIA datacenter GPUs: BAR0 registers, BAR1 the
 * framebuffer aperture, BAR3 the instance memory aperture. */
#define GPU_BAR0_SIZE		(16ULL << 20)
#define GPU_BAR3_SIZE		(32ULL << 20)
#define GPU_BAR1_MIN		(256ULL << 20)
#define HCA_BAR0_SIZE		(32ULL << 20)	/* ConnectX-6/7 */
#define MMIO32_BASE		0x90000000ULL	/* below-4G MMIO window */
#define MMIO32_END		0xfc000000ULL
#define MMIO64_BASE		0x200000000000ULL	/* 32 TiB: above-4G MMIO */
#define FIRST_IRQ		24		/* past the legacy ISA/PCI lines */
#define MIB			(1ULL << 20)

/* Kernel struct resource flags, as sysfs "resource" prints them. */
#define RES_MEM			0x00000200U
#define RES_PREFETCH		0x00002000U
#define RES_SIZEALIGN		0x00040000U
#define RES_MEM_64		0x00100000U
#define ENDPOINT_RESOURCES	13	/* up to the bridge windows */
#define MEM_WINDOW		14	/* bridge windows: 32-bit memory */
#define PREF_WINDOW		15	/* 64-bit prefetchable */

/* Link defaults for a state without a pcie block: a Gen4 x16 slot. */
#define DEFAULT_GEN		4
#define DEFAULT_WIDTH		16

#define CPU_WORDS (STATE_PCI_MAX_CPUS / 32)

struct planner {
	const struct state *s;
	struct state_pci *p;
	int cores_per_numa;
	compile_pci_report_fn report;
	void *arg;
};

static void report(struct planner *pl, const char *surface, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct planner *pl, const char *surface, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (pl->report)
		pl->report(pl->arg, surface, msg);
}

static int first_error(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint64_t pow2_at_least(uint64_t v, uint64_t floor)
{
	uint64_t p = floor;

	while (p < v && p < (1ULL << 62))
		p <<= 1;
	return p;
}

static void bdf_parts(const char *bdf, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	*dom = *bus = *dev = *fn = 0;
	sscanf(bdf, "%x:%x:%x.%x", dom, bus, dev, fn);
}

static void root_parts(const char *id, unsigned *dom, unsigned *bus)
{
	*dom = *bus = 0;
	sscanf(id, "pci%x:%x", dom, bus);
}

static struct state_pci_fn *find_fn(struct state_pci *p, const char *bdf)
{
	return (struct state_pci_fn *)state_pci_find(p, bdf);
}

static int add_root(struct state_pci *p, const char *id)
{
	for (int i = 0; i < p->num_roots; i++)
		if (strcmp(p->roots[i], id) == 0)
			return 0;
	if (p->num_roots >= STATE_PCI_MAX_ROOTS)
		return -ENOSPC;
	snprintf(p->roots[p->num_roots++], sizeof(p->roots[0]), "%s", id);
	return 0;
}

/* Where a device's CPUs come from: the root's cpu_affinity, else its NUMA
 * node's block of cores, else (no NUMA) every CPU, as the kernel does. */
static void cpu_model_init(struct planner *pl)
{
	const struct state *s = pl->s;
	int nodes = 1, top;

	for (int i = 0; i < s->num_roots; i++)
		if (s->roots[i].numa_node + 1 > nodes)
			nodes = s->roots[i].numa_node + 1;
	for (int i = 0; i < s->num_devices; i++)
		if (s->devices[i].numa_node + 1 > nodes)
			nodes = s->devices[i].numa_node + 1;
	pl->cores_per_numa = s->cores_per_numa;
	if (pl->cores_per_numa <= 0) {
		/* Unknown: split this machine's CPUs over the nodes, so the
		 * masks name CPUs that exist for the CPU/topology managers. */
		long n = sysconf(_SC_NPROCESSORS_CONF);
		pl->cores_per_numa = n > 0 ? (int)(n / nodes) : 1;
		if (pl->cores_per_numa < 1)
			pl->cores_per_numa = 1;
	}
	if ((long)pl->cores_per_numa * nodes > STATE_PCI_MAX_CPUS)
		pl->cores_per_numa = STATE_PCI_MAX_CPUS / nodes;
	pl->p->ncpus = pl->cores_per_numa * nodes;
	for (int i = 0; i < s->num_roots; i++)
		if (s->roots[i].cpu_affinity[0] &&
		    state_cpulist_parse(s->roots[i].cpu_affinity, NULL, &top) == 0 &&
		    top >= pl->p->ncpus)
			pl->p->ncpus = top + 1;
}

static int device_cpus(const struct planner *pl, const struct state_root_complex *rc,
		       int numa, char *cpulist, size_t len)
{
	uint32_t cpus[CPU_WORDS] = { 0 };
	int top, lo = 0, hi = pl->p->ncpus - 1;

	if (rc && rc->cpu_affinity[0]) {
		if (state_cpulist_parse(rc->cpu_affinity, cpus, &top) < 0)
			return -EINVAL;
	} else {
		if (numa >= 0) {
			lo = numa * pl->cores_per_numa;
			hi = (numa + 1) * pl->cores_per_numa - 1;
		}
		for (int c = lo; c <= hi && c < STATE_PCI_MAX_CPUS; c++)
			cpus[c / 32] |= 1u << (c % 32);
	}
	return state_cpulist_format(cpus, cpulist, len);
}

static void normalize_link(struct state_pcie_link *l, const struct state_pcie_link *in)
{
	*l = *in;
	if (l->max_gen <= 0)
		l->max_gen = DEFAULT_GEN;
	if (l->max_width <= 0)
		l->max_width = DEFAULT_WIDTH;
	if (l->cur_gen <= 0)
		l->cur_gen = l->max_gen;
	if (l->cur_width <= 0)
		l->cur_width = l->max_width;
}

/* The root complex an endpoint hangs off, by index (-1: the domain's bus
 * 00 host bridge, so the device still shows up); "" when there is none. */
static int endpoint_root(struct planner *pl, const char *bus_id, int root, unsigned dom,
			 char *root_id, const struct state_root_complex **rc)
{
	*rc = NULL;
	if (root >= 0 && root < pl->s->num_roots) {
		*rc = &pl->s->roots[root];
		snprintf(root_id, 16, "%s", (*rc)->id);
	} else if (root == -1) {
		snprintf(root_id, 16, "pci%04x:00", dom & 0xffff);
	} else {
		report(pl, bus_id, "%s: root %d: no such root complex", bus_id, root);
		return -EINVAL;
	}
	if (!state_valid_root_id(root_id)) {
		report(pl, "topology", "root \"%.16s\": not pcidddd:bb", root_id);
		return -EINVAL;
	}
	return 0;
}

/* Place one endpoint: check its BDF, find its root complex, take a slot in
 * the plan (not yet counted: the caller fills the identity and then bumps
 * num_fns).  what names it in errors ("device 3", "HCA mlx5_0"). */
static struct state_pci_fn *place_endpoint(struct planner *pl, const char *bus_id, int root,
					   int numa_node, const char *what, int *err)
{
	struct state_pci *p = pl->p;
	const struct state_root_complex *rc;
	struct state_pci_fn *f;
	unsigned dom, bus, dev, fn, rdom, rbus;
	char root_id[16];

	if (p->num_fns >= STATE_PCI_MAX_FNS) {
		*err = -ENOSPC;
		return NULL;
	}
	*err = -EINVAL;
	if (!state_valid_bdf(bus_id)) {
		report(pl, "bus_id", "%s: bus id \"%.16s\": not dddd:bb:dd.f", what, bus_id);
		return NULL;
	}
	if (find_fn(p, bus_id)) {
		report(pl, bus_id, "%s: %s: bus id used twice", bus_id, what);
		*err = -EEXIST;
		return NULL;
	}
	bdf_parts(bus_id, &dom, &bus, &dev, &fn);
	if (endpoint_root(pl, bus_id, root, dom, root_id, &rc) < 0)
		return NULL;
	root_parts(root_id, &rdom, &rbus);
	if (rdom != dom || bus < rbus) {
		report(pl, bus_id, "%s: not below root complex %s", bus_id, root_id);
		return NULL;
	}
	if ((*err = add_root(p, root_id)) < 0)
		return NULL;
	f = &p->fns[p->num_fns];
	memset(f, 0, sizeof(*f));
	snprintf(f->bdf, sizeof(f->bdf), "%s", bus_id);
	snprintf(f->root_id, sizeof(f->root_id), "%s", root_id);
	f->numa_node = rc ? rc->numa_node : numa_node;
	if (device_cpus(pl, rc, f->numa_node, f->cpulist, sizeof(f->cpulist)) < 0) {
		report(pl, bus_id, "%s: root %s: cpu_affinity \"%s\": not a cpulist",
		       bus_id, root_id, rc ? rc->cpu_affinity : "");
		*err = -EINVAL;
		return NULL;
	}
	*err = 0;
	return f;
}

static int add_gpu(struct planner *pl, const struct state_device *d)
{
	struct state_pci_fn *f;
	char what[32];
	int r;

	snprintf(what, sizeof(what), "device %d", d->index);
	if (!(f = place_endpoint(pl, d->bus_id, d->root, d->numa_node, what, &r)))
		return r;
	f->kind = STATE_PCI_GPU;
	f->vendor = d->vendor_id ? d->vendor_id : NVIDIA_VENDOR;
	f->device = d->device_id;
	f->subsys_vendor = d->subsys_vendor_id ? d->subsys_vendor_id : f->vendor;
	f->subsys_device = d->subsys_device_id;
	f->class_code = GPU_CLASS;
	f->revision = GPU_REVISION;
	normalize_link(&f->link, &d->pcie);
	f->nres = ENDPOINT_RESOURCES;
	f->res[0] = (struct state_pci_res){ 0, GPU_BAR0_SIZE, RES_MEM | RES_SIZEALIGN };
	f->res[1] = (struct state_pci_res){ 0, pow2_at_least(d->bar1_total_bytes, GPU_BAR1_MIN),
		RES_MEM | RES_PREFETCH | RES_MEM_64 | RES_SIZEALIGN | 0xc };
	f->res[3] = (struct state_pci_res){ 0, GPU_BAR3_SIZE, f->res[1].flags };
	pl->p->num_fns++;
	return 0;
}

/* The PCIe link a ConnectX generation trains to; others get the default. */
static const struct {
	uint16_t device;
	int gen;
} hca_links[] = {
	{ 0x101b, 4 },		/* ConnectX-6 */
	{ 0x101d, 4 },		/* ConnectX-6 Dx */
	{ 0x1021, 5 },		/* ConnectX-7 */
	{ 0x1023, 6 },		/* ConnectX-8 */
};

/* An InfiniBand HCA: one ConnectX physical function, BAR0 its 64-bit
 * prefetchable register/doorbell space, bound to mlx5_core. */
static int add_hca(struct planner *pl, const struct state_hca *h)
{
	struct state_pcie_link link = { DEFAULT_GEN, DEFAULT_WIDTH, 0, 0 };
	struct state_pci_fn *f;
	char what[32];
	int r;

	snprintf(what, sizeof(what), "HCA %.16s", h->name);
	if (!(f = place_endpoint(pl, h->bus_id, h->root, h->numa_node, what, &r)))
		return r;
	f->kind = STATE_PCI_HCA;
	f->vendor = MLX_VENDOR;
	f->device = pl->s->ib.device_id;
	f->subsys_vendor = MLX_VENDOR;
	f->subsys_device = MLX_SUBSYS;
	f->class_code = HCA_CLASS;
	for (size_t i = 0; i < sizeof(hca_links) / sizeof(hca_links[0]); i++)
		if (hca_links[i].device == f->device)
			link.max_gen = hca_links[i].gen;
	normalize_link(&f->link, &link);
	f->nres = ENDPOINT_RESOURCES;
	f->res[0] = (struct state_pci_res){ 0, HCA_BAR0_SIZE,
		RES_MEM | RES_PREFETCH | RES_MEM_64 | RES_SIZEALIGN | 0xc };
	pl->p->num_fns++;
	return 0;
}

/* Another vendor's accelerator (compile_accel.c): the profile's identity
 * and driver, a GPU-like layout (registers, then a 64-bit prefetchable
 * aperture), Gen4 x16. */
static int add_accel(struct planner *pl, const struct state_accel *a)
{
	struct state_pcie_link link = { DEFAULT_GEN, DEFAULT_WIDTH, 0, 0 };
	struct state_pci_fn *f;
	char what[48];
	int r;

	snprintf(what, sizeof(what), "accelerator %.16s", a->bus_id);
	if (!(f = place_endpoint(pl, a->bus_id, a->root, a->numa_node, what, &r)))
		return r;
	f->kind = STATE_PCI_ACCEL;
	f->vendor = a->vendor_id;
	f->device = a->device_id;
	f->subsys_vendor = a->subsys_vendor_id;
	f->subsys_device = a->subsys_device_id;
	f->class_code = a->class_code;
	snprintf(f->driver, sizeof(f->driver), "%s", a->driver);
	normalize_link(&f->link, &link);
	f->nres = ENDPOINT_RESOURCES;
	f->res[0] = (struct state_pci_res){ 0, GPU_BAR0_SIZE, RES_MEM | RES_SIZEALIGN };
	f->res[2] = (struct state_pci_res){ 0, GPU_BAR1_MIN,
		RES_MEM | RES_PREFETCH | RES_MEM_64 | RES_SIZEALIGN | 0xc };
	pl->p->num_fns++;
	return 0;
}

/* A new root port on root_id's bus at the first free device number. */
static struct state_pci_fn *new_port(struct state_pci *p, const struct state_pci_fn *ep,
				     unsigned rdom, unsigned rbus)
{
	struct state_pci_fn *port;
	unsigned dom, bus, dev, fn;
	char bdf[16];

	for (unsigned pfn = 0; pfn < 8; pfn++)
		for (unsigned pdev = 1; pdev < 32; pdev++) {
			snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", rdom, rbus, pdev, pfn);
			if (find_fn(p, bdf) || p->num_fns >= STATE_PCI_MAX_FNS)
				continue;
			port = &p->fns[p->num_fns++];
			memset(port, 0, sizeof(*port));
			bdf_parts(ep->bdf, &dom, &bus, &dev, &fn);
			snprintf(port->bdf, sizeof(port->bdf), "%s", bdf);
			snprintf(port->root_id, sizeof(port->root_id), "%s", ep->root_id);
			port->kind = STATE_PCI_PORT;
			port->vendor = PORT_VENDOR;
			port->device = PORT_DEVICE;
			port->subsys_vendor = PORT_VENDOR;
			port->class_code = PORT_CLASS;
			port->revision = PORT_REVISION;
			port->numa_node = ep->numa_node;
			port->link = ep->link;		/* the slot matches its card */
			port->primary_bus = (int)rbus;
			port->secondary_bus = port->subordinate_bus = (int)bus;
			port->nres = STATE_PCI_NUM_RESOURCES;
			memcpy(port->cpulist, ep->cpulist, sizeof(port->cpulist));
			return port;
		}
	return NULL;
}

/* The root port above an endpoint: one per secondary bus. */
static int add_port(struct planner *pl, struct state_pci_fn *ep)
{
	struct state_pci *p = pl->p;
	const struct state_pci_fn *port = NULL;
	unsigned rdom, rbus, dom, bus, dev, fn;

	root_parts(ep->root_id, &rdom, &rbus);
	bdf_parts(ep->bdf, &dom, &bus, &dev, &fn);
	if (bus == rbus)
		return 0;
	for (int i = 0; i < p->num_fns && !port; i++) {
		unsigned pdom, pbus, pdev, pfn;

		bdf_parts(p->fns[i].bdf, &pdom, &pbus, &pdev, &pfn);
		if (p->fns[i].kind == STATE_PCI_PORT && pdom == dom &&
		    p->fns[i].secondary_bus == (int)bus)
			port = &p->fns[i];
	}
	if (port && strcmp(port->root_id, ep->root_id) != 0) {
		report(pl, ep->bdf, "%s: bus %02x is under both %s and %s",
		       ep->bdf, bus, port->root_id, ep->root_id);
		return -EINVAL;
	}
	if (!port && !(port = new_port(p, ep, rdom, rbus))) {
		report(pl, ep->bdf, "%s: no free root port slot on %s", ep->bdf, ep->root_id);
		return -ENOSPC;
	}
	snprintf(ep->parent_bdf, sizeof(ep->parent_bdf), "%s", port->bdf);
	return 0;
}

static unsigned fn_key(const struct state_pci_fn *f)
{
	unsigned dom, bus, dev, fn;

	bdf_parts(f->bdf, &dom, &bus, &dev, &fn);
	return dom << 16 | bus << 8 | dev << 3 | fn;
}

static int fn_order(const void *a, const void *b)
{
	unsigned kx = fn_key(a), ky = fn_key(b);

	return kx < ky ? -1 : kx > ky;
}

static void place_bars(struct state_pci_fn *f, uint64_t *mem32, uint64_t *mem64)
{
	for (int i = 0; i < 6; i++) {
		struct state_pci_res *r = &f->res[i];
		uint64_t *next = r->flags & RES_MEM_64 ? mem64 : mem32;

		if (!r->size)
			continue;
		r->start = *next = align_up(*next, r->size);
		*next += r->size;
	}
}

/* A port's windows: the span of its endpoints' BARs, 1 MiB granular. */
static void port_windows(struct state_pci *p, struct state_pci_fn *port)
{
	uint64_t lo32 = UINT64_MAX, hi32 = 0, lo64 = UINT64_MAX, hi64 = 0;

	for (int j = 0; j < p->num_fns; j++) {
		const struct state_pci_fn *g = &p->fns[j];

		if (strcmp(g->parent_bdf, port->bdf) != 0)
			continue;
		for (int k = 0; k < 6; k++) {
			const struct state_pci_res *r = &g->res[k];
			bool is64 = r->flags & RES_MEM_64;
			uint64_t *lo = is64 ? &lo64 : &lo32, *hi = is64 ? &hi64 : &hi32;

			if (!r->size)
				continue;
			*lo = r->start < *lo ? r->start : *lo;
			*hi = r->start + r->size > *hi ? r->start + r->size : *hi;
		}
	}
	if (hi32)
		port->res[MEM_WINDOW] = (struct state_pci_res){ lo32 & ~(MIB - 1),
			align_up(hi32, MIB) - (lo32 & ~(MIB - 1)), RES_MEM };
	if (hi64)
		port->res[PREF_WINDOW] = (struct state_pci_res){ lo64 & ~(MIB - 1),
			align_up(hi64, MIB) - (lo64 & ~(MIB - 1)),
			RES_MEM | RES_PREFETCH | RES_MEM_64 | 0x1 };
}

/* Give every endpoint its BARs (in bus order, naturally aligned; the GPUs
 * first so their addresses do not depend on the HCAs, the accelerators
 * last), then every port the
 * windows that cover its endpoints. */
static int assign_addresses(struct planner *pl)
{
	struct state_pci *p = pl->p;
	uint64_t mem32 = MMIO32_BASE, mem64 = MMIO64_BASE;

	static const int order[] = { STATE_PCI_GPU, STATE_PCI_HCA, STATE_PCI_ACCEL };

	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < p->num_fns; i++) {
			struct state_pci_fn *f = &p->fns[i];

			if (f->kind != order[pass])
				continue;
			place_bars(f, &mem32, &mem64);
			if (mem32 > MMIO32_END) {
				report(pl, f->bdf, "%s: 32-bit MMIO window exhausted", f->bdf);
				return -ENOSPC;
			}
		}
	for (int i = 0; i < p->num_fns; i++)
		if (p->fns[i].kind == STATE_PCI_PORT)
			port_windows(p, &p->fns[i]);
	return 0;
}

int compile_pci(struct state *s, compile_pci_report_fn report_fn, void *arg)
{
	struct planner pl = { s, &s->pci, 0, report_fn, arg };
	int first = 0, nendpoints;

	memset(&s->pci, 0, sizeof(s->pci));
	for (int i = 0; i < s->num_roots; i++) {
		if (!state_valid_root_id(s->roots[i].id)) {
			report(&pl, "topology", "root %d \"%.16s\": not pcidddd:bb", i,
			       s->roots[i].id);
			first_error(&first, -EINVAL);
			continue;
		}
		first_error(&first, add_root(&s->pci, s->roots[i].id));
	}
	cpu_model_init(&pl);
	for (int i = 0; i < s->num_devices; i++)
		first_error(&first, add_gpu(&pl, &s->devices[i]));
	for (int i = 0; s->ib.enabled && i < s->ib.num_hcas && i < STATE_MAX_HCAS; i++)
		first_error(&first, add_hca(&pl, &s->ib.hcas[i]));
	for (int i = 0; i < s->num_accels && i < STATE_MAX_ACCELS; i++)
		first_error(&first, add_accel(&pl, &s->accels[i]));
	/* GPUs first: their ports keep the device numbers they had before
	 * HCAs existed. */
	nendpoints = s->pci.num_fns;
	for (int i = 0; i < nendpoints; i++)
		first_error(&first, add_port(&pl, &s->pci.fns[i]));
	qsort(s->pci.fns, (size_t)s->pci.num_fns, sizeof(s->pci.fns[0]), fn_order);
	for (int i = 0; i < s->pci.num_fns; i++)
		s->pci.fns[i].irq = FIRST_IRQ + i;
	first_error(&first, assign_addresses(&pl));
	return first;
}

/* The compiler's side: the first problem becomes the compile error, at the
 * device's bus_id, the infiniband block or the topology it came from. */
struct first_report {
	bool set;
	char surface[32];
	char msg[512];
};

static void keep_first(void *arg, const char *surface, const char *msg)
{
	struct first_report *fr = arg;

	if (fr->set)
		return;
	fr->set = true;
	snprintf(fr->surface, sizeof(fr->surface), "%s", surface);
	snprintf(fr->msg, sizeof(fr->msg), "%s", msg);
}

int compile_pci_plan(struct cctx *c, const struct ynode *root, const struct dev_build *devs,
		     int ndevs, struct state *s)
{
	struct first_report fr = { 0 };
	const struct ynode *at = NULL;
	const char *path = "pcie_topology";
	int r = compile_pci(s, keep_first, &fr);

	if (r == 0)
		return 0;
	for (int i = 0; i < ndevs && !at; i++)
		if (strcmp(devs[i].d.bus_id, fr.surface) == 0) {
			at = devs[i].bus ? devs[i].bus : devs[i].entry;
			path = devs[i].bus_path;
		}
	for (int i = 0; i < s->ib.num_hcas && !at; i++)
		if (strcmp(s->ib.hcas[i].bus_id, fr.surface) == 0) {
			at = cc_lookup(root, "infiniband");
			path = "infiniband";
		}
	if (!at)
		at = cc_lookup(root, "pcie_topology");
	return cc_fail(c, at ? at : root, path, "PCI plan: %s",
		       fr.set ? fr.msg : strerror(-r));
}
