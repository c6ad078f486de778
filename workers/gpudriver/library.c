/* The mock NVML library in the driver root, laid out as a driver install
 * does: libnvidia-ml.so.<driver version> with the .so.1 (dlopen name) and
 * .so (what Slurm's gpu/nvml dlopens) links (NVML.md §7). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workers/gpudriver/gpudriver.h"

/* What our build or install calls the library, in preference order. */
static const char *const lib_names[] = { "libnvidia-ml.so", "libnvidia-ml.so.1" };

int gd_stage_library(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		     struct sim_errors *errs)
{
	char src[4200] = "", file[128], path[512], link[512];
	int r;

	for (size_t i = 0; i < sizeof(lib_names) / sizeof(lib_names[0]) && !src[0]; i++) {
		snprintf(src, sizeof(src), "%s/%s", ctx->libdir ? ctx->libdir : ".", lib_names[i]);
		if (access(src, R_OK) < 0)
			src[0] = '\0';
	}
	if (!src[0]) {
		sim_error(errs, "library", "%s/libnvidia-ml.so: not found (is the mock NVML built? "
			  "set MOKKA_PKGLIBDIR to where it is)", ctx->libdir ? ctx->libdir : ".");
		return -ENOENT;
	}
	if (!s->driver_version[0] || strchr(s->driver_version, '/')) {
		sim_error(errs, "library", "driver version '%s' cannot name a library file",
			  s->driver_version);
		return -EINVAL;
	}
	snprintf(file, sizeof(file), "libnvidia-ml.so.%s", s->driver_version);
	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_LIB64 "/%s", file)) < 0)
		return r;
	if ((r = host_copy_in(&ctx->host, src, path, 0755)) < 0) {
		sim_error(errs, path, "copy from %s: %s", src, strerror(-r));
		return r;
	}
	if ((r = host_mock_path(s->mock_root, link, sizeof(link), GD_LIB64 "/libnvidia-ml.so.1")) < 0 ||
	    (r = host_symlink(&ctx->host, file, link)) < 0) {
		sim_error(errs, link, "symlink -> %s: %s", file, strerror(-r));
		return r;
	}
	if ((r = host_mock_path(s->mock_root, link, sizeof(link), GD_LIB64 "/libnvidia-ml.so")) < 0 ||
	    (r = host_symlink(&ctx->host, "libnvidia-ml.so.1", link)) < 0) {
		sim_error(errs, link, "symlink -> libnvidia-ml.so.1: %s", strerror(-r));
		return r;
	}
	return 0;
}
