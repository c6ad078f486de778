/* Mock NVML engine internals shared by engine*.c (not for api_*.c).
 * Everything here runs under eng_lock() unless it says otherwise. */
#ifndef MOKKA_NVML_ENGINE_INTERNAL_H
#define MOKKA_NVML_ENGINE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"
#include "devstate/devstate.h"
#include "nvimage/nvimage.h"
#include "overrides/overrides.h"
#include "shims/nvml/mig_profiles.h"
#include "yaml_lite/yaml_lite.h"

#define ENG_TTL_S 1.0	/* overrides and fabric marker re-check period */

enum eng_fail_mode { FAIL_HEALTHY, FAIL_LOST, FAIL_FALLEN_OFF_BUS, FAIL_ECC };

/* The failure injector (NVML.md §6): configuration from the effective
 * failure block, and per-process state that survives reloads while the
 * block is unchanged. */
struct eng_fault {
	enum eng_fail_mode mode;
	bool armed;		/* a mode other than healthy, or an xid */
	uint64_t after_calls;	/* 0: unset */
	double probability;	/* 0: unset */
	unsigned long long xid;	/* 0: none */
	uint64_t rng;
	uint64_t calls;		/* guarded calls seen */
	uint64_t since_trip;	/* guarded calls since (and including) the trip */
	bool tripped;
	bool xid_taken;
};

struct mdev {
	unsigned index;		/* enumeration index in this process */
	unsigned prof_index;	/* devices[].index: keys the overrides document */
	unsigned minor;
	int numa_node;
	char uuid[128];
	char bus_id[32];	/* "00000000:1A:00.0" */
	char cpu_affinity[256];
	struct yl_node *base;	/* defaults ⊕ devices[] entry (+ topology): boot, fixed */
	struct yl_node *eff;	/* base ⊕ overrides; replaced on reload */
	struct eng_fault fault;
	/* Shared device state (engine_state.c): this GPU's document, laid
	 * over eff at every rebuild. */
	struct ds_gpu st;
	const struct mig_board *board;	/* NULL: not MIG-capable */
	/* MIG (engine_mig.c): a MIG device is an mdev too, so every getter
	 * works on its handle.  A full GPU owns DS_MAX_GI * DS_MAX_CI of them
	 * (calloc'd on first use, kept until shutdown so handles stay put);
	 * a MIG device has parent set and eff rebuilt when the state moves. */
	struct mdev *migs;
	struct mdev *parent;
	unsigned gi_id, ci_id;
	uint64_t built_gen;
};

struct eng_file_id {
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct engine {
	int refs;
	unsigned ndev;		/* visible devices, in eng_devs[0..ndev) */
	struct yl_node *profile;
	char lib_dir[PATH_MAX];
	char config_path[PATH_MAX];
	char overrides_path[PATH_MAX];
	char topology_path[PATH_MAX];
	char fm_dir[PATH_MAX];
	bool fm_dir_from_env;
	const char *driver_version;
	char nvml_version[96];
	int cuda_version;
	double t0;		/* engine start, monotonic seconds */
	/* overrides document currently in force (NULL: none) */
	struct yl_node *overrides;
	struct eng_file_id overrides_id;
	double overrides_checked;
	/* fabric manager readiness marker cache */
	double fm_checked;
	unsigned fm_state;
	/* strings handed out by mdev_str (a hash set), kept until shutdown so
	 * an override reload can free trees other threads read from */
	char **interned;
	size_t interned_n, interned_cap;
	/* the device state store (engine_state.c) */
	struct ds_store store;
	char state_dir[PATH_MAX];
	double state_checked;
	uint64_t state_seq;
	uint64_t state_gen;	/* bumped at every reload */
	bool state_loaded;
	/* config.yaml as loaded (engine_image.c), and the image's device
	 * trees until the devices take them (NULL: parsed) */
	struct eng_file_id config_id;
	uint64_t config_hash;
	size_t config_size;
	struct yl_node **trees;
	size_t ntrees;
};

extern struct engine eng;
extern struct mdev eng_devs[ENG_MAX_DEVICES];

/* engine.c */
void eng_lock(void);
void eng_unlock(void);
double eng_now(void);
__attribute__((format(printf, 1, 2))) void eng_debug(const char *fmt, ...);
/* A live handle of an initialized engine; refreshes the overrides. */
bool eng_dev_ready(struct mdev *d);

/* engine_config.c: locate and load the profile, build the devices. */
int eng_locate_files(void);
struct yl_node *eng_load_yaml(const char *path, bool *missing);
int eng_build_devices(void);
/* "[dddddddd:|dddd:]bb:dd.f", any case, into its numbers. */
bool eng_parse_bdf(const char *s, unsigned long *domain, unsigned *bus,
		   unsigned *dev, unsigned *fn);

/* engine_image.c: the profile from the image or config.yaml (sets
 * eng.profile; ENG_SUCCESS or ENG_ERROR_DRIVER_NOT_LOADED), devices[pos]'s
 * boot-merged base from the same source (*out NULL: not a mapping; 0 or
 * -ENOMEM), dropping the image once the devices are built, and the live
 * reload of a changed config.yaml (under the overrides' TTL). */
int eng_profile_load(void);
int eng_device_base(size_t pos, struct yl_node **out);
void eng_image_drop(void);
void eng_config_reload(void);

/* engine_merge.c: the overrides document (read with the overrides
 * module, overrides/). */
bool eng_overrides_valid(const struct yl_node *doc, char *why, size_t size);
bool eng_overrides_reload(bool force);
void eng_overrides_refresh(bool force);
int eng_rebuild_device(struct mdev *d);
/* Frees d->eff unless it is d->base (shared when nothing changes it). */
void eng_free_eff(struct mdev *d);

/* engine_fault.c */
void eng_fault_configure(struct mdev *d, bool reset);

/* engine_metrics.c: dynamic_metrics over time; true when path is dynamic. */
bool eng_dynamic_value(struct mdev *d, const char *path, double *out);

/* engine_state.c: the store's path, reload when its counter moved, and
 * the overlay of a GPU's document on its effective tree. */
int eng_state_locate(void);
void eng_state_refresh(void);
int eng_state_overlay(struct mdev *d, struct yl_node *tree);
void eng_state_close(void);

/* engine_mig.c */
bool eng_is_mig_handle(const void *h);
bool eng_mig_ready(struct mdev *m);	/* rebuilds a MIG device's tree when stale */
void eng_mig_teardown(void);
uint64_t eng_gi_mem_mib(const struct mdev *d, const struct ds_gi *gi);

/* engine_topology.c */
void eng_pcie_affinity(void);	/* every device's, from pcie_topology */
int eng_topology_overlay(void);

#endif
