/* One PCI function's sysfs directory, <sys>/devices/<root>[/<port>]/<bdf>:
 * its attributes in the kernel's formats (drivers/pci/pci-sysfs.c), so
 * libpci, NFD and the device plugins parse them as they parse a real node,
 * its config space, and its driver and subsystem links.  pcibus renders
 * every function under R/sys; ib its HCAs' under R/ib/sys. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "workers/pcibus/pci_fn.h"

#define ATTR_GPU	0x1
#define ATTR_PORT	0x2
#define ATTR_ALL	(ATTR_GPU | ATTR_PORT)

typedef int (*attr_show)(const struct pcibus_fn *f, const struct pcibus_plan *p,
			 char *buf, size_t len);

struct attr {
	const char *name;
	mode_t mode;		/* as sysfs shows it: 0444 read-only, 0644 root-writable */
	unsigned who;
	attr_show show;		/* returns the length written */
};

static int show_vendor(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%04x\n", f->vendor);
}

static int show_device(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%04x\n", f->device);
}

static int show_subsys_vendor(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%04x\n", f->subsys_vendor);
}

static int show_subsys_device(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%04x\n", f->subsys_device);
}

static int show_class(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%06x\n", f->class_code);
}

static int show_revision(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "0x%02x\n", f->revision);
}

static int show_irq(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%d\n", f->irq);
}

static int show_numa_node(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%d\n", f->numa_node);
}

static bool cpu_isset(const uint32_t *cpus, int c)
{
	return cpus[c / 32] >> (c % 32) & 1;
}

/* "%*pb": 32-bit groups, most significant first, comma separated; the
 * first group only as wide as nr_cpu_ids leaves it. */
static int show_local_cpus(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	int nbits = p->ncpus, chunk = nbits % 32 ? nbits % 32 : 32, off = 0;

	for (int i = (nbits + 31) / 32 * 32 - 32; i >= 0; i -= 32) {
		uint32_t v = f->cpus[i / 32] & (chunk == 32 ? 0xffffffffu : (1u << chunk) - 1);
		off += snprintf(b + off, n - (size_t)off, "%s%0*x", off ? "," : "", (chunk + 3) / 4, v);
		chunk = 32;
		if ((size_t)off >= n)
			return off;
	}
	return off + snprintf(b + off, n - (size_t)off, "\n");
}

/* "%*pbl": ranges, "0-55,112-167". */
static int show_local_cpulist(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	int off = 0;

	for (int c = 0; c < p->ncpus && (size_t)off < n; c++) {
		int lo = c;

		if (!cpu_isset(f->cpus, c))
			continue;
		while (c + 1 < p->ncpus && cpu_isset(f->cpus, c + 1))
			c++;
		off += lo == c ? snprintf(b + off, n - (size_t)off, "%s%d", off ? "," : "", lo)
			       : snprintf(b + off, n - (size_t)off, "%s%d-%d", off ? "," : "", lo, c);
	}
	if ((size_t)off >= n)
		return off;
	return off + snprintf(b + off, n - (size_t)off, "\n");
}

/* pci_speed_string() names, indexed by gen. */
static const char *const link_speeds[] = {
	"Unknown", "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe",
	"16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe",
};

static const char *speed_name(int gen)
{
	return gen > 0 && gen < (int)(sizeof(link_speeds) / sizeof(link_speeds[0]))
	       ? link_speeds[gen] : link_speeds[0];
}

static int show_max_speed(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%s\n", speed_name(f->link.max_gen));
}

static int show_cur_speed(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%s\n", speed_name(f->link.cur_gen));
}

static int show_max_width(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%d\n", f->link.max_width);
}

static int show_cur_width(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%d\n", f->link.cur_width);
}

static int show_resource(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	int off = 0;

	for (int i = 0; i < f->nres && (size_t)off < n; i++) {
		const struct pcibus_resource *r = &f->res[i];
		unsigned long long start = r->size ? r->start : 0;
		unsigned long long end = r->size ? r->start + r->size - 1 : 0;

		off += snprintf(b + off, n - (size_t)off, "0x%016llx 0x%016llx 0x%016llx\n",
				start, end, r->size ? (unsigned long long)r->flags : 0ULL);
	}
	return off;
}

static int one(char *b, size_t n, const char *s)
{
	return snprintf(b, n, "%s", s);
}

static int show_one(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return one(b, n, "1\n");
}

static int show_zero(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return one(b, n, "0\n");
}

static int show_driver_override(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return one(b, n, "(null)\n");
}

/* The DMA mask a driver set: 64-bit capable bus masters vs the port. */
static int show_dma_bits(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%d\n", f->bridge ? 32 : 64);
}

static int modalias(const struct pcibus_fn *f, char *b, size_t n)
{
	return snprintf(b, n, "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
			f->vendor, f->device, f->subsys_vendor, f->subsys_device,
			f->class_code >> 16, (f->class_code >> 8) & 0xff, f->class_code & 0xff);
}

static int show_modalias(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	int off = modalias(f, b, n);

	return (size_t)off >= n ? off : off + snprintf(b + off, n - (size_t)off, "\n");
}

static int show_uevent(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	char alias[128];

	modalias(f, alias, sizeof(alias));
	return snprintf(b, n, "DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\n"
			"PCI_SLOT_NAME=%s\nMODALIAS=%s\n", f->driver, f->class_code,
			f->vendor, f->device, f->subsys_vendor, f->subsys_device, f->bdf, alias);
}

static int show_secondary(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%u\n", f->secondary_bus);
}

static int show_subordinate(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return snprintf(b, n, "%u\n", f->subordinate_bus);
}

static int show_power_control(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return one(b, n, "on\n");
}

static int show_runtime_status(const struct pcibus_fn *f, const struct pcibus_plan *p, char *b, size_t n)
{
	return one(b, n, "active\n");
}

static const struct attr attrs[] = {
	{ "vendor", 0444, ATTR_ALL, show_vendor },
	{ "device", 0444, ATTR_ALL, show_device },
	{ "subsystem_vendor", 0444, ATTR_ALL, show_subsys_vendor },
	{ "subsystem_device", 0444, ATTR_ALL, show_subsys_device },
	{ "class", 0444, ATTR_ALL, show_class },
	{ "revision", 0444, ATTR_ALL, show_revision },
	{ "irq", 0444, ATTR_ALL, show_irq },
	{ "numa_node", 0644, ATTR_ALL, show_numa_node },
	{ "local_cpus", 0444, ATTR_ALL, show_local_cpus },
	{ "local_cpulist", 0444, ATTR_ALL, show_local_cpulist },
	{ "max_link_speed", 0444, ATTR_ALL, show_max_speed },
	{ "max_link_width", 0444, ATTR_ALL, show_max_width },
	{ "current_link_speed", 0444, ATTR_ALL, show_cur_speed },
	{ "current_link_width", 0444, ATTR_ALL, show_cur_width },
	{ "resource", 0444, ATTR_ALL, show_resource },
	{ "enable", 0644, ATTR_ALL, show_one },
	{ "modalias", 0444, ATTR_ALL, show_modalias },
	{ "uevent", 0644, ATTR_ALL, show_uevent },
	{ "dma_mask_bits", 0444, ATTR_ALL, show_dma_bits },
	{ "consistent_dma_mask_bits", 0444, ATTR_ALL, show_dma_bits },
	{ "d3cold_allowed", 0644, ATTR_ALL, show_one },
	{ "msi_bus", 0644, ATTR_ALL, show_one },
	{ "broken_parity_status", 0644, ATTR_ALL, show_zero },
	{ "driver_override", 0644, ATTR_ALL, show_driver_override },
	{ "secondary_bus_number", 0444, ATTR_PORT, show_secondary },
	{ "subordinate_bus_number", 0444, ATTR_PORT, show_subordinate },
	{ "power/control", 0644, ATTR_ALL, show_power_control },
	{ "power/runtime_status", 0444, ATTR_ALL, show_runtime_status },
};

/* Report a failed operation on surface "<who>/<what>". */
int pcibus_check(struct pcibus_render *rd, int r, const char *who, const char *what,
		 const char *op)
{
	char surface[128];

	if (r >= 0)
		return r;
	snprintf(surface, sizeof(surface), "%s/%s", who, what);
	sim_error(rd->errs, surface, "pcibus: %s: %s: %s", surface, op, strerror(-r));
	return pcibus_first_error(&rd->first, r);
}

int pcibus_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 ? -EINVAL : (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "../" repeated n times. */
static const char *ups(int n)
{
	static const char dots[] = "../../../../../../../../";

	return dots + sizeof(dots) - 1 - 3 * (size_t)(n < 8 ? n : 8);
}

void pcibus_link(struct pcibus_render *rd, const char *who, const char *what,
		 const char *target, const char *path)
{
	pcibus_check(rd, host_symlink(rd->h, target, path), who, what, "symlink");
}

static void render_attrs(struct pcibus_render *rd, const struct pcibus_fn *f, const char *dir)
{
	char buf[16384];		/* widest: an 8192-CPU mask */
	char path[4096];
	unsigned who = f->bridge ? ATTR_PORT : ATTR_GPU;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const struct attr *a = &attrs[i];
		int n, r;

		if (!(a->who & who))
			continue;
		n = a->show(f, rd->p, buf, sizeof(buf));
		if (n < 0 || (size_t)n >= sizeof(buf))
			r = -EOVERFLOW;
		else if ((r = pcibus_path(path, sizeof(path), "%s/%s", dir, a->name)) == 0)
			r = host_write(rd->h, path, buf, (size_t)n, a->mode);
		pcibus_check(rd, r, f->bdf, a->name, "write");
	}
	if (pcibus_path(path, sizeof(path), "%s/config", dir) == 0)
		pcibus_check(rd, host_write(rd->h, path, f->config, CONFIG_SPACE_SIZE, 0644),
		      f->bdf, "config", "write");
}

bool pcibus_valid_names(const struct pcibus_fn *f)
{
	return state_valid_bdf(f->bdf) && state_valid_root_id(f->root_id) &&
	       (!f->parent_bdf[0] || state_valid_bdf(f->parent_bdf)) && f->driver[0] &&
	       strspn(f->driver, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(f->driver);
}

/* The function's own directory: attributes, config, driver and subsystem. */
static void render_dir(struct pcibus_render *rd, const struct pcibus_fn *f, const char *sys)
{
	char dir[4096], path[4096], target[512];

	if (pcibus_check(rd, pcibus_path(dir, sizeof(dir), "%s/%s", sys, f->devpath), f->bdf, ".",
			 "path") < 0 ||
	    pcibus_check(rd, host_mkdirs(rd->h, dir, 0755), f->bdf, ".", "mkdir") < 0)
		return;
	render_attrs(rd, f, dir);

	if (pcibus_path(path, sizeof(path), "%s/driver", dir) == 0 &&
	    pcibus_path(target, sizeof(target), "%sbus/pci/drivers/%s", ups(f->depth), f->driver) == 0)
		pcibus_link(rd, f->bdf, "driver", target, path);
	if (pcibus_path(path, sizeof(path), "%s/subsystem", dir) == 0 &&
	    pcibus_path(target, sizeof(target), "%sbus/pci", ups(f->depth)) == 0)
		pcibus_link(rd, f->bdf, "subsystem", target, path);
}

int sysfs_render_function(struct host *h, const struct pcibus_plan *p,
			  const struct pcibus_fn *f, const char *sys, struct sim_errors *errs)
{
	struct pcibus_render rd = { h, p, errs, 0 };

	if (!pcibus_valid_names(f)) {
		sim_error(errs, f->bdf, "pcibus: %s: refusing a path from an invalid name", f->bdf);
		return -EINVAL;
	}
	render_dir(&rd, f, sys);
	return rd.first;
}

