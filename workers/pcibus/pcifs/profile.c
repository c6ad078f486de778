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
#include <sys/stat.h>

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

void pcifs_profile_gpu_sriov(const char *config, struct pcifs_sriov *out)
{
	static const char *const keys[] = { "total_vfs", "vf_offset", "vf_stride",
					     "vf_device_id" };
	struct yl_node *doc = load(config);
	const struct yl_node *cap = doc ? yl_path(doc, "pcie_topology.gpu_sriov") : NULL;
	uint64_t v[4] = { 0, 4, 1, 0 };	/* NVIDIA GPUs: VFs from function 4, stride 1 */

	for (int i = 0; cap && i < 4; i++)
		if (!yl_is_null(yl_get(cap, keys[i])) && !yl_u64(yl_get(cap, keys[i]), &v[i]))
			v[0] = 0;	/* the compiler refuses it; so do we */
	*out = (struct pcifs_sriov){ v[0] <= PCIFS_GPU_MAX_VFS ? (int)v[0] : 0,
				     v[1] <= 255 ? (int)v[1] : 0, v[2] <= 255 ? (int)v[2] : 0,
				     (uint16_t)(v[3] <= 0xffff ? v[3] : 0) };
	yl_free(doc);
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

/* The GPUs' UUIDs as the compiler derives them, compiled again only when
 * the engine config changed (an unbind must not cost a profile compile). */
static struct {
	struct stat sig;
	int n;
	struct { char bus_id[16], uuid[96]; } gpu[STATE_MAX_DEVICES];
} uuids;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void load_uuids(const char *config)
{
	struct state *st;
	char *buf = NULL, why[256];
	struct stat sig;
	size_t len;

	if (stat(config, &sig) < 0 || (uuids.sig.st_ino && same_file(&sig, &uuids.sig)))
		return;
	uuids.n = 0;
	uuids.sig = sig;
	if (!(st = calloc(1, sizeof(*st))))
		return;
	state_init(st);
	if (fileio_read(config, 16u << 20, &buf, &len, why, sizeof(why)) == 0 &&
	    compile_profile(config, buf, len, NULL, NULL, 0, NULL, st, why, sizeof(why)) == 0)
		for (int i = 0; i < st->num_devices && uuids.n < STATE_MAX_DEVICES; i++, uuids.n++) {
			snprintf(uuids.gpu[uuids.n].bus_id, sizeof(uuids.gpu[0].bus_id), "%s",
				 st->devices[i].bus_id);
			snprintf(uuids.gpu[uuids.n].uuid, sizeof(uuids.gpu[0].uuid), "%s",
				 st->devices[i].uuid);
		}
	free(buf);
	state_free(st);
	free(st);
}

/* The node's GPUs (the compiled state's, as NFD counts them) that nvidia
 * holds in m; -1 when the profile does not compile here. */
int pcifs_profile_held_gpus(const char *config, const struct pcifs_model *m)
{
	int n = 0;

	load_uuids(config);
	if (!uuids.n)
		return -1;
	for (int i = 0; i < uuids.n; i++)
		for (int j = 0; j < m->nfns; j++) {
			const struct pcifs_fn *f = &m->fns[j];

			if (f->pf < 0 && same_bdf(uuids.gpu[i].bus_id, f->bdf)) {
				n += f->present && f->driver >= 0 &&
				     !strcmp(m->drv[f->driver].name, "nvidia");
				break;
			}
		}
	return n;
}

/* MIG instances in the device state store (R/driver/config/state, beside
 * the engine config), keyed by the GPU's UUID. */
static bool has_mig_instances(const char *config, const char *bdf)
{
	const char *slash = strrchr(config, '/');
	struct ds_store store = { .dirfd = -1, .lockfd = -1 };
	char dir[PATH_MAX];
	struct ds_gpu g;
	bool busy = false;

	if (!slash)
		return false;
	load_uuids(config);
	snprintf(dir, sizeof(dir), "%.*s/state", (int)(slash - config), config);
	for (int i = 0; i < uuids.n && !busy; i++)
		if (same_bdf(uuids.gpu[i].bus_id, bdf) && ds_open(&store, dir, false) == 0) {
			busy = ds_load(&store, uuids.gpu[i].uuid, &g) == 0 && g.ngi > 0;
			ds_close(&store);
		}
	return busy;
}

/* The engine config, parsed again only when it changed. */
static struct yl_node *config_doc(const char *config)
{
	static struct yl_node *doc;
	static struct stat sig;
	struct stat now;

	if (stat(config, &now) == 0 && doc && same_file(&now, &sig))
		return doc;
	yl_free(doc);
	doc = load(config);
	sig = now;
	return doc;
}

bool pcifs_profile_busy(const char *config, const char *overrides, const char *bdf)
{
	struct yl_node *doc = config_doc(config), *ovr = NULL;
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
	return busy || has_mig_instances(config, bdf);
}
