/* Mock NVML engine: lifecycle, the lock, enumeration and the config
 * getters.  Loading lives in engine_config.c, merges and overrides in
 * engine_merge.c, faults in engine_fault.c, dynamic values in
 * engine_metrics.c, PCIe/fabric topology in engine_topology.c. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine_internal.h"

struct engine eng;
struct mdev eng_devs[ENG_MAX_DEVICES];	/* static: handles stay put across re-init */
static pthread_mutex_t eng_mutex = PTHREAD_MUTEX_INITIALIZER;

void eng_lock(void)
{
	pthread_mutex_lock(&eng_mutex);
}

void eng_unlock(void)
{
	pthread_mutex_unlock(&eng_mutex);
}

double eng_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void eng_debug(const char *fmt, ...)
{
	const char *dbg = getenv("MOCK_NVML_DEBUG");
	va_list ap;

	if (!dbg || !*dbg)
		return;
	fputs("mock-nvml: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- interned strings ---------------------------------------------- */

static size_t str_hash(const char *s)
{
	size_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int intern_grow(void)
{
	size_t cap = eng.interned_cap ? eng.interned_cap * 2 : 64;
	char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < eng.interned_cap; i++) {
		char *s = eng.interned[i];
		size_t j;

		if (!s)
			continue;
		for (j = str_hash(s) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = s;
	}
	free(eng.interned);
	eng.interned = slots;
	eng.interned_cap = cap;
	return 0;
}

/* A copy of s that lives until shutdown (one per distinct value). */
static const char *intern(const char *s)
{
	size_t j;

	if ((eng.interned_n + 1) * 4 > eng.interned_cap * 3 && intern_grow() < 0)
		return NULL;
	for (j = str_hash(s) & (eng.interned_cap - 1); eng.interned[j];
	     j = (j + 1) & (eng.interned_cap - 1))
		if (!strcmp(eng.interned[j], s))
			return eng.interned[j];
	eng.interned[j] = strdup(s);
	if (!eng.interned[j])
		return NULL;
	eng.interned_n++;
	return eng.interned[j];
}

/* ---- lifecycle ------------------------------------------------------- */

static void teardown(void)
{
	eng_mig_teardown();
	eng_state_close();
	for (unsigned i = 0; i < ENG_MAX_DEVICES; i++) {
		eng_free_eff(&eng_devs[i]);
		yl_free(eng_devs[i].base);
		memset(&eng_devs[i], 0, sizeof(eng_devs[i]));
	}
	eng_image_drop();
	yl_free(eng.profile);
	yl_free(eng.overrides);
	for (size_t i = 0; i < eng.interned_cap; i++)
		free(eng.interned[i]);
	free(eng.interned);
	memset(&eng, 0, sizeof(eng));
}

/* "12.4" -> 12040, else cuda_version_major/minor; 0 when unknown. */
static int cuda_version(void)
{
	const struct yl_node *sys = yl_get(eng.profile, "system");
	const char *s = yl_text(yl_get(sys, "cuda_version"));
	unsigned maj = 0, min = 0;
	uint64_t v;

	if (s && sscanf(s, "%u.%u", &maj, &min) >= 1 && maj < 1000 && min < 100)
		return (int)(maj * 1000 + min * 10);
	if (yl_u64(yl_get(sys, "cuda_version_major"), &v) && v < 1000) {
		maj = (unsigned)v;
		if (yl_u64(yl_get(sys, "cuda_version_minor"), &v) && v < 100)
			min = (unsigned)v;
		return (int)(maj * 1000 + min * 10);
	}
	return 0;
}

/* MIG-capable: the profile offers instances (mig.max_gpu_instances) and
 * the board is one whose MIG geometry we know. */
static void board_detect(struct mdev *d)
{
	const struct yl_node *n;
	uint64_t max = 0, id = 0, total = 0;

	d->board = NULL;
	if (!yl_u64(yl_path(d->eff, "mig.max_gpu_instances"), &max) || max == 0)
		return;
	if ((n = yl_path(d->eff, "pci.device_id")))
		yl_u64(n, &id);
	yl_u64(yl_path(d->eff, "memory.total_bytes"), &total);
	d->board = mig_board_guess((uint32_t)id, yl_text(yl_path(d->eff, "architecture")),
				   total >> 20);
	if (!d->board)
		eng_debug("device %u: pci.device_id 0x%08llx is no MIG board we know; MIG off",
			  d->index, (unsigned long long)id);
}

static int load(void)
{
	const struct yl_node *sys;
	const char *nvml;
	int rc;

	eng.t0 = eng_now();
	eng.fm_checked = -1e9;
	if ((rc = eng_locate_files()) != ENG_SUCCESS)
		return rc;
	if ((rc = eng_profile_load()) != ENG_SUCCESS)
		return rc;	/* eng_profile_load said why */
	sys = yl_get(eng.profile, "system");
	/* Interned: a live reload replaces the profile tree. */
	eng.driver_version = yl_text(yl_get(sys, "driver_version"));
	if (eng.driver_version)
		eng.driver_version = intern(eng.driver_version);
	if (eng.profile->kind != YL_MAP || !eng.driver_version || !*eng.driver_version) {
		eng_debug("%s: not a profile (system.driver_version is required)",
			  eng.config_path);
		return ENG_ERROR_DRIVER_NOT_LOADED;
	}
	eng.cuda_version = cuda_version();
	nvml = yl_text(yl_get(sys, "nvml_version"));
	if (nvml && *nvml)
		snprintf(eng.nvml_version, sizeof(eng.nvml_version), "%s", nvml);
	else	/* NVML's own form: CUDA major, then the driver version */
		snprintf(eng.nvml_version, sizeof(eng.nvml_version), "%d.%s",
			 eng.cuda_version ? eng.cuda_version / 1000 : 12, eng.driver_version);
	rc = eng_build_devices();
	eng_image_drop();	/* the trees no visible device took */
	if (rc != ENG_SUCCESS)
		return rc;
	if (eng_state_locate() < 0) {
		eng_debug("%s: the device state directory's path is too long", eng.config_path);
		return ENG_ERROR_UNKNOWN;
	}
	if (eng_topology_overlay() < 0)
		return ENG_ERROR_UNKNOWN;
	/* The overrides first, so each device's tree is built once. */
	eng_overrides_reload(true);
	for (unsigned i = 0; i < eng.ndev; i++)
		if (eng_rebuild_device(&eng_devs[i]) < 0)
			return ENG_ERROR_UNKNOWN;
	for (unsigned i = 0; i < eng.ndev; i++)
		board_detect(&eng_devs[i]);
	eng_state_refresh();
	eng_debug("%s: %u device(s) visible", eng.config_path, eng.ndev);
	return ENG_SUCCESS;
}

int engine_init(void)
{
	int rc = ENG_SUCCESS;

	eng_lock();
	if (eng.refs > 0) {
		eng.refs++;
	} else {
		rc = load();
		if (rc == ENG_SUCCESS)
			eng.refs = 1;
		else
			teardown();
	}
	eng_unlock();
	return rc;
}

int engine_shutdown(void)
{
	int rc = ENG_SUCCESS;

	eng_lock();
	if (eng.refs == 0)
		rc = ENG_ERROR_UNINITIALIZED;
	else if (--eng.refs == 0)
		teardown();
	eng_unlock();
	return rc;
}

bool engine_initialized(void)
{
	bool r;

	eng_lock();
	r = eng.refs > 0;
	eng_unlock();
	return r;
}

/* ---- system ---------------------------------------------------------- */

const char *engine_driver_version(void)
{
	const char *s;

	eng_lock();
	s = eng.refs ? eng.driver_version : "";
	eng_unlock();
	return s;
}

const char *engine_nvml_version(void)
{
	const char *s;

	eng_lock();
	s = eng.refs ? eng.nvml_version : "";
	eng_unlock();
	return s;
}

int engine_cuda_version(void)
{
	int v;

	eng_lock();
	v = eng.refs ? eng.cuda_version : 0;
	eng_unlock();
	return v;
}

/* ---- enumeration ----------------------------------------------------- */

unsigned engine_device_count(void)
{
	unsigned n;

	eng_lock();
	n = eng.refs ? eng.ndev : 0;
	eng_unlock();
	return n;
}

struct mdev *engine_device(unsigned index)
{
	struct mdev *d;

	eng_lock();
	d = eng.refs && index < eng.ndev ? &eng_devs[index] : NULL;
	eng_unlock();
	return d;
}

struct mdev *engine_device_by_uuid(const char *uuid)
{
	struct mdev *d = NULL;

	eng_lock();
	for (unsigned i = 0; uuid && eng.refs && i < eng.ndev && !d; i++)
		if (!strcasecmp(eng_devs[i].uuid, uuid))
			d = &eng_devs[i];
	eng_unlock();
	return d;
}

struct mdev *engine_device_by_bus_id(const char *bus_id)
{
	unsigned long dom, dom2;
	unsigned bus, dev, fn, bus2, dev2, fn2;
	struct mdev *d = NULL;

	if (!bus_id || !eng_parse_bdf(bus_id, &dom, &bus, &dev, &fn))
		return NULL;
	eng_lock();
	for (unsigned i = 0; eng.refs && i < eng.ndev && !d; i++)
		if (eng_parse_bdf(eng_devs[i].bus_id, &dom2, &bus2, &dev2, &fn2) &&
		    dom == dom2 && bus == bus2 && dev == dev2 && fn == fn2)
			d = &eng_devs[i];
	eng_unlock();
	return d;
}

static bool is_handle(const void *h)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)eng_devs;

	if (!eng.refs)
		return false;
	if (p >= b && p < b + eng.ndev * sizeof(eng_devs[0]))
		return (p - b) % sizeof(eng_devs[0]) == 0;
	return eng_is_mig_handle(h);
}

bool engine_is_device(const void *handle)
{
	bool r;

	eng_lock();
	r = is_handle(handle);
	eng_unlock();
	return r;
}

bool eng_dev_ready(struct mdev *d)
{
	if (!is_handle(d))
		return false;
	eng_overrides_refresh(false);
	eng_state_refresh();
	if (d->parent)
		return eng_mig_ready(d);
	return d->eff != NULL;
}

/* ---- identity -------------------------------------------------------- */

unsigned mdev_index(const struct mdev *d)
{
	return d->index;
}

unsigned mdev_minor(const struct mdev *d)
{
	return d->minor;
}

const char *mdev_uuid(const struct mdev *d)
{
	return d->uuid;
}

const char *mdev_bus_id(const struct mdev *d)
{
	return d->bus_id;
}

int mdev_numa_node(const struct mdev *d)
{
	return d->numa_node;
}

const char *mdev_cpu_affinity(const struct mdev *d)
{
	return d->cpu_affinity;
}

/* ---- effective configuration ----------------------------------------- */

enum want { W_U64, W_I64, W_U32, W_DOUBLE, W_BOOL };

/* Dynamic values first (they mask the static ones), then the tree. */
static bool get_number(struct mdev *d, const char *path, enum want w, void *out)
{
	const struct yl_node *n;
	bool ok = false;
	double dv;

	eng_lock();
	if (!path || !eng_dev_ready(d))
		goto out;
	if (w != W_BOOL && eng_dynamic_value(d, path, &dv)) {
		long long v = (long long)(dv + (dv < 0 ? -0.5 : 0.5));

		switch (w) {
		case W_DOUBLE:
			*(double *)out = dv, ok = true;
			break;
		case W_I64:
			*(int64_t *)out = v, ok = true;
			break;
		case W_U64:
			if ((ok = v >= 0))
				*(uint64_t *)out = (uint64_t)v;
			break;
		case W_U32:
			if ((ok = v >= 0 && v <= UINT32_MAX))
				*(uint32_t *)out = (uint32_t)v;
			break;
		default:
			break;
		}
		goto out;
	}
	n = yl_path(d->eff, path);
	switch (w) {
	case W_U64:
		ok = yl_u64(n, out);
		break;
	case W_I64:
		ok = yl_i64(n, out);
		break;
	case W_U32: {
		uint64_t v;

		ok = yl_u64(n, &v) && v <= UINT32_MAX;
		if (ok)
			*(uint32_t *)out = (uint32_t)v;
		break;
	}
	case W_DOUBLE:
		ok = yl_double(n, out);
		break;
	case W_BOOL:
		ok = yl_bool(n, out);
		break;
	}
out:
	eng_unlock();
	return ok;
}

bool mdev_u64(struct mdev *d, const char *path, uint64_t *out)
{
	return get_number(d, path, W_U64, out);
}

bool mdev_i64(struct mdev *d, const char *path, int64_t *out)
{
	return get_number(d, path, W_I64, out);
}

bool mdev_u32(struct mdev *d, const char *path, uint32_t *out)
{
	return get_number(d, path, W_U32, out);
}

bool mdev_double(struct mdev *d, const char *path, double *out)
{
	return get_number(d, path, W_DOUBLE, out);
}

bool mdev_bool(struct mdev *d, const char *path, bool *out)
{
	return get_number(d, path, W_BOOL, out);
}

bool mdev_str(struct mdev *d, const char *path, const char **out)
{
	const char *s = NULL;

	eng_lock();
	if (path && eng_dev_ready(d)) {
		s = yl_text(yl_path(d->eff, path));
		if (s)
			s = intern(s);
	}
	eng_unlock();
	if (s)
		*out = s;
	return s != NULL;
}

size_t mdev_len(struct mdev *d, const char *path)
{
	const struct yl_node *n;
	size_t len = 0;

	eng_lock();
	if (path && eng_dev_ready(d)) {
		n = yl_path(d->eff, path);
		if (n && n->kind == YL_SEQ)
			len = n->n;
	}
	eng_unlock();
	return len;
}

bool mdev_has(struct mdev *d, const char *path)
{
	bool r = false;
	double dv;

	eng_lock();
	if (path && eng_dev_ready(d))
		r = !yl_is_null(yl_path(d->eff, path)) || eng_dynamic_value(d, path, &dv);
	eng_unlock();
	return r;
}

/* ---- the profile's top level (replaced by a live reload) ------------- */

static const struct yl_node *profile_at(const char *path)
{
	return eng.refs && path ? yl_path(eng.profile, path) : NULL;
}

bool engine_str(const char *path, const char **out)
{
	const char *s;

	eng_lock();
	s = yl_text(profile_at(path));
	if (s)	/* a live reload may free the tree */
		s = intern(s);
	eng_unlock();
	if (s)
		*out = s;
	return s != NULL;
}

bool engine_u64(const char *path, uint64_t *out)
{
	bool ok;

	eng_lock();
	ok = yl_u64(profile_at(path), out);
	eng_unlock();
	return ok;
}

bool engine_bool(const char *path, bool *out)
{
	bool ok;

	eng_lock();
	ok = yl_bool(profile_at(path), out);
	eng_unlock();
	return ok;
}

size_t engine_len(const char *path)
{
	const struct yl_node *n;
	size_t len;

	eng_lock();
	n = profile_at(path);
	len = n && n->kind == YL_SEQ ? n->n : 0;
	eng_unlock();
	return len;
}
