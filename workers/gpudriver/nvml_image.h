/* R/driver/config/nvml.image: config.yaml compiled for the mock NVML
 * (nvimage/nvimage.h), staged with it. */
#ifndef MOKKA_GPUDRIVER_NVML_IMAGE_H
#define MOKKA_GPUDRIVER_NVML_IMAGE_H

#include <stddef.h>

struct sim_ctx;
struct state;
struct sim_errors;

/* doc: config.yaml's bytes as staged.  0 or -errno (a write failure);
 * bytes yaml_lite cannot read get no image (the library then says why). */
int gd_stage_nvml_image(struct sim_ctx *ctx, const struct state *s, const char *doc,
			size_t len, struct sim_errors *errs);

#endif
