/* Kernel-module presence a loaded driver leaves (NVML.md §7.1, CONSUMERS.md
 * §4): R/driver/proc/modules in the kernel's format, newest first, and
 * R/sys/module/<module>/ with what lsmod, the GPU Operator's driver gate
 * and DCGM's startup checks read (refcnt, holders/, initstate, version). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/gpudriver/gpudriver.h"

#define MAX_HOLDERS 2
#define MAX_PARAMS 2
#define TAINT "POE"		/* proprietary, out-of-tree, unsigned */

/* In load order reversed, as /proc/modules lists them. */
static const struct module {
	const char *name;
	unsigned long size;		/* coresize, bytes */
	const char *holders[MAX_HOLDERS + 1];
	struct {
		const char *name, *value;
	} params[MAX_PARAMS + 1];
} modules[] = {
	{ "nvidia_uvm", 1482752, { NULL }, { { NULL, NULL } } },
	{ "nvidia_drm", 77824, { NULL }, { { "modeset", "N" }, { "fbdev", "N" }, { NULL, NULL } } },
	{ "nvidia_modeset", 1290240, { "nvidia_drm", NULL }, { { NULL, NULL } } },
	{ "nvidia", 56807424, { "nvidia_uvm", "nvidia_modeset", NULL }, { { NULL, NULL } } },
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

static int refcount(const struct module *m)
{
	int n = 0;

	while (m->holders[n])
		n++;
	return n;
}

static int put(struct sim_ctx *ctx, const struct state *s, const char *mod, const char *file,
	       const char *text, struct sim_errors *errs)
{
	char path[512];
	int r;

	if ((r = host_mock_path(s->mock_root, path, sizeof(path), "/sys/module/%s/%s", mod, file)) < 0) {
		sim_error(errs, "modules", "/sys/module/%s/%s: path too long", mod, file);
		return r;
	}
	if ((r = host_write(&ctx->host, path, text, strlen(text), 0444)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	return r;
}

static int sys_module(struct sim_ctx *ctx, const struct state *s, const struct module *m,
		      struct sim_errors *errs)
{
	char text[128], rel[256], path[512], target[128];
	int first = 0, r;

	snprintf(text, sizeof(text), "%s\n", s->driver_version);
	gd_first(&first, put(ctx, s, m->name, "version", text, errs));
	gd_first(&first, put(ctx, s, m->name, "initstate", "live\n", errs));
	snprintf(text, sizeof(text), "%d\n", refcount(m));
	gd_first(&first, put(ctx, s, m->name, "refcnt", text, errs));
	snprintf(text, sizeof(text), "%lu\n", m->size);
	gd_first(&first, put(ctx, s, m->name, "coresize", text, errs));
	gd_first(&first, put(ctx, s, m->name, "initsize", "0\n", errs));
	gd_first(&first, put(ctx, s, m->name, "taint", TAINT "\n", errs));

	/* holders/ exists (empty) for every module: lsmod reads it. */
	if ((r = host_mock_path(s->mock_root, path, sizeof(path), "/sys/module/%s/holders", m->name)) == 0)
		r = host_mkdirs(&ctx->host, path, 0755);
	if (r < 0)
		sim_error(errs, "modules", "/sys/module/%s/holders: mkdir: %s", m->name, strerror(-r));
	gd_first(&first, r);
	for (int i = 0; m->holders[i]; i++) {
		snprintf(target, sizeof(target), "../../%s", m->holders[i]);
		if ((r = host_mock_path(s->mock_root, path, sizeof(path), "/sys/module/%s/holders/%s", m->name,
				 m->holders[i])) == 0)
			r = host_symlink(&ctx->host, target, path);
		if (r < 0)
			sim_error(errs, "modules", "/sys/module/%s/holders/%s: symlink: %s", m->name,
				  m->holders[i], strerror(-r));
		gd_first(&first, r);
	}
	for (int i = 0; m->params[i].name; i++) {
		snprintf(rel, sizeof(rel), "parameters/%s", m->params[i].name);
		snprintf(text, sizeof(text), "%s\n", m->params[i].value);
		gd_first(&first, put(ctx, s, m->name, rel, text, errs));
	}
	return first;
}

/* "name size refcnt holder,holder, Live 0x0000000000000000 (POE)"; a
 * module nothing holds shows "-" for the list. */
static int render_proc_modules(char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < NMODULES; i++) {
		const struct module *m = &modules[i];
		fprintf(f, "%s %lu %d ", m->name, m->size, refcount(m));
		for (int h = 0; m->holders[h]; h++)
			fprintf(f, "%s,", m->holders[h]);
		fprintf(f, "%s Live 0x0000000000000000 (%s)\n", m->holders[0] ? "" : "-", TAINT);
	}
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

int gd_stage_modules(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		     struct sim_errors *errs)
{
	char path[512], *text = NULL;
	size_t len = 0;
	int first = 0, r;

	for (size_t i = 0; i < NMODULES; i++)
		gd_first(&first, sys_module(ctx, s, &modules[i], errs));
	if ((r = render_proc_modules(&text, &len)) < 0)
		sim_error(errs, "modules", "proc/modules: out of memory");
	else if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_DRIVER "/proc/modules")) == 0 &&
		 (r = host_write(&ctx->host, path, text, len, 0444)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	free(text);
	gd_first(&first, r);
	return first;
}
