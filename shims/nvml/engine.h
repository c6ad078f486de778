/* The mock NVML engine: the simulated devices as the NVML entry points
 * (api_*.c) see them.  Self-contained (glibc only): it parses the profile
 * and the overrides document with the libc-only yaml_lite/ and overrides/
 * it compiles in.
 *
 * Data sources, in order (SURFACES.md §11.1): $MOCK_NVML_CONFIG, else
 * <dir of this library>/../../config/config.yaml (the driver root layout
 * <root>/usr/lib64/libnvidia-ml.so.1 + <root>/config/config.yaml), else
 * /etc/nvml-mock/config.yaml.  When nvml.image beside it was compiled from
 * its very bytes (nvimage/, staged by mokka-worker-gpudriver), the trees
 * come from the image instead of parsing and merging (engine_image.c).
 * Overrides: $MOCK_NVML_OVERRIDES, else the document beside the config
 * (ovr_path_beside); re-read at most once per second when its mtime/size
 * changes.  The config at the same check: a changed config.yaml replaces
 * every device's configuration (not its identity: enumeration, UUID, bus
 * id and minor stay until re-init).  Topology: $MOCK_TOPOLOGY_CONFIG, else
 * topology.yaml beside the config (needs NODE_NAME).  Fabric manager
 * marker dir: $MOCK_FABRICMANAGER_STATE_DIR, else <driver root>/../fabric-state.
 *
 * Thread-safe: every entry point may be called from any thread; the engine
 * takes its own lock.  Init/shutdown are refcounted. */
#ifndef MOKKA_NVML_ENGINE_H
#define MOKKA_NVML_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NVML return codes used by the engine (values are NVML's). */
#define ENG_SUCCESS 0
#define ENG_ERROR_UNINITIALIZED 1
#define ENG_ERROR_INVALID_ARGUMENT 2
#define ENG_ERROR_NOT_SUPPORTED 3
#define ENG_ERROR_NOT_FOUND 6
#define ENG_ERROR_INSUFFICIENT_SIZE 7
#define ENG_ERROR_DRIVER_NOT_LOADED 9
#define ENG_ERROR_TIMEOUT 10
#define ENG_ERROR_NO_PERMISSION 4
#define ENG_ERROR_GPU_IS_LOST 15
#define ENG_ERROR_IN_USE 19
#define ENG_ERROR_INSUFFICIENT_RESOURCES 23
#define ENG_ERROR_UNKNOWN 999

#define ENG_MAX_DEVICES 64

struct mdev;	/* one simulated GPU, opaque */

/* Lifecycle (refcounted).  Returns an NVML return code; a missing or bad
 * config is ENG_ERROR_DRIVER_NOT_LOADED with the reason on stderr when
 * MOCK_NVML_DEBUG is set. */
int engine_init(void);
int engine_shutdown(void);
bool engine_initialized(void);

/* System */
const char *engine_driver_version(void);	/* "550.163.01" */
const char *engine_nvml_version(void);		/* "12.550.163.01" */
int engine_cuda_version(void);			/* 12040 for "12.4" */

/* Enumeration over the devices visible to this process (a device is
 * visible when /dev/nvidia<minor> exists in the process's view; when no
 * /dev/nvidia* node exists at all, every device is visible). */
unsigned engine_device_count(void);
struct mdev *engine_device(unsigned index);	/* NULL if out of range */
struct mdev *engine_device_by_uuid(const char *uuid);
struct mdev *engine_device_by_bus_id(const char *bus_id);	/* any case, 8- or 4-digit domain */
bool engine_is_device(const void *handle);	/* handle validation */

/* Identity, fixed for the device's lifetime. */
unsigned mdev_index(const struct mdev *d);
unsigned mdev_minor(const struct mdev *d);
const char *mdev_uuid(const struct mdev *d);
const char *mdev_bus_id(const struct mdev *d);	/* "00000000:1A:00.0" NVML form */
int mdev_numa_node(const struct mdev *d);	/* from pcie_topology; -1 unknown */
const char *mdev_cpu_affinity(const struct mdev *d);	/* cpulist of its root complex, "" unknown */

/* The device's effective configuration: device_defaults, deep-merged with
 * its devices[] entry, then the overrides document (all, then devices[i]),
 * then dynamic_metrics (when active) on top.  Paths are dotted with list
 * indices: "power.default_limit_mw", "processes[0].pid",
 * "supported_clocks.memory_clocks[1].graphics_clocks[0]".  Each getter
 * returns true and writes *out only when the key exists with a value of
 * that type (numbers accept 0x hex; bools accept true/false/yes/no). */
bool mdev_str(struct mdev *d, const char *path, const char **out);
bool mdev_u64(struct mdev *d, const char *path, uint64_t *out);
bool mdev_i64(struct mdev *d, const char *path, int64_t *out);
bool mdev_u32(struct mdev *d, const char *path, uint32_t *out);
bool mdev_double(struct mdev *d, const char *path, double *out);
bool mdev_bool(struct mdev *d, const char *path, bool *out);
size_t mdev_len(struct mdev *d, const char *path);	/* list length, 0 if none */
bool mdev_has(struct mdev *d, const char *path);

/* The same over the profile's top level ("nvlink.links_per_gpu",
 * "pcie_topology.root_complexes[0].id", "system.cuda_version"). */
bool engine_str(const char *path, const char **out);
bool engine_u64(const char *path, uint64_t *out);
bool engine_bool(const char *path, bool *out);
size_t engine_len(const char *path);

/* Faults (NVML.md §6).  mdev_guard: a guarded call (ticks the failure
 * counter; returns ENG_ERROR_GPU_IS_LOST once a lost/fallen_off_bus
 * failure has tripped, else ENG_SUCCESS).  mdev_lost: the same check
 * without ticking, for identity getters and handle lookups. */
int mdev_guard(struct mdev *d);
int mdev_lost(struct mdev *d);
/* ecc_uncorrectable tripped: how many guarded calls since (adds to the
 * uncorrected counters so they strictly increase); 0 when not. */
uint64_t mdev_ecc_bump(struct mdev *d);
/* A configured failure.xid.code not yet delivered, once tripped: returns
 * true once per injection (per process) and writes the code. */
bool mdev_take_xid(struct mdev *d, unsigned long long *code);

/* Fabric state with "auto" resolved against the fabric manager marker:
 * 0 not supported, 1 not started, 2 in progress, 3 completed. */
unsigned mdev_fabric_state(struct mdev *d);

/* Shared device state (devstate/, engine_state.c).  mdev_state_get: this
 * GPU's document as every process sees it now.  mdev_state_update: a
 * read-modify-write under the store's lock (the document fresh from its
 * file, so concurrent writers in other processes never lose an update):
 * fn returns an NVML code and the document is saved only on success.
 * The store is created on first write; no permission is
 * ENG_ERROR_NO_PERMISSION. */
struct ds_gpu;
struct mig_board;
typedef int (*mdev_update_fn)(struct mdev *d, struct ds_gpu *g, void *arg);
int mdev_state_get(struct mdev *d, struct ds_gpu *out);
int mdev_state_update(struct mdev *d, mdev_update_fn fn, void *arg);
const struct mig_board *mdev_mig_board(struct mdev *d);	/* NULL: no MIG */
const char *engine_state_dir(void);

/* MIG devices (engine_mig.c).  A MIG device handle is an mdev whose
 * parent is the full GPU; NULL when that compute instance does not exist
 * (now, in the shared state). */
bool mdev_is_mig(const struct mdev *d);
struct mdev *mdev_parent(struct mdev *d);
unsigned mdev_gi_id(const struct mdev *d);
unsigned mdev_ci_id(const struct mdev *d);
struct mdev *mdev_mig_device(struct mdev *parent, unsigned gi, unsigned ci);
/* GPU and compute instance handles: stable per (GPU, ids); valid while
 * the instance exists. */
void *engine_gi_handle(struct mdev *d, unsigned gi);
void *engine_ci_handle(struct mdev *d, unsigned gi, unsigned ci);
bool engine_gi_lookup(const void *h, struct mdev **d, unsigned *gi);
bool engine_ci_lookup(const void *h, struct mdev **d, unsigned *gi, unsigned *ci);
/* "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" for an instance. */
void engine_mig_uuid(const struct mdev *parent, unsigned gi, unsigned ci, uint32_t serial,
		     char *out, size_t size);

#endif
