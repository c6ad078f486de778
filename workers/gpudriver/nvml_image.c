/* The compiled profile beside config.yaml (nvimage/nvimage.h): the same
 * bytes the library would parse, parsed and boot-merged once here so each
 * process that loads the mock NVML only validates and copies trees.  It
 * names config.yaml's bytes, so a config.yaml edited by hand (or staged
 * before the image) is simply parsed by the library.  Written atomically
 * (host_write: temp file and rename) and recorded like config.yaml. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvimage/nvimage.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/gpudriver/nvml_image.h"

int gd_stage_nvml_image(struct sim_ctx *ctx, const struct state *s, const char *doc,
			size_t len, struct sim_errors *errs)
{
	char path[512], why[200] = "", *img = NULL;
	size_t ilen = 0;
	int r = nvi_compile(doc, len, &img, &ilen, why, sizeof(why));

	if (r == -EINVAL)
		return 0;	/* the library parses config.yaml and reports it */
	if (r < 0) {
		sim_error(errs, "engine-config", NVI_NAME ": %s", why);
		return r;
	}
	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_CONFIG "/" NVI_NAME)) < 0)
		sim_error(errs, "engine-config", "%s%s/%s: path too long", s->mock_root,
			  GD_CONFIG, NVI_NAME);
	else if ((r = host_write(&ctx->host, path, img, ilen, 0644)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	free(img);
	return r;
}
