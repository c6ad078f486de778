/* nvmlDeviceGetFieldValues.  nvidia-smi reads each element's nvmlReturn and
 * ignores the function's result, so every element gets one, NOT_SUPPORTED
 * included, and a value only with SUCCESS. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

struct field;
typedef nvmlReturn_t (*field_fn)(struct mdev *d, const struct field *f, unsigned scope,
				 nvmlFieldValue_t *v);

struct field {
	unsigned first, last;	/* id range */
	field_fn fn;
	const char *key;
	int arg;
};

static nvmlReturn_t put_u32(nvmlFieldValue_t *v, unsigned x)
{
	v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
	v->value.ullVal = 0;
	v->value.uiVal = x;
	return NVML_SUCCESS;
}

static nvmlReturn_t put_u64(nvmlFieldValue_t *v, unsigned long long x)
{
	v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
	v->value.ullVal = x;
	return NVML_SUCCESS;
}

static nvmlReturn_t put_s64(nvmlFieldValue_t *v, long long x)
{
	v->valueType = NVML_VALUE_TYPE_SIGNED_LONG_LONG;
	v->value.sllVal = x;	/* low word doubles as siVal */
	return NVML_SUCCESS;
}

/* A numeric key (uint, or ull when arg is set). */
static nvmlReturn_t f_key(struct mdev *d, const struct field *f, unsigned scope,
			  nvmlFieldValue_t *v)
{
	uint64_t x;

	if (!mdev_u64(d, f->key, &x))
		return NVML_ERROR_NOT_SUPPORTED;
	return f->arg ? put_u64(v, x) : put_u32(v, (unsigned)x);
}

/* Power ids: GPU scope (0) from power.*; the module scope (1, Grace
 * superchips) from module_power.* and N/A where the profile has none. */
static nvmlReturn_t f_power(struct mdev *d, const struct field *f, unsigned scope,
			    nvmlFieldValue_t *v)
{
	char key[64];
	uint64_t x;

	if (scope == 1) {
		snprintf(key, sizeof(key), "module_%s", f->key);
		if (!mdev_u64(d, key, &x) &&
		    !(f->arg && mdev_u64(d, "module_power.enforced_limit_mw", &x)))
			return NVML_ERROR_NOT_SUPPORTED;
		return put_u32(v, (unsigned)x);
	}
	if (scope != 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!mdev_u64(d, f->key, &x) &&
	    !(f->arg && mdev_u64(d, "power.enforced_limit_mw", &x)))
		return NVML_ERROR_NOT_SUPPORTED;
	return put_u32(v, (unsigned)x);
}

/* A non-zero temperature (0 stands for "no sensor" in profiles). */
static nvmlReturn_t f_temp(struct mdev *d, const struct field *f, unsigned scope,
			   nvmlFieldValue_t *v)
{
	uint64_t x;

	if (!mdev_u64(d, f->key, &x) || x == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	return put_u32(v, (unsigned)x);
}

static nvmlReturn_t f_feature(struct mdev *d, const struct field *f, unsigned scope,
			      nvmlFieldValue_t *v)
{
	unsigned on;

	if (nvml_key_feature(d, f->key, &on))
		return NVML_ERROR_NOT_SUPPORTED;
	return put_u32(v, on);
}

/* Always 0 on a healthy simulated GPU (reset/drain status, rollovers). */
static nvmlReturn_t f_zero(struct mdev *d, const struct field *f, unsigned scope,
			   nvmlFieldValue_t *v)
{
	(void)d, (void)f, (void)scope;
	return put_u32(v, 0);
}

/* ECC totals: arg = type << 1 | scope. */
static nvmlReturn_t f_ecc_total(struct mdev *d, const struct field *f, unsigned scope,
				nvmlFieldValue_t *v)
{
	unsigned long long n;
	nvmlReturn_t rc;

	rc = nvmlDeviceGetTotalEccErrors(d, (unsigned)f->arg >> 1, (unsigned)f->arg & 1, &n);
	return rc ? rc : put_u64(v, n);
}

/* Per-location ECC ids 7-28; arg = scope * 16 + position in the scope
 * (SBE/DBE pairs of L1, L2, device, register, texture, then CBU). */
static nvmlReturn_t f_ecc_location(struct mdev *d, const struct field *f, unsigned scope,
				   nvmlFieldValue_t *v)
{
	static const unsigned char locs[] = {
		NVML_MEMORY_LOCATION_L1_CACHE, NVML_MEMORY_LOCATION_L2_CACHE,
		NVML_MEMORY_LOCATION_DEVICE_MEMORY, NVML_MEMORY_LOCATION_REGISTER_FILE,
		NVML_MEMORY_LOCATION_TEXTURE_MEMORY,
	};
	unsigned ecc_scope = (unsigned)f->arg / 16, j = (unsigned)f->arg % 16;
	unsigned long long n;
	nvmlReturn_t rc;

	if (j == 10)
		rc = nvmlDeviceGetMemoryErrorCounter(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						     ecc_scope, NVML_MEMORY_LOCATION_CBU, &n);
	else
		rc = nvmlDeviceGetMemoryErrorCounter(d, j % 2, ecc_scope, locs[j / 2], &n);
	return rc ? rc : put_u64(v, n);
}

static nvmlReturn_t f_retired(struct mdev *d, const struct field *f, unsigned scope,
			      nvmlFieldValue_t *v)
{
	unsigned n = 0;
	nvmlReturn_t rc;

	rc = nvmlDeviceGetRetiredPages(d, (unsigned)f->arg, &n, NULL);
	return rc ? rc : put_u32(v, n);
}

static nvmlReturn_t f_retired_pending(struct mdev *d, const struct field *f,
				      unsigned scope, nvmlFieldValue_t *v)
{
	unsigned p;
	nvmlReturn_t rc;

	(void)f, (void)scope;
	rc = nvmlDeviceGetRetiredPagesPendingStatus(d, &p);
	return rc ? rc : put_u32(v, p);
}

/* Remapped rows: arg picks corrected, uncorrected, pending, failure. */
static nvmlReturn_t f_remapped(struct mdev *d, const struct field *f, unsigned scope,
			       nvmlFieldValue_t *v)
{
	unsigned r[4];
	nvmlReturn_t rc;

	rc = nvmlDeviceGetRemappedRows(d, &r[0], &r[1], &r[2], &r[3]);
	return rc ? rc : put_u32(v, r[f->arg]);
}

/* T.Limit margins (Ada and later): of a threshold key, else (arg set) the
 * max operating limit itself, 0 by definition; memory's (arg 2) only where
 * the board has a memory sensor. */
static nvmlReturn_t f_tlimit(struct mdev *d, const struct field *f, unsigned scope,
			     nvmlFieldValue_t *v)
{
	uint64_t mem;
	int m;
	nvmlReturn_t rc;

	if (!nvml_reports_tlimit(d))
		return NVML_ERROR_NOT_SUPPORTED;
	if (f->arg == 2 && (!mdev_u64(d, "thermal.temperature_memory_c", &mem) || !mem))
		return NVML_ERROR_NOT_SUPPORTED;
	if (f->arg)
		return put_s64(v, 0);
	rc = nvml_tlimit_margin(d, f->key, &m);
	return rc ? rc : put_s64(v, m);
}

/* Clock event reason counters, microseconds in the profile, ns here. */
static nvmlReturn_t f_counter_ns(struct mdev *d, const struct field *f, unsigned scope,
				 nvmlFieldValue_t *v)
{
	uint64_t us = 0;

	mdev_u64(d, f->key, &us);
	return put_u64(v, us * 1000ULL);
}

/* ---- NVLink ids (scope: the link for per-link ids) ---------------------- */

static unsigned links_of(void)
{
	uint64_t n = 0;

	engine_u64("nvlink.links_per_gpu", &n);
	return n > NVML_NVLINK_MAX_LINKS ? NVML_NVLINK_MAX_LINKS : (unsigned)n;
}

static nvmlReturn_t link_active(struct mdev *d, unsigned link)
{
	unsigned on;
	nvmlReturn_t rc = nvmlDeviceGetNvLinkState(d, link, &on);

	return rc ? rc : on ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* Speed per link: arg is the link for ids 84-89/132-137, -1 = the common
 * speed (90), -2 = the link named by scope (164). */
static nvmlReturn_t f_link_speed(struct mdev *d, const struct field *f, unsigned scope,
				 nvmlFieldValue_t *v)
{
	uint64_t mbps;
	unsigned link = f->arg == -2 ? scope : f->arg < 0 ? 0 : (unsigned)f->arg;
	nvmlReturn_t rc = link_active(d, link);

	if (rc)
		return rc;
	if (!engine_u64("nvlink.bandwidth_per_link_mbps", &mbps))
		return NVML_ERROR_NOT_SUPPORTED;
	return put_u32(v, (unsigned)mbps);
}

static nvmlReturn_t f_link_count(struct mdev *d, const struct field *f, unsigned scope,
				 nvmlFieldValue_t *v)
{
	(void)d, (void)f, (void)scope;
	return links_of() ? put_u32(v, links_of()) : NVML_ERROR_NOT_SUPPORTED;
}

/* 165 (arg 0): the state of link scope; 166 (arg 1): its version. */
static nvmlReturn_t f_link_u32(struct mdev *d, const struct field *f, unsigned scope,
			       nvmlFieldValue_t *v)
{
	unsigned x;
	nvmlReturn_t rc = f->arg ? nvmlDeviceGetNvLinkVersion(d, scope, &x)
				 : nvmlDeviceGetNvLinkState(d, scope, &x);

	return rc ? rc : put_u32(v, x);
}

/* DL error counters 161-163 (arg: nvmlNvLinkErrorCounter_t): the link
 * named by scope, or all active links when scope is past the last. */
static nvmlReturn_t f_link_errors(struct mdev *d, const struct field *f, unsigned scope,
				  nvmlFieldValue_t *v)
{
	unsigned long long n, sum = 0;
	unsigned links = links_of();

	if (!links)
		return NVML_ERROR_NOT_SUPPORTED;
	for (unsigned l = scope < links ? scope : 0; l < (scope < links ? scope + 1 : links); l++)
		if (nvmlDeviceGetNvLinkErrorCounter(d, l, (unsigned)f->arg, &n) == NVML_SUCCESS)
			sum += n;
	return put_u64(v, sum);
}

static nvmlReturn_t f_c2c_count(struct mdev *d, const struct field *f, unsigned scope,
				nvmlFieldValue_t *v)
{
	bool on = false;
	uint64_t n = 1;

	(void)d, (void)scope;
	if (!engine_bool("nvlink.c2c_enabled", &on) || !on)
		return NVML_ERROR_NOT_SUPPORTED;
	engine_u64("nvlink.c2c_links", &n);
	return put_u32(v, f->arg ? 1 : (unsigned)n);
}

#define CTR "clocks_throttle_reasons.counters."

static const struct field fields[] = {
	{ 1, 1, f_feature, "ecc.mode_current", 0 },
	{ 2, 2, f_feature, "ecc.mode_pending", 0 },
	{ 3, 3, f_ecc_total, NULL, 0 << 1 | 0 },
	{ 4, 4, f_ecc_total, NULL, 1 << 1 | 0 },
	{ 5, 5, f_ecc_total, NULL, 0 << 1 | 1 },
	{ 6, 6, f_ecc_total, NULL, 1 << 1 | 1 },
	{ 29, 29, f_retired, NULL, 0 },
	{ 30, 30, f_retired, NULL, 1 },
	{ 31, 31, f_retired_pending, NULL, 0 },
	{ 74, 74, f_counter_ns, CTR "sw_power_cap_us", 0 },
	{ 76, 76, f_counter_ns, CTR "sync_boost_us", 0 },
	{ 82, 82, f_temp, "thermal.temperature_memory_c", 0 },
	{ 83, 83, f_key, "power.total_energy_consumption_mj", 1 },
	{ 84, 89, f_link_speed, NULL, 0 },	/* arg fixed up per id */
	{ 90, 90, f_link_speed, NULL, -1 },
	{ 91, 91, f_link_count, NULL, 0 },
	{ 92, 93, f_zero, NULL, 0 },
	{ 94, 94, f_key, "pcie.replay_counter", 0 },
	{ 95, 95, f_zero, NULL, 0 },
	{ 132, 137, f_link_speed, NULL, 6 },
	{ 142, 142, f_remapped, NULL, 0 },
	{ 143, 143, f_remapped, NULL, 1 },
	{ 144, 144, f_remapped, NULL, 2 },
	{ 145, 145, f_remapped, NULL, 3 },
	{ 161, 161, f_link_errors, NULL, NVML_NVLINK_ERROR_DL_REPLAY },
	{ 162, 162, f_link_errors, NULL, NVML_NVLINK_ERROR_DL_RECOVERY },
	{ 163, 163, f_link_errors, NULL, NVML_NVLINK_ERROR_DL_CRC_FLIT },
	{ 164, 164, f_link_speed, NULL, -2 },
	{ 165, 165, f_link_u32, NULL, 0 },
	{ 166, 166, f_link_u32, NULL, 1 },
	{ 170, 170, f_c2c_count, NULL, 0 },
	{ 171, 171, f_c2c_count, NULL, 1 },
	{ 185, 185, f_power, "power.current_draw_mw", 0 },
	{ 186, 186, f_power, "power.current_draw_mw", 0 },
	{ 187, 187, f_power, "power.min_limit_mw", 0 },
	{ 188, 188, f_power, "power.max_limit_mw", 0 },
	{ 189, 189, f_power, "power.default_limit_mw", 0 },
	{ 190, 190, f_power, "power.enforced_limit_mw", 0 },
	{ 191, 191, f_key, "power.total_energy_consumption_mj", 1 },
	{ 192, 192, f_power, "power.limit_mw", 1 },
	{ 193, 193, f_tlimit, "thermal.shutdown_threshold_c", 0 },
	{ 194, 194, f_tlimit, "thermal.slowdown_threshold_c", 0 },
	{ 195, 195, f_tlimit, NULL, 2 },
	{ 196, 196, f_tlimit, NULL, 1 },
	{ 226, 227, f_zero, NULL, 0 },
	{ 251, 251, f_counter_ns, CTR "sw_thermal_slowdown_us", 0 },
	{ 252, 252, f_counter_ns, CTR "hw_thermal_slowdown_us", 0 },
	{ 253, 253, f_counter_ns, CTR "hw_power_brake_slowdown_us", 0 },
};

/* ECC per-location ids: 7..17 volatile, 18..28 aggregate. */
static bool ecc_location_field(unsigned id, struct field *out)
{
	if (id < 7 || id > 28)
		return false;
	*out = (struct field){ id, id, f_ecc_location, NULL,
			       (int)((id - 7) / 11 * 16 + (id - 7) % 11) };
	return true;
}

static void field_value(struct mdev *d, nvmlFieldValue_t *v, long long now)
{
	struct field f = { 0, 0, NULL, NULL, 0 };

	v->timestamp = now;
	v->latencyUsec = 0;
	if (!ecc_location_field(v->fieldId, &f)) {
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			if (v->fieldId >= fields[i].first && v->fieldId <= fields[i].last) {
				f = fields[i];
				if (f.fn == f_link_speed && f.arg >= 0)
					f.arg += (int)(v->fieldId - f.first);
				break;
			}
		}
	}
	v->nvmlReturn = f.fn ? f.fn(d, &f, v->scopeId, v) : NVML_ERROR_NOT_SUPPORTED;
}

NVML_API(nvmlDeviceGetFieldValues, nvmlDevice_t device, int count, nvmlFieldValue_t *values)
{
	struct mdev *d = NULL;
	struct timespec ts;
	long long now;
	nvmlReturn_t rc;

	if (count < 0 || (count > 0 && !values))
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = nvml_dev(device, &d);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
	for (int i = 0; i < count; i++) {
		if (rc) {
			values[i].timestamp = now;
			values[i].latencyUsec = 0;
			values[i].nvmlReturn = rc;
			continue;
		}
		field_value(d, &values[i], now);
	}
	return rc;
}
