/* Fuzz the mock NVML's YAML reader and what consumes its trees: the input
 * is parsed (and, when libyaml also accepts it, compared with libyaml's
 * reading), validated and deep-merged as an overrides document, then fed
 * to the engine as its profile and as its overrides document.  Aborts
 * when a contract breaks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shims/nvml/engine_internal.h"
#include "profile/yaml_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_profile[] =
	"version: \"1.0\"\n"
	"system: {driver_version: \"550.163.01\"}\n"
	"device_defaults:\n"
	"  name: G\n"
	"  thermal: {temperature_gpu_c: 30}\n"
	"  fabric: {state: auto}\n"
	"devices:\n"
	"  - pci: {bus_id: \"0000:1a:00.0\"}\n"
	"  - pci: {bus_id: \"0000:2a:00.0\"}\n";

static void walk(const struct yl_node *n, int depth)
{
	uint64_t u;
	int64_t i;
	double d;
	bool b;

	if (!n || depth > YL_MAX_DEPTH + 1 || n->n > n->cap)
		abort();
	if (n->kind == YL_SCALAR) {
		if (!n->str || strlen(n->str) != n->len)
			abort();
		yl_u64(n, &u), yl_i64(n, &i), yl_double(n, &d), yl_bool(n, &b);
	}
	if (n->kind != YL_MAP && n->kind != YL_SEQ && n->n)
		abort();
	for (size_t k = 0; k < n->n; k++) {
		if ((n->kind == YL_MAP) != (n->kids[k]->key != NULL))
			abort();
		walk(n->kids[k], depth + 1);
	}
}

/* Where both parsers accept the input, they must read the same tree. */
static void same_tree(const struct yl_node *y, const struct ynode *t)
{
	if (yl_is_null(y)) {
		if (t && !ytree_is_null(t))
			abort();
		return;
	}
	if (!t)
		abort();
	switch (y->kind) {
	case YL_SCALAR:
		if (t->kind != YNODE_SCALAR || t->len != y->len || memcmp(t->str, y->str, y->len))
			abort();
		break;
	case YL_SEQ:
		if (t->kind != YNODE_SEQ || t->n != y->n)
			abort();
		for (size_t k = 0; k < y->n; k++)
			same_tree(y->kids[k], t->kids[k]);
		break;
	default:
		if (t->kind != YNODE_MAP || ytree_map_size(t) != y->n)
			abort();
		for (size_t k = 0; k < y->n; k++) {
			if (strcmp(ytree_map_key(t, k)->str, y->kids[k]->key))
				abort();
			same_tree(y->kids[k], ytree_map_value(t, k));
		}
	}
}

static int memfd_with(const char *name, const void *buf, size_t len, char *path, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

static void exercise_engine(void)
{
	static const char *const paths[] = {
		"name", "thermal.temperature_gpu_c", "power.current_draw_mw", "utilization.gpu",
		"utilization.memory", "fabric.clique_id", "processes[0].pid", "memory.total_bytes",
	};
	unsigned long long xid;
	const char *s;
	uint64_t v;

	if (engine_init() != ENG_SUCCESS)
		return;
	engine_driver_version();
	for (unsigned i = 0; i < engine_device_count(); i++) {
		struct mdev *d = engine_device(i);

		struct mdev *same;

		/* a hostile profile may repeat a uuid: lookups find the first */
		if (!engine_is_device(d) || mdev_index(d) != i || !mdev_uuid(d)[0] ||
		    strlen(mdev_bus_id(d)) != 16 ||
		    !(same = engine_device_by_uuid(mdev_uuid(d))) || mdev_index(same) > i ||
		    !(same = engine_device_by_bus_id(mdev_bus_id(d))) || mdev_index(same) > i)
			abort();
		for (size_t k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
			mdev_u64(d, paths[k], &v);
			if (mdev_str(d, paths[k], &s) && !s)
				abort();
			mdev_len(d, paths[k]);
		}
		mdev_guard(d);
		mdev_lost(d);
		mdev_ecc_bump(d);
		mdev_take_xid(d, &xid);
		if (mdev_fabric_state(d) > 3)
			abort();
	}
	engine_shutdown();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool once;
	struct yl_error e;
	struct ytree_error te;
	struct ynode *t = NULL;
	struct yl_node *doc = yl_parse((const char *)data, size, &e), *c, *base;
	char why[256], cfg[64], ovr[64];
	int fd_cfg, fd_ovr;

	if (!once) {
		once = true;
		setenv("MOCK_NVML_DEV_DIR", "/nonexistent-mokka-dev", 1);
		setenv("MOCK_FABRICMANAGER_STATE_DIR", "/nonexistent-mokka-fm", 1);
		unsetenv("NODE_NAME");
	}
	if (!doc) {
		if (e.line < 1 || e.col < 1 || !e.msg[0])
			abort();
		return 0;
	}
	walk(doc, 0);
	c = yl_clone(doc);
	if (!c || !yl_equal(doc, c))
		abort();
	if (ytree_parse((const char *)data, size, &t, &te) == 0)
		same_tree(doc, t);
	ytree_free(t);

	/* As an overrides document: validated, then merged over a device. */
	bool valid = eng_overrides_valid(doc, why, sizeof(why));
	base = yl_parse(fixed_profile, sizeof(fixed_profile) - 1, &e);
	if (!base)
		abort();
	if (valid && doc->kind == YL_MAP) {
		struct yl_node *dev = yl_get(base, "device_defaults");

		if (ovr_merge(dev, yl_get(doc, "all")) < 0)
			abort();
		walk(base, 0);
	}

	/* Through the engine, as its profile and as its overrides. */
	fd_cfg = memfd_with("cfg", data, size, cfg, sizeof(cfg));
	fd_ovr = memfd_with("ovr", fixed_profile, sizeof(fixed_profile) - 1, ovr, sizeof(ovr));
	if (fd_cfg >= 0 && fd_ovr >= 0 && doc->kind == YL_MAP) {
		setenv("MOCK_NVML_CONFIG", cfg, 1);
		setenv("MOCK_NVML_OVERRIDES", "/nonexistent-mokka-overrides", 1);
		exercise_engine();
		setenv("MOCK_NVML_CONFIG", ovr, 1);
		setenv("MOCK_NVML_OVERRIDES", cfg, 1);
		exercise_engine();
	}
	if (fd_cfg >= 0)
		close(fd_cfg);
	if (fd_ovr >= 0)
		close(fd_ovr);
	yl_free(base);
	yl_free(c);
	yl_free(doc);
	return 0;
}
