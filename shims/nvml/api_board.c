/* Board facts the older mock left N/A: the InfoROM black-box (BBX) flush,
 * confidential-computing protected memory, and, through export-table
 * slots (api_board.h), PCIe atomics, the graphics voltage, the addressing
 * mode and the sparse operation mode.  Each comes from the profile; a board whose profile does
 * not name it reads N/A, as a real board without the feature does. */
#include <string.h>

#include "shims/nvml/api_board.h"

/* nvidia-smi prints "Inforom BBX Object Flush": the start of the last
 * flush (microseconds since the epoch, shown as local date and time) and
 * how long it took.  Hopper and later keep a BBX. */
NVML_API(nvmlDeviceGetLastBBXFlushTime, nvmlDevice_t device, unsigned long long *timestamp,
	 unsigned long *duration_us)
{
	struct mdev *d;
	uint64_t ts, dur;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!timestamp || !duration_us)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u64(d, "inforom.bbx_flush_timestamp_us", &ts) ||
	    !mdev_u64(d, "inforom.bbx_flush_duration_us", &dur))
		return NVML_ERROR_NOT_SUPPORTED;
	*timestamp = ts;
	*duration_us = (unsigned long)dur;
	return NVML_SUCCESS;
}

/* With confidential computing off (every shipped profile) the driver
 * reserves no protected memory and reports 0 / 0 / 0, as real boards do;
 * memory.cc_protected_bytes sets a carve-out, all of it free. */
NVML_API(nvmlDeviceGetConfComputeProtectedMemoryUsage, nvmlDevice_t device,
	 nvmlMemory_t *mem)
{
	struct mdev *d;
	uint64_t total = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!mem)
		return NVML_ERROR_INVALID_ARGUMENT;
	mdev_u64(d, "memory.cc_protected_bytes", &total);
	mem->total = total;
	mem->free = total;
	mem->used = 0;
	return NVML_SUCCESS;
}

static nvmlReturn_t slot_dev(uintptr_t dev, uintptr_t out, struct mdev **d)
{
	nvmlReturn_t rc = nvml_dev((nvmlDevice_t)dev, d);

	if (rc)
		return rc;
	return out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* pcie.atomic_caps_{outbound,inbound}: bit masks in nvidia-smi's order,
 * FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64 CAS_128. */
nvmlReturn_t nvml_slot_atomic_caps(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3)
{
	struct mdev *d;
	uint32_t in, outb;
	unsigned *caps = (unsigned *)out;
	nvmlReturn_t rc = slot_dev(dev, out, &d);

	(void)a2, (void)a3;
	if (rc)
		return rc;
	if (!mdev_u32(d, "pcie.atomic_caps_outbound", &outb) ||
	    !mdev_u32(d, "pcie.atomic_caps_inbound", &in))
		return NVML_ERROR_NOT_SUPPORTED;
	caps[0] = outb;
	caps[1] = in;
	return NVML_SUCCESS;
}

static const struct nvml_name_value addressing_modes[] = {
	{ "none", 0 }, { "hmm", 1 }, { "ats", 2 }, { NULL, 0 }
};

/* addressing_mode: none, hmm (x86 host, heterogeneous memory management)
 * or ats (Grace: address translation services over C2C). */
nvmlReturn_t nvml_slot_addressing_mode(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3)
{
	struct mdev *d;
	int mode;
	nvmlReturn_t rc = slot_dev(dev, out, &d);

	(void)a2, (void)a3;
	if (rc)
		return rc;
	rc = nvml_key_enum(d, "addressing_mode", addressing_modes, &mode);
	if (rc == NVML_SUCCESS)
		*(unsigned *)out = (unsigned)mode;
	return rc;
}

/* sparse_operation_mode: enabled / disabled (Hopper and later). */
nvmlReturn_t nvml_slot_sparse_mode(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3)
{
	struct mdev *d;
	unsigned state;
	nvmlReturn_t rc = slot_dev(dev, out, &d);

	(void)a2, (void)a3;
	if (rc)
		return rc;
	rc = nvml_key_feature(d, "sparse_operation_mode", &state);
	if (rc == NVML_SUCCESS)
		*(unsigned *)out = state;
	return rc;
}

/* graphics_voltage_uv: the core rail, e.g. 685000 prints "685.000 mV". */
nvmlReturn_t nvml_slot_graphics_voltage(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3)
{
	struct mdev *d;
	uint32_t uv;
	nvmlReturn_t rc = slot_dev(dev, out, &d);

	(void)a2, (void)a3;
	if (rc)
		return rc;
	if (!mdev_u32(d, "graphics_voltage_uv", &uv))
		return NVML_ERROR_NOT_SUPPORTED;
	*(unsigned *)out = uv;
	return NVML_SUCCESS;
}
