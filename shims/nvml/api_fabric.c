/* NVLink fabric registration (state, cluster, clique; "auto" follows the
 * fake fabric manager through mdev_fabric_state) and fabric health: the
 * health mask and summary of GpuFabricInfoV (v2/v3). */
#include <string.h>

#include "shims/nvml/nvml_types.h"

static void parse_uuid(const char *s, unsigned char out[16])
{
	unsigned n = 0;

	memset(out, 0, 16);
	for (; s && *s && n < 32; s++) {
		unsigned v;

		if (*s >= '0' && *s <= '9')
			v = (unsigned)(*s - '0');
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			v = (unsigned)((*s | 0x20) - 'a' + 10);
		else
			continue;
		out[n / 2] |= (unsigned char)(n % 2 ? v : v << 4);
		n++;
	}
}

/* Registration state, cluster and clique; NOT_SUPPORTED without fabric. */
static nvmlReturn_t fabric_base(nvmlDevice_t device, struct mdev **d,
				unsigned char uuid[16], nvmlReturn_t *status,
				unsigned *clique, unsigned char *state)
{
	const char *s = NULL;
	uint32_t c = 0;
	unsigned st;
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	st = mdev_fabric_state(*d);
	if (st == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED)
		return NVML_ERROR_NOT_SUPPORTED;
	mdev_str(*d, "fabric.cluster_uuid", &s);
	mdev_u32(*d, "fabric.clique_id", &c);
	parse_uuid(s, uuid);
	*status = st == NVML_GPU_FABRIC_STATE_COMPLETED ? NVML_SUCCESS : NVML_ERROR_NOT_READY;
	*clique = c;
	*state = (unsigned char)st;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetGpuFabricInfo, nvmlDevice_t device, nvmlGpuFabricInfo_t *info)
{
	struct mdev *d;
	nvmlGpuFabricInfo_t f;
	nvmlReturn_t rc;

	if (!info)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	memset(&f, 0, sizeof(f));
	rc = fabric_base(device, &d, f.clusterUuid, &f.status, &f.cliqueId, &f.state);
	if (rc == NVML_SUCCESS)
		*info = f;
	return rc;
}

/* Health mask fields: 2-bit true(1)/false(2) conditions and the 4-bit
 * incorrect-configuration code. */
static const struct {
	const char *key;
	unsigned shift;
} health_bools[] = {
	{ "fabric.health.degraded_bandwidth", 0 },
	{ "fabric.health.route_recovery", 2 },
	{ "fabric.health.route_unhealthy", 4 },
	{ "fabric.health.access_timeout_recovery", 6 },
};

static const struct nvml_name_value config_codes[] = {
	{ "none", 1 }, { "incorrect_sysguid", 2 }, { "incorrect_chassis_sn", 3 },
	{ "no_partition", 4 }, { "insufficient_nvlinks", 5 },
	{ "incompatible_gpu_fw", 6 }, { "invalid_location", 7 },
	{ "gpu_state_invalid", 8 }, { NULL, 0 }
};

static unsigned health_mask(struct mdev *d)
{
	const char *s;
	uint32_t raw;
	int code = 1;
	unsigned mask = 0;

	if (mdev_u32(d, "fabric.health_mask", &raw))
		return raw;
	for (size_t i = 0; i < sizeof(health_bools) / sizeof(health_bools[0]); i++) {
		bool b = false;

		mdev_bool(d, health_bools[i].key, &b);
		mask |= (b ? 1u : 2u) << health_bools[i].shift;
	}
	if (mdev_str(d, "fabric.health.incorrect_configuration", &s))
		nvml_lookup(config_codes, s, &code);
	return mask | (unsigned)code << 8;
}

static const struct nvml_name_value summaries[] = {
	{ "healthy", NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY },
	{ "unhealthy", NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY },
	{ "limited_capacity", NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY },
	{ "not_supported", NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED },
	{ NULL, 0 }
};

/* "auto" (or unset): any true condition but degraded bandwidth, or a bad
 * configuration, is unhealthy; degraded bandwidth alone limits capacity. */
static unsigned char health_summary(struct mdev *d, unsigned mask)
{
	const char *s;
	int v;
	unsigned cfg = (mask >> 8) & 0xf;

	if (mdev_str(d, "fabric.health_summary", &s) && nvml_lookup(summaries, s, &v))
		return (unsigned char)v;
	for (unsigned shift = 2; shift <= 6; shift += 2)
		if (((mask >> shift) & 3) == 1)
			return NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY;
	if (cfg > 1)
		return NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY;
	if ((mask & 3) == 1)
		return NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY;
	return NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY;
}

#define NVML_FABRIC_INFO_V2 NVML_STRUCT_VERSION(36, 2)
#define NVML_FABRIC_INFO_V3 NVML_STRUCT_VERSION(40, 3)

NVML_API(nvmlDeviceGetGpuFabricInfoV, nvmlDevice_t device, nvmlGpuFabricInfoV_t *info)
{
	struct mdev *d;
	nvmlGpuFabricInfoV_t f;
	nvmlReturn_t rc;

	if (!info)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	memset(&f, 0, sizeof(f));
	rc = fabric_base(device, &d, f.clusterUuid, &f.status, &f.cliqueId, &f.state);
	if (rc)
		return rc;
	if (info->version != NVML_FABRIC_INFO_V2 && info->version != NVML_FABRIC_INFO_V3)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	f.version = info->version;
	f.healthMask = health_mask(d);
	f.healthSummary = health_summary(d, f.healthMask);
	memcpy(info, &f, info->version == NVML_FABRIC_INFO_V3 ? 40 : 36);
	return NVML_SUCCESS;
}
