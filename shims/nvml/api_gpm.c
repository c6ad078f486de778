/* GPU Performance Monitoring (Hopper and later unless the profile's
 * gpm.supported says otherwise).  Metrics come from the profile's
 * utilization and gpm rates; samples only record device and time. */
#include <stdlib.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

#define GPM_SUPPORT_VERSION 1
#define GPM_METRICS_GET_VERSION 1
#define GPM_SAMPLE_MAGIC 0x67706d73u	/* "gpms" */
#define GPM_MAX_METRICS 210

struct nvml_gpm_sample {
	unsigned magic;
	struct mdev *device;
	struct timespec taken;
};

static bool gpm_supported(struct mdev *d)
{
	bool b;

	if (mdev_bool(d, "gpm.supported", &b))
		return b;
	return nvml_arch(d) >= NVML_DEVICE_ARCH_HOPPER;
}

NVML_API(nvmlGpmQueryDeviceSupport, nvmlDevice_t device, nvmlGpmSupport_t *support)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!support)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (support->version != GPM_SUPPORT_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	support->isSupportedDevice = gpm_supported(d);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpmQueryIfStreamingEnabled, nvmlDevice_t device, unsigned *state)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!state)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!gpm_supported(d))
		return NVML_ERROR_NOT_SUPPORTED;
	*state = 0;
	return NVML_SUCCESS;
}

NVML_API(nvmlGpmSampleAlloc, nvmlGpmSample_t *sample)
{
	struct nvml_gpm_sample *s;
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!sample)
		return NVML_ERROR_INVALID_ARGUMENT;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NVML_ERROR_MEMORY;
	s->magic = GPM_SAMPLE_MAGIC;
	*sample = s;
	return NVML_SUCCESS;
}

static bool valid_sample(nvmlGpmSample_t s)
{
	return s && s->magic == GPM_SAMPLE_MAGIC;
}

NVML_API(nvmlGpmSampleFree, nvmlGpmSample_t sample)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!valid_sample(sample))
		return NVML_ERROR_INVALID_ARGUMENT;
	sample->magic = 0;
	free(sample);
	return NVML_SUCCESS;
}

NVML_API(nvmlGpmSampleGet, nvmlDevice_t device, nvmlGpmSample_t sample)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!valid_sample(sample))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!gpm_supported(d))
		return NVML_ERROR_NOT_SUPPORTED;
	sample->device = d;
	clock_gettime(CLOCK_MONOTONIC, &sample->taken);
	return NVML_SUCCESS;
}

/* Metric id -> profile key (NULL: reads 0) and names. */
static const struct {
	unsigned id;
	const char *key;
	const char *name, *unit;
} metrics[] = {
	{ 1, "utilization.gpu", "GRAPHICS_UTIL", "%" },
	{ 2, "utilization.gpu", "SM_UTIL", "%" },
	{ 3, NULL, "SM_OCCUPANCY", "%" },
	{ 4, NULL, "INTEGER_UTIL", "%" },
	{ 5, NULL, "ANY_TENSOR_UTIL", "%" },
	{ 6, NULL, "DFMA_TENSOR_UTIL", "%" },
	{ 7, NULL, "HMMA_TENSOR_UTIL", "%" },
	{ 9, NULL, "IMMA_TENSOR_UTIL", "%" },
	{ 10, "utilization.memory", "DRAM_BW_UTIL", "%" },
	{ 11, NULL, "FP64_UTIL", "%" },
	{ 12, NULL, "FP32_UTIL", "%" },
	{ 13, NULL, "FP16_UTIL", "%" },
	{ 20, "gpm.pcie_tx_mib_per_sec", "PCIE_TX_PER_SEC", "MiB/s" },
	{ 21, "gpm.pcie_rx_mib_per_sec", "PCIE_RX_PER_SEC", "MiB/s" },
	{ 60, NULL, "NVLINK_TOTAL_RX_PER_SEC", "MiB/s" },
	{ 61, NULL, "NVLINK_TOTAL_TX_PER_SEC", "MiB/s" },
};

static void metric_value(struct mdev *d, nvmlGpmMetric_t *m)
{
	double v = 0;

	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		if (metrics[i].id != m->metricId)
			continue;
		if (metrics[i].key)
			mdev_double(d, metrics[i].key, &v);
		m->value = v;
		m->metricInfo.shortName = (char *)metrics[i].name;
		m->metricInfo.longName = (char *)metrics[i].name;
		m->metricInfo.unit = (char *)metrics[i].unit;
		m->nvmlReturn = NVML_SUCCESS;
		return;
	}
	m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
}

NVML_API(nvmlGpmMetricsGet, nvmlGpmMetricsGet_t *get)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!get)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (get->version != GPM_METRICS_GET_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (!valid_sample(get->sample1) || !valid_sample(get->sample2) ||
	    !get->sample1->device || get->sample1->device != get->sample2->device ||
	    get->numMetrics > GPM_MAX_METRICS)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_dev(get->sample1->device, &d)))
		return rc;
	for (unsigned i = 0; i < get->numMetrics; i++)
		metric_value(d, &get->metrics[i]);
	return NVML_SUCCESS;
}
