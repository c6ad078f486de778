/* NVML ABI facts (return codes, enum values, struct layouts) written for the
 * mock libnvidia-ml.so.1, plus the helpers the api_*.c files share.  Only
 * what the implemented entry points need is declared; layouts follow the
 * public NVML headers (x86-64 LP64). */
#ifndef MOKKA_NVML_TYPES_H
#define MOKKA_NVML_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shims/nvml/engine.h"

/* ---- exporting --------------------------------------------------------- */

/* The library is built with -fvisibility=hidden; only these are exported.
 * NVML_API declares the prototype (for -Wmissing-prototypes) and opens the
 * definition; NVML_ALIAS exports a second name for a function defined in
 * the same file (versioned names, v1 compatibility names). */
#define NVML_EXPORT __attribute__((visibility("default")))
#define NVML_API(name, ...) \
	NVML_EXPORT nvmlReturn_t name(__VA_ARGS__); \
	NVML_EXPORT nvmlReturn_t name(__VA_ARGS__)
#define NVML_ALIAS(name, target) \
	extern __typeof__(target) name \
		__attribute__((alias(#target), visibility("default")))

/* ---- return codes ------------------------------------------------------ */

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999,
};

/* ---- handles ----------------------------------------------------------- */

/* A device handle is the engine's device itself (validated with
 * engine_is_device before any use). */
typedef struct mdev *nvmlDevice_t;
typedef struct nvml_event_set *nvmlEventSet_t;
typedef struct nvml_gpm_sample *nvmlGpmSample_t;

/* ---- enums (values only) ----------------------------------------------- */

enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

enum {	/* nvmlBrandType_t */
	NVML_BRAND_UNKNOWN = 0, NVML_BRAND_QUADRO = 1, NVML_BRAND_TESLA = 2,
	NVML_BRAND_NVS = 3, NVML_BRAND_GRID = 4, NVML_BRAND_GEFORCE = 5,
	NVML_BRAND_TITAN = 6, NVML_BRAND_NVIDIA_VAPPS = 7,
	NVML_BRAND_NVIDIA_VPC = 8, NVML_BRAND_NVIDIA_VCS = 9,
	NVML_BRAND_NVIDIA_VWS = 10, NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
	NVML_BRAND_QUADRO_RTX = 12, NVML_BRAND_NVIDIA_RTX = 13,
	NVML_BRAND_NVIDIA = 14, NVML_BRAND_GEFORCE_RTX = 15,
	NVML_BRAND_TITAN_RTX = 16,
};

enum {	/* nvmlDeviceArchitecture_t */
	NVML_DEVICE_ARCH_KEPLER = 2, NVML_DEVICE_ARCH_MAXWELL = 3,
	NVML_DEVICE_ARCH_PASCAL = 4, NVML_DEVICE_ARCH_VOLTA = 5,
	NVML_DEVICE_ARCH_TURING = 6, NVML_DEVICE_ARCH_AMPERE = 7,
	NVML_DEVICE_ARCH_ADA = 8, NVML_DEVICE_ARCH_HOPPER = 9,
	NVML_DEVICE_ARCH_BLACKWELL = 10, NVML_DEVICE_ARCH_UNKNOWN = -1,
};

enum {	/* nvmlTemperatureThresholds_t */
	NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
	NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
	NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
	NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
	NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4,
	NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5,
	NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6,
	NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7,
};
enum { NVML_TEMPERATURE_GPU = 0 };

enum {	/* nvmlClockType_t / nvmlClockId_t */
	NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2,
	NVML_CLOCK_VIDEO = 3, NVML_CLOCK_COUNT = 4,
};
enum {
	NVML_CLOCK_ID_CURRENT = 0, NVML_CLOCK_ID_APP_CLOCK_TARGET = 1,
	NVML_CLOCK_ID_APP_CLOCK_DEFAULT = 2, NVML_CLOCK_ID_CUSTOMER_BOOST_MAX = 3,
};

enum {	/* memory errors */
	NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
	NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1,
	NVML_MEMORY_LOCATION_L1_CACHE = 0, NVML_MEMORY_LOCATION_L2_CACHE = 1,
	NVML_MEMORY_LOCATION_DEVICE_MEMORY = 2, NVML_MEMORY_LOCATION_REGISTER_FILE = 3,
	NVML_MEMORY_LOCATION_TEXTURE_MEMORY = 4, NVML_MEMORY_LOCATION_TEXTURE_SHM = 5,
	NVML_MEMORY_LOCATION_CBU = 6, NVML_MEMORY_LOCATION_SRAM = 7,
	NVML_MEMORY_LOCATION_COUNT = 8,
	NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
	NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};

enum {	/* nvmlComputeMode_t */
	NVML_COMPUTEMODE_DEFAULT = 0, NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum { NVML_GOM_ALL_ON = 0, NVML_GOM_COMPUTE = 1, NVML_GOM_LOW_DP = 2 };
enum { NVML_DRIVER_WDDM = 0, NVML_DRIVER_WDM = 1, NVML_DRIVER_MCDM = 2 };
enum {	/* nvmlGpuVirtualizationMode_t */
	NVML_GPU_VIRTUALIZATION_MODE_NONE = 0,
	NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH = 1,
	NVML_GPU_VIRTUALIZATION_MODE_VGPU = 2,
	NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU = 3,
	NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA = 4,
};
enum { NVML_HOST_VGPU_MODE_NON_SRIOV = 0, NVML_HOST_VGPU_MODE_SRIOV = 1 };
enum { NVML_PSTATE_UNKNOWN = 32 };
enum { NVML_BUS_TYPE_PCIE = 2 };
enum { NVML_POWER_SOURCE_AC = 0 };
enum { NVML_INFOROM_OEM = 0, NVML_INFOROM_ECC = 1, NVML_INFOROM_POWER = 2 };
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
enum { NVML_AFFINITY_SCOPE_NODE = 0, NVML_AFFINITY_SCOPE_SOCKET = 1 };

enum {	/* PCIe */
	NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1,
	NVML_PCIE_LINK_MAX_SPEED_INVALID = 0,
};

enum {	/* nvmlGpuTopologyLevel_t */
	NVML_TOPOLOGY_INTERNAL = 0, NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20, NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40, NVML_TOPOLOGY_SYSTEM = 50,
};
enum {	/* nvmlGpuP2PCapsIndex_t / nvmlGpuP2PStatus_t */
	NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_WRITE = 1,
	NVML_P2P_CAPS_INDEX_NVLINK = 2, NVML_P2P_CAPS_INDEX_ATOMICS = 3,
	NVML_P2P_CAPS_INDEX_PCI = 4, NVML_P2P_CAPS_INDEX_UNKNOWN = 5,
	NVML_P2P_STATUS_OK = 0, NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED = 1,
	NVML_P2P_STATUS_GPU_NOT_SUPPORTED = 2,
	NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
	NVML_P2P_STATUS_DISABLED_BY_REGKEY = 4, NVML_P2P_STATUS_NOT_SUPPORTED = 5,
	NVML_P2P_STATUS_UNKNOWN = 6,
};

enum {	/* NVLink */
	NVML_NVLINK_MAX_LINKS = 18,
	NVML_NVLINK_CAP_P2P_SUPPORTED = 0, NVML_NVLINK_CAP_SYSMEM_ACCESS = 1,
	NVML_NVLINK_CAP_P2P_ATOMICS = 2, NVML_NVLINK_CAP_SYSMEM_ATOMICS = 3,
	NVML_NVLINK_CAP_SLI_BRIDGE = 4, NVML_NVLINK_CAP_VALID = 5,
	NVML_NVLINK_ERROR_DL_REPLAY = 0, NVML_NVLINK_ERROR_DL_RECOVERY = 1,
	NVML_NVLINK_ERROR_DL_CRC_FLIT = 2, NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
	NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
	NVML_NVLINK_DEVICE_TYPE_GPU = 0, NVML_NVLINK_DEVICE_TYPE_IBMNPU = 1,
	NVML_NVLINK_DEVICE_TYPE_SWITCH = 2, NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xff,
};

enum {	/* field value types */
	NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4, NVML_VALUE_TYPE_SIGNED_INT = 5,
};

enum {	/* nvmlPerfPolicyType_t */
	NVML_PERF_POLICY_POWER = 0, NVML_PERF_POLICY_THERMAL = 1,
	NVML_PERF_POLICY_SYNC_BOOST = 2, NVML_PERF_POLICY_BOARD_LIMIT = 3,
	NVML_PERF_POLICY_LOW_UTILIZATION = 4, NVML_PERF_POLICY_RELIABILITY = 5,
	NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10, NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11,
};

enum {	/* nvmlSamplingType_t */
	NVML_TOTAL_POWER_SAMPLES = 0, NVML_GPU_UTILIZATION_SAMPLES = 1,
	NVML_MEMORY_UTILIZATION_SAMPLES = 2, NVML_ENC_UTILIZATION_SAMPLES = 3,
	NVML_DEC_UTILIZATION_SAMPLES = 4, NVML_PROCESSOR_CLK_SAMPLES = 5,
	NVML_MEMORY_CLK_SAMPLES = 6,
};

/* Clock event (throttle) reason bits */
#define NVML_CLOCKS_REASON_GPU_IDLE 0x1ULL
#define NVML_CLOCKS_REASON_APP_CLOCKS 0x2ULL
#define NVML_CLOCKS_REASON_SW_POWER_CAP 0x4ULL
#define NVML_CLOCKS_REASON_HW_SLOWDOWN 0x8ULL
#define NVML_CLOCKS_REASON_SYNC_BOOST 0x10ULL
#define NVML_CLOCKS_REASON_SW_THERMAL 0x20ULL
#define NVML_CLOCKS_REASON_HW_THERMAL 0x40ULL
#define NVML_CLOCKS_REASON_HW_POWER_BRAKE 0x80ULL
#define NVML_CLOCKS_REASON_DISPLAY_CLOCKS 0x100ULL

/* Event types */
#define NVML_EVENT_SINGLE_BIT_ECC 0x1ULL
#define NVML_EVENT_DOUBLE_BIT_ECC 0x2ULL
#define NVML_EVENT_PSTATE 0x4ULL
#define NVML_EVENT_XID_CRITICAL 0x8ULL
#define NVML_EVENT_CLOCK 0x10ULL

/* Fabric */
enum {
	NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0, NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
	NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2, NVML_GPU_FABRIC_STATE_COMPLETED = 3,
	NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED = 0,
	NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY = 1,
	NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY = 2,
	NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY = 3,
};
#define NVML_STRUCT_VERSION(size, ver) ((unsigned)(size) | ((unsigned)(ver) << 24))

/* Buffer sizes */
#define NVML_DEVICE_UUID_ASCII_LEN 41
#define NVML_PCI_BUS_ID_LEN 32
#define NVML_PCI_BUS_ID_LEGACY_LEN 16

/* ---- structs ----------------------------------------------------------- */

typedef struct {
	char busIdLegacy[NVML_PCI_BUS_ID_LEGACY_LEN];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[NVML_PCI_BUS_ID_LEN];
} nvmlPciInfo_t;	/* 68 bytes; _v1/_v2 callers get 16+20 bytes + reserved */

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;	/* 40 bytes, version 0x02000028 */

typedef struct {
	unsigned long long bar1Total, bar1Free, bar1Used;
} nvmlBAR1Memory_t;

typedef struct {
	unsigned gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;	/* v2 and v3 share this 24-byte layout */

typedef struct {
	unsigned pid;
	unsigned long long timeStamp;
	unsigned smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef union {
	double dVal;
	int siVal;
	unsigned uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
} nvmlValue_t;

typedef struct {
	unsigned fieldId, scopeId;
	long long timestamp, latencyUsec;
	unsigned valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;	/* 40 bytes */

typedef struct {
	unsigned long long timeStamp;
	nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct {
	unsigned long long referenceTime, violationTime;
} nvmlViolationTime_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

typedef struct {
	unsigned long long l1Cache, l2Cache, deviceMemory, registerFile;
} nvmlEccErrorCounts_t;

typedef struct {
	unsigned version;
	unsigned long long aggregateUncParity, aggregateUncSecDed, aggregateCor;
	unsigned long long volatileUncParity, volatileUncSecDed, volatileCor;
	unsigned long long aggregateUncBucketL2, aggregateUncBucketSm;
	unsigned long long aggregateUncBucketPcie, aggregateUncBucketMcu;
	unsigned long long aggregateUncBucketOther;
	unsigned bThresholdExceeded;
} nvmlEccSramErrorStatus_t;

typedef struct {
	unsigned max, high, partial, low, none;
} nvmlRowRemapperHistogramValues_t;

typedef struct {
	unsigned sessionsCount, averageFPS, averageLatency;
} nvmlFBCStats_t;

typedef struct {
	unsigned count;
	struct {
		int controller, defaultMinTemp, defaultMaxTemp, currentTemp, target;
	} sensor[3];
} nvmlGpuThermalSettings_t;

typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned cliqueId;
	unsigned char state;
} nvmlGpuFabricInfo_t;

typedef struct {
	unsigned version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned cliqueId;
	unsigned char state;
	unsigned healthMask;
	unsigned char healthSummary;	/* v3 only */
} nvmlGpuFabricInfoV_t;	/* v2: 36 bytes, v3: 40 bytes */

typedef struct {
	unsigned version, isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
	unsigned metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName, *longName, *unit;
	} metricInfo;
} nvmlGpmMetric_t;

typedef struct {
	unsigned version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[];	/* the caller's array (98 in 12.x, more later) */
} nvmlGpmMetricsGet_t;

/* ---- shared helpers (api_common.c) ------------------------------------- */

/* Device lookups in the order NVML checks: initialised, valid handle, lost.
 * nvml_dev does not tick the failure counter; nvml_dev_guarded does (the
 * guarded getters of NVML.md §6). */
nvmlReturn_t nvml_ready(void);
nvmlReturn_t nvml_dev(nvmlDevice_t h, struct mdev **d);
nvmlReturn_t nvml_dev_guarded(nvmlDevice_t h, struct mdev **d);

/* Copies s (NUL included) into buf[len]; INSUFFICIENT_SIZE when short. */
nvmlReturn_t nvml_copy_str(char *buf, unsigned len, const char *s);
/* A string key copied out; NOT_SUPPORTED when absent, empty or "N/A". */
nvmlReturn_t nvml_key_str(struct mdev *d, const char *key, char *buf, unsigned len);
/* A numeric key; NOT_SUPPORTED when absent or not a number. */
nvmlReturn_t nvml_key_u32(struct mdev *d, const char *key, unsigned *out);
nvmlReturn_t nvml_key_u64(struct mdev *d, const char *key, unsigned long long *out);

/* A string-to-value table, terminated by a NULL name. */
struct nvml_name_value {
	const char *name;
	int value;
};
bool nvml_lookup(const struct nvml_name_value *tab, const char *name, int *out);
/* "enabled"/"disabled"/true/false (or a table of names) to a value. */
nvmlReturn_t nvml_key_enum(struct mdev *d, const char *key,
			   const struct nvml_name_value *tab, int *out);
nvmlReturn_t nvml_key_feature(struct mdev *d, const char *key, unsigned *state);
/* "P0".."P15" or a number. */
nvmlReturn_t nvml_key_pstate(struct mdev *d, const char *key, unsigned *out);

int nvml_arch(struct mdev *d);	/* NVML_DEVICE_ARCH_*, UNKNOWN when unset */
bool nvml_reports_tlimit(struct mdev *d);	/* Ada and later */
bool nvml_parse_bdf(const char *s, unsigned *dom, unsigned *bus,
		    unsigned *dev, unsigned *fn);
/* Fills NVML's PCI info for a bus id string ("0000:1A:00.0"). */
void nvml_fill_pci(nvmlPciInfo_t *p, const char *bus_id, unsigned dev_id,
		   unsigned subsys_id);

/* A getter that copies one numeric profile key.  GUARDED ticks the failure
 * counter (NVML.md §6 list), UNGUARDED only checks it. */
#define NVML_U32_GETTER(fn, key, lookup) \
	NVML_API(fn, nvmlDevice_t device, unsigned *out) \
	{ \
		struct mdev *d; \
		nvmlReturn_t rc = lookup(device, &d); \
		return rc ? rc : nvml_key_u32(d, key, out); \
	}

/* Cross-file entry points used by the export table. */
int nvml_topology_level(struct mdev *a, struct mdev *b);	/* NVML_TOPOLOGY_* */
bool nvml_nvlink_peers(struct mdev *a, struct mdev *b);
unsigned nvml_nvlink_count(struct mdev *a, struct mdev *b);
/* Injected NVLink DL errors so far on one link (0 when none). */
unsigned long long nvml_nvlink_errors(struct mdev *d, unsigned link);
nvmlReturn_t nvml_process_list(struct mdev *d, char type, unsigned *count,
			       void *entries, size_t stride,
			       void (*fill)(void *entry, unsigned pid,
					    unsigned long long bytes,
					    const char *name));
nvmlReturn_t nvml_temperature(struct mdev *d, int *celsius);
/* Margin to T.Limit of a threshold key (NULL: of the current temperature);
 * NOT_SUPPORTED before Ada. */
nvmlReturn_t nvml_tlimit_margin(struct mdev *d, const char *threshold_key, int *out);

/* Entry points called from other files (the export table, field values). */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t, unsigned, unsigned,
					 unsigned long long *);
nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t, unsigned, unsigned,
					     unsigned, unsigned long long *);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t, unsigned, unsigned *,
				       unsigned long long *);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t, unsigned *);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t, unsigned *, unsigned *,
				       unsigned *, unsigned *);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned, unsigned *);
nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t, unsigned, unsigned *);
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t, unsigned, unsigned,
					     unsigned long long *);
nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t, unsigned, unsigned long *);

#endif
