/* NVLink links: state, version, capabilities, remote ends, error counters.
 *
 * A link's settings come from, in order: nvlink.device_links[] for this
 * GPU, nvlink.links[] (every GPU), nvlink.defaults; links_per_gpu links
 * exist.  Unless a link names its remote end, it goes to the NVSwitch
 * nvlink.switches[link % n] when switches are listed, else to an unnamed
 * switch. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

struct nvml_link {
	bool active;
	unsigned remote_type;
	const char *remote_bdf;	/* NULL: unknown */
	unsigned remote_device_id;
};

/* The device_links[] entry for this GPU, -1 when there is none. */
static int device_links_entry(struct mdev *d)
{
	char key[64];
	uint64_t idx;
	size_t n = engine_len("nvlink.device_links");

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "nvlink.device_links[%zu].index", i);
		if (engine_u64(key, &idx) && idx == mdev_index(d))
			return (int)i;
	}
	return -1;
}

static unsigned link_count(struct mdev *d)
{
	char key[64];
	uint64_t n = 0;
	int e = device_links_entry(d);

	if (e >= 0) {
		snprintf(key, sizeof(key), "nvlink.device_links[%d].links", e);
		if (engine_len(key))
			return (unsigned)engine_len(key);
	}
	engine_u64("nvlink.links_per_gpu", &n);
	return n > NVML_NVLINK_MAX_LINKS ? NVML_NVLINK_MAX_LINKS : (unsigned)n;
}

/* The list entry (prefix "<list>[i]") describing link `link`, if any:
 * matched by its "link" number, else by position. */
static bool link_entry(const char *list, unsigned link, char *prefix, size_t size)
{
	char key[96];
	uint64_t v;
	size_t n = engine_len(list);

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s[%zu].link", list, i);
		if (engine_u64(key, &v) && v == link) {
			snprintf(prefix, size, "%s[%zu]", list, i);
			return true;
		}
	}
	if (link < n) {
		snprintf(key, sizeof(key), "%s[%u].link", list, link);
		if (!engine_u64(key, &v)) {
			snprintf(prefix, size, "%s[%u]", list, link);
			return true;
		}
	}
	return false;
}

static bool key_exists(const char *key)
{
	const char *s;
	uint64_t u;
	bool b;

	return engine_str(key, &s) || engine_u64(key, &u) || engine_bool(key, &b);
}

/* Where a setting of one link lives: device_links, then links, then
 * defaults.  Writes the full key; false when no source sets it. */
static bool link_key(struct mdev *d, unsigned link, const char *field, char *key,
		     size_t size)
{
	char list[64], prefix[96];
	int e = device_links_entry(d);

	if (e >= 0) {
		snprintf(list, sizeof(list), "nvlink.device_links[%d].links", e);
		if (link_entry(list, link, prefix, sizeof(prefix))) {
			snprintf(key, size, "%s.%s", prefix, field);
			if (key_exists(key))
				return true;
		}
	}
	if (link_entry("nvlink.links", link, prefix, sizeof(prefix))) {
		snprintf(key, size, "%s.%s", prefix, field);
		if (key_exists(key))
			return true;
	}
	snprintf(key, size, "nvlink.defaults.%s", field);
	return key_exists(key);
}

static bool link_str(struct mdev *d, unsigned link, const char *field, const char **out)
{
	char key[128];

	return link_key(d, link, field, key, sizeof(key)) && engine_str(key, out);
}

static const struct nvml_name_value link_states[] = {
	{ "active", 1 }, { "up", 1 }, { "enabled", 1 }, { "true", 1 },
	{ "inactive", 0 }, { "down", 0 }, { "disabled", 0 }, { "false", 0 },
	{ "sleep", 0 }, { NULL, 0 }
};

static const struct nvml_name_value remote_types[] = {
	{ "gpu", NVML_NVLINK_DEVICE_TYPE_GPU },
	{ "switch", NVML_NVLINK_DEVICE_TYPE_SWITCH },
	{ "nvswitch", NVML_NVLINK_DEVICE_TYPE_SWITCH },
	{ "ibmnpu", NVML_NVLINK_DEVICE_TYPE_IBMNPU },
	{ NULL, 0 }
};

static nvmlReturn_t link_info(struct mdev *d, unsigned link, struct nvml_link *l)
{
	char key[64], key2[128];
	const char *s;
	int v;
	uint64_t idx, id;
	size_t switches = engine_len("nvlink.switches");

	if (link >= link_count(d))
		return link < NVML_NVLINK_MAX_LINKS ? NVML_ERROR_NOT_SUPPORTED
						    : NVML_ERROR_INVALID_ARGUMENT;
	memset(l, 0, sizeof(*l));
	l->active = true;
	if (link_key(d, link, "state", key2, sizeof(key2))) {
		bool b;

		if (engine_bool(key2, &b))
			l->active = b;
		else if (engine_str(key2, &s) && nvml_lookup(link_states, s, &v))
			l->active = v;
	}
	l->remote_type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
	if (link_str(d, link, "remote_device_type", &s) && nvml_lookup(remote_types, s, &v))
		l->remote_type = (unsigned)v;
	if (link_str(d, link, "remote_pci_bus_id", &s)) {
		l->remote_bdf = s;
	} else if (link_key(d, link, "remote_index", key2, sizeof(key2)) &&
		   engine_u64(key2, &idx) && idx < ENG_MAX_DEVICES &&
		   engine_device((unsigned)idx)) {
		l->remote_type = NVML_NVLINK_DEVICE_TYPE_GPU;
		l->remote_bdf = mdev_bus_id(engine_device((unsigned)idx));
	} else if (l->remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH && switches) {
		snprintf(key, sizeof(key), "nvlink.switches[%zu].bdf", link % switches);
		if (engine_str(key, &s))
			l->remote_bdf = s;
		snprintf(key, sizeof(key), "nvlink.switches[%zu].device_id", link % switches);
		if (engine_u64(key, &id))
			l->remote_device_id = (unsigned)id;
	}
	return NVML_SUCCESS;
}

/* NVLink links between two GPUs: direct links to b, or (through the
 * switch fabric) as many as both have active switch links. */
unsigned nvml_nvlink_count(struct mdev *a, struct mdev *b)
{
	struct nvml_link l;
	unsigned direct = 0, sa = 0, sb = 0, n;

	if (a == b)
		return 0;
	n = link_count(a);
	for (unsigned i = 0; i < n; i++) {
		if (link_info(a, i, &l) || !l.active)
			continue;
		if (l.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH)
			sa++;
		else if (l.remote_type == NVML_NVLINK_DEVICE_TYPE_GPU && l.remote_bdf &&
			 !strcasecmp(l.remote_bdf, mdev_bus_id(b)))
			direct++;
	}
	n = link_count(b);
	for (unsigned i = 0; i < n; i++)
		if (!link_info(b, i, &l) && l.active &&
		    l.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH)
			sb++;
	return direct + (sa < sb ? sa : sb);
}

bool nvml_nvlink_peers(struct mdev *a, struct mdev *b)
{
	return nvml_nvlink_count(a, b) > 0;
}

/* Common checks of the per-link getters. */
static nvmlReturn_t link_device(nvmlDevice_t device, unsigned link, void *out,
				struct mdev **d, struct nvml_link *l)
{
	nvmlReturn_t rc = nvml_dev(device, d);

	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	return link_info(*d, link, l);
}

NVML_API(nvmlDeviceGetNvLinkState, nvmlDevice_t device, unsigned link, unsigned *active)
{
	struct mdev *d;
	struct nvml_link l;
	nvmlReturn_t rc = link_device(device, link, active, &d, &l);

	if (rc == NVML_SUCCESS)
		*active = l.active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return rc;
}

NVML_API(nvmlDeviceGetNvLinkVersion, nvmlDevice_t device, unsigned link, unsigned *version)
{
	struct mdev *d;
	struct nvml_link l;
	uint64_t v;
	nvmlReturn_t rc = link_device(device, link, version, &d, &l);

	if (rc)
		return rc;
	if (!engine_u64("nvlink.version", &v))
		return NVML_ERROR_NOT_SUPPORTED;
	*version = (unsigned)v;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetNvLinkCapability, nvmlDevice_t device, unsigned link,
	 unsigned capability, unsigned *result)
{
	static const bool caps[] = {
		[NVML_NVLINK_CAP_P2P_SUPPORTED] = true,
		[NVML_NVLINK_CAP_SYSMEM_ACCESS] = false,
		[NVML_NVLINK_CAP_P2P_ATOMICS] = true,
		[NVML_NVLINK_CAP_SYSMEM_ATOMICS] = false,
		[NVML_NVLINK_CAP_SLI_BRIDGE] = false,
		[NVML_NVLINK_CAP_VALID] = true,
	};
	struct mdev *d;
	struct nvml_link l;
	nvmlReturn_t rc = link_device(device, link, result, &d, &l);

	if (rc)
		return rc;
	if (capability >= sizeof(caps) / sizeof(caps[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	*result = caps[capability] && l.active;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetNvLinkRemoteDeviceType, nvmlDevice_t device, unsigned link,
	 unsigned *type)
{
	struct mdev *d;
	struct nvml_link l;
	nvmlReturn_t rc = link_device(device, link, type, &d, &l);

	if (rc == NVML_SUCCESS)
		*type = l.remote_type;
	return rc;
}

NVML_API(nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlDevice_t device, unsigned link,
	 nvmlPciInfo_t *pci)
{
	struct mdev *d, *peer;
	struct nvml_link l;
	uint32_t id = 0, sub = 0;
	nvmlReturn_t rc = link_device(device, link, pci, &d, &l);

	if (rc)
		return rc;
	if (!l.active || !l.remote_bdf)
		return NVML_ERROR_NOT_SUPPORTED;
	id = l.remote_device_id;
	peer = engine_device_by_bus_id(l.remote_bdf);
	if (peer) {
		mdev_u32(peer, "pci.device_id", &id);
		mdev_u32(peer, "pci.subsystem_id", &sub);
	}
	nvml_fill_pci(pci, l.remote_bdf, id, sub);
	return NVML_SUCCESS;
}
NVML_ALIAS(nvmlDeviceGetNvLinkRemotePciInfo, nvmlDeviceGetNvLinkRemotePciInfo_v2);

/* Injected DL errors grow at nvlink_error.rate per second (since this
 * process first asked) on the listed links, or on all when none listed. */
static struct timespec error_epoch;

unsigned long long nvml_nvlink_errors(struct mdev *d, unsigned link)
{
	char key[64];
	double rate = 0;
	uint64_t v;
	struct timespec now;
	size_t n = mdev_len(d, "nvlink_error.links");
	bool listed = n == 0;

	if (!mdev_double(d, "nvlink_error.rate", &rate) || rate <= 0)
		return 0;
	for (size_t i = 0; i < n && !listed; i++) {
		snprintf(key, sizeof(key), "nvlink_error.links[%zu]", i);
		listed = mdev_u64(d, key, &v) && v == link;
	}
	if (!listed)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!error_epoch.tv_sec)
		error_epoch = now;
	return (unsigned long long)(rate * (double)(now.tv_sec - error_epoch.tv_sec + 1));
}

NVML_API(nvmlDeviceGetNvLinkErrorCounter, nvmlDevice_t device, unsigned link,
	 unsigned counter, unsigned long long *value)
{
	/* Share of the injected errors each counter shows. */
	static const unsigned divisor[] = {
		[NVML_NVLINK_ERROR_DL_REPLAY] = 1, [NVML_NVLINK_ERROR_DL_RECOVERY] = 10,
		[NVML_NVLINK_ERROR_DL_CRC_FLIT] = 1, [NVML_NVLINK_ERROR_DL_CRC_DATA] = 2,
		[NVML_NVLINK_ERROR_DL_ECC_DATA] = 4,
	};
	struct mdev *d;
	struct nvml_link l;
	nvmlReturn_t rc = link_device(device, link, value, &d, &l);

	if (rc)
		return rc;
	if (counter >= sizeof(divisor) / sizeof(divisor[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	*value = l.active ? nvml_nvlink_errors(d, link) / divisor[counter] : 0;
	return NVML_SUCCESS;
}

/* NVLink-C2C to a Grace CPU (GB200/GB300): enabled, else NOT_SUPPORTED,
 * which nvidia-smi 580 renders as "GPU C2C Mode: N/A". */
NVML_API(nvmlDeviceGetC2cModeInfoV, nvmlDevice_t device, unsigned *is_c2c_enabled)
{
	struct mdev *d;
	bool on = false;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!is_c2c_enabled)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!engine_bool("nvlink.c2c_enabled", &on) || !on)
		return NVML_ERROR_NOT_SUPPORTED;
	*is_c2c_enabled = 1;
	return NVML_SUCCESS;
}
