/* Shared fixture of the mock NVML engine tests: a temp dir per test (the
 * engine's config, overrides and /dev live there), helpers to write files
 * atomically and read the engine, and a small profile with one device per
 * boot-merge rule.  Included by test_nvml_engine*.c only. */
#ifndef MOKKA_TESTS_NVML_ENGINE_FIXTURE_H
#define MOKKA_TESTS_NVML_ENGINE_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shims/nvml/engine.h"

static char tmp[256];

static void put(const char *name, const char *content)
{
	char path[512], part[600];
	FILE *f;

	/* rename over, as mokka-ctl does, so the change is one step */
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	snprintf(part, sizeof(part), "%s.tmp", path);
	f = fopen(part, "w");
	cr_assert_not_null(f, "%s: %s", part, strerror(errno));
	fputs(content, f);
	fclose(f);
	cr_assert_eq(rename(part, path), 0);
}

__attribute__((unused)) static const char *at(const char *name)
{
	static char path[4][512];
	static int slot;

	slot = (slot + 1) % 4;
	snprintf(path[slot], sizeof(path[slot]), "%s/%s", tmp, name);
	return path[slot];
}

static void setup(void)
{
	static const char *const vars[] = {
		"MOCK_NVML_CONFIG", "MOCK_NVML_OVERRIDES", "MOCK_TOPOLOGY_CONFIG", "NODE_NAME",
		"MOCK_FABRICMANAGER_STATE_DIR", "MOCK_NVML_DEV_DIR",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-nvml-engine-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	/* an empty /dev: every device visible whatever the host has */
	cr_assert_eq(mkdir(at("dev"), 0755), 0);
	setenv("MOCK_NVML_DEV_DIR", at("dev"), 1);
	setenv("MOCK_NVML_CONFIG", at("config.yaml"), 1);
	/* tests that use a shipped profile keep their overrides here too */
	setenv("MOCK_NVML_OVERRIDES", at("overrides.yaml"), 1);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void teardown(void)
{
	while (engine_initialized())
		engine_shutdown();
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}


__attribute__((unused)) static const char *profile_path(const char *name)
{
	static char path[4096];
	const char *src = getenv("MOKKA_SRCDIR");

	snprintf(path, sizeof(path), "%s/etc/profiles/%s", src ? src : ".", name);
	return path;
}

static void init_ok(void)
{
	cr_assert_eq(engine_init(), ENG_SUCCESS, "engine_init (config %s)",
		     getenv("MOCK_NVML_CONFIG"));
}

__attribute__((unused)) static const char *str(struct mdev *d, const char *path)
{
	const char *s = NULL;

	cr_assert(mdev_str(d, path, &s), "no string at %s", path);
	return s;
}

__attribute__((unused)) static uint64_t u64(struct mdev *d, const char *path)
{
	uint64_t v = 0;

	cr_assert(mdev_u64(d, path, &v), "no number at %s", path);
	return v;
}

__attribute__((unused)) static const char base_profile[] =
	"version: \"1.0\"\n"
	"system: {driver_version: \"550.163.01\", cuda_version: \"12.4\"}\n"
	"device_defaults:\n"
	"  name: \"Test GPU\"\n"
	"  brand: nvidia\n"
	"  serial: \"S-default\"\n"
	"  architecture: hopper\n"
	"  compute_capability: {major: 9, minor: 0}\n"
	"  memory: {total_bytes: 1000, reserved_bytes: 10, free_bytes: 990, used_bytes: 0}\n"
	"  bar1_memory: {total_bytes: 64}\n"
	"  pci: {device_id: 0x233010DE, subsystem_id: 0x16C110DE}\n"
	"  pcie: {max_link_gen: 5}\n"
	"  thermal: {temperature_gpu_c: 30, shutdown_threshold_c: 95}\n"
	"  power: {current_draw_mw: 70000, max_limit_mw: 700000}\n"
	"  utilization: {gpu: 3, memory: 4}\n"
	"  platform: {chassis_serial_number: \"C1\", slot_number: 4, module_id: 1}\n"
	"  supported_clocks:\n"
	"    memory_clocks:\n"
	"      - freq_mhz: 2619\n"
	"        graphics_clocks: [1980, 1000]\n"
	"  processes: [{pid: 1, name: x}]\n"
	"devices:\n"
	"  - index: 2\n"
	"    uuid: GPU-00000000-0000-0000-0000-000000000002\n"
	"    pci: {bus_id: \"0000:3a:00.0\"}\n"
	"  - index: 0\n"
	"    uuid: GPU-00000000-0000-0000-0000-000000000000\n"
	"    name: \"Special GPU\"\n"
	"    serial: \"\"\n"
	"    pci: {bus_id: \"0000:1a:00.0\", device_id: 0}\n"
	"    platform: {slot_number: 0, module_id: 7}\n"
	"    memory: {total_bytes: 5}\n"
	"    pcie: {max_link_gen: 3}\n"
	"    processes: []\n"
	"  - index: 1\n"
	"    uuid: GPU-00000000-0000-0000-0000-000000000001\n"
	"    minor_number: 5\n"
	"    pci: {bus_id: \"0000:2a:00.0\"}\n";

#endif
