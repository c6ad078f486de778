/* What mokka-pcifs reads from the engine config (the profile, beside the
 * binding file) and the runtime overrides: whether the node has an IOMMU
 * (pcie_topology.iommu, default true) and whether a GPU is in use:
 * processes open (its `processes`, as the mock NVML reports them) or MIG
 * instances (the device state store).
 *
 * The real nvidia driver does not fail an unbind while the GPU is in use:
 * nv_pci_remove() logs "Attempting to remove device ... with non-zero
 * usage count" and waits until the last client closes, so the write to
 * unbind hangs.  The mock's processes are data that never close on their
 * own, so a hung write would wedge the caller for good; pcifs answers
 * EBUSY at once instead (README), which a passthrough job handles as a
 * failed switch and rolls back. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devstate/devstate.h"
#include "fileio/fileio.h"
#include "profile/compile.h"
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

/* MIG instances in the device state store (R/driver/config/state, beside
 * the engine config), keyed by the GPU's UUID as the compiler derives it. */
static bool has_mig_instances(const char *config, const char *bdf)
{
	struct state *st = calloc(1, sizeof(*st));
	char *buf = NULL, why[256], dir[PATH_MAX];
	const char *slash = strrchr(config, '/');
	struct ds_store store = { .dirfd = -1, .lockfd = -1 };
	struct ds_gpu g;
	size_t len;
	bool busy = false;

	if (!st || !slash || fileio_read(config, 16u << 20, &buf, &len, why, sizeof(why)) < 0)
		goto out;
	state_init(st);
	if (compile_profile(config, buf, len, NULL, NULL, 0, NULL, st, why, sizeof(why)) < 0)
		goto out;
	snprintf(dir, sizeof(dir), "%.*s/state", (int)(slash - config), config);
	for (int i = 0; i < st->num_devices && !busy; i++)
		if (same_bdf(st->devices[i].bus_id, bdf) && ds_open(&store, dir, false) == 0) {
			busy = ds_load(&store, st->devices[i].uuid, &g) == 0 && g.ngi > 0;
			ds_close(&store);
		}
out:
	free(buf);
	if (st)
		state_free(st);
	free(st);
	return busy;
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
	return busy || has_mig_instances(config, bdf);
}
