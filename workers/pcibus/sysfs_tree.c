/* Render the plan as the kernel's sysfs PCI tree under R/sys:
 *
 *   devices/<root>/<port>/<gpu or hca>/{vendor,device,...,config}
 *   bus/pci/devices/<bdf>          -> ../../../devices/<root>/...
 *   bus/pci/drivers/<drv>/<bdf>    -> ../../../../devices/<root>/...
 *   <device>/driver                -> ../../../../bus/pci/drivers/<drv>
 *
 * Each function's own directory is sysfs_fn.c's (shared with ib). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/pcibus/pcibus.h"

/* Write-only control files every bound PCI driver directory has. */
static const char *const driver_files[] = { "bind", "unbind", "new_id", "remove_id", "uevent" };

static void render_fn(struct pcibus_render *rd, const struct pcibus_fn *f)
{
	const char *R = rd->p->mock_root;
	char sys[4096], path[4096], target[512];

	if (!pcibus_valid_names(f)) {
		sim_error(rd->errs, f->bdf, "pcibus: %s: refusing a path from an invalid name", f->bdf);
		pcibus_first_error(&rd->first, -EINVAL);
		return;
	}
	if (pcibus_check(rd, pcibus_path(sys, sizeof(sys), "%s/sys", R), f->bdf, ".",
			 "path") < 0)
		return;
	pcibus_first_error(&rd->first, sysfs_render_function(rd->h, rd->p, f, sys, rd->errs));

	/* bus/pci/devices/<bdf>: readlink consumers take the root complex
	 * from the target, so it stays relative and names the real path. */
	if (pcibus_path(path, sizeof(path), "%s/sys/bus/pci/devices/%s", R, f->bdf) == 0 &&
	    pcibus_path(target, sizeof(target), "../../../%s", f->devpath) == 0)
		pcibus_link(rd, "bus/pci/devices", f->bdf, target, path);
	if (pcibus_path(path, sizeof(path), "%s/sys/bus/pci/drivers/%s/%s", R, f->driver,
			f->bdf) == 0 &&
	    pcibus_path(target, sizeof(target), "../../../../%s", f->devpath) == 0)
		pcibus_link(rd, f->driver, f->bdf, target, path);
}

static void render_driver(struct pcibus_render *rd, const char *driver)
{
	char path[4096], who[64];

	snprintf(who, sizeof(who), "drivers/%s", driver);
	for (size_t i = 0; i < sizeof(driver_files) / sizeof(driver_files[0]); i++)
		if (pcibus_path(path, sizeof(path), "%s/sys/bus/pci/drivers/%s/%s",
				rd->p->mock_root, driver, driver_files[i]) == 0)
			pcibus_check(rd, host_write(rd->h, path, "", 0, 0200), who, driver_files[i],
				     "write");
}

/* The first function bound to f's driver is f itself: each driver once. */
static bool first_of_driver(const struct pcibus_plan *p, int i)
{
	for (int j = 0; j < i; j++)
		if (strcmp(p->fns[j].driver, p->fns[i].driver) == 0)
			return false;
	return true;
}

int sysfs_tree_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs)
{
	static const char *const bus_dirs[] = { "sys/bus/pci/devices", "sys/bus/pci/drivers" };
	struct pcibus_render rd = { h, p, errs, 0 };
	char path[4096];

	for (size_t i = 0; i < sizeof(bus_dirs) / sizeof(bus_dirs[0]); i++)
		if (pcibus_check(&rd, pcibus_path(path, sizeof(path), "%s/%s", p->mock_root,
						  bus_dirs[i]), "sysfs", bus_dirs[i], "path") == 0)
			pcibus_check(&rd, host_mkdirs(h, path, 0755), "sysfs", bus_dirs[i], "mkdir");
	for (int i = 0; i < p->nroots; i++) {
		if (!state_valid_root_id(p->roots[i])) {
			sim_error(errs, "topology", "pcibus: root \"%.16s\": refusing an invalid name",
				  p->roots[i]);
			pcibus_first_error(&rd.first, -EINVAL);
			continue;
		}
		if (pcibus_check(&rd, pcibus_path(path, sizeof(path), "%s/sys/devices/%s",
						  p->mock_root, p->roots[i]), p->roots[i], ".", "path") == 0)
			pcibus_check(&rd, host_mkdirs(h, path, 0755), p->roots[i], ".", "mkdir");
	}
	for (int i = 0; i < p->nfns; i++)
		if (pcibus_valid_names(&p->fns[i]) && first_of_driver(p, i))
			render_driver(&rd, p->fns[i].driver);
	for (int i = 0; i < p->nfns; i++)
		render_fn(&rd, &p->fns[i]);
	return rd.first;
}
