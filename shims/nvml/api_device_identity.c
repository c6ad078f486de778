/* Device identity: names, ids, versions and PCI information. */
#include <string.h>

#include "shims/nvml/nvml_types.h"

/* Identity strings straight from a profile key. */
#define STRING_GETTER(fn, key) \
	NVML_API(fn, nvmlDevice_t device, char *buf, unsigned length) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = nvml_dev(device, &d); \
		return rc ? rc : nvml_key_str(d, key, buf, length); \
	}

STRING_GETTER(nvmlDeviceGetName, "name")
STRING_GETTER(nvmlDeviceGetSerial, "serial")
STRING_GETTER(nvmlDeviceGetVbiosVersion, "vbios_version")
STRING_GETTER(nvmlDeviceGetBoardPartNumber, "board_part_number")
STRING_GETTER(nvmlDeviceGetInforomImageVersion, "inforom.image_version")

NVML_API(nvmlDeviceGetUUID, nvmlDevice_t device, char *uuid, unsigned length)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_copy_str(uuid, length, mdev_uuid(d));
}

/* The caller's buffer is NVML_GSP_FIRMWARE_VERSION_BUF_SIZE (64) bytes. */
NVML_API(nvmlDeviceGetGspFirmwareVersion, nvmlDevice_t device, char *version)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_str(d, "gsp_firmware.version", version, 64);
}

static const char *const inforom_keys[] = {
	[NVML_INFOROM_OEM] = "inforom.oem_object",
	[NVML_INFOROM_ECC] = "inforom.ecc_object",
	[NVML_INFOROM_POWER] = "inforom.pwr_object",
};

NVML_API(nvmlDeviceGetInforomVersion, nvmlDevice_t device, unsigned object,
	 char *version, unsigned length)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (object >= sizeof(inforom_keys) / sizeof(inforom_keys[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_key_str(d, inforom_keys[object], version, length);
}

NVML_API(nvmlDeviceValidateInforom, nvmlDevice_t device)
{
	struct mdev *d;

	return nvml_dev(device, &d);
}

static const struct nvml_name_value brand_names[] = {
	{ "nvidia", NVML_BRAND_NVIDIA }, { "tesla", NVML_BRAND_TESLA },
	{ "quadro", NVML_BRAND_QUADRO }, { "geforce", NVML_BRAND_GEFORCE },
	{ "titan", NVML_BRAND_TITAN }, { "nvs", NVML_BRAND_NVS },
	{ "grid", NVML_BRAND_GRID }, { "nvidia_rtx", NVML_BRAND_NVIDIA_RTX },
	{ "quadro_rtx", NVML_BRAND_QUADRO_RTX }, { "geforce_rtx", NVML_BRAND_GEFORCE_RTX },
	{ "titan_rtx", NVML_BRAND_TITAN_RTX }, { "nvidia_vapps", NVML_BRAND_NVIDIA_VAPPS },
	{ "nvidia_vpc", NVML_BRAND_NVIDIA_VPC }, { "nvidia_vcs", NVML_BRAND_NVIDIA_VCS },
	{ "nvidia_vws", NVML_BRAND_NVIDIA_VWS },
	{ "nvidia_cloud_gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING },
	{ NULL, 0 }
};

NVML_API(nvmlDeviceGetBrand, nvmlDevice_t device, int *type)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!type)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (nvml_key_enum(d, "brand", brand_names, type) != NVML_SUCCESS)
		*type = NVML_BRAND_UNKNOWN;	/* topo -m needs this to succeed */
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetArchitecture, nvmlDevice_t device, unsigned *arch)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!arch)
		return NVML_ERROR_INVALID_ARGUMENT;
	*arch = (unsigned)nvml_arch(d);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetCudaComputeCapability, nvmlDevice_t device, int *major, int *minor)
{
	struct mdev *d;
	uint32_t ma, mi;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u32(d, "compute_capability.major", &ma) ||
	    !mdev_u32(d, "compute_capability.minor", &mi))
		return NVML_ERROR_NOT_SUPPORTED;
	*major = (int)ma;
	*minor = (int)mi;
	return NVML_SUCCESS;
}

/* Unique per device and non-zero: the bus/device/function number unless
 * the profile names one (real boards report e.g. 0x1a00 for bus 1a). */
NVML_API(nvmlDeviceGetBoardId, nvmlDevice_t device, unsigned *board_id)
{
	struct mdev *d;
	unsigned dom, bus, dev, fn;
	uint32_t v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!board_id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mdev_u32(d, "board_id", &v)) {
		*board_id = v;
		return NVML_SUCCESS;
	}
	if (!nvml_parse_bdf(mdev_bus_id(d), &dom, &bus, &dev, &fn))
		return NVML_ERROR_NOT_SUPPORTED;
	v = dom << 16 | bus << 8 | dev << 3 | fn;
	*board_id = v ? v : mdev_index(d) + 1;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetMultiGpuBoard, nvmlDevice_t device, unsigned *multi)
{
	struct mdev *d;
	bool b = false;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!multi)
		return NVML_ERROR_INVALID_ARGUMENT;
	mdev_bool(d, "multi_gpu_board", &b);
	*multi = b;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetModuleId, nvmlDevice_t device, unsigned *module_id)
{
	struct mdev *d;
	uint32_t v;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!module_id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u32(d, "platform.module_id", &v) && !mdev_u32(d, "module_id", &v))
		v = mdev_index(d) + 1;
	*module_id = v;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetNumGpuCores, nvmlDevice_t device, unsigned *cores)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_u32(d, "num_gpu_cores", cores);
}

NVML_API(nvmlDeviceGetBusType, nvmlDevice_t device, unsigned *type)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!type)
		return NVML_ERROR_INVALID_ARGUMENT;
	*type = NVML_BUS_TYPE_PCIE;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetIrqNum, nvmlDevice_t device, unsigned *irq)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_u32(d, "irq", irq);
}

NVML_API(nvmlDeviceGetGspFirmwareMode, nvmlDevice_t device, unsigned *is_enabled,
	 unsigned *default_mode)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!is_enabled || !default_mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = nvml_key_feature(d, "gsp_firmware.mode", is_enabled);
	if (rc == NVML_SUCCESS)
		*default_mode = *is_enabled;
	return rc;
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	struct mdev *d;
	uint32_t dev_id = 0, subsys = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	mdev_u32(d, "pci.device_id", &dev_id);
	mdev_u32(d, "pci.subsystem_id", &subsys);
	nvml_fill_pci(pci, mdev_bus_id(d), dev_id, subsys);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetPciInfo_v3, nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return pci_info(device, pci);
}

/* v1/v2 layout: the 16-byte bus id, five words, then four reserved words
 * (52 bytes) where v3 has the 32-byte bus id. */
NVML_API(nvmlDeviceGetPciInfo_v2, nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlPciInfo_t full;
	nvmlReturn_t rc = pci ? pci_info(device, &full) : pci_info(device, NULL);

	if (rc)
		return rc;
	memset(pci, 0, offsetof(nvmlPciInfo_t, busId) + 16);
	memcpy(pci, &full, offsetof(nvmlPciInfo_t, busId));
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetPciInfo, nvmlDeviceGetPciInfo_v2);
NVML_ALIAS(nvmlDeviceGetPciInfo_v1, nvmlDeviceGetPciInfo_v2);
