/* Utilization rates, media engines, encoder/FBC statistics, samples,
 * per-process utilization and accounting. */
#include <stdio.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL +
	       (unsigned long long)ts.tv_nsec / 1000;
}

NVML_API(nvmlDeviceGetUtilizationRates, nvmlDevice_t device, nvmlUtilization_t *util)
{
	struct mdev *d;
	unsigned gpu, mem;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (!util)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_u32(d, "utilization.gpu", &gpu)) ||
	    (rc = nvml_key_u32(d, "utilization.memory", &mem)))
		return rc;
	util->gpu = gpu;
	util->memory = mem;
	return NVML_SUCCESS;
}

/* Engine utilization over a one-second sampling period. */
#define ENGINE_UTIL(fn, key) \
	NVML_API(fn, nvmlDevice_t device, unsigned *util, unsigned *period_us) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		if (rc) \
			return rc; \
		if (!util || !period_us) \
			return NVML_ERROR_INVALID_ARGUMENT; \
		rc = nvml_key_u32(d, key, util); \
		if (rc == NVML_SUCCESS) \
			*period_us = 1000000; \
		return rc; \
	}

ENGINE_UTIL(nvmlDeviceGetEncoderUtilization, "utilization.encoder")
ENGINE_UTIL(nvmlDeviceGetDecoderUtilization, "utilization.decoder")
ENGINE_UTIL(nvmlDeviceGetJpgUtilization, "utilization.jpeg")
ENGINE_UTIL(nvmlDeviceGetOfaUtilization, "utilization.ofa")

/* {session_count, average_fps, average_latency_us} of a stats block. */
static nvmlReturn_t stats(nvmlDevice_t device, const char *block, unsigned out[3])
{
	static const char *const fields[3] = {
		"session_count", "average_fps", "average_latency_us",
	};
	struct mdev *d;
	char key[64];
	uint32_t v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mdev_has(d, block))
		return NVML_ERROR_NOT_SUPPORTED;
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "%s.%s", block, fields[i]);
		out[i] = mdev_u32(d, key, &v) ? v : 0;
	}
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetEncoderStats, nvmlDevice_t device, unsigned *sessions,
	 unsigned *fps, unsigned *latency_us)
{
	unsigned v[3];
	nvmlReturn_t rc;

	if (!sessions || !fps || !latency_us)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = stats(device, "encoder_stats", v)))
		return rc;
	*sessions = v[0];
	*fps = v[1];
	*latency_us = v[2];
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetFBCStats, nvmlDevice_t device, nvmlFBCStats_t *fbc)
{
	unsigned v[3];
	nvmlReturn_t rc;

	if (!fbc)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = stats(device, "fbc_stats", v)))
		return rc;
	fbc->sessionsCount = v[0];
	fbc->averageFPS = v[1];
	fbc->averageLatency = v[2];
	return NVML_SUCCESS;
}

/* No session details are simulated: the lists are empty. */
static nvmlReturn_t empty_list(nvmlDevice_t device, unsigned *count)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetEncoderSessions, nvmlDevice_t device, unsigned *count, void *info)
{
	return empty_list(device, count);
}

NVML_API(nvmlDeviceGetFBCSessions, nvmlDevice_t device, unsigned *count, void *info)
{
	return empty_list(device, count);
}

NVML_API(nvmlDeviceGetAccountingPids, nvmlDevice_t device, unsigned *count,
	 unsigned *pids)
{
	return empty_list(device, count);
}

NVML_API(nvmlDeviceGetEncoderCapacity, nvmlDevice_t device, unsigned type,
	 unsigned *capacity)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (type > 2)	/* H264, HEVC, AV1 */
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_key_u32(d, "encoder_capacity", capacity);
}

static const struct nvml_name_value feature_state[] = {
	{ "enabled", NVML_FEATURE_ENABLED }, { "disabled", NVML_FEATURE_DISABLED },
	{ NULL, 0 }
};

NVML_API(nvmlDeviceGetAccountingMode, nvmlDevice_t device, unsigned *mode)
{
	struct mdev *d;
	int v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_enum(d, "accounting.mode", feature_state, &v)))
		return rc;
	*mode = (unsigned)v;
	return NVML_SUCCESS;
}

NVML_U32_GETTER(nvmlDeviceGetAccountingBufferSize, "accounting.buffer_size", nvml_dev)

NVML_API(nvmlDeviceGetAccountingStats, nvmlDevice_t device, unsigned pid, void *stats_out)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	return stats_out ? NVML_ERROR_NOT_FOUND : NVML_ERROR_INVALID_ARGUMENT;
}

/* One current sample per query; the buffer size query answers 1. */
NVML_API(nvmlDeviceGetSamples, nvmlDevice_t device, unsigned type,
	 unsigned long long last_seen, unsigned *value_type, unsigned *count,
	 nvmlSample_t *samples)
{
	static const char *const keys[] = {
		[NVML_TOTAL_POWER_SAMPLES] = "power.current_draw_mw",
		[NVML_GPU_UTILIZATION_SAMPLES] = "utilization.gpu",
		[NVML_MEMORY_UTILIZATION_SAMPLES] = "utilization.memory",
		[NVML_ENC_UTILIZATION_SAMPLES] = "utilization.encoder",
		[NVML_DEC_UTILIZATION_SAMPLES] = "utilization.decoder",
		[NVML_PROCESSOR_CLK_SAMPLES] = "clocks.graphics_current",
		[NVML_MEMORY_CLK_SAMPLES] = "clocks.memory_current",
	};
	struct mdev *d;
	unsigned v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (type >= sizeof(keys) / sizeof(keys[0]) || !value_type || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_u32(d, keys[type], &v)))
		return rc;
	*value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
	if (!samples) {
		*count = 1;
		return NVML_SUCCESS;
	}
	if (*count < 1)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	samples[0].timeStamp = now_us();
	samples[0].sampleValue.ullVal = 0;
	samples[0].sampleValue.uiVal = v;
	*count = 1;
	return NVML_SUCCESS;
}

/* The profile's processes with their sm/mem/enc/dec utilization. */
NVML_API(nvmlDeviceGetProcessUtilization, nvmlDevice_t device,
	 nvmlProcessUtilizationSample_t *util, unsigned *count,
	 unsigned long long last_seen)
{
	static const char *const fields[4] = { "sm_util", "mem_util", "enc_util", "dec_util" };
	struct mdev *d;
	char key[64];
	uint32_t v[5];
	size_t n;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = mdev_len(d, "processes");
	if (n == 0)
		return NVML_ERROR_NOT_FOUND;
	if (!util || *count < n) {
		*count = (unsigned)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "processes[%zu].pid", i);
		if (!mdev_u32(d, key, &v[0]))
			v[0] = 0;
		for (int f = 0; f < 4; f++) {
			snprintf(key, sizeof(key), "processes[%zu].%s", i, fields[f]);
			if (!mdev_u32(d, key, &v[f + 1]))
				v[f + 1] = 0;
		}
		util[i] = (nvmlProcessUtilizationSample_t){
			.pid = v[0], .timeStamp = now_us(), .smUtil = v[1],
			.memUtil = v[2], .encUtil = v[3], .decUtil = v[4],
		};
	}
	*count = (unsigned)n;
	return NVML_SUCCESS;
}
