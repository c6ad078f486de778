/* The kernel-shaped IB sysfs tree under R/ib/sys (IB.md §2.1, §3.1):
 *
 *   devices/<root>/<port>/<bdf>/                 the HCA's PCI function
 *     infiniband/mlx5_N/{node_type,node_guid,...,ports/1/...}
 *     infiniband_mad/{umadN,issmN}/{ibdev,port,dev,uevent}
 *     infiniband_verbs/uverbsN/{ibdev,abi_version,dev,uevent}
 *   class/infiniband/mlx5_N           -> ../../devices/.../infiniband/mlx5_N
 *   class/infiniband_mad/{umadN,issmN} (links), abi_version
 *   class/infiniband_verbs/uverbsN     (link), abi_version
 *   bus/pci/devices/<bdf>, bus/pci/drivers/mlx5_core/<bdf> (links)
 *
 * Every link is relative, so the tree works wherever it is mounted: as
 * /sys through an overlay (IB.md §3.3) or under MOCK_IB_ROOT for the
 * redirect shim. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/ib/ib.h"

/* Firmware pages the HCA holds (mlx5 fw_pages): a CX-7's order of size. */
#define IB_FW_PAGES 451520

/* Write-only control files of a bound PCI driver directory. */
static const char *const driver_files[] = { "bind", "unbind", "new_id", "remove_id", "uevent" };

static void guid_text(uint64_t g, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

/* A class device under the PCI function (umadN, issmN, uverbsN): its
 * attributes, its device/subsystem links and the class link to it. */
struct chardev_attrs {
	const char *cls;		/* "infiniband_mad" */
	char name[32];			/* "umad0" */
	struct ib_chrdev dev;
	const char *devmode;		/* uevent DEVMODE, NULL = none */
	const char *abi;		/* abi_version file, NULL = none */
	bool port;			/* has a port file */
};

struct hca_ctx {
	struct ib_out *o;
	const struct state *s;
	const struct state_hca *h;
	const struct pcibus_fn *f;
	char sys[512];			/* <R>/ib/sys */
	char devdir[1024];		/* <sys>/<devpath> */
};

static void render_chardev(struct hca_ctx *c, const struct chardev_attrs *a)
{
	char dir[1400], path[1500], target[1100];
	int depth = c->f->depth + 2;	/* <devpath>/<class>/<name> under sys */

	snprintf(dir, sizeof(dir), "%s/%s/%s", c->devdir, a->cls, a->name);
	if (ib_mkdir(c->o, dir) < 0)
		return;
	snprintf(path, sizeof(path), "%s/ibdev", dir);
	ib_put(c->o, path, 0444, "%s\n", c->h->name);
	if (a->port) {
		snprintf(path, sizeof(path), "%s/port", dir);
		ib_put(c->o, path, 0444, "1\n");
	}
	if (a->abi) {
		snprintf(path, sizeof(path), "%s/abi_version", dir);
		ib_put(c->o, path, 0444, "%s\n", a->abi);
	}
	snprintf(path, sizeof(path), "%s/dev", dir);
	ib_put(c->o, path, 0444, "%u:%u\n", a->dev.major, a->dev.minor);
	snprintf(path, sizeof(path), "%s/uevent", dir);
	ib_put(c->o, path, 0644, "MAJOR=%u\nMINOR=%u\nDEVNAME=infiniband/%s\n%s%s%s",
	       a->dev.major, a->dev.minor, a->name, a->devmode ? "DEVMODE=" : "",
	       a->devmode ? a->devmode : "", a->devmode ? "\n" : "");
	snprintf(path, sizeof(path), "%s/device", dir);
	snprintf(target, sizeof(target), "../../../%s", c->f->bdf);
	ib_link(c->o, target, path);
	snprintf(path, sizeof(path), "%s/subsystem", dir);
	snprintf(target, sizeof(target), "%sclass/%s", ib_ups(depth), a->cls);
	ib_link(c->o, target, path);
	snprintf(path, sizeof(path), "%s/class/%s/%s", c->sys, a->cls, a->name);
	snprintf(target, sizeof(target), "../../%s/%s/%s", c->f->devpath, a->cls, a->name);
	ib_link(c->o, target, path);
}

static void render_ibdev(struct hca_ctx *c)
{
	const struct state_ib *ib = &c->s->ib;
	const struct state_hca *h = c->h;
	char dir[1400], path[1500], target[1100], guid[32];
	int depth = c->f->depth + 2;	/* <devpath>/infiniband/mlx5_N under sys */
	const struct {
		const char *name;
		mode_t mode;
		const char *value;
	} attrs[] = {
		{ "node_type", 0444, "1: CA" },
		{ "fw_ver", 0444, ib->fw_version },
		{ "hw_rev", 0444, ib->hw_rev },
		{ "hca_type", 0444, ib->hca_type },
		{ "board_id", 0444, ib->board_id },
		{ "node_desc", 0644, h->node_desc },
		{ "reg_pages", 0444, "0" },
	};

	snprintf(dir, sizeof(dir), "%s/infiniband/%s", c->devdir, h->name);
	if (ib_mkdir(c->o, dir) < 0)
		return;
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, attrs[i].name);
		ib_put(c->o, path, attrs[i].mode, "%s\n", attrs[i].value);
	}
	guid_text(h->node_guid, guid, sizeof(guid));
	snprintf(path, sizeof(path), "%s/node_guid", dir);
	ib_put(c->o, path, 0444, "%s\n", guid);
	snprintf(path, sizeof(path), "%s/sys_image_guid", dir);
	ib_put(c->o, path, 0444, "%s\n", guid);
	snprintf(path, sizeof(path), "%s/fw_pages", dir);
	ib_put(c->o, path, 0444, "%d\n", IB_FW_PAGES);
	snprintf(path, sizeof(path), "%s/uevent", dir);
	ib_put(c->o, path, 0644, "NAME=%s\n", h->name);
	snprintf(path, sizeof(path), "%s/device", dir);
	snprintf(target, sizeof(target), "../../../%s", c->f->bdf);
	ib_link(c->o, target, path);
	snprintf(path, sizeof(path), "%s/subsystem", dir);
	snprintf(target, sizeof(target), "%sclass/infiniband", ib_ups(depth));
	ib_link(c->o, target, path);
	ib_render_port(c->o, ib, h, dir);
	snprintf(path, sizeof(path), "%s/class/infiniband/%s", c->sys, h->name);
	snprintf(target, sizeof(target), "../../%s/infiniband/%s", c->f->devpath, h->name);
	ib_link(c->o, target, path);
}

static void render_hca(struct hca_ctx *c)
{
	char path[1500], target[1100];
	int i = c->h->index;
	struct chardev_attrs umad = { "infiniband_mad", "", ib_umad_dev(i), NULL, NULL, true };
	struct chardev_attrs issm = { "infiniband_mad", "", ib_issm_dev(i), NULL, NULL, true };
	struct chardev_attrs uverbs = { "infiniband_verbs", "", ib_uverbs_dev(i), "0666",
					IB_MLX5_UVERBS_ABI, false };

	snprintf(umad.name, sizeof(umad.name), "umad%d", i);
	snprintf(issm.name, sizeof(issm.name), "issm%d", i);
	snprintf(uverbs.name, sizeof(uverbs.name), "uverbs%d", i);
	render_ibdev(c);
	render_chardev(c, &umad);
	render_chardev(c, &issm);
	render_chardev(c, &uverbs);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", c->sys, c->f->bdf);
	snprintf(target, sizeof(target), "../../../%s", c->f->devpath);
	ib_link(c->o, target, path);
	snprintf(path, sizeof(path), "%s/bus/pci/drivers/mlx5_core/%s", c->sys, c->f->bdf);
	snprintf(target, sizeof(target), "../../../../%s", c->f->devpath);
	ib_link(c->o, target, path);
}

static void render_classes(struct ib_out *o, const char *sys)
{
	static const struct {
		const char *rel, *value;
	} files[] = {
		{ "class/infiniband_mad/abi_version", IB_MAD_ABI },
		{ "class/infiniband_verbs/abi_version", IB_VERBS_ABI },
	};
	char path[1024];

	snprintf(path, sizeof(path), "%s/class/infiniband", sys);
	ib_mkdir(o, path);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", sys, files[i].rel);
		ib_put(o, path, 0444, "%s\n", files[i].value);
	}
	for (size_t i = 0; i < sizeof(driver_files) / sizeof(driver_files[0]); i++) {
		snprintf(path, sizeof(path), "%s/bus/pci/drivers/mlx5_core/%s", sys, driver_files[i]);
		ib_put(o, path, 0200, "%s", "");
	}
}

/* A name that becomes a path component must be one. */
static bool valid_hca(const struct state_hca *h)
{
	return state_valid_path_component(h->name) && strlen(h->name) < 16 &&
	       state_valid_bdf(h->bus_id);
}

int ib_stage_sysfs(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct ib_out o = { &ctx->host, errs, 0 };
	struct pcibus_plan *plan;
	struct sim_errors *scratch;
	char sys[512];
	int r;

	if (!s->ib.enabled)
		return 0;
	if ((r = host_mock_path(s->mock_root, sys, sizeof(sys), IB_SYS)) < 0)
		return ib_fail(&o, "sysfs", r, "%s%s", s->mock_root, IB_SYS);
	plan = calloc(1, sizeof(*plan));
	scratch = calloc(1, sizeof(*scratch));
	if (!plan || !scratch) {
		free(plan);
		free(scratch);
		return ib_fail(&o, "sysfs", -ENOMEM, "PCI plan");
	}
	/* The state's PCI plan, the one pcibus renders R/sys from: same
	 * parent chain.  Its errors are pcibus's to report; a missing HCA
	 * is ours. */
	pcibus_plan_load(s, plan, scratch);
	render_classes(&o, sys);
	for (int i = 0; i < s->ib.num_hcas && i < STATE_MAX_HCAS; i++) {
		struct hca_ctx c = { .o = &o, .s = s, .h = &s->ib.hcas[i] };

		if (!valid_hca(c.h)) {
			ib_fail(&o, "sysfs", -EINVAL, "HCA %d: name \"%.16s\" / bus id \"%.16s\": "
				"refusing a path from an invalid name", i, c.h->name, c.h->bus_id);
			continue;
		}
		if (!(c.f = pcibus_plan_find(plan, c.h->bus_id)) || !c.f->hca) {
			ib_fail(&o, c.h->name, -EINVAL, "%s: PCI function %s has no place in the "
				"PCI tree (not in the state's PCI plan)", c.h->name, c.h->bus_id);
			continue;
		}
		snprintf(c.sys, sizeof(c.sys), "%s", sys);
		if ((size_t)snprintf(c.devdir, sizeof(c.devdir), "%s/%s", sys, c.f->devpath) >=
		    sizeof(c.devdir)) {
			ib_fail(&o, c.h->name, -ENAMETOOLONG, "%s: %s/%s", c.h->name, sys,
				c.f->devpath);
			continue;
		}
		if ((r = sysfs_render_function(&ctx->host, plan, c.f, sys, errs)) < 0 && !o.first)
			o.first = r;
		render_hca(&c);
	}
	free(scratch);
	free(plan);
	return o.first;
}
