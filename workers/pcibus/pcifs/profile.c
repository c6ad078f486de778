/* What mokka-pcifs reads from the engine config (the profile, beside the
 * binding file) and the runtime overrides: whether the node has an IOMMU
 * (pcie_topology.iommu, default true) and whether a GPU has processes
 * open (its `processes`, as the mock NVML reports them).
 *
 * The real nvidia driver does not fail an unbind while the GPU is in use:
 * nv_pci_remove() logs "Attempting to remove device ... with non-zero
 * usage count" and waits until the last client closes, so the write to
 * unbind hangs.  The mock's processes are data that never close on their
 * own, so a hung write would wedge the caller for good; pcifs answers
 * EBUSY at once instead (README), which a passthrough job handles as a
 * failed switch and rolls back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fileio/fileio.h"
#include "overrides/overrides.h"
#include "workers/pcibus/pcifs/pcifs.h"
#include "yaml_lite/yaml_lite.h"

static struct yl_node *load(const char *path)
{
	struct yl_error err;
	struct yl_node *doc;
	char *buf, why[300];
	size_t len;

	if (fileio_read(path, 16u << 20, &buf, &len, why, sizeof(why)) < 0)
		return NULL;
	doc = yl_parse(buf, len, &err);
	free(buf);
	return doc;
}

int pcifs_profile_iommu(const char *config)
{
	struct yl_node *doc = load(config);
	bool on = true;

	if (doc)
		yl_bool(yl_path(doc, "pcie_topology.iommu"), &on);
	yl_free(doc);
	return on;
}

/* "0000:1A:00.0" or NVML's "00000000:1A:00.0" against "0000:1a:00.0". */
static bool same_bdf(const char *a, const char *bdf)
{
	size_t la = a ? strlen(a) : 0, lb = strlen(bdf);

	return la >= lb && !strcasecmp(a + la - lb, bdf) && strspn(a, "0") >= la - lb;
}

static bool has_processes(const struct yl_node *scope)
{
	const struct yl_node *p = yl_get(scope, "processes");

	return p && p->kind == YL_SEQ && p->n > 0;
}

bool pcifs_profile_busy(const char *config, const char *overrides, const char *bdf)
{
	struct yl_node *doc = load(config), *ovr = NULL;
	const struct yl_node *list = yl_get(doc, "devices"), *dev = NULL;
	bool busy = false;
	char idx[32] = "";

	for (size_t i = 0; list && list->kind == YL_SEQ && i < list->n && !dev; i++)
		if (same_bdf(yl_text(yl_path(list->kids[i], "pci.bus_id")), bdf)) {
			dev = list->kids[i];
			snprintf(idx, sizeof(idx), "%s", yl_text(yl_get(dev, "index")) ?: "");
		}
	if (dev) {
		busy = has_processes(dev) ||
		       (!yl_get(dev, "processes") && has_processes(yl_get(doc, "device_defaults")));
		if ((ovr = load(overrides))) {
			const struct yl_node *one = idx[0] ? yl_get(yl_get(ovr, "devices"), idx) : NULL;

			if (one && yl_get(one, "processes"))
				busy = has_processes(one);
			else if (yl_get(yl_get(ovr, "all"), "processes"))
				busy = has_processes(yl_get(ovr, "all"));
		}
	}
	yl_free(ovr);
	yl_free(doc);
	return busy;
}
