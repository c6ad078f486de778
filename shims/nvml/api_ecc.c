/* ECC modes and counters, SRAM error status, page retirement and row
 * remapping.  An injected ecc_uncorrectable fault makes the uncorrected
 * device-memory counters grow with every guarded call (NVML.md §6). */
#include <stdio.h>
#include <string.h>

#include "shims/nvml/nvml_types.h"

NVML_API(nvmlDeviceGetEccMode, nvmlDevice_t device, unsigned *current, unsigned *pending)
{
	struct mdev *d;
	unsigned cur;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!current || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = nvml_key_feature(d, "ecc.mode_current", &cur)))
		return rc;
	if (nvml_key_feature(d, "ecc.mode_pending", pending) != NVML_SUCCESS)
		*pending = cur;
	*current = cur;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetDefaultEccMode, nvmlDevice_t device, unsigned *mode)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	return rc ? rc : nvml_key_feature(d, "ecc.default_mode", mode);
}

/* Counters exist while ECC is on; a missing counter reads 0. */
static nvmlReturn_t ecc_device(nvmlDevice_t device, bool guarded, struct mdev **d)
{
	unsigned on;
	nvmlReturn_t rc = guarded ? nvml_dev_guarded(device, d) : nvml_dev(device, d);

	if (rc)
		return rc;
	if (nvml_key_feature(*d, "ecc.mode_current", &on) || !on)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

static const char *const scope_names[] = { "volatile", "aggregate" };
static const char *const bit_names[] = { "single_bit", "double_bit" };

static unsigned long long counter(struct mdev *d, unsigned type, unsigned scope,
				  const char *location)
{
	char key[96];
	uint64_t v = 0;

	snprintf(key, sizeof(key), "ecc.errors.%s.%s.%s", scope_names[scope],
		 bit_names[type], location);
	mdev_u64(d, key, &v);
	if (type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED &&
	    (!strcmp(location, "total") || !strcmp(location, "device_memory")))
		v += mdev_ecc_bump(d);
	return v;
}

NVML_API(nvmlDeviceGetTotalEccErrors, nvmlDevice_t device, unsigned type,
	 unsigned scope, unsigned long long *count)
{
	struct mdev *d;
	nvmlReturn_t rc = ecc_device(device, true, &d);

	if (rc)
		return rc;
	if (type > 1 || scope > 1 || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = counter(d, type, scope, "total");
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetDetailedEccErrors, nvmlDevice_t device, unsigned type,
	 unsigned scope, nvmlEccErrorCounts_t *counts)
{
	struct mdev *d;
	nvmlReturn_t rc = ecc_device(device, false, &d);

	if (rc)
		return rc;
	if (type > 1 || scope > 1 || !counts)
		return NVML_ERROR_INVALID_ARGUMENT;
	counts->l1Cache = counter(d, type, scope, "l1_cache");
	counts->l2Cache = counter(d, type, scope, "l2_cache");
	counts->deviceMemory = counter(d, type, scope, "device_memory");
	counts->registerFile = counter(d, type, scope, "register_file");
	return NVML_SUCCESS;
}

static const char *const location_keys[NVML_MEMORY_LOCATION_COUNT] = {
	[NVML_MEMORY_LOCATION_L1_CACHE] = "l1_cache",
	[NVML_MEMORY_LOCATION_L2_CACHE] = "l2_cache",
	[NVML_MEMORY_LOCATION_DEVICE_MEMORY] = "device_memory",
	[NVML_MEMORY_LOCATION_REGISTER_FILE] = "register_file",
	[NVML_MEMORY_LOCATION_TEXTURE_MEMORY] = "texture_memory",
	[NVML_MEMORY_LOCATION_TEXTURE_SHM] = "texture_shm",
	[NVML_MEMORY_LOCATION_CBU] = "cbu",
	[NVML_MEMORY_LOCATION_SRAM] = NULL,	/* from the SRAM block */
};

static unsigned long long sram_count(struct mdev *d, unsigned type, unsigned scope)
{
	static const char *const names[3] = {
		"correctable", "uncorrectable_parity", "uncorrectable_secded",
	};
	char key[96];
	unsigned long long sum = 0;
	uint64_t v;

	for (int i = type ? 1 : 0; i < (type ? 3 : 1); i++) {
		snprintf(key, sizeof(key), "ecc.sram.%s.%s", scope_names[scope], names[i]);
		if (mdev_u64(d, key, &v))
			sum += v;
	}
	return sum;
}

NVML_API(nvmlDeviceGetMemoryErrorCounter, nvmlDevice_t device, unsigned type,
	 unsigned scope, unsigned location, unsigned long long *count)
{
	struct mdev *d;
	nvmlReturn_t rc = ecc_device(device, true, &d);

	if (rc)
		return rc;
	if (type > 1 || scope > 1 || location >= NVML_MEMORY_LOCATION_COUNT || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (location == NVML_MEMORY_LOCATION_SRAM)
		*count = sram_count(d, type, scope);
	else
		*count = counter(d, type, scope, location_keys[location]);
	return NVML_SUCCESS;
}

#define NVML_SRAM_STATUS_V1 NVML_STRUCT_VERSION(sizeof(nvmlEccSramErrorStatus_t), 1)

/* Ampere and later split SRAM errors into parity and SEC-DED. */
NVML_API(nvmlDeviceGetSramEccErrorStatus, nvmlDevice_t device,
	 nvmlEccSramErrorStatus_t *status)
{
	static const struct {
		const char *key;
		size_t offset;
	} fields[] = {
#define F(k, m) { "ecc.sram." k, offsetof(nvmlEccSramErrorStatus_t, m) }
		F("aggregate.uncorrectable_parity", aggregateUncParity),
		F("aggregate.uncorrectable_secded", aggregateUncSecDed),
		F("aggregate.correctable", aggregateCor),
		F("volatile.uncorrectable_parity", volatileUncParity),
		F("volatile.uncorrectable_secded", volatileUncSecDed),
		F("volatile.correctable", volatileCor),
		F("uncorrectable_sources.l2", aggregateUncBucketL2),
		F("uncorrectable_sources.sm", aggregateUncBucketSm),
		F("uncorrectable_sources.pcie", aggregateUncBucketPcie),
		F("uncorrectable_sources.microcontroller", aggregateUncBucketMcu),
		F("uncorrectable_sources.other", aggregateUncBucketOther),
#undef F
	};
	struct mdev *d;
	uint64_t v;
	bool b = false;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (!status)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (nvml_arch(d) < NVML_DEVICE_ARCH_AMPERE)
		return NVML_ERROR_NOT_SUPPORTED;
	if (status->version != NVML_SRAM_STATUS_V1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		unsigned long long x = mdev_u64(d, fields[i].key, &v) ? v : 0;

		memcpy((char *)status + fields[i].offset, &x, sizeof(x));
	}
	mdev_bool(d, "ecc.sram.threshold_exceeded", &b);
	status->bThresholdExceeded = b;
	return NVML_SUCCESS;
}

/* ---- page retirement --------------------------------------------------- */

static const char *const retirement_blocks[] = {
	"retired_pages.single_bit_retirement", "retired_pages.double_bit_retirement",
};

static nvmlReturn_t retired_pages(nvmlDevice_t device, unsigned cause, unsigned *count,
				  unsigned long long *addresses,
				  unsigned long long *timestamps)
{
	struct mdev *d;
	char key[96];
	uint64_t v;
	size_t n;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (cause > 1 || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_has(d, "retired_pages"))
		return NVML_ERROR_NOT_SUPPORTED;
	snprintf(key, sizeof(key), "%s.addresses", retirement_blocks[cause]);
	n = mdev_len(d, key);
	if (*count == 0) {
		*count = (unsigned)n;
		return NVML_SUCCESS;
	}
	if (*count < n || !addresses) {
		*count = (unsigned)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s.addresses[%zu]", retirement_blocks[cause], i);
		addresses[i] = mdev_u64(d, key, &v) ? v : 0;
		if (timestamps)
			timestamps[i] = 0;
	}
	*count = (unsigned)n;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetRetiredPages, nvmlDevice_t device, unsigned cause,
	 unsigned *count, unsigned long long *addresses)
{
	return retired_pages(device, cause, count, addresses, NULL);
}

NVML_API(nvmlDeviceGetRetiredPages_v2, nvmlDevice_t device, unsigned cause,
	 unsigned *count, unsigned long long *addresses, unsigned long long *timestamps)
{
	return retired_pages(device, cause, count, addresses, timestamps);
}

NVML_API(nvmlDeviceGetRetiredPagesPendingStatus, nvmlDevice_t device, unsigned *pending)
{
	struct mdev *d;
	bool a = false, b = false;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_has(d, "retired_pages"))
		return NVML_ERROR_NOT_SUPPORTED;
	mdev_bool(d, "retired_pages.pending_retirement", &a);
	mdev_bool(d, "retired_pages.pending_blacklist", &b);
	*pending = a || b;
	return NVML_SUCCESS;
}

/* ---- row remapping (Ampere and later; absent block = unsupported) ------ */

NVML_API(nvmlDeviceGetRemappedRows, nvmlDevice_t device, unsigned *corrected,
	 unsigned *uncorrected, unsigned *pending, unsigned *failure)
{
	struct mdev *d;
	uint32_t c = 0, u = 0;
	bool p = false, f = false;
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (!corrected || !uncorrected || !pending || !failure)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_has(d, "remapped_rows"))
		return NVML_ERROR_NOT_SUPPORTED;
	mdev_u32(d, "remapped_rows.correctable", &c);
	mdev_u32(d, "remapped_rows.uncorrectable", &u);
	mdev_bool(d, "remapped_rows.pending", &p);
	mdev_bool(d, "remapped_rows.failure_occurred", &f);
	if (mdev_ecc_bump(d)) {
		u++;
		f = true;
	}
	*corrected = c;
	*uncorrected = u;
	*pending = p;
	*failure = f;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetRowRemapperHistogram, nvmlDevice_t device,
	 nvmlRowRemapperHistogramValues_t *values)
{
	static const char *const keys[5] = { "max", "high", "partial", "low", "none" };
	struct mdev *d;
	char key[96];
	uint32_t v[5];
	nvmlReturn_t rc = nvml_dev_guarded(device, &d);

	if (rc)
		return rc;
	if (!values)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_has(d, "remapped_rows"))
		return NVML_ERROR_NOT_SUPPORTED;
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "remapped_rows.availability_histogram.%s", keys[i]);
		if (!mdev_u32(d, key, &v[i]))
			v[i] = 0;
	}
	*values = (nvmlRowRemapperHistogramValues_t){ v[0], v[1], v[2], v[3], v[4] };
	return NVML_SUCCESS;
}
