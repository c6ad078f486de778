/* Expand the state's PCI plan into what the renderers write: the parts a
 * function's name and kind imply (numbers, driver, sysfs path), its CPU
 * mask, and its config space, which is a pure function of the plan. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/pcibus/pci_fn.h"

/* Per kind: the driver sysfs binds, and the flags the renderers key on. */
static const struct {
	const char *driver;
	bool bridge, hca;
} kinds[STATE_PCI_KINDS] = {
	[STATE_PCI_GPU] = { "nvidia", false, false },
	[STATE_PCI_HCA] = { "mlx5_core", false, true },
	[STATE_PCI_PORT] = { "pcieport", true, false },
	[STATE_PCI_ACCEL] = { NULL, false, false },	/* the profile's driver */
};

const struct pcibus_fn *pcibus_plan_find(const struct pcibus_plan *p, const char *bdf)
{
	for (int i = 0; i < p->nfns; i++)
		if (strcmp(p->fns[i].bdf, bdf) == 0)
			return &p->fns[i];
	return NULL;
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

/* One function; the plan's names were checked by the state decoder (or
 * made by the compiler), so the numbers parse. */
static int expand(struct pcibus_fn *f, const struct state_pci_fn *in, struct sim_errors *errs)
{
	int top;

	memset(f, 0, sizeof(*f));
	if (in->kind < 0 || in->kind >= STATE_PCI_KINDS ||
	    sscanf(in->bdf, "%x:%x:%x.%x", &f->domain, &f->bus, &f->dev, &f->fn) != 4) {
		sim_error(errs, "pci", "pcibus: %.16s: not a planned function", in->bdf);
		return -EINVAL;
	}
	memcpy(f->bdf, in->bdf, sizeof(f->bdf));
	memcpy(f->root_id, in->root_id, sizeof(f->root_id));
	memcpy(f->parent_bdf, in->parent_bdf, sizeof(f->parent_bdf));
	if (in->parent_bdf[0])
		snprintf(f->devpath, sizeof(f->devpath), "devices/%.16s/%.16s/%.16s",
			 in->root_id, in->parent_bdf, in->bdf);
	else
		snprintf(f->devpath, sizeof(f->devpath), "devices/%.16s/%.16s", in->root_id,
			 in->bdf);
	f->depth = in->parent_bdf[0] ? 4 : 3;
	snprintf(f->driver_name, sizeof(f->driver_name), "%s", in->driver);
	f->driver = kinds[in->kind].driver ? kinds[in->kind].driver : f->driver_name;
	f->bridge = kinds[in->kind].bridge;
	f->hca = kinds[in->kind].hca;
	f->vendor = in->vendor;
	f->device = in->device;
	f->subsys_vendor = in->subsys_vendor;
	f->subsys_device = in->subsys_device;
	f->class_code = in->class_code;
	f->revision = (uint8_t)in->revision;
	f->irq = in->irq;
	f->numa_node = in->numa_node;
	f->link = in->link;
	f->primary_bus = (uint8_t)in->primary_bus;
	f->secondary_bus = (uint8_t)in->secondary_bus;
	f->subordinate_bus = (uint8_t)in->subordinate_bus;
	f->nres = in->nres;
	for (int i = 0; i < in->nres && i < PCIBUS_NUM_RESOURCES; i++)
		f->res[i] = (struct pcibus_resource){ in->res[i].start, in->res[i].size,
						      in->res[i].flags };
	if (in->cpulist[0] && state_cpulist_parse(in->cpulist, f->cpus, &top) < 0) {
		sim_error(errs, f->bdf, "pcibus: %s: cpulist \"%s\": not a cpulist", f->bdf,
			  in->cpulist);
		return -EINVAL;
	}
	return 0;
}

int pcibus_plan_load(const struct state *s, struct pcibus_plan *p, struct sim_errors *errs)
{
	const struct state_pci *in = &s->pci;
	int first = 0;

	memset(p, 0, sizeof(*p));
	snprintf(p->mock_root, sizeof(p->mock_root), "%s", s->mock_root);
	p->ncpus = in->ncpus;
	for (int i = 0; i < in->num_roots && i < STATE_PCI_MAX_ROOTS; i++)
		memcpy(p->roots[p->nroots++], in->roots[i], sizeof(p->roots[0]));
	/* A function whose config cannot be encoded is still rendered, so
	 * every error of this pass is reported at once. */
	for (int i = 0; i < in->num_fns && i < PCIBUS_MAX_FNS; i++) {
		struct pcibus_fn *f = &p->fns[p->nfns];

		if (pcibus_first_error(&first, expand(f, &in->fns[i], errs)) < 0)
			continue;
		p->nfns++;
		pcibus_first_error(&first, build_config(f, errs));
	}
	return first;
}
