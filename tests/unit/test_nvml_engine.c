/* The mock NVML engine (shims/nvml/engine*.c) linked directly: shipped
 * profiles, the boot merge, the GPU count cap, /dev visibility, the
 * overrides and their 1 s reload, fabric state and the topology overlay.
 * Faults, dynamic metrics and threads are in test_nvml_engine_faults.c.
 * Every test runs in its own process (Criterion forks), with its own temp
 * dir and environment. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>

#include "ipc/state.h"
#include "profile/compile.h"
#include "profile/yaml_tree.h"
#include "tests/unit/nvml_engine_fixture.h"

TestSuite(nvml_engine, .init = setup, .fini = teardown);

/* ---- shipped profiles, checked against libyaml's reading of them ----- */

static const struct ynode *yget(const struct ynode *m, const char *k)
{
	return m && m->kind == YNODE_MAP ? ytree_map_get(m, k) : NULL;
}

static const char *ystr(const struct ynode *n)
{
	return n && n->kind == YNODE_SCALAR && n->len ? n->str : NULL;
}

static void check_profile(const char *name)
{
	char *buf = malloc(1 << 20);
	FILE *f = fopen(profile_path(name), "rb");
	size_t len = fread(buf, 1, 1 << 20, f), n;
	struct ytree_error e;
	struct ynode *root = NULL;
	const struct ynode *defs, *devs;
	uint64_t want_mem;

	fclose(f);
	cr_assert_eq(ytree_parse(buf, len, &root, &e), 0);
	defs = yget(root, "device_defaults");
	devs = yget(root, "devices");
	setenv("MOCK_NVML_CONFIG", profile_path(name), 1);
	init_ok();
	n = devs->n;
	cr_assert_eq(engine_device_count(), n, "%s", name);
	cr_assert_str_eq(engine_driver_version(), ystr(yget(yget(root, "system"), "driver_version")));
	for (size_t i = 0; i < n; i++) {
		/* the profiles list devices in index order */
		const struct ynode *ent = devs->kids[i];
		struct mdev *d = engine_device((unsigned)i);
		const char *bus = ystr(yget(yget(ent, "pci"), "bus_id"));
		const char *nm = ystr(yget(ent, "name")) ? ystr(yget(ent, "name"))
							  : ystr(yget(defs, "name"));
		const struct ynode *mem = yget(ent, "memory") ? yget(ent, "memory")
							      : yget(defs, "memory");
		char want_bus[32];

		cr_assert_not_null(d);
		cr_assert_eq(mdev_index(d), i);
		cr_assert_str_eq(mdev_uuid(d), ystr(yget(ent, "uuid")), "%s[%zu]", name, i);
		snprintf(want_bus, sizeof(want_bus), "0000%.12s", bus);
		for (char *c = want_bus; *c; c++)
			*c = (char)toupper((unsigned char)*c);
		cr_assert_str_eq(mdev_bus_id(d), want_bus, "%s[%zu]", name, i);
		cr_assert_str_eq(str(d, "name"), nm);
		cr_assert_eq(ytree_uint(yget(mem, "total_bytes"), &want_mem), 0);
		cr_assert_eq(u64(d, "memory.total_bytes"), want_mem, "%s[%zu]", name, i);
		cr_assert_eq(engine_device_by_uuid(mdev_uuid(d)), d);
		cr_assert_eq(engine_device_by_bus_id(bus), d, "%s: %s", name, bus);
		cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	}
	cr_assert_eq(engine_shutdown(), ENG_SUCCESS);
	ytree_free(root);
	free(buf);
}

Test(nvml_engine, every_shipped_profile)
{
	DIR *dp = opendir(profile_path(""));
	struct dirent *de;
	int seen = 0;

	cr_assert_not_null(dp);
	while ((de = readdir(dp)))
		if (strstr(de->d_name, ".yaml")) {
			check_profile(de->d_name);
			seen++;
		}
	closedir(dp);
	cr_assert_geq(seen, 7);
}

Test(nvml_engine, system_and_lifecycle)
{
	setenv("MOCK_NVML_CONFIG", profile_path("a100.yaml"), 1);
	cr_assert_eq(engine_shutdown(), ENG_ERROR_UNINITIALIZED);
	init_ok();
	init_ok();
	cr_assert_str_eq(engine_driver_version(), "550.163.01");
	cr_assert_eq(engine_cuda_version(), 12040);
	cr_assert_eq(engine_len("pcie_topology.root_complexes"), 2);
	const char *s;
	uint64_t v;
	bool b;
	cr_assert(engine_str("pcie_topology.root_complexes[1].id", &s));
	cr_assert_str_eq(s, "pci0000:80");
	cr_assert(engine_u64("nvlink.links_per_gpu", &v) && v == 12);
	cr_assert(engine_bool("nvlink.c2c_enabled", &b) && !b);
	cr_assert_eq(engine_shutdown(), ENG_SUCCESS);
	cr_assert(engine_initialized(), "refcounted: one init left");
	cr_assert_eq(engine_shutdown(), ENG_SUCCESS);
	cr_assert_not(engine_initialized());
	cr_assert_eq(engine_device_count(), 0);
	cr_assert_null(engine_device(0));
}

Test(nvml_engine, missing_or_bad_config)
{
	cr_assert_eq(engine_init(), ENG_ERROR_DRIVER_NOT_LOADED, "no config.yaml yet");
	put("config.yaml", "system: [\n");
	cr_assert_eq(engine_init(), ENG_ERROR_DRIVER_NOT_LOADED);
	put("config.yaml", "system: {nvml_version: x}\n");
	cr_assert_eq(engine_init(), ENG_ERROR_DRIVER_NOT_LOADED, "driver_version is required");
	cr_assert_not(engine_initialized());
}

Test(nvml_engine, pcie_affinity_and_handles)
{
	setenv("MOCK_NVML_CONFIG", profile_path("a100.yaml"), 1);
	init_ok();
	struct mdev *d0 = engine_device(0), *d4 = engine_device(4);

	cr_assert_eq(mdev_numa_node(d0), 0);
	cr_assert_str_eq(mdev_cpu_affinity(d0), "0-63,128-191");
	cr_assert_eq(mdev_numa_node(d4), 1);
	cr_assert_str_eq(mdev_cpu_affinity(d4), "64-127,192-255");
	cr_assert_eq(engine_device_by_bus_id("00000000:07:00.0"), d0);
	cr_assert_eq(engine_device_by_bus_id("0000:07:00.0"), d0);
	cr_assert_eq(engine_device_by_bus_id("07:00.0"), d0);
	cr_assert_eq(engine_device_by_bus_id("0000:87:00.0"), d4);
	cr_assert_null(engine_device_by_bus_id("0000:99:00.0"));
	cr_assert_null(engine_device_by_bus_id("garbage"));
	cr_assert_null(engine_device_by_uuid("GPU-nope"));
	cr_assert(engine_is_device(d4));
	cr_assert_not(engine_is_device((char *)d4 + 1));
	cr_assert_not(engine_is_device(&d4));
	cr_assert_not(engine_is_device(NULL));
	cr_assert_null(engine_device(8));
	cr_assert_eq(mdev_len(d0, "supported_clocks.memory_clocks"), 1);
	cr_assert_eq(u64(d0, "supported_clocks.memory_clocks[0].graphics_clocks[0]"), 1410);
}

/* ---- the boot merge, the cap, visibility ------------------------------ */

Test(nvml_engine, device_merge_rules)
{
	put("config.yaml", base_profile);
	init_ok();
	cr_assert_eq(engine_device_count(), 3);
	struct mdev *d0 = engine_device(0), *d1 = engine_device(1), *d2 = engine_device(2);
	bool has;

	cr_assert_str_eq(mdev_uuid(d0), "GPU-00000000-0000-0000-0000-000000000000", "sorted by index");
	cr_assert_str_eq(mdev_uuid(d2), "GPU-00000000-0000-0000-0000-000000000002");
	cr_assert_str_eq(mdev_bus_id(d0), "00000000:1A:00.0");
	cr_assert_eq(mdev_minor(d0), 0);
	cr_assert_eq(mdev_minor(d1), 5, "minor_number");
	cr_assert_eq(mdev_minor(d2), 2, "minor defaults to the index");
	cr_assert_eq(mdev_numa_node(d0), -1);
	cr_assert_str_eq(mdev_cpu_affinity(d0), "");
	/* scalars copied when non-empty */
	cr_assert_str_eq(str(d0, "name"), "Special GPU");
	cr_assert_str_eq(str(d1, "name"), "Test GPU");
	cr_assert_str_eq(str(d0, "serial"), "S-default", "an empty serial keeps the default");
	/* pci and platform field by field; a zero field keeps the default */
	cr_assert_eq(u64(d0, "pci.device_id"), 0x233010DE);
	cr_assert_str_eq(str(d0, "pci.bus_id"), "0000:1a:00.0");
	cr_assert_eq(u64(d0, "platform.module_id"), 7);
	cr_assert_eq(u64(d0, "platform.slot_number"), 4);
	cr_assert_str_eq(str(d0, "platform.chassis_serial_number"), "C1");
	/* memory replaced wholesale; pcie not merged per device */
	cr_assert_eq(u64(d0, "memory.total_bytes"), 5);
	cr_assert_not(mdev_has(d0, "memory.free_bytes"));
	cr_assert_eq(u64(d1, "memory.free_bytes"), 990);
	cr_assert_eq(u64(d0, "pcie.max_link_gen"), 5);
	/* an empty processes list clears the default */
	cr_assert_eq(mdev_len(d0, "processes"), 0);
	cr_assert(mdev_has(d0, "processes"));
	cr_assert_eq(mdev_len(d1, "processes"), 1);
	cr_assert(mdev_bool(d0, "nope", &has) == false);
}

Test(nvml_engine, default_uuid_matches_the_supervisor)
{
	static const char doc[] =
		"version: \"1.0\"\n"
		"system: {driver_version: \"1.0\"}\n"
		"device_defaults: {name: X, serial: \"S1\", pci: {device_id: 0x233010DE}}\n"
		"devices:\n  - pci: {bus_id: \"0000:01:00.0\"}\n"
		"  - {index: 1, serial: \"S2\", pci: {bus_id: \"0000:02:00.0\"}}\n";
	struct state st;
	char err[256];

	state_init(&st);
	cr_assert_eq(compile_profile("p.yaml", doc, strlen(doc), NULL, NULL, 0, NULL, &st,
				     err, sizeof(err)), 0, "%s", err);
	put("config.yaml", doc);
	init_ok();
	cr_assert_eq(engine_device_count(), 2);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_str_eq(mdev_uuid(engine_device(i)), st.devices[i].uuid,
				 "NVML and the staged surfaces name GPU %u alike", i);
	cr_assert_str_neq(mdev_uuid(engine_device(0)), mdev_uuid(engine_device(1)));
	state_free(&st);
}

Test(nvml_engine, num_devices_cap)
{
	char doc[sizeof(base_profile) + 64];

	snprintf(doc, sizeof(doc), "system: {num_devices: 2, driver_version: \"550.163.01\"}\n%s",
		 strstr(base_profile, "device_defaults:"));
	put("config.yaml", doc);
	init_ok();
	cr_assert_eq(engine_device_count(), 2);
	cr_assert_str_eq(mdev_uuid(engine_device(0)), "GPU-00000000-0000-0000-0000-000000000000");
	cr_assert_str_eq(mdev_uuid(engine_device(1)), "GPU-00000000-0000-0000-0000-000000000001");
}

Test(nvml_engine, visibility_follows_dev_nodes)
{
	setenv("MOCK_NVML_CONFIG", profile_path("h100.yaml"), 1);
	put("dev/nvidia0", "");
	put("dev/nvidia2", "");
	put("dev/nvidiactl", "");
	put("dev/nvidia-uvm", "");
	init_ok();
	cr_assert_eq(engine_device_count(), 2);
	struct mdev *a = engine_device(0), *b = engine_device(1);

	cr_assert_str_eq(mdev_uuid(a), "GPU-2330de10-0000-0000-0000-000000000000");
	cr_assert_str_eq(mdev_uuid(b), "GPU-2330de10-0000-0000-0000-000000000002");
	cr_assert_eq(mdev_index(b), 1, "indices are this process's enumeration");
	cr_assert_eq(mdev_minor(b), 2);
	cr_assert_null(engine_device_by_uuid("GPU-2330de10-0000-0000-0000-000000000001"));
}

/* A container given no GPU (NVIDIA_VISIBLE_DEVICES=none): nvidiactl alone,
 * and the real driver lists no device. */
Test(nvml_engine, nvidiactl_alone_shows_no_gpu)
{
	setenv("MOCK_NVML_CONFIG", profile_path("h100.yaml"), 1);
	put("dev/nvidiactl", "");
	put("dev/nvidia-uvm", "");
	init_ok();
	cr_assert_eq(engine_device_count(), 0);
}

/* ---- overrides -------------------------------------------------------- */

Test(nvml_engine, overrides_all_then_device)
{
	put("config.yaml", base_profile);
	put("overrides.yaml",
	    "version: 1\n"
	    "all:\n"
	    "  thermal: {temperature_gpu_c: 50}\n"
	    "  utilization: {gpu: 9}\n"
	    "  name: \"Renamed\"\n"
	    "  pci: {bus_id: \"0000:ff:00.0\", device_id: 0x1}\n"
	    "devices:\n"
	    "  \"1\":\n"
	    "    thermal: {temperature_gpu_c: 70}\n"
	    "    power: {current_draw_mw: null}\n"
	    "    supported_clocks: {memory_clocks: [{freq_mhz: 1}]}\n"
	    "    fan: {count: 1, speed_percent: \"40\"}\n");
	init_ok();
	struct mdev *d0 = engine_device(0), *d1 = engine_device(1);

	cr_assert_eq(u64(d0, "thermal.temperature_gpu_c"), 50);
	cr_assert_eq(u64(d0, "thermal.shutdown_threshold_c"), 95, "maps merge recursively");
	cr_assert_eq(u64(d1, "thermal.temperature_gpu_c"), 70, "devices[i] after all");
	cr_assert_eq(u64(d1, "utilization.gpu"), 9);
	cr_assert_eq(u64(d1, "utilization.memory"), 4);
	cr_assert_not(mdev_has(d1, "power.current_draw_mw"), "null replaces");
	cr_assert(mdev_has(d0, "power.current_draw_mw"));
	cr_assert_eq(mdev_len(d1, "supported_clocks.memory_clocks[0].graphics_clocks"), 0,
		     "lists replace");
	cr_assert_str_eq(str(d1, "fan.speed_percent"), "40");
	/* not hot-reloadable */
	cr_assert_str_eq(str(d0, "name"), "Special GPU");
	cr_assert_str_eq(str(d1, "pci.bus_id"), "0000:2a:00.0");
	cr_assert_eq(u64(d1, "pci.device_id"), 1, "other pci fields do change");
	cr_assert_eq(u64(d0, "bar1_memory.total_bytes"), 64);
}

Test(nvml_engine, overrides_reload_within_a_second)
{
	put("config.yaml", base_profile);
	put("overrides.yaml", "version: 1\nall: {thermal: {temperature_gpu_c: 50}}\n");
	init_ok();
	struct mdev *d = engine_device(0);
	const char *name = str(d, "name");

	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 50);
	put("overrides.yaml", "version: 1\nall: {thermal: {temperature_gpu_c: 61}}\n");
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 61);
	cr_assert_str_eq(name, "Special GPU", "strings handed out survive a reload");

	/* a bad document is ignored; the previous one stays */
	put("overrides.yaml", "version: 1\nall: {thermal: [\n");
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 61);
	put("overrides.yaml", "version: 1\nall: {thermal_typo: {temperature_gpu_c: 1}}\n");
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 61, "unknown fields are an error");
	put("overrides.yaml", "version: 2\n");
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 61);

	/* a missing file means no overrides */
	cr_assert_eq(unlink(at("overrides.yaml")), 0);
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 30);
}

Test(nvml_engine, overrides_beside_config_or_from_env)
{
	put("config.yaml", base_profile);
	unsetenv("MOCK_NVML_OVERRIDES");
	put("overrides.yaml", "all: {utilization: {gpu: 55}}\n");
	init_ok();
	cr_assert_eq(u64(engine_device(0), "utilization.gpu"), 55);
	engine_shutdown();

	put("overrides.yaml", "");
	init_ok();
	cr_assert_eq(u64(engine_device(0), "utilization.gpu"), 3, "an empty document");
	engine_shutdown();

	put("elsewhere.yaml", "devices: {\"2\": {utilization: {gpu: 77}}}\n");
	setenv("MOCK_NVML_OVERRIDES", at("elsewhere.yaml"), 1);
	init_ok();
	cr_assert_eq(u64(engine_device(2), "utilization.gpu"), 77);
	cr_assert_eq(u64(engine_device(0), "utilization.gpu"), 3);
}

/* ---- fabric ------------------------------------------------------------ */

Test(nvml_engine, fabric_auto_follows_the_marker)
{
	setenv("MOCK_NVML_CONFIG", profile_path("h100.yaml"), 1);
	cr_assert_eq(mkdir(at("fabric-state"), 0755), 0);
	setenv("MOCK_FABRICMANAGER_STATE_DIR", at("fabric-state"), 1);
	init_ok();
	cr_assert_eq(mdev_fabric_state(engine_device(0)), 2, "no marker: in progress");
	engine_shutdown();
	put("fabric-state/fabricmanager.ready", "");
	init_ok();
	cr_assert_eq(mdev_fabric_state(engine_device(0)), 3, "marker: completed");
	unlink(at("fabric-state/fabricmanager.ready"));
	usleep(1100 * 1000);
	cr_assert_eq(mdev_fabric_state(engine_device(7)), 2, "re-checked after the TTL");
}

Test(nvml_engine, fabric_static_states)
{
	setenv("MOCK_NVML_CONFIG", profile_path("gb200.yaml"), 1);
	put("overrides.yaml", "devices:\n"
			      "  \"0\": {fabric: {state: not_supported}}\n"
			      "  \"1\": {fabric: {state: not_started}}\n"
			      "  \"2\": {fabric: {state: in_progress}}\n"
			      "  \"3\": {fabric: {state: completed}}\n"
			      "  \"4\": {fabric: {state: \"\"}}\n"
			      "  \"5\": {fabric: {state: whatever}}\n"
			      "  \"6\": {fabric: null}\n");
	init_ok();
	static const unsigned want[] = { 0, 1, 2, 3, 3, 3, 0 };

	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(mdev_fabric_state(engine_device(i)), want[i], "device %u", i);
	/* no env and no default state dir beside the driver root: completed */
	cr_assert_eq(mdev_fabric_state(engine_device(7)), 3);
}

Test(nvml_engine, no_fabric_block_is_not_supported)
{
	setenv("MOCK_NVML_CONFIG", profile_path("a100.yaml"), 1);
	init_ok();
	cr_assert_eq(mdev_fabric_state(engine_device(0)), 0);
}

static const char topology[] =
	"version: 1\n"
	"domains:\n"
	"- name: demo\n"
	"  uuid: \"00000000-0000-0000-0000-0000000000ab\"\n"
	"  cliques:\n"
	"  - id: 0\n"
	"    nodes: [node-a]\n"
	"  - id: 7\n"
	"    nodes: [node-b, node-c]\n"
	"- uuid: \"00000000-0000-0000-0000-0000000000cd\"\n"
	"  cliques:\n"
	"  - id: 9\n"
	"    nodes: [node-b]\n";

Test(nvml_engine, topology_overlay)
{
	setenv("MOCK_NVML_CONFIG", profile_path("gb200.yaml"), 1);
	put("topo.yaml", topology);
	setenv("MOCK_TOPOLOGY_CONFIG", at("topo.yaml"), 1);
	setenv("NODE_NAME", "node-b", 1);
	init_ok();
	for (unsigned i = 0; i < engine_device_count(); i++) {
		struct mdev *d = engine_device(i);
		uint32_t id;

		cr_assert_str_eq(str(d, "fabric.cluster_uuid"), "00000000-0000-0000-0000-0000000000ab");
		cr_assert(mdev_u32(d, "fabric.clique_id", &id) && id == 7, "first clique wins");
		cr_assert_str_eq(str(d, "fabric.state"), "auto", "a set state is kept");
	}
	engine_shutdown();

	setenv("NODE_NAME", "node-z", 1);
	init_ok();
	cr_assert_str_eq(str(engine_device(0), "fabric.cluster_uuid"),
			 "00000000-0000-0000-0000-000000000001", "unlisted node keeps defaults");
}

Test(nvml_engine, topology_beside_config_sets_empty_state)
{
	char doc[sizeof(base_profile) + 128];

	snprintf(doc, sizeof(doc), "%s", base_profile);
	snprintf(strstr(doc, "devices:\n"), sizeof(doc) - (size_t)(strstr(doc, "devices:\n") - doc),
		 "  fabric: {cluster_uuid: \"x\", clique_id: 0}\n%s",
		 strstr(base_profile, "devices:\n"));
	put("config.yaml", doc);
	put("topology.yaml", topology);
	setenv("NODE_NAME", "node-a", 1);
	init_ok();
	cr_assert_str_eq(str(engine_device(1), "fabric.cluster_uuid"),
			 "00000000-0000-0000-0000-0000000000ab");
	cr_assert_str_eq(str(engine_device(1), "fabric.state"), "completed");
	cr_assert_eq(mdev_fabric_state(engine_device(1)), 3);
}

Test(nvml_engine, topology_needs_a_fabric_profile)
{
	setenv("MOCK_NVML_CONFIG", profile_path("a100.yaml"), 1);
	put("topo.yaml", topology);
	setenv("MOCK_TOPOLOGY_CONFIG", at("topo.yaml"), 1);
	setenv("NODE_NAME", "node-a", 1);
	init_ok();
	cr_assert_not(mdev_has(engine_device(0), "fabric"));
}
