/* Power draw and limits, performance state, temperatures, thresholds and
 * fans.  Units as NVML: milliwatts, millijoules, degrees C, percent. */
#include <string.h>

#include "shims/nvml/nvml_types.h"

NVML_API(nvmlDeviceGetPowerUsage, nvmlDevice_t device, unsigned *mw)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	return rc ? rc : nvml_key_u32(d, "power.current_draw_mw", mw);
}

NVML_API(nvmlDeviceGetTotalEnergyConsumption, nvmlDevice_t device,
	 unsigned long long *mj)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_u64(d, "power.total_energy_consumption_mj", mj);
}

NVML_API(nvmlDeviceGetPowerState, nvmlDevice_t device, unsigned *pstate)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (nvml_key_pstate(d, "power.power_state", pstate) == NVML_SUCCESS)
		return NVML_SUCCESS;
	return nvml_key_pstate(d, "performance_state", pstate);
}

NVML_API(nvmlDeviceGetPerformanceState, nvmlDevice_t device, unsigned *pstate)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_pstate(d, "performance_state", pstate);
}

NVML_API(nvmlDeviceGetPowerSource, nvmlDevice_t device, unsigned *source)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!source)
		return NVML_ERROR_INVALID_ARGUMENT;
	*source = NVML_POWER_SOURCE_AC;
	return NVML_SUCCESS;
}

/* Limit getters answer only while power management is supported. */
static nvmlReturn_t managed(nvmlDevice_t device, struct mdev **d)
{
	bool b;
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	if (mdev_bool(*d, "power.management_supported", &b) && !b)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetPowerManagementMode, nvmlDevice_t device, unsigned *mode)
{
	struct mdev *d;
	nvmlReturn_t rc = managed(device, &d);

	return rc ? rc : nvml_key_feature(d, "power.management_mode", mode);
}

NVML_U32_GETTER(nvmlDeviceGetPowerManagementDefaultLimit, "power.default_limit_mw", managed)
NVML_U32_GETTER(nvmlDeviceGetEnforcedPowerLimit, "power.enforced_limit_mw", managed)

/* The limit set by the administrator; the enforced one unless stated. */
NVML_API(nvmlDeviceGetPowerManagementLimit, nvmlDevice_t device, unsigned *mw)
{
	struct mdev *d;
	nvmlReturn_t rc = managed(device, &d);

	if (rc)
		return rc;
	if (nvml_key_u32(d, "power.limit_mw", mw) == NVML_SUCCESS)
		return NVML_SUCCESS;
	return nvml_key_u32(d, "power.enforced_limit_mw", mw);
}

NVML_API(nvmlDeviceGetPowerManagementLimitConstraints, nvmlDevice_t device,
	 unsigned *min_mw, unsigned *max_mw)
{
	struct mdev *d;
	unsigned lo;
	nvmlReturn_t rc = managed(device, &d);

	if (rc)
		return rc;
	if (!min_mw || !max_mw)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_u32(d, "power.min_limit_mw", &lo)) ||
	    (rc = nvml_key_u32(d, "power.max_limit_mw", max_mw)))
		return rc;
	*min_mw = lo;
	return NVML_SUCCESS;
}

/* ---- temperature ------------------------------------------------------- */

nvmlReturn_t nvml_temperature(struct mdev *d, int *celsius)
{
	int64_t v;

	if (!mdev_i64(d, "thermal.temperature_gpu_c", &v))
		return NVML_ERROR_NOT_SUPPORTED;
	*celsius = (int)v;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetTemperature, nvmlDevice_t device, unsigned sensor, unsigned *temp)
{
	struct mdev *d;
	int t;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (sensor != NVML_TEMPERATURE_GPU || !temp)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_temperature(d, &t)))
		return rc;
	*temp = t < 0 ? 0 : (unsigned)t;
	return NVML_SUCCESS;
}

/* Absolute thresholds are what pre-Ada boards report; Ada and later report
 * margins to T.Limit instead (export slot 240 and field ids 193-196), and
 * their absolute GPU thresholds read N/A. */
static const struct {
	const char *key;
	bool absolute_only;
} thresholds[] = {
	[NVML_TEMPERATURE_THRESHOLD_SHUTDOWN] = { "thermal.shutdown_threshold_c", true },
	[NVML_TEMPERATURE_THRESHOLD_SLOWDOWN] = { "thermal.slowdown_threshold_c", true },
	[NVML_TEMPERATURE_THRESHOLD_MEM_MAX] = { "thermal.memory_max_c", false },
	[NVML_TEMPERATURE_THRESHOLD_GPU_MAX] = { "thermal.max_operating_c", true },
	[NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN] = { "thermal.acoustic_min_c", false },
	[NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR] = { "thermal.acoustic_current_c", false },
	[NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX] = { "thermal.acoustic_max_c", false },
	[NVML_TEMPERATURE_THRESHOLD_GPS_CURR] = { "thermal.target_temperature_c", false },
};

NVML_API(nvmlDeviceGetTemperatureThreshold, nvmlDevice_t device, unsigned type,
	 unsigned *temp)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (type >= sizeof(thresholds) / sizeof(thresholds[0]) || !temp)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (thresholds[type].absolute_only && nvml_reports_tlimit(d))
		return NVML_ERROR_NOT_SUPPORTED;
	return nvml_key_u32(d, thresholds[type].key, temp);
}

/* Margin of a threshold to T.Limit (the max operating temperature):
 * negative above it, as the T.Limit rows print. */
nvmlReturn_t nvml_tlimit_margin(struct mdev *d, const char *threshold_key, int *out)
{
	int64_t limit, t;

	if (!nvml_reports_tlimit(d) || !mdev_i64(d, "thermal.max_operating_c", &limit))
		return NVML_ERROR_NOT_SUPPORTED;
	if (!threshold_key) {
		int cur;
		nvmlReturn_t rc = nvml_temperature(d, &cur);

		if (rc)
			return rc;
		*out = (int)(limit - cur);
		return NVML_SUCCESS;
	}
	if (!mdev_i64(d, threshold_key, &t))
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (int)(limit - t);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetThermalSettings, nvmlDevice_t device, unsigned sensor_index,
	 nvmlGpuThermalSettings_t *settings)
{
	struct mdev *d;
	int cur;
	int64_t max = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!settings || (sensor_index > 2 && sensor_index != 15))
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_temperature(d, &cur)))
		return rc;
	mdev_i64(d, "thermal.shutdown_threshold_c", &max);
	memset(settings, 0, sizeof(*settings));
	settings->count = 1;
	settings->sensor[0].controller = 1;	/* GPU_INTERNAL */
	settings->sensor[0].defaultMinTemp = 0;
	settings->sensor[0].defaultMaxTemp = (int)max;
	settings->sensor[0].currentTemp = cur;
	settings->sensor[0].target = 1;	/* THERMAL_TARGET_GPU */
	return NVML_SUCCESS;
}

/* ---- fans -------------------------------------------------------------- */

/* Fanless boards (fan.count 0, SXM modules) answer NOT_SUPPORTED. */
static nvmlReturn_t fan_value(nvmlDevice_t device, unsigned fan, const char *key,
			      unsigned *out)
{
	struct mdev *d;
	uint32_t count = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	mdev_u32(d, "fan.count", &count);
	if (count == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (fan >= count)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_key_u32(d, key, out);
}

NVML_API(nvmlDeviceGetFanSpeed, nvmlDevice_t device, unsigned *speed)
{
	return fan_value(device, 0, "fan.speed_percent", speed);
}

NVML_API(nvmlDeviceGetFanSpeed_v2, nvmlDevice_t device, unsigned fan, unsigned *speed)
{
	return fan_value(device, fan, "fan.speed_percent", speed);
}

NVML_API(nvmlDeviceGetTargetFanSpeed, nvmlDevice_t device, unsigned fan,
	 unsigned *speed)
{
	return fan_value(device, fan, "fan.target_speed_percent", speed);
}

NVML_API(nvmlDeviceGetNumFans, nvmlDevice_t device, unsigned *count)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (nvml_key_u32(d, "fan.count", count) != NVML_SUCCESS)
		*count = 0;
	return NVML_SUCCESS;
}
