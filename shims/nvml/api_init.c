/* Library lifecycle, system queries and error strings. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shims/nvml/nvml_types.h"

NVML_API(nvmlInitWithFlags, unsigned flags)
{
	(void)flags;	/* NO_GPUS / NO_ATTACH change nothing for a mock */
	return engine_init();
}

NVML_API(nvmlInit_v2, void)
{
	return engine_init();
}
NVML_ALIAS(nvmlInit, nvmlInit_v2);
NVML_ALIAS(nvmlInit_v1, nvmlInit_v2);

NVML_API(nvmlShutdown, void)
{
	return engine_shutdown();
}

static const struct {
	nvmlReturn_t code;
	const char *text;
} error_texts[] = {
	{ NVML_SUCCESS, "Success" },
	{ NVML_ERROR_UNINITIALIZED, "Uninitialized" },
	{ NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument" },
	{ NVML_ERROR_NOT_SUPPORTED, "Not Supported" },
	{ NVML_ERROR_NO_PERMISSION, "Insufficient Permissions" },
	{ NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized" },
	{ NVML_ERROR_NOT_FOUND, "Not Found" },
	{ NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size" },
	{ NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power" },
	{ NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded" },
	{ NVML_ERROR_TIMEOUT, "Timeout" },
	{ NVML_ERROR_IRQ_ISSUE, "Interrupt Request Issue" },
	{ NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found" },
	{ NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found" },
	{ NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM" },
	{ NVML_ERROR_GPU_IS_LOST, "GPU is lost" },
	{ NVML_ERROR_RESET_REQUIRED, "GPU requires restart" },
	{ NVML_ERROR_OPERATING_SYSTEM, "The operating system has blocked the request." },
	{ NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch." },
	{ NVML_ERROR_IN_USE, "In use by another client" },
	{ NVML_ERROR_MEMORY, "Insufficient Memory" },
	{ NVML_ERROR_NO_DATA, "No data" },
	{ NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "ECC is enabled" },
	{ NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient resources" },
	{ NVML_ERROR_FREQ_NOT_SUPPORTED, "Frequency not supported" },
	{ NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch" },
	{ NVML_ERROR_DEPRECATED, "Deprecated" },
	{ NVML_ERROR_NOT_READY, "Not ready" },
	{ NVML_ERROR_GPU_NOT_FOUND, "GPU not found" },
	{ NVML_ERROR_INVALID_STATE, "Invalid state" },
	{ NVML_ERROR_UNKNOWN, "Unknown Error" },
};

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result);
NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	for (size_t i = 0; i < sizeof(error_texts) / sizeof(error_texts[0]); i++)
		if (error_texts[i].code == result)
			return error_texts[i].text;
	return "Unknown Error";
}

NVML_API(nvmlSystemGetDriverVersion, char *version, unsigned length)
{
	nvmlReturn_t rc = nvml_ready();

	return rc ? rc : nvml_copy_str(version, length, engine_driver_version());
}

NVML_API(nvmlSystemGetNVMLVersion, char *version, unsigned length)
{
	nvmlReturn_t rc = nvml_ready();

	return rc ? rc : nvml_copy_str(version, length, engine_nvml_version());
}

NVML_API(nvmlSystemGetCudaDriverVersion_v2, int *version)
{
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	*version = engine_cuda_version();
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlSystemGetCudaDriverVersion, nvmlSystemGetCudaDriverVersion_v2);

/* A profile process's name when the pid is one of ours, else the host's. */
static bool profile_process_name(unsigned pid, const char **name)
{
	char key[64];
	uint64_t p;

	for (unsigned i = 0; i < engine_device_count(); i++) {
		struct mdev *d = engine_device(i);
		size_t n = d ? mdev_len(d, "processes") : 0;

		for (size_t j = 0; j < n; j++) {
			snprintf(key, sizeof(key), "processes[%zu].pid", j);
			if (!mdev_u64(d, key, &p) || p != pid)
				continue;
			snprintf(key, sizeof(key), "processes[%zu].name", j);
			if (mdev_str(d, key, name))
				return true;
		}
	}
	return false;
}

NVML_API(nvmlSystemGetProcessName, unsigned pid, char *name, unsigned length)
{
	const char *s;
	char path[64], buf[4096];
	ssize_t n;
	int fd;
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!name || !length)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (profile_process_name(pid, &s)) {
		snprintf(name, length, "%s", s);	/* NVML truncates */
		return NVML_SUCCESS;
	}
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? NVML_ERROR_NOT_FOUND : NVML_ERROR_NO_PERMISSION;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NVML_ERROR_NOT_FOUND;
	buf[n] = '\0';
	snprintf(name, length, "%s", buf);
	return NVML_SUCCESS;
}
