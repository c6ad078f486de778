/* Per-GPU /proc/driver/nvidia/gpus/<bdf>/{information,registry,power}, in
 * the module's exact layout (labels, then TABs, as nv-procfs prints them).
 * The IRQ is the PCI plan's for the same function (state.pci), so the PCI
 * view pcibus renders and the driver's agree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/gpudriver/gpudriver.h"

/* DMA addressing by architecture: Hopper and later address 52 bits. */
static const struct {
	const char *arch;
	int bits;
} dma_sizes[] = {
	{ "hopper", 52 },
	{ "blackwell", 52 },
};
#define GD_DEFAULT_DMA_BITS 47

static int dma_bits(const char *arch)
{
	for (size_t i = 0; i < sizeof(dma_sizes) / sizeof(dma_sizes[0]); i++)
		if (strcmp(arch, dma_sizes[i].arch) == 0)
			return dma_sizes[i].bits;
	return GD_DEFAULT_DMA_BITS;
}

/* The IRQ the state's PCI plan gives the GPU (pcibus shows the same);
 * 0 when the plan has no such function. */
static int plan_irq(const struct state *s, const char *bdf)
{
	const struct state_pci_fn *f = state_pci_find(&s->pci, bdf);

	return f ? f->irq : 0;
}

static int write_gpu_file(struct sim_ctx *ctx, const struct state *s, const char *bdf,
			  const char *name, const char *text, struct sim_errors *errs)
{
	char path[512];
	int r;

	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_PROC_NVIDIA "/gpus/%s/%s", bdf, name)) < 0) {
		sim_error(errs, "gpus", "%s: %s: path too long", bdf, name);
		return r;
	}
	if ((r = host_write(&ctx->host, path, text, strlen(text), 0444)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	return r;
}

static void render_information(const struct state_device *d, int irq, struct gd_profile *p,
			       char *buf, size_t len)
{
	const char *vbios = gd_profile_str(p, d->index, "vbios_version");
	const char *gsp_mode = gd_profile_str(p, d->index, "gsp_firmware.mode");
	const char *gsp = gd_profile_str(p, d->index, "gsp_firmware.version");
	int bits = dma_bits(d->architecture);
	int n;

	n = snprintf(buf, len,
		     "Model: \t\t %s\n"
		     "IRQ:   \t\t %d\n"
		     "GPU UUID: \t %s\n"
		     "Video BIOS: \t %s\n"
		     "Bus Type: \t PCIe\n"
		     "DMA Size: \t %d bits\n"
		     "DMA Mask: \t 0x%llx\n"
		     "Bus Location: \t %s\n"
		     "Device Minor: \t %d\n",
		     d->name, irq, d->uuid, vbios ? vbios : "??.??.??.??.??", bits,
		     (1ULL << bits) - 1, d->bus_id, d->minor);
	if (n > 0 && (size_t)n < len && gsp && strcmp(gsp, "N/A") != 0 &&
	    gsp_mode && strcmp(gsp_mode, "enabled") == 0)
		n += snprintf(buf + n, len - (size_t)n, "GPU Firmware: \t %s\n", gsp);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "GPU Excluded:\t No\n");
}

static void render_power(const struct state_device *d, struct gd_profile *p, char *buf, size_t len)
{
	double def = 0, max = 0;
	char def_s[32] = "N/A", max_s[32] = "N/A";

	if (gd_profile_num(p, d->index, "power.default_limit_mw", &def))
		snprintf(def_s, sizeof(def_s), "%.0f", def);
	if (gd_profile_num(p, d->index, "power.max_limit_mw", &max))
		snprintf(max_s, sizeof(max_s), "%.0f", max);
	snprintf(buf, len,
		 "Runtime D3 status:          Not supported\n"
		 "Video Memory:               Active\n"
		 "\n"
		 "GPU Hardware Support:\n"
		 " Video Memory Self Refresh: Not Supported\n"
		 " Video Memory Off:          Not Supported\n"
		 "\n"
		 "Power Limits:\n"
		 " Default:                   %s milliwatts\n"
		 " GPU Boost:                 %s milliwatts\n", def_s, max_s);
}

int gd_stage_gpus(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		  struct sim_errors *errs)
{
	int first = 0;
	struct gd_profile *p = gd_profile_open(s);
	char text[2048];

	if (!p) {
		sim_error(errs, "gpus", "out of memory reading the profile");
		return -ENOMEM;
	}
	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];
		if (!state_valid_bdf(d->bus_id)) {
			sim_error(errs, "gpus", "GPU %d: bus id '%s' is not dddd:bb:dd.f",
				  d->index, d->bus_id);
			gd_first(&first, -EINVAL);
			continue;
		}
		render_information(d, plan_irq(s, d->bus_id), p, text, sizeof(text));
		gd_first(&first, write_gpu_file(ctx, s, d->bus_id, "information", text, errs));
		gd_first(&first, write_gpu_file(ctx, s, d->bus_id, "registry", "Binary: \"\"\n", errs));
		render_power(d, p, text, sizeof(text));
		gd_first(&first, write_gpu_file(ctx, s, d->bus_id, "power", text, errs));
	}
	gd_profile_close(p);
	return first;
}
