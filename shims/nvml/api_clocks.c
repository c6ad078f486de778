/* Clocks (MHz), supported clock tables, clock event (throttle) reasons and
 * violation counters. */
#include <stdio.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

static const char *const domain_names[NVML_CLOCK_COUNT] = {
	[NVML_CLOCK_GRAPHICS] = "graphics", [NVML_CLOCK_SM] = "sm",
	[NVML_CLOCK_MEM] = "memory", [NVML_CLOCK_VIDEO] = "video",
};

/* clocks.<domain>_<which>; the SM domain falls back to graphics for the
 * application clocks profiles do not state separately. */
static nvmlReturn_t clock_value(struct mdev *d, unsigned type, const char *which,
				unsigned *mhz)
{
	char key[64];

	if (type >= NVML_CLOCK_COUNT || !mhz)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "clocks.%s_%s", domain_names[type], which);
	if (nvml_key_u32(d, key, mhz) == NVML_SUCCESS)
		return NVML_SUCCESS;
	if (type == NVML_CLOCK_SM)
		return clock_value(d, NVML_CLOCK_GRAPHICS, which, mhz);
	return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API(nvmlDeviceGetClockInfo, nvmlDevice_t device, unsigned type, unsigned *mhz)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	return rc ? rc : clock_value(d, type, "current", mhz);
}

#define CLOCK_GETTER(fn, which) \
	NVML_API(fn, nvmlDevice_t device, unsigned type, unsigned *mhz) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		return rc ? rc : clock_value(d, type, which, mhz); \
	}

CLOCK_GETTER(nvmlDeviceGetMaxClockInfo, "max")
CLOCK_GETTER(nvmlDeviceGetMaxCustomerBoostClock, "max")
CLOCK_GETTER(nvmlDeviceGetApplicationsClock, "app")
CLOCK_GETTER(nvmlDeviceGetDefaultApplicationsClock, "app_default")

NVML_API(nvmlDeviceGetClock, nvmlDevice_t device, unsigned type, unsigned id,
	 unsigned *mhz)
{
	static const char *const which[] = {
		[NVML_CLOCK_ID_CURRENT] = "current",
		[NVML_CLOCK_ID_APP_CLOCK_TARGET] = "app",
		[NVML_CLOCK_ID_APP_CLOCK_DEFAULT] = "app_default",
		[NVML_CLOCK_ID_CUSTOMER_BOOST_MAX] = "max",
	};
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (id >= sizeof(which) / sizeof(which[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	return clock_value(d, type, which[id], mhz);
}

/* Copies a list of numbers at key[i] (suffix appended) into out[*count]. */
static nvmlReturn_t clock_list(struct mdev *d, const char *list, const char *suffix,
			       unsigned *count, unsigned *out)
{
	char key[160];
	size_t n = mdev_len(d, list);
	uint32_t v;

	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (*count < n || !out) {
		*count = (unsigned)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s[%zu]%s", list, i, suffix);
		out[i] = mdev_u32(d, key, &v) ? v : 0;
	}
	*count = (unsigned)n;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetSupportedMemoryClocks, nvmlDevice_t device, unsigned *count,
	 unsigned *mhz)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : clock_list(d, "supported_clocks.memory_clocks", ".freq_mhz",
				    count, mhz);
}

NVML_API(nvmlDeviceGetSupportedGraphicsClocks, nvmlDevice_t device,
	 unsigned memory_mhz, unsigned *count, unsigned *mhz)
{
	struct mdev *d;
	char key[96];
	uint32_t f;
	size_t n;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	n = mdev_len(d, "supported_clocks.memory_clocks");
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "supported_clocks.memory_clocks[%zu].freq_mhz", i);
		if (!mdev_u32(d, key, &f) || f != memory_mhz)
			continue;
		snprintf(key, sizeof(key),
			 "supported_clocks.memory_clocks[%zu].graphics_clocks", i);
		return clock_list(d, key, "", count, mhz);
	}
	return n ? NVML_ERROR_NOT_FOUND : NVML_ERROR_NOT_SUPPORTED;
}

/* ---- clock event reasons ----------------------------------------------- */

static const struct {
	const char *key;
	unsigned long long bit;
} reasons[] = {
	{ "clocks_throttle_reasons.gpu_idle", NVML_CLOCKS_REASON_GPU_IDLE },
	{ "clocks_throttle_reasons.applications_clocks_setting", NVML_CLOCKS_REASON_APP_CLOCKS },
	{ "clocks_throttle_reasons.sw_power_cap", NVML_CLOCKS_REASON_SW_POWER_CAP },
	{ "clocks_throttle_reasons.hw_slowdown", NVML_CLOCKS_REASON_HW_SLOWDOWN },
	{ "clocks_throttle_reasons.sync_boost", NVML_CLOCKS_REASON_SYNC_BOOST },
	{ "clocks_throttle_reasons.sw_thermal_slowdown", NVML_CLOCKS_REASON_SW_THERMAL },
	{ "clocks_throttle_reasons.hw_thermal_slowdown", NVML_CLOCKS_REASON_HW_THERMAL },
	{ "clocks_throttle_reasons.hw_power_brake_slowdown", NVML_CLOCKS_REASON_HW_POWER_BRAKE },
	{ "clocks_throttle_reasons.display_clocks_setting", NVML_CLOCKS_REASON_DISPLAY_CLOCKS },
};

NVML_API(nvmlDeviceGetCurrentClocksEventReasons, nvmlDevice_t device,
	 unsigned long long *mask)
{
	struct mdev *d;
	bool b;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mask)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mask = 0;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (mdev_bool(d, reasons[i].key, &b) && b)
			*mask |= reasons[i].bit;
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDeviceGetCurrentClocksEventReasons);

NVML_API(nvmlDeviceGetSupportedClocksEventReasons, nvmlDevice_t device,
	 unsigned long long *mask)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mask)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mask = 0;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		*mask |= reasons[i].bit;
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetSupportedClocksThrottleReasons, nvmlDeviceGetSupportedClocksEventReasons);

/* Time held below application clocks per policy: the profile's counters
 * (microseconds) reported in nanoseconds. */
NVML_API(nvmlDeviceGetViolationStatus, nvmlDevice_t device, unsigned policy,
	 nvmlViolationTime_t *violation)
{
	static const char *const counter_keys[] = {
		[NVML_PERF_POLICY_POWER] = "clocks_throttle_reasons.counters.sw_power_cap_us",
		[NVML_PERF_POLICY_THERMAL] = "clocks_throttle_reasons.counters.sw_thermal_slowdown_us",
		[NVML_PERF_POLICY_SYNC_BOOST] = "clocks_throttle_reasons.counters.sync_boost_us",
		[NVML_PERF_POLICY_BOARD_LIMIT] = "clocks_throttle_reasons.counters.hw_power_brake_slowdown_us",
		[NVML_PERF_POLICY_LOW_UTILIZATION] = NULL,
		[NVML_PERF_POLICY_RELIABILITY] = "clocks_throttle_reasons.counters.hw_thermal_slowdown_us",
		[NVML_PERF_POLICY_TOTAL_APP_CLOCKS] = NULL,
		[NVML_PERF_POLICY_TOTAL_BASE_CLOCKS] = NULL,
	};
	struct mdev *d;
	struct timespec ts;
	uint64_t us = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!violation || policy >= sizeof(counter_keys) / sizeof(counter_keys[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (counter_keys[policy])
		mdev_u64(d, counter_keys[policy], &us);
	clock_gettime(CLOCK_REALTIME, &ts);
	violation->referenceTime = (unsigned long long)ts.tv_sec * 1000000ULL +
				   (unsigned long long)ts.tv_nsec / 1000;
	violation->violationTime = us * 1000ULL;
	return NVML_SUCCESS;
}
