/* Render the plan as the kernel's /proc/bus/pci under R/proc/bus/pci:
 *
 *   devices            one line per function (drivers/pci/proc.c format)
 *   <bus>/<dd>.<f>     the function's config space
 *
 * <bus> is "bb", or "dddd:bb" outside domain 0, as x86 names it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/pcibus/pcibus.h"

#define PROC_RESOURCES 7		/* 6 BARs + ROM */
#define REGION_FLAG_MASK 0x0fUL		/* BAR type bits kept in the address */
#define LINE_MAX_LEN 512

static int devices_line(const struct pcibus_fn *f, char *b, size_t n)
{
	int off = snprintf(b, n, "%02x%02x\t%04x%04x\t%x", f->bus, f->dev << 3 | f->fn,
			   f->vendor, f->device, (unsigned)f->irq);

	for (int i = 0; i < PROC_RESOURCES; i++) {
		const struct pcibus_resource *r = &f->res[i];
		unsigned long long a = r->size ? r->start | (r->flags & REGION_FLAG_MASK) : 0;

		off += snprintf(b + off, n - (size_t)off, "\t%16llx", a);
	}
	for (int i = 0; i < PROC_RESOURCES; i++)
		off += snprintf(b + off, n - (size_t)off, "\t%16llx",
				(unsigned long long)f->res[i].size);
	return off + snprintf(b + off, n - (size_t)off, "\t%s\n", f->driver);
}

static void note(struct sim_errors *errs, int *first, int r, const char *surface, const char *op)
{
	if (r >= 0)
		return;
	sim_error(errs, surface, "pcibus: %s: %s: %s", surface, op, strerror(-r));
	pcibus_first_error(first, r);
}

int procfs_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs)
{
	char path[4096], surface[128];
	size_t cap = (size_t)(p->nfns + 1) * LINE_MAX_LEN, len = 0;
	char *list = malloc(cap);
	int first = 0, r;

	if (!list) {
		sim_error(errs, "proc/bus/pci", "pcibus: proc/bus/pci/devices: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	list[0] = '\0';
	for (int i = 0; i < p->nfns; i++) {
		const struct pcibus_fn *f = &p->fns[i];
		char bus[16];

		len += (size_t)devices_line(f, list + len, cap - len);
		if (f->domain)
			snprintf(bus, sizeof(bus), "%04x:%02x", f->domain, f->bus);
		else
			snprintf(bus, sizeof(bus), "%02x", f->bus);
		snprintf(surface, sizeof(surface), "proc/bus/pci/%s/%02x.%x", bus, f->dev, f->fn);
		if (snprintf(path, sizeof(path), "%s/%s", p->mock_root, surface) >= (int)sizeof(path))
			r = -ENAMETOOLONG;
		else
			r = host_write(h, path, f->config, CONFIG_SPACE_SIZE, 0644);
		note(errs, &first, r, surface, "write");
	}
	snprintf(surface, sizeof(surface), "proc/bus/pci/devices");
	if (snprintf(path, sizeof(path), "%s/%s", p->mock_root, surface) >= (int)sizeof(path))
		r = -ENAMETOOLONG;
	else
		r = host_write(h, path, list, len, 0444);
	note(errs, &first, r, surface, "write");
	free(list);
	return first;
}
