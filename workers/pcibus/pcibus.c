/* pcibus: plan the simulated PCI tree from the compiled state, and the
 * simulator's vtable.
 *
 * Every GPU that is not on its root complex's own bus sits behind a PCIe
 * root port (one per secondary bus), as on real servers, so the bus
 * numbers, bridge windows and BARs form one tree lspci can walk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/pcibus/pcibus.h"

/* The root port model: an Intel Xeon (Sky Lake-E) PCIe root port, a part
 * pci.ids knows, so lspci names it. */
#define PORT_VENDOR		0x8086
#define PORT_DEVICE		0x2030
#define PORT_REVISION		0x04
#define PORT_CLASS		0x060400
#define GPU_CLASS		0x030200
#define GPU_REVISION		0xa1
#define NVIDIA_VENDOR		0x10de

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

/* Link defaults for a state without a pcie block: a Gen4 x16 slot. */
#define DEFAULT_GEN		4
#define DEFAULT_WIDTH		16

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

static void cpu_set(uint32_t *cpus, int cpu)
{
	cpus[cpu / 32] |= 1u << (cpu % 32);
}

static void cpu_set_range(uint32_t *cpus, int lo, int hi)
{
	for (int c = lo; c <= hi && c < PCIBUS_MAX_CPUS; c++)
		cpu_set(cpus, c);
}

/* Parse a kernel cpulist ("0-55,112-167"); *top gets the highest cpu. */
static int cpulist_parse(const char *s, uint32_t *cpus, int *top)
{
	*top = -1;
	while (*s) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s || lo < 0)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			hi = strtol(s, &end, 10);
			if (end == s || hi < lo)
				return -EINVAL;
		}
		if (hi >= PCIBUS_MAX_CPUS || (*end != ',' && *end != '\0'))
			return -EINVAL;
		cpu_set_range(cpus, (int)lo, (int)hi);
		if (hi > *top)
			*top = (int)hi;
		s = *end ? end + 1 : end;
	}
	return *top < 0 ? -EINVAL : 0;
}

static int parse_bdf(const char *bdf, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	if (!state_valid_bdf(bdf) || sscanf(bdf, "%x:%x:%x.%x", dom, bus, dev, fn) != 4 ||
	    *dev > 0x1f || *fn > 7)
		return -EINVAL;
	return 0;
}

static int parse_root(const char *id, unsigned *dom, unsigned *bus)
{
	if (!state_valid_root_id(id) || sscanf(id, "pci%x:%x", dom, bus) != 2)
		return -EINVAL;
	return 0;
}

static struct pcibus_fn *find_fn(struct pcibus_plan *p, const char *bdf)
{
	return (struct pcibus_fn *)pcibus_plan_find(p, bdf);
}

const struct pcibus_fn *pcibus_plan_find(const struct pcibus_plan *p, const char *bdf)
{
	for (int i = 0; i < p->nfns; i++)
		if (strcmp(p->fns[i].bdf, bdf) == 0)
			return &p->fns[i];
	return NULL;
}

static int add_root(struct pcibus_plan *p, const char *id)
{
	for (int i = 0; i < p->nroots; i++)
		if (strcmp(p->roots[i], id) == 0)
			return 0;
	if (p->nroots >= (int)(sizeof(p->roots) / sizeof(p->roots[0])))
		return -ENOSPC;
	snprintf(p->roots[p->nroots++], sizeof(p->roots[0]), "%s", id);
	return 0;
}

/* Where a device's CPUs come from: the root's cpu_affinity, else its NUMA
 * node's block of cores, else (no NUMA) every CPU, as the kernel does. */
struct cpu_model {
	int cores_per_numa;
	int ncpus;
};

static void cpu_model_init(struct cpu_model *m, const struct state *s)
{
	int nodes = 1, top;
	uint32_t scratch[PCIBUS_CPU_WORDS];

	for (int i = 0; i < s->num_roots; i++)
		if (s->roots[i].numa_node + 1 > nodes)
			nodes = s->roots[i].numa_node + 1;
	for (int i = 0; i < s->num_devices; i++)
		if (s->devices[i].numa_node + 1 > nodes)
			nodes = s->devices[i].numa_node + 1;
	m->cores_per_numa = s->cores_per_numa;
	if (m->cores_per_numa <= 0) {
		/* Unknown: split this machine's CPUs over the nodes, so the
		 * masks name CPUs that exist for the CPU/topology managers. */
		long n = sysconf(_SC_NPROCESSORS_CONF);
		m->cores_per_numa = n > 0 ? (int)(n / nodes) : 1;
		if (m->cores_per_numa < 1)
			m->cores_per_numa = 1;
	}
	if ((long)m->cores_per_numa * nodes > PCIBUS_MAX_CPUS)
		m->cores_per_numa = PCIBUS_MAX_CPUS / nodes;
	m->ncpus = m->cores_per_numa * nodes;
	for (int i = 0; i < s->num_roots; i++) {
		memset(scratch, 0, sizeof(scratch));
		if (s->roots[i].cpu_affinity[0] &&
		    cpulist_parse(s->roots[i].cpu_affinity, scratch, &top) == 0 && top >= m->ncpus)
			m->ncpus = top + 1;
	}
}

static int device_cpus(const struct cpu_model *m, const struct state_root_complex *rc,
		       int numa, uint32_t *cpus)
{
	int top;

	memset(cpus, 0, PCIBUS_CPU_WORDS * sizeof(*cpus));
	if (rc && rc->cpu_affinity[0])
		return cpulist_parse(rc->cpu_affinity, cpus, &top);
	if (numa >= 0)
		cpu_set_range(cpus, numa * m->cores_per_numa, (numa + 1) * m->cores_per_numa - 1);
	else
		cpu_set_range(cpus, 0, m->ncpus - 1);
	return 0;
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

/* Place one endpoint: parse its BDF, find its root complex, take a slot in
 * the plan (not yet counted: the caller fills the identity and then bumps
 * p->nfns).  what names it in errors ("device 3", "HCA mlx5_0"). */
static struct pcibus_fn *place_endpoint(struct pcibus_plan *p, const struct state *s,
					const struct cpu_model *cm, const char *bus_id,
					int root, int numa_node, const char *what,
					struct sim_errors *errs, int *err)
{
	const struct state_root_complex *rc = NULL;
	struct pcibus_fn *f;
	unsigned rdom, rbus;
	char root_id[16];

	*err = 0;
	if (p->nfns >= PCIBUS_MAX_FNS) {
		*err = -ENOSPC;
		return NULL;
	}
	f = &p->fns[p->nfns];
	memset(f, 0, sizeof(*f));
	*err = -EINVAL;
	if (parse_bdf(bus_id, &f->domain, &f->bus, &f->dev, &f->fn) < 0) {
		sim_error(errs, "bus_id", "pcibus: %s: bus id \"%.16s\": not dddd:bb:dd.f",
			  what, bus_id);
		return NULL;
	}
	if (find_fn(p, bus_id)) {
		sim_error(errs, bus_id, "pcibus: %s: %s: bus id used twice", bus_id, what);
		*err = -EEXIST;
		return NULL;
	}
	if (root >= 0 && root < s->num_roots) {
		rc = &s->roots[root];
		snprintf(root_id, sizeof(root_id), "%s", rc->id);
	} else if (root == -1) {
		/* No root complex in the topology: a host bridge for the
		 * domain's bus 00, so the device still shows up (decision 10). */
		snprintf(root_id, sizeof(root_id), "pci%04x:00", f->domain & 0xffff);
	} else {
		sim_error(errs, bus_id, "pcibus: %s: root %d: no such root complex", bus_id, root);
		return NULL;
	}
	if (parse_root(root_id, &rdom, &rbus) < 0) {
		sim_error(errs, "topology", "pcibus: root \"%.16s\": not pcidddd:bb", root_id);
		return NULL;
	}
	if (rdom != f->domain || f->bus < rbus) {
		sim_error(errs, bus_id, "pcibus: %s: not below root complex %s", bus_id, root_id);
		return NULL;
	}
	if ((*err = add_root(p, root_id)) < 0)
		return NULL;
	snprintf(f->bdf, sizeof(f->bdf), "%s", bus_id);
	snprintf(f->root_id, sizeof(f->root_id), "%s", root_id);
	f->numa_node = rc ? rc->numa_node : numa_node;
	if (device_cpus(cm, rc, f->numa_node, f->cpus) < 0) {
		sim_error(errs, bus_id, "pcibus: %s: root %s: cpu_affinity \"%s\": not a cpulist",
			  bus_id, root_id, rc->cpu_affinity);
		*err = -EINVAL;
		return NULL;
	}
	*err = 0;
	return f;
}

static int add_gpu(struct pcibus_plan *p, const struct state *s, const struct cpu_model *cm,
		   const struct state_device *d, struct sim_errors *errs)
{
	struct pcibus_fn *f;
	char what[32];
	int r;

	snprintf(what, sizeof(what), "device %d", d->index);
	if (!(f = place_endpoint(p, s, cm, d->bus_id, d->root, d->numa_node, what, errs, &r)))
		return r;
	f->driver = "nvidia";
	f->vendor = d->vendor_id ? d->vendor_id : NVIDIA_VENDOR;
	f->device = d->device_id;
	f->subsys_vendor = d->subsys_vendor_id ? d->subsys_vendor_id : f->vendor;
	f->subsys_device = d->subsys_device_id;
	f->class_code = GPU_CLASS;
	f->revision = GPU_REVISION;
	normalize_link(&f->link, &d->pcie);
	f->nres = PCIBUS_BRIDGE_RESOURCES;
	f->res[0] = (struct pcibus_resource){ 0, GPU_BAR0_SIZE,
		PCIBUS_RES_MEM | PCIBUS_RES_SIZEALIGN };
	f->res[1] = (struct pcibus_resource){ 0, pow2_at_least(d->bar1_total_bytes, GPU_BAR1_MIN),
		PCIBUS_RES_MEM | PCIBUS_RES_PREFETCH | PCIBUS_RES_MEM_64 | PCIBUS_RES_SIZEALIGN | 0xc };
	f->res[3] = (struct pcibus_resource){ 0, GPU_BAR3_SIZE, f->res[1].flags };
	p->nfns++;
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
static int add_hca(struct pcibus_plan *p, const struct state *s, const struct cpu_model *cm,
		   const struct state_hca *h, struct sim_errors *errs)
{
	struct state_pcie_link link = { DEFAULT_GEN, DEFAULT_WIDTH, 0, 0 };
	struct pcibus_fn *f;
	char what[32];
	int r;

	snprintf(what, sizeof(what), "HCA %.16s", h->name);
	if (!(f = place_endpoint(p, s, cm, h->bus_id, h->root, h->numa_node, what, errs, &r)))
		return r;
	f->hca = true;
	f->driver = "mlx5_core";
	f->vendor = PCIBUS_MLX_VENDOR;
	f->device = s->ib.device_id;
	f->subsys_vendor = PCIBUS_MLX_VENDOR;
	f->subsys_device = PCIBUS_MLX_SUBSYS;
	f->class_code = PCIBUS_HCA_CLASS;
	f->revision = 0;
	for (size_t i = 0; i < sizeof(hca_links) / sizeof(hca_links[0]); i++)
		if (hca_links[i].device == f->device)
			link.max_gen = hca_links[i].gen;
	normalize_link(&f->link, &link);
	f->nres = PCIBUS_BRIDGE_RESOURCES;
	f->res[0] = (struct pcibus_resource){ 0, HCA_BAR0_SIZE,
		PCIBUS_RES_MEM | PCIBUS_RES_PREFETCH | PCIBUS_RES_MEM_64 | PCIBUS_RES_SIZEALIGN | 0xc };
	p->nfns++;
	return 0;
}

/* The root port above an endpoint: one per secondary bus, on its root's
 * bus at the first free device number. */
static int add_port(struct pcibus_plan *p, struct pcibus_fn *ep, struct sim_errors *errs)
{
	unsigned rdom, rbus;
	char bdf[16];
	struct pcibus_fn *port;

	parse_root(ep->root_id, &rdom, &rbus);
	if (ep->bus == rbus) {
		snprintf(ep->devpath, sizeof(ep->devpath), "devices/%s/%s", ep->root_id, ep->bdf);
		ep->depth = 3;
		return 0;
	}
	for (int i = 0; i < p->nfns; i++) {
		port = &p->fns[i];
		if (port->bridge && port->domain == ep->domain && port->secondary_bus == ep->bus) {
			if (strcmp(port->root_id, ep->root_id) != 0) {
				sim_error(errs, ep->bdf, "pcibus: %s: bus %02x is under both %s and %s",
					  ep->bdf, ep->bus, port->root_id, ep->root_id);
				return -EINVAL;
			}
			goto link;
		}
	}
	port = NULL;
	for (unsigned fn = 0; fn < 8 && !port; fn++)
		for (unsigned dev = 1; dev < 32 && !port; dev++) {
			snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", rdom, rbus, dev, fn);
			if (!find_fn(p, bdf) && p->nfns < PCIBUS_MAX_FNS) {
				port = &p->fns[p->nfns++];
				memset(port, 0, sizeof(*port));
				snprintf(port->bdf, sizeof(port->bdf), "%s", bdf);
				port->dev = dev;
				port->fn = fn;
			}
		}
	if (!port) {
		sim_error(errs, ep->bdf, "pcibus: %s: no free root port slot on %s",
			  ep->bdf, ep->root_id);
		return -ENOSPC;
	}
	snprintf(port->root_id, sizeof(port->root_id), "%s", ep->root_id);
	snprintf(port->devpath, sizeof(port->devpath), "devices/%s/%s", port->root_id, port->bdf);
	port->depth = 3;
	port->bridge = true;
	port->driver = "pcieport";
	port->domain = rdom;
	port->bus = rbus;
	port->vendor = PORT_VENDOR;
	port->device = PORT_DEVICE;
	port->subsys_vendor = PORT_VENDOR;
	port->subsys_device = 0;
	port->class_code = PORT_CLASS;
	port->revision = PORT_REVISION;
	port->numa_node = ep->numa_node;
	port->link = ep->link;		/* the slot matches its card */
	port->primary_bus = (uint8_t)rbus;
	port->secondary_bus = port->subordinate_bus = (uint8_t)ep->bus;
	port->nres = PCIBUS_NUM_RESOURCES;
	memcpy(port->cpus, ep->cpus, sizeof(port->cpus));
link:
	snprintf(ep->parent_bdf, sizeof(ep->parent_bdf), "%s", port->bdf);
	snprintf(ep->devpath, sizeof(ep->devpath), "devices/%s/%s/%s",
		 ep->root_id, port->bdf, ep->bdf);
	ep->depth = 4;
	return 0;
}

static int fn_order(const void *a, const void *b)
{
	const struct pcibus_fn *x = a, *y = b;
	unsigned kx = x->domain << 16 | x->bus << 8 | x->dev << 3 | x->fn;
	unsigned ky = y->domain << 16 | y->bus << 8 | y->dev << 3 | y->fn;

	return kx < ky ? -1 : kx > ky;
}

static void place_bars(struct pcibus_fn *f, uint64_t *mem32, uint64_t *mem64)
{
	for (int i = 0; i < 6; i++) {
		struct pcibus_resource *r = &f->res[i];
		uint64_t *next = r->flags & PCIBUS_RES_MEM_64 ? mem64 : mem32;

		if (!r->size)
			continue;
		r->start = *next = align_up(*next, r->size);
		*next += r->size;
	}
}

/* Give every endpoint its BARs (in bus order, naturally aligned; the GPUs
 * first so their addresses do not depend on the HCAs), then every port the
 * windows that cover its endpoint. */
static int assign_addresses(struct pcibus_plan *p, struct sim_errors *errs)
{
	uint64_t mem32 = MMIO32_BASE, mem64 = MMIO64_BASE;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < p->nfns; i++) {
			struct pcibus_fn *f = &p->fns[i];

			if (f->bridge || f->hca != (pass == 1))
				continue;
			place_bars(f, &mem32, &mem64);
			if (mem32 > MMIO32_END) {
				sim_error(errs, f->bdf, "pcibus: %s: 32-bit MMIO window exhausted",
					  f->bdf);
				return -ENOSPC;
			}
		}
	for (int i = 0; i < p->nfns; i++) {
		struct pcibus_fn *port = &p->fns[i];
		struct pcibus_resource *mem = &port->res[PCIBUS_BRIDGE_RESOURCES + 1];
		struct pcibus_resource *pref = &port->res[PCIBUS_BRIDGE_RESOURCES + 2];
		uint64_t lo32 = UINT64_MAX, hi32 = 0, lo64 = UINT64_MAX, hi64 = 0;

		if (!port->bridge)
			continue;
		for (int j = 0; j < p->nfns; j++) {
			const struct pcibus_fn *g = &p->fns[j];
			if (strcmp(g->parent_bdf, port->bdf) != 0)
				continue;
			for (int k = 0; k < 6; k++) {
				const struct pcibus_resource *r = &g->res[k];
				bool is64 = r->flags & PCIBUS_RES_MEM_64;
				uint64_t *lo = is64 ? &lo64 : &lo32, *hi = is64 ? &hi64 : &hi32;

				if (!r->size)
					continue;
				*lo = r->start < *lo ? r->start : *lo;
				*hi = r->start + r->size > *hi ? r->start + r->size : *hi;
			}
		}
		if (hi32)
			*mem = (struct pcibus_resource){ lo32 & ~(MIB - 1),
				align_up(hi32, MIB) - (lo32 & ~(MIB - 1)), PCIBUS_RES_MEM };
		if (hi64)
			*pref = (struct pcibus_resource){ lo64 & ~(MIB - 1),
				align_up(hi64, MIB) - (lo64 & ~(MIB - 1)),
				PCIBUS_RES_MEM | PCIBUS_RES_PREFETCH | PCIBUS_RES_MEM_64 | 0x1 };
	}
	return 0;
}

static int build_config(struct pcibus_fn *f, struct sim_errors *errs)
{
	struct config_space_params cp = {
		.type = f->bridge ? CONFIG_SPACE_ROOT_PORT : CONFIG_SPACE_ENDPOINT,
		.vendor = f->vendor, .device = f->device,
		.subsys_vendor = f->subsys_vendor, .subsys_device = f->subsys_device,
		.class_code = f->class_code, .revision = f->revision,
		.irq_line = (uint8_t)f->irq,
		.port_number = f->bridge ? (uint8_t)f->dev : 0,
		.max_gen = f->link.max_gen, .max_width = f->link.max_width,
		.cur_gen = f->link.cur_gen, .cur_width = f->link.cur_width,
		.primary_bus = f->primary_bus, .secondary_bus = f->secondary_bus,
		.subordinate_bus = f->subordinate_bus,
	};
	const struct pcibus_resource *mem = &f->res[PCIBUS_BRIDGE_RESOURCES + 1];
	const struct pcibus_resource *pref = &f->res[PCIBUS_BRIDGE_RESOURCES + 2];
	int r;

	for (int i = 0; i < 6; i++)
		cp.bars[i] = (struct config_space_bar){
			f->res[i].start, f->res[i].size,
			(f->res[i].flags & PCIBUS_RES_MEM_64) != 0,
			(f->res[i].flags & PCIBUS_RES_PREFETCH) != 0,
		};
	cp.mem = (struct config_space_window){ mem->start, mem->size };
	cp.prefetch = (struct config_space_window){ pref->start, pref->size };
	if ((r = config_space_build(f->config, &cp)) < 0)
		sim_error(errs, f->bdf, "pcibus: %s/config: link gen %d/%d x%d/x%d or layout "
			  "not encodable: %s", f->bdf, f->link.cur_gen, f->link.max_gen,
			  f->link.cur_width, f->link.max_width, strerror(-r));
	return r;
}

int pcibus_plan_build(const struct state *s, struct pcibus_plan *p, struct sim_errors *errs)
{
	struct cpu_model cm;
	int first = 0, nendpoints;

	memset(p, 0, sizeof(*p));
	/* "/" or a relative R would put the tree over the host's own /sys. */
	if (s->mock_root[0] != '/' || strspn(s->mock_root, "/") == strlen(s->mock_root)) {
		sim_error(errs, "mock_root", "pcibus: mock root \"%s\": not an absolute path "
			  "below /", s->mock_root);
		return -EINVAL;
	}
	snprintf(p->mock_root, sizeof(p->mock_root), "%s", s->mock_root);
	for (int i = 0; i < s->num_roots; i++) {
		if (!state_valid_root_id(s->roots[i].id)) {
			sim_error(errs, "topology", "pcibus: root %d \"%.16s\": not pcidddd:bb",
				  i, s->roots[i].id);
			pcibus_first_error(&first, -EINVAL);
			continue;
		}
		pcibus_first_error(&first, add_root(p, s->roots[i].id));
	}
	cpu_model_init(&cm, s);
	p->ncpus = cm.ncpus;
	for (int i = 0; i < s->num_devices; i++)
		pcibus_first_error(&first, add_gpu(p, s, &cm, &s->devices[i], errs));
	for (int i = 0; s->ib.enabled && i < s->ib.num_hcas && i < STATE_MAX_HCAS; i++)
		pcibus_first_error(&first, add_hca(p, s, &cm, &s->ib.hcas[i], errs));
	/* GPUs first: their ports keep the device numbers they had before
	 * HCAs existed. */
	nendpoints = p->nfns;
	for (int i = 0; i < nendpoints; i++)
		pcibus_first_error(&first, add_port(p, &p->fns[i], errs));
	qsort(p->fns, (size_t)p->nfns, sizeof(p->fns[0]), fn_order);
	for (int i = 0; i < p->nfns; i++)
		p->fns[i].irq = FIRST_IRQ + i;
	if (pcibus_first_error(&first, assign_addresses(p, errs)) < 0)
		return first;
	for (int i = 0; i < p->nfns; i++)
		pcibus_first_error(&first, build_config(&p->fns[i], errs));
	return first;
}

/* The mockfs shim travels with the driver root; it is built by another
 * part of the tree, so its absence is a warning, not a Stage failure. */
static int stage_shim(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char src[4096], dst[512];
	int r;

	if (!ctx->libdir || snprintf(src, sizeof(src), "%s/libmockfs.so", ctx->libdir) >= (int)sizeof(src) ||
	    access(src, R_OK) < 0) {
		log_warn("pcibus: %s/libmockfs.so: not found, shim not staged",
			 ctx->libdir ? ctx->libdir : "(no libdir)");
		return 0;
	}
	snprintf(dst, sizeof(dst), "%s/driver/usr/local/lib/libmockfs.so", s->mock_root);
	if ((r = host_copy_in(&ctx->host, src, dst, 0755)) < 0)
		sim_error(errs, "shim", "pcibus: %s: copy from %s: %s", dst, src, strerror(-r));
	return r;
}

static int pcibus_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct pcibus_plan *p = malloc(sizeof(*p));
	int first = 0;

	if (!p) {
		sim_error(errs, "pcibus", "pcibus: plan: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pcibus_first_error(&first, pcibus_plan_build(s, p, errs));
	if (!p->mock_root[0]) {
		free(p);
		return first;
	}
	/* Render what could be planned even when a device was refused, so
	 * every error of this pass is reported at once. */
	pcibus_first_error(&first, sysfs_tree_render(&ctx->host, p, errs));
	pcibus_first_error(&first, procfs_render(&ctx->host, p, errs));
	pcibus_first_error(&first, stage_shim(ctx, s, errs));
	free(p);
	return first;
}

static int pcibus_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	return nfd_render(&ctx->host, s, errs);
}

/* Revoke is the framework removing what Apply recorded. */
const struct simulator pcibus_simulator = {
	.name = "pcibus",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_APPLY,
	.stage = pcibus_stage,
	.apply = pcibus_apply,
};
