/* The driver-wide files of /proc/driver/nvidia, in the proprietary 535
 * module's formats (NVML.md §7.1): version, params (names without the
 * NVreg_ prefix, numbers first, then the quoted strings), registry, and
 * the MIG capability files matching the nvidia-caps nodes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/gpudriver/gpudriver.h"

/* Fixed so the file never churns; a real module carries its build date. */
#define GD_BUILD_DATE "Thu Feb 20 23:41:34 UTC 2026"
#define GD_COMPILER "gcc version 12.2.0 (Debian 12.2.0-14)"

/* Module parameters with the driver's defaults, in the order it prints
 * them.  DeviceFileMode follows the nodes devnodes.c makes. */
static const struct {
	const char *name;
	unsigned long value;
} numeric_params[] = {
	{ "ResmanDebugLevel", 4294967295UL },
	{ "RmLogonRC", 1 },
	{ "ModifyDeviceFiles", 1 },
	{ "DeviceFileUID", 0 },
	{ "DeviceFileGID", 0 },
	{ "DeviceFileMode", GD_DEV_MODE },
	{ "InitializeSystemMemoryAllocations", 1 },
	{ "UsePageAttributeTable", 4294967295UL },
	{ "EnableMSI", 1 },
	{ "EnablePCIeGen3", 0 },
	{ "MemoryPoolSize", 0 },
	{ "KMallocHeapMaxSize", 0 },
	{ "VMallocHeapMaxSize", 0 },
	{ "IgnoreMMIOCheck", 0 },
	{ "TCEBypassMode", 0 },
	{ "EnableStreamMemOPs", 0 },
	{ "EnableUserNUMAManagement", 1 },
	{ "NvLinkDisable", 0 },
	{ "RmProfilingAdminOnly", 1 },
	{ "PreserveVideoMemoryAllocations", 0 },
	{ "EnableS0ixPowerManagement", 0 },
	{ "S0ixPowerManagementVideoMemoryThreshold", 256 },
	{ "DynamicPowerManagement", 3 },
	{ "DynamicPowerManagementVideoMemoryThreshold", 200 },
	{ "RegisterPCIDriver", 1 },
	{ "EnablePCIERelaxedOrderingMode", 0 },
	{ "EnableResizableBar", 0 },
	{ "EnableGpuFirmware", 18 },
	{ "EnableGpuFirmwareLogs", 2 },
	{ "RmNvlinkBandwidthLinkCount", 0 },
	{ "EnableDbgBreakpoint", 0 },
	{ "OpenRmEnableUnsupportedGpus", 0 },
	{ "DmaRemapPeerMmio", 1 },
	{ "ImexChannelCount", 2048 },
	{ "CreateImexChannel0", 0 },
	{ "GrdmaPciTopoCheckOverride", 0 },
};

static const char *const string_params[] = {
	"RegistryDwords", "RegistryDwordsPerDevice", "RmMsg", "GpuBlacklist",
	"TemporaryFilePath", "ExcludedGpus",
};

static int write_file(struct sim_ctx *ctx, const struct state *s, const char *rel,
		      const char *text, struct sim_errors *errs)
{
	char path[512];
	int r;

	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_PROC_NVIDIA "/%s", rel)) < 0) {
		sim_error(errs, "procfs", "%s%s/%s: path too long", s->mock_root, GD_PROC_NVIDIA, rel);
		return r;
	}
	if ((r = host_write(&ctx->host, path, text, strlen(text), 0444)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	return r;
}

static int render_params(char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(numeric_params) / sizeof(numeric_params[0]); i++)
		fprintf(f, "%s: %lu\n", numeric_params[i].name, numeric_params[i].value);
	for (size_t i = 0; i < sizeof(string_params) / sizeof(string_params[0]); i++)
		fprintf(f, "%s: \"\"\n", string_params[i]);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	return 0;
}

int gd_stage_procfs(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
		    struct sim_errors *errs)
{
	char text[512], rel[128], *params = NULL;
	int first = 0, r;

	snprintf(text, sizeof(text),
		 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  %s\n"
		 "GCC version:  %s\n", s->driver_version, GD_BUILD_DATE, GD_COMPILER);
	gd_first(&first, write_file(ctx, s, "version", text, errs));

	if ((r = render_params(&params)) < 0)
		sim_error(errs, "procfs", "params: %s", strerror(-r));
	else
		r = write_file(ctx, s, "params", params, errs);
	free(params);
	gd_first(&first, r);

	gd_first(&first, write_file(ctx, s, "registry", "Binary: \"\"\n", errs));

	for (size_t i = 0; i < gd_ncaps; i++) {
		snprintf(rel, sizeof(rel), "capabilities/%s", gd_caps[i].proc);
		snprintf(text, sizeof(text), "DeviceFileMinor: %u\nDeviceFileMode: %u\n"
			 "DeviceFileModify: 1\n", gd_caps[i].minor, (unsigned)c->cap_mode[i]);
		gd_first(&first, write_file(ctx, s, rel, text, errs));
	}
	return first;
}
