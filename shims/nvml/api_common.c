/* Helpers shared by the NVML entry points: handle checks in NVML's order,
 * string copies with NVML's size rule, and profile-value conversions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shims/nvml/nvml_types.h"

nvmlReturn_t nvml_ready(void)
{
	return engine_initialized() ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvml_dev(nvmlDevice_t h, struct mdev **d)
{
	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!h || !engine_is_device(h))
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = h;
	return mdev_lost(h);
}

nvmlReturn_t nvml_dev_guarded(nvmlDevice_t h, struct mdev **d)
{
	if (!engine_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!h || !engine_is_device(h))
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = h;
	return mdev_guard(h);
}

nvmlReturn_t nvml_copy_str(char *buf, unsigned len, const char *s)
{
	size_t n = strlen(s);

	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n + 1);
	return NVML_SUCCESS;
}

static bool is_na(const char *s)
{
	return !s || !*s || !strcasecmp(s, "N/A");
}

nvmlReturn_t nvml_key_str(struct mdev *d, const char *key, char *buf, unsigned len)
{
	const char *s;

	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_str(d, key, &s) || is_na(s))
		return NVML_ERROR_NOT_SUPPORTED;
	return nvml_copy_str(buf, len, s);
}

nvmlReturn_t nvml_key_u32(struct mdev *d, const char *key, unsigned *out)
{
	uint32_t v;

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u32(d, key, &v))
		return NVML_ERROR_NOT_SUPPORTED;
	*out = v;
	return NVML_SUCCESS;
}

nvmlReturn_t nvml_key_u64(struct mdev *d, const char *key, unsigned long long *out)
{
	uint64_t v;

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_u64(d, key, &v))
		return NVML_ERROR_NOT_SUPPORTED;
	*out = v;
	return NVML_SUCCESS;
}

bool nvml_lookup(const struct nvml_name_value *tab, const char *name, int *out)
{
	for (; tab->name; tab++) {
		if (!strcasecmp(tab->name, name)) {
			*out = tab->value;
			return true;
		}
	}
	return false;
}

nvmlReturn_t nvml_key_enum(struct mdev *d, const char *key,
			   const struct nvml_name_value *tab, int *out)
{
	const char *s;

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_str(d, key, &s) || !nvml_lookup(tab, s, out))
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

static const struct nvml_name_value feature_names[] = {
	{ "enabled", NVML_FEATURE_ENABLED }, { "disabled", NVML_FEATURE_DISABLED },
	{ "enable", NVML_FEATURE_ENABLED }, { "disable", NVML_FEATURE_DISABLED },
	{ "on", NVML_FEATURE_ENABLED }, { "off", NVML_FEATURE_DISABLED },
	{ "true", NVML_FEATURE_ENABLED }, { "false", NVML_FEATURE_DISABLED },
	{ "yes", NVML_FEATURE_ENABLED }, { "no", NVML_FEATURE_DISABLED },
	{ "1", NVML_FEATURE_ENABLED }, { "0", NVML_FEATURE_DISABLED },
	{ NULL, 0 }
};

nvmlReturn_t nvml_key_feature(struct mdev *d, const char *key, unsigned *state)
{
	bool b;
	int v;
	nvmlReturn_t rc;

	if (!state)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mdev_bool(d, key, &b)) {
		*state = b ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
		return NVML_SUCCESS;
	}
	rc = nvml_key_enum(d, key, feature_names, &v);
	if (rc == NVML_SUCCESS)
		*state = (unsigned)v;
	return rc;
}

nvmlReturn_t nvml_key_pstate(struct mdev *d, const char *key, unsigned *out)
{
	const char *s;
	char *end;
	unsigned long v;

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mdev_str(d, key, &s) || is_na(s))
		return NVML_ERROR_NOT_SUPPORTED;
	if (*s == 'P' || *s == 'p')
		s++;
	v = strtoul(s, &end, 10);
	if (end == s || *end || v > 15)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (unsigned)v;
	return NVML_SUCCESS;
}

static const struct nvml_name_value arch_names[] = {
	{ "kepler", NVML_DEVICE_ARCH_KEPLER }, { "maxwell", NVML_DEVICE_ARCH_MAXWELL },
	{ "pascal", NVML_DEVICE_ARCH_PASCAL }, { "volta", NVML_DEVICE_ARCH_VOLTA },
	{ "turing", NVML_DEVICE_ARCH_TURING }, { "ampere", NVML_DEVICE_ARCH_AMPERE },
	{ "ada_lovelace", NVML_DEVICE_ARCH_ADA }, { "ada", NVML_DEVICE_ARCH_ADA },
	{ "hopper", NVML_DEVICE_ARCH_HOPPER }, { "blackwell", NVML_DEVICE_ARCH_BLACKWELL },
	{ NULL, 0 }
};

int nvml_arch(struct mdev *d)
{
	const char *s;
	int v;

	if (mdev_str(d, "architecture", &s) && nvml_lookup(arch_names, s, &v))
		return v;
	return NVML_DEVICE_ARCH_UNKNOWN;
}

bool nvml_reports_tlimit(struct mdev *d)
{
	int a = nvml_arch(d);

	return a >= NVML_DEVICE_ARCH_ADA;
}

bool nvml_parse_bdf(const char *s, unsigned *dom, unsigned *bus,
		    unsigned *dev, unsigned *fn)
{
	unsigned a, b, c, f = 0;
	int n = 0;

	if (!s)
		return false;
	/* dddd:bb:dd.f with 4- or 8-digit domain, or bb:dd.f */
	if (sscanf(s, "%x:%x:%x.%x%n", &a, &b, &c, &f, &n) == 4 && !s[n]) {
		*dom = a, *bus = b, *dev = c, *fn = f;
		return true;
	}
	if (sscanf(s, "%x:%x.%x%n", &b, &c, &f, &n) == 3 && !s[n]) {
		*dom = 0, *bus = b, *dev = c, *fn = f;
		return true;
	}
	return false;
}

void nvml_fill_pci(nvmlPciInfo_t *p, const char *bus_id, unsigned dev_id,
		   unsigned subsys_id)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;

	memset(p, 0, sizeof(*p));
	nvml_parse_bdf(bus_id, &dom, &bus, &dev, &fn);
	p->domain = dom;
	p->bus = bus;
	p->device = dev;
	p->pciDeviceId = dev_id;
	p->pciSubSystemId = subsys_id;
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04X:%02X:%02X.%X",
		 dom & 0xffff, bus, dev, fn);
	snprintf(p->busId, sizeof(p->busId), "%08X:%02X:%02X.%X", dom, bus, dev, fn);
}
