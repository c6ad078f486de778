/* Framebuffer and BAR1 memory, PCIe link state and throughput. */
#include <string.h>

#include "shims/nvml/nvml_types.h"

/* Values are returned as the profile states them (the allocation watcher
 * keeps used/free consistent); v1's "used" includes the reserved part. */
static nvmlReturn_t memory_values(nvmlDevice_t device, void *out, unsigned long long v[4])
{
	static const char *const keys[4] = {
		"memory.total_bytes", "memory.reserved_bytes",
		"memory.free_bytes", "memory.used_bytes",
	};
	struct mdev *d;
	uint64_t x;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u64(d, keys[0], &x))
		return NVML_ERROR_NOT_SUPPORTED;
	for (int i = 0; i < 4; i++)
		v[i] = mdev_u64(d, keys[i], &x) ? x : 0;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetMemoryInfo, nvmlDevice_t device, nvmlMemory_t *memory)
{
	unsigned long long v[4];
	nvmlReturn_t rc;

	rc = memory_values(device, memory, v);
	if (rc)
		return rc;
	memory->total = v[0];
	memory->free = v[2];
	memory->used = v[3] + v[1];
	return NVML_SUCCESS;
}

#define NVML_MEMORY_V2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)

NVML_API(nvmlDeviceGetMemoryInfo_v2, nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	unsigned long long v[4];
	nvmlReturn_t rc;

	rc = memory_values(device, memory, v);
	if (rc)
		return rc;
	if (memory->version != NVML_MEMORY_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory->total = v[0];
	memory->reserved = v[1];
	memory->free = v[2];
	memory->used = v[3];
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetBAR1MemoryInfo, nvmlDevice_t device, nvmlBAR1Memory_t *bar1)
{
	struct mdev *d;
	uint64_t t, f = 0, u = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!bar1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u64(d, "bar1_memory.total_bytes", &t))
		return NVML_ERROR_NOT_SUPPORTED;
	mdev_u64(d, "bar1_memory.free_bytes", &f);
	mdev_u64(d, "bar1_memory.used_bytes", &u);
	bar1->bar1Total = t;
	bar1->bar1Free = f;
	bar1->bar1Used = u;
	return NVML_SUCCESS;
}

NVML_U32_GETTER(nvmlDeviceGetMemoryBusWidth, "memory.memory_bus_width", nvml_dev)
NVML_U32_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, "pcie.max_link_gen", nvml_dev)
NVML_U32_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, "pcie.current_link_gen", nvml_dev)
NVML_U32_GETTER(nvmlDeviceGetMaxPcieLinkWidth, "pcie.max_link_width", nvml_dev)
NVML_U32_GETTER(nvmlDeviceGetCurrPcieLinkWidth, "pcie.current_link_width", nvml_dev)
NVML_U32_GETTER(nvmlDeviceGetPcieReplayCounter, "pcie.replay_counter", nvml_dev)

/* The GPU's own maximum; profiles state one max for GPU and host. */
NVML_API(nvmlDeviceGetGpuMaxPcieLinkGeneration, nvmlDevice_t device, unsigned *gen)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (nvml_key_u32(d, "pcie.gpu_max_link_gen", gen) == NVML_SUCCESS)
		return NVML_SUCCESS;
	return nvml_key_u32(d, "pcie.max_link_gen", gen);
}

NVML_API(nvmlDeviceGetPcieThroughput, nvmlDevice_t device, unsigned counter,
	 unsigned *value)
{
	static const char *const keys[] = {
		[NVML_PCIE_UTIL_TX_BYTES] = "pcie.tx_throughput_kbps",
		[NVML_PCIE_UTIL_RX_BYTES] = "pcie.rx_throughput_kbps",
	};
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (counter > NVML_PCIE_UTIL_RX_BYTES)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_key_u32(d, keys[counter], value);
}

/* Per-lane transfer rate by generation, in Mbps. */
static const unsigned gen_mbps[] = { 0, 2500, 5000, 8000, 16000, 32000, 64000 };

static nvmlReturn_t link_speed(nvmlDevice_t device, const char *key, unsigned *mbps)
{
	struct mdev *d;
	unsigned gen;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mbps)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_u32(d, key, &gen)))
		return rc;
	if (gen == 0 || gen >= sizeof(gen_mbps) / sizeof(gen_mbps[0]))
		return NVML_ERROR_NOT_SUPPORTED;
	*mbps = gen_mbps[gen];
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetPcieLinkMaxSpeed, nvmlDevice_t device, unsigned *mbps)
{
	return link_speed(device, "pcie.max_link_gen", mbps);
}

NVML_API(nvmlDeviceGetPcieSpeed, nvmlDevice_t device, unsigned *mbps)
{
	return link_speed(device, "pcie.current_link_gen", mbps);
}
