/* The built mock libnvidia-ml.so (.libs/libnvidia-ml.so) through dlopen,
 * as nvidia-smi and pynvml use it, over the shipped h100 profile: init and
 * enumeration, identity, struct layouts nvidia-smi 535 depends on, field
 * values, the export table and events with an injected Xid.  Criterion
 * forks per test, so each test loads and initialises the library afresh. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shims/nvml/nvml_types.h"

#define H100_UUID0 "GPU-2330de10-0000-0000-0000-000000000000"
#define SENTINEL 0xa5

static void *lib;
static char tmp[64];

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	cr_assert_not_null(p, "%s is not exported: %s", name, dlerror());
	return p;
}

/* Calls an entry point by name (arguments are ints and pointers). */
typedef nvmlReturn_t (*nvml_fn)();
#define NVML(name, ...) ((nvml_fn)sym(#name))(__VA_ARGS__)

static const char *at(const char *name)
{
	static char path[2][128];
	static int slot;

	slot = !slot;
	snprintf(path[slot], sizeof(path[slot]), "%s/%s", tmp, name);
	return path[slot];
}

static void load(void)
{
	const char *src = getenv("MOKKA_SRCDIR"), *build = getenv("MOKKA_BUILDDIR");
	char path[512];

	snprintf(tmp, sizeof(tmp), "/tmp/mokka-nvml-api-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(mkdir(at("dev"), 0755), 0);	/* no /dev/nvidia*: all visible */
	setenv("MOCK_NVML_DEV_DIR", at("dev"), 1);
	setenv("MOCK_NVML_OVERRIDES", at("overrides.yaml"), 1);
	snprintf(path, sizeof(path), "%s/etc/profiles/h100.yaml", src ? src : ".");
	setenv("MOCK_NVML_CONFIG", path, 1);
	snprintf(path, sizeof(path), "%s/.libs/libnvidia-ml.so", build ? build : ".");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "dlopen %s: %s", path, dlerror());
}

static void cleanup(void)
{
	unlink(at("overrides.yaml"));
	rmdir(at("dev"));
	rmdir(tmp);
}

static void setup(void)
{
	load();
	cr_assert_eq(NVML(nvmlInitWithFlags, 0u), NVML_SUCCESS);
}

static nvmlDevice_t device(unsigned i)
{
	nvmlDevice_t d = NULL;

	cr_assert_eq(NVML(nvmlDeviceGetHandleByIndex_v2, i, &d), NVML_SUCCESS);
	return d;
}

TestSuite(nvml_api, .init = setup, .fini = cleanup);

Test(nvml_api_uninit, calls_before_init_are_uninitialized, .init = load, .fini = cleanup)
{
	unsigned n = 99;
	char buf[80];

	cr_assert_eq(NVML(nvmlDeviceGetCount_v2, &n), NVML_ERROR_UNINITIALIZED);
	cr_assert_eq(NVML(nvmlSystemGetDriverVersion, buf, 80u), NVML_ERROR_UNINITIALIZED);
	cr_assert_eq(n, 99);
	cr_assert_eq(NVML(nvmlInitWithFlags, 0u), NVML_SUCCESS);
	cr_assert_eq(NVML(nvmlShutdown), NVML_SUCCESS);
	cr_assert_eq(NVML(nvmlDeviceGetCount_v2, &n), NVML_ERROR_UNINITIALIZED);
}

Test(nvml_api, count_handles_name_uuid)
{
	unsigned n = 0, idx = 99;
	char name[64], uuid[96], small[8];
	nvmlDevice_t d, by_uuid = NULL, by_bus = NULL;

	cr_assert_eq(NVML(nvmlDeviceGetCount_v2, &n), NVML_SUCCESS);
	cr_assert_eq(n, 8);
	cr_assert_eq(NVML(nvmlDeviceGetCount, &n), NVML_SUCCESS);	/* v1 alias */
	d = device(0);
	cr_assert_eq(NVML(nvmlDeviceGetName, d, name, 64u), NVML_SUCCESS);
	cr_assert_str_eq(name, "NVIDIA H100 80GB HBM3");
	cr_assert_eq(NVML(nvmlDeviceGetName, d, small, 8u), NVML_ERROR_INSUFFICIENT_SIZE);
	cr_assert_eq(NVML(nvmlDeviceGetUUID, d, uuid, 96u), NVML_SUCCESS);
	cr_assert_str_eq(uuid, H100_UUID0);
	cr_assert_eq(NVML(nvmlDeviceGetHandleByUUID, H100_UUID0, &by_uuid), NVML_SUCCESS);
	cr_assert_eq(by_uuid, d);
	cr_assert_eq(NVML(nvmlDeviceGetHandleByPciBusId_v2, "0000:1a:00.0", &by_bus), NVML_SUCCESS);
	cr_assert_eq(by_bus, d);
	cr_assert_eq(NVML(nvmlDeviceGetIndex, device(7), &idx), NVML_SUCCESS);
	cr_assert_eq(idx, 7);
	cr_assert_eq(NVML(nvmlDeviceGetHandleByIndex_v2, 8u, &d), NVML_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(NVML(nvmlDeviceGetHandleByUUID, "GPU-nope", &d), NVML_ERROR_NOT_FOUND);
}

Test(nvml_api, bad_handles_and_null_pointers_are_invalid_arguments)
{
	char name[64];
	unsigned v;
	int bogus;

	cr_assert_eq(NVML(nvmlDeviceGetName, NULL, name, 64u), NVML_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(NVML(nvmlDeviceGetName, (void *)&bogus, name, 64u),
		     NVML_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(NVML(nvmlDeviceGetPowerUsage, device(0), NULL), NVML_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(NVML(nvmlDeviceGetTemperature, device(0), 5u, &v),
		     NVML_ERROR_INVALID_ARGUMENT);
}

Test(nvml_api, values_come_from_the_profile)
{
	nvmlDevice_t d = device(0);
	unsigned v = 0, lo = 0, hi = 0, cur = 9, pend = 9;
	int major = 0, minor = 0;

	cr_assert_eq(NVML(nvmlDeviceGetPowerManagementDefaultLimit, d, &v), NVML_SUCCESS);
	cr_assert_eq(v, 700000);
	cr_assert_eq(NVML(nvmlDeviceGetPowerManagementLimitConstraints, d, &lo, &hi), NVML_SUCCESS);
	cr_assert(lo == 200000 && hi == 700000);
	cr_assert_eq(NVML(nvmlDeviceGetTemperature, d, 0u, &v), NVML_SUCCESS);
	cr_assert_eq(v, 31);
	cr_assert_eq(NVML(nvmlDeviceGetCudaComputeCapability, d, &major, &minor), NVML_SUCCESS);
	cr_assert(major == 9 && minor == 0);
	cr_assert_eq(NVML(nvmlDeviceGetEccMode, d, &cur, &pend), NVML_SUCCESS);
	cr_assert(cur == NVML_FEATURE_ENABLED && pend == NVML_FEATURE_ENABLED);
	cr_assert_eq(NVML(nvmlDeviceGetMaxPcieLinkGeneration, d, &v), NVML_SUCCESS);
	cr_assert_eq(v, 5);
	/* a fanless SXM board and a stubbed name both read N/A */
	cr_assert_eq(NVML(nvmlDeviceGetFanSpeed, d, &v), NVML_ERROR_NOT_SUPPORTED);
	cr_assert_eq(NVML(nvmlUnitGetCount, &v), NVML_ERROR_NOT_SUPPORTED);
	/* Hopper reports T.Limit margins, not absolute GPU thresholds */
	cr_assert_eq(NVML(nvmlDeviceGetTemperatureThreshold, d,
			  (unsigned)NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &v),
		     NVML_ERROR_NOT_SUPPORTED);
}

Test(nvml_api, pci_info_v3_is_68_bytes)
{
	unsigned char buf[sizeof(nvmlPciInfo_t) + 16];
	nvmlPciInfo_t pci;

	cr_assert_eq(sizeof(nvmlPciInfo_t), 68);
	memset(buf, SENTINEL, sizeof(buf));
	cr_assert_eq(NVML(nvmlDeviceGetPciInfo_v3, device(0), (void *)buf), NVML_SUCCESS);
	memcpy(&pci, buf, sizeof(pci));
	cr_assert_str_eq(pci.busId, "00000000:1A:00.0");
	cr_assert_str_eq(pci.busIdLegacy, "0000:1A:00.0");
	cr_assert(pci.domain == 0 && pci.bus == 0x1a && pci.device == 0);
	cr_assert_eq(pci.pciDeviceId, 0x233010DEu);
	cr_assert_eq(pci.pciSubSystemId, 0x16C110DEu);
	for (size_t i = sizeof(nvmlPciInfo_t); i < sizeof(buf); i++)
		cr_assert_eq(buf[i], SENTINEL, "byte %zu past the struct was written", i);
}

Test(nvml_api, memory_info_v2)
{
	nvmlMemory_v2_t m = { .version = 0x02000028 };

	cr_assert_eq(sizeof(m), 40);
	cr_assert_eq(NVML(nvmlDeviceGetMemoryInfo_v2, device(0), &m), NVML_SUCCESS);
	cr_assert_eq(m.total, 85520809984ULL);	/* 81559 MiB, as an HGX H100 reads */
	cr_assert_eq(m.reserved, 471859200ULL);
	cr_assert_eq(m.free, 85048950784ULL);
	cr_assert_eq(m.used, 0);
	m.version = 1;
	cr_assert_eq(NVML(nvmlDeviceGetMemoryInfo_v2, device(0), &m),
		     NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

Test(nvml_api, field_values_set_every_return)
{
	nvmlFieldValue_t v[6];
	static const unsigned ids[6][2] = {
		{ 190, 0 }, { 190, 1 }, { 82, 0 }, { 65535, 0 }, { 193, 0 }, { 185, 0 },
	};

	cr_assert_eq(sizeof(nvmlFieldValue_t), 40);
	memset(v, SENTINEL, sizeof(v));
	for (int i = 0; i < 6; i++) {
		v[i].fieldId = ids[i][0];
		v[i].scopeId = ids[i][1];
	}
	NVML(nvmlDeviceGetFieldValues, device(0), 6, v);
	cr_assert_eq(v[0].nvmlReturn, NVML_SUCCESS);
	cr_assert_eq(v[0].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
	cr_assert_eq(v[0].value.uiVal, 700000);	/* current limit, mW */
	cr_assert_eq(v[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);	/* module scope */
	cr_assert_eq(v[2].nvmlReturn, NVML_SUCCESS);
	cr_assert_eq(v[2].value.uiVal, 38);	/* memory temperature */
	cr_assert_eq(v[3].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);	/* unknown id */
	cr_assert_eq(v[4].nvmlReturn, NVML_SUCCESS);
	cr_assert_eq(v[4].value.sllVal, 85 - 93);	/* shutdown T.Limit margin (-8 C on a real H100) */
	cr_assert_eq(v[5].nvmlReturn, NVML_SUCCESS);
	cr_assert_eq(v[5].value.uiVal, 72000);
}

Test(nvml_api, export_table)
{
	static const unsigned char guid[16] = {
		0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
		0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4,
	};
	unsigned char other[16] = { 0 };
	const uintptr_t *t = NULL;
	nvmlReturn_t (*slot)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);
	unsigned count = 250, code = 0;
	int margin = 0;
	static unsigned char entries[250 * 4128];

	cr_assert_eq(NVML(nvmlInternalGetExportTable, (void *)&t, other), NVML_ERROR_NOT_SUPPORTED);
	cr_assert_eq(NVML(nvmlInternalGetExportTable, (void *)&t, guid), NVML_SUCCESS);
	cr_assert_not_null(t);
	cr_assert_eq(t[0], 0x1000);
	/* 213: compute processes; none in the profile */
	slot = (void *)t[213];
	cr_assert_eq(slot((uintptr_t)device(0), (uintptr_t)&count, (uintptr_t)entries, 0),
		     NVML_SUCCESS);
	cr_assert_eq(count, 0);
	/* 23: all eight GPUs hang off NVSwitches: NV18 (4 + 18) */
	slot = (void *)t[23];
	cr_assert_eq(slot((uintptr_t) "00000000:1A:00.0", (uintptr_t) "00000000:9A:00.0",
			  (uintptr_t)&code, 0), NVML_SUCCESS);
	cr_assert_eq(code, 22);
	/* 240: Hopper's T.Limit margin: max operating 85 C - current 31 C */
	slot = (void *)t[240];
	cr_assert_eq(slot((uintptr_t)device(0), (uintptr_t)&margin, 0, 0), NVML_SUCCESS);
	cr_assert_eq(margin, 54);
	/* 209: the graphics voltage in microvolts (HGX H100 capture: 685 mV) */
	slot = (void *)t[209];
	cr_assert_eq(slot((uintptr_t)device(0), (uintptr_t)&code, 0, 0), NVML_SUCCESS);
	cr_assert_eq(code, 685000);
	/* anything else: NOT_SUPPORTED, output untouched */
	code = 7;
	slot = (void *)t[210];
	cr_assert_eq(slot((uintptr_t)device(0), (uintptr_t)&code, 0, 0), NVML_ERROR_NOT_SUPPORTED);
	cr_assert_eq(code, 7);
}

Test(nvml_api, topology)
{
	unsigned level = 0;

	cr_assert_eq(NVML(nvmlDeviceGetTopologyCommonAncestor, device(0), device(1), &level),
		     NVML_SUCCESS);
	cr_assert_eq(level, NVML_TOPOLOGY_HOSTBRIDGE);
	cr_assert_eq(NVML(nvmlDeviceGetTopologyCommonAncestor, device(0), device(4), &level),
		     NVML_SUCCESS);
	cr_assert_eq(level, NVML_TOPOLOGY_SYSTEM);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(nvml_api, event_wait_times_out)
{
	nvmlEventSet_t set = NULL;
	nvmlEventData_t ev;
	unsigned long long types = 0;
	double t0;

	cr_assert_eq(NVML(nvmlEventSetCreate, &set), NVML_SUCCESS);
	cr_assert_eq(NVML(nvmlDeviceGetSupportedEventTypes, device(0), &types), NVML_SUCCESS);
	cr_assert(types & NVML_EVENT_XID_CRITICAL);
	cr_assert_eq(NVML(nvmlDeviceRegisterEvents, device(0), NVML_EVENT_XID_CRITICAL, set),
		     NVML_SUCCESS);
	t0 = now_s();
	cr_assert_eq(NVML(nvmlEventSetWait_v2, set, &ev, 250u), NVML_ERROR_TIMEOUT);
	cr_assert_geq(now_s() - t0, 0.24);
	cr_assert_eq(NVML(nvmlEventSetFree, set), NVML_SUCCESS);
}

static void lost_with_xid(void)
{
	FILE *f;

	load();
	f = fopen(at("overrides.yaml"), "w");
	cr_assert_not_null(f, "%s", strerror(errno));
	fputs("version: 1\n"
	      "devices:\n"
	      "  \"0\":\n"
	      "    failure:\n"
	      "      mode: lost\n"
	      "      xid:\n"
	      "        code: 79\n", f);
	fclose(f);
	cr_assert_eq(NVML(nvmlInitWithFlags, 0u), NVML_SUCCESS);
}

Test(nvml_api_fault, lost_gpu_delivers_xid_once, .init = lost_with_xid, .fini = cleanup)
{
	nvmlEventSet_t set = NULL;
	nvmlEventData_t ev;
	nvmlDevice_t d = device(0);
	unsigned temp;
	char name[64];

	cr_assert_eq(NVML(nvmlEventSetCreate, &set), NVML_SUCCESS);
	cr_assert_eq(NVML(nvmlDeviceRegisterEvents, d, NVML_EVENT_XID_CRITICAL, set), NVML_SUCCESS);
	/* the first guarded call trips the fault; identity calls then fail too */
	cr_assert_eq(NVML(nvmlDeviceGetTemperature, d, 0u, &temp), NVML_ERROR_GPU_IS_LOST);
	cr_assert_eq(NVML(nvmlDeviceGetName, d, name, 64u), NVML_ERROR_GPU_IS_LOST);
	memset(&ev, 0, sizeof(ev));
	cr_assert_eq(NVML(nvmlEventSetWait_v2, set, &ev, 1000u), NVML_SUCCESS);
	cr_assert_eq(ev.device, d);
	cr_assert_eq(ev.eventType, NVML_EVENT_XID_CRITICAL);
	cr_assert_eq(ev.eventData, 79);
	cr_assert_eq(NVML(nvmlEventSetWait_v2, set, &ev, 200u), NVML_ERROR_TIMEOUT);
	/* another GPU is unaffected */
	cr_assert_eq(NVML(nvmlDeviceGetTemperature, device(1), 0u, &temp), NVML_SUCCESS);
	cr_assert_eq(NVML(nvmlEventSetFree, set), NVML_SUCCESS);
}
