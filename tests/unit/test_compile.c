/* Profile compiler: every shipped profile compiles to the right shape, the
 * built-in default compiles, and the compile semantics (merge, defaults,
 * caps, topology) hold.  Bad input: test_compile_errors.c. */
#include "tests/unit/compile_fixture.h"

struct shipped {
	const char *name;
	int devices, roots;
	uint16_t device_id, subsys_device_id;
	int gen;
	int numa_last;			/* NUMA node of the last GPU */
	bool fabric;
	uint64_t memory;
};

static const struct shipped shipped[] = {
	{ "a100", 8, 2, 0x20b0, 0x134f, 4, 1, true, 42949672960ull },
	{ "h100", 8, 2, 0x2330, 0x16c1, 5, 1, true, 85520809984ull },
	{ "h200", 8, 2, 0x2335, 0x18be, 5, 1, true, 150754820096ull },
	{ "b200", 8, 2, 0x2901, 0x1999, 5, 1, true, 192265846784ull },
	{ "gb200", 8, 4, 0x2941, 0x2046, 5, 3, true, 198674743296ull },
	{ "gb300", 8, 4, 0x31c2, 0x21f1, 6, 3, true, 298013687808ull },
	{ "l40s", 8, 2, 0x26b9, 0x1851, 4, 1, false, 48305799168ull },
	{ "t4", 4, 1, 0x1eb8, 0x12a2, 3, 0, false, 16106127360ull },
};

static void check_shipped(const struct shipped *p)
{
	char path[4096];
	size_t len;
	char *yaml;
	int rc;

	profile_path(path, sizeof(path), p->name);
	yaml = read_file(path, &len);
	state_free(&st);
	state_init(&st);
	rc = compile_profile(path, yaml, len, NULL, NULL, 0, NULL, &st, err, sizeof(err));
	free(yaml);
	cr_assert_eq(rc, 0, "%s: %s", p->name, err);
	cr_assert_eq(st.num_devices, p->devices, "%s", p->name);
	cr_assert_eq(st.num_roots, p->roots, "%s", p->name);
	cr_assert_eq(st.fabric.enabled, p->fabric, "%s", p->name);
	cr_assert_gt(st.cores_per_numa, 0, "%s", p->name);
	cr_assert_neq(st.driver_version[0], '\0');
	for (int i = 0; i < st.num_devices; i++) {
		const struct state_device *d = &st.devices[i];

		cr_assert_eq(d->index, i, "%s", p->name);
		cr_assert_eq(d->minor, i, "%s", p->name);
		cr_assert_eq(d->vendor_id, 0x10de);
		cr_assert_eq(d->device_id, p->device_id, "%s: %04x", p->name, d->device_id);
		cr_assert_eq(d->subsys_vendor_id, 0x10de);
		cr_assert_eq(d->subsys_device_id, p->subsys_device_id, "%s", p->name);
		cr_assert_eq(d->pcie.max_gen, p->gen, "%s", p->name);
		cr_assert_eq(d->pcie.max_width, 16, "%s", p->name);
		cr_assert_eq(d->memory_total_bytes, p->memory, "%s", p->name);
		cr_assert(state_valid_bdf(d->bus_id), "%s: %s", p->name, d->bus_id);
		cr_assert_geq(d->root, 0, "%s: GPU %d has no root", p->name, i);
		cr_assert_eq(d->numa_node, st.roots[d->root].numa_node);
		cr_assert_str_eq(d->architecture, p->name[0] == 'a' ? "ampere" :
				 p->name[0] == 'h' ? "hopper" : p->name[0] == 'l' ?
				 "ada_lovelace" : p->name[0] == 't' ? "turing" : "blackwell");
		cr_assert_eq(strncmp(d->uuid, "GPU-", 4), 0);
	}
	cr_assert_eq(st.devices[0].numa_node, 0, "%s", p->name);
	cr_assert_eq(st.devices[p->devices - 1].numa_node, p->numa_last, "%s", p->name);
	for (int r = 0; r < st.num_roots; r++)
		cr_assert_neq(st.roots[r].cpu_affinity[0], '\0', "%s", p->name);
	cr_assert_not_null(st.profile_json);
}

Test(compile, shipped_profiles)
{
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++)
		check_shipped(&shipped[i]);
}

Test(compile, gb200_has_two_gpus_per_root)
{
	check_shipped(&shipped[4]);
	for (int r = 0; r < 4; r++) {
		int n = 0;

		for (int i = 0; i < st.num_devices; i++)
			n += st.devices[i].root == r;
		cr_assert_eq(n, 2, "root %s holds %d GPUs", st.roots[r].id, n);
		cr_assert_eq(st.roots[r].numa_node, r);
	}
	cr_assert_str_eq(st.roots[3].id, "pci0000:c0");
}

Test(compile, builtin_default_is_h100)
{
	int rc;

	cr_assert_gt(compile_default_profile_len, 100);
	cr_assert_eq(compile_default_profile[compile_default_profile_len], '\0');
	cr_assert_eq(strlen(compile_default_profile), compile_default_profile_len);
	rc = compile_profile("<built-in>", compile_default_profile,
			     compile_default_profile_len, NULL, NULL, 0, NULL, &st,
			     err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 8);
	cr_assert_eq(st.num_roots, 2);
	cr_assert_str_eq(st.devices[0].name, "NVIDIA H100 80GB HBM3");
	cr_assert_str_eq(st.devices[0].bus_id, "0000:1a:00.0", "bus ids are lowercased");
	cr_assert_eq(st.devices[3].numa_node, 0);
	cr_assert_eq(st.devices[4].numa_node, 1);
	cr_assert(st.fabric.enabled);
	cr_assert_eq(st.fabric.links_per_gpu, 18);
	cr_assert_str_eq(st.fabric.state_dir, "/var/lib/nvml-mock/fabric-state");
	cr_assert_str_eq(st.mock_root, "/var/lib/nvml-mock");
}


Test(compile, minimal_profile_semantics)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL);
	const struct state_device *d = &st.devices[1];

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 2);
	cr_assert_eq(d->device_id, 0x2330);
	cr_assert_eq(d->vendor_id, 0x10de);
	cr_assert_eq(d->subsys_device_id, 0x16c1);
	cr_assert_eq(d->subsys_vendor_id, 0x10de, "subsystem vendor 0 means the vendor");
	cr_assert_eq(d->numa_node, 1);
	cr_assert_eq(d->root, 1);
	cr_assert_eq(d->minor, 1, "minor defaults to the index");
	cr_assert_eq(d->pcie.cur_gen, 5, "current gen defaults to max");
	cr_assert_eq(d->pcie.cur_width, 16);
	cr_assert_str_eq(d->name, "NVIDIA H100 80GB HBM3");
	cr_assert_eq(strlen(d->uuid), 40, "uuid '%s'", d->uuid);
	cr_assert_eq(strncmp(d->uuid, "GPU-", 4), 0);
	cr_assert_str_neq(st.devices[0].uuid, d->uuid);
	cr_assert(!st.fabric.enabled);
}

Test(compile, default_uuid_is_deterministic)
{
	char first[STATE_NAME_MAX];

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	strcpy(first, st.devices[0].uuid);
	state_free(&st);
	state_init(&st);
	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	cr_assert_str_eq(st.devices[0].uuid, first);
}

Test(compile, device_values_override_defaults)
{
	int rc = compile_str("p.yaml", HEAD
		"devices:\n"
		"  - index: 1\n"
		"    name: \"Other\"\n"
		"    uuid: \"GPU-abcdef01-0000-0000-0000-000000000001\"\n"
		"    minor_number: 9\n"
		"    memory: {reserved_bytes: 0, total_bytes: 1024}\n"
		"    pci: {bus_id: \"0000:1b:00.0\", device_id: 0x233510DE}\n"
		"  - index: 0\n"
		"    pci: {bus_id: \"0000:1a:00.0\"}\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	/* devices are ordered by index, whatever the file order */
	cr_assert_str_eq(st.devices[0].bus_id, "0000:1a:00.0");
	cr_assert_str_eq(st.devices[1].name, "Other");
	cr_assert_str_eq(st.devices[1].uuid, "GPU-abcdef01-0000-0000-0000-000000000001");
	cr_assert_eq(st.devices[1].minor, 9);
	cr_assert_eq(st.devices[1].memory_total_bytes, 1024);
	cr_assert_eq(st.devices[1].device_id, 0x2335);
	cr_assert_eq(st.devices[1].subsys_device_id, 0x16c1, "pci merges field by field");
	cr_assert_eq(st.devices[0].memory_total_bytes, 85899345920ull);
}

Test(compile, no_topology_gives_one_flat_root)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES, NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_roots, 1);
	cr_assert_str_eq(st.roots[0].id, "pci0000:00");
	cr_assert_eq(st.roots[0].numa_node, 0);
	cr_assert_eq(st.devices[0].root, 0);
	cr_assert_eq(st.devices[1].root, 0);
	cr_assert_eq(st.devices[1].numa_node, 0);
}

Test(compile, device_in_no_root_has_no_numa)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES
		"pcie_topology:\n"
		"  root_complexes:\n"
		"    - id: \"pci0000:00\"\n"
		"      numa_node: 0\n"
		"      devices: [\"0000:1a:00.0\"]\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.devices[1].root, -1);
	cr_assert_eq(st.devices[1].numa_node, -1);
}

Test(compile, gpu_count_cap)
{
	struct compile_opts o = { .gpu_count_cap = 1, .node_name = "node-a",
				  .mock_root = "/tmp/r", .fabric_init_delay_ms = 250 };
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, &o);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 1);
	cr_assert_eq(st.devices[0].index, 0);
	cr_assert_eq(st.num_roots, 2);
	cr_assert_str_eq(st.node_name, "node-a");
	cr_assert_str_eq(st.mock_root, "/tmp/r");
	cr_assert_str_eq(st.fabric.state_dir, "/tmp/r/fabric-state");
	cr_assert_eq(st.fabric.init_delay_ms, 250);

	/* a cap above the count changes nothing */
	state_free(&st);
	state_init(&st);
	o.gpu_count_cap = 5;
	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, &o), 0, "%s", err);
	cr_assert_eq(st.num_devices, 2);
}

Test(compile, driver_version_fallback)
{
	struct compile_opts o = { .driver_version = "535.1.2" };
	const char *yaml = "version: \"1.0\"\n"
			   "devices:\n"
			   "  - pci: {bus_id: \"0000:01:00.0\"}\n";

	expect_error("p.yaml", yaml, "p.yaml:1:1: system.driver_version: missing");
	cr_assert_eq(compile_str("p.yaml", yaml, &o), 0, "%s", err);
	cr_assert_str_eq(st.driver_version, "535.1.2");
}

Test(compile, fabric_and_nvlink)
{
	int rc = compile_str("p.yaml", HEAD
		"  fabric:\n"
		"    cluster_uuid: \"00000000-0000-0000-0000-000000000001\"\n"
		"    clique_id: 4\n"
		"    state: auto\n"
		TWO_DEVICES
		"nvlink:\n"
		"  links_per_gpu: 18\n"
		"  bandwidth_per_link_mbps: 26562\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(st.fabric.enabled);
	cr_assert_str_eq(st.fabric.cluster_uuid, "00000000-0000-0000-0000-000000000001");
	cr_assert_eq(st.fabric.clique_id, 4);
	cr_assert_eq(st.fabric.links_per_gpu, 18);
	cr_assert_eq(st.fabric.bandwidth_per_link_mbps, 26562);
}

Test(compile, profile_json_is_exact)
{
	cJSON *j, *devs, *v;

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	j = cJSON_Parse(st.profile_json);
	cr_assert_not_null(j, "profile_json is not JSON: %.200s", st.profile_json);
	devs = cJSON_GetObjectItemCaseSensitive(j, "devices");
	cr_assert(cJSON_IsArray(devs));
	cr_assert_eq(cJSON_GetArraySize(devs), 2);
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "device_defaults"), "pci");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(v, "device_id")->valuedouble, 0x233010DE);
	v = cJSON_GetObjectItemCaseSensitive(j, "version");
	cr_assert(cJSON_IsString(v), "a quoted scalar stays a string");
	cJSON_Delete(j);
	cr_assert(strstr(st.profile_json, "\"total_bytes\":85899345920"),
		  "integers are written exactly");
}

Test(compile, state_roundtrips_through_encode)
{
	struct state back;
	char *json = NULL, derr[256];
	size_t len;

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	cr_assert_eq(state_encode(&st, &json, &len), 0);
	state_init(&back);
	cr_assert_eq(state_decode(json, len, &back, derr, sizeof(derr)), 0, "%s", derr);
	cr_assert_eq(back.num_devices, 2);
	cr_assert_str_eq(back.devices[1].bus_id, "0000:9a:00.0");
	state_free(&back);
	free(json);
}

/* ------------------------------------------------------------------ */
/* Errors: exact place and key.                                        */

Test(compile, shipped_profiles_have_no_unknown_keys)
{
	char dir[] = "/tmp/test_compile.XXXXXX", path[64], file[4096];
	size_t len;
	char *out, *yaml;
	int saved;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stderr", dir);
	capture_stderr(&saved, path);
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++) {
		profile_path(file, sizeof(file), shipped[i].name);
		yaml = read_file(file, &len);
		state_free(&st);
		state_init(&st);
		compile_profile(file, yaml, len, NULL, NULL, 0, NULL, &st, err, sizeof(err));
		free(yaml);
	}
	restore_stderr(saved);
	out = read_file(path, &len);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(len, 0, "warnings: %s", out);
	free(out);
}
