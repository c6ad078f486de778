/* Device nodes under R/driver/dev, as nvidia-modprobe makes them on a real
 * node (NVML.md §7.1): one per GPU minor plus the control, modeset, UVM
 * and capability nodes.  Only what the current state calls for is made;
 * the manifest removes nodes of GPUs that went away. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/gpudriver/gpudriver.h"

enum major_kind { MAJ_NVIDIA, MAJ_UVM, MAJ_CAPS };

static const struct {
	const char *name;
	enum major_kind major;
	unsigned minor;
} fixed_nodes[] = {
	{ "nvidiactl", MAJ_NVIDIA, GD_CTL_MINOR },
	{ "nvidia-modeset", MAJ_NVIDIA, GD_MODESET_MINOR },
	{ "nvidia-uvm", MAJ_UVM, 0 },
	{ "nvidia-uvm-tools", MAJ_UVM, 1 },
};

static unsigned major_of(enum major_kind k, const struct gd_conf *c)
{
	const unsigned majors[] = {
		[MAJ_NVIDIA] = GD_NVIDIA_MAJOR,
		[MAJ_UVM] = c->uvm_major,
		[MAJ_CAPS] = c->caps_major,
	};
	return majors[k];
}

static int node(struct sim_ctx *ctx, const struct state *s, const char *rel,
		mode_t mode, unsigned major, unsigned minor, struct sim_errors *errs)
{
	char path[512];
	int r;

	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_DEV "/%s", rel)) < 0) {
		sim_error(errs, "devnodes", "%s%s/%s: path too long", s->mock_root, GD_DEV, rel);
		return r;
	}
	if ((r = host_mknod_chr(&ctx->host, path, mode, major, minor)) < 0)
		sim_error(errs, path, "mknod c %u:%u mode %04o: %s", major, minor,
			  (unsigned)mode, strerror(-r));
	return r;
}

int gd_stage_devnodes(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		      struct sim_errors *errs)
{
	char rel[64], dir[512];
	int first = 0, r;

	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];
		if (d->minor < 0 || d->minor >= GD_MODESET_MINOR) {
			sim_error(errs, "devnodes", "GPU %d (%s): minor %d outside 0..%d "
				  "(254 and 255 are nvidia-modeset and nvidiactl)",
				  d->index, d->bus_id, d->minor, GD_MODESET_MINOR - 1);
			gd_first(&first, -EINVAL);
			continue;
		}
		snprintf(rel, sizeof(rel), "nvidia%d", d->minor);
		gd_first(&first, node(ctx, s, rel, GD_DEV_MODE, GD_NVIDIA_MAJOR,
				      (unsigned)d->minor, errs));
	}
	for (size_t i = 0; i < sizeof(fixed_nodes) / sizeof(fixed_nodes[0]); i++)
		gd_first(&first, node(ctx, s, fixed_nodes[i].name, GD_DEV_MODE,
				      major_of(fixed_nodes[i].major, c), fixed_nodes[i].minor, errs));
	if ((r = host_mock_path(s->mock_root, dir, sizeof(dir), GD_DEV "/nvidia-caps")) < 0 ||
	    (r = host_mkdirs(&ctx->host, dir, 0755)) < 0) {
		sim_error(errs, "devnodes", "%s%s/nvidia-caps: mkdir: %s", s->mock_root, GD_DEV,
			  strerror(-r));
		return gd_first(&first, r), first;
	}
	for (size_t i = 0; i < gd_ncaps; i++) {
		snprintf(rel, sizeof(rel), "nvidia-caps/%s", gd_caps[i].node);
		gd_first(&first, node(ctx, s, rel, c->cap_mode[i], major_of(MAJ_CAPS, c),
				      gd_caps[i].minor, errs));
	}
	return first;
}
